//! Real robots in the simulation: each real arm, loaded from its own file through a scene
//! of `assets/scenes/`, holds its home pose on the table in the ECS app stepped by bevy_rapier.
//! The files come from PyPI (`scripts/robot-fixtures`, cached under `target/`).

#[path = "../../armsim-core/tests/fixtures/mod.rs"]
mod fixtures;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use armsim_sim::scene::{Scene, parse_scene};
use armsim_sim::sim::{ClockMode, run_steps, sim_view};
use armsim_sim::{SimOptions, headless_app};

/// `assets/scenes/<scene>.json` with its robot file replaced by `robot`, loaded.
fn scene_with(scene: &str, robot: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> Scene {
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes");
    let text = std::fs::read_to_string(assets.join(format!("{scene}.json"))).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["robot"]["mjcf_path"] = robot.display().to_string().into();
    edit(&mut json);
    let start = Instant::now();
    let loaded = parse_scene(&json.to_string(), &assets)
        .unwrap_or_else(|e| panic!("{scene} with {}: {e}", robot.display()));
    eprintln!(
        "{scene} with {}: scene and robot loaded in {:.0} ms",
        robot.display(),
        start.elapsed().as_secs_f64() * 1e3
    );
    loaded
}

/// The URDF Panda's names and home: example-robot-data's file, joints `panda_joint1..7`.
fn urdf_panda(json: &mut serde_json::Value) {
    json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
    json["extensions"]["armsim"]["robot"]["tool"] = serde_json::json!({"frame": "panda_hand_tcp"});
}

/// Steps `scene` for 2 s of sim time with nobody in control (IDLE: the arm holds its home) and
/// checks that it held as MuJoCo holds it: a joint in `sag` (name, rad from home after 2 s in
/// MuJoCo 4.0.0, same file, timestep 1/240, a floor at the base) within 3 mrad of that, every
/// other joint within 5 mrad (or 5 mm) of home, and no body faster than 1 cm/s. A file's weak
/// servos sag under gravity: where MuJoCo's arm sags, armsim's sags as much.
fn holds_its_home_pose(scene: Scene, sag: &[(&str, f32)]) {
    let name = scene.robot.name.clone();
    let home = scene.home_q_full();
    let mut app = headless_app(
        Arc::new(scene),
        &SimOptions {
            clock: ClockMode::Manual,
        },
    );
    app.finish();
    app.cleanup();
    app.update();
    // Every body entity's bevy_rapier `Collider` is made of shapes bevy_rapier can show: a
    // mesh link's hull is a custom parry shape in the physics (`BoundedHull`), on which
    // bevy_rapier's `ColliderView` (its `Debug`, `as_typed_shape`) would panic.
    use bevy_rapier3d::rapier::parry::shape::{Shape, TypedShape};
    fn parts(shape: &dyn Shape) -> Vec<&'static str> {
        match shape.as_typed_shape() {
            TypedShape::Compound(c) => c.shapes().iter().flat_map(|(_, s)| parts(&**s)).collect(),
            TypedShape::ConvexPolyhedron(_) => vec!["hull"],
            TypedShape::Custom(_) => vec!["custom"],
            _ => vec!["primitive"],
        }
    }
    let mut colliders = app.world_mut().query::<&bevy_rapier3d::prelude::Collider>();
    let shown: Vec<&str> = colliders
        .iter(app.world())
        .flat_map(|c| parts(&*c.raw))
        .collect();
    assert!(
        shown.contains(&"hull") && !shown.contains(&"custom"),
        "{name}: the link colliders' shapes: {shown:?}"
    );
    let start = Instant::now();
    run_steps(&mut app, 480);
    let wall = start.elapsed().as_secs_f64();
    let sim = sim_view(app.world());
    let q = sim.joint_positions();
    let expected = |j: usize| {
        let name = &sim.robot.joints[j].name;
        sag.iter().find(|(n, _)| n == name).map(|&(_, s)| s)
    };
    // Each joint's error past its tolerance, the worst first.
    let worst = q
        .iter()
        .zip(&home)
        .enumerate()
        .map(|(j, (a, b))| {
            let (sag, tolerance) = expected(j).map_or((0.0, 5e-3), |s| (s, 3e-3));
            (j, (a - b - sag).abs() - tolerance)
        })
        .fold((0, f32::MIN), |w, x| if x.1 > w.1 { x } else { w });
    let fastest = sim
        .bodies()
        .map(|(role, h)| (role, sim.body_velocity(h).0.length()))
        .fold(
            (None, 0.0_f32),
            |w, (role, v)| {
                if v > w.1 { (Some(role), v) } else { w }
            },
        );
    eprintln!(
        "{name}: 480 steps in {:.0} ms ({:.1} µs/step, debug build); worst joint {:.2} mrad past \
         its tolerance on `{}`; fastest body {:.4} m/s ({:?})",
        wall * 1e3,
        wall * 1e6 / 480.0,
        worst.1 * 1e3,
        sim.robot.joints[worst.0].name,
        fastest.1,
        fastest.0
    );
    assert!(
        worst.1 <= 0.0,
        "{name}: joint `{}` is {:.2} mrad past its tolerance ({q:?} vs {home:?}, MuJoCo's sag \
         {sag:?})",
        sim.robot.joints[worst.0].name,
        worst.1 * 1e3
    );
    assert!(
        fastest.1 <= 0.01,
        "{name}: {:?} moves at {} m/s after 2 s",
        fastest.0,
        fastest.1
    );
}

fn menagerie_panda() -> PathBuf {
    fixtures::menagerie_panda_dir().join("panda.xml")
}

#[test]
fn menagerie_panda_holds_its_home_pose() {
    holds_its_home_pose(scene_with("panda", &menagerie_panda(), |_| {}), PANDA_SAG);
}

#[test]
fn urdf_panda_holds_its_home_pose() {
    let urdf = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    holds_its_home_pose(scene_with("panda", &urdf, urdf_panda), &[]);
}

#[test]
fn so101_mjcf_holds_its_home_pose() {
    let mjcf = fixtures::so101_dir().join("so101_new_calib.xml");
    // MuJoCo after 2 s at the scene's home (all 0, jaw at 0.6): shoulder_lift 31.68 mrad,
    // elbow_flex 26.29, wrist_flex 6.22, gripper -0.13.
    holds_its_home_pose(
        scene_with("so101", &mjcf, |_| {}),
        &[
            ("shoulder_lift", 0.03168),
            ("elbow_flex", 0.02629),
            ("wrist_flex", 0.00622),
        ],
    );
}

#[test]
fn so101_urdf_holds_its_home_pose() {
    let urdf = fixtures::so101_dir().join("so101_new_calib.urdf");
    holds_its_home_pose(
        scene_with("so101", &urdf, fixtures::so101_scene_for_urdf),
        &[],
    );
}

/// example-robot-data's SO-100 (URDF, STL meshes) on the SO-101's scene: the same five arm
/// joints and jaw, named alike; its transmissions name the motors.
#[test]
fn so100_urdf_holds_its_home_pose() {
    let urdf = fixtures::example_robot_data().join("so_arm_description/urdf/so100.urdf");
    holds_its_home_pose(
        scene_with("so101", &urdf, |json| {
            json["robot"]["gripper"]["actuator_name"] = "motor6".into();
            json["extensions"]["armsim"]["robot"]
                .as_object_mut()
                .unwrap()
                .remove("tool");
            json["extensions"]["armsim"]["robot"]
                .as_object_mut()
                .unwrap()
                .remove("gripper_positions");
            json["extensions"]["armsim"]["robot"]
                .as_object_mut()
                .unwrap()
                .remove("collide_geoms");
        }),
        &[],
    );
}

#[test]
fn an_arm_without_a_gripper_loads_and_holds() {
    // The scene leaves `robot.gripper` out: the Panda's fingers are then arm joints like any
    // other, held at the keyframe's home.
    holds_its_home_pose(
        scene_with("panda", &menagerie_panda(), |json| {
            json["robot"].as_object_mut().unwrap().remove("gripper");
            json["robot"]["home_q"] = serde_json::json!(PANDA_HOME);
        }),
        PANDA_SAG,
    );
}

/// The Menagerie Panda at its keyframe after 2 s in MuJoCo: its kp 4500/3500/2000 servos give
/// joint2 6.58 mrad and joint4 -6.31 mrad (joint5 -0.33, joint6 -1.14).
const PANDA_SAG: &[(&str, f32)] = &[
    ("joint2", 0.00658),
    ("joint4", -0.00631),
    ("joint5", -0.00033),
    ("joint6", -0.00114),
];

/// The Menagerie Panda's keyframe `home`, as the file writes it (rounded, not π/2 and π/4).
#[allow(clippy::approx_constant)]
const PANDA_HOME: [f64; 9] = [0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853, 0.04, 0.04];

/// A MetaSim v2 demo as MetaSim writes Franka demos: robot `franka`, joints `panda_joint1..7`,
/// `panda_finger_joint1/2`. Joint 1 turns to 0.3 rad over 0.5 s, then holds for 0.5 s; a state
/// is recorded every step.
fn franka_demo(dir: &Path) -> PathBuf {
    let home = PANDA_HOME;
    let joints = |t: usize| {
        let mut q = home;
        q[0] = 0.3 * (t.min(120) as f64 / 120.0);
        let mut m = serde_json::Map::new();
        for (i, v) in q.iter().enumerate() {
            let name = match i {
                7 => "panda_finger_joint1".to_string(),
                8 => "panda_finger_joint2".to_string(),
                _ => format!("panda_joint{}", i + 1),
            };
            m.insert(name, (*v).into());
        }
        serde_json::Value::Object(m)
    };
    let frame = |t: usize| {
        serde_json::json!({"franka": {"pos": [0.0, 0.0, 1.0], "rot": [1.0, 0.0, 0.0, 0.0],
                                      "dof_pos": joints(t)}})
    };
    let demo = serde_json::json!({
        "init_state": frame(0),
        "actions": (1..=240).map(|t| serde_json::json!({"dof_pos_target": joints(t)})).collect::<Vec<_>>(),
        "states": (1..=240).map(frame).collect::<Vec<_>>(),
    });
    let path = dir.join("franka_demo.json");
    std::fs::write(&path, serde_json::json!({ "franka": [demo] }).to_string()).unwrap();
    path
}

/// Replays the Franka demo on `scene` by state and by action; joint 1 must end at 0.3 rad.
fn replays_franka_demo(scene: Scene, joint1: &str) {
    use armsim_sim::trajectory::plugin::{self as traj, Replay, ReplayMode};
    let dir = std::env::temp_dir().join(format!("armsim-franka-{}-{joint1}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = franka_demo(&dir);
    let scene = Arc::new(scene);
    for mode in [ReplayMode::State, ReplayMode::Action] {
        let mut app = headless_app(
            scene.clone(),
            &SimOptions {
                clock: ClockMode::Manual,
            },
        );
        app.finish();
        app.cleanup();
        app.update();
        traj::start_replay(app.world_mut(), &path, mode, 0)
            .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        app.update();
        run_steps(&mut app, 240);
        let replay = app.world().resource::<Replay>();
        assert!(replay.finished, "{mode:?}: {}", replay.report());
        let sim = sim_view(app.world());
        let j = sim.robot.joint_index(joint1).unwrap();
        let q = sim.joint_positions()[j];
        eprintln!("{mode:?} on `{joint1}`: {q:.4} rad; {}", replay.report());
        assert!((q - 0.3).abs() < 0.01, "{mode:?}: `{joint1}` at {q}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn franka_demos_replay_on_the_menagerie_and_the_urdf_panda() {
    replays_franka_demo(scene_with("panda", &menagerie_panda(), |_| {}), "joint1");
    let urdf = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    replays_franka_demo(scene_with("panda", &urdf, urdf_panda), "panda_joint1");
}
