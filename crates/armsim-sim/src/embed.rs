//! The simulation embedded in another program (the Python package): the world of a
//! [`headless_app`], taken out of its `App` so that it can be held by a
//! Python object and moved to a worker thread (`World` is `Send + Sync`; an `App` is neither).
//!
//! Nothing here is a second step path. A step is one run of the `SimStep` schedule, as in the
//! app: the session applies the targets (`JointTargets`) in `Apply`, bevy_rapier3d steps the
//! entities in `Physics`, the physics guard and the referee follow, the recorder appends in
//! `Publish`. Session changes (start, reset) are `SessionCommand`s applied by one frame of the
//! app's `Main` schedule, with the clock in `ClockMode::Manual` so a frame never steps on its own:
//! the referee's reset and the recording's new demo happen there, by the app's own systems.

use std::path::Path;
use std::sync::Arc;

use bevy::prelude::*;

use crate::referee::RuleBook;
use crate::referee::plugin::Referee;
use crate::scene::Scene;
use crate::session::{Session, SessionCommand, SessionRequest, SessionState};
use crate::sim::{
    ClockMode, CommandError, JointCommand, JointTargets, ObjectContacts, SimClock, SimScene,
    SimView, SimViewMut, begin_batch, contacts_of_object, end_batch, sim_view, step_in_batch,
    with_sim_mut,
};
use crate::trajectory::plugin::{Recording, finish_recording, start_recording};
use crate::trajectory::{Recovery, TrajectoryError};
use crate::{SimOptions, headless_app};

/// One simulated world driven by explicit calls: `step`, `reset`, targets.
///
/// Only these calls reach the world, so bevy_rapier's sync and writeback run when something
/// can differ, not around every `step` call: its sync before the next steps once the ECS may
/// have been changed (through [`EmbeddedSim::world_mut`], or a frame of the `Main` schedule),
/// its writeback of `Transform` and `Velocity` when the ECS is looked at
/// ([`EmbeddedSim::world`], `world_mut`) or a frame runs. A `step(1)` loop then costs what one
/// `step(n)` does per step.
pub struct EmbeddedSim {
    world: World,
    /// The ECS may hold changes bevy_rapier has not synced into the sets yet.
    ecs_changed: bool,
    /// Steps (or a teleport) ran since the entities' `Transform`s were last written.
    transforms_behind: bool,
}

impl EmbeddedSim {
    /// The scene as loaded, judged by `book` (the scene's default rule book if `None`), with the
    /// session RUNNING: targets apply from the first step.
    pub fn new(scene: Arc<Scene>, book: Option<Box<dyn RuleBook>>) -> Self {
        let mut app = headless_app(
            scene,
            &SimOptions {
                clock: ClockMode::Manual,
            },
        );
        if let Some(book) = book {
            app.insert_resource(Referee::new(book));
        }
        app.finish();
        app.cleanup();
        let mut this = Self {
            world: std::mem::take(app.world_mut()),
            ecs_changed: true,
            transforms_behind: false,
        };
        this.session(&[SessionCommand::Start]);
        this
    }

    /// The scene the world was built from (and resets to).
    pub fn scene(&self) -> &Arc<Scene> {
        &self.world.resource::<SimScene>().0
    }

    /// The ECS world: the scene's entities (their `Transform`s written back first), the
    /// resources, the schedules.
    pub fn world(&mut self) -> &World {
        self.write_back();
        &self.world
    }

    /// The ECS world, to change: what you change is synced into the physics at the next step.
    pub fn world_mut(&mut self) -> &mut World {
        self.write_back();
        self.ecs_changed = true;
        &mut self.world
    }

    /// bevy_rapier's writeback, if steps ran since the last one.
    fn write_back(&mut self) {
        if std::mem::take(&mut self.transforms_behind) {
            end_batch(&mut self.world);
        }
    }

    /// The physics world (joint readings, poses, the state hash).
    pub fn sim(&self) -> SimView<'_> {
        sim_view(&self.world)
    }

    /// The contact forces on object `index` (scene order) at the end of the last step.
    pub fn object_contacts(&self, index: usize) -> Option<ObjectContacts> {
        contacts_of_object(&self.world, index)
    }

    /// Runs `f` on the physics world, to set a state from outside.
    pub fn with_sim_mut<R>(&mut self, f: impl FnOnce(&mut SimViewMut<'_>) -> R) -> R {
        self.transforms_behind = true;
        with_sim_mut(&mut self.world, f)
    }

    /// The robot's joint names, in robot joint order (the order of targets and readings).
    pub fn joint_names(&self) -> Vec<String> {
        let robot = &self.sim().model.robot;
        robot.joints.iter().map(|j| j.name.clone()).collect()
    }

    /// The scene's object names, in scene order.
    pub fn object_names(&self) -> Vec<String> {
        let sim = self.sim();
        sim.model.objects.iter().map(|o| o.name.clone()).collect()
    }

    /// The joint targets the next step applies, in robot joint order.
    pub fn targets(&self) -> &[JointCommand] {
        &self.world.resource::<JointTargets>().commands
    }

    /// Sets joint `index`'s target; a non-finite value or a joint that does not exist is
    /// refused and nothing changes.
    pub fn set_target(&mut self, index: usize, cmd: JointCommand) -> Result<(), CommandError> {
        self.world.resource_mut::<JointTargets>().set(index, cmd)
    }

    pub fn referee(&self) -> &Referee {
        self.world.resource::<Referee>()
    }

    pub fn referee_mut(&mut self) -> &mut Referee {
        self.world.resource_mut::<Referee>().into_inner()
    }

    pub fn clock(&self) -> &SimClock {
        self.world.resource::<SimClock>()
    }

    /// What the world's episode started from: the draw of the scene's `randomize` block (none
    /// without one).
    pub fn episode_start(&self) -> Option<&armsim_core::scene::variation::EpisodeStart> {
        self.world
            .resource::<crate::sim::EpisodeStartNow>()
            .0
            .as_ref()
    }

    /// Why the session is in ERROR (the physics guard tripped); stepping refuses until a reset.
    pub fn error(&self) -> Option<&str> {
        let session = self.world.resource::<Session>();
        match session.state() {
            SessionState::Error => Some(session.error.as_deref().unwrap_or("session error")),
            _ => None,
        }
    }

    /// Runs up to `n` steps through the `SimStep` schedule. Stops early, returning how many ran,
    /// when the physics guard puts the session in ERROR. An error is a recording that had to
    /// stop (the steps ran; the recording's journal keeps what it had).
    pub fn step(&mut self, n: u64) -> Result<u64, String> {
        let recording = self.is_recording();
        if std::mem::take(&mut self.ecs_changed) {
            begin_batch(&mut self.world);
        }
        let mut ran = 0;
        let mut stopped = None;
        while ran < n {
            if self.error().is_some() {
                break;
            }
            step_in_batch(&mut self.world);
            ran += 1;
            if recording && !self.is_recording() {
                stopped = Some(self.recording_error());
                break;
            }
        }
        self.transforms_behind |= ran > 0;
        match stopped {
            Some(e) => Err(e),
            None => Ok(ran),
        }
    }

    /// Back to the scene's initial state, as the app's RESET (a fresh physics world and the
    /// scene's entities respawned in order, targets back to the home posture, the referee back
    /// to `BeforeStart`, time 0), then RUNNING again. A recording starts a new demo; the error
    /// is a recording that could not.
    pub fn reset(&mut self) -> Result<(), String> {
        let recording = self.is_recording();
        self.session(&[SessionCommand::Reset, SessionCommand::Start]);
        if recording && !self.is_recording() {
            return Err(self.recording_error());
        }
        Ok(())
    }

    /// Applies session commands with one frame of the `Main` schedule (no step runs: the clock
    /// is manual).
    fn session(&mut self, commands: &[SessionCommand]) {
        self.write_back();
        for &c in commands {
            self.world.write_message(SessionRequest(c));
        }
        self.world.run_schedule(Main);
        self.world.clear_trackers();
        // The frame's systems may have changed the ECS (a reset respawns the scene's entities).
        self.ecs_changed = true;
    }

    /// Starts an episode (the monitor's `(kickOff)`).
    pub fn kick_off(&mut self) {
        let t = self.clock().sim_time;
        self.referee_mut().kick_off(t);
    }

    /// Forces a play mode (the monitor's `(playMode X)`).
    pub fn set_play_mode(&mut self, mode: crate::referee::PlayMode) {
        let t = self.clock().sim_time;
        self.referee_mut().set_play_mode(mode, t);
    }

    /// Starts recording into `path` (format by extension), as `armsim --record`.
    pub fn start_recording(&mut self, path: &Path, every: u32) -> Result<(), TrajectoryError> {
        start_recording(&mut self.world, path, every)
    }

    /// Ends the recording (if any) and writes the file.
    pub fn finish_recording(&mut self) -> Option<Result<Recovery, String>> {
        finish_recording(&mut self.world)
    }

    pub fn is_recording(&self) -> bool {
        self.world.resource::<Recording>().is_active()
    }

    fn recording_error(&self) -> String {
        match &self.world.resource::<Recording>().last {
            Some(Err(e)) => format!("the recording stopped: {e}"),
            _ => "the recording stopped".to_string(),
        }
    }
}
