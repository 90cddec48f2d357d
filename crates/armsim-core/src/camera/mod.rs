//! Simulated cameras without a render stack: what a camera is (a scene's
//! `extensions.armsim.cameras[]` entry or an MJCF `<camera>`), where it is at a given state, its
//! pinhole intrinsics, and spec 002's `CameraState` (pos, `quat_world`, intrinsics).
//!
//! Frames. armsim's camera frame is spec 002's: **+X forward** (the optical axis), **+Y left**,
//! **+Z up**. A scene's `attach.quat_xyzw` and [`CameraState::quat_world`] are in that frame.
//! Renderers (Bevy, OpenGL) and MJCF look along their camera's −Z with +Y up and +X right
//! ([`gl_from_armsim`], [`armsim_from_gl`] convert). Pixels follow OpenCV: u right, v down,
//! `(0, 0)` the top-left corner of the top-left pixel, so the intrinsics are
//! `[[f, 0, W/2], [0, f, H/2], [0, 0, 1]]` with `f = (H/2) / tan(fov_y/2)` (square pixels).

use glam::{Mat3, Quat, Vec3};

use crate::robot::{Pose, RobotModel};
use crate::sim::SimView;

/// Vertical field of view of a scene camera without `fov_deg`.
pub const DEFAULT_FOV_DEG: f32 = 60.0;
/// Width and height of a camera without `width` / `height`.
pub const DEFAULT_SIZE: u32 = 256;
/// Frames per second of sim time of a camera without `rate_hz`.
pub const DEFAULT_RATE_HZ: f32 = 30.0;
/// MuJoCo's `fovy` default.
pub const MJCF_DEFAULT_FOVY_DEG: f32 = 45.0;
/// Largest width or height accepted.
pub const MAX_SIZE: u32 = 4096;

/// One simulated camera.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraSpec {
    /// Unique among a scene's cameras.
    pub name: String,
    pub mount: CameraMount,
    /// Vertical field of view, degrees (0 < fov < 180).
    pub fov_deg: f32,
    /// Image size in pixels.
    pub width: u32,
    pub height: u32,
    /// Images per second of sim time.
    pub rate_hz: f32,
    /// Depth in metres was asked for as well as RGB.
    pub depth: bool,
}

/// Where a camera is.
#[derive(Clone, Debug, PartialEq)]
pub enum CameraMount {
    /// Fixed in the world (scene `"pose"`): at `pos_m`, looking at `look_at_m`, +Z up.
    Fixed {
        pos_m: [f32; 3],
        look_at_m: [f32; 3],
    },
    /// Riding on a robot frame (scene `"attach"`): `frame` names a site or a link
    /// ([`RobotModel::frame`]); `pos_m` / `quat_xyzw` are the camera (+X forward, +Z up) in it.
    Attached {
        frame: String,
        pos_m: [f32; 3],
        quat_xyzw: [f32; 4],
    },
    /// Riding on link `link` of the robot at `pose` (+X forward, +Z up): what a robot file's
    /// own cameras become (MJCF `<camera>` in a body).
    Link { link: usize, pose: Pose },
}

/// A camera's mount resolved against a robot: a world pose, or a pose in a link's frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Placement {
    World(Pose),
    Link { link: usize, pose: Pose },
}

impl Placement {
    /// The camera's pose in the world (+X forward, +Z up), given every link's world pose in
    /// `robot.links` order; `None` if the link is not among them.
    pub fn world_pose(&self, link_poses: &[Pose]) -> Option<Pose> {
        match self {
            Placement::World(pose) => Some(*pose),
            Placement::Link { link, pose } => link_poses.get(*link).map(|l| l.mul(pose)),
        }
    }
}

impl CameraSpec {
    /// A camera with the defaults: 60° vertical field of view, 256×256, 30 Hz, RGB only.
    pub fn new(name: impl Into<String>, mount: CameraMount) -> Self {
        Self {
            name: name.into(),
            mount,
            fov_deg: DEFAULT_FOV_DEG,
            width: DEFAULT_SIZE,
            height: DEFAULT_SIZE,
            rate_hz: DEFAULT_RATE_HZ,
            depth: false,
        }
    }

    /// The mount resolved against `robot`; `None` for an attached camera whose frame the
    /// robot lacks (a scene that loaded has none).
    pub fn placement(&self, robot: &RobotModel) -> Option<Placement> {
        match &self.mount {
            CameraMount::Fixed { pos_m, look_at_m } => {
                let pos = Vec3::from_array(*pos_m);
                Some(Placement::World(Pose::new(
                    pos,
                    look_at(pos, Vec3::from_array(*look_at_m)),
                )))
            }
            CameraMount::Attached {
                frame,
                pos_m,
                quat_xyzw,
            } => {
                let (link, in_link) = robot.frame(frame)?;
                let offset = Pose::new(Vec3::from_array(*pos_m), Quat::from_array(*quat_xyzw));
                Some(Placement::Link {
                    link,
                    pose: in_link.mul(&offset),
                })
            }
            CameraMount::Link { link, pose } => {
                (*link < robot.links.len()).then_some(Placement::Link {
                    link: *link,
                    pose: *pose,
                })
            }
        }
    }

    /// Vertical field of view in radians.
    pub fn fov_y_rad(&self) -> f32 {
        self.fov_deg.to_radians()
    }

    /// Focal length in pixels, the same along both axes: `(H/2) / tan(fov_y/2)`.
    pub fn focal_px(&self) -> f32 {
        (self.height as f32 / 2.0) / (self.fov_y_rad() / 2.0).tan()
    }

    /// The 3×3 intrinsics, row by row: `[[f, 0, W/2], [0, f, H/2], [0, 0, 1]]`.
    pub fn intrinsics(&self) -> [[f32; 3]; 3] {
        let f = self.focal_px();
        [
            [f, 0.0, self.width as f32 / 2.0],
            [0.0, f, self.height as f32 / 2.0],
            [0.0, 0.0, 1.0],
        ]
    }

    /// Sim time between two images.
    pub fn period_s(&self) -> f64 {
        1.0 / f64::from(self.rate_hz)
    }
}

/// Spec 002's `CameraState` without the images: where the camera is and how it projects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraState {
    /// Position in the world, metres.
    pub pos: [f32; 3],
    /// Orientation in the world, **w, x, y, z**, of the camera frame +X forward, +Z up.
    pub quat_world: [f32; 4],
    /// Row by row (see [`CameraSpec::intrinsics`]).
    pub intrinsics: [[f32; 3]; 3],
}

impl CameraState {
    /// The state of camera `spec` at world pose `pose` (+X forward, +Z up).
    pub fn new(spec: &CameraSpec, pose: &Pose) -> Self {
        let q = pose.rotation;
        Self {
            pos: pose.translation.to_array(),
            quat_world: [q.w, q.x, q.y, q.z],
            intrinsics: spec.intrinsics(),
        }
    }

    /// The camera's world pose (+X forward, +Z up).
    pub fn pose(&self) -> Pose {
        let [w, x, y, z] = self.quat_world;
        Pose::new(Vec3::from_array(self.pos), Quat::from_xyzw(x, y, z, w))
    }

    /// Where world point `p` lands in the image, `[u, v]` in pixels (u right, v down); `None`
    /// when it is not in front of the camera. Points outside the image are returned too.
    pub fn project(&self, p: Vec3) -> Option<[f32; 2]> {
        let local = self.pose().inverse().transform_point(p);
        if local.x <= 1e-6 {
            return None;
        }
        let k = &self.intrinsics;
        Some([
            k[0][0] * (-local.y / local.x) + k[0][2],
            k[1][1] * (-local.z / local.x) + k[1][2],
        ])
    }
}

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

/// Every robot link's world pose, in `robot.links` order, as the physics has them now.
pub fn link_poses(view: &SimView<'_>) -> Vec<Pose> {
    view.link_bodies
        .iter()
        .map(|&h| view.body_pose(h))
        .collect()
}

#[cfg(test)]
mod tests;
