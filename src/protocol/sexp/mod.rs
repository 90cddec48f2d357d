//! Spec 001: length-prefixed S-expression agent and monitor ports. The expression type, the
//! `framing` and the `messages` are `armsim_core`'s (re-exported); `server` is the socket
//! threads and `plugin` the ECS bridge (agents, sync mode, monitors).

pub use armsim_core::protocol::sexp::*;

pub mod plugin;
pub mod server;
