//! The referee: a swappable rule book that looks at the world after every physics step and says
//! what happened (play-mode changes, scores, cubes put back) and what the world must do about it.
//!
//! RCSSServerMJ hands game logic to a "game director" so that rule books can be swapped; this
//! is ours, mapped from soccer onto the tabletop: kick-off starts an episode, a cube resting in the
//! goal zone scores, the episode ends in `Success` or `TimeUp`, and a cube that falls off the table
//! is put back (the tabletop's "drop ball"). It is pure Rust on glam, without Bevy or Rapier, so
//! the rules are unit-tested on hand-made views; the ECS builds the views, applies the returned
//! actions to the physics world and fans the events out to every protocol.
//!
//! This file holds the trait and what every rule book shares (views, events, actions, the
//! episode clock, the fall watch); `book.rs` implements the trait once on top of them, and each
//! rule book's own rules have their own file.

mod book;
mod free_play;
mod pick_and_place;
mod world;

pub use book::{Book, Rules, Turn};
pub use free_play::{FreePlay, FreePlayRules};
pub use pick_and_place::{PickAndPlace, PickAndPlaceRules};
pub use world::{config_of, default_rule_book, judge};

use std::fmt;
use std::str::FromStr;

use glam::Vec3;

/// How far above flat-on-the-top (`top_z + half_extent`) a centre may be and still count as on
/// the table: 3.5 cm, i.e. `top_z + 0.06` for the 5 cm cubes. That is well above contact jitter
/// and a cube tipped onto an edge against a neighbour (+1 cm), yet below a cube stacked on
/// another (+5 cm), which is not on the table. The referee sees no contacts, so a cube held
/// still by the gripper within that band counts as resting too.
pub const REST_HEIGHT_SLACK_M: f32 = 0.035;
/// Fastest a resting cube may move. A settled Rapier body drifts at mm/s or sleeps at zero, while
/// one being pushed or still sliding after release moves faster than this.
pub const REST_MAX_LIN_SPEED_MPS: f32 = 0.05;
/// Fastest a resting cube may turn; rocking after a drop or a nudge exceeds it.
pub const REST_MAX_ANG_SPEED_RAD_S: f32 = 0.5;
/// Sim time a cube must rest in the goal zone, without a break, to score.
pub const REST_TIME_TO_SCORE_S: f64 = 1.0;
/// A centre this far below the table top has fallen off the table (or through it), wherever it is.
pub const FALL_BELOW_TOP_M: f32 = 0.05;
/// Slack on time comparisons: 240 steps of `1.0 / 240.0` add up to a hair under 1.0 in floating
/// point, and "rested for 1 s" must then still hold after exactly 240 steps.
const TIME_EPSILON_S: f64 = 1e-9;

/// The phase of an episode, spelled as on RCSSServerMJ's wire (`(GS (pm PlayOn))`,
/// `(playMode X)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PlayMode {
    /// Nothing is timed or scored until kick-off.
    #[default]
    BeforeStart,
    /// The episode runs: play time advances and cubes can score.
    PlayOn,
    /// Every cube has scored.
    Success,
    /// The episode's time limit ran out first.
    TimeUp,
}

impl PlayMode {
    /// Every mode, in the order they are listed to users.
    pub const ALL: [PlayMode; 4] = [
        PlayMode::BeforeStart,
        PlayMode::PlayOn,
        PlayMode::Success,
        PlayMode::TimeUp,
    ];

    /// The spelling used on every wire and in the panel.
    pub fn as_str(self) -> &'static str {
        match self {
            PlayMode::BeforeStart => "BeforeStart",
            PlayMode::PlayOn => "PlayOn",
            PlayMode::Success => "Success",
            PlayMode::TimeUp => "TimeUp",
        }
    }
}

impl fmt::Display for PlayMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown play mode {given:?}; valid modes are BeforeStart, PlayOn, Success, TimeUp")]
pub struct UnknownPlayMode {
    pub given: String,
}

impl FromStr for PlayMode {
    type Err = UnknownPlayMode;

    /// Case-insensitive, because monitors written by hand send `playon` as often as `PlayOn`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlayMode::ALL
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownPlayMode {
                given: s.to_owned(),
            })
    }
}

/// The table top as the referee needs it: its height and its axis-aligned footprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableView {
    pub top_z: f32,
    pub min_xy: [f32; 2],
    pub max_xy: [f32; 2],
}

/// One free object after a physics step. `object` indices in events and actions are positions
/// in the slice handed to [`RuleBook::step`], which must list the objects in the same order on
/// every step of a scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObjectView<'a> {
    pub name: &'a str,
    /// Centre of mass in the world frame (Z up, metres).
    pub pos: Vec3,
    pub lin_vel: Vec3,
    pub ang_vel: Vec3,
    /// Half the object's largest edge (0.025 for the 5 cm cubes): where a resting centre sits
    /// above the top, and how far past the table's edge a centre may be while the object still
    /// overlaps the table.
    pub half_extent: f32,
}

/// The world after one physics step, as a rule book reads it.
#[derive(Clone, Copy, Debug)]
pub struct StepView<'a> {
    /// The step's length in sim seconds.
    pub dt: f64,
    pub table: &'a TableView,
    /// In the same order on every step of a scene (see [`ObjectView`]).
    pub objects: &'a [ObjectView<'a>],
}

/// An axis-aligned rectangle on the table top (the scene's `extensions.armsim.goal_zone`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZoneRect {
    pub center_xy: [f32; 2],
    pub half_size: [f32; 2],
}

impl ZoneRect {
    /// Edges count as inside, as in the scene's `GoalZone::contains_xy`.
    pub fn contains_xy(&self, x: f32, y: f32) -> bool {
        (x - self.center_xy[0]).abs() <= self.half_size[0]
            && (y - self.center_xy[1]).abs() <= self.half_size[1]
    }
}

/// Why an object is being put back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplaceReason {
    /// Entirely past the table's edge and below its top: falling off.
    OffTable,
    /// More than [`FALL_BELOW_TOP_M`] below the top while still over the table (through it, or
    /// tumbling off right at the edge).
    BelowTop,
    /// Its position is NaN or infinite: the physics blew up for it, and putting it back heals it.
    NotFinite,
}

impl ReplaceReason {
    /// Machine-readable spelling, for protocols that send the reason as a field.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplaceReason::OffTable => "off_table",
            ReplaceReason::BelowTop => "below_top",
            ReplaceReason::NotFinite => "not_finite",
        }
    }
}

impl fmt::Display for ReplaceReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReplaceReason::OffTable => "left the table",
            ReplaceReason::BelowTop => "dropped below the table top",
            ReplaceReason::NotFinite => "had a non-finite position",
        })
    }
}

/// Something the referee decided, for every protocol to announce.
#[derive(Clone, Debug, PartialEq)]
pub enum RefereeEvent {
    PlayModeChanged {
        from: PlayMode,
        to: PlayMode,
    },
    /// A new episode started. Sent even when the mode was already `PlayOn`, where no
    /// `PlayModeChanged` tells clients that time and score went back to zero.
    KickOff,
    /// `score` is the episode's total including this one.
    Scored {
        object: usize,
        name: String,
        score: u32,
    },
    /// Comes with a [`RefereeAction::ReplaceObject`] for the same object.
    ObjectReplaced {
        object: usize,
        name: String,
        reason: ReplaceReason,
    },
}

impl RefereeEvent {
    /// Short stable code for alerts and logs, where the `Display` text is for people.
    pub fn code(&self) -> &'static str {
        match self {
            RefereeEvent::PlayModeChanged { .. } => "PLAY_MODE",
            RefereeEvent::KickOff => "KICK_OFF",
            RefereeEvent::Scored { .. } => "SCORED",
            RefereeEvent::ObjectReplaced { .. } => "OBJECT_REPLACED",
        }
    }
}

impl fmt::Display for RefereeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefereeEvent::PlayModeChanged { from, to } => write!(f, "play mode {from} -> {to}"),
            RefereeEvent::KickOff => f.write_str("kick-off: a new episode starts"),
            RefereeEvent::Scored { name, score, .. } => {
                write!(
                    f,
                    "{name} rests in the goal zone and scores (score {score})"
                )
            }
            RefereeEvent::ObjectReplaced { name, reason, .. } => {
                write!(f, "{name} {reason}; put back at its start pose")
            }
        }
    }
}

/// What the ECS must do to the physics world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefereeAction {
    /// Put the object back at its initial pose, at rest.
    ReplaceObject { object: usize },
}

/// A rule book. The ECS calls [`RuleBook::step`] after every physics step with views of the
/// world, applies the actions and forwards the events; the other methods come from monitors,
/// the panel and scene resets. Events and actions are appended, never cleared, so the caller
/// can reuse its buffers.
pub trait RuleBook: fmt::Debug + Send + Sync + 'static {
    /// The name the `--rules` flag selects it by.
    fn name(&self) -> &'static str;
    /// What an episode under this book asks of the operator, in words: the task string a
    /// LeRobot dataset stores with each episode (what language-conditioned policies read).
    fn task(&self) -> &'static str;
    /// The episode's mode and play time (kept the same way by every rule book).
    fn episode(&self) -> &Episode;
    fn episode_mut(&mut self) -> &mut Episode;
    fn play_mode(&self) -> PlayMode {
        self.episode().mode
    }
    /// A monitor's `(playMode X)`: changes the mode only; time and score stay as they are.
    fn set_play_mode(&mut self, mode: PlayMode, events: &mut Vec<RefereeEvent>) {
        self.episode_mut().set_mode(mode, events);
    }
    /// Starts an episode: `PlayOn`, play time 0, score 0.
    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>);
    /// Back to `BeforeStart` with time and score 0, silently: the scene reset that calls it is
    /// announced on its own.
    fn reset(&mut self);
    /// Seconds spent in `PlayOn` in this episode.
    fn play_time(&self) -> f64 {
        self.episode().play_time
    }
    /// The episode's time limit in seconds, if it has one.
    fn time_limit(&self) -> Option<f64> {
        None
    }
    fn score(&self) -> u32;
    fn step(
        &mut self,
        world: &StepView<'_>,
        events: &mut Vec<RefereeEvent>,
        actions: &mut Vec<RefereeAction>,
    );
}

/// What the scene says about the rules, converted by the ECS from its scene types.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RuleBookConfig {
    /// `extensions.armsim.goal_zone`; pick-and-place needs it.
    pub goal_zone: Option<ZoneRect>,
    /// `extensions.armsim.episode_time_limit_s`; `None` means no limit.
    pub time_limit_s: Option<f64>,
}

/// The names [`rule_book_by_name`] accepts, the default first.
pub const RULE_BOOK_NAMES: [&str; 2] = [PickAndPlace::NAME, FreePlay::NAME];

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleBookError {
    #[error("unknown rule book {given:?}; valid rule books are pick_and_place, free_play")]
    Unknown { given: String },
    #[error(
        "the pick_and_place rule book needs a goal zone (extensions.armsim.goal_zone in the scene); \
         add one or use free_play"
    )]
    MissingGoalZone,
}

/// Builds the rule book a `--rules` flag names.
pub fn rule_book_by_name(
    name: &str,
    config: &RuleBookConfig,
) -> Result<Box<dyn RuleBook>, RuleBookError> {
    match name {
        PickAndPlace::NAME => {
            let zone = config.goal_zone.ok_or(RuleBookError::MissingGoalZone)?;
            Ok(Box::new(PickAndPlace::new(zone, config.time_limit_s)))
        }
        FreePlay::NAME => Ok(Box::new(FreePlay::new())),
        _ => Err(RuleBookError::Unknown {
            given: name.to_owned(),
        }),
    }
}

/// Mode and play time, shared by every rule book so that each mode change is announced the
/// same way; a rule book exposes its own through [`RuleBook::episode`].
#[derive(Clone, Debug, Default)]
pub struct Episode {
    mode: PlayMode,
    play_time: f64,
}

impl Episode {
    pub fn mode(&self) -> PlayMode {
        self.mode
    }

    /// Seconds spent in `PlayOn` in this episode.
    pub fn play_time(&self) -> f64 {
        self.play_time
    }

    fn set_mode(&mut self, to: PlayMode, events: &mut Vec<RefereeEvent>) {
        if self.mode != to {
            events.push(RefereeEvent::PlayModeChanged {
                from: self.mode,
                to,
            });
            self.mode = to;
        }
    }

    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>) {
        self.play_time = 0.0;
        events.push(RefereeEvent::KickOff);
        self.set_mode(PlayMode::PlayOn, events);
    }
}

/// Why `object` must be put back, if it must.
fn off_table(table: &TableView, object: &ObjectView<'_>) -> Option<ReplaceReason> {
    let p = object.pos;
    if !p.is_finite() {
        return Some(ReplaceReason::NotFinite);
    }
    let margin = object.half_extent;
    // Past the edge by more than its half extent, the object no longer overlaps the table at
    // all; while it is still above the top it may simply be carried there by the arm.
    let beyond_edge = p.x < table.min_xy[0] - margin
        || p.x > table.max_xy[0] + margin
        || p.y < table.min_xy[1] - margin
        || p.y > table.max_xy[1] + margin;
    if beyond_edge && p.z < table.top_z {
        Some(ReplaceReason::OffTable)
    } else if p.z < table.top_z - FALL_BELOW_TOP_M {
        Some(ReplaceReason::BelowTop)
    } else {
        None
    }
}

/// Asks for each fallen object to be put back once per fall, in every play mode.
#[derive(Clone, Debug, Default)]
struct FallWatch {
    /// Replacement asked for and the object not yet seen back on the table. The ECS is trusted
    /// to replace it; this only keeps a step that still sees the old pose (actions applied a
    /// step late) from asking again.
    pending: Vec<bool>,
}

impl FallWatch {
    fn step(
        &mut self,
        table: &TableView,
        objects: &[ObjectView<'_>],
        events: &mut Vec<RefereeEvent>,
        actions: &mut Vec<RefereeAction>,
    ) {
        self.pending.resize(objects.len(), false);
        for (i, (object, pending)) in objects.iter().zip(&mut self.pending).enumerate() {
            match off_table(table, object) {
                None => *pending = false,
                Some(_) if *pending => {}
                Some(reason) => {
                    *pending = true;
                    actions.push(RefereeAction::ReplaceObject { object: i });
                    events.push(RefereeEvent::ObjectReplaced {
                        object: i,
                        name: object.name.to_owned(),
                        reason,
                    });
                }
            }
        }
    }

    fn is_pending(&self, object: usize) -> bool {
        self.pending.get(object).copied().unwrap_or(false)
    }

    fn clear(&mut self) {
        self.pending.clear();
    }
}

/// One referee event with its place in the log and the sim time it happened at.
#[derive(Clone, Debug)]
pub struct LoggedEvent {
    pub seq: u64,
    pub sim_time: f64,
    pub event: RefereeEvent,
}

/// The referee's events, numbered from 1, for readers that each keep a cursor (agents, monitors,
/// the panel, Python's `events()`). It keeps the newest `capacity`: a reader further behind than
/// that skips the oldest.
#[derive(Clone, Debug)]
pub struct EventLog {
    log: std::collections::VecDeque<LoggedEvent>,
    next_seq: u64,
    capacity: usize,
}

impl EventLog {
    pub fn new(capacity: usize) -> Self {
        Self {
            log: std::collections::VecDeque::new(),
            next_seq: 1,
            capacity: capacity.max(1),
        }
    }

    /// Moves `events` (emptied) into the log, stamped with `sim_time`.
    pub fn record(&mut self, events: &mut Vec<RefereeEvent>, sim_time: f64) {
        for event in events.drain(..) {
            if self.log.len() == self.capacity {
                self.log.pop_front();
            }
            self.log.push_back(LoggedEvent {
                seq: self.next_seq,
                sim_time,
                event,
            });
            self.next_seq += 1;
        }
    }

    /// Events with a sequence number above `cursor` (0 = from the start of the log).
    pub fn since(&self, cursor: u64) -> impl Iterator<Item = &LoggedEvent> {
        self.log.iter().filter(move |e| e.seq > cursor)
    }

    /// The newest event's sequence number (0 = none yet): a new reader's starting cursor.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }
}

#[cfg(test)]
mod tests;
