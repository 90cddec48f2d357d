//! How a replay drives the world: by the recorded states or by the recorded actions. A leaf
//! that the replay (`super::plugin`) and the foreign-demo filter (`super::foreign`) both name.

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
