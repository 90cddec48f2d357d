//! A session recorded as a LeRobot v3.0 dataset (`--record-lerobot DIR`, the panel's Record
//! LeRobot button): at the dataset's rate (30 fps unless `--lerobot-fps` says otherwise; a
//! divisor of the 240 Hz step rate) each step that lands on a frame while the session is RUNNING
//! becomes a row: `observation.state` (joint positions) and `action` (joint targets: a position
//! command's target, the target an agent's PD effector or a lockstep client's integrated
//! velocities aim at, the joint's position under a bare velocity or torque), both named
//! `<joint>.pos` in the file's units, or as a LeRobot robot's motors in its units
//! (`--lerobot-robot`, `schema.rs`), plus one image per scene camera (`observation.images.<camera>`, H.264) when the
//! cameras render (the window, or headless with `--cameras`, which `--record-lerobot` implies).
//!
//! **Images and rows.** While recording with cameras, each frame's batch of steps ends on a
//! row's step when it reaches one (`SimClock::align_frames_to`; the steps past it run next
//! frame, so real time is kept), and the cameras, which render on the frames where their next
//! image is due (`ui::cameras`), show exactly a row's step. A window drawing fewer frames per
//! second than the dataset's rate renders one row of several; the others take that image. A
//! row waits until every camera's image of its step (or a later one) has come back from the
//! GPU; it then takes each camera's image of that step, or the newest one before it if that
//! camera skipped it (a slow frame), which the log counts.
//!
//! Episodes: one starts at the first recorded frame, and ends at a scene reset, at the referee's
//! `Success` or `TimeUp`, at a kick-off (which starts the next one) and when recording stops;
//! frames after `Success`/`TimeUp` wait for the next reset or kick-off. An episode under one
//! second is dropped, with a log line: the moments between a client's connect and its reset,
//! or between a reset and a kick-off, are not demonstrations. Each episode's task is the
//! rule book's (`RuleBook::task`). Rows and images are queued to `armsim-lerobot`'s
//! `BackgroundWriter`, which encodes and writes on a thread of its own (the frame waits for it
//! only when it falls 64 jobs behind, and the log counts those waits). The dataset is finished
//! when recording stops (on exit too: window close, Ctrl-C, SIGTERM), so a killed session still
//! leaves a dataset that loads; a write that fails makes the exit an error. A second stop request
//! (`headless::hurry_requested`) discards the open episode instead of finishing it.
//!
//! **A recording of nothing.** A dataset without an episode loads nowhere (neither LeRobot nor
//! Rerun opens it), so one that ends without any says why in one error line (the session never
//! ran, or every episode was under a second), is removed (the folder too where armsim created
//! it, and only while it holds nothing but the writer's `data/`, `meta/` and `videos/`), and
//! its outcome is an error, so the exit is too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use armsim_lerobot::{
    BackgroundWriter, CameraSpec, DatasetSpec, EpisodeValue, Finished, LeRobotRobot, Schema,
    SharedImage, WriterEvent,
};
use bevy::app::AppExit;
use bevy::prelude::*;

use crate::referee::plugin::Referee;
use crate::referee::{PlayMode, RefereeEvent};
use crate::scene::variation::{self, EpisodeStart};
use crate::session::{Session, SessionEvent, SessionNotice, SessionRequest, SessionState};
use crate::sim::{EpisodeStartNow, SIM_HZ, SimClock, SimRef, SimScene, SimStep, SimSystems};
use crate::state::CameraFrame;
use crate::ui::camera_frames::CameraFrameReady;

mod cleanup;
mod control;
mod episode_columns;
pub mod replay;
mod schema;

use cleanup::remove_empty_dataset;
pub use control::DatasetRequests;
pub use schema::{DEFAULT_FPS, LeRobotDefaults, schema_for, steps_per_frame};

/// What waits, in order, for the rows' camera images: an episode's start and end travel in the
/// same queue as its rows, so the rows of an episode that just ended still get the images of
/// their own steps, which come back from the GPU a frame or more after a reset.
enum Pending {
    /// The task, and the episode columns' values (`start.rs`).
    Begin(String, Vec<EpisodeValue>),
    Row(Row),
    /// Why the episode ended.
    End(String),
    /// The open episode is dropped (a second stop request), its rows already with the writer.
    Discard,
}

/// One row waiting for its camera images.
struct Row {
    /// `SimClock::episode` (resets since start) and `steps` of the row.
    episode: u64,
    step: u64,
    state: Vec<f32>,
    action: Vec<f32>,
}

/// Images kept per camera while rows wait for them.
const KEPT_IMAGES: usize = 64;
/// Rows that may wait for images before the recorder gives up on the cameras (10 s at 30 fps).
const MAX_PENDING_ROWS: usize = 300;

struct Active {
    /// Encodes and writes on a thread of its own, so the frame only queues rows and images.
    writer: BackgroundWriter,
    /// How the joints become `observation.state` and `action`: names, order, units.
    schema: Schema,
    /// Why each ended episode ended, until the writer thread reports it saved.
    ending: VecDeque<String>,
    root: PathBuf,
    /// Steps per dataset frame.
    every: u64,
    episode_open: bool,
    /// After `Success` or `TimeUp`: no frames until a reset or a kick-off.
    waiting: bool,
    /// The referee log's last event seen.
    cursor: u64,
    /// The cameras whose images each row carries, in the dataset's order.
    cameras: Vec<String>,
    pending: VecDeque<Pending>,
    /// Rows in `pending`.
    pending_rows: usize,
    /// Per camera (dataset order), its newest images, oldest first.
    images: Vec<VecDeque<Arc<CameraFrame>>>,
    /// Row images taken from an earlier step because a camera skipped the row's.
    stale_images: u64,
    /// Rows queued since the start: none means the session never ran while recording.
    rows: u64,
    /// armsim created `root` (it did not exist): a recording of nothing removes it.
    created_root: bool,
    /// The last episode the writer saved (`episode N: M frames (why)`).
    last_saved: Option<String>,
}

/// The LeRobot recording, if one runs, and how the last one ended.
#[derive(Resource, Default)]
pub struct LeRobotRecording {
    active: Option<Active>,
    /// What the last finished recording wrote (`root: N episodes, M frames`) or why it failed.
    pub last: Option<Result<String, String>>,
    /// The last recording ended without an episode (`last` says why, and it is already logged).
    pub nothing_recorded: bool,
}

impl LeRobotRecording {
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// (folder, episodes so far, frames so far) of the running recording.
    pub fn progress(&self) -> Option<(&Path, u64, u64)> {
        self.active
            .as_ref()
            .map(|a| (a.root.as_path(), a.writer.episodes(), a.writer.frames()))
    }

    /// The open episode's rows so far (`None`: no episode is open), and the last episode the
    /// writer saved, for the panel.
    pub fn episode_status(&self) -> Option<(Option<u64>, Option<&str>)> {
        self.active.as_ref().map(|a| {
            // The open episode's rows still waiting for images follow its `Begin` in the queue;
            // where that `Begin` has reached the writer already, so have its first rows.
            let waiting = a
                .pending
                .iter()
                .rev()
                .take_while(|p| !matches!(p, Pending::Begin(..)))
                .filter(|p| matches!(p, Pending::Row(_)))
                .count() as u64;
            let begun = !a.pending.iter().any(|p| matches!(p, Pending::Begin(..)));
            let written = if begun {
                a.writer.open_episode_frames().unwrap_or(0)
            } else {
                0
            };
            let open = a.episode_open.then_some(written + waiting);
            (open, a.last_saved.as_deref())
        })
    }
}

/// What the panel, the keys and the protocols ask of the recorder (`control::DatasetRequests`).
#[derive(Message, Clone, Debug)]
pub enum LeRobotCommand {
    Start {
        root: PathBuf,
    },
    /// End the open episode now and keep it (if it is a second or longer).
    EndEpisode,
    /// Discard the open episode and reset the scene, to record it again from the start.
    Rerecord,
    Stop,
}

/// Starts recording into `root` (which must not hold a dataset yet) at `fps`. The scene's cameras
/// are recorded when the app renders them (it has the cameras' `CameraFrameReady`: the window, or
/// `offscreen::headless_render_app`); an app without a renderer records joints only, and the
/// log says so.
pub fn start(
    world: &mut World,
    root: &Path,
    fps: u32,
    robot: Option<LeRobotRobot>,
) -> Result<(), String> {
    let every = steps_per_frame(fps)?;
    let schema = schema_for(&world.resource::<crate::sim::SimScene>().0, robot)?;
    let rendering = world.contains_resource::<Messages<CameraFrameReady>>();
    let scene_cameras = world.resource::<crate::sim::SimScene>().0.cameras();
    let cameras: Vec<CameraSpec> = if rendering {
        scene_cameras
            .iter()
            .map(|c| CameraSpec::new(c.name.clone(), c.width, c.height))
            .collect()
    } else {
        if !scene_cameras.is_empty() {
            warn!(
                "the LeRobot dataset gets no images: {} camera(s) in the scene, but this app \
                 renders none (headless: --cameras renders them offscreen)",
                scene_cameras.len()
            );
        }
        Vec::new()
    };
    if let Some(c) = scene_cameras
        .iter()
        .find(|c| rendering && (f64::from(c.rate_hz) - f64::from(fps)).abs() > 1e-6)
    {
        return Err(format!(
            "camera {} renders at {} Hz but the dataset runs at {fps} fps: give the cameras the \
             dataset's rate (or pass --lerobot-fps {})",
            c.name, c.rate_hz, c.rate_hz
        ));
    }
    let spec = DatasetSpec {
        fps,
        robot_type: schema.robot_type().to_string(),
        joint_names: schema.names(),
        cameras: cameras.clone(),
        episode_columns: episode_columns::columns(&world.resource::<SimScene>().0),
    };
    let created_root = !root.exists();
    let writer = BackgroundWriter::create(root, spec).map_err(|e| e.to_string())?;
    let cursor = world.resource::<Referee>().last_seq();
    let units = match schema.robot() {
        Some(r) => format!(
            "{r}'s schema: {} in degrees, {} 0–100 from closed to open",
            r.motors()
                .iter()
                .filter(|m| **m != r.gripper())
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            r.gripper()
        ),
        None => "the file's joints in its units (radians, metres)".to_string(),
    };
    info!(
        "recording a LeRobot v3.0 dataset into {} at {fps} fps, robot type {} ({} joints, \
         {units}; cameras: {})",
        root.display(),
        schema.robot_type(),
        schema.names().len(),
        if cameras.is_empty() {
            "none, so no images".to_string()
        } else {
            cameras
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    for note in schema.notes() {
        info!("LeRobot schema: {note}");
    }
    world.resource_mut::<LeRobotRecording>().active = Some(Active {
        writer,
        schema,
        ending: VecDeque::new(),
        root: root.to_path_buf(),
        every,
        episode_open: false,
        waiting: false,
        cursor,
        images: vec![VecDeque::new(); cameras.len()],
        cameras: cameras.into_iter().map(|c| c.name).collect(),
        pending: VecDeque::new(),
        pending_rows: 0,
        stale_images: 0,
        rows: 0,
        created_root,
        last_saved: None,
    });
    Ok(())
}

/// Ends the recording (if any) and writes the dataset, waiting for the writer thread. Safe to
/// call more than once.
pub fn finish(world: &mut World) -> Option<Result<String, String>> {
    let mut rec = world.get_resource_mut::<LeRobotRecording>()?;
    let mut active = rec.active.take()?;
    if crate::headless::hurry_requested() {
        let dropped = active.drop_open_episode();
        info!(
            "LeRobot: finishing fast on the second stop request: the open episode ({dropped} \
             row(s)) is discarded, finished episodes are kept"
        );
    } else {
        // The open episode keeps its last rows, with the newest images there are.
        active.end_episode("recording stopped");
    }
    active.flush(true);
    let (outcome, nothing) = active.close(None);
    match &outcome {
        Ok(s) => info!("LeRobot dataset written: {s}"),
        Err(e) if nothing => error!("{e}"),
        Err(e) => error!("the LeRobot dataset could not be written: {e}"),
    }
    let mut rec = world.resource_mut::<LeRobotRecording>();
    rec.last = Some(outcome.clone());
    rec.nothing_recorded = nothing;
    Some(outcome)
}

/// The outcome of the recording, finishing it first if it still runs (headless exit).
pub fn outcome(world: &mut World) -> Option<Result<String, String>> {
    finish(world).or_else(|| world.get_resource::<LeRobotRecording>()?.last.clone())
}

impl Active {
    /// Ends the open episode, if any, once its rows have their images.
    fn end_episode(&mut self, why: &str) {
        if !self.episode_open {
            return;
        }
        self.episode_open = false;
        self.pending.push_back(Pending::End(why.to_string()));
        self.flush(false);
    }

    /// Drops the open episode, if any: its rows still waiting for images never reach the writer,
    /// and the writer discards those it has (the frames already queued to it are still
    /// encoded). Returns the rows dropped.
    fn drop_open_episode(&mut self) -> u64 {
        if !self.episode_open {
            return 0;
        }
        self.episode_open = false;
        let mut dropped = self.writer.open_episode_frames().unwrap_or(0);
        // Everything after the open episode's `Begin` is its rows.
        while let Some(Pending::Row(_)) = self.pending.back() {
            self.pending.pop_back();
            self.pending_rows -= 1;
            dropped += 1;
        }
        if let Some(Pending::Begin(..)) = self.pending.back() {
            // It never reached the writer.
            self.pending.pop_back();
        } else {
            self.pending.push_back(Pending::Discard);
        }
        dropped
    }

    /// Hands the episode's end to the writer, or drops it when it is too short.
    fn close_episode(&mut self, why: &str) {
        if self.stale_images > 0 {
            info!(
                "LeRobot episode: {} image(s) taken from the step before the row's (a camera \
                 skipped a frame)",
                self.stale_images
            );
            self.stale_images = 0;
        }
        // A moment between a client's connect and its reset, or between a reset and a
        // kick-off, is not a demonstration.
        let frames = self.writer.open_episode_frames().unwrap_or(0);
        let min = SIM_HZ as u64 / self.every;
        if frames < min {
            self.writer.discard_episode();
            info!("LeRobot episode dropped ({why}): {frames} frame(s), under a second");
            return;
        }
        self.ending.push_back(why.to_string());
        self.writer.end_episode();
    }

    /// Waits for the writer thread and finishes the dataset; `error` (why the recording stopped
    /// early) makes the outcome an error even when the dataset was written. A dataset without
    /// an episode is removed and is an error too (the `bool`), saying why.
    fn close(mut self, error: Option<&str>) -> (Result<String, String>, bool) {
        let root = self.root.display().to_string();
        let queued = self.writer.episodes();
        let waits = self.writer.waits();
        if waits > 0 {
            info!(
                "LeRobot: the frame waited {waits} time(s) for the writer thread (encoding behind)"
            );
        }
        let Finished {
            result,
            failure,
            events,
        } = self.writer.finish();
        report(&mut self.ending, &mut self.last_saved, events);
        let error = error.map(str::to_string).or(failure);
        let saved = result.as_ref().map_or(queued, |s| s.episodes);
        if saved == 0 {
            let why = if self.rows == 0 {
                "the session never ran (rows are recorded only while it is RUNNING: pass --start, \
                 connect a client, or press Start)"
            } else {
                "every episode was under one second and was dropped"
            };
            let cleaned = remove_empty_dataset(&self.root, self.created_root);
            let also = error.map_or(String::new(), |e| {
                format!(" (the recording also failed: {e})")
            });
            return (
                Err(format!(
                    "no LeRobot episode was recorded into {root}: {why}; {cleaned}{also}"
                )),
                true,
            );
        }
        let outcome = match (result, error) {
            (Ok(s), None) => Ok(format!("{root}: {s}")),
            (Ok(s), Some(e)) => Err(format!("{root}: {e} (finished with {s})")),
            (Err(f), Some(e)) => Err(format!("{root}: {e}; finishing failed too: {f}")),
            (Err(f), None) => Err(format!("{root}: {f}")),
        };
        (outcome, false)
    }

    /// Queues `row`; it is written once its images are in (at once without cameras). The first
    /// row of an episode begins it, with `start`'s values where the dataset has episode columns.
    fn push(
        &mut self,
        row: Row,
        task: &str,
        start: impl FnOnce() -> EpisodeStart,
    ) -> Result<(), String> {
        if !self.episode_open {
            let values = match self.writer.spec().episode_columns.is_empty() {
                true => Vec::new(),
                false => episode_columns::values(&start()),
            };
            self.pending
                .push_back(Pending::Begin(task.to_string(), values));
            self.episode_open = true;
        }
        self.pending.push_back(Pending::Row(row));
        self.pending_rows += 1;
        self.rows += 1;
        self.flush(false);
        if self.pending_rows > MAX_PENDING_ROWS {
            return Err(format!(
                "no camera images came back for {} rows ({} s): the cameras are not rendering",
                self.pending_rows,
                self.pending_rows as u64 * self.every / SIM_HZ as u64
            ));
        }
        Ok(())
    }

    /// Keeps a camera image for the rows waiting on it.
    fn take_image(&mut self, frame: &Arc<CameraFrame>) {
        let Some(k) = self.cameras.iter().position(|c| *c == frame.camera) else {
            return;
        };
        let kept = &mut self.images[k];
        kept.push_back(frame.clone());
        while kept.len() > KEPT_IMAGES {
            kept.pop_front();
        }
        self.flush(false);
    }

    /// Writes the waiting rows whose images are all in, in order, with the episode starts and
    /// ends between them. `force` (recording stops) does not wait: a row takes the newest image
    /// before its step, and one without any is dropped.
    fn flush(&mut self, force: bool) {
        while let Some(next) = self.pending.front() {
            let row = match next {
                Pending::Begin(..) => {
                    if let Some(Pending::Begin(task, values)) = self.pending.pop_front() {
                        self.writer.begin_episode_with(&task, values);
                    }
                    continue;
                }
                Pending::End(why) => {
                    let why = why.clone();
                    self.pending.pop_front();
                    self.close_episode(&why);
                    continue;
                }
                Pending::Discard => {
                    self.pending.pop_front();
                    self.writer.discard_episode();
                    continue;
                }
                Pending::Row(row) => row,
            };
            let at = (row.episode, row.step);
            let mut chosen = Vec::with_capacity(self.cameras.len());
            for kept in &self.images {
                // Nothing newer may still come once an image of this step or later is in.
                if !force && !kept.iter().any(|f| (f.episode, f.step) >= at) {
                    return;
                }
                let exact = kept.iter().find(|f| (f.episode, f.step) == at);
                let before = kept.iter().rev().find(|f| (f.episode, f.step) < at);
                let after = kept.iter().find(|f| (f.episode, f.step) > at);
                let Some(image) = exact.or(before).or(after).cloned() else {
                    if force {
                        break;
                    }
                    return;
                };
                if exact.is_none() {
                    self.stale_images += 1;
                }
                chosen.push(image);
            }
            let Some(Pending::Row(row)) = self.pending.pop_front() else {
                continue; // the front was the row above
            };
            self.pending_rows -= 1;
            if chosen.len() < self.cameras.len() {
                continue;
            }
            let images = chosen
                .into_iter()
                .map(|f| Arc::new(f.rgb.clone()) as SharedImage)
                .collect();
            self.writer.push_frame(row.state, row.action, images);
        }
    }
}

/// Logs what the writer thread saved, with why each episode ended (`ending`, oldest first); its
/// failure, if it reported one.
fn report(
    ending: &mut VecDeque<String>,
    last_saved: &mut Option<String>,
    events: Vec<WriterEvent>,
) -> Option<String> {
    let mut failure = None;
    for event in events {
        match event {
            WriterEvent::EpisodeSaved(summary) => {
                let why = ending.pop_front().unwrap_or_default();
                info!("LeRobot episode ended ({why}): {summary}");
                *last_saved = Some(format!(
                    "episode {}: {} frames ({why})",
                    summary.episode_index, summary.length
                ));
            }
            // The writer already left nothing of it; the next episode takes its index.
            WriterEvent::EpisodeDropped { message, .. } => {
                ending.pop_front();
                error!("LeRobot: {message}");
            }
            WriterEvent::Failed(e) => failure = Some(e),
        }
    }
    failure
}

/// After each step: episode boundaries from the referee, then the step's row when it lands on
/// a frame of a RUNNING session.
fn record_step(
    mut rec: ResMut<LeRobotRecording>,
    referee: Res<Referee>,
    session: Res<Session>,
    clock: Res<SimClock>,
    sim: SimRef,
    drawn: Res<EpisodeStartNow>,
    scene: Res<SimScene>,
) {
    let Some(active) = rec.active.as_mut() else {
        return;
    };
    let events: Vec<RefereeEvent> = referee
        .since(active.cursor)
        .map(|e| e.event.clone())
        .collect();
    active.cursor = referee.last_seq();
    for event in events {
        match event {
            RefereeEvent::PlayModeChanged { to, .. }
                if matches!(to, PlayMode::Success | PlayMode::TimeUp) =>
            {
                active.end_episode(&format!("{to:?}"));
                active.waiting = true;
            }
            RefereeEvent::KickOff => {
                active.end_episode("kick-off");
                active.waiting = false;
            }
            _ => {}
        }
    }
    if !active.waiting
        && session.state() == SessionState::Running
        && clock.steps.is_multiple_of(active.every)
    {
        let view = sim.view();
        let state = active.schema.row_of(&view.joint_positions());
        // The position each joint is told to reach: a position command's target, or the aim
        // its source gave a velocity or torque (an agent's PD target, integrated velocities).
        let action = active.schema.row_of(&view.action_positions());
        let row = Row {
            episode: clock.episode,
            step: clock.steps,
            state,
            action,
        };
        // What the world started from at its last reset: the draw, or the file's own start.
        let start = || {
            drawn
                .0
                .clone()
                .unwrap_or_else(|| variation::describe(&scene.0, clock.episode, None))
        };
        if let Err(e) = active.push(row, referee.book.task(), start) {
            stop_on_error(&mut rec, &e);
        }
    }
}

/// A recording that cannot go on stops; the dataset is finished with the episodes it has, and
/// the error is kept (the exit then fails).
fn stop_on_error(rec: &mut LeRobotRecording, e: &str) {
    error!("LeRobot recording stopped: {e}");
    let Some(active) = rec.active.take() else {
        return;
    };
    let (outcome, nothing) = active.close(Some(e));
    if let (Err(e), true) = (&outcome, nothing) {
        error!("{e}");
    }
    rec.last = Some(outcome);
    rec.nothing_recorded = nothing;
}

/// What the writer thread saved (logged) or why it failed (the recording stops).
fn poll_writer(mut rec: ResMut<LeRobotRecording>) {
    let Some(active) = rec.active.as_mut() else {
        return;
    };
    let events = active.writer.poll();
    if events.is_empty() {
        return;
    }
    if let Some(e) = report(&mut active.ending, &mut active.last_saved, events) {
        stop_on_error(&mut rec, &format!("the dataset writer failed: {e}"));
    }
}

/// With cameras, each frame's steps end on a row's step when they reach one
/// (`SimClock::align_frames_to`), so the cameras render rows' steps; off (0) otherwise. The
/// recorder is the clock's only aligner, so this sets it every frame.
fn align_frames_to_rows(rec: Res<LeRobotRecording>, mut clock: ResMut<SimClock>) {
    let every = rec
        .active
        .as_ref()
        .filter(|a| !a.cameras.is_empty())
        .map_or(0, |a| a.every);
    if clock.align_frames_to != every {
        clock.align_frames_to = every;
    }
}

/// Camera images as they come back from the GPU.
fn take_images(mut ready: MessageReader<CameraFrameReady>, mut rec: ResMut<LeRobotRecording>) {
    for CameraFrameReady(frame) in ready.read() {
        let Some(active) = rec.active.as_mut() else {
            continue;
        };
        active.take_image(frame);
    }
}

/// A scene reset ends the episode.
fn end_episode_on_reset(
    mut events: MessageReader<SessionNotice>,
    mut rec: ResMut<LeRobotRecording>,
) {
    let resets = events
        .read()
        .filter(|e| e.0 == SessionEvent::ResetDone)
        .count();
    if resets == 0 {
        return;
    }
    if let Some(active) = rec.active.as_mut() {
        active.waiting = false;
        active.end_episode("reset");
    }
}

fn handle_commands(world: &mut World) {
    let commands: Vec<LeRobotCommand> = world
        .resource_mut::<Messages<LeRobotCommand>>()
        .drain()
        .collect();
    for command in commands {
        match command {
            LeRobotCommand::Start { root } => {
                if world.resource::<LeRobotRecording>().is_active() {
                    continue;
                }
                let defaults = *world.resource::<LeRobotDefaults>();
                if let Err(e) = start(world, &root, defaults.fps, defaults.robot) {
                    error!(
                        "cannot record a LeRobot dataset into {}: {e}",
                        root.display()
                    );
                    world.resource_mut::<LeRobotRecording>().last = Some(Err(e));
                }
            }
            LeRobotCommand::Stop => {
                finish(world);
            }
            LeRobotCommand::EndEpisode => {
                if let Some(active) = world.resource_mut::<LeRobotRecording>().active.as_mut() {
                    let open = active.episode_open;
                    active.end_episode("ended on request");
                    if !open {
                        info!("LeRobot: no episode is open to end (the session is not running)");
                    }
                }
            }
            LeRobotCommand::Rerecord => {
                let mut rec = world.resource_mut::<LeRobotRecording>();
                let Some(active) = rec.active.as_mut() else {
                    continue;
                };
                let dropped = active.drop_open_episode();
                info!(
                    "LeRobot: re-record: the open episode ({dropped} row(s)) is discarded; the scene resets"
                );
                world.write_message(SessionRequest(crate::session::SessionCommand::Reset));
            }
        }
    }
}

/// In the headless renderer (`offscreen::run`) the dataset is finished by [`outcome`] after the
/// run has drained the images still on their way, not on `AppExit`, so the last rows get theirs.
#[derive(Resource, Default)]
pub struct FinishAfterDrain;

/// On exit the dataset is finished; one that cannot be written makes the exit an error.
fn finish_on_exit(world: &mut World) {
    if world.contains_resource::<FinishAfterDrain>() {
        return;
    }
    let exiting = world
        .get_resource::<Messages<AppExit>>()
        .is_some_and(|m| !m.is_empty());
    if exiting && let Some(Err(e)) = finish(world) {
        error!("exiting with an error: the LeRobot dataset was not written ({e})");
        world.write_message(AppExit::error());
    }
}

/// A fresh folder for the panel's button: `armsim-lerobot-<scene>-<unix seconds>` in the
/// working directory.
pub fn default_root(scene_id: &str) -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("armsim-lerobot-{scene_id}-{secs}"))
}

pub fn plugin(app: &mut App) {
    if app
        .world()
        .contains_resource::<Messages<CameraFrameReady>>()
    {
        app.add_systems(
            Update,
            (
                take_images,
                align_frames_to_rows.before(crate::sim::ClockSystems),
            ),
        );
    }
    app.init_resource::<LeRobotRecording>()
        .init_resource::<LeRobotDefaults>()
        .add_message::<LeRobotCommand>()
        .add_systems(
            Update,
            (handle_commands, end_episode_on_reset, poll_writer).before(crate::sim::ClockSystems),
        )
        .add_systems(SimStep, record_step.in_set(SimSystems::Publish))
        .add_systems(Last, finish_on_exit);
}
