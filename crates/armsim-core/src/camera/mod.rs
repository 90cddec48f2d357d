//! Simulated cameras without a render stack: what a camera is (a scene's
//! `extensions.armsim.cameras[]` entry or an MJCF `<camera>`), where it is at a given state, its
//! pinhole intrinsics, and MetaSim's `CameraState` (pos, `quat_world`, intrinsics).
//!
//! Frames. armsim's camera frame is MetaSim's: **+X forward** (the optical axis), **+Y left**,
//! **+Z up**. A scene's `attach.quat_xyzw` and [`CameraState::quat_world`] are in that frame.
//! Renderers (Bevy, OpenGL) and MJCF look along their camera's −Z with +Y up and +X right
//! ([`gl_from_armsim`], [`armsim_from_gl`] convert). Pixels follow OpenCV: u right, v down,
//! `(0, 0)` the top-left corner of the top-left pixel, so the intrinsics are
//! `[[f, 0, W/2], [0, f, H/2], [0, 0, 1]]` with `f = (H/2) / tan(fov_y/2)` (square pixels).

pub mod axes;
pub mod spec;

pub use axes::{armsim_from_gl, gl_from_armsim, look_at};
pub use spec::*;

use glam::{Quat, Vec3};

use crate::geometry::Pose;
use crate::robot::model::RobotModel;
use crate::sim::SimView;

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
}

/// MetaSim's `CameraState` without the images: where the camera is and how it projects.
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

/// Every robot link's world pose, in `robot.links` order, as the physics has them now.
pub fn link_poses(view: &SimView<'_>) -> Vec<Pose> {
    view.link_bodies
        .iter()
        .map(|&h| view.body_pose(h))
        .collect()
}

#[cfg(test)]
mod tests;
