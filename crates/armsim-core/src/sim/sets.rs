//! The Rapier sets of a world, borrowed from wherever they are kept: a `PhysicsWorld` (a
//! [`super::SimWorld`] on its own: the benchmark's bare baseline, the core's tests) or
//! bevy_rapier3d's context entity, which owns them in the app. Everything that reads or moves
//! the robot and the objects (joint motors, joint readings, teleports, snapshots) takes these,
//! so the same code works on either owner.

use rapier3d::prelude::{
    ColliderSet, ImpulseJointSet, MultibodyJointSet, PhysicsWorld, RigidBodySet,
};

/// The sets, read only.
#[derive(Clone, Copy)]
pub struct Sets<'a> {
    pub bodies: &'a RigidBodySet,
    pub colliders: &'a ColliderSet,
    pub impulse_joints: &'a ImpulseJointSet,
    pub multibody_joints: &'a MultibodyJointSet,
}

impl<'a> Sets<'a> {
    /// Whether every body that can move sleeps (fixed and disabled ones aside): a Rapier step
    /// then changes nothing, and is skipped. A body woken, moved with a wake-up, inserted or
    /// pushed by a force is awake, so the step after it runs. A change that wakes nothing
    /// (a sleeping body moved without a wake-up, a collider changed) waits for the next step
    /// that runs: wake what you change, as Rapier asks anyway.
    pub fn all_asleep(&self) -> bool {
        self.bodies
            .iter()
            .all(|(_, rb)| rb.is_fixed() || !rb.is_enabled() || rb.is_sleeping())
    }

    /// The sets of a `PhysicsWorld`.
    pub fn of(physics: &'a PhysicsWorld) -> Self {
        Self {
            bodies: &physics.bodies,
            colliders: &physics.colliders,
            impulse_joints: &physics.impulse_joints,
            multibody_joints: &physics.multibody_joints,
        }
    }
}

/// The sets, to write (motors, teleports, forces).
pub struct SetsMut<'a> {
    pub bodies: &'a mut RigidBodySet,
    pub colliders: &'a mut ColliderSet,
    pub impulse_joints: &'a mut ImpulseJointSet,
    pub multibody_joints: &'a mut MultibodyJointSet,
}

impl<'a> SetsMut<'a> {
    /// The sets of a `PhysicsWorld`.
    pub fn of(physics: &'a mut PhysicsWorld) -> Self {
        Self {
            bodies: &mut physics.bodies,
            colliders: &mut physics.colliders,
            impulse_joints: &mut physics.impulse_joints,
            multibody_joints: &mut physics.multibody_joints,
        }
    }

    /// The same sets, read only.
    pub fn as_ref(&self) -> Sets<'_> {
        Sets {
            bodies: self.bodies,
            colliders: self.colliders,
            impulse_joints: self.impulse_joints,
            multibody_joints: self.multibody_joints,
        }
    }
}
