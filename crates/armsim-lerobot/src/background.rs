//! A [`DatasetWriter`] on a thread of its own, fed through a bounded channel: the caller (a
//! simulation frame) hands over rows and images and goes on, while H.264 encoding and the file
//! writes run beside it.
//!
//! Order is kept: the thread applies the jobs one by one as they were sent, and reports what it
//! saved, or its first failure, as [`WriterEvent`]s to [`BackgroundWriter::poll`]. After a failure
//! it skips every later job; [`BackgroundWriter::finish`] still finishes the dataset with the
//! episodes saved before it. When the thread falls [`QUEUE`] jobs behind, `push_frame` waits for
//! it (memory stays bounded; the wait is counted in [`BackgroundWriter::waits`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, unbounded};

use crate::{
    DatasetSpec, DatasetSummary, DatasetWriter, EpisodeSummary, EpisodeValue, LeRobotError,
};

/// One camera image as the writer takes it: RGB8 bytes, width*height*3, top row first. Shared,
/// so a frame the renderer produced crosses to the writer thread without a copy.
pub type SharedImage = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Jobs the channel holds before `push_frame` waits for the writer thread (about 2 s at 30 fps).
pub const QUEUE: usize = 64;

enum Job {
    Begin(String, Vec<EpisodeValue>),
    Frame {
        state: Vec<f32>,
        action: Vec<f32>,
        images: Vec<SharedImage>,
    },
    End,
    Discard,
}

/// What the writer thread did, in order.
#[derive(Debug, Clone)]
pub enum WriterEvent {
    /// An episode went to disk.
    EpisodeSaved(EpisodeSummary),
    /// An episode whose videos did not match its rows was dropped whole (the error says which
    /// and why); the writer goes on with the next.
    EpisodeDropped { message: String, frames: u64 },
    /// The first failure; the thread skips every job after it.
    Failed(String),
}

/// How a background dataset ended: the dataset as finished, and the failure that stopped it
/// early, if any (the dataset then holds the episodes saved before it).
#[derive(Debug)]
pub struct Finished {
    pub result: Result<DatasetSummary, LeRobotError>,
    pub failure: Option<String>,
    /// Events not yet polled when it finished.
    pub events: Vec<WriterEvent>,
}

/// What the writer thread gives back when it ends: the finished dataset, and its first failure.
type Outcome = (Result<DatasetSummary, LeRobotError>, Option<String>);

/// A [`DatasetWriter`] running on its own thread.
pub struct BackgroundWriter {
    jobs: Option<Sender<Job>>,
    events: Receiver<WriterEvent>,
    thread: Option<JoinHandle<Outcome>>,
    root: PathBuf,
    spec: DatasetSpec,
    open_frames: Option<u64>,
    frames: u64,
    episodes: u64,
    waits: u64,
}

impl BackgroundWriter {
    /// Creates the dataset at `root` (as [`DatasetWriter::create`]; errors come back at once) and
    /// starts its thread.
    pub fn create(root: &Path, spec: DatasetSpec) -> Result<Self, LeRobotError> {
        Self::start(DatasetWriter::create(root, spec)?)
    }

    /// Moves `writer` onto a thread of its own.
    pub fn start(writer: DatasetWriter) -> Result<Self, LeRobotError> {
        let (jobs, job_rx) = bounded(QUEUE);
        let (event_tx, events) = unbounded();
        let root = writer.root().to_path_buf();
        let spec = writer.spec().clone();
        let thread = std::thread::Builder::new()
            .name("lerobot-writer".into())
            .spawn(move || run(writer, job_rx, event_tx))
            .map_err(|e| LeRobotError::WriterFailed(format!("cannot start its thread: {e}")))?;
        Ok(Self {
            jobs: Some(jobs),
            events,
            thread: Some(thread),
            root,
            spec,
            open_frames: None,
            frames: 0,
            episodes: 0,
            waits: 0,
        })
    }

    fn send(&mut self, job: Job) {
        let Some(jobs) = &self.jobs else { return };
        match jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(job)) => {
                self.waits += 1;
                // The thread is behind: wait for it rather than hold unbounded images.
                let _ = jobs.send(job);
            }
            // The thread ended (it panicked); `finish` reports it.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Starts an episode of `task` (checked on the thread, like everything else).
    pub fn begin_episode(&mut self, task: &str) {
        self.begin_episode_with(task, Vec::new());
    }

    /// Starts an episode of `task` with its episode columns' values (see
    /// [`DatasetWriter::begin_episode_with`]).
    pub fn begin_episode_with(&mut self, task: &str, values: Vec<EpisodeValue>) {
        self.open_frames = Some(0);
        self.send(Job::Begin(task.to_string(), values));
    }

    /// Queues one frame (see [`DatasetWriter::push_frame`]).
    pub fn push_frame(&mut self, state: Vec<f32>, action: Vec<f32>, images: Vec<SharedImage>) {
        if let Some(n) = self.open_frames.as_mut() {
            *n += 1;
        }
        self.send(Job::Frame {
            state,
            action,
            images,
        });
    }

    /// Queues the end of the open episode (see [`DatasetWriter::end_episode`]); it is reported
    /// by a [`WriterEvent::EpisodeSaved`].
    pub fn end_episode(&mut self) {
        if let Some(n) = self.open_frames.take()
            && n > 0
        {
            self.frames += n;
            self.episodes += 1;
        }
        self.send(Job::End);
    }

    /// Drops the open episode (see [`DatasetWriter::discard_episode`]).
    pub fn discard_episode(&mut self) {
        self.open_frames = None;
        self.send(Job::Discard);
    }

    /// What the thread reported since the last call. A dropped episode no longer counts in
    /// [`episodes`](Self::episodes) and [`frames`](Self::frames).
    pub fn poll(&mut self) -> Vec<WriterEvent> {
        let events: Vec<WriterEvent> = self.events.try_iter().collect();
        for event in &events {
            if let WriterEvent::EpisodeDropped { frames, .. } = event {
                self.episodes = self.episodes.saturating_sub(1);
                self.frames = self.frames.saturating_sub(*frames);
            }
        }
        events
    }

    /// Waits for every queued job, then finishes the dataset (see [`DatasetWriter::finish`]).
    pub fn finish(mut self) -> Finished {
        drop(self.jobs.take());
        let (result, failure) = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(done)) => done,
            Some(Err(_)) | None => {
                let msg = "the writer thread panicked".to_string();
                (Err(LeRobotError::WriterFailed(msg.clone())), Some(msg))
            }
        };
        Finished {
            result,
            failure,
            events: self.events.try_iter().collect(),
        }
    }

    /// Frames queued in the open episode, or `None` when none is open.
    pub fn open_episode_frames(&self) -> Option<u64> {
        self.open_frames
    }

    /// Frames of the episodes ended so far (queued; saved once the thread gets there).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Episodes with frames ended so far.
    pub fn episodes(&self) -> u64 {
        self.episodes
    }

    /// How many times `push_frame` had to wait for the thread.
    pub fn waits(&self) -> u64 {
        self.waits
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn spec(&self) -> &DatasetSpec {
        &self.spec
    }
}

impl Drop for BackgroundWriter {
    /// A writer dropped without `finish` still finishes its dataset.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(mut writer: DatasetWriter, jobs: Receiver<Job>, events: Sender<WriterEvent>) -> Outcome {
    let mut failure: Option<String> = None;
    for job in jobs {
        if failure.is_some() {
            continue;
        }
        let done = match job {
            Job::Begin(task, values) => writer.begin_episode_with(&task, values),
            Job::Frame {
                state,
                action,
                images,
            } => {
                let images: Vec<&[u8]> = images.iter().map(|i| (**i).as_ref()).collect();
                writer.push_frame(&state, &action, &images)
            }
            Job::End => writer.end_episode().map(|saved| {
                if let Some(summary) = saved {
                    let _ = events.send(WriterEvent::EpisodeSaved(summary));
                }
            }),
            Job::Discard => {
                writer.discard_episode();
                Ok(())
            }
        };
        if let Err(e) = done {
            let message = e.to_string();
            if let LeRobotError::EpisodeDropped { frames, .. } = e {
                let _ = events.send(WriterEvent::EpisodeDropped { message, frames });
            } else {
                let _ = events.send(WriterEvent::Failed(message.clone()));
                failure = Some(message);
            }
        }
    }
    (writer.finish(), failure)
}
