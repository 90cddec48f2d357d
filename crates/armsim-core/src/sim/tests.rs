//! Unit tests of the world's step bookkeeping: what a step leaves Rapier to redo.

use std::path::Path;

use super::{JointCommand, SimWorld};
use crate::scene::load_scene;

fn default_world() -> SimWorld {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/default_scene.json");
    SimWorld::new(&load_scene(&path).unwrap_or_else(|e| panic!("{e}")))
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
