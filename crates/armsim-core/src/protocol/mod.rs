//! The sans-IO half of every protocol: MetaSim's generic tick (`tick`) and each wire protocol's
//! codec. Bytes in, messages out, no sockets and no clocks; the app's servers and ECS bridges
//! live in the `armsim` crate.

pub mod dataset;
pub mod lockstep;
pub mod ros2;
pub mod sexp;
pub mod teleop;
pub mod tick;
