//! Spec 001: length-prefixed S-expression agent and monitor ports. `sexp` and `framing` are the
//! sans-IO codec; `server` the socket threads, `messages` the message contents, `agents` the
//! agent connections' state machine, `agent` and `monitor` the two ports' ECS bridges and
//! `plugin` their options and start-up.
pub mod agent;
pub mod agents;
pub mod framing;
pub mod messages;
pub mod monitor;
pub mod plugin;
pub mod server;
pub mod sexp;
