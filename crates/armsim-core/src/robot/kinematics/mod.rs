//! Forward kinematics, the end-effector Jacobian and damped-least-squares IK (position, or
//! position plus a tool axis), and gravity compensation: `fk.rs`, `ik.rs` and `gravity.rs`, all
//! re-exported here.
//!
//! Pure functions on [`RobotModel`], all in the robot base frame (the root link's frame), so the
//! physics builder, the teleop workspace clamps and the tests share one definition of where the
//! arm is. Joint vectors are in `model.joints` order; a vector shorter than the joint list is
//! completed by [`complete_q`] (mimic followers follow their leader, anything else is zero), so a
//! 6-entry `home_q` works for an arm whose gripper adds two more joints.

mod fk;
mod gravity;
mod ik;

use glam::{Quat, Vec3};

use super::model::{JointKind, Link, RobotModel};
use crate::geometry::Pose;

pub use fk::*;
pub use gravity::*;
pub use ik::*;

#[cfg(test)]
mod tests;
