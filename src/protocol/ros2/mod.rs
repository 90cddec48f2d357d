//! ROS 2 over DDS, the app's half. The message types and CDR are sans-IO and live
//! in `armsim_core::protocol::ros2`, re-exported here so both crates name them alike.
//! - `options`: the `--ros2*` settings, validated;
//! - `cameras`: scene camera images as Image + CameraInfo (opt-in);
//! - `published`: the published Frame and latched topics, built from the simulation;
//! - `link`: what the ECS bridge and the DDS thread send each other;
//! - `node`: the DDS thread (participant, node, endpoints, poll loop), with `qos` and `peers`;
//! - `plugin`: the ECS bridge (`add`): peers in the registry, commands, services, frames.
//!
//! The `simulation_interfaces` services' machine (`services`) is the core's, beside its types.

pub use armsim_core::protocol::ros2::*;

pub mod cameras;
pub mod link;
pub mod node;
pub mod options;
pub mod peers;
pub mod plugin;
pub mod published;
pub mod qos;
