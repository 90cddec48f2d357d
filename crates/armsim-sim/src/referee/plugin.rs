//! The referee in the ECS: runs the rule book after every physics step (the `Referee` phase of
//! the step path), applies what it decides to the world, and keeps a numbered log of its events
//! that every protocol and the panel read with their own cursor, so none of them misses one.

use bevy::prelude::*;

use super::{
    EventLog, LoggedEvent, PlayMode, RefereeAction, RefereeEvent, RuleBook, RuleBookError,
    rule_book_by_name,
};
pub use super::{config_of, default_rule_book};
use crate::scene::Scene;
use crate::session::{SessionEvent, SessionNotice};
use crate::sim::{SimClock, SimMut, SimStep, SimSystems};

/// Events kept for late readers; a reader further behind than this skips the oldest.
const LOG_CAPACITY: usize = 512;

/// Problems not yet taken by a reader (`Referee::take_warnings`); older ones are dropped.
const WARNINGS_CAPACITY: usize = 64;

#[derive(Resource)]
pub struct Referee {
    pub book: Box<dyn RuleBook>,
    log: EventLog,
    events: Vec<RefereeEvent>,
    actions: Vec<RefereeAction>,
    /// Decisions the world could not carry out (an object that cannot be put back), with the
    /// sim time: the panel's alerts log and the Python package take them.
    warnings: std::collections::VecDeque<(f64, String)>,
    /// A kick-off asked for after a scene reset that has not happened yet (a monitor's
    /// `(reset)` then `(kickOff)` in one frame): it runs once the reset is done.
    kick_off_after_reset: bool,
}

impl Referee {
    pub fn new(book: Box<dyn RuleBook>) -> Self {
        Self {
            book,
            log: EventLog::new(LOG_CAPACITY),
            events: Vec::new(),
            actions: Vec::new(),
            warnings: std::collections::VecDeque::new(),
            kick_off_after_reset: false,
        }
    }

    /// Kicks off once the scene reset already asked for is done, so the reset does not undo it.
    pub fn kick_off_after_reset(&mut self) {
        self.kick_off_after_reset = true;
    }

    /// The problems met since the last call (sim time, text), oldest first.
    pub fn take_warnings(&mut self) -> Vec<(f64, String)> {
        self.warnings.drain(..).collect()
    }

    /// Events with a sequence number above `cursor` (0 = from the start of the log).
    pub fn since(&self, cursor: u64) -> impl Iterator<Item = &LoggedEvent> {
        self.log.since(cursor)
    }

    /// The newest event's sequence number (0 = none yet): a new reader's starting cursor.
    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// Starts an episode (a monitor's `(kickOff)`, the panel's button).
    pub fn kick_off(&mut self, sim_time: f64) {
        let mut events = std::mem::take(&mut self.events);
        self.book.kick_off(&mut events);
        self.record(&mut events, sim_time);
        self.events = events;
    }

    /// Forces a play mode (a monitor's `(playMode X)`).
    pub fn set_play_mode(&mut self, mode: PlayMode, sim_time: f64) {
        let mut events = std::mem::take(&mut self.events);
        self.book.set_play_mode(mode, &mut events);
        self.record(&mut events, sim_time);
        self.events = events;
    }

    fn record(&mut self, events: &mut Vec<RefereeEvent>, sim_time: f64) {
        for event in events.iter() {
            info!("referee: {event}");
        }
        self.log.record(events, sim_time);
    }
}

/// Replaces the rule book by name (the `--rules` flag).
pub fn use_rule_book(app: &mut App, scene: &Scene, name: &str) -> Result<(), RuleBookError> {
    let book = rule_book_by_name(name, &config_of(scene))?;
    info!("referee: rule book {}", book.name());
    app.insert_resource(Referee::new(book));
    Ok(())
}

pub(crate) fn plugin(app: &mut App, scene: &Scene) {
    app.insert_resource(Referee::new(default_rule_book(scene)))
        .add_systems(SimStep, judge.in_set(SimSystems::Referee))
        .add_systems(Update, (on_session_events, to_alert_log));
}

fn judge(mut referee: ResMut<Referee>, mut sim: SimMut, clock: Res<SimClock>) {
    let referee = &mut *referee;
    let mut events = std::mem::take(&mut referee.events);
    let failed = super::judge(
        referee.book.as_mut(),
        &mut sim.view_mut(),
        &mut events,
        &mut referee.actions,
    );
    for (object, e) in failed {
        let text = format!("cannot put object {object} back: {e}");
        warn!("referee: {text}");
        if referee.warnings.len() == WARNINGS_CAPACITY {
            referee.warnings.pop_front();
        }
        referee.warnings.push_back((clock.sim_time, text));
    }
    if !events.is_empty() {
        referee.record(&mut events, clock.sim_time);
    }
    referee.events = events;
}

/// Referee events, and what the referee could not carry out, also go to the panel's alerts log.
fn to_alert_log(
    mut referee: ResMut<Referee>,
    mut log: ResMut<crate::session::AlertLog>,
    mut cursor: Local<u64>,
) {
    for e in referee.since(*cursor) {
        log.push(e.sim_time, "referee", e.event.code(), e.event.to_string());
    }
    *cursor = referee.last_seq();
    if !referee.warnings.is_empty() {
        for (sim_time, text) in referee.take_warnings() {
            log.push(sim_time, "referee", "PUT_BACK_FAILED", text);
        }
    }
}

fn on_session_events(
    mut events: MessageReader<SessionNotice>,
    mut referee: ResMut<Referee>,
    clock: Res<SimClock>,
) {
    for event in events.read().map(|n| &n.0) {
        if matches!(event, SessionEvent::ResetDone) {
            // A scene reset is a new start: back to BeforeStart, no score, no play time.
            referee.book.reset();
            if std::mem::take(&mut referee.kick_off_after_reset) {
                referee.kick_off(clock.sim_time);
            }
        }
    }
}
