//! What a recording records as the action when the controller is not a plain position command:
//! an agent's PD effector records its target angle (in the LeRobot dataset's `action` column and
//! in the MetaSim trajectory's `dof_pos_target`), a lockstep client's velocities record the
//! position they integrate to. Before, both recorded the measured angle, so `action` equalled
//! `observation.state` and a policy trained on it learnt to stand still.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use armsim::headless::finish_setup;
use armsim::protocol::lockstep::plugin as lockstep;
use armsim::protocol::sexp::plugin::{self as sexp, SexpOptions};
use armsim::sim::ClockMode;
use armsim::trajectory::plugin as traj;
use arrow_array::{Array, FixedSizeListArray, Float32Array};
use bevy::prelude::App;
use common::sexp::Peer;
use common::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-actions-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A vector column of the dataset's data file, row by row.
fn vectors(root: &Path, column: &str) -> Vec<Vec<f32>> {
    let file = std::fs::File::open(root.join("data/chunk-000/file-000.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("a parquet file")
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let list = batch
            .column_by_name(column)
            .unwrap_or_else(|| panic!("no column {column}"))
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .expect("a fixed-size list");
        for i in 0..list.len() {
            let v = list.value(i);
            let v = v.as_any().downcast_ref::<Float32Array>().unwrap();
            rows.push(v.values().to_vec());
        }
    }
    rows
}

/// The `dof_pos_target` of `joint` in every action of the trajectory's first demo of `robot`.
fn recorded_targets(path: &Path, robot: &str, joint: &str) -> Vec<f64> {
    let t = armsim::trajectory::load(path).expect("the trajectory loads");
    t.demos(robot).expect("the robot's demos")[0]
        .actions
        .iter()
        .map(|a| a.dof_pos_target.get(joint).expect("the joint's target"))
        .collect()
}

#[test]
fn an_agents_pd_target_is_the_recorded_action() {
    let root = scratch("agent");
    let trajectory = root.with_extension("json");
    let mut app = headless(default_scene(), ClockMode::Fast);
    let (agent, _) = sexp::add(
        &mut app,
        SexpOptions {
            agent: Some("127.0.0.1:0".parse().unwrap()),
            sync: true,
            ..Default::default()
        },
    )
    .expect("binds");
    finish_setup(&mut app);
    armsim::lerobot::plugin(&mut app);
    armsim::lerobot::start(app.world_mut(), &root, 30, None).expect("recording starts");
    traj::start_recording(app.world_mut(), &trajectory, 8).expect("trajectory starts");
    let agent: SocketAddr = agent.unwrap();
    // 2 s (120 cycles of 4 steps) of the pan joint told to go to 30° by a PD effector, which
    // the arm reaches only gradually.
    let peer = common::drive(
        &mut app,
        std::thread::spawn(move || {
            let mut a = Peer::agent(agent);
            a.recv().expect("first perception");
            for _ in 0..120 {
                a.send("(shoulder_pan 30 0 60 4 0)(syn)");
                a.recv().expect("a perception");
            }
            // Still connected (in sync mode the sim now waits for it) while the recordings are
            // finished: a disconnect hands the arm to the hold posture, whose rows are holds.
            a
        }),
        Duration::from_micros(200),
    );
    armsim::lerobot::finish(app.world_mut())
        .expect("a recording ran")
        .expect("the dataset is written");
    traj::finish_recording(app.world_mut())
        .expect("a trajectory ran")
        .expect("the trajectory is written");
    drop(peer);

    let pan = joint(&app, "shoulder_pan");
    let target = 30f32.to_radians();
    let (actions, states) = (
        vectors(&root, "action"),
        vectors(&root, "observation.state"),
    );
    assert!(actions.len() >= 30, "{} rows", actions.len());
    assert_eq!(actions.len(), states.len());
    for (a, s) in actions.iter().zip(&states) {
        assert!(
            (a[pan] - target).abs() < 1e-6,
            "action {} rad, commanded {target} rad (state {})",
            a[pan],
            s[pan]
        );
    }
    let apart = states
        .iter()
        .filter(|s| (s[pan] - target).abs() > 0.05)
        .count();
    assert!(
        apart >= 3,
        "the arm moves towards the target, so early states differ from it: {:?}",
        states.iter().map(|s| s[pan]).collect::<Vec<_>>()
    );

    let targets = recorded_targets(&trajectory, "arm6", "shoulder_pan");
    assert!(targets.len() >= 400, "{} actions", targets.len());
    // The first steps ran before the agent's first effector; from then on, its target.
    let from = targets
        .iter()
        .position(|&t| (t - f64::from(target)).abs() < 1e-6)
        .expect("the PD target is recorded");
    assert!(
        targets[from..]
            .iter()
            .all(|&t| (t - f64::from(target)).abs() < 1e-6),
        "every action after the first effector carries its target"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_file(&trajectory);
}

#[test]
fn lockstep_velocities_are_recorded_as_the_position_they_integrate_to() {
    const N: usize = 10;
    // Fast enough that the base swivel, its motor bounded by its effort limit, lags behind:
    // 2 rad in 0.1 s, within its limits.
    const V: f32 = 20.0;
    const STEPS: usize = 24;
    let dir = scratch("lockstep");
    let trajectory = dir.join("run.json");
    let mut app: App = headless(gripper4_scene(), ClockMode::Manual);
    let addr = lockstep::add(
        &mut app,
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_secs(5),
    )
    .expect("binds");
    finish_setup(&mut app);
    let start = sim(&app).joint_positions()[0];
    traj::start_recording(app.world_mut(), &trajectory, 4).expect("trajectory starts");
    common::drive(
        &mut app,
        std::thread::spawn(move || {
            use armsim::protocol::lockstep::codec::{decode_state, encode_velocities};
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut v = [0.0f32; N];
            v[0] = V;
            for _ in 0..STEPS {
                let mut buf = [0u8; 8 + 4 * N];
                s.read_exact(&mut buf).unwrap();
                decode_state(&buf, N).unwrap();
                let mut bytes = Vec::new();
                encode_velocities(&v, &mut bytes);
                s.write_all(&bytes).unwrap();
            }
            let mut buf = [0u8; 8 + 4 * N];
            s.read_exact(&mut buf).unwrap();
        }),
        Duration::ZERO,
    );
    traj::finish_recording(app.world_mut())
        .expect("a trajectory ran")
        .expect("the trajectory is written");
    let name = sim(&app).robot.joints[0].name.clone();
    let robot = sim(&app).robot.name.clone();
    let targets = recorded_targets(&trajectory, &robot, &name);
    assert_eq!(targets.len(), STEPS, "one action per step");
    let dt = 1.0 / 240.0;
    for (k, &t) in targets.iter().enumerate() {
        let want = f64::from(start) + f64::from(V) * dt * (k + 1) as f64;
        assert!(
            (t - want).abs() < 1e-4,
            "step {k}: recorded {t}, integrated {want}"
        );
    }
    // The recorded states (every 4 steps) say where the joint was: behind the integrated
    // target, since the velocity motor takes time to reach its speed.
    let t = armsim::trajectory::load(&trajectory).unwrap();
    let demo = &t.demos(&robot).unwrap()[0];
    let gap = demo
        .states
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let q = f.get(&robot).unwrap().dof_pos.as_ref().unwrap();
            (targets[4 * (i + 1) - 1] - q.get(&name).unwrap()).abs()
        })
        .fold(0.0, f64::max);
    assert!(
        gap > 1e-3,
        "the action is the integrated target, not the measured angle (gap {gap})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
