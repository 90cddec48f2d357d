//! TeleSpace revA (docs/protocols/teleop.md): headset teleoperation over WebSocket JSON.
//! `envelope`, `filter` and `control` (the sans-IO wire format and control pipeline) and
//! `sessions` (the connections' state machine: roles, START, heartbeats) are `armsim_core`'s,
//! re-exported; `server` is the listener and handshake threads, `io` the one thread that serves
//! every session non-blocking, `wire` what those two and the ECS share (a connection's wire
//! state, the events each way) and `plugin` the ECS bridge.

pub use armsim_core::protocol::teleop::*;

pub mod io;
pub mod plugin;
pub mod server;
pub mod wire;
