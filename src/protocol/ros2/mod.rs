//! ROS 2 over DDS (issue 37), the app's half: the `simulation_interfaces` services as a pure
//! machine over the session (`services`). The message types and CDR are sans-IO and live in
//! `armsim_core::protocol::ros2`, re-exported here so both crates name them alike.

pub use armsim_core::protocol::ros2::*;

pub mod services;
