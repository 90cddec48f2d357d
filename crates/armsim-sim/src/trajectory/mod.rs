//! MetaSim trajectory v2 in the app: the formats and the crash-safe recorder come from
//! `armsim_core::trajectory` (re-exported here); `plugin` records and replays inside the app,
//! `foreign` fits a demo written for another scene; [`ReplayMode`] is how a replay drives the
//! world.

pub use armsim_core::trajectory::*;

pub mod foreign;
pub mod plugin;

/// How a replay drives the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// Set the world to each recorded state (kinematic, exact).
    State,
    /// Drive the physics with the recorded actions and measure the divergence.
    Action,
}

impl ReplayMode {
    /// As on the command line (`--replay-mode state|action`).
    pub fn name(self) -> &'static str {
        match self {
            ReplayMode::State => "state",
            ReplayMode::Action => "action",
        }
    }
}
