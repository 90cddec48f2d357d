//! Camera frame conventions: armsim's (+X forward, +Y left, +Z up) against the renderer's and
//! MJCF's (looking along −Z, +Y up), and the rotation of a camera looking at a point.
//! The MJCF loader converts a file's `<camera>` with it, and the scene's fixed cameras look at
//! their target with it.

use glam::{Mat3, Quat, Vec3};

/// The rotation of a camera (+X forward, +Z up) at `pos` looking at `target`, with the world's
/// +Z up in the image. Looking straight up or down, world +X is up in the image instead.
pub fn look_at(pos: Vec3, target: Vec3) -> Quat {
    let forward = (target - pos).normalize_or_zero();
    if forward == Vec3::ZERO {
        return Quat::IDENTITY;
    }
    let hint = if forward.cross(Vec3::Z).length() < 1e-6 {
        Vec3::X
    } else {
        Vec3::Z
    };
    let left = hint.cross(forward).normalize();
    let up = forward.cross(left);
    Quat::from_mat3(&Mat3::from_cols(forward, left, up)).normalize()
}

/// The renderer's frame (looks along −Z, +Y up, +X right) in armsim's camera frame (+X forward,
/// +Y left, +Z up): its axes are armsim's −Y, +Z and −X.
fn gl_in_armsim() -> Quat {
    Quat::from_mat3(&Mat3::from_cols(Vec3::NEG_Y, Vec3::Z, Vec3::NEG_X))
}

/// A camera's rotation in armsim's frame (+X forward, +Z up) → the same camera's rotation in
/// the renderer's frame (Bevy, OpenGL, MJCF: looking along −Z with +Y up).
pub fn gl_from_armsim(rotation: Quat) -> Quat {
    (rotation * gl_in_armsim()).normalize()
}

/// The inverse of [`gl_from_armsim`]: an MJCF or Bevy camera's rotation → armsim's frame.
pub fn armsim_from_gl(rotation: Quat) -> Quat {
    (rotation * gl_in_armsim().inverse()).normalize()
}
