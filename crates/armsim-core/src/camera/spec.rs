//! What a simulated camera is ([`CameraSpec`]: a scene's `extensions.armsim.cameras[]` entry or
//! an MJCF `<camera>`), where it is mounted ([`CameraMount`]) and its pinhole intrinsics.
//! A robot model carries its file's cameras as these; `camera::Placement` resolves a mount
//! against the robot.

use crate::geometry::Pose;

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
    /// ([`RobotModel::frame`](crate::robot::RobotModel::frame)); `pos_m` / `quat_xyzw` are the
    /// camera (+X forward, +Z up) in it.
    Attached {
        frame: String,
        pos_m: [f32; 3],
        quat_xyzw: [f32; 4],
    },
    /// Riding on link `link` of the robot at `pose` (+X forward, +Z up): what a robot file's
    /// own cameras become (MJCF `<camera>` in a body).
    Link { link: usize, pose: Pose },
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
