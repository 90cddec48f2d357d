//! The binary lockstep protocol (docs/protocols/lockstep.md): one state frame out, one velocity
//! frame in, one step. `codec` (sans-IO) is `armsim_core`'s; `server` is the TCP thread and
//! `plugin` the ECS bridge.

pub use armsim_core::protocol::lockstep::*;

pub mod plugin;
pub mod server;
