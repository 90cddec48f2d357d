//! Spec 001: length-prefixed S-expression agent and monitor ports. The expression type, the
//! `framing` and the `messages` are `armsim_core`'s (re-exported); `server` is the socket
//! threads, `writer` the port's one writer thread, `agents` the agent connections' state
//! machine, `agent` and `monitor` the two ports' ECS bridges, `options` what those two share
//! (the ports' options, the game they show) and `plugin` their start-up.

pub use armsim_core::protocol::sexp::*;

pub mod agent;
pub mod agents;
pub mod monitor;
pub mod options;
pub mod plugin;
pub mod reader;
pub mod server;
pub mod writer;
