//! Pick-and-place physics with arm6: a scripted position-control sequence moves above a cube,
//! descends, closes the gripper and lifts; the cube must come up with the gripper and stay in it.

mod common;

use armsim::robot::kinematics;
use armsim::session::SessionCommand;
use armsim::sim::{JointCommand, run_steps};
use bevy::prelude::App;
use common::*;
use glam::Vec3;

/// arm6 geometry (assets/robots/arm6.xml): shoulder axis height, link lengths, and the distance
/// from the wrist_1 axis to the tool centre point along the tool axis.
const SHOULDER_Z: f32 = 0.16;
const UPPER_ARM: f32 = 0.33;
const FOREARM: f32 = 0.28;
const WRIST_TO_TCP: f32 = 0.217;

/// Joint angles (the six arm joints) that put the tool centre point at `p` (robot base frame)
/// with the gripper pointing straight down and the jaws turned by `yaw` about the tool axis.
fn top_down(p: Vec3, yaw: f32) -> [f32; 6] {
    let pan = p.y.atan2(p.x);
    let r = p.x.hypot(p.y);
    let (wr, wz) = (r, p.z + WRIST_TO_TCP - SHOULDER_Z);
    let c = ((wr * wr + wz * wz - UPPER_ARM * UPPER_ARM - FOREARM * FOREARM)
        / (2.0 * UPPER_ARM * FOREARM))
        .clamp(-1.0, 1.0);
    let elbow = c.acos();
    let lift = wr.atan2(wz) - (FOREARM * elbow.sin()).atan2(UPPER_ARM + FOREARM * elbow.cos());
    let wrist_1 = std::f32::consts::PI - lift - elbow;
    [pan, lift, elbow, wrist_1, 0.0, yaw - pan]
}

/// Moves the arm joints to `goal` by linear interpolation of position targets over `secs`.
fn move_to(app: &mut App, arm: &[usize], goal: [f32; 6], secs: f32) {
    let start: Vec<f32> = arm
        .iter()
        .map(|&j| match targets(app).commands[j] {
            JointCommand::Position { target, .. } => target,
            _ => sim(app).joint_positions()[j],
        })
        .collect();
    let steps = (secs * 240.0) as u32;
    for s in 1..=steps {
        let t = s as f32 / steps as f32;
        let t = t * t * (3.0 - 2.0 * t);
        for (k, &j) in arm.iter().enumerate() {
            targets(app).commands[j] = JointCommand::Position {
                target: start[k] + (goal[k] - start[k]) * t,
                velocity: 0.0,
            };
        }
        run_steps(app, 1);
    }
}

fn set_gripper(app: &mut App, leader: usize, closed: f32) {
    let robot = sim(app).robot.clone();
    targets(app).set_gripper(&robot, leader, closed);
}

#[test]
fn arm6_picks_up_a_cube() {
    let scene = default_scene();
    let arm = scene.arm_joints();
    assert_eq!(arm.len(), 6);
    let gripper = scene.gripper_joint().expect("arm6 has a gripper");
    let mut app = app_for(scene.clone());
    command(&mut app, SessionCommand::Start);

    let (cube_body, cube_start, base, top) = {
        let s = sim(&app);
        let o = &s.objects[0];
        let p = s.physics.bodies[o.body].translation();
        (o.body, p, s.base_pose.translation, s.table_top_z)
    };
    let grasp = cube_start - base;
    let above = grasp + Vec3::new(0.0, 0.0, 0.15);

    // The closed form agrees with the robot model's forward kinematics.
    for p in [grasp, above] {
        let mut q = scene.home_q_full();
        for (k, &j) in arm.iter().enumerate() {
            q[j] = top_down(p, 0.0)[k];
        }
        let fk = kinematics::ee_position(&scene.robot, &q);
        assert!((fk - p).length() < 1e-3, "FK {fk} vs target {p}");
    }

    set_gripper(&mut app, gripper, 0.0);
    move_to(&mut app, &arm, top_down(above, 0.0), 2.0);
    move_to(&mut app, &arm, top_down(grasp, 0.0), 1.5);
    run_steps(&mut app, 60);
    set_gripper(&mut app, gripper, 1.0);
    run_steps(&mut app, 180);
    move_to(&mut app, &arm, top_down(above, 0.0), 1.5);

    // Held for two seconds, high above the table, between the fingers.
    for _ in 0..8 {
        run_steps(&mut app, 60);
        let s = sim(&app);
        let cube = s.physics.bodies[cube_body].translation();
        let tcp = s.ee_position();
        assert!(
            (cube - tcp).length() < 0.03,
            "cube at {cube} left the gripper at {tcp}"
        );
    }
    let cube = sim(&app).physics.bodies[cube_body].translation();
    assert!(
        cube.z - 0.025 >= top + 0.05,
        "cube bottom {} is not 5 cm above the table top {top}",
        cube.z - 0.025
    );
}
