//! The free-play rule book: no task, no score, cubes that leave the table put back.

use super::*;

/// No task: never scores and never changes the play mode on its own, but still puts back cubes
/// that leave the table so they are not lost mid-session. Play time still runs in `PlayOn` for
/// clients that show a clock.
#[derive(Clone, Debug, Default)]
pub struct FreePlay {
    episode: Episode,
    falls: FallWatch,
}

impl FreePlay {
    pub const NAME: &'static str = "free_play";

    pub fn new() -> Self {
        Self::default()
    }
}

impl RuleBook for FreePlay {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn task(&self) -> &'static str {
        "Free play: move the arm and the cubes at will."
    }

    fn episode(&self) -> &Episode {
        &self.episode
    }

    fn episode_mut(&mut self) -> &mut Episode {
        &mut self.episode
    }

    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>) {
        self.episode.kick_off(events);
    }

    fn reset(&mut self) {
        self.episode = Episode::default();
        self.falls.clear();
    }

    fn score(&self) -> u32 {
        0
    }

    fn step(
        &mut self,
        dt: f64,
        table: &TableView,
        objects: &[ObjectView<'_>],
        events: &mut Vec<RefereeEvent>,
        actions: &mut Vec<RefereeAction>,
    ) {
        self.falls.step(table, objects, events, actions);
        if self.episode.mode == PlayMode::PlayOn {
            self.episode.play_time += dt;
        }
    }
}
