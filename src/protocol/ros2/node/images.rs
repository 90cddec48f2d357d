//! The image thread ("ros2-images"): scene camera images (`--ros2-cameras`) published as
//! `<camera>/image_raw` and `<camera>/camera_info`, with the optical frame on `/tf`. It is a
//! thread of its own so that converting and writing a megabyte of pixels never delays a
//! joint-state publish on the DDS thread; its publishers are created there, on the same node,
//! and moved here.
//!
//! It blocks on its queue (`cameras::image_queue`, latest-only on the bridge's side) and on a
//! stop channel, so it costs nothing between images, and the DDS thread joins it before it
//! drops the node.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

use bevy::log::{error, warn};
use crossbeam_channel::{Receiver, Sender};

use super::super::cameras::messages;
use super::super::msgs::{CameraInfo, Image, TFMessage};
use super::super::qos;
use super::endpoints::{Maker, Outlet, TF_TOPIC};
use super::{Counters, NodeError};
use crate::state::CameraFrame;

/// What the image thread publishes: these cameras' images, as the bridge hands them over.
#[derive(Debug)]
pub struct ImageFeed {
    /// Scene camera names, each a ROS name segment (`<camera>/image_raw` under the node's
    /// namespace).
    pub cameras: Vec<String>,
    /// The DDS end of `cameras::image_queue`.
    pub frames: Receiver<Arc<CameraFrame>>,
}

/// One camera's two topics.
struct CameraOutlets {
    image: Outlet<Image>,
    info: Outlet<CameraInfo>,
}

/// The running image thread; dropping it stops and joins it.
pub(super) struct ImageThread {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for ImageThread {
    fn drop(&mut self) {
        // Disconnecting the stop channel ends the thread's wait.
        self.stop.take();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            error!("ros2: the image thread panicked");
        }
    }
}

/// Creates the cameras' publishers on the node and starts the thread.
pub(super) fn start(
    maker: &mut Maker,
    feed: ImageFeed,
    counters: Arc<Counters>,
) -> Result<ImageThread, NodeError> {
    let mut outlets = HashMap::new();
    for camera in &feed.cameras {
        outlets.insert(
            camera.clone(),
            CameraOutlets {
                image: maker.outlet(&format!("{camera}/image_raw"), &qos::IMAGE)?,
                info: maker.outlet(&format!("{camera}/camera_info"), &qos::IMAGE)?,
            },
        );
    }
    let tf: Outlet<TFMessage> = maker.outlet(TF_TOPIC, &qos::TF)?;
    let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
    let frames = feed.frames;
    let thread = std::thread::Builder::new()
        .name("ros2-images".into())
        .spawn(move || run(&frames, &stopped, outlets, tf, &counters))
        .map_err(|e| NodeError::Thread(e.to_string()))?;
    Ok(ImageThread {
        stop: Some(stop),
        thread: Some(thread),
    })
}

fn run(
    frames: &Receiver<Arc<CameraFrame>>,
    stopped: &Receiver<()>,
    mut outlets: HashMap<String, CameraOutlets>,
    mut tf: Outlet<TFMessage>,
    counters: &Counters,
) {
    let mut unknown_warned = false;
    loop {
        let frame = crossbeam_channel::select! {
            recv(frames) -> frame => match frame {
                Ok(frame) => frame,
                Err(_) => return, // the bridge is gone
            },
            recv(stopped) -> _ => return,
        };
        let Some(outlet) = outlets.get_mut(&frame.camera) else {
            if !std::mem::replace(&mut unknown_warned, true) {
                warn!(
                    "ros2: an image of camera {:?}, which has no ROS 2 topics, was not published",
                    frame.camera
                );
            }
            continue;
        };
        let m = messages(&frame);
        // The transform first, so a subscriber that looks the image's frame up finds it.
        tf.publish(
            TFMessage {
                transforms: vec![m.optical],
            },
            counters,
        );
        outlet.info.publish(m.info, counters);
        outlet.image.publish(m.image, counters);
        counters.images.fetch_add(1, Ordering::Relaxed);
    }
}
