//! RCSSServerMJ (docs/protocols/rcss.md): length-prefixed S-expression agent and monitor ports.
//! The expression type, the `framing`, the `messages` and the agent connections' state machine
//! (`agents`) are `armsim_core`'s (re-exported); `server` is the socket threads, `payload` what
//! one frame holds (payloads, `(error …)`, parsing), `reader` the connections' read side and the
//! events it sends, `writer` the port's one writer thread, `agent` and `monitor` the two ports'
//! ECS bridges, `options` what those two share (the ports' options, the game they show) and
//! `plugin` their start-up.

pub use armsim_core::protocol::sexp::*;

pub mod agent;
pub mod monitor;
pub mod options;
pub mod payload;
pub mod plugin;
pub mod reader;
pub mod server;
pub mod writer;
