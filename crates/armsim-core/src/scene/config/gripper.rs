//! Which joints make up a robot's gripper and where they open: shared by the loaded [`Scene`]
//! (home pose) and the checks that validate `home_q` against the robot.
//!
//! [`Scene`]: super::Scene

use crate::robot::model::{Joint, JointKind, RobotModel};

/// The position of a gripper joint that opens the jaws.
///
/// The scene's `extensions.armsim.robot.gripper_positions` when it gives them (`Joint::grip`); otherwise the
/// convention most robot files follow: a slide finger opens towards its upper limit; a hinged finger is open at 0
/// (straight), clamped into its limits. An unlimited joint opens at 0.
pub fn gripper_open_position(joint: &Joint) -> f32 {
    if let Some((open, _)) = joint.grip {
        return open;
    }
    match (joint.kind, joint.limits) {
        (JointKind::Prismatic, Some((_, hi))) => hi,
        (JointKind::Revolute, Some((lo, hi))) => 0.0_f32.clamp(lo.min(hi), hi.max(lo)),
        (_, None) => 0.0,
    }
}

/// `leader` and every joint that follows it through mimic relations, breadth first (leaders before followers).
pub(super) fn gripper_joint_set(robot: &RobotModel, leader: usize) -> Vec<usize> {
    let mut set = vec![leader];
    let mut i = 0;
    while i < set.len() {
        let current = set[i];
        for m in robot.followers(current) {
            // A cycle in a malformed model must not loop forever.
            if !set.contains(&m.joint) {
                set.push(m.joint);
            }
        }
        i += 1;
    }
    set
}
