//! Recording and replay in the ECS. Recording appends, after every step, the step's joint
//! commands as a MetaSim action (`dof_pos_target` by joint name, plus armsim's exact control
//! modes) and, every `every` steps, the world's state frame; the journal is on disk as it goes and
//! `finish` writes the final file (on stop, exit, Ctrl-C, SIGTERM or `(killsim)`). Replay drives
//! the world from a file: by state (after each recorded step the world is set to the recorded
//! frame: kinematic and exact) or by action (the recorded commands drive the physics; the
//! divergence from the recorded states is measured).

use std::path::{Path, PathBuf};

use bevy::app::AppExit;
use bevy::prelude::*;

use armsim_core::trajectory::value::Value;
use armsim_core::trajectory::{
    Demo, Recorder, Recovery, StateFrame, TrajectoryError, journal_path, leftover_journals, load,
    recover_journal,
};

use crate::scene::Scene;
use crate::session::{
    Session, SessionCommand, SessionEvent, SessionNotice, SessionRequest, SessionState,
};
use crate::sim::{
    JointTargets, Sim, SimClock, SimMut, SimRef, SimScene, SimStep, SimSystems, SimWorld, install,
    sim_view, with_sim_mut,
};
use crate::state::{self, snapshot};

/// How a replay drives the world: in a leaf of its own, which the foreign-demo filter
/// (`super::foreign`) names too.
pub use super::ReplayMode;

/// An ongoing recording.
#[derive(Resource, Default)]
pub struct Recording {
    active: Option<Active>,
    /// What the last finished recording wrote, for the panel and the log.
    pub last: Option<Result<Recovery, String>>,
    /// The last recording ended before its first step, so no file was written (`last` says
    /// so, and it is already logged).
    pub nothing_recorded: bool,
}

struct Active {
    recorder: Recorder,
    every: u32,
    steps: u64,
    states: u64,
}

impl Recording {
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// (path, steps recorded) of the active recording.
    pub fn progress(&self) -> Option<(&Path, u64)> {
        self.active.as_ref().map(|a| (a.recorder.path(), a.steps))
    }
}

/// Starts recording into `path` (format by extension) with a state every `every` steps. The
/// initial state is the world now; `extra` notes whether that is the scene as loaded, which lets a
/// replay by action start from a fresh load and reproduce the run bit for bit. A journal that a
/// killed recording into `path` left is recovered first ([`recover_leftovers`]).
pub fn start_recording(world: &mut World, path: &Path, every: u32) -> Result<(), TrajectoryError> {
    recover_leftovers(path);
    // A replay that started from its file's init_state also sits at step 0, but not at the scene as loaded.
    let fresh = world.resource::<SimClock>().steps == 0
        && world
            .get_resource::<Replay>()
            .is_none_or(|r| r.from_fresh_load);
    let sim = sim_view(world);
    let scene = world.resource::<SimScene>().0.clone();
    let init = snapshot(&sim).to_frame();
    let mut recorder = Recorder::create(path, &sim.robot.name, &init)?;
    recorder.set_extra(&demo_extra(&scene, every, fresh))?;
    info!(
        "recording to {} (a state every {} steps; journal {})",
        path.display(),
        every.max(1),
        recorder.journal_path().display()
    );
    world.resource_mut::<Recording>().active = Some(Active {
        recorder,
        every: every.max(1),
        steps: 0,
        states: 0,
    });
    Ok(())
}

/// Recovers the journal that a recording into `path` killed before it finished (SIGKILL, a power
/// cut, a crash) left behind, into a file of its own (`<name>.recovered<ext>`, since the
/// recording about to start writes `path`), with one warning line. Other recordings' journals in
/// the folder are only named, with the command that recovers them: they may belong to a
/// recording that is finishing right now, and the folder (often the shared temporary one) is not
/// this recording's to tidy. A journal that a running recorder still holds is left alone
/// (`leftover_journals`), and one that cannot be recovered stays, named in its warning.
pub fn recover_leftovers(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(journals) = leftover_journals(dir) else {
        return;
    };
    let own = journal_path(path);
    for journal in journals {
        if journal.file_name() != own.file_name() {
            warn!(
                "{} is the journal of a recording that never finished (killed?); \
                 `armsim trajectory recover {}` makes it a complete file",
                journal.display(),
                journal.display()
            );
            continue;
        }
        let to = recovered_path(path);
        match recover_journal(&journal, Some(&to)) {
            Ok(r) => warn!(
                "recovered the journal of a recording that never finished (killed?): {} -> {} \
                 ({r})",
                journal.display(),
                r.path.display(),
            ),
            Err(e) => warn!(
                "a recording that never finished left {}, which cannot be recovered: {e}",
                journal.display()
            ),
        }
    }
}

/// A free name beside `path` for its own leftover journal: `run.pkl.gz` -> `run.recovered.pkl.gz`
/// (then `run.recovered-2.pkl.gz`, ...).
fn recovered_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = [".json.gz", ".pkl.gz", ".json", ".pkl"]
        .into_iter()
        .find(|ext| name.ends_with(ext))
        .unwrap_or("");
    let stem = &name[..name.len() - ext.len()];
    (1..)
        .map(|n| {
            let tag = if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            };
            path.with_file_name(format!("{stem}.recovered{tag}{ext}"))
        })
        .find(|p| !p.exists() && !journal_path(p).exists())
        .expect("some name is free")
}

/// Ends the recording (if any) and writes the file. Safe to call more than once.
pub fn finish_recording(world: &mut World) -> Option<Result<Recovery, String>> {
    let mut rec = world.resource_mut::<Recording>();
    let active = rec.active.take()?;
    let path = active.recorder.path().to_owned();
    let result = active.recorder.finish().map_err(|e| e.to_string());
    match &result {
        Ok(r) => info!(
            "recording written: {} ({} actions, {} states)",
            path.display(),
            r.actions,
            r.states
        ),
        Err(e) => error!("recording {} not finished: {e}", path.display()),
    }
    rec.last = Some(result.clone());
    rec.nothing_recorded = false;
    Some(result)
}

pub use crate::state::{action_of, commands_of};

fn record_step(mut rec: ResMut<Recording>, sim: SimRef) {
    let Some(active) = rec.active.as_mut() else {
        return;
    };
    let sim = sim.view();
    active.steps += 1;
    let mut result = active.recorder.push_action(&action_of(&sim));
    if result.is_ok() && active.steps % u64::from(active.every) == 0 {
        active.states += 1;
        result = active.recorder.push_state(&snapshot(&sim).to_frame());
    }
    if let Err(e) = result {
        error!("recording stopped: {e}");
        rec.active = None;
        rec.last = Some(Err(e.to_string()));
    }
}

/// A scene reset starts a new demo at the reloaded scene, so each demo replays on its own.
fn new_demo_on_reset(
    mut events: MessageReader<SessionNotice>,
    mut rec: ResMut<Recording>,
    sim: SimRef,
    scene: Res<SimScene>,
) {
    let resets = events
        .read()
        .filter(|e| e.0 == SessionEvent::ResetDone)
        .count();
    if resets == 0 {
        return;
    }
    let Some(active) = rec.active.as_mut() else {
        return;
    };
    let init = snapshot(&sim.view()).to_frame();
    let every = active.every;
    let result = active.recorder.new_demo(&init).and_then(|()| {
        active
            .recorder
            .set_extra(&demo_extra(&scene.0, every, true))
    });
    match result {
        Ok(()) => info!("recording: scene reset, new demo"),
        Err(e) => {
            error!("recording stopped: {e}");
            rec.active = None;
            rec.last = Some(Err(e.to_string()));
        }
    }
}

fn demo_extra(scene: &Scene, every: u32, fresh: bool) -> Value {
    crate::state::demo_extra(&scene.config.scene_id, every, fresh)
}

/// How this run's recording ended: finishes one still running, else reports the last one
/// (which may have stopped earlier on an error). `None`: nothing was recorded. A run that
/// stopped before its first step (interrupted while starting, `--steps 0`) writes no file: its
/// outcome is an error saying so, logged here (`Recording::nothing_recorded`), and its journal,
/// which holds only the initial state, is removed.
pub fn recording_outcome(world: &mut World) -> Option<Result<Recovery, String>> {
    let mut rec = world.get_resource_mut::<Recording>()?;
    if let Some(active) = rec.active.take_if(|a| a.steps == 0) {
        let path = active.recorder.path().to_owned();
        let journal = active.recorder.journal_path().to_owned();
        drop(active);
        let _ = std::fs::remove_file(&journal);
        let e = format!(
            "no step was recorded into {}: the run stopped before its first step; no file written",
            path.display()
        );
        error!("{e}");
        rec.last = Some(Err(e.clone()));
        rec.nothing_recorded = true;
        return Some(Err(e));
    }
    finish_recording(world).or_else(|| world.get_resource::<Recording>()?.last.clone())
}

/// On exit a recording is finished; one that cannot be makes the exit an error, so a lost
/// recording never ends in exit code 0.
fn finish_on_exit(world: &mut World) {
    let exiting = world
        .get_resource::<Messages<AppExit>>()
        .is_some_and(|m| !m.is_empty());
    if exiting && let Some(Err(e)) = recording_outcome(world) {
        error!("exiting with an error: the recording was not written ({e})");
        world.write_message(AppExit::error());
    }
}

/// A replay in progress.
#[derive(Resource)]
pub struct Replay {
    pub path: PathBuf,
    pub mode: ReplayMode,
    pub demo: Demo,
    pub every: u32,
    /// Steps replayed so far (the next action's index).
    pub step: usize,
    pub playing: bool,
    /// Largest distance between a replayed and a recorded object position (m), and joint (rad).
    pub max_object_error: f64,
    pub max_joint_error: f64,
    /// Recorded states the divergence was measured against (action replay).
    pub compared_states: usize,
    /// Bodies the demo's frames name that this scene lacks (sorted): left out of every frame,
    /// so they are neither set (state replay) nor compared (action replay).
    pub unknown_bodies: Vec<String>,
    /// Bodies the demo's frames name that this scene has (sorted): what is replayed and compared.
    pub shared_bodies: Vec<String>,
    /// The scene's robot (a demo of another name for the same arm is renamed to it).
    pub robot: String,
    /// Whether the replay started from the scene as loaded (rather than the demo's init_state).
    pub from_fresh_load: bool,
    pub finished: bool,
    /// Why the replay stopped before its end, if it did (a recorded state that does not fit).
    pub failed: Option<String>,
}

impl Replay {
    /// Steps in the demo: one per action.
    pub fn len(&self) -> usize {
        self.demo
            .actions
            .len()
            .max(self.demo.states.len() * self.every as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn report(&self) -> String {
        let head = format!(
            "replay by {} of {}: {} of {} steps",
            self.mode.name(),
            self.path.display(),
            self.step,
            self.len()
        );
        if let Some(why) = &self.failed {
            return format!("{head}; stopped: {why}");
        }
        let unknown = self.unknown_bodies.join(", ");
        if self.mode == ReplayMode::State {
            return match unknown.is_empty() {
                true => head,
                false => format!("{head} (not in this scene, skipped: {unknown})"),
            };
        }
        if self.compared_states == 0 {
            // A 0.000000 here would read as "perfect", when nothing was measured at all.
            let why = if self.demo.states.is_empty() {
                "the demo has no recorded states".to_string()
            } else if !unknown.is_empty() {
                format!("the recorded states name only bodies this scene lacks ({unknown})")
            } else {
                "no recorded state was reached".to_string()
            };
            return format!("{head}; divergence not measured: {why}");
        }
        // No object figure when only the robot was compared: a 0 would read as a match.
        let objects = match self.shared_bodies.iter().any(|b| *b != self.robot) {
            true => format!("objects {:.6} m, ", self.max_object_error),
            false => String::new(),
        };
        let mut text = format!(
            "{head}; divergence from {} recorded states: {objects}joints {:.6} rad",
            self.compared_states, self.max_joint_error
        );
        // What the figures cover: the bodies both name (a state may name fewer than these).
        text.push_str(&format!(" (compared: {}", self.shared_bodies.join(", ")));
        if !unknown.is_empty() {
            text.push_str(&format!("; not in this scene, not compared: {unknown}"));
        }
        text.push(')');
        text
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    File(#[from] TrajectoryError),
    #[error("{path} has no demos for robot {robot:?} (it has: {available})")]
    NoRobot {
        path: String,
        robot: String,
        available: String,
    },
    #[error("{path} has {count} demos for {robot}; --demo {index} is out of range")]
    NoDemo {
        path: String,
        robot: String,
        count: usize,
        index: usize,
    },
    // The callers name the file ("cannot replay FILE: …"), so these do not repeat it.
    #[error("demo {index} has no actions and no states: nothing to replay")]
    Empty { index: usize },
    #[error(
        "demo {index} has no recorded states to replay by state ({actions} actions; \
         --replay-mode action drives the physics with them)"
    )]
    NoStates { index: usize, actions: usize },
    #[error(
        "demo {index}'s recorded states name {unknown}, which this scene lacks (it has: {known})"
    )]
    UnknownBodies {
        index: usize,
        unknown: String,
        known: String,
    },
    /// Not a `#[source]`: the message already says the reason, and error reports that print the
    /// chain (anyhow's `{:#}`) would say it twice.
    #[error("the initial state does not fit this scene: {0}")]
    State(state::StateError),
}

impl From<state::StateError> for ReplayError {
    fn from(e: state::StateError) -> Self {
        ReplayError::State(e)
    }
}

/// Loads demo `index` for the scene's robot and starts replaying it from its initial state (the
/// scene as loaded when the recording says it started there, so action replay is exact).
pub fn start_replay(
    world: &mut World,
    path: &Path,
    mode: ReplayMode,
    index: usize,
) -> Result<(), ReplayError> {
    let trajectories = load(path)?;
    let scene: std::sync::Arc<Scene> = world.resource::<SimScene>().0.clone();
    let robot = scene.robot.name.clone();
    // A file for another name of the same arm (MetaSim's `franka` on a Panda) is replayed with
    // its robot and joints renamed.
    let picked = armsim_core::trajectory::adapt::pick_robot(&trajectories, &scene.robot);
    let Some((demos, map)) = picked.and_then(|(name, map)| {
        trajectories
            .demos(name)
            .map(|d| (d, map.map(|m| (name.to_string(), m))))
    }) else {
        return Err(ReplayError::NoRobot {
            path: path.display().to_string(),
            robot,
            available: trajectories
                .robots
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let mut demo = demos.get(index).cloned().ok_or(ReplayError::NoDemo {
        path: path.display().to_string(),
        robot: robot.clone(),
        count: demos.len(),
        index,
    })?;
    if let Some((from, map)) = &map {
        let mut renamed: Vec<String> = map
            .iter()
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("{a}→{b}"))
            .collect();
        renamed.sort();
        info!(
            "replay: {} has no demos for `{robot}`; replaying `{from}`'s, whose joints map onto \
             this robot's{}",
            path.display(),
            if renamed.is_empty() {
                String::new()
            } else {
                format!(" (renamed: {})", renamed.join(", "))
            }
        );
        demo = armsim_core::trajectory::adapt::adapt(&demo, from, &robot, map);
    }
    let extra = |key: &str| demo.extra.as_ref().and_then(|e| e.get(key)).cloned();
    let every = extra("state_every")
        .and_then(|v| v.as_f64())
        .map_or(1, |v| v.max(1.0) as u32);
    let fresh = matches!(extra("from_fresh_load"), Some(Value::Bool(true)));
    let mut sim = SimWorld::new(&scene);
    // Another scene's objects (RoboVerse's `box_base` on a Panda) are left out of every frame:
    // the robot and the objects this scene shares with the demo replay.
    let bodies = super::foreign::keep_shared(&sim.model, &mut demo);
    let unknown = bodies.skipped.clone();
    // Start where the recording started.
    if !fresh {
        state::set_frame(&mut sim.view_mut(), &demo.init_state)?;
    }
    if demo.actions.is_empty() && demo.states.is_empty() {
        return Err(ReplayError::Empty { index });
    }
    if mode == ReplayMode::State {
        // Checked here, once, rather than as one warning per frame that leaves the world untouched.
        if demo.states.is_empty() {
            return Err(ReplayError::NoStates {
                index,
                actions: demo.actions.len(),
            });
        }
        // States that name nothing this scene has leave nothing to replay by state.
        if demo.states.iter().all(|f| f.0.is_empty()) {
            let known = std::iter::once(sim.robot.name.as_str())
                .chain(sim.objects.iter().map(|o| o.name.as_str()))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ReplayError::UnknownBodies {
                index,
                unknown: unknown.join(", "),
                known,
            });
        }
    }
    if let Some(line) = bodies.skip_line(mode) {
        warn!("{line}");
    }
    install(world, sim);
    world.resource_mut::<SimClock>().reset();
    // The demo's own start, not a draw of the scene's `randomize` block.
    world.resource_mut::<crate::sim::EpisodeStartNow>().0 = None;
    let hold = world.resource::<Sim>().0.commands().to_vec();
    world.resource_mut::<JointTargets>().commands = hold;
    world.write_message(SessionRequest(SessionCommand::Start));
    info!(
        "replaying {} by {}: demo {index} of {robot}, {} actions, {} states (a state every {every} steps){}",
        path.display(),
        mode.name(),
        demo.actions.len(),
        demo.states.len(),
        if fresh {
            ", from the scene as loaded"
        } else {
            ", from its init_state"
        }
    );
    world.insert_resource(Replay {
        path: path.to_owned(),
        mode,
        demo,
        every,
        step: 0,
        playing: true,
        max_object_error: 0.0,
        max_joint_error: 0.0,
        compared_states: 0,
        unknown_bodies: unknown,
        shared_bodies: bodies.shared,
        robot: robot.clone(),
        from_fresh_load: fresh,
        finished: false,
        failed: None,
    });
    Ok(())
}

/// Replay by action: this step's recorded commands.
fn replay_adapt(replay: Option<ResMut<Replay>>, sim: Res<Sim>, mut targets: ResMut<JointTargets>) {
    let Some(replay) = replay else { return };
    if replay.mode != ReplayMode::Action || replay.finished {
        return;
    }
    if let Some(action) = replay.demo.actions.get(replay.step) {
        targets.commands = commands_of(&sim.0.robot, action, &targets.commands);
    }
}

/// After the step: state replay sets the recorded frame; action replay measures divergence.
fn replay_publish(
    replay: Option<ResMut<Replay>>,
    mut sim: SimMut,
    session: Res<Session>,
    mut commands: MessageWriter<SessionRequest>,
) {
    let Some(mut replay) = replay else { return };
    if replay.finished || session.state() != SessionState::Running {
        return;
    }
    replay.step += 1;
    let step = replay.step;
    let every = replay.every as usize;
    if step % every == 0
        && let Some(frame) = replay.demo.states.get(step / every - 1).cloned()
    {
        match replay.mode {
            ReplayMode::State => {
                if let Err(e) = state::set_frame(&mut sim.view_mut(), &frame) {
                    // Once, and the replay stops: the frames after it would fail the same way.
                    let why = format!("recorded state {} does not fit: {e}", step / every - 1);
                    error!("replay of {}: {why}", replay.path.display());
                    replay.failed = Some(why);
                    replay.finished = true;
                    commands.write(SessionRequest(SessionCommand::Pause));
                    return;
                }
            }
            ReplayMode::Action => {
                let now = snapshot(&sim.view()).to_frame();
                if let Some((obj, joint)) = divergence(&now, &frame, &replay.robot) {
                    replay.compared_states += 1;
                    replay.max_object_error = replay.max_object_error.max(obj);
                    replay.max_joint_error = replay.max_joint_error.max(joint);
                }
            }
        }
    }
    if step >= replay.len() {
        replay.finished = true;
        info!("{}", replay.report());
        commands.write(SessionRequest(SessionCommand::Pause));
    }
}

/// Largest object position error (m) and joint error (rad) between two frames, over the bodies
/// both name; `None` when they have none in common (nothing was compared). The root of `robot`
/// is not an object: its base is fixed where the scene puts it, and another project's demo
/// records it in a frame of its own (RoboVerse's Franka at the origin), so only its joints count.
pub fn divergence(a: &StateFrame, b: &StateFrame, robot: &str) -> Option<(f64, f64)> {
    let mut obj: f64 = 0.0;
    let mut joint: f64 = 0.0;
    let mut compared = false;
    for (name, bs) in &b.0 {
        let Some(x) = a.get(name) else { continue };
        compared = true;
        let d = if name == robot {
            0.0
        } else {
            (0..3)
                .map(|i| (x.pos[i] - bs.pos[i]).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        obj = obj.max(d);
        if let (Some(qa), Some(qb)) = (&x.dof_pos, &bs.dof_pos) {
            for (n, v) in qb.iter() {
                if let Some(u) = qa.get(n) {
                    joint = joint.max((u - v).abs());
                }
            }
        }
    }
    compared.then_some((obj, joint))
}

/// Requests from the panel (which cannot borrow the whole world while it draws).
#[derive(Message, Clone, Debug)]
pub enum TrajectoryCommand {
    StartRecording {
        path: PathBuf,
        every: u32,
    },
    StopRecording,
    StartReplay {
        path: PathBuf,
        mode: ReplayMode,
        demo: usize,
    },
    /// State replay: show recorded state `index` (pauses the session).
    Scrub {
        index: usize,
    },
}

/// Where the panel's Record button writes: `recordings/armsim-<unix time in ms>.json.gz`.
pub fn default_recording_path() -> PathBuf {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    PathBuf::from("recordings").join(format!("armsim-{ms}.json.gz"))
}

fn handle_commands(world: &mut World) {
    let commands: Vec<TrajectoryCommand> = world
        .resource_mut::<Messages<TrajectoryCommand>>()
        .drain()
        .collect();
    for cmd in commands {
        match cmd {
            TrajectoryCommand::StartRecording { path, every } => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
                    && let Err(e) = std::fs::create_dir_all(dir)
                {
                    error!("cannot create {}: {e}", dir.display());
                    continue;
                }
                if let Err(e) = start_recording(world, &path, every) {
                    error!("cannot record to {}: {e}", path.display());
                    world.resource_mut::<Recording>().last = Some(Err(e.to_string()));
                }
            }
            TrajectoryCommand::StopRecording => {
                finish_recording(world);
            }
            TrajectoryCommand::StartReplay { path, mode, demo } => {
                if let Err(e) = start_replay(world, &path, mode, demo) {
                    error!("cannot replay {}: {e}", path.display());
                }
            }
            TrajectoryCommand::Scrub { index } => {
                let Some(frame) = world
                    .get_resource::<Replay>()
                    .and_then(|r| r.demo.states.get(index).cloned())
                else {
                    continue;
                };
                if let Err(e) = with_sim_mut(world, |sim| state::set_frame(sim, &frame)) {
                    warn!("replay: state {index} does not fit: {e}");
                    continue;
                }
                let mut replay = world.resource_mut::<Replay>();
                replay.step = (index + 1) * replay.every as usize;
                replay.finished = false;
                replay.failed = None;
                world.write_message(SessionRequest(SessionCommand::Pause));
            }
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<TrajectoryCommand>()
        // Before the frame's steps, so no step of the new scene lands in the old demo.
        .add_systems(
            Update,
            (handle_commands, new_demo_on_reset).before(crate::sim::ClockSystems),
        )
        .init_resource::<Recording>()
        .add_systems(SimStep, replay_adapt.in_set(SimSystems::Adapt))
        .add_systems(
            SimStep,
            (replay_publish, record_step)
                .chain()
                .in_set(SimSystems::Publish),
        )
        .add_systems(Last, finish_on_exit);
}
