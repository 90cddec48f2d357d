//! Spec 001: length-prefixed S-expression agent and monitor ports. `sexp` and `framing` are the
//! sans-IO codec; `server` the socket threads, `messages` the message contents and `plugin` the
//! ECS bridge (agents, sync mode, monitors).
pub mod framing;
pub mod messages;
pub mod plugin;
pub mod server;
pub mod sexp;
