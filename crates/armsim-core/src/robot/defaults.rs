//! Motor defaults for joints whose file gives none: PD gains, effort and speed limits.
//!
//! Shared by both loaders (MJCF has no velocity limits, URDF no gains).

use super::model::JointKind;

/// Default position gains of the PD motors, acceleration-based (1/s², 1/s): a 50 rad/s natural
/// frequency, critically damped. Being acceleration-based they suit hinges and slides alike and
/// do not need retuning when link masses change.
pub const DEFAULT_KP: f32 = 2500.0;
pub const DEFAULT_KD: f32 = 100.0;

/// Motor force/torque limit when a file gives none (N·m for hinges, N for slides).
pub const DEFAULT_MAX_TORQUE: f32 = 100.0;
pub const DEFAULT_MAX_FORCE: f32 = 100.0;
/// Joint speed limit when a file gives none (MJCF has no velocity limits at all).
pub const DEFAULT_MAX_ANGULAR_VELOCITY: f32 = std::f32::consts::PI;
pub const DEFAULT_MAX_LINEAR_VELOCITY: f32 = 0.5;

/// Default `(kp, kd)` for a joint of `kind`.
pub fn default_gains(_kind: JointKind) -> (f32, f32) {
    (DEFAULT_KP, DEFAULT_KD)
}

/// Default `(max_effort, max_velocity)` for a joint of `kind`.
pub fn default_motor_limits(kind: JointKind) -> (f32, f32) {
    match kind {
        JointKind::Revolute => (DEFAULT_MAX_TORQUE, DEFAULT_MAX_ANGULAR_VELOCITY),
        JointKind::Prismatic => (DEFAULT_MAX_FORCE, DEFAULT_MAX_LINEAR_VELOCITY),
    }
}
