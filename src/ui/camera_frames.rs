//! What the scene cameras deliver to the rest of the app: each image read back is sent as a
//! [`CameraFrameReady`] message, which the cameras (`super::cameras`) send and the snapshots
//! (`super::camera_snapshots`) and the LeRobot recorder read.

use std::sync::Arc;

use bevy::prelude::*;

use crate::state::CameraFrame;

/// Sent once for every image read back, in the order they arrive (per camera, in step order).
#[derive(Message, Clone, Debug)]
pub struct CameraFrameReady(pub Arc<CameraFrame>);
