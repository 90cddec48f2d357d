//! A LeRobot episode replayed in armsim (`--replay-lerobot DATASET [--episode N]`): the check a
//! sim-to-real user runs first. The episode's `action` rows, converted back from the dataset's
//! units (its robot type's schema, or `--lerobot-robot`), drive the simulated arm at the
//! dataset's rate, and the simulated `observation.state` is compared with the recorded one,
//! frame by frame.
//!
//! The arm starts at the episode's first recorded state. Action row `k` is what was sent after
//! observation `k` was read (LeRobot's record loop), so it drives the steps from frame `k` to
//! frame `k + 1`, and the state after them is compared with observation `k + 1`. The report
//! gives, per joint and in the dataset's units, the RMS and largest difference and the first
//! frame past the threshold (`--replay-threshold`, degrees; the gripper's 0–100 takes it as is).
//! Headless, armsim exits when the episode ends and prints the report; in the window the session
//! pauses there. A scene reset stops the replay. An episode armsim recorded from a varied start
//! (its `armsim/episode_seed`) starts from the same draw of the scene's `randomize` block.

use std::path::PathBuf;

use armsim_lerobot::{LeRobotRobot, RecordedEpisode, Schema, read_episode};
use bevy::app::AppExit;
use bevy::prelude::*;

use super::schema::{schema_for, steps_per_frame};
use crate::scene::Scene;
use crate::session::{
    Session, SessionCommand, SessionEvent, SessionNotice, SessionRequest, SessionState,
};
use crate::sim::{
    EpisodeStartNow, JointCommand, JointTargets, SimClock, SimRef, SimScene, SimStep, SimSystems,
    install, with_sim_mut, world_from_seed,
};

/// The threshold unless `--replay-threshold` says otherwise, in degrees.
pub const DEFAULT_THRESHOLD_DEG: f32 = 5.0;

/// What to replay and how to judge it.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub root: PathBuf,
    pub episode: u64,
    /// Degrees (a percentage for a 0–100 gripper, radians converted for a dataset in radians).
    pub threshold_deg: f32,
    /// Read the dataset with this robot's schema, whatever its `robot_type` says.
    pub robot: Option<LeRobotRobot>,
    /// Exit the app when the episode ends (headless).
    pub exit_when_done: bool,
}

/// Per joint, how far the simulation went from the recording.
#[derive(Clone, Debug, Default)]
struct JointDivergence {
    sum_sq: f64,
    max: f32,
    max_frame: usize,
    first_past: Option<usize>,
}

/// The replay under way, and what it measured so far.
#[derive(Resource)]
pub struct LeRobotReplay {
    root: PathBuf,
    episode: u64,
    robot_type: String,
    fps: u32,
    every: u64,
    /// The dataset's names (`<name>.pos`) and units, in its order.
    names: Vec<String>,
    units: Vec<&'static str>,
    schema: Schema,
    /// Per frame, the joints' targets in the file's order and units.
    targets: Vec<Vec<f32>>,
    /// Per frame, the recorded state in the dataset's units and order.
    states: Vec<Vec<f32>>,
    threshold: Vec<f32>,
    threshold_deg: f32,
    /// Steps run since the start.
    steps: u64,
    /// Frames compared (1, 2, …: frame 0 is where the arm starts).
    compared: usize,
    joints: Vec<JointDivergence>,
    exit_when_done: bool,
    /// Why it stopped before the end, if it did.
    stopped: Option<String>,
    pub finished: bool,
}

/// Reads the episode, checks it fits the scene's robot, puts the arm at its first recorded
/// state and starts the session.
pub fn start(world: &mut World, options: &ReplayOptions) -> Result<(), String> {
    let recorded = read_episode(&options.root, options.episode).map_err(|e| e.to_string())?;
    let every = steps_per_frame(recorded.fps).map_err(|e| {
        format!(
            "the dataset cannot be replayed at its {} fps: {e}",
            recorded.fps
        )
    })?;
    let scene = world.resource::<SimScene>().0.clone();
    // --lerobot-robot, else the dataset's own robot type where it is one, else the scene's key
    // or the file's joints (`schema_for`).
    let (robot, from) = match options.robot {
        Some(r) => (Some(r), "--lerobot-robot"),
        None => (
            LeRobotRobot::parse(&recorded.robot_type).ok(),
            "its robot_type",
        ),
    };
    let schema = schema_for(&scene, robot).map_err(|e| match robot {
        Some(r) => format!("the dataset is read as {r}'s ({from}), and {e}"),
        None => e,
    })?;
    check_names(&recorded, &schema)?;
    if recorded.states.len() < 2 {
        return Err(format!(
            "episode {} has {} frame(s): nothing to compare",
            options.episode,
            recorded.states.len()
        ));
    }
    let targets: Vec<Vec<f32>> = recorded
        .actions
        .iter()
        .map(|a| schema.joints_of(a))
        .collect();
    if let Some((k, _)) = targets
        .iter()
        .enumerate()
        .find(|(_, t)| t.iter().any(|v| !v.is_finite()))
    {
        return Err(format!(
            "action row {k} holds a value that is not a finite number"
        ));
    }
    let start = schema.joints_of(&recorded.states[0]);
    if start.iter().any(|v| !v.is_finite()) {
        return Err("the first observation.state holds a value that is not a finite number".into());
    }
    let drawn = start_as_recorded(world, &scene, &recorded)?;
    with_sim_mut(world, |sim| {
        let still = vec![0.0; start.len()];
        sim.set_joint_state(&start, &still);
    });
    world.resource_mut::<JointTargets>().commands = hold(&start);
    world.write_message(SessionRequest(SessionCommand::Start));
    let names: Vec<String> = recorded
        .state_names
        .iter()
        .map(|n| format!("{n}.pos"))
        .collect();
    info!(
        "replaying LeRobot episode {} of {} ({} episode(s), robot type {:?}, {} fps): {} \
         frames, each action driving {every} steps, the arm starting at the first recorded state{}",
        options.episode,
        options.root.display(),
        recorded.total_episodes,
        recorded.robot_type,
        recorded.fps,
        recorded.states.len(),
        match drawn {
            Some(seed) => format!(", the scene's objects as drawn from episode seed {seed}"),
            None => String::new(),
        }
    );
    world.insert_resource(LeRobotReplay {
        root: options.root.clone(),
        episode: options.episode,
        robot_type: recorded.robot_type.clone(),
        fps: recorded.fps,
        every,
        joints: vec![JointDivergence::default(); names.len()],
        names,
        units: schema.units(),
        threshold: schema.threshold_of(options.threshold_deg),
        threshold_deg: options.threshold_deg,
        schema,
        targets,
        states: recorded.states,
        steps: 0,
        compared: 0,
        exit_when_done: options.exit_when_done,
        stopped: None,
        finished: false,
    });
    Ok(())
}

/// An episode armsim recorded from a varied start (its `armsim/episode_seed`) starts from the
/// same draw of the scene's `randomize` block: the objects where they were. Returns the seed.
fn start_as_recorded(
    world: &mut World,
    scene: &Scene,
    recorded: &RecordedEpisode,
) -> Result<Option<u64>, String> {
    let Some(seed) = recorded.episode_seed else {
        return Ok(None);
    };
    if scene.config.extensions.armsim.randomize.is_none() {
        warn!(
            "episode {} was recorded from a varied start (episode seed {seed}), but this scene has \
             no extensions.armsim.randomize block: its objects start where the scene file puts them",
            recorded.episode
        );
        return Ok(None);
    }
    let episode = world.resource::<SimClock>().episode;
    let (sim, start) = world_from_seed(scene, episode, seed)
        .map_err(|e| format!("the episode's start cannot be drawn again: {e}"))?;
    install(world, sim);
    world.resource_mut::<EpisodeStartNow>().0 = Some(start);
    Ok(Some(seed))
}

/// The dataset's `observation.state` and `action` must be the schema's joints, in its order.
fn check_names(recorded: &RecordedEpisode, schema: &Schema) -> Result<(), String> {
    let want = schema.names();
    for (what, names) in [
        ("observation.state", &recorded.state_names),
        ("action", &recorded.action_names),
    ] {
        if *names != want {
            return Err(format!(
                "the dataset's {what} holds {} where this scene's robot ({}) has {}",
                names.join(", "),
                schema.robot_type(),
                want.join(", ")
            ));
        }
    }
    Ok(())
}

/// Position commands holding `q` (file order).
fn hold(q: &[f32]) -> Vec<JointCommand> {
    q.iter()
        .map(|&target| JointCommand::Position {
            target,
            velocity: 0.0,
        })
        .collect()
}

impl LeRobotReplay {
    /// The frame whose action drives the next step.
    fn frame(&self) -> usize {
        (self.steps / self.every) as usize
    }

    /// Steps until the episode's last frame (0 once it is reached).
    pub fn steps_left(&self) -> u64 {
        if self.finished {
            return 0;
        }
        ((self.states.len() as u64 - 1) * self.every).saturating_sub(self.steps)
    }

    /// What the replay measured, one line per joint.
    pub fn report(&self) -> String {
        let mut text = format!(
            "LeRobot replay of {} episode {} ({}, {} fps): {} of {} frames compared",
            self.root.display(),
            self.episode,
            if self.robot_type.is_empty() {
                "no robot type"
            } else {
                &self.robot_type
            },
            self.fps,
            self.compared,
            self.states.len() - 1,
        );
        if let Some(why) = &self.stopped {
            text.push_str(&format!(" (stopped: {why})"));
        }
        text.push_str(&format!(
            "; simulated observation.state against the recorded one, threshold {}°:",
            self.threshold_deg
        ));
        let width = self.names.iter().map(String::len).max().unwrap_or(0);
        let mut first: Option<(usize, &str)> = None;
        for (k, j) in self.joints.iter().enumerate() {
            let rms = if self.compared == 0 {
                0.0
            } else {
                (j.sum_sq / self.compared as f64).sqrt()
            };
            let unit = self.units[k];
            let past = match j.first_past {
                Some(f) => format!("first past {}: frame {f}", self.threshold[k]),
                None => "within the threshold".to_string(),
            };
            text.push_str(&format!(
                "\n  {:width$}  rms {rms:.3} {unit}, max {:.3} {unit} (frame {}), {past}",
                self.names[k], j.max, j.max_frame
            ));
            if let Some(f) = j.first_past
                && first.is_none_or(|(g, _)| f < g)
            {
                first = Some((f, &self.names[k]));
            }
        }
        text.push_str(&match first {
            Some((f, name)) => format!("\n  first frame past the threshold: {f} ({name})"),
            None => "\n  every joint stayed within the threshold".to_string(),
        });
        text
    }

    fn finish(
        &mut self,
        commands: &mut MessageWriter<SessionRequest>,
        exit: &mut MessageWriter<AppExit>,
    ) {
        self.finished = true;
        info!("{}", self.report());
        commands.write(SessionRequest(SessionCommand::Pause));
        if self.exit_when_done {
            exit.write(AppExit::Success);
        }
    }
}

/// Each step: the action of the frame it belongs to.
fn drive(replay: Option<Res<LeRobotReplay>>, mut targets: ResMut<JointTargets>) {
    let Some(replay) = replay else { return };
    if replay.finished {
        return;
    }
    let frame = replay.frame().min(replay.targets.len() - 1);
    targets.commands = hold(&replay.targets[frame]);
}

/// After each step: at a frame's end, the simulated state against the recorded one.
fn compare(
    replay: Option<ResMut<LeRobotReplay>>,
    session: Res<Session>,
    sim: SimRef,
    mut commands: MessageWriter<SessionRequest>,
    mut exit: MessageWriter<AppExit>,
) {
    let Some(mut replay) = replay else { return };
    if replay.finished || session.state() != SessionState::Running {
        return;
    }
    replay.steps += 1;
    if !replay.steps.is_multiple_of(replay.every) {
        return;
    }
    let frame = replay.frame();
    let now = replay.schema.row_of(&sim.view().joint_positions());
    let r = &mut *replay;
    for (k, j) in r.joints.iter_mut().enumerate() {
        let d = (now[k] - r.states[frame][k]).abs();
        j.sum_sq += f64::from(d) * f64::from(d);
        // Frames are compared from 1: a max_frame of 0 is none yet.
        if d > j.max || j.max_frame == 0 {
            j.max = d;
            j.max_frame = frame;
        }
        if d > r.threshold[k] && j.first_past.is_none() {
            j.first_past = Some(frame);
        }
    }
    r.compared = frame;
    if frame + 1 >= r.states.len() {
        replay.finish(&mut commands, &mut exit);
    }
}

/// A scene reset puts the arm elsewhere: the replay stops there.
fn stop_on_reset(
    mut events: MessageReader<SessionNotice>,
    replay: Option<ResMut<LeRobotReplay>>,
    mut commands: MessageWriter<SessionRequest>,
    mut exit: MessageWriter<AppExit>,
) {
    let resets = events
        .read()
        .filter(|e| e.0 == SessionEvent::ResetDone)
        .count();
    let Some(mut replay) = replay else { return };
    if resets > 0 && !replay.finished {
        let frame = replay.frame();
        replay.stopped = Some(format!("the scene was reset at frame {frame}"));
        replay.finish(&mut commands, &mut exit);
    }
}

/// The replay, if one was started: its report for the exit.
pub fn report(world: &World) -> Option<String> {
    world
        .get_resource::<LeRobotReplay>()
        .map(LeRobotReplay::report)
}

/// Headless, a frame's batch of steps stops at the episode's last frame, so nothing runs, or
/// is recorded, past the episode: `headless::run` sets each frame's cap, this only lowers it.
/// (The window sets no cap, so one lowered here would stay; there the session's pause at the
/// end stops the steps a frame later.)
fn stop_at_the_end(replay: Option<Res<LeRobotReplay>>, mut clock: ResMut<SimClock>) {
    let Some(replay) = replay else { return };
    if !replay.exit_when_done {
        return;
    }
    let left = u32::try_from(replay.steps_left()).unwrap_or(u32::MAX);
    if clock.max_steps_this_frame > left {
        clock.max_steps_this_frame = left;
    }
}

pub fn plugin(app: &mut App) {
    app.add_systems(SimStep, drive.in_set(SimSystems::Adapt))
        .add_systems(SimStep, compare.in_set(SimSystems::Publish))
        .add_systems(
            Update,
            (stop_on_reset, stop_at_the_end)
                .chain()
                .before(crate::sim::ClockSystems),
        );
}
