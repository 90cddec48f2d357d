//! The DDS thread's shared pieces: its configuration, errors, counters and the thread's ends
//! of the bridge's channels. A leaf, so that the handle (`node/mod.rs`) and the thread's files
//! (`dds`, `endpoints`, `images`) all build on it without importing each other's module.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crossbeam_channel::Receiver;
use ros2_client::Message;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::super::link::{Latched, Outbound};
use super::super::options::Ros2Options;
use crate::sim::SimWaker;

/// The node's name; its namespace is `--ros2-namespace`.
pub const NODE_NAME: &str = "armsim";

/// What the DDS thread needs to start.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub options: Ros2Options,
    /// Published once at start, transient local.
    pub latched: Latched,
    /// Rung after every message to the bridge, so a paused headless run wakes for it.
    pub waker: SimWaker,
}

/// Why the DDS side could not start; the text is RustDDS's or ros2-client's.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("cannot create the DDS participant on domain {domain}: {text}")]
    Participant { domain: u16, text: String },
    #[error("cannot create the ROS 2 node {name}: {text}")]
    Node { name: String, text: String },
    #[error("{name:?} is not a ROS 2 name: {text}")]
    Name { name: String, text: String },
    #[error("cannot create the {what} of {name}: {text}")]
    Endpoint {
        what: &'static str,
        name: String,
        text: String,
    },
    #[error("cannot start the DDS thread: {0}")]
    Thread(String),
}

/// What the node has published and refused, since the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames published (`/clock`, `joint_states` and `/tf` each written once).
    pub frames_published: u64,
    /// Samples and replies DDS refused (a reliable reader's window was full, mostly): a frame
    /// whose writes fail is lost for that reader, and the next frame carries the newer state.
    pub write_errors: u64,
    /// Command samples and service requests that did not decode (each logged, none passed on).
    pub undecodable: u64,
    /// Camera images published (`--ros2-cameras`).
    pub images_published: u64,
}

#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) published: AtomicU64,
    pub(super) write_errors: AtomicU64,
    pub(super) undecodable: AtomicU64,
    pub(super) images: AtomicU64,
}

/// A ROS 2 message as ros2-client wants it: `Message` is ros2-client's trait and the types
/// are armsim-core's, so the app implements it on this local wrapper. `transparent` keeps the
/// bytes those of the inner type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(transparent)]
pub struct Wire<T>(pub T);

impl<T: Serialize + DeserializeOwned> Message for Wire<T> {}

/// The thread's end of the channel from the bridge.
pub(super) struct Link {
    pub(super) control: Receiver<Outbound>,
    pub(super) counters: Arc<Counters>,
}
