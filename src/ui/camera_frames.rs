//! What the scene cameras deliver to the rest of the app: each image read back is sent as a
//! [`CameraFrameReady`] message. A leaf that the cameras (`super::cameras`, which send it) and
//! its readers (`super::camera_snapshots`, the LeRobot recorder) both build on.

use std::sync::Arc;

use bevy::prelude::*;

use crate::state::CameraFrame;

/// Sent once for every image read back, in the order they arrive (per camera, in step order).
#[derive(Message, Clone, Debug)]
pub struct CameraFrameReady(pub Arc<CameraFrame>);
