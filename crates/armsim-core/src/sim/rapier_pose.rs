//! The model's [`Pose`] as Rapier's: one conversion that the arm, its colliders and the world
//! all build on, kept in a leaf of its own so that none of them has to import another for it.

use crate::robot::Pose;

/// The same rigid transform in Rapier's type (translation and rotation carried over as they are).
pub(super) fn to_rapier(p: &Pose) -> rapier3d::math::Pose {
    rapier3d::math::Pose::from_parts(p.translation, p.rotation)
}
