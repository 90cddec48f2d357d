//! MetaSim trajectory v2: the formats and the crash-safe recorder come from
//! `armsim_core::trajectory` (re-exported here); `plugin` records and replays inside the app.

pub use armsim_core::trajectory::*;

pub mod foreign;
pub mod plugin;
mod replay_mode;
