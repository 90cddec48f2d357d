//! One world stepped the way the app steps it, without Bevy: the joint commands go into the
//! motors, Rapier steps, the physics guard checks for non-finite state, the referee judges and
//! puts fallen cubes back (`armsim_core::referee::judge`), and a recording appends the step
//! (`armsim_core::state::action_of`). Same order as the app's `SimStep` phases (Apply → Physics
//! → guard → Referee → Publish), so the same commands give the same state hash as the app.

use std::path::Path;
use std::sync::Arc;

use armsim_core::referee::{
    EventLog, LoggedEvent, PlayMode, RefereeAction, RefereeEvent, RuleBook, config_of,
    default_rule_book, judge, rule_book_by_name,
};
use armsim_core::scene::Scene;
use armsim_core::sim::{SIM_DT, SimWorld};
use armsim_core::state::{action_of, demo_extra, snapshot};
use armsim_core::trajectory::{Recorder, Recovery, TrajectoryError};

/// Referee events kept for `Sim.events()`; older ones are dropped.
const LOG_CAPACITY: usize = 4096;

struct Recording {
    recorder: Recorder,
    every: u32,
    steps: u64,
}

pub struct Runner {
    pub scene: Arc<Scene>,
    pub world: SimWorld,
    pub book: Box<dyn RuleBook>,
    events: Vec<RefereeEvent>,
    actions: Vec<RefereeAction>,
    log: EventLog,
    /// Steps since the last reset (the app's `SimClock::steps`).
    pub steps: u64,
    /// Resets so far.
    pub episode: u64,
    /// Set by the physics guard; stepping refuses until a reset (the app's ERROR state).
    pub error: Option<String>,
    /// The world is the scene as loaded plus steps (no state was set from outside).
    fresh: bool,
    recording: Option<Recording>,
    /// Problems the referee met putting objects back, for the caller to report.
    pub warnings: Vec<String>,
}

impl Runner {
    /// `rules`: a rule book name (`pick_and_place`, `free_play`), or the scene's default.
    pub fn new(scene: Arc<Scene>, rules: Option<&str>) -> Result<Self, String> {
        let book = match rules {
            None => default_rule_book(&scene),
            Some(name) => rule_book_by_name(name, &config_of(&scene)).map_err(|e| e.to_string())?,
        };
        Ok(Self::with_book(scene, book))
    }

    /// A runner judged by `book`.
    pub fn with_book(scene: Arc<Scene>, book: Box<dyn RuleBook>) -> Self {
        Self {
            world: SimWorld::new(&scene),
            scene,
            book,
            events: Vec::new(),
            actions: Vec::new(),
            log: EventLog::new(LOG_CAPACITY),
            steps: 0,
            episode: 0,
            error: None,
            fresh: true,
            recording: None,
            warnings: Vec::new(),
        }
    }

    pub fn sim_time(&self) -> f64 {
        self.steps as f64 * SIM_DT
    }

    /// The scene's initial state again, as the app's RESET: a fresh world (bit-identical to a new
    /// one), the referee back to `BeforeStart`, a recording starts a new demo.
    pub fn reset(&mut self) -> Result<(), TrajectoryError> {
        self.world = SimWorld::new(&self.scene);
        self.book.reset();
        self.steps = 0;
        self.episode += 1;
        self.error = None;
        self.fresh = true;
        if let Some(rec) = &mut self.recording {
            let init = snapshot(&self.world).to_frame();
            rec.recorder.new_demo(&init)?;
            rec.recorder
                .set_extra(&demo_extra(&self.scene.config.scene_id, rec.every, true))?;
        }
        Ok(())
    }

    /// Marks the world as changed from outside (a state set by the caller): a recording started
    /// now cannot be replayed from a fresh load.
    pub fn touched(&mut self) {
        self.fresh = false;
    }

    /// Runs up to `n` steps; stops early (returning how many ran) when the physics guard trips.
    pub fn step(&mut self, n: u64) -> Result<u64, TrajectoryError> {
        for i in 0..n {
            if self.error.is_some() {
                return Ok(i);
            }
            self.step_once()?;
        }
        Ok(n)
    }

    fn step_once(&mut self) -> Result<(), TrajectoryError> {
        self.world.step();
        self.steps += 1;
        // The app's physics guard: any body, not only the arm.
        let why = if !self.world.joint_positions().iter().all(|q| q.is_finite()) {
            Some("physics produced a non-finite joint state".to_string())
        } else {
            self.world
                .non_finite_body()
                .map(|body| format!("physics produced a non-finite state for {body}"))
        };
        if let Some(why) = why {
            self.error = Some(why);
        }
        let mut events = std::mem::take(&mut self.events);
        for (object, e) in judge(
            self.book.as_mut(),
            &mut self.world,
            &mut events,
            &mut self.actions,
        ) {
            self.warnings
                .push(format!("referee: cannot put object {object} back: {e}"));
        }
        self.record_events(&mut events);
        self.events = events;
        if let Some(rec) = &mut self.recording {
            rec.steps += 1;
            let mut result = rec.recorder.push_action(&action_of(&self.world));
            if result.is_ok() && rec.steps % u64::from(rec.every) == 0 {
                result = rec.recorder.push_state(&snapshot(&self.world).to_frame());
            }
            if let Err(e) = result {
                self.recording = None;
                return Err(e);
            }
        }
        Ok(())
    }

    fn record_events(&mut self, events: &mut Vec<RefereeEvent>) {
        let sim_time = self.sim_time();
        self.log.record(events, sim_time);
    }

    /// Starts an episode (the monitor's `(kickOff)`).
    pub fn kick_off(&mut self) {
        let mut events = std::mem::take(&mut self.events);
        self.book.kick_off(&mut events);
        self.record_events(&mut events);
        self.events = events;
    }

    /// Forces a play mode (the monitor's `(playMode X)`).
    pub fn set_play_mode(&mut self, mode: PlayMode) {
        let mut events = std::mem::take(&mut self.events);
        self.book.set_play_mode(mode, &mut events);
        self.record_events(&mut events);
        self.events = events;
    }

    /// Referee events with a sequence number above `cursor`.
    pub fn events_since(&self, cursor: u64) -> impl Iterator<Item = &LoggedEvent> {
        self.log.since(cursor)
    }

    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// Starts recording into `path` (format by extension): every step's commands, and a state
    /// every `every` steps, as the app's `--record`.
    pub fn start_recording(&mut self, path: &Path, every: u32) -> Result<(), TrajectoryError> {
        let every = every.max(1);
        let init = snapshot(&self.world).to_frame();
        let mut recorder = Recorder::create(path, &self.world.robot.name, &init)?;
        let fresh = self.fresh && self.steps == 0;
        recorder.set_extra(&demo_extra(&self.scene.config.scene_id, every, fresh))?;
        self.recording = Some(Recording {
            recorder,
            every,
            steps: 0,
        });
        Ok(())
    }

    pub fn is_recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Ends the recording (if any) and writes the file.
    pub fn finish_recording(&mut self) -> Option<Result<Recovery, TrajectoryError>> {
        self.recording.take().map(|r| r.recorder.finish())
    }
}
