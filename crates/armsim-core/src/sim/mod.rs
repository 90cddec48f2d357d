//! The physics of one scene without Bevy: `world` holds the Rapier world (table, objects, the
//! robot as a multibody or as impulse joints, with joint motors, in `arm`), `command` what each
//! joint is told to do, `transmission` the forces that join joints (tendons, joint
//! equalities), `contact_force` the contact forces on an object (a grasp's measure), and `rest`
//! when the arm may sleep.

mod arm;
mod colliders;
mod command;
mod contact_force;
mod rest;
mod sets;
#[cfg(test)]
mod tests;
mod transmission;
mod world;

pub use arm::JointHandle;
pub use colliders::BoundedHull;
pub use command::{CommandError, JointCommand, gripper_commands, gripper_range, set_checked};
pub use contact_force::{ObjectContacts, object_contacts};
pub use rest::{REST_SPEED, REST_STEPS};
pub use sets::{Sets, SetsMut};
pub use world::{
    ActuatedJoint, BodyRole, MAX_PLACE_ANG_VEL, MAX_PLACE_LIN_VEL, ObjectBody, PlaceError, SIM_DT,
    SIM_HZ, SimModel, SimView, SimViewMut, SimWorld, WORLD_HALF_EXTENT, unit_quat,
};

/// The model's [`Pose`](crate::robot::Pose) as Rapier's (translation and rotation carried over
/// as they are): the arm, its colliders and the world all place bodies with it.
fn to_rapier(p: &crate::robot::Pose) -> rapier3d::math::Pose {
    rapier3d::math::Pose::from_parts(p.translation, p.rotation)
}

/// Where a message stands in the simulation's history: the episode (resets so far), the step
/// within the run and the simulated time. Frames and events carry it so that a client can tell
/// what was sent before an event from what was sent after it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stamp {
    pub sim_time_s: f64,
    pub step: u64,
    pub episode: u64,
}
