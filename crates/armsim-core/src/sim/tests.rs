//! Unit tests of the world's step bookkeeping: what a step leaves Rapier to redo, and when the
//! arm sleeps (`rest`).

use std::path::Path;

use super::{JointCommand, REST_STEPS, SimWorld};
use crate::scene::Scene;
use crate::scene::load_scene;

fn default_world() -> SimWorld {
    world_of("default_scene")
}

/// A shipped scene's file.
fn scene_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../assets/scenes/{name}.json"))
}

/// A shipped scene's world, as loaded.
fn world_of(name: &str) -> SimWorld {
    SimWorld::new(&load_scene(&scene_path(name)).unwrap_or_else(|e| panic!("{e}")))
}

/// Whether Rapier has bodies marked modified (its `modified_bodies` list is private; its
/// `Debug` shows it). A modified body makes the next step bump the island epoch and rebuild
/// the solver's body and joint layout.
fn modified(world: &SimWorld) -> bool {
    let text = format!("{:?}", world.physics.bodies);
    let at = text
        .find("modified_bodies: ")
        .expect("RigidBodySet's Debug names it");
    !text[at..].starts_with("modified_bodies: ModifiedObjects([]")
}

#[test]
fn a_position_command_step_marks_no_link_modified() {
    let mut world = default_world();
    world.step();
    assert!(!modified(&world), "a step consumes the list");
    let q = world.view().joint_positions();
    for (i, &q) in q.iter().enumerate() {
        let cmd = JointCommand::Position {
            target: q + 0.01,
            velocity: 0.0,
        };
        world.set_command(i, cmd).unwrap();
    }
    world.view_mut().prepare_step();
    assert!(
        !modified(&world),
        "position commands must not touch the links' rigid bodies"
    );
    // An effort command does need forces, and the step after it must clear them.
    world
        .set_command(0, JointCommand::Effort { torque: 1.0 })
        .unwrap();
    world.view_mut().prepare_step();
    assert!(modified(&world));
    world.step();
    world
        .set_command(
            0,
            JointCommand::Position {
                target: 0.0,
                velocity: 0.0,
            },
        )
        .unwrap();
    world.view_mut().prepare_step();
    let torque = world.physics.bodies[world.link_bodies[1]].user_torque();
    assert_eq!(torque, glam::Vec3::ZERO, "last step's effort is cleared");
}

#[test]
fn the_default_scene_steps_the_same_twice() {
    let run = || {
        let mut world = default_world();
        for step in 0..240 {
            let t = step as f32 / 240.0;
            let q = world.view().joint_positions();
            let cmd = JointCommand::Position {
                target: q[1] + 0.2 * t.sin(),
                velocity: 0.0,
            };
            world.set_command(1, cmd).unwrap();
            world.step();
        }
        world.view().state_hash()
    };
    assert_eq!(run(), run());
}

/// A shipped scene with `edit` applied to its JSON, loaded from a copy.
fn scene(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Scene {
    let path = scene_path(name);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    let dir = std::env::temp_dir().join(format!("armsim-rest-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The scene's robot path is relative to its own folder.
    let robot = v["robot"]["mjcf_path"].as_str().unwrap().to_string();
    let abs = path.parent().unwrap().join(robot);
    v["robot"]["mjcf_path"] = serde_json::Value::from(abs.to_str().unwrap());
    let out = dir.join(format!("{name}.json"));
    std::fs::write(&out, v.to_string()).unwrap();
    load_scene(&out).unwrap_or_else(|e| panic!("{e}"))
}

/// Steps until the arm sleeps; panics past `max` steps.
fn step_until_asleep(world: &mut SimWorld, max: usize) -> usize {
    for k in 1..=max {
        world.step();
        if world.arm_asleep() {
            return k;
        }
    }
    panic!("the arm did not sleep within {max} steps");
}

fn hold_at(world: &mut SimWorld, j: usize, target: f32) {
    let cmd = JointCommand::Position {
        target,
        velocity: 0.0,
    };
    world.set_command(j, cmd).unwrap();
}

#[test]
fn a_resting_arm_sleeps_still_and_stays_where_it_was() {
    for name in ["default_scene", "gripper4"] {
        let mut world = world_of(name);
        let k = step_until_asleep(&mut world, 2 * REST_STEPS as usize);
        assert!(
            k >= REST_STEPS as usize,
            "{name}: it rests {REST_STEPS} steps first, slept at {k}"
        );
        let v = world.view().joint_velocities();
        assert!(
            v.iter().all(|&v| v == 0.0),
            "{name}: asleep, its joints read still: {v:?}"
        );
        let links = |w: &SimWorld| {
            let poses = w.link_bodies.iter().map(|&h| w.view().body_pose(h));
            poses
                .map(|p| (p.translation, p.rotation))
                .collect::<Vec<_>>()
        };
        let (q, poses) = (world.view().joint_positions(), links(&world));
        for _ in 0..240 {
            world.step();
        }
        assert!(world.arm_asleep(), "{name}: nothing woke it");
        assert_eq!(world.view().joint_positions(), q, "{name}");
        assert_eq!(links(&world), poses, "{name}: a sleeping arm does not move");
    }
}

#[test]
fn a_new_command_wakes_the_arm_and_it_reaches_the_target_before_sleeping_again() {
    let mut world = default_world();
    step_until_asleep(&mut world, 400);
    // The same command again is no disturbance.
    let held = world.commands()[1];
    world.set_command(1, held).unwrap();
    world.step();
    assert!(world.arm_asleep(), "an unchanged command leaves it asleep");
    let target = world.view().joint_positions()[1] + 0.1;
    hold_at(&mut world, 1, target);
    world.step();
    assert!(!world.arm_asleep(), "a new target wakes it at once");
    assert!(
        world.view().joint_velocities()[1].abs() > 0.0,
        "and it moves"
    );
    step_until_asleep(&mut world, 2400);
    let q = world.view().joint_positions()[1];
    assert!(
        (q - target).abs() < 2e-3,
        "it sleeps only once there: {q} for {target}"
    );
}

#[test]
fn a_velocity_command_keeps_the_arm_awake_however_slow() {
    let mut world = default_world();
    step_until_asleep(&mut world, 400);
    world
        .set_command(0, JointCommand::Velocity { target: 1e-4 })
        .unwrap();
    let q0 = world.view().joint_positions()[0];
    for _ in 0..(4 * REST_STEPS) {
        world.step();
        assert!(!world.arm_asleep(), "a joint told to move never rests");
    }
    let q = world.view().joint_positions()[0];
    assert!(q > q0, "and it moves: {q0} → {q}");
}

#[test]
fn a_teleport_or_a_placed_object_wakes_the_arm() {
    let mut world = default_world();
    step_until_asleep(&mut world, 400);
    let q = world.view().joint_positions();
    let zero = vec![0.0; q.len()];
    world.view_mut().set_joint_state(&q, &zero);
    world.step();
    assert!(!world.arm_asleep(), "a teleport wakes it");
    step_until_asleep(&mut world, 400);
    let pose = world.view().body_pose(world.objects[0].body);
    world
        .view_mut()
        .place_object(0, pose, glam::Vec3::ZERO, glam::Vec3::ZERO)
        .unwrap();
    world.step();
    assert!(!world.arm_asleep(), "a placement wakes it");
}

#[test]
fn a_cube_that_lands_on_a_sleeping_arm_wakes_it() {
    let mut world = default_world();
    step_until_asleep(&mut world, 400);
    // Dropped from 2.5 m over the tool: 0.7 s of fall, long enough for the arm to rest again
    // after the placement woke it.
    let above = world.view().ee_position() + glam::Vec3::new(0.0, 0.0, 2.5);
    let rot = glam::Quat::IDENTITY;
    let pose = crate::robot::Pose::new(above, rot);
    world
        .view_mut()
        .place_object(0, pose, glam::Vec3::ZERO, glam::Vec3::ZERO)
        .unwrap();
    step_until_asleep(&mut world, 2 * REST_STEPS as usize);
    let cube = world.objects[0].body;
    let mut woke = false;
    for _ in 0..480 {
        world.step();
        if !world.arm_asleep() {
            woke = true;
            break;
        }
    }
    let z = world.view().body_pose(cube).translation.z;
    assert!(woke, "the cube's contact wakes the arm (cube at z = {z})");
    assert!(
        z < above.z - 2.0,
        "it woke when the cube came down on it, not before: cube at z = {z}"
    );
}

#[test]
fn the_arm_stays_awake_where_the_scene_says_so() {
    let mut world = SimWorld::new(&scene("default_scene", |v| {
        v["extensions"]["armsim"]["physics"]["arm_sleeps"] = serde_json::Value::Bool(false);
    }));
    for _ in 0..(4 * REST_STEPS) {
        world.step();
        assert!(!world.arm_asleep());
    }
}

#[test]
fn sleeping_and_waking_steps_the_same_twice() {
    let run = || {
        let mut world = default_world();
        let mut hashes = Vec::new();
        for round in 0..3 {
            step_until_asleep(&mut world, 2400);
            let q = world.view().joint_positions()[1];
            hold_at(&mut world, 1, q + 0.05 * (round as f32 + 1.0));
            for _ in 0..60 {
                world.step();
            }
            hashes.push(world.view().state_hash());
        }
        hashes
    };
    assert_eq!(run(), run());
}
