//! The arm's three representations in Rapier (`extensions.armsim.physics.arm_joints`): each
//! reads back the joint state it is put in, and the multibody and the hybrid (fingers on
//! impulse joints) move the arm the same way.

use std::path::Path;

use armsim_core::scene::{ArmJoints, Scene, load_scene};
use armsim_core::sim::{JointCommand, SimWorld};

fn scene(joints: ArmJoints) -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/default_scene.json");
    let mut scene = load_scene(&path).unwrap_or_else(|e| panic!("{e}"));
    scene.config.extensions.armsim.physics.arm_joints = joints;
    scene
}

const ALL: [ArmJoints; 3] = [ArmJoints::Multibody, ArmJoints::Hybrid, ArmJoints::Impulse];

#[test]
fn every_representation_reads_back_the_state_it_is_put_in() {
    for joints in ALL {
        let mut w = SimWorld::new(&scene(joints));
        let q = [0.4, 0.3, 1.1, 1.2, -0.5, 0.7, 0.02, 0.02];
        let qd = [0.5, -0.3, 0.2, 0.1, -0.4, 0.6, 0.01, 0.01];
        w.view_mut().set_joint_state(&q, &qd);
        let (got, got_v) = (w.view().joint_positions(), w.view().joint_velocities());
        for j in 0..q.len() {
            assert!(
                (got[j] - q[j]).abs() < 1e-4,
                "{joints:?}: joint {j} reads {} after being set to {}",
                got[j],
                q[j]
            );
            assert!(
                (got_v[j] - qd[j]).abs() < 1e-3,
                "{joints:?}: joint {j} velocity reads {} after being set to {}",
                got_v[j],
                qd[j]
            );
        }
    }
}

/// Joint positions over 1.5 s of the arm swinging to a new pose and the gripper closing.
fn swing(joints: ArmJoints) -> Vec<Vec<f32>> {
    let mut w = SimWorld::new(&scene(joints));
    let goal = [0.6, 0.3, 1.2, 1.4, 0.3, -0.4, 0.0, 0.0];
    for (j, &target) in goal.iter().enumerate() {
        let cmd = JointCommand::Position {
            target,
            velocity: 0.0,
        };
        w.set_command(j, cmd).unwrap();
    }
    (0..360)
        .map(|_| {
            w.step();
            w.view().joint_positions()
        })
        .collect()
}

#[test]
fn the_hybrid_moves_the_arm_as_the_multibody_does() {
    let (mb, hy) = (swing(ArmJoints::Multibody), swing(ArmJoints::Hybrid));
    // The arm's six joints: the same multibody in both.
    let mut worst = (0.0f32, 0, 0);
    for (step, (a, b)) in mb.iter().zip(&hy).enumerate() {
        for j in 0..6 {
            if (a[j] - b[j]).abs() > worst.0 {
                worst = ((a[j] - b[j]).abs(), j, step);
            }
        }
    }
    assert!(
        worst.0 < 0.01,
        "hybrid and multibody differ by {} at joint {} step {}",
        worst.0,
        worst.1,
        worst.2
    );
    let last = hy.last().unwrap();
    let goal = [0.6, 0.3, 1.2, 1.4, 0.3, -0.4, 0.0, 0.0];
    for j in 0..goal.len() {
        assert!(
            (last[j] - goal[j]).abs() < 0.01,
            "hybrid: joint {j} at {} after 1.5 s, target {}",
            last[j],
            goal[j]
        );
    }
    // The fingers ride on impulse joints with soft limits: jerked by a step change of every
    // arm target, they may lag and overrun their range by a little (2.51 mm at one substep of
    // 12 passes, the shipped setting; 2.5 at two of 3), never by more.
    for q in &hy {
        for j in [6, 7] {
            assert!(
                (-0.003..=0.043).contains(&q[j]),
                "hybrid: finger {j} at {} m",
                q[j]
            );
        }
    }
}

#[test]
fn the_fingers_of_the_hybrid_stay_within_their_limits() {
    // Rapier 0.35.0 cannot give an impulse joint on a multibody link both a motor and a limit;
    // the hybrid puts each finger's limit in a joint of its own.
    let mut w = SimWorld::new(&scene(ArmJoints::Hybrid));
    for j in [6, 7] {
        let cmd = JointCommand::Position {
            target: 0.5,
            velocity: 0.0,
        };
        w.set_command(j, cmd).unwrap();
    }
    for _ in 0..240 {
        w.step();
    }
    let q = w.view().joint_positions();
    for j in [6, 7] {
        assert!(q[j] <= 0.0405, "finger {j} at {} m, limit 0.04", q[j]);
    }
}
