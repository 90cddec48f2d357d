//! The patched rapier3d (vendor/rapier3d-0.35.0-glamx0.2/ARMSIM-PATCH.md) builds a multibody's
//! mass matrices from the leading, non-zero block of each link's Jacobian and the block-diagonal
//! rigid-body inertia, where upstream multiplies the whole dense Jacobian twice. Here both builds
//! run on the same state of every shipped and fixture robot, mid-swing (so the gyroscopic and
//! Coriolis terms are not zero), and must give the same matrices, bit for bit.

mod fixtures;

use armsim_core::scene::Scene;
use armsim_core::sim::{JointCommand, SIM_DT, SimWorld};

/// Swings every arm joint about home for half a second, then compares the two builds on the
/// arm's multibody: they must give the same matrices, bit for bit.
fn builds_agree(name: &str, scene: Scene) {
    let mut world = SimWorld::new(&scene);
    let home = scene.home_q_full();
    let joints = scene.arm_joints();
    for k in 1..=120 {
        let t = k as f32 * SIM_DT as f32;
        for (i, &j) in joints.iter().enumerate() {
            let target = home[j] + 0.4 * (std::f32::consts::TAU * (0.8 + 0.3 * i as f32) * t).sin();
            let cmd = JointCommand::Position {
                target,
                velocity: 0.0,
            };
            world.model.set_command(j, cmd).unwrap();
        }
        world.step();
    }
    let physics = &mut world.physics;
    let link = physics
        .bodies
        .iter()
        .find_map(|(h, _)| physics.multibody_joints.rigid_body_link(h).copied())
        .unwrap_or_else(|| panic!("{name}: no multibody"));
    let mb = physics
        .multibody_joints
        .get_multibody_mut(link.multibody)
        .unwrap();
    // At the step's dt, and at dt = 1 s, where the gyroscopic and Coriolis terms are 240 times
    // a step's and would show any error in them.
    for dt in [SIM_DT as f32, 1.0] {
        let [fast, dense, fast_acc, dense_acc] =
            mb.mass_matrices_fast_and_dense(dt, &physics.bodies);
        let n = dense.nrows();
        assert!(n >= 5, "{name}: {n} DoFs");
        let scale = dense.amax();
        // (At dt = 1 s the damping and springs, dt·d and dt²·k on the diagonal, dwarf the rest.)
        if dt < 1.0 {
            let off = (0..n)
                .flat_map(|r| (0..n).filter(move |&c| c != r).map(move |c| (r, c)))
                .map(|(r, c)| dense[(r, c)].abs())
                .fold(0.0f32, f32::max);
            assert!(off > 1e-3 * scale, "{name}: no coupling between DoFs");
        }
        let terms = (&dense_acc - &dense).amax();
        assert!(
            terms > 1e-6 * scale,
            "{name}: no gyroscopic or Coriolis term mid-swing"
        );
        eprintln!(
            "{name}, dt {dt}: {n}×{n}, largest entry {scale:.3e}, largest dt·(G, C) term {terms:.3e}"
        );
        // Bit for bit (f32 `==`, so up to the sign of an exact zero).
        assert_eq!(fast, dense, "{name}, dt {dt}: M differs");
        assert_eq!(
            fast_acc, dense_acc,
            "{name}, dt {dt}: M + dt·(G, C) differs"
        );
    }
}

#[test]
fn arm6() {
    builds_agree("arm6", fixtures::scene_with("default_scene", None, |_| {}));
}

#[test]
fn menagerie_panda() {
    let mjcf = fixtures::menagerie_panda_dir().join("panda.xml");
    builds_agree(
        "Menagerie Panda",
        fixtures::scene_with("panda", Some(&mjcf), |_| {}),
    );
}

#[test]
fn urdf_panda() {
    let urdf = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    let scene = fixtures::scene_with("panda", Some(&urdf), |json| {
        json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
        json["extensions"]["armsim"]["robot"]["tool"] =
            serde_json::json!({"frame": "panda_hand_tcp"});
    });
    builds_agree("URDF Panda", scene);
}

#[test]
fn so101_mjcf() {
    builds_agree("SO-101 MJCF", fixtures::so101_scene());
}

#[test]
fn so101_urdf() {
    let urdf = fixtures::so101_dir().join("so101_new_calib.urdf");
    let scene = fixtures::scene_with("so101", Some(&urdf), fixtures::so101_scene_for_urdf);
    builds_agree("SO-101 URDF", scene);
}

#[test]
fn so100_urdf() {
    builds_agree("SO-100 URDF", fixtures::so100_urdf_scene());
}
