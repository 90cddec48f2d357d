//! The protocol layer of the app: socket threads and ECS bridges. The sans-IO half (spec 000's
//! tick and every codec) lives in `armsim_core::protocol` and is re-exported in each protocol's
//! module here, so `protocol::lockstep::codec` names the same thing in both crates.

pub use armsim_core::protocol::tick;

pub mod lockstep;
pub mod net;
pub mod sexp;
pub mod teleop;
