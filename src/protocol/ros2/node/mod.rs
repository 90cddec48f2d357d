//! The DDS thread ("ros2"): it owns the RustDDS participant, the ros2-client node, the
//! subscriptions and the service servers, and talks to the ECS bridge only through the
//! channels of `link` (sockets live on threads; the ECS sees only channels).
//!
//! Everything DDS is created inside the thread; [`Ros2Handle::spawn`] returns once it all
//! exists, or with the error, as a bind error is an error of `add()` for the other protocols.
//! The thread then sleeps in one mio `poll` with no timeout: it wakes when a subscription or a
//! server has data, when discovery reports a change, or when the bridge rings the mio waker
//! after queueing a reply. No timers, no busy waiting.
//!
//! The writers of `/clock`, `joint_states` and `/tf` are handed to the handle, and the bridge
//! writes each frame itself, when its step has run (in sim time). A DDS write is no socket
//! call: it serializes the sample into the writer's bounded queue and rings RustDDS's own
//! thread, which sends it. Going through this thread as well cost a wake-up of it per frame,
//! a third of what ROS 2 cost on top of RustDDS (budget: 2 % of a core). Writing never blocks:
//! every reliable writer has `WhenFull::Fail` (`qos`), so a reader that does not acknowledge
//! costs that reader samples (counted in [`NodeStats`]), never a stalled simulation.
//!
//! No ros2-client `Spinner` runs: it would create a second `rt/clock` topic of
//! another type in this participant. Node info (`ros_discovery_info`) goes out without it.
//!
//! This file is the handle and what the thread's files (`dds`, `endpoints`, `images`) share:
//! the node's configuration, errors, counters, the `Wire` wrapper and the thread's ends of the
//! bridge's channels.

mod dds;
mod endpoints;
mod images;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use bevy::log::{error, warn};
use crossbeam_channel::{Receiver, Sender};
use ros2_client::Message;
use rustdds::mio1::Waker;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::link::{Frame, Inbound, Latched, Outbound, PeerPrefix, Ticket};
use super::options::Ros2Options;
use super::sim_interfaces::ServiceResponse;
use crate::sim::SimWaker;
use dds::Dds;
use endpoints::FrameOutlets;

pub use endpoints::{dds_topic_name, full_name};
pub use images::ImageFeed;

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
struct Counters {
    published: AtomicU64,
    write_errors: AtomicU64,
    undecodable: AtomicU64,
    images: AtomicU64,
}

/// A ROS 2 message as ros2-client wants it: `Message` is ros2-client's trait and the types
/// are armsim-core's, so the app implements it on this local wrapper. `transparent` keeps the
/// bytes those of the inner type.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(transparent)]
pub struct Wire<T>(pub T);

impl<T: Serialize + DeserializeOwned> Message for Wire<T> {}

/// The thread's end of the channel from the bridge.
struct Link {
    control: Receiver<Outbound>,
    counters: Arc<Counters>,
}

/// The bridge's side of the DDS thread. Dropping it stops the thread and waits for it.
#[derive(Debug)]
pub struct Ros2Handle {
    /// `None` once dropping: the writers go before the node that made them.
    frames: Mutex<Option<FrameOutlets>>,
    /// Replies and `Shutdown`: unbounded, because a reply must never be dropped nor block the
    /// ECS; there is at most one per request the thread passed on.
    control: Sender<Outbound>,
    waker: Arc<Waker>,
    prefix: PeerPrefix,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

impl Ros2Handle {
    /// Starts the "ros2" thread, creates participant, node and every endpoint inside it, and
    /// returns once they exist (or the error).
    pub fn spawn(config: NodeConfig, inbound: Sender<Inbound>) -> Result<Ros2Handle, NodeError> {
        Self::spawn_with_images(config, inbound, None)
    }

    /// [`spawn`](Self::spawn), and with `images`, also the image thread that publishes those
    /// cameras (`--ros2-cameras`).
    pub fn spawn_with_images(
        config: NodeConfig,
        inbound: Sender<Inbound>,
        images: Option<ImageFeed>,
    ) -> Result<Ros2Handle, NodeError> {
        let (control, control_rx) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let thread = std::thread::Builder::new()
            .name("ros2".into())
            .spawn(move || {
                let link = Link {
                    control: control_rx,
                    counters: thread_counters,
                };
                match Dds::open(&config, inbound, images, Arc::clone(&link.counters)) {
                    Ok((mut dds, frames)) => {
                        let ready = (dds.prefix, Arc::clone(&dds.waker), frames);
                        let _ = ready_tx.send(Ok(ready));
                        dds.run(&link);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| NodeError::Thread(e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok((prefix, waker, frames))) => Ok(Ros2Handle {
                frames: Mutex::new(Some(frames)),
                control,
                waker,
                prefix,
                counters,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(NodeError::Thread(
                    "the DDS thread ended before it was ready".into(),
                ))
            }
        }
    }

    /// Writes the frames' `/clock` samples, then their `joint_states`, then their `/tf`, in
    /// the frames' order and without blocking: a write DDS refuses is counted (and its first
    /// logged), and the next frame carries the newer state. Grouping by topic lets RustDDS put
    /// a batch's samples of one topic in one datagram with one heartbeat, which its reader
    /// acknowledges once.
    pub fn send_frames(&self, frames: impl IntoIterator<Item = Frame>) {
        let mut outlets = self.frames.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(outlets) = outlets.as_mut() else {
            return;
        };
        let counters = &self.counters;
        let (mut states, mut tfs) = (Vec::new(), Vec::new());
        let mut n = 0;
        for frame in frames {
            outlets.clock.publish(frame.clock, counters);
            states.push(frame.joint_states);
            tfs.push(frame.tf);
            n += 1;
        }
        for state in states {
            outlets.joint_states.publish(state, counters);
        }
        for tf in tfs {
            outlets.tf.publish(tf, counters);
        }
        counters.published.fetch_add(n, Ordering::Relaxed);
    }

    /// The answer to the request of `ticket`.
    pub fn reply(&self, ticket: Ticket, response: ServiceResponse) {
        if self
            .control
            .send(Outbound::Reply { ticket, response })
            .is_ok()
        {
            self.ring();
        }
    }

    /// Our participant's GUID prefix (never reported as a peer).
    pub fn prefix(&self) -> PeerPrefix {
        self.prefix
    }

    /// Frames published and dropped so far (for the panel/bench).
    pub fn stats(&self) -> NodeStats {
        NodeStats {
            frames_published: self.counters.published.load(Ordering::Relaxed),
            write_errors: self.counters.write_errors.load(Ordering::Relaxed),
            undecodable: self.counters.undecodable.load(Ordering::Relaxed),
            images_published: self.counters.images.load(Ordering::Relaxed),
        }
    }

    fn ring(&self) {
        if let Err(e) = self.waker.wake() {
            warn!("ros2: cannot wake the DDS thread: {e}");
        }
    }
}

impl Drop for Ros2Handle {
    fn drop(&mut self) {
        drop(
            self.frames
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let _ = self.control.send(Outbound::Shutdown);
        self.ring();
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            error!("ros2: the DDS thread panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::cdr;
    use super::super::msgs::{Clock, Time};
    use super::*;

    #[test]
    fn the_handle_can_live_in_a_bevy_resource() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Ros2Handle>();
    }

    #[test]
    fn wire_keeps_the_bytes_of_the_inner_type() {
        let clock = Clock {
            clock: Time { sec: 3, nanosec: 7 },
        };
        let bytes = cdr::encode(&Wire(clock));
        assert_eq!(bytes, cdr::encode(&clock));
        assert_eq!(cdr::decode::<Wire<Clock>>(&bytes).unwrap(), Wire(clock));
    }
}
