//! The protocol layer: spec 000's generic tick (`core`) and one module per wire protocol.
pub mod core;
pub mod lockstep;
pub mod net;
pub mod sexp;
pub mod teleop;
