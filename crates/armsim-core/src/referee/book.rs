//! What every rule book does the same way, written once: the episode clock, the fall watch and
//! the [`RuleBook`] methods built on them. A rule book is a [`Book`] around its own [`Rules`]:
//! its name and task, what it keeps per episode, and how it plays a step.

use std::fmt;

use super::{Episode, FallWatch, PlayMode, RefereeAction, RefereeEvent, RuleBook, StepView};

/// The part of a rule book that differs from one to the next; [`Book`] does the rest.
pub trait Rules: fmt::Debug + Send + Sync + 'static {
    /// The name the `--rules` flag selects it by.
    const NAME: &'static str;
    /// What an episode asks of the operator ([`RuleBook::task`]).
    const TASK: &'static str;

    /// Forgets what the book keeps per episode (scores), at kick-off and at reset.
    fn new_episode(&mut self) {}

    /// The episode's time limit in seconds, if it has one.
    fn time_limit(&self) -> Option<f64> {
        None
    }

    fn score(&self) -> u32 {
        0
    }

    /// Plays one step, after the fall watch has put back what fell. Without a task, play time
    /// just runs in `PlayOn` (for clients that show a clock) and nothing else changes.
    fn play(&mut self, turn: Turn<'_>) {
        if turn.episode.mode == PlayMode::PlayOn {
            turn.episode.play_time += turn.world.dt;
        }
    }
}

/// One step as [`Rules::play`] sees it: the world, the episode to advance, and where its events
/// go.
pub struct Turn<'a> {
    pub world: &'a StepView<'a>,
    pub episode: &'a mut Episode,
    pub events: &'a mut Vec<RefereeEvent>,
    falls: &'a FallWatch,
}

impl Turn<'_> {
    /// Whether `object` fell and is waiting to be put back (it cannot score meanwhile).
    pub fn falling(&self, object: usize) -> bool {
        self.falls.is_pending(object)
    }
}

/// A rule book: its [`Rules`], with the episode clock and the fall watch every book keeps.
#[derive(Clone, Debug, Default)]
pub struct Book<R> {
    pub(super) rules: R,
    episode: Episode,
    falls: FallWatch,
}

impl<R: Rules> Book<R> {
    /// The name the `--rules` flag selects it by.
    pub const NAME: &'static str = R::NAME;

    pub fn with_rules(rules: R) -> Self {
        Self {
            rules,
            episode: Episode::default(),
            falls: FallWatch::default(),
        }
    }
}

impl<R: Rules> RuleBook for Book<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }

    fn task(&self) -> &'static str {
        R::TASK
    }

    fn episode(&self) -> &Episode {
        &self.episode
    }

    fn episode_mut(&mut self) -> &mut Episode {
        &mut self.episode
    }

    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>) {
        self.rules.new_episode();
        self.episode.kick_off(events);
    }

    fn reset(&mut self) {
        self.rules.new_episode();
        self.episode = Episode::default();
        self.falls.clear();
    }

    fn time_limit(&self) -> Option<f64> {
        self.rules.time_limit()
    }

    fn score(&self) -> u32 {
        self.rules.score()
    }

    fn step(
        &mut self,
        world: &StepView<'_>,
        events: &mut Vec<RefereeEvent>,
        actions: &mut Vec<RefereeAction>,
    ) {
        self.falls.step(world.table, world.objects, events, actions);
        self.rules.play(Turn {
            world,
            episode: &mut self.episode,
            events,
            falls: &self.falls,
        });
    }
}
