//! MetaSim end to end: snapshots and set-state (velocities included), actions by name and by
//! vector, recording a run and replaying it by action (bit-identical) and by state (exact
//! poses), a recording interrupted by SIGTERM that still loads, one killed by SIGKILL whose
//! journal `armsim trajectory recover` (or the next `--record` into its folder) completes, and a
//! run that records no step.

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use armsim::session::SessionCommand;
use armsim::sim::{self, JointCommand};
use armsim::state::{self, NamedAction, TargetKind, apply_actions, apply_vector, snapshot};
use armsim::trajectory::plugin::{self as traj, Replay, ReplayMode};
use armsim::trajectory::{Demo, Format, StateFrame, Value, load, save};
use common::*;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-traj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    let _ = std::fs::remove_file(armsim::trajectory::journal_path(&p));
    p
}

/// A scripted run: the arm swings through targets while a cube falls onto the table.
fn scripted_steps(app: &mut bevy::prelude::App, steps: u64) {
    for k in 0..steps {
        if k % 60 == 0 {
            let s = (k as f32 / 120.0).sin();
            let mut t = targets(app);
            t.commands[0] = JointCommand::Position {
                target: 0.6 * s,
                velocity: 0.0,
            };
            t.commands[1] = JointCommand::Velocity { target: 0.3 * s };
            t.commands[2] = JointCommand::Effort { torque: 2.0 * s };
        }
        sim::run_steps(app, 1);
    }
}

#[test]
fn snapshot_shape_and_set_state_restores_velocities() {
    let mut app = app_for(default_scene());
    command(&mut app, SessionCommand::Start);
    sim_mut(&mut app, |s| {
        let i = s.object_index("cube_red").unwrap();
        let pose = s.view().body_pose(s.objects[i].body);
        let lifted =
            armsim::robot::Pose::new(pose.translation + glam::Vec3::Z * 0.2, pose.rotation);
        s.place_object(
            i,
            lifted,
            glam::Vec3::new(0.3, 0.0, 0.0),
            glam::Vec3::new(0.0, 0.0, 2.0),
        )
        .unwrap();
    });
    scripted_steps(&mut app, 30);
    let before = snapshot(&sim(&app));
    let arm = &before.robots["arm6"];
    let mut sorted = arm.joint_names.clone();
    sorted.sort();
    assert_eq!(arm.joint_names, sorted, "joints in alphabetical order");
    assert_eq!(arm.joint_pos.len(), 8);
    assert_eq!(arm.body_names.len(), arm.body_state.len());
    assert!(before.cameras.is_empty());
    let full = state::snapshot_app(app.world());
    assert_eq!(full.extras["session"], "RUNNING");
    assert_eq!(full.extras["referee"]["play_mode"], "BeforeStart");
    assert_eq!(full.extras["steps"], 30);
    let red = before.objects["cube_red"].root_state;
    assert!(
        red[7].abs() > 0.01 || red[9].abs() > 0.01,
        "the cube is moving: {red:?}"
    );
    // quat w first: a unit quaternion.
    let q: f32 = red[3..7].iter().map(|v| v * v).sum();
    assert!((q - 1.0).abs() < 1e-4);
    let dict = before.to_dict();
    assert_eq!(dict.robots["arm6"].dof_pos.as_ref().unwrap().len(), 8);

    scripted_steps(&mut app, 60);
    sim_mut(&mut app, |s| state::set_state(s, &before)).unwrap();
    let after = snapshot(&sim(&app));
    for (name, o) in &before.objects {
        let a = after.objects[name].root_state;
        for (i, (x, y)) in a.iter().zip(&o.root_state).enumerate() {
            assert!((x - y).abs() < 1e-5, "{name}[{i}]: {x} vs {y}");
        }
    }
    let (b, a) = (&before.robots["arm6"], &after.robots["arm6"]);
    for k in 0..b.joint_pos.len() {
        assert!(
            (a.joint_pos[k] - b.joint_pos[k]).abs() < 1e-5,
            "{}",
            b.joint_names[k]
        );
        assert!(
            (a.joint_vel[k] - b.joint_vel[k]).abs() < 1e-4,
            "velocity of {}",
            b.joint_names[k]
        );
    }
    // The dict form too, partially: one joint by name.
    let mut dict = state::DictEnvState::default();
    let robot = state::DictRobotState {
        dof_pos: Some(BTreeMap::from([("elbow".to_string(), 0.5)])),
        dof_vel: Some(BTreeMap::from([("elbow".to_string(), -0.25)])),
        ..Default::default()
    };
    dict.robots.insert("arm6".into(), robot);
    let wrist_before = snapshot(&sim(&app)).to_dict().robots["arm6"]
        .dof_pos
        .as_ref()
        .unwrap()["wrist_1"];
    sim_mut(&mut app, |s| state::set_state_dict(s, &dict)).unwrap();
    let d = snapshot(&sim(&app)).to_dict();
    let arm = &d.robots["arm6"];
    assert!((arm.dof_pos.as_ref().unwrap()["elbow"] - 0.5).abs() < 1e-5);
    assert!((arm.dof_vel.as_ref().unwrap()["elbow"] + 0.25).abs() < 1e-4);
    assert!(
        (arm.dof_pos.as_ref().unwrap()["wrist_1"] - wrist_before).abs() < 1e-5,
        "others unchanged"
    );
    // Unknown names are errors that name the culprit.
    let mut bad = state::DictEnvState::default();
    bad.objects
        .insert("cube_purple".into(), state::DictObjectState::default());
    let err = sim_mut(&mut app, |s| state::set_state_dict(s, &bad))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cube_purple") && err.contains("cube_red"),
        "{err}"
    );
    // A state from a file is external input: a pose outside the world is refused by name.
    let mut far = state::DictEnvState::default();
    far.objects.insert(
        "cube_red".into(),
        state::DictObjectState {
            pos: [3e38, 0.0, 1.0],
            rot: [1.0, 0.0, 0.0, 0.0],
            ..Default::default()
        },
    );
    let err = sim_mut(&mut app, |s| state::set_state_dict(s, &far))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cube_red") && err.contains("outside the world"),
        "{err}"
    );
    assert!(sim(&app).non_finite_body().is_none());
}

#[test]
fn partial_and_vector_actions() {
    let mut app = app_for(default_scene());
    let robot = sim(&app).robot.clone();
    let mut commands = sim(&app).commands().to_vec();
    let before = commands.clone();
    let actions = BTreeMap::from([(
        "arm6".to_string(),
        NamedAction {
            dof_pos_target: Some(BTreeMap::from([("elbow".to_string(), 1.0)])),
            dof_vel_target: Some(BTreeMap::from([("shoulder_pan".to_string(), 0.2)])),
            ..Default::default()
        },
    )]);
    apply_actions(&robot, &mut commands, &actions).unwrap();
    let elbow = robot.joint_index("elbow").unwrap();
    let pan = robot.joint_index("shoulder_pan").unwrap();
    assert_eq!(
        commands[elbow],
        JointCommand::Position {
            target: 1.0,
            velocity: 0.0
        }
    );
    assert_eq!(commands[pan], JointCommand::Velocity { target: 0.2 });
    for j in 0..commands.len() {
        if j != elbow && j != pan {
            assert_eq!(
                commands[j], before[j],
                "unspecified joints keep their targets"
            );
        }
    }
    let unknown = BTreeMap::from([(
        "arm6".to_string(),
        NamedAction {
            dof_pos_target: Some(BTreeMap::from([("knee".to_string(), 1.0)])),
            ..Default::default()
        },
    )]);
    let err = apply_actions(&robot, &mut commands, &unknown)
        .unwrap_err()
        .to_string();
    assert!(err.contains("knee") && err.contains("elbow"), "{err}");
    let wrong_robot = BTreeMap::from([("franka".to_string(), NamedAction::default())]);
    let err = apply_actions(&robot, &mut commands, &wrong_robot)
        .unwrap_err()
        .to_string();
    assert!(err.contains("franka") && err.contains("arm6"), "{err}");

    // Vector: alphabetical order (elbow, finger_left, finger_right, shoulder_lift, shoulder_pan,
    // wrist_1, wrist_2, wrist_3).
    let v = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];
    apply_vector(&robot, &mut commands, TargetKind::Position, &v).unwrap();
    let target = |name: &str| match commands[robot.joint_index(name).unwrap()] {
        JointCommand::Position { target, .. } => target,
        other => panic!("{other:?}"),
    };
    assert_eq!(target("elbow"), 0.1);
    assert_eq!(target("shoulder_pan"), 0.5);
    assert_eq!(target("wrist_3"), 0.8);
    let err = apply_vector(&robot, &mut commands, TargetKind::Effort, &v[..3])
        .unwrap_err()
        .to_string();
    assert!(err.contains("8") && err.contains("elbow"), "{err}");
    assert!(apply_vector(&robot, &mut commands, TargetKind::Velocity, &[f32::NAN; 8]).is_err());
    // Applying through the app moves the arm.
    targets(&mut app).commands = commands;
    command(&mut app, SessionCommand::Start);
    sim::run_steps(&mut app, 480);
    let q = sim(&app).joint_positions();
    assert!((q[robot.joint_index("shoulder_pan").unwrap()] - 0.5).abs() < 0.02);
}

fn record_run(path: &std::path::Path, steps: u64) -> u64 {
    let mut app = app_for(default_scene());
    traj::start_recording(app.world_mut(), path, 4).unwrap();
    command(&mut app, SessionCommand::Start);
    scripted_steps(&mut app, steps);
    let hash = sim(&app).state_hash();
    traj::finish_recording(app.world_mut()).unwrap().unwrap();
    hash
}

#[test]
fn record_then_replay_by_action_is_bit_identical_in_every_format() {
    for ext in ["json", "json.gz", "pkl", "pkl.gz"] {
        let path = tmp(&format!("run.{ext}"));
        assert!(Format::from_path(&path).is_ok());
        let recorded = record_run(&path, 480);
        let file = load(&path).unwrap();
        let demo = &file.demos("arm6").unwrap()[0];
        assert_eq!(demo.actions.len(), 480, "{ext}");
        assert_eq!(demo.states.len(), 120, "a state every 4 steps ({ext})");

        let mut app = app_for(default_scene());
        traj::start_replay(app.world_mut(), &path, ReplayMode::Action, 0).unwrap();
        app.update();
        sim::run_steps(&mut app, 480);
        let replay = app.world().resource::<Replay>();
        assert!(replay.finished, "{}", replay.report());
        assert_eq!(replay.max_object_error, 0.0, "{}", replay.report());
        assert_eq!(replay.max_joint_error, 0.0, "{}", replay.report());
        assert_eq!(
            sim(&app).state_hash(),
            recorded,
            "bit-identical after replay ({ext})"
        );
    }
}

#[test]
fn replay_by_state_matches_recorded_poses_exactly() {
    let path = tmp("states.json");
    record_run(&path, 240);
    let file = load(&path).unwrap();
    let demo = file.demos("arm6").unwrap()[0].clone();
    let mut app = app_for(default_scene());
    traj::start_replay(app.world_mut(), &path, ReplayMode::State, 0).unwrap();
    app.update();
    for k in 0..demo.states.len() {
        sim::run_steps(&mut app, 4);
        let now = snapshot(&sim(&app)).to_frame();
        let recorded = &demo.states[k];
        for (name, b) in &recorded.0 {
            let n = now.get(name).unwrap();
            assert_eq!(n.pos, b.pos, "state {k}: {name} position");
            assert_eq!(n.rot, b.rot, "state {k}: {name} orientation");
            // Rapier keeps a revolute coordinate as a rotation, so reading back a set angle can
            // differ in the last bit of a tiny value (1e-11 rad here); poses above are exact.
            if let (Some(q), Some(r)) = (&n.dof_pos, &b.dof_pos) {
                for (name, v) in r.iter() {
                    let got = q.get(name).unwrap();
                    assert!((got - v).abs() < 1e-9, "state {k}: {name} {got} vs {v}");
                }
            }
        }
    }
}

#[test]
fn metasim_fixture_without_matching_lengths_and_missing_init_state() {
    let fixtures = asset("tests/fixtures/trajectories");
    let t = load(fixtures.join("metasim_p4.pkl")).unwrap();
    let (robot, demos) = &t.robots[0];
    assert!(!demos.is_empty(), "{robot}");
    assert_ne!(demos[0].actions.len(), demos[0].states.len());
    let err = load(fixtures.join("missing_init_state.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("init_state"), "{err}");
    let err = load(fixtures.join("object_stack_global_p4.pkl"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("STACK_GLOBAL"), "{err}");
}

#[test]
fn a_recording_interrupted_by_sigterm_still_loads() {
    let path = tmp("interrupted.json.gz");
    let child = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "--headless",
            "--fast",
            "--no-teleop",
            "--no-agent-ports",
            "--record",
        ])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("armsim starts");
    // Let it record for a while, then ask it to stop the way a service manager would.
    let journal = armsim::trajectory::journal_path(&path);
    let t0 = Instant::now();
    while !(journal.exists() && std::fs::metadata(&journal).unwrap().len() > 10_000) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no journal grew");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The shell's builtin `kill`: no procps needed on a bare machine.
    let status = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit status {:?}", out.status);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("steps"), "the report is printed: {report}");
    let t = load(&path).expect("a complete, loadable file");
    let demo = &t.demos("arm6").unwrap()[0];
    assert!(demo.actions.len() > 10, "{} actions", demo.actions.len());
    assert!(
        !journal.exists(),
        "the journal is removed once the file is written"
    );
}

#[test]
fn a_reset_while_recording_starts_a_new_demo_that_replays_exactly() {
    let path = tmp("two_demos.json");
    let mut app = app_for(default_scene());
    traj::start_recording(app.world_mut(), &path, 2).unwrap();
    command(&mut app, SessionCommand::Start);
    scripted_steps(&mut app, 100);
    command(&mut app, SessionCommand::Reset);
    command(&mut app, SessionCommand::Start);
    scripted_steps(&mut app, 200);
    let hash = sim(&app).state_hash();
    traj::finish_recording(app.world_mut()).unwrap().unwrap();
    let file = load(&path).unwrap();
    let demos = file.demos("arm6").unwrap();
    assert_eq!(demos.len(), 2);
    assert_eq!(demos[0].actions.len(), 100);
    assert_eq!(demos[1].actions.len(), 200);

    let mut replay = app_for(default_scene());
    traj::start_replay(replay.world_mut(), &path, ReplayMode::Action, 1).unwrap();
    replay.update();
    sim::run_steps(&mut replay, 200);
    assert_eq!(
        sim(&replay).state_hash(),
        hash,
        "the second demo replays bit for bit"
    );
}

/// A copy of the trajectory file `from`, its first demo changed by `edit`.
fn edited(from: &std::path::Path, name: &str, edit: impl FnOnce(&mut Demo)) -> std::path::PathBuf {
    let mut t = load(from).unwrap();
    edit(&mut t.robots[0].1[0]);
    let path = tmp(name);
    save(&t, &path).unwrap();
    path
}

/// Renames the bodies of `frame` for which `which` holds, the way another project's demo names
/// its own robot and objects.
fn rename(frame: &mut StateFrame, which: impl Fn(&str) -> bool) {
    for (name, _) in &mut frame.0 {
        if which(name) {
            *name = format!("ur5e_{name}");
        }
    }
}

fn set_extra(demo: &mut Demo, key: &str, value: Value) {
    let Some(Value::Dict(entries)) = demo.extra.as_mut() else {
        panic!("a recorded demo has an extra dict: {:?}", demo.extra);
    };
    match entries.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key.into(), value)),
    }
}

/// Runs the armsim binary to its exit with stdout and stderr in files (no pipe to fill), and
/// returns (exit code, stdout, stderr). A run that never ends is killed after a generous bound
/// and fails the test: this is a liveness check, not a timing.
fn run_armsim(args: &[&std::ffi::OsStr], name: &str) -> (Option<i32>, String, String) {
    let (out_path, err_path) = (tmp(&format!("{name}.out")), tmp(&format!("{name}.err")));
    let mut child = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--headless", "--no-teleop", "--no-agent-ports"])
        .args(args)
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("armsim starts");
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "armsim {args:?} did not exit; stdout: {}",
                std::fs::read_to_string(&out_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.code(),
        std::fs::read_to_string(&out_path).unwrap(),
        std::fs::read_to_string(&err_path).unwrap(),
    )
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

#[test]
fn a_replay_shorter_than_duration_or_steps_exits_at_its_end() {
    let path = tmp("one_second.json");
    let (code, _, err) = run_armsim(
        &[os("--duration"), os("1"), os("--record"), path.as_os_str()],
        "record_1s",
    );
    assert_eq!(code, Some(0), "{err}");
    for (mode, stop) in [
        ("state", ["--duration", "2"]),
        ("action", ["--steps", "1000"]),
    ] {
        let (code, out, err) = run_armsim(
            &[
                os("--replay"),
                path.as_os_str(),
                os("--replay-mode"),
                os(mode),
                os(stop[0]),
                os(stop[1]),
            ],
            &format!("replay_{mode}"),
        );
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("240 of 240 steps"), "{mode}: {out}");
        assert!(
            out.contains("\n240 steps, 1.0 s sim"),
            "stops at the replay's end, not past it ({mode}): {out}"
        );
    }
}

#[test]
fn replay_by_action_says_when_nothing_was_compared() {
    let path = tmp("compare.json");
    record_run(&path, 120);
    let no_states = edited(&path, "no_states.json", |d| d.states.clear());
    let foreign = edited(&path, "foreign.json", |d| {
        d.states.iter_mut().for_each(|f| rename(f, |_| true))
    });
    let partly = edited(&path, "partly.json", |d| {
        d.states
            .iter_mut()
            .for_each(|f| rename(f, |n| n == "cube_red"))
    });
    let replay = |file: &std::path::Path| {
        let mut app = app_for(default_scene());
        traj::start_replay(app.world_mut(), file, ReplayMode::Action, 0).unwrap();
        app.update();
        sim::run_steps(&mut app, 120);
        let replay = app.world().resource::<Replay>();
        assert!(replay.finished, "{}", replay.report());
        (replay.compared_states, replay.report())
    };
    for (file, why) in [
        (&no_states, "the demo has no recorded states"),
        (
            &foreign,
            "name only bodies this scene lacks (ur5e_arm6, ur5e_cube_blue",
        ),
    ] {
        let (compared, report) = replay(file);
        assert_eq!(compared, 0, "{report}");
        assert!(report.contains("divergence not measured"), "{report}");
        assert!(report.contains(why), "{report}");
        assert!(
            !report.contains("0.000000"),
            "no figure for nothing: {report}"
        );
    }
    let (compared, report) = replay(&partly);
    assert_eq!(compared, 30, "a state every 4 steps: {report}");
    assert!(
        report.contains("divergence from 30 recorded states: objects 0.000000 m"),
        "{report}"
    );
    assert!(report.contains("not compared: ur5e_cube_red"), "{report}");
}

#[test]
fn replay_by_state_refuses_states_it_cannot_use() {
    let path = tmp("unusable.json");
    record_run(&path, 40);
    let no_states = edited(&path, "unusable_none.json", |d| d.states.clear());
    let foreign = edited(&path, "unusable_foreign.json", |d| {
        d.states.iter_mut().for_each(|f| rename(f, |_| true))
    });
    let mut app = app_for(default_scene());
    let err = traj::start_replay(app.world_mut(), &no_states, ReplayMode::State, 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no recorded states"), "{err}");
    let err = traj::start_replay(app.world_mut(), &foreign, ReplayMode::State, 0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("ur5e_cube_red") && err.contains("it has: arm6, cube_red"),
        "{err}"
    );
    assert!(app.world().get_resource::<Replay>().is_none());

    // The binary: a clear error and a non-zero exit, not "N of N steps" with a warning per frame.
    let (code, out, err) = run_armsim(&[os("--replay"), foreign.as_os_str()], "state_foreign");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("ur5e_cube_red"), "{err}");
    assert!(!out.contains(" of "), "no replay report: {out}");
    assert!(!err.contains("WARN"), "{err}");

    // States that name known bodies but do not fit (an unknown joint): the replay stops at the
    // first one, with one error, and the binary exits non-zero.
    let bad_joint = edited(&path, "unusable_joint.json", |d| {
        for f in &mut d.states {
            for (name, body) in &mut f.0 {
                if name == "arm6"
                    && let Some(q) = body.dof_pos.as_mut()
                {
                    q.0[0].0 = "knee".into();
                }
            }
        }
    });
    let mut app = app_for(default_scene());
    traj::start_replay(app.world_mut(), &bad_joint, ReplayMode::State, 0).unwrap();
    app.update();
    sim::run_steps(&mut app, 40);
    let replay = app.world().resource::<Replay>();
    assert!(replay.finished);
    assert_eq!(replay.step, 4, "stopped at the first state (every 4 steps)");
    let report = replay.report();
    assert!(
        report.contains("stopped: recorded state 0 does not fit") && report.contains("knee"),
        "{report}"
    );
    let (code, out, err) = run_armsim(&[os("--replay"), bad_joint.as_os_str()], "state_joint");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("4 of 40 steps; stopped"), "{out}");
    assert_eq!(err.matches("does not fit").count(), 1, "one error: {err}");

    // A joint in init_state that the robot lacks: the reason is said once. (An object the scene
    // lacks is skipped instead: tests/foreign_demo.rs.)
    let bad_init = edited(&path, "unusable_init.json", |d| {
        set_extra(d, "from_fresh_load", Value::Bool(false));
        for (name, body) in &mut d.init_state.0 {
            if name == "arm6"
                && let Some(q) = body.dof_pos.as_mut()
            {
                q.0[0].0 = "knee".into();
            }
        }
    });
    let (code, _, err) = run_armsim(&[os("--replay"), bad_init.as_os_str()], "state_init_joint");
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("knee").count(), 1, "the reason once: {err}");
}

#[test]
fn a_replay_can_be_recorded_anew() {
    // The binary takes both flags: replay by action, recorded into a new file.
    let original = tmp("convert_from.json");
    let (code, _, err) = run_armsim(
        &[
            os("--duration"),
            os("0.5"),
            os("--record-every"),
            os("4"),
            os("--record"),
            original.as_os_str(),
        ],
        "convert_record",
    );
    assert_eq!(code, Some(0), "{err}");
    let converted = tmp("convert_to.json.gz");
    let (code, out, err) = run_armsim(
        &[
            os("--replay"),
            original.as_os_str(),
            os("--replay-mode"),
            os("action"),
            os("--record-every"),
            os("4"),
            os("--record"),
            converted.as_os_str(),
        ],
        "convert_replay",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("120 of 120 steps"), "{out}");
    let (a, b) = (load(&original).unwrap(), load(&converted).unwrap());
    let (a, b) = (&a.demos("arm6").unwrap()[0], &b.demos("arm6").unwrap()[0]);
    assert_eq!(b.actions.len(), 120);
    assert_eq!(b.states.len(), 30);
    assert_eq!(a.init_state, b.init_state);
    assert_eq!(a.actions, b.actions);
    assert_eq!(a.states, b.states, "replayed by action from the same start");

    // A demo that did not start from the scene as loaded: the new recording starts from the
    // replay's start and says so.
    let later = tmp("convert_later.json");
    let mut app = app_for(default_scene());
    command(&mut app, SessionCommand::Start);
    scripted_steps(&mut app, 50);
    traj::start_recording(app.world_mut(), &later, 5).unwrap();
    scripted_steps(&mut app, 50);
    traj::finish_recording(app.world_mut()).unwrap().unwrap();
    let again = tmp("convert_again.json");
    let mut app = app_for(default_scene());
    traj::start_replay(app.world_mut(), &later, ReplayMode::Action, 0).unwrap();
    traj::start_recording(app.world_mut(), &again, 5).unwrap();
    app.update();
    sim::run_steps(&mut app, 50);
    traj::finish_recording(app.world_mut()).unwrap().unwrap();
    let (a, b) = (load(&later).unwrap(), load(&again).unwrap());
    let (a, b) = (&a.demos("arm6").unwrap()[0], &b.demos("arm6").unwrap()[0]);
    let fresh = |d: &Demo| {
        d.extra
            .as_ref()
            .and_then(|e| e.get("from_fresh_load"))
            .cloned()
    };
    assert_eq!(fresh(a), Some(Value::Bool(false)));
    assert_eq!(
        fresh(b),
        Some(Value::Bool(false)),
        "not the scene as loaded"
    );
    for (name, body) in a.init_state.iter() {
        let got = b.init_state.get(name).unwrap();
        for i in 0..3 {
            assert!((got.pos[i] - body.pos[i]).abs() < 1e-6, "{name}");
        }
    }
    assert_eq!(b.actions.len(), 50);
}

/// A real armsim recording is killed with SIGKILL: its journal is left, `armsim trajectory
/// recover JOURNAL` makes the complete file from it, and that file loads with every step the
/// journal holds. A second killed recording of the same name is recovered by the next `--record`
/// of that name, into a file of its own, with a warning naming both.
#[test]
fn a_killed_recording_is_recovered_by_the_command_and_at_the_next_start() {
    // A folder of its own: the other tests here record in parallel.
    let dir = std::env::temp_dir().join(format!("armsim-traj-killed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("killed.pkl");
    let journal = armsim::trajectory::journal_path(&path);
    let kill_while_recording = |name: &str| {
        let path_arg = path.display().to_string();
        let mut sim = common::child::Armsim::start(
            name,
            &[
                "--no-teleop",
                "--agent-port",
                "0",
                "--monitor-port",
                "0",
                "--record",
                &path_arg,
            ],
        );
        let monitor = sim.listening("monitor");
        // The journal is flushed every step. The monitor may report a step before the journal
        // holds it (a frame runs several steps): at 0.6 s it holds at least the first 120.
        common::sexp::Peer::open(monitor).until_sim_time(0.6);
        sim.child.kill().unwrap();
        sim.child.wait().unwrap();
    };
    kill_while_recording("traj-kill-1");
    assert!(journal.exists() && !path.exists());

    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .args(["trajectory", "recover"])
        .arg(&journal)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!journal.exists(), "the journal is removed once recovered");
    let t = load(&path).expect("the recovered file loads");
    let demo = &t.demos("arm6").unwrap()[0];
    let (actions, states) = (demo.actions.len(), demo.states.len());
    assert!(actions >= 120, "{actions} actions");
    // A state every step, after its action: the kill may fall between the two.
    assert!(
        states == actions || states + 1 == actions,
        "{actions} actions, {states} states"
    );
    assert!(
        stdout.contains(&format!("{actions} actions, {states} states")),
        "{stdout}"
    );

    // Killed again, then recorded anew under the same name: the leftover journal is recovered
    // beside it first, and the new recording writes its own file.
    std::fs::remove_file(&path).unwrap();
    kill_while_recording("traj-kill-2");
    assert!(journal.exists());
    let (code, _, err) = run_armsim(
        &[os("--steps"), os("24"), os("--record"), path.as_os_str()],
        "recover_at_start",
    );
    assert_eq!(code, Some(0), "{err}");
    let recovered = path.with_file_name("killed.recovered.pkl");
    let line = err
        .lines()
        .find(|l| l.contains("recovered the journal"))
        .unwrap_or_else(|| panic!("no warning about the leftover journal:\n{err}"));
    assert!(
        line.contains("WARN") && line.contains("killed.recovered.pkl"),
        "{line}"
    );
    let old = load(&recovered).expect("the leftover journal's file loads");
    assert!(old.demos("arm6").unwrap()[0].actions.len() >= 120);
    let new = load(&path).unwrap();
    assert_eq!(new.demos("arm6").unwrap()[0].actions.len(), 24);
    assert!(!journal.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run that stops before its first step records nothing: no file, no journal left, one error
/// line saying so, and a non-zero exit.
#[test]
fn a_recording_of_no_step_fails_and_writes_nothing() {
    let path = tmp("no_step.json");
    let (code, _, err) = run_armsim(
        &[os("--steps"), os("0"), os("--record"), path.as_os_str()],
        "no_step",
    );
    assert_ne!(code, Some(0), "{err}");
    let why: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("no step was recorded"))
        .collect();
    assert_eq!(why.len(), 1, "{err}");
    assert!(!path.exists());
    assert!(!armsim::trajectory::journal_path(&path).exists());
}
