//! Demos written for another scene: RoboVerse's Franka `close_box` names its `box_base` beside
//! the robot, and a Panda scene has no such object. A replay plays what the scene shares with
//! the demo (the robot and the objects of the same name) and leaves the rest out of every
//! recorded frame, saying once which bodies it skipped, rather than refusing the whole demo.

use std::collections::BTreeSet;

use armsim_core::trajectory::{Demo, StateFrame};

use super::ReplayMode;
use crate::sim::SimModel;

/// What a demo's recorded frames name, split by whether this scene has it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedBodies {
    /// Names (sorted) that are this scene's robot or one of its objects: replayed.
    pub shared: Vec<String>,
    /// Names (sorted) this scene lacks: left out of every frame.
    pub skipped: Vec<String>,
}

impl SharedBodies {
    /// The one log line naming what a replay in `mode` skips, or `None` when it skips nothing.
    pub fn skip_line(&self, mode: ReplayMode) -> Option<String> {
        if self.skipped.is_empty() {
            return None;
        }
        let what = match mode {
            ReplayMode::State => "their recorded states are not set",
            ReplayMode::Action => "their recorded states are not compared",
        };
        Some(format!(
            "replay by {}: skipping {} (in the demo, not in this scene): {what}; replaying {}",
            mode.name(),
            self.skipped.join(", "),
            if self.shared.is_empty() {
                "nothing it names".to_string()
            } else {
                self.shared.join(", ")
            }
        ))
    }
}

/// Splits the bodies `demo`'s initial state and recorded states name into those `sim` has and
/// those it lacks, and removes the latter from every frame.
pub fn keep_shared(sim: &SimModel, demo: &mut Demo) -> SharedBodies {
    let known = |name: &str| name == sim.robot.name || sim.object_index(name).is_some();
    let mut shared = BTreeSet::new();
    let mut skipped = BTreeSet::new();
    for frame in std::iter::once(&demo.init_state).chain(&demo.states) {
        for (name, _) in &frame.0 {
            if known(name) {
                shared.insert(name.clone());
            } else {
                skipped.insert(name.clone());
            }
        }
    }
    if !skipped.is_empty() {
        let strip = |frame: &mut StateFrame| frame.0.retain(|(name, _)| known(name));
        strip(&mut demo.init_state);
        demo.states.iter_mut().for_each(strip);
    }
    SharedBodies {
        shared: shared.into_iter().collect(),
        skipped: skipped.into_iter().collect(),
    }
}
