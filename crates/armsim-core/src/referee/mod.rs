//! The referee: a swappable rule book that looks at the world after every physics step and says
//! what happened (play-mode changes, scores, cubes put back) and what the world must do about it.
//!
//! Spec 001's server hands game logic to a "game director" so that rule books can be swapped; this
//! is ours, mapped from soccer onto the tabletop: kick-off starts an episode, a cube resting in the
//! goal zone scores, the episode ends in `Success` or `TimeUp`, and a cube that falls off the table
//! is put back (the tabletop's "drop ball"). It is pure Rust on glam, without Bevy or Rapier, so
//! the rules are unit-tested on hand-made views; the ECS builds the views, applies the returned
//! actions to the physics world and fans the events out to every protocol.

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

/// The phase of an episode, spelled as on spec 001's wire (`(GS (pm PlayOn))`, `(playMode X)`).
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
    fn play_mode(&self) -> PlayMode;
    /// A monitor's `(playMode X)`: changes the mode only; time and score stay as they are.
    fn set_play_mode(&mut self, mode: PlayMode, events: &mut Vec<RefereeEvent>);
    /// Starts an episode: `PlayOn`, play time 0, score 0.
    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>);
    /// Back to `BeforeStart` with time and score 0, silently: the scene reset that calls it is
    /// announced on its own.
    fn reset(&mut self);
    /// Seconds spent in `PlayOn` in this episode.
    fn play_time(&self) -> f64;
    /// The episode's time limit in seconds, if it has one.
    fn time_limit(&self) -> Option<f64> {
        None
    }
    fn score(&self) -> u32;
    fn step(
        &mut self,
        dt: f64,
        table: &TableView,
        objects: &[ObjectView<'_>],
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
/// same way.
#[derive(Clone, Debug, Default)]
struct Episode {
    mode: PlayMode,
    play_time: f64,
}

impl Episode {
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

/// Per-object bookkeeping of the pick-and-place episode.
#[derive(Clone, Copy, Debug, Default)]
struct Placement {
    /// Unbroken sim time the object has been resting in the zone during `PlayOn`.
    resting_s: f64,
    scored: bool,
}

/// The default rule book: put every cube in the goal zone before time runs out.
///
/// A cube scores once per episode after resting in the zone for [`REST_TIME_TO_SCORE_S`]
/// without a break during `PlayOn`: centre xy inside the zone, centre at most
/// [`REST_HEIGHT_SLACK_M`] above flat on the table, speeds under [`REST_MAX_LIN_SPEED_MPS`] and
/// [`REST_MAX_ANG_SPEED_RAD_S`]. Every cube scored ends the episode in `Success`; play time
/// reaching the limit first ends it in `TimeUp`.
#[derive(Clone, Debug)]
pub struct PickAndPlace {
    zone: ZoneRect,
    time_limit_s: Option<f64>,
    episode: Episode,
    score: u32,
    placements: Vec<Placement>,
    falls: FallWatch,
}

impl PickAndPlace {
    pub const NAME: &'static str = "pick_and_place";

    /// `time_limit_s: None` means the episode only ends in `Success` (or by a monitor).
    pub fn new(zone: ZoneRect, time_limit_s: Option<f64>) -> Self {
        Self {
            zone,
            time_limit_s,
            episode: Episode::default(),
            score: 0,
            placements: Vec::new(),
            falls: FallWatch::default(),
        }
    }

    pub fn zone(&self) -> ZoneRect {
        self.zone
    }

    /// Whether `object` has scored in this episode (false for an index never seen).
    pub fn has_scored(&self, object: usize) -> bool {
        self.placements.get(object).is_some_and(|p| p.scored)
    }

    fn is_resting_in_zone(&self, table: &TableView, object: &ObjectView<'_>) -> bool {
        let p = object.pos;
        self.zone.contains_xy(p.x, p.y)
            && p.z <= table.top_z + object.half_extent + REST_HEIGHT_SLACK_M
            && object.lin_vel.length() < REST_MAX_LIN_SPEED_MPS
            && object.ang_vel.length() < REST_MAX_ANG_SPEED_RAD_S
    }

    fn time_is_up(&self) -> bool {
        self.time_limit_s
            .is_some_and(|limit| self.episode.play_time + TIME_EPSILON_S >= limit)
    }

    fn clear_episode(&mut self) {
        self.episode.play_time = 0.0;
        self.score = 0;
        self.placements.clear();
    }
}

impl RuleBook for PickAndPlace {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn play_mode(&self) -> PlayMode {
        self.episode.mode
    }

    fn set_play_mode(&mut self, mode: PlayMode, events: &mut Vec<RefereeEvent>) {
        self.episode.set_mode(mode, events);
    }

    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>) {
        self.clear_episode();
        self.episode.kick_off(events);
    }

    fn reset(&mut self) {
        self.clear_episode();
        self.falls.clear();
        self.episode.mode = PlayMode::BeforeStart;
    }

    fn play_time(&self) -> f64 {
        self.episode.play_time
    }

    fn time_limit(&self) -> Option<f64> {
        self.time_limit_s
    }

    fn score(&self) -> u32 {
        self.score
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
        self.placements.resize(objects.len(), Placement::default());

        if self.episode.mode != PlayMode::PlayOn {
            // Resting only counts in PlayOn, so a cube left in the zone before kick-off or
            // after the end still needs a full second of play to score.
            for placement in &mut self.placements {
                placement.resting_s = 0.0;
            }
            return;
        }
        // A monitor may force PlayOn after the limit; time stays over and the episode ends again.
        if self.time_is_up() {
            self.episode.set_mode(PlayMode::TimeUp, events);
            return;
        }

        self.episode.play_time += dt;
        for (i, object) in objects.iter().enumerate() {
            let resting = !self.falls.is_pending(i) && self.is_resting_in_zone(table, object);
            let placement = &mut self.placements[i];
            if placement.scored {
                continue;
            }
            if !resting {
                placement.resting_s = 0.0;
                continue;
            }
            placement.resting_s += dt;
            if placement.resting_s + TIME_EPSILON_S >= REST_TIME_TO_SCORE_S {
                placement.scored = true;
                self.score += 1;
                events.push(RefereeEvent::Scored {
                    object: i,
                    name: object.name.to_owned(),
                    score: self.score,
                });
            }
        }

        // Success is checked first: a cube that scores on the last step of the episode made it.
        // An empty scene never succeeds, since there was nothing to place.
        if !self.placements.is_empty() && self.placements.iter().all(|p| p.scored) {
            self.episode.set_mode(PlayMode::Success, events);
        } else if self.time_is_up() {
            self.episode.set_mode(PlayMode::TimeUp, events);
        }
    }
}

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

    fn play_mode(&self) -> PlayMode {
        self.episode.mode
    }

    fn set_play_mode(&mut self, mode: PlayMode, events: &mut Vec<RefereeEvent>) {
        self.episode.set_mode(mode, events);
    }

    fn kick_off(&mut self, events: &mut Vec<RefereeEvent>) {
        self.episode.kick_off(events);
    }

    fn reset(&mut self) {
        self.episode = Episode::default();
        self.falls.clear();
    }

    fn play_time(&self) -> f64 {
        self.episode.play_time
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

/// One referee event with its place in the log and the sim time it happened at.
#[derive(Clone, Debug)]
pub struct LoggedEvent {
    pub seq: u64,
    pub sim_time: f64,
    pub event: RefereeEvent,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: f64 = 1.0 / 240.0;
    const HALF: f32 = 0.025;
    /// The default scene's table: top at 1 m, 1.2 × 0.8 m centred on (0.35, 0).
    const TABLE: TableView = TableView {
        top_z: 1.0,
        min_xy: [-0.25, -0.4],
        max_xy: [0.95, 0.4],
    };
    /// The default scene's goal zone.
    const ZONE: ZoneRect = ZoneRect {
        center_xy: [0.45, 0.3],
        half_size: [0.08, 0.08],
    };
    const NAMES: [&str; 3] = ["cube_red", "cube_green", "cube_blue"];

    /// Cube `i` sitting still, flat on the table at (x, y).
    fn at_rest(i: usize, x: f32, y: f32) -> ObjectView<'static> {
        ObjectView {
            name: NAMES[i],
            pos: Vec3::new(x, y, TABLE.top_z + HALF),
            lin_vel: Vec3::ZERO,
            ang_vel: Vec3::ZERO,
            half_extent: HALF,
        }
    }

    fn in_zone(i: usize) -> ObjectView<'static> {
        at_rest(i, 0.45 + 0.02 * i as f32, 0.3)
    }

    fn outside_zone(i: usize) -> ObjectView<'static> {
        at_rest(i, 0.5, -0.12 + 0.12 * i as f32)
    }

    /// Collects what the rule book produced over a run of steps.
    #[derive(Default)]
    struct Log {
        events: Vec<RefereeEvent>,
        actions: Vec<RefereeAction>,
    }

    impl Log {
        fn step(&mut self, book: &mut dyn RuleBook, objects: &[ObjectView<'_>]) {
            book.step(DT, &TABLE, objects, &mut self.events, &mut self.actions);
        }

        fn steps(&mut self, book: &mut dyn RuleBook, n: usize, objects: &[ObjectView<'_>]) {
            for _ in 0..n {
                self.step(book, objects);
            }
        }

        fn scored(&self) -> Vec<usize> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    RefereeEvent::Scored { object, .. } => Some(*object),
                    _ => None,
                })
                .collect()
        }

        fn mode_changes(&self) -> Vec<(PlayMode, PlayMode)> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    RefereeEvent::PlayModeChanged { from, to } => Some((*from, *to)),
                    _ => None,
                })
                .collect()
        }

        fn replaced(&self) -> Vec<(usize, ReplaceReason)> {
            self.events
                .iter()
                .filter_map(|e| match e {
                    RefereeEvent::ObjectReplaced { object, reason, .. } => Some((*object, *reason)),
                    _ => None,
                })
                .collect()
        }

        fn clear(&mut self) {
            self.events.clear();
            self.actions.clear();
        }
    }

    fn started(time_limit_s: Option<f64>) -> (PickAndPlace, Log) {
        let mut book = PickAndPlace::new(ZONE, time_limit_s);
        let mut log = Log::default();
        book.kick_off(&mut log.events);
        log.clear();
        (book, log)
    }

    #[test]
    fn scores_after_one_second_of_rest_and_not_before() {
        let (mut book, mut log) = started(None);
        let cubes = [in_zone(0), outside_zone(1)];
        log.steps(&mut book, 216, &cubes); // 0.9 s
        assert!(log.scored().is_empty(), "scored after 0.9 s");
        log.steps(&mut book, 23, &cubes); // 239 steps, just short of 1 s
        assert!(log.scored().is_empty(), "scored one step early");
        assert_eq!(book.score(), 0);
        log.step(&mut book, &cubes); // 240 steps = 1.0 s
        assert_eq!(
            log.events,
            vec![RefereeEvent::Scored {
                object: 0,
                name: "cube_red".into(),
                score: 1
            }]
        );
        assert_eq!(book.score(), 1);
        assert!(book.has_scored(0) && !book.has_scored(1));
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
    }

    /// Rests 200 steps, breaks the condition with `broken` for one step, then needs a full 240
    /// steps again.
    fn assert_break_restarts_timer(broken: ObjectView<'static>) {
        let (mut book, mut log) = started(None);
        log.steps(&mut book, 200, &[in_zone(0)]);
        log.step(&mut book, &[broken]);
        log.steps(&mut book, 239, &[in_zone(0)]);
        assert!(
            log.scored().is_empty(),
            "timer did not restart for {broken:?}"
        );
        log.step(&mut book, &[in_zone(0)]);
        assert_eq!(log.scored(), vec![0]);
    }

    #[test]
    fn timer_restarts_when_the_cube_moves() {
        let mut sliding = in_zone(0);
        sliding.lin_vel = Vec3::new(0.06, 0.0, 0.0);
        assert_break_restarts_timer(sliding);
    }

    #[test]
    fn timer_restarts_when_the_cube_turns() {
        let mut spinning = in_zone(0);
        spinning.ang_vel = Vec3::new(0.0, 0.0, 0.6);
        assert_break_restarts_timer(spinning);
    }

    #[test]
    fn timer_restarts_when_the_cube_leaves_the_zone() {
        // Just past the zone's +x edge (0.53).
        assert_break_restarts_timer(at_rest(0, 0.54, 0.3));
    }

    #[test]
    fn timer_restarts_when_the_cube_is_lifted() {
        let mut lifted = in_zone(0);
        lifted.pos.z = TABLE.top_z + 0.065;
        assert_break_restarts_timer(lifted);
    }

    #[test]
    fn just_inside_every_limit_still_counts_as_resting() {
        let (mut book, mut log) = started(None);
        let mut cube = at_rest(0, 0.529, 0.221); // in the zone's corner
        cube.lin_vel = Vec3::new(0.0, 0.049, 0.0);
        cube.ang_vel = Vec3::new(0.49, 0.0, 0.0);
        cube.pos.z = TABLE.top_z + 0.0599; // tipped, just under the height limit
        log.steps(&mut book, 240, &[cube]);
        assert_eq!(log.scored(), vec![0]);
    }

    #[test]
    fn a_cube_stacked_on_another_does_not_score() {
        let (mut book, mut log) = started(None);
        let mut top = in_zone(1);
        top.pos = in_zone(0).pos + Vec3::new(0.0, 0.0, 0.05);
        log.steps(&mut book, 480, &[in_zone(0), top]);
        assert_eq!(log.scored(), vec![0]);
    }

    #[test]
    fn no_scoring_outside_play_on() {
        let mut book = PickAndPlace::new(ZONE, None);
        let mut log = Log::default();
        log.steps(&mut book, 480, &[in_zone(0), outside_zone(1)]);
        assert!(log.events.is_empty(), "{:?}", log.events);
        assert_eq!(book.score(), 0);
        assert_eq!(book.play_time(), 0.0);

        // Resting before kick-off earns nothing: a full second of PlayOn is still needed.
        book.kick_off(&mut log.events);
        log.clear();
        log.steps(&mut book, 239, &[in_zone(0), outside_zone(1)]);
        assert!(log.scored().is_empty());
        log.step(&mut book, &[in_zone(0), outside_zone(1)]);
        assert_eq!(log.scored(), vec![0]);

        // Stopped by a monitor half-way through cube 1's second: nothing more scores.
        log.clear();
        log.steps(&mut book, 120, &[in_zone(0), in_zone(1)]);
        book.set_play_mode(PlayMode::BeforeStart, &mut log.events);
        log.steps(&mut book, 480, &[in_zone(0), in_zone(1)]);
        assert!(log.scored().is_empty());
        assert_eq!(book.score(), 1);

        // Resumed: the half second from before the stop does not count.
        book.set_play_mode(PlayMode::PlayOn, &mut log.events);
        log.steps(&mut book, 239, &[in_zone(0), in_zone(1)]);
        assert!(log.scored().is_empty());
        log.step(&mut book, &[in_zone(0), in_zone(1)]);
        assert_eq!(log.scored(), vec![1]);
        assert_eq!(book.play_mode(), PlayMode::Success);
    }

    #[test]
    fn each_cube_scores_once_per_episode() {
        let (mut book, mut log) = started(None);
        let cubes = [in_zone(0), outside_zone(1)];
        log.steps(&mut book, 240 * 5, &cubes);
        // Leaving and coming back does not score again either.
        log.steps(&mut book, 10, &[outside_zone(0), outside_zone(1)]);
        log.steps(&mut book, 240 * 2, &cubes);
        assert_eq!(log.scored(), vec![0]);
        assert_eq!(book.score(), 1);

        // A new episode scores it again.
        book.kick_off(&mut log.events);
        log.clear();
        log.steps(&mut book, 240, &cubes);
        assert_eq!(log.scored(), vec![0]);
        assert_eq!(book.score(), 1);
    }

    #[test]
    fn success_when_every_cube_has_scored() {
        let (mut book, mut log) = started(Some(60.0));
        log.steps(
            &mut book,
            240,
            &[in_zone(0), outside_zone(1), outside_zone(2)],
        );
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
        log.steps(&mut book, 100, &[in_zone(0), in_zone(1), outside_zone(2)]);
        log.steps(&mut book, 239, &[in_zone(0), in_zone(1), in_zone(2)]);
        assert_eq!(
            book.play_mode(),
            PlayMode::PlayOn,
            "success before the last cube"
        );
        log.step(&mut book, &[in_zone(0), in_zone(1), in_zone(2)]);
        assert_eq!(log.scored(), vec![0, 1, 2]);
        assert_eq!(book.score(), 3);
        assert_eq!(book.play_mode(), PlayMode::Success);
        assert_eq!(
            log.mode_changes(),
            vec![(PlayMode::PlayOn, PlayMode::Success)]
        );
        // The score event comes before the mode change it causes.
        assert!(matches!(
            log.events[log.events.len() - 2..],
            [
                RefereeEvent::Scored { score: 3, .. },
                RefereeEvent::PlayModeChanged { .. }
            ]
        ));

        let time = book.play_time();
        assert!((time - (240.0 + 100.0 + 240.0) * DT).abs() < 1e-9, "{time}");
        log.clear();
        log.steps(&mut book, 240, &[in_zone(0), in_zone(1), in_zone(2)]);
        assert_eq!(book.play_time(), time, "play time ran after Success");
        assert!(log.events.is_empty());
    }

    #[test]
    fn an_empty_scene_never_succeeds() {
        let (mut book, mut log) = started(None);
        log.steps(&mut book, 240, &[]);
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
        assert!(log.events.is_empty());
    }

    #[test]
    fn time_up_at_the_limit_and_no_play_time_after() {
        let (mut book, mut log) = started(Some(0.5));
        log.steps(&mut book, 119, &[outside_zone(0)]);
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
        assert!(log.events.is_empty());
        log.step(&mut book, &[outside_zone(0)]);
        assert_eq!(book.play_mode(), PlayMode::TimeUp);
        assert_eq!(
            log.mode_changes(),
            vec![(PlayMode::PlayOn, PlayMode::TimeUp)]
        );
        let time = book.play_time();
        assert!((time - 0.5).abs() < 1e-9, "{time}");
        assert_eq!(book.time_limit(), Some(0.5));

        // Nothing scores after the whistle, and the clock stays stopped.
        log.clear();
        log.steps(&mut book, 480, &[in_zone(0)]);
        assert_eq!(book.play_time(), time);
        assert!(log.events.is_empty());
    }

    #[test]
    fn forcing_play_on_after_time_up_ends_again_at_once() {
        let (mut book, mut log) = started(Some(0.5));
        log.steps(&mut book, 120, &[outside_zone(0)]);
        let time = book.play_time();
        book.set_play_mode(PlayMode::PlayOn, &mut log.events);
        log.clear();
        log.step(&mut book, &[in_zone(0)]);
        assert_eq!(book.play_mode(), PlayMode::TimeUp);
        assert_eq!(book.play_time(), time);
        assert_eq!(
            log.mode_changes(),
            vec![(PlayMode::PlayOn, PlayMode::TimeUp)]
        );
    }

    #[test]
    fn the_last_cube_scoring_on_the_last_step_is_a_success() {
        let (mut book, mut log) = started(Some(1.0));
        log.steps(&mut book, 240, &[in_zone(0)]);
        assert_eq!(log.scored(), vec![0]);
        assert_eq!(book.play_mode(), PlayMode::Success);
        assert_eq!(
            log.mode_changes(),
            vec![(PlayMode::PlayOn, PlayMode::Success)]
        );
    }

    #[test]
    fn play_time_runs_only_in_play_on() {
        let mut book = PickAndPlace::new(ZONE, None);
        let mut log = Log::default();
        log.steps(&mut book, 240, &[outside_zone(0)]);
        assert_eq!(book.play_time(), 0.0);
        book.kick_off(&mut log.events);
        log.steps(&mut book, 480, &[outside_zone(0)]);
        assert!((book.play_time() - 2.0).abs() < 1e-9);
        book.set_play_mode(PlayMode::BeforeStart, &mut log.events);
        log.steps(&mut book, 240, &[outside_zone(0)]);
        assert!((book.play_time() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_cube_falling_off_is_replaced_once_per_fall_in_any_mode() {
        // BeforeStart: the rule applies before kick-off too.
        let mut book = PickAndPlace::new(ZONE, None);
        let mut log = Log::default();
        let mut falling = outside_zone(1);
        falling.pos = Vec3::new(TABLE.max_xy[0] + 0.03, 0.0, TABLE.top_z - 0.01);
        log.step(&mut book, &[outside_zone(0), falling]);
        assert_eq!(
            log.actions,
            vec![RefereeAction::ReplaceObject { object: 1 }]
        );
        assert_eq!(log.replaced(), vec![(1, ReplaceReason::OffTable)]);
        assert!(
            matches!(&log.events[0], RefereeEvent::ObjectReplaced { name, .. } if name == "cube_green")
        );

        // The ECS applies it late: still falling on the next steps, nothing asked again.
        log.clear();
        falling.pos.z -= 0.3;
        log.steps(&mut book, 5, &[outside_zone(0), falling]);
        assert!(log.actions.is_empty() && log.events.is_empty());

        // Back on the table, then a second fall is a new replacement.
        log.step(&mut book, &[outside_zone(0), outside_zone(1)]);
        assert!(log.actions.is_empty());
        book.kick_off(&mut log.events);
        log.clear();
        let mut sunk = outside_zone(1);
        sunk.pos.z = TABLE.top_z - 0.1;
        log.step(&mut book, &[outside_zone(0), sunk]);
        assert_eq!(
            log.actions,
            vec![RefereeAction::ReplaceObject { object: 1 }]
        );
        assert_eq!(log.replaced(), vec![(1, ReplaceReason::BelowTop)]);
    }

    #[test]
    fn what_counts_as_off_the_table() {
        let case = |x: f32, y: f32, z: f32| {
            let mut cube = at_rest(0, x, y);
            cube.pos.z = z;
            off_table(&TABLE, &cube)
        };
        let top = TABLE.top_z;
        // Carried by the arm beyond the edge, above the top: fine.
        assert_eq!(case(1.2, 0.0, top + 0.1), None);
        // Hanging over the edge but still overlapping the table, slightly low: not yet.
        assert_eq!(case(0.97, 0.0, top - 0.01), None);
        assert_eq!(case(0.35, -0.42, top - 0.01), None);
        // Entirely past any edge and below the top: off.
        for (x, y) in [(0.98, 0.0), (-0.28, 0.0), (0.35, 0.43), (0.35, -0.43)] {
            assert_eq!(
                case(x, y, top - 0.01),
                Some(ReplaceReason::OffTable),
                "{x},{y}"
            );
        }
        // Through the table: below top − 5 cm over the footprint.
        assert_eq!(case(0.35, 0.0, top - 0.049), None);
        assert_eq!(case(0.35, 0.0, top - 0.051), Some(ReplaceReason::BelowTop));
        assert_eq!(case(0.35, f32::NAN, top), Some(ReplaceReason::NotFinite));
        assert_eq!(
            case(f32::INFINITY, 0.0, top),
            Some(ReplaceReason::NotFinite)
        );
    }

    #[test]
    fn a_replaced_cube_starts_its_rest_over() {
        let (mut book, mut log) = started(None);
        log.steps(&mut book, 200, &[in_zone(0)]);
        let mut fallen = in_zone(0);
        fallen.pos.z = TABLE.top_z - 0.2;
        log.step(&mut book, &[fallen]);
        assert_eq!(log.replaced(), vec![(0, ReplaceReason::BelowTop)]);
        log.steps(&mut book, 239, &[in_zone(0)]);
        assert!(log.scored().is_empty());
        log.step(&mut book, &[in_zone(0)]);
        assert_eq!(log.scored(), vec![0]);
    }

    #[test]
    fn kick_off_restarts_the_episode() {
        let (mut book, mut log) = started(Some(10.0));
        log.steps(&mut book, 240, &[in_zone(0), outside_zone(1)]);
        assert_eq!(book.score(), 1);

        log.clear();
        book.kick_off(&mut log.events);
        // Already PlayOn: announced as a kick-off, with no mode change.
        assert_eq!(log.events, vec![RefereeEvent::KickOff]);
        assert_eq!((book.score(), book.play_time()), (0, 0.0));
        assert!(!book.has_scored(0));

        book.set_play_mode(PlayMode::TimeUp, &mut log.events);
        log.clear();
        book.kick_off(&mut log.events);
        assert_eq!(
            log.events,
            vec![
                RefereeEvent::KickOff,
                RefereeEvent::PlayModeChanged {
                    from: PlayMode::TimeUp,
                    to: PlayMode::PlayOn
                }
            ]
        );
    }

    #[test]
    fn reset_returns_to_before_start_silently() {
        let (mut book, mut log) = started(Some(10.0));
        let mut falling = outside_zone(1);
        falling.pos.z = TABLE.top_z - 0.2;
        log.steps(&mut book, 240, &[in_zone(0), falling]);
        assert_eq!(book.score(), 1);
        book.reset();
        assert_eq!(book.play_mode(), PlayMode::BeforeStart);
        assert_eq!((book.score(), book.play_time()), (0, 0.0));
        // The scene reset put everything back, so a new fall is asked for again.
        log.clear();
        log.step(&mut book, &[in_zone(0), falling]);
        assert_eq!(
            log.actions,
            vec![RefereeAction::ReplaceObject { object: 1 }]
        );
        assert!(log.scored().is_empty());
    }

    #[test]
    fn set_play_mode_announces_only_changes() {
        let mut book = PickAndPlace::new(ZONE, None);
        let mut events = Vec::new();
        book.set_play_mode(PlayMode::BeforeStart, &mut events);
        assert!(events.is_empty());
        book.set_play_mode(PlayMode::PlayOn, &mut events);
        book.set_play_mode(PlayMode::PlayOn, &mut events);
        assert_eq!(
            events,
            vec![RefereeEvent::PlayModeChanged {
                from: PlayMode::BeforeStart,
                to: PlayMode::PlayOn
            }]
        );
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
    }

    #[test]
    fn free_play_never_changes_mode_or_scores() {
        let mut book = FreePlay::new();
        let mut log = Log::default();
        log.steps(&mut book, 240 * 3, &[in_zone(0)]);
        assert_eq!(book.play_mode(), PlayMode::BeforeStart);
        assert_eq!(book.play_time(), 0.0);

        book.kick_off(&mut log.events);
        assert_eq!(
            log.mode_changes(),
            vec![(PlayMode::BeforeStart, PlayMode::PlayOn)]
        );
        log.clear();
        log.steps(&mut book, 240 * 200, &[in_zone(0), in_zone(1)]);
        assert!(log.events.is_empty(), "{:?}", log.events);
        assert_eq!(book.play_mode(), PlayMode::PlayOn);
        assert_eq!(book.score(), 0);
        assert!((book.play_time() - 200.0).abs() < 1e-9);
        assert_eq!(book.time_limit(), None);

        book.reset();
        assert_eq!(
            (book.play_mode(), book.play_time()),
            (PlayMode::BeforeStart, 0.0)
        );
    }

    #[test]
    fn free_play_replaces_fallen_cubes_once() {
        let mut book = FreePlay::new();
        let mut log = Log::default();
        let mut falling = outside_zone(0);
        falling.pos = Vec3::new(0.35, TABLE.min_xy[1] - 0.1, TABLE.top_z - 0.3);
        log.steps(&mut book, 3, &[falling]);
        assert_eq!(
            log.actions,
            vec![RefereeAction::ReplaceObject { object: 0 }]
        );
        assert_eq!(log.replaced(), vec![(0, ReplaceReason::OffTable)]);
        log.clear();
        log.step(&mut book, &[outside_zone(0)]);
        log.step(&mut book, &[falling]);
        assert_eq!(
            log.actions,
            vec![RefereeAction::ReplaceObject { object: 0 }]
        );
    }

    #[test]
    fn play_mode_parses_case_insensitively() {
        for mode in PlayMode::ALL {
            assert_eq!(mode.as_str().parse::<PlayMode>(), Ok(mode));
            assert_eq!(mode.as_str().to_lowercase().parse::<PlayMode>(), Ok(mode));
            assert_eq!(mode.as_str().to_uppercase().parse::<PlayMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        assert_eq!("playON".parse::<PlayMode>(), Ok(PlayMode::PlayOn));
    }

    #[test]
    fn play_mode_parse_errors_list_the_valid_modes() {
        for bad in ["", "KickOff", "Play On", " PlayOn", "PlayOnn"] {
            let err = bad.parse::<PlayMode>().unwrap_err();
            assert_eq!(err.given, bad);
            let message = err.to_string();
            assert!(message.contains(&format!("{bad:?}")), "{message}");
            for mode in PlayMode::ALL {
                assert!(message.contains(mode.as_str()), "{message} lacks {mode}");
            }
        }
    }

    #[test]
    fn rule_books_by_name() {
        let config = RuleBookConfig {
            goal_zone: Some(ZONE),
            time_limit_s: Some(120.0),
        };
        for name in RULE_BOOK_NAMES {
            let book = rule_book_by_name(name, &config).unwrap();
            assert_eq!(book.name(), name);
            assert_eq!(book.play_mode(), PlayMode::BeforeStart);
        }
        let book = rule_book_by_name("pick_and_place", &config).unwrap();
        assert_eq!(book.time_limit(), Some(120.0));

        let err = rule_book_by_name("soccer", &config).unwrap_err();
        assert_eq!(
            err,
            RuleBookError::Unknown {
                given: "soccer".into()
            }
        );
        for name in RULE_BOOK_NAMES {
            assert!(err.to_string().contains(name), "{err}");
        }

        let no_zone = RuleBookConfig::default();
        assert_eq!(
            rule_book_by_name("pick_and_place", &no_zone).unwrap_err(),
            RuleBookError::MissingGoalZone
        );
        assert!(rule_book_by_name("free_play", &no_zone).is_ok());
    }

    #[test]
    fn events_have_codes_and_one_line_messages() {
        let cases = [
            (
                RefereeEvent::PlayModeChanged {
                    from: PlayMode::PlayOn,
                    to: PlayMode::TimeUp,
                },
                "PLAY_MODE",
                "play mode PlayOn -> TimeUp",
            ),
            (RefereeEvent::KickOff, "KICK_OFF", "kick-off"),
            (
                RefereeEvent::Scored {
                    object: 2,
                    name: "cube_blue".into(),
                    score: 3,
                },
                "SCORED",
                "cube_blue rests in the goal zone and scores (score 3)",
            ),
            (
                RefereeEvent::ObjectReplaced {
                    object: 0,
                    name: "cube_red".into(),
                    reason: ReplaceReason::OffTable,
                },
                "OBJECT_REPLACED",
                "cube_red left the table",
            ),
        ];
        for (event, code, text) in cases {
            assert_eq!(event.code(), code);
            let message = event.to_string();
            assert!(message.contains(text), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
        assert_eq!(ReplaceReason::BelowTop.as_str(), "below_top");
    }
}
