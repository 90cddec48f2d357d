//! Scene cameras as ROS 2 topics (opt-in, `--ros2-cameras`): each image the renderer reads back
//! becomes `<camera>/image_raw` (sensor_msgs/Image, rgb8) and `<camera>/camera_info`, with the
//! camera's optical frame on `/tf`, at most `--ros2-camera-hz` images per second of sim time.
//!
//! The conversion is pure and tested here. The images travel to the DDS side on their own
//! latest-only slot (`node`), never through the channel the joint states take, so a megabyte
//! of pixels never delays a joint-state publish, and the renderer never waits for DDS.
//!
//! Frames follow ROS's camera conventions (REP 103/104): the image's `frame_id` is
//! `<camera>_optical_frame`, +Z forward, +X right, +Y down, and `/tf` carries
//! `world → <camera>_optical_frame` stamped with the image's sim time.

use std::collections::BTreeMap;
use std::sync::Arc;

use bevy::math::{Quat, Vec3};
use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::msgs::{
    CameraInfo, Header, Image, Quaternion, RegionOfInterest, Transform, TransformStamped, Vector3,
};
use super::options::MAX_CAMERA_HZ;
use super::published::WORLD_FRAME;
use super::stamp::{STEPS_PER_SECOND, time_from_steps};
use crate::state::{CameraFrame, CameraImages};

/// The name of camera `camera`'s optical frame in TF.
pub fn optical_frame_id(camera: &str) -> String {
    format!("{camera}_optical_frame")
}

/// The optical frame (+Z forward, +X right, +Y down) in armsim's camera frame (+X forward,
/// +Y left, +Z up): its axes are (−Y, −Z, +X) of the camera frame.
fn optical_in_camera() -> Quat {
    Quat::from_mat3(&bevy::math::Mat3::from_cols(
        Vec3::new(0.0, -1.0, 0.0),
        Vec3::new(0.0, 0.0, -1.0),
        Vec3::new(1.0, 0.0, 0.0),
    ))
}

/// What one camera image becomes on the wire.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraMessages {
    /// `<camera>/image_raw`.
    pub image: Image,
    /// `<camera>/camera_info`.
    pub info: CameraInfo,
    /// `world → <camera>_optical_frame`, for `/tf`.
    pub optical: TransformStamped,
}

/// The messages for one image read back from the renderer.
pub fn messages(frame: &CameraFrame) -> CameraMessages {
    let stamp = time_from_steps(frame.step);
    let header = Header {
        stamp,
        frame_id: optical_frame_id(&frame.camera),
    };
    let image = Image {
        header: header.clone(),
        height: frame.height,
        width: frame.width,
        encoding: "rgb8".to_string(),
        is_bigendian: 0,
        step: frame.width * 3,
        data: frame.rgb.to_vec(),
    };
    let k = frame.state.intrinsics;
    let (fx, fy, cx, cy) = (
        f64::from(k[0][0]),
        f64::from(k[1][1]),
        f64::from(k[0][2]),
        f64::from(k[1][2]),
    );
    let info = CameraInfo {
        header: header.clone(),
        height: frame.height,
        width: frame.width,
        // A simulated pinhole: no distortion, and plumb_bob with five zeros is what image_proc
        // and RViz expect of an undistorted camera.
        distortion_model: "plumb_bob".to_string(),
        d: vec![0.0; 5],
        k: [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
        binning_x: 0,
        binning_y: 0,
        roi: RegionOfInterest::default(),
    };
    let [w, x, y, z] = frame.state.quat_world;
    let rotation = (Quat::from_xyzw(x, y, z, w) * optical_in_camera()).normalize();
    let [px, py, pz] = frame.state.pos;
    let optical = TransformStamped {
        header: Header {
            stamp,
            frame_id: WORLD_FRAME.to_string(),
        },
        child_frame_id: header.frame_id,
        transform: Transform {
            translation: Vector3 {
                x: f64::from(px),
                y: f64::from(py),
                z: f64::from(pz),
            },
            rotation: Quaternion {
                x: f64::from(rotation.x),
                y: f64::from(rotation.y),
                z: f64::from(rotation.z),
                w: f64::from(rotation.w),
            },
        },
    };
    CameraMessages {
        image,
        info,
        optical,
    }
}

/// Which images go out: the cameras the user named, each at most `hz` per second of sim time
/// (whatever rate the scene renders them at), counted in whole steps so the choice is the same
/// on every run.
#[derive(Clone, Debug)]
pub struct CameraSchedule {
    period_steps: u64,
    /// Per camera: the (episode, step) of the last image sent, if any.
    last: BTreeMap<String, Option<(u64, u64)>>,
}

impl CameraSchedule {
    pub fn new(cameras: &[String], hz: u32) -> Self {
        let hz = u64::from(hz.clamp(1, MAX_CAMERA_HZ));
        Self {
            period_steps: STEPS_PER_SECOND.div_ceil(hz),
            last: cameras.iter().map(|c| (c.clone(), None)).collect(),
        }
    }

    /// The cameras it publishes.
    pub fn cameras(&self) -> impl Iterator<Item = &str> {
        self.last.keys().map(String::as_str)
    }

    /// Whether `frame` goes out; if so, it counts as sent. A camera's first image, and the
    /// first of each episode, always goes.
    pub fn admit(&mut self, frame: &CameraFrame) -> bool {
        let Some(last) = self.last.get_mut(&frame.camera) else {
            return false;
        };
        let due = match *last {
            None => true,
            Some((episode, _)) if episode != frame.episode => true,
            Some((_, step)) => frame.step >= step + self.period_steps,
        };
        if due {
            *last = Some((frame.episode, frame.step));
        }
        due
    }
}

/// Images waiting for the image thread. Two: one being published and the newest; an image
/// arriving while both wait is dropped (counted), since a newer one is already on its way.
pub const IMAGE_QUEUE: usize = 2;

/// The ECS end of the images' own queue to the DDS side.
#[derive(Clone, Debug)]
pub struct ImageOutlet(Sender<Arc<CameraFrame>>);

/// The queue between the bridge and the image thread: the frames travel as they are (shared,
/// not copied), and the image thread converts them, so the ECS thread never copies pixels.
pub fn image_queue() -> (ImageOutlet, Receiver<Arc<CameraFrame>>) {
    let (tx, rx) = crossbeam_channel::bounded(IMAGE_QUEUE);
    (ImageOutlet(tx), rx)
}

/// The bridge's camera state: which images go out, and how many were dropped.
#[derive(Resource)]
pub struct Ros2Cameras {
    schedule: CameraSchedule,
    outlet: ImageOutlet,
    /// Images the schedule admitted but the image thread was too busy to take.
    pub dropped: u64,
    warned: bool,
}

/// Publishes the cameras of `schedule` through `outlet`: asks the renderer to keep them
/// rendering, and hands each admitted image to the image thread without waiting.
pub fn add(app: &mut App, schedule: CameraSchedule, outlet: ImageOutlet) {
    app.insert_resource(Ros2Cameras {
        schedule,
        outlet,
        dropped: 0,
        warned: false,
    })
    .add_systems(Last, send_images);
}

fn send_images(mut cams: ResMut<Ros2Cameras>, images: Option<ResMut<CameraImages>>) {
    let cams = &mut *cams;
    let Some(mut images) = images else {
        return;
    };
    // The renderer renders a camera only while something uses its images; a ROS 2 subscriber
    // is a client that keeps asking.
    for camera in cams.schedule.cameras() {
        images.ask(Some(camera));
    }
    // Each camera's newest image, once per frame: the schedule admits an image once, and at
    // most `camera_hz` per second of sim time, so an image seen again is not sent again.
    let newest: Vec<Arc<CameraFrame>> = cams
        .schedule
        .cameras()
        .filter_map(|camera| images.get(camera).cloned())
        .collect();
    for frame in newest {
        if !cams.schedule.admit(&frame) {
            continue;
        }
        match cams.outlet.0.try_send(frame) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                cams.dropped += 1;
                if !cams.warned {
                    cams.warned = true;
                    warn!(
                        "ros2: the image thread is behind; camera images are dropped rather than \
                         delay the simulation (lower --ros2-camera-hz)"
                    );
                }
            }
            // The DDS side is gone (shutting down): nothing to publish to.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests;
