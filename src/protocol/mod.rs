//! The protocol layer of the app: the connection registry every protocol registers with
//! (`registry`), what every listener thread shares (`net`), the readiness-poller loop of the
//! writer and I/O threads (`poller`), and per protocol its socket threads,
//! connection state machine and ECS bridge. The sans-IO half (the protocol tick and every codec)
//! lives in `armsim_core::protocol` and is re-exported in each protocol's module here, so
//! `protocol::lockstep::codec` names the same thing in both crates.

pub use armsim_core::protocol::{dataset, tick};

pub mod lockstep;
pub mod net;
pub mod poller;
pub mod registry;
#[cfg(feature = "ros2")]
pub mod ros2;
pub mod sexp;
pub mod teleop;
pub mod xr;
