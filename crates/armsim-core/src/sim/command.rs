//! What the arm is told to do, joint by joint: the command type every protocol, the session's
//! hold posture and the recorder share, and the gripper's commands in 0 (open) ..= 1 (closed).

use crate::robot::{JointKind, RobotModel};

/// What one joint is told to do. Position targets go through the joint's PD motor, velocity
/// targets through a damping motor, efforts bypass the motor and apply a torque (or force) pair
/// to the two links the joint connects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JointCommand {
    Position { target: f32, velocity: f32 },
    Velocity { target: f32 },
    Effort { torque: f32 },
}

impl JointCommand {
    /// Whether the command asks the joint to move: a velocity, alone or with a position target.
    /// Such a command keeps the arm from resting (and sleeping), however slowly it moves.
    pub fn asks_for_motion(&self) -> bool {
        match *self {
            JointCommand::Position { velocity, .. } => velocity != 0.0,
            JointCommand::Velocity { target } => target != 0.0,
            JointCommand::Effort { .. } => false,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CommandError {
    #[error("joint {joint} does not exist")]
    NoSuchJoint { joint: usize },
    #[error("command for joint {joint} is not finite")]
    NotFinite { joint: usize },
}

/// Sets `commands[index]` to `cmd`. Non-finite values are refused, so a bad input can never
/// reach the solver; an index past the end is refused too.
pub fn set_checked(
    commands: &mut [JointCommand],
    index: usize,
    cmd: JointCommand,
) -> Result<(), CommandError> {
    let finite = match cmd {
        JointCommand::Position { target, velocity } => target.is_finite() && velocity.is_finite(),
        JointCommand::Velocity { target } => target.is_finite(),
        JointCommand::Effort { torque } => torque.is_finite(),
    };
    if !finite {
        return Err(CommandError::NotFinite { joint: index });
    }
    let slot = commands
        .get_mut(index)
        .ok_or(CommandError::NoSuchJoint { joint: index })?;
    *slot = cmd;
    Ok(())
}

/// Position targets that put the gripper at `closed` in 0 (open) ..= 1 (closed): the gripper
/// actuator's joint `leader` and every joint that mimics it.
pub fn gripper_commands(
    robot: &RobotModel,
    leader: usize,
    closed: f32,
) -> Vec<(usize, JointCommand)> {
    let Some(joint) = robot.joints.get(leader) else {
        return Vec::new();
    };
    let (open, shut) = gripper_range(joint);
    let target = open + (shut - open) * closed.clamp(0.0, 1.0);
    std::iter::once((leader, target))
        .chain(robot.followers(leader).map(|m| (m.joint, m.follow(target))))
        .map(|(j, target)| {
            (
                j,
                JointCommand::Position {
                    target,
                    velocity: 0.0,
                },
            )
        })
        .collect()
}

/// The (open, closed) positions of a gripper joint: the scene's `gripper_positions` when it gives
/// them (`Joint::grip`); otherwise open as `scene::gripper_open_position` says, closed at the far
/// end of the joint's range (slide fingers close towards their lower limit, hinged fingers curl
/// towards their upper one).
pub fn gripper_range(joint: &crate::robot::Joint) -> (f32, f32) {
    if let Some(grip) = joint.grip {
        return grip;
    }
    let open = crate::scene::gripper_open_position(joint);
    let (lo, hi) = joint.limits.unwrap_or((open, open));
    match joint.kind {
        JointKind::Prismatic => (open, lo),
        JointKind::Revolute => (open, hi),
    }
}
