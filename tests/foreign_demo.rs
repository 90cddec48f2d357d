//! A demo written for another scene, replayed on armsim's Panda: RoboVerse's Franka `close_box`
//! (MetaSim trajectory v2) names the robot `franka` with the URDF's joint names and an
//! articulated object `box_base` (its hinge `box_joint`) that the Panda scene lacks. The replay
//! plays the robot (renamed onto Menagerie's Panda) and skips `box_base`, saying so in one log
//! line, by state and by action; the divergence report names what it compared. The robot file
//! is the Menagerie Panda of the fixture cache (`scripts/robot-fixtures`).

mod common;
#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::process::Command;

use armsim::sim;
use armsim::trajectory::plugin::{self as traj, Replay, ReplayMode};
use serde_json::{Value, json};

const STEPS: usize = 48;

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-foreign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `assets/scenes/panda.json` with its robot at the fixture cache's Menagerie Panda.
fn panda_scene(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mjcf = fixtures::menagerie_panda_dir().join("panda.xml");
    let text = std::fs::read_to_string(root.join("assets/scenes/panda.json")).unwrap();
    let mut scene: Value = serde_json::from_str(&text).unwrap();
    scene["robot"]["mjcf_path"] = json!(mjcf.to_str().unwrap());
    let path = dir.join("panda.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    path
}

/// The Franka's joints at step `t`: RoboVerse's names, a slow swing of the first joint.
fn franka_joints(t: usize) -> Value {
    let q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785];
    let mut joints = serde_json::Map::new();
    for (k, v) in q.iter().enumerate() {
        let v = if k == 0 { v + 0.01 * t as f64 } else { *v };
        joints.insert(format!("panda_joint{}", k + 1), json!(v));
    }
    joints.insert("panda_finger_joint1".into(), json!(0.04));
    joints.insert("panda_finger_joint2".into(), json!(0.04));
    Value::Object(joints)
}

/// A state as RoboVerse writes it: the robot and the box, each with a root pose (w-first
/// quaternion) and its joints; the box's lid closes as `t` grows.
fn frame(t: usize) -> Value {
    json!({
        "franka": {"pos": [0.0, 0.0, 0.0], "rot": [1.0, 0.0, 0.0, 0.0], "dof_pos": franka_joints(t)},
        "box_base": {
            "pos": [0.3, 0.1, 0.05],
            "rot": [std::f64::consts::FRAC_1_SQRT_2, 0.0, 0.0, std::f64::consts::FRAC_1_SQRT_2],
            "dof_pos": {"box_joint": 1.6 - 0.03 * t as f64}
        }
    })
}

/// A small `close_box` demo in RoboVerse's trajectory v2 shape: one Franka demo, an action and
/// a state per step, no armsim `extra`.
fn close_box_demo(dir: &Path) -> PathBuf {
    let demo = json!({
        "franka": [{
            "init_state": frame(0),
            "actions": (0..STEPS).map(|t| json!({"dof_pos_target": franka_joints(t + 1)})).collect::<Vec<_>>(),
            "states": (0..STEPS).map(|t| frame(t + 1)).collect::<Vec<_>>(),
        }]
    });
    let path = dir.join("close_box_v2.json");
    std::fs::write(&path, serde_json::to_string_pretty(&demo).unwrap()).unwrap();
    path
}

#[test]
fn a_roboverse_demo_replays_the_robot_and_skips_the_box() {
    let dir = scratch();
    let scene_path = panda_scene(&dir);
    let demo = close_box_demo(&dir);
    let scene = std::sync::Arc::new(armsim::scene::load_scene(&scene_path).expect("scene"));
    let robot = scene.robot.name.clone();

    for mode in [ReplayMode::State, ReplayMode::Action] {
        let mut app = common::app_for(scene.clone());
        traj::start_replay(app.world_mut(), &demo, mode, 0)
            .unwrap_or_else(|e| panic!("{mode:?}: the demo replays: {e}"));
        app.update();
        sim::run_steps(&mut app, STEPS as u64);
        let replay = app.world().resource::<Replay>();
        let report = replay.report();
        assert!(replay.finished && replay.failed.is_none(), "{report}");
        assert_eq!(replay.unknown_bodies, ["box_base"], "{report}");
        assert_eq!(
            replay.shared_bodies,
            std::slice::from_ref(&robot),
            "{report}"
        );
        assert!(
            report.contains(&format!("{STEPS} of {STEPS} steps")),
            "{report}"
        );
        match mode {
            ReplayMode::State => {
                assert!(report.contains("skipped: box_base"), "{report}");
                // The last recorded state was set: the first joint swung with it.
                let q = common::sim(&app).joint_positions()[0];
                assert!((q - 0.01 * STEPS as f32).abs() < 1e-4, "joint1 at {q}");
            }
            ReplayMode::Action => {
                assert_eq!(replay.compared_states, STEPS, "{report}");
                // Only the robot's joints: its root is fixed where the scene puts it (the demo's
                // Franka stands at the origin), and the box is not here.
                assert!(
                    report.contains(&format!("divergence from {STEPS} recorded states: joints ")),
                    "{report}"
                );
                assert!(
                    report.contains(&format!(
                        "(compared: {robot}; not in this scene, not compared: box_base)"
                    )),
                    "{report}"
                );
            }
        }
    }

    // The binary: the replay runs to its end and names the skipped object in one log line.
    for mode in ["state", "action"] {
        let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .current_dir(&dir)
            .args(["--headless", "--no-teleop", "--no-agent-ports", "--scene"])
            .arg(&scene_path)
            .arg("--replay")
            .arg(&demo)
            .args(["--replay-mode", mode])
            .output()
            .expect("armsim runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{mode}: {stdout}{stderr}");
        let log = format!("{stdout}{stderr}");
        let lines: Vec<&str> = log.lines().filter(|l| l.contains("box_base")).collect();
        let skip: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains(&format!("replay by {mode}: skipping box_base")))
            .collect();
        assert_eq!(
            skip.len(),
            1,
            "one line names the skipped object ({mode}): {log}"
        );
        assert!(!log.contains("unknown object"), "{mode}: no refusal: {log}");
        assert!(
            stdout.contains(&format!("{STEPS} of {STEPS} steps")),
            "{mode}: {stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
