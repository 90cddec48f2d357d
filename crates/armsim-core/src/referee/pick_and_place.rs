//! The pick-and-place rule book: every cube resting in the goal zone scores once; all scored
//! is `Success`, the time limit first is `TimeUp`.

use super::book::{Book, Rules, Turn};
use super::{
    Episode, ObjectView, PlayMode, REST_HEIGHT_SLACK_M, REST_MAX_ANG_SPEED_RAD_S,
    REST_MAX_LIN_SPEED_MPS, REST_TIME_TO_SCORE_S, RefereeEvent, TIME_EPSILON_S, TableView,
    ZoneRect,
};

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
pub type PickAndPlace = Book<PickAndPlaceRules>;

/// The pick-and-place rules: the zone, the limit and each cube's progress ([`PickAndPlace`]).
#[derive(Clone, Debug)]
pub struct PickAndPlaceRules {
    zone: ZoneRect,
    time_limit_s: Option<f64>,
    score: u32,
    placements: Vec<Placement>,
}

impl PickAndPlace {
    /// `time_limit_s: None` means the episode only ends in `Success` (or by a monitor).
    pub fn new(zone: ZoneRect, time_limit_s: Option<f64>) -> Self {
        Book::with_rules(PickAndPlaceRules {
            zone,
            time_limit_s,
            score: 0,
            placements: Vec::new(),
        })
    }

    pub fn zone(&self) -> ZoneRect {
        self.rules.zone
    }

    /// Whether `object` has scored in this episode (false for an index never seen).
    pub fn has_scored(&self, object: usize) -> bool {
        self.rules.placements.get(object).is_some_and(|p| p.scored)
    }
}

impl PickAndPlaceRules {
    fn is_resting_in_zone(&self, table: &TableView, object: &ObjectView<'_>) -> bool {
        let p = object.pos;
        self.zone.contains_xy(p.x, p.y)
            && p.z <= table.top_z + object.half_extent + REST_HEIGHT_SLACK_M
            && object.lin_vel.length() < REST_MAX_LIN_SPEED_MPS
            && object.ang_vel.length() < REST_MAX_ANG_SPEED_RAD_S
    }

    fn time_is_up(&self, episode: &Episode) -> bool {
        self.time_limit_s
            .is_some_and(|limit| episode.play_time + TIME_EPSILON_S >= limit)
    }
}

impl Rules for PickAndPlaceRules {
    const NAME: &'static str = "pick_and_place";
    const TASK: &'static str = "Pick up each cube and place it in the goal zone.";

    fn new_episode(&mut self) {
        self.score = 0;
        self.placements.clear();
    }

    fn time_limit(&self) -> Option<f64> {
        self.time_limit_s
    }

    fn score(&self) -> u32 {
        self.score
    }

    fn play(&mut self, turn: Turn<'_>) {
        let objects = turn.world.objects;
        self.placements.resize(objects.len(), Placement::default());

        if turn.episode.mode != PlayMode::PlayOn {
            // Resting only counts in PlayOn, so a cube left in the zone before kick-off or
            // after the end still needs a full second of play to score.
            for placement in &mut self.placements {
                placement.resting_s = 0.0;
            }
            return;
        }
        // A monitor may force PlayOn after the limit; time stays over and the episode ends again.
        if self.time_is_up(turn.episode) {
            turn.episode.set_mode(PlayMode::TimeUp, turn.events);
            return;
        }

        let dt = turn.world.dt;
        turn.episode.play_time += dt;
        for (i, object) in objects.iter().enumerate() {
            let resting = !turn.falling(i) && self.is_resting_in_zone(turn.world.table, object);
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
                turn.events.push(RefereeEvent::Scored {
                    object: i,
                    name: object.name.to_owned(),
                    score: self.score,
                });
            }
        }

        // Success is checked first: a cube that scores on the last step of the episode made it.
        // An empty scene never succeeds, since there was nothing to place.
        if !self.placements.is_empty() && self.placements.iter().all(|p| p.scored) {
            turn.episode.set_mode(PlayMode::Success, turn.events);
        } else if self.time_is_up(turn.episode) {
            turn.episode.set_mode(PlayMode::TimeUp, turn.events);
        }
    }
}
