//! `extensions.armsim.cameras[]`: the scene's simulated cameras (the model is
//! `crate::camera`), read through the `Checker` like every other section (`types.rs` writes
//! them back).
//!
//! ```json
//! {"name": "front", "pose": {"pos_m": [1.3, -0.6, 1.5], "look_at_m": [0.5, 0, 1.05]}}
//! {"name": "wrist", "attach": {"frame": "wrist_3_link", "pos_m": [0.07, 0, 0.065],
//!  "quat_xyzw": [0.5, 0, 0.8660254, 0]}, "fov_deg": 80, "width": 256, "height": 256,
//!  "rate_hz": 30, "depth": false}
//! ```

use glam::Vec3;
use serde_json::Value;

use super::checker::{Checker, Obj, idx, key};
use crate::camera::spec::{CameraMount, CameraSpec, MAX_SIZE};
use crate::rate::SIM_HZ;
use crate::robot::model::RobotModel;

/// Every camera, each checked on its own, then their names for uniqueness.
pub(super) fn parse_cameras(c: &mut Checker, v: &Value, p: &str) -> Option<Vec<CameraSpec>> {
    let items = c.array(v, p)?;
    let cameras: Vec<Option<CameraSpec>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_camera(c, item, &idx(p, i)))
        .collect();
    c.unique_names(items, &cameras, |camera| camera.name.as_str(), p, "camera");
    cameras.into_iter().collect()
}

fn parse_camera(c: &mut Checker, v: &Value, p: &str) -> Option<CameraSpec> {
    let m = c.loose_object(v, p)?;
    let before = c.errors.len();
    let name = c.req(m, p, "name", Checker::string);
    let name = c.non_empty(name, &key(p, "name"));
    let mount = match (m.get("pose"), m.get("attach")) {
        (Some(pose), None) => parse_fixed(c, pose, &key(p, "pose")),
        (None, Some(attach)) => parse_attach(c, attach, &key(p, "attach")),
        (Some(_), Some(_)) => {
            c.err(
                p,
                "give either `pose` (fixed in the world) or `attach` (riding on a robot frame), not both",
            );
            None
        }
        (None, None) => {
            c.err(
                p,
                "missing `pose` ({\"pos_m\", \"look_at_m\"}: fixed) or `attach` ({\"frame\", \"pos_m\", \"quat_xyzw\"}: riding on a robot link or site)",
            );
            None
        }
    };
    let fov = c.opt(m, p, "fov_deg", Checker::f32v);
    let fov = c.check(
        fov,
        &key(p, "fov_deg"),
        |x| x > 0.0 && x < 180.0,
        "must lie between 0 and 180 degrees",
    );
    let width = size(c, m, p, "width");
    let height = size(c, m, p, "height");
    let rate = c.opt(m, p, "rate_hz", Checker::f32v);
    let rate = c.check(
        rate,
        &key(p, "rate_hz"),
        |x| x > 0.0 && f64::from(x) <= SIM_HZ,
        &format!("must be > 0 and at most the step rate ({SIM_HZ} Hz)"),
    );
    let depth = c.opt(m, p, "depth", Checker::boolean);
    if c.errors.len() != before {
        return None;
    }
    let mut spec = CameraSpec::new(name?, mount?);
    spec.fov_deg = fov.unwrap_or(spec.fov_deg);
    spec.width = width.unwrap_or(spec.width);
    spec.height = height.unwrap_or(spec.height);
    spec.rate_hz = rate.unwrap_or(spec.rate_hz);
    spec.depth = depth.unwrap_or(spec.depth);
    Some(spec)
}

/// `"pose": {"pos_m": [x, y, z], "look_at_m": [x, y, z]}`.
fn parse_fixed(c: &mut Checker, v: &Value, p: &str) -> Option<CameraMount> {
    let m = c.loose_object(v, p)?;
    let pos_m = c.req(m, p, "pos_m", Checker::f32_array::<3>);
    let look_at_m = c.req(m, p, "look_at_m", Checker::f32_array::<3>);
    let (pos_m, look_at_m) = (pos_m?, look_at_m?);
    if (Vec3::from_array(look_at_m) - Vec3::from_array(pos_m)).length() < 1e-4 {
        c.err(
            key(p, "look_at_m"),
            "is where the camera stands: it must look at another point",
        );
        return None;
    }
    Some(CameraMount::Fixed { pos_m, look_at_m })
}

/// `"attach": {"frame": "site or link", "pos_m": [x, y, z], "quat_xyzw": [x, y, z, w]}`; the
/// offset defaults to none. The frame is checked against the robot in [`check_camera_frames`].
fn parse_attach(c: &mut Checker, v: &Value, p: &str) -> Option<CameraMount> {
    let m = c.loose_object(v, p)?;
    let frame = c.req(m, p, "frame", Checker::string);
    let frame = c.non_empty(frame, &key(p, "frame"));
    let pos_m = c.opt(m, p, "pos_m", Checker::f32_array::<3>);
    let quat = c.opt(m, p, "quat_xyzw", Checker::f32_array::<4>);
    let quat = quat.and_then(|q| c.unit_quat(q, &key(p, "quat_xyzw")));
    let failed = (m.contains_key("pos_m") && pos_m.is_none())
        || (m.contains_key("quat_xyzw") && quat.is_none());
    if failed {
        return None;
    }
    Some(CameraMount::Attached {
        frame: frame?,
        pos_m: pos_m.unwrap_or([0.0; 3]),
        quat_xyzw: quat.unwrap_or([0.0, 0.0, 0.0, 1.0]),
    })
}

/// An optional image size: an integer in 1..=`MAX_SIZE`.
fn size(c: &mut Checker, m: &Obj, p: &str, k: &str) -> Option<u32> {
    let n = c.opt(m, p, k, Checker::u64v)?;
    match u32::try_from(n) {
        Ok(n) if (1..=MAX_SIZE).contains(&n) => Some(n),
        _ => {
            c.err(
                key(p, k),
                format!("must be in 1..={MAX_SIZE} pixels, found {n}"),
            );
            None
        }
    }
}

/// Each attached camera's frame must be a site or link of the robot.
pub(super) fn check_camera_frames(c: &mut Checker, model: &RobotModel, cameras: &[CameraSpec]) {
    for (i, camera) in cameras.iter().enumerate() {
        if let CameraMount::Attached { frame, .. } = &camera.mount
            && model.frame(frame).is_none()
        {
            c.err(
                format!("$.extensions.armsim.cameras[{i}].attach.frame"),
                format!(
                    "robot \"{}\" has no site or link named \"{frame}\"",
                    model.name
                ),
            );
        }
    }
}
