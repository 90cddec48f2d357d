//! The free-play rule book: no task, no score, cubes that leave the table put back.

use super::book::{Book, Rules};

/// No task: never scores and never changes the play mode on its own, but still puts back cubes
/// that leave the table so they are not lost mid-session. Play time still runs in `PlayOn` for
/// clients that show a clock (the default [`Rules::play`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct FreePlayRules;

impl Rules for FreePlayRules {
    const NAME: &'static str = "free_play";
    const TASK: &'static str = "Free play: move the arm and the cubes at will.";
}

/// The free-play rule book.
pub type FreePlay = Book<FreePlayRules>;

impl FreePlay {
    pub fn new() -> Self {
        Self::default()
    }
}
