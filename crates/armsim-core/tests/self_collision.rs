//! Self-collision on a real arm: the Menagerie Panda, driven at joint targets that
//! make its hand run into its own links, stops short of them as MuJoCo's does, and reaches them
//! through itself only with `extensions.armsim.robot.self_collision: false`. Every fixture robot
//! starts at its home pose out of contact with itself.

// The Panda's keyframe writes 1.57079 and 0.7853, and MuJoCo ran these very numbers.
#![allow(clippy::approx_constant)]

#[path = "fixtures/mod.rs"]
mod fixtures;

use armsim_core::scene::Scene;
use armsim_core::sim::{JointCommand, SimWorld};

fn panda(self_collision: Option<bool>) -> Scene {
    let xml = fixtures::menagerie_panda_dir().join("panda.xml");
    fixtures::scene_with("panda", Some(&xml), |json| {
        if let Some(on) = self_collision {
            json["extensions"]["armsim"]["robot"]["self_collision"] = on.into();
        }
    })
}

/// Sets the Panda's seven arm joints' position targets to `q`.
fn command(w: &mut SimWorld, q: &[f32; 7]) {
    for (j, &target) in q.iter().enumerate() {
        let cmd = JointCommand::Position {
            target,
            velocity: 0.0,
        };
        w.set_command(j, cmd).unwrap();
    }
}

/// Steps `w` for `seconds` at 240 Hz.
fn run(w: &mut SimWorld, seconds: f32) {
    for _ in 0..(seconds * 240.0) as usize {
        w.step();
    }
}

/// One self-collision case: from the pose `start` (reached from home out of contact), joint
/// `joint` alone is sent to `target`, into the arm's own links; MuJoCo's arm stops it at
/// `mujoco_stop`.
struct Case {
    what: &'static str,
    start: [f32; 7],
    joint: usize,
    target: f32,
    mujoco_stop: f32,
}

/// MuJoCo 4.0.0 (`benches/.venv`) on the same panda.xml: keyframe `home`, gripper open (ctrl
/// 255), `start` as ctrl for 2 s, then the one joint's target for 2 s, at its 2 ms step. The
/// joint stops at `mujoco_stop` and creeps less than 0.5 mrad over the last 0.5 s; the others
/// stay within 8 mrad of `start`. Shortfalls: 0.240, 0.818, 0.800 and 0.400 rad.
const CASES: [Case; 4] = [
    Case {
        what: "hand against link5 (wrist straightened)",
        start: [0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853],
        joint: 5,
        target: -0.0175,
        mujoco_stop: 0.222,
    },
    Case {
        what: "finger against link1 (wrist straightened, elbow folded)",
        start: [0.0, -0.5, 0.0, -2.8, 0.0, 1.57, -0.7853],
        joint: 5,
        target: -0.0175,
        mujoco_stop: 0.800,
    },
    Case {
        what: "finger against link1 and link2 (shoulder back, elbow folded)",
        start: [0.0, -1.0, 0.0, -2.8, 0.0, 1.57, -0.7853],
        joint: 5,
        target: -0.0175,
        mujoco_stop: 0.782,
    },
    Case {
        what: "hand against link1 (elbow folded)",
        start: [0.0, 0.5, 0.0, -2.0, 0.0, 0.5, -0.7853],
        joint: 3,
        target: -3.07,
        mujoco_stop: -2.670,
    },
];

/// Runs `case` in `scene`: the joint positions where the arm ends.
fn play(scene: &Scene, case: &Case) -> Vec<f32> {
    let mut w = SimWorld::new(scene);
    command(&mut w, &case.start);
    run(&mut w, 2.0);
    let mut goal = case.start;
    goal[case.joint] = case.target;
    command(&mut w, &goal);
    run(&mut w, 2.0);
    w.view().joint_positions()[..7].to_vec()
}

#[test]
fn panda_stops_short_of_its_own_links_and_passes_through_them_with_self_collision_off() {
    let on = panda(None);
    let off = panda(Some(false));
    assert!(on.robot.self_collision.enabled());
    assert!(!off.robot.self_collision.enabled());
    let mut report = Vec::new();
    for case in &CASES {
        let (q_on, q_off) = (play(&on, case), play(&off, case));
        let j = case.joint;
        report.push(format!(
            "{}: joint{} target {:.3}, armsim stops at {:.3} ({:.3} short), MuJoCo at {:.3}; \
             self-collision off: {:.3}",
            case.what,
            j + 1,
            case.target,
            q_on[j],
            (case.target - q_on[j]).abs(),
            case.mujoco_stop,
            q_off[j]
        ));
        let report = report.join("\n");
        // Off: the joint reaches its target, through the arm's own links.
        assert!((q_off[j] - case.target).abs() < 0.02, "{report}");
        // On: it stops well short, where MuJoCo's does.
        assert!((q_on[j] - case.target).abs() > 0.15, "{report}");
        assert!((q_on[j] - case.mujoco_stop).abs() < 0.05, "{report}");
    }
    println!("{}", report.join("\n"));
}

/// Link pairs of `w`'s arm in contact (with some penetration or touching) right now.
fn self_contacts(w: &SimWorld) -> Vec<(String, String)> {
    let links = &w.model.link_bodies;
    let names = &w.model.robot.links;
    let link_of = |c| {
        let body = w.physics.colliders.get(c)?.parent()?;
        links.iter().position(|&b| b == body)
    };
    let mut out = Vec::new();
    for pair in w.physics.narrow_phase.contact_pairs() {
        if !pair.has_any_active_contact() {
            continue;
        }
        let deep = pair
            .find_deepest_contact()
            .is_some_and(|(_, c)| c.dist < 0.0);
        if let (Some(a), Some(b)) = (link_of(pair.collider1), link_of(pair.collider2))
            && deep
        {
            out.push((names[a].name.clone(), names[b].name.clone()));
        }
    }
    out
}

/// Two links by name.
type LinkPair = (&'static str, &'static str);

/// Every fixture robot at its home pose, after 1 s: the link pairs in contact with some
/// penetration are the ones MuJoCo 4.0.0 finds in the same file at the same pose. Only the SO-100
/// URDF has one: at q = 0 its `upper_arm` dips 0.3 mm into its `base` (MuJoCo: world–upper_arm,
/// dist −0.0003 m, the base fused into the world; armsim: −0.0003 m). MuJoCo also finds base and
/// `shoulder` 33 mm deep, a pair the URDF rule (adjacent links never touch) leaves out. The
/// others, MJCF and URDF, start clear of themselves (MuJoCo: no contact at the keyframe), and
/// hold their home exactly as with self-collision off.
#[test]
fn every_fixture_robot_starts_at_home_in_the_contacts_mujoco_finds() {
    let so101 = fixtures::so101_dir().join("so101_new_calib.xml");
    let so101_urdf = fixtures::so101_dir().join("so101_new_calib.urdf");
    let urdf_panda = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    let scenes: [(&str, Scene, &[LinkPair]); 7] = [
        (
            "arm6",
            fixtures::scene_with("default_scene", None, |_| {}),
            &[],
        ),
        (
            "gripper4",
            fixtures::scene_with("gripper4", None, |_| {}),
            &[],
        ),
        ("menagerie panda", panda(None), &[]),
        (
            "so101",
            fixtures::scene_with("so101", Some(&so101), |_| {}),
            &[],
        ),
        (
            "so101 urdf",
            fixtures::scene_with("so101", Some(&so101_urdf), |json| {
                json["robot"]["gripper"]["actuator_name"] = "motor6".into();
                json["extensions"]["armsim"]["robot"]["tool"] =
                    serde_json::json!({"frame": "gripper_frame_link"});
                let ext = json["extensions"]["armsim"]["robot"]
                    .as_object_mut()
                    .unwrap();
                ext.remove("collide_geoms");
            }),
            &[],
        ),
        (
            "so100 urdf",
            fixtures::so100_urdf_scene(),
            &[("base", "upper_arm")],
        ),
        (
            "panda urdf",
            fixtures::scene_with("panda", Some(&urdf_panda), |json| {
                json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
                json["extensions"]["armsim"]["robot"]["tool"] =
                    serde_json::json!({"frame": "panda_hand_tcp"});
            }),
            &[],
        ),
    ];
    for (name, scene, expected) in &scenes {
        let sc = &scene.robot.self_collision;
        assert!(sc.enabled(), "{name}");
        assert_eq!(sc.dropped, 0, "{name}");
        println!("{name}: {}", sc.summary(scene.robot.links.len()));
        let mut w = SimWorld::new(scene);
        run(&mut w, 1.0);
        let touching = self_contacts(&w);
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|&(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(touching, expected, "{name} at home");
        if !expected.is_empty() {
            continue;
        }
        // Out of contact, self-collision changes nothing: the arm holds (or sags) exactly as
        // with it off.
        let mut off = scene.clone();
        off.robot.self_collision = Default::default();
        let mut w_off = SimWorld::new(&off);
        run(&mut w_off, 1.0);
        let (q, q_off) = (w.view().joint_positions(), w_off.view().joint_positions());
        let worst = q
            .iter()
            .zip(&q_off)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(
            worst < 1e-3,
            "{name}: {q:?} with self-collision, {q_off:?} without"
        );
    }
}
