//! The protocol layer: spec 000's generic tick (`core`), the connection registry every protocol
//! registers with (`registry`), and one module per wire protocol.
pub mod core;
pub mod lockstep;
pub mod net;
pub mod registry;
pub mod sexp;
pub mod teleop;
