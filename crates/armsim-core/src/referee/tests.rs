//! Unit tests of the rule books: pick-and-place scoring and replacement, free play.

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
        let world = StepView {
            dt: DT,
            table: &TABLE,
            objects,
        };
        book.step(&world, &mut self.events, &mut self.actions);
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

#[test]
fn the_event_log_numbers_events_keeps_the_newest_and_reads_from_a_cursor() {
    let mut log = EventLog::new(2);
    assert_eq!(log.last_seq(), 0);
    assert_eq!(log.since(0).count(), 0);
    let mut events = vec![RefereeEvent::KickOff, RefereeEvent::KickOff];
    log.record(&mut events, 1.5);
    assert!(events.is_empty(), "record drains the events it logs");
    assert_eq!(log.last_seq(), 2);
    let seqs: Vec<u64> = log.since(1).map(|e| e.seq).collect();
    assert_eq!(seqs, [2]);
    assert!(log.since(0).all(|e| e.sim_time == 1.5));
    log.record(&mut vec![RefereeEvent::KickOff], 2.0);
    // Capacity 2: the first event is gone, a reader at 0 resumes from the oldest kept.
    let seqs: Vec<u64> = log.since(0).map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(log.last_seq(), 3);
}
