//! Spec 003, the binary lockstep protocol: one state frame out, one velocity frame in, one step.

pub mod codec;
pub mod plugin;
pub mod server;
