//! Writes [LeRobot](https://github.com/huggingface/lerobot) **v3.0** datasets: joint states, joint
//! targets and RGB camera streams recorded at a constant frame rate.
//!
//! No Bevy here: a plain library that the app (or anything else) feeds one frame at a time.
//!
//! ```no_run
//! use armsim_lerobot::{CameraSpec, DatasetSpec, DatasetWriter};
//! # fn main() -> Result<(), armsim_lerobot::LeRobotError> {
//! let spec = DatasetSpec {
//!     robot_type: "arm6".into(),
//!     joint_names: vec!["shoulder".into(), "elbow".into()],
//!     cameras: vec![CameraSpec::new("front", 256, 256)],
//!     ..DatasetSpec::default()
//! };
//! let mut writer = DatasetWriter::create(std::path::Path::new("/tmp/my_dataset"), spec)?;
//! writer.begin_episode("pick up the red cube")?;
//! let image = vec![0u8; 256 * 256 * 3];
//! writer.push_frame(&[0.0, 0.5], &[0.1, 0.4], &[&image])?;
//! writer.end_episode()?;
//! let summary = writer.finish()?;
//! println!("{} frames, {} bytes", summary.frames, summary.total_bytes);
//! # Ok(()) }
//! ```
//!
//! # Layout written
//!
//! ```text
//! ROOT/meta/info.json                                   every key LeRobot 0.4.4 reads
//! ROOT/meta/stats.json                                  LeRobot's aggregate of the episodes' stats
//! ROOT/meta/tasks.parquet                               task strings as the pandas index
//! ROOT/meta/episodes/chunk-000/file-000.parquet         one row per episode, with its stats
//!                                                       (and the spec's episode_columns)
//! ROOT/data/chunk-000/file-NNN.parquet                  episode NNN's frames
//! ROOT/videos/observation.images.<cam>/chunk-000/file-NNN.mp4   episode NNN's H.264 video
//! ```
//!
//! Episode `n` goes to `chunk-{n / 1000}/file-{n % 1000}` (LeRobot's 1000 files per chunk).
//!
//! # Crash safety
//!
//! Every [`DatasetWriter::end_episode`] leaves a complete dataset of the episodes saved so far:
//! the episode's mp4s and data file are written first, then all the metadata, `info.json` last;
//! each file is written whole under a `.tmp` name, fsynced and renamed into place (then its folder
//! fsynced). A process killed at any moment (SIGKILL, power cut) leaves every saved episode
//! loadable; only the open episode, held in memory, is lost. One file per episode is what makes
//! this cheap: an mp4 cannot be read until its index is written at its end, and a parquet file
//! until its footer is, so files shared by several episodes would have to be rewritten whole at
//! each episode's end. LeRobot v3 reads per-episode files through the episodes table's
//! `data/file_index` and `videos/<key>/file_index`, as it reads its own shared ones.
//!
//! # Statistics
//!
//! Each episode's row carries `stats/<feature>/<stat>` columns for every feature (min, max, mean,
//! std, count, q01..q99; images per channel, `[3, 1, 1]` in [0, 1], from every
//! [`IMAGE_STATS_EVERY`]-th frame), typed as pyarrow types LeRobot's own rows, and `stats.json`
//! is LeRobot's `aggregate_stats` of them, which is also what `lerobot-edit-dataset` rebuilds it
//! from after deleting or splitting episodes.
//!
//! # Video
//!
//! Each camera is encoded with OpenH264 as its frames arrive (constant QP 26, no frame skipping,
//! BT.601 limited range, yuv420p, no B-frames) and muxed with muxide at exactly `frame / fps`
//! (muxide's 90 kHz media timescale, so `fps` must divide 90 000), then the track's timescale
//! is set to the one FFmpeg gives the rate (15 360 at 30 fps), as LeRobot's own videos have:
//! LeRobot's merge joins episodes' mp4s with FFmpeg's concat demuxer, which keeps the first
//! file's time base for every packet. Every episode starts on an IDR frame, and
//! within an episode a keyframe is forced every [`VideoOptions::keyframe_interval`] frames so that
//! PyAV/torchcodec seeks stay short. An episode's encoded frames are held back until
//! [`DatasetWriter::end_episode`], which is what makes [`DatasetWriter::discard_episode`] clean.
//!
//! # Size limits and memory
//!
//! * Memory holds the open episode: its encoded video frames and its joint vectors (8 bytes per
//!   joint per frame), plus one small statistics record per saved episode.
//! * Files are per episode, so `data_files_size_in_mb` (100 MB) and `video_files_size_in_mb`
//!   (200 MB) in `info.json` are LeRobot's values for datasets it appends to, not limits this
//!   writer splits at.
//! * The episodes table is rewritten at each episode's end (about 2 kB per saved episode).
//! * `timestamp` is float32 (LeRobot's schema): past 2048 s (34 min) into an episode its rounding
//!   error can exceed LeRobot's 1e-4 s video tolerance, so keep episodes shorter than that.

mod atomic;
mod background;
mod data;
mod meta;
mod mp4;
mod read;
mod robots;
mod spec;
mod stats;
mod video;
mod writer;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use background::{BackgroundWriter, Finished, QUEUE, SharedImage, WriterEvent};
pub use read::{RecordedEpisode, read_episode};
pub use robots::{FileJoint, LEROBOT_ROBOTS, LeRobotRobot, Schema};
pub use spec::{
    CameraSpec, DatasetSpec, EpisodeColumn, EpisodeValue, EpisodeValueKind, VideoOptions,
};
pub use writer::{DatasetSummary, DatasetWriter, EpisodeSummary, IMAGE_STATS_EVERY};

/// The codebase version written to `meta/info.json`.
pub const CODEBASE_VERSION: &str = "v3.0";
/// Files per `chunk-XXX` folder (LeRobot's default).
pub const CHUNKS_SIZE: u64 = 1000;
/// LeRobot's data file size limit, written to `info.json` (this writer writes a file per episode).
pub const DATA_FILES_SIZE_IN_MB: u64 = 100;
/// LeRobot's video file size limit, written to `info.json` (this writer writes a file per episode).
pub const VIDEO_FILES_SIZE_IN_MB: u64 = 200;
/// `info.json`'s `data_path` template.
pub const DATA_PATH: &str = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet";
/// `info.json`'s `video_path` template.
pub const VIDEO_PATH: &str = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4";

/// Everything that can go wrong while writing a dataset. Bad input is reported here, never by a
/// panic.
#[derive(Debug, thiserror::Error)]
pub enum LeRobotError {
    #[error(
        "dataset root {0} already exists and is not an empty directory; refusing to overwrite it"
    )]
    RootNotEmpty(PathBuf),
    #[error("invalid dataset spec: {0}")]
    InvalidSpec(String),
    #[error("an episode is already open; end or discard it before beginning another")]
    EpisodeAlreadyOpen,
    #[error("no episode is open; call begin_episode first")]
    NoOpenEpisode,
    #[error("invalid task: {0}")]
    InvalidTask(String),
    #[error("invalid episode values: {0}")]
    InvalidEpisodeValues(String),
    #[error("{what} has {got} values but the dataset has {expected} joints")]
    WrongLength {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("{what} of joint {joint:?} is {value}, not a finite number")]
    NonFinite {
        what: &'static str,
        joint: String,
        value: f32,
    },
    #[error("got {got} images but the dataset has {expected} cameras")]
    WrongImageCount { expected: usize, got: usize },
    #[error(
        "image for camera {camera:?} has {got} bytes; expected {expected} ({width}x{height} RGB8, 3 bytes per pixel)"
    )]
    WrongImageSize {
        camera: String,
        width: u32,
        height: u32,
        expected: usize,
        got: usize,
    },
    #[error("the open episode failed earlier ({0}); discard it with discard_episode")]
    EpisodeBroken(String),
    #[error("the writer failed earlier and cannot continue: {0}")]
    WriterFailed(String),
    #[error("H.264 encoding failed for camera {camera:?}: {message}")]
    Encode { camera: String, message: String },
    #[error("mp4 muxing failed for {path}: {message}")]
    Mux { path: PathBuf, message: String },
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "episode {episode} ({frames} rows) is dropped: its video does not match its rows: {message}"
    )]
    EpisodeDropped {
        episode: u64,
        frames: u64,
        message: String,
    },
    #[error("{path} is not a dataset armsim can read: {message}")]
    InvalidDataset { path: PathBuf, message: String },
    #[error("parquet error on {path}: {message}")]
    Parquet { path: PathBuf, message: String },
}

impl LeRobotError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn parquet(path: impl Into<PathBuf>, err: impl std::fmt::Display) -> Self {
        Self::Parquet {
            path: path.into(),
            message: err.to_string(),
        }
    }
}

/// `chunk-XXX/file-YYY` position of the `n`-th file (0-based) of a series.
pub(crate) fn chunk_file(n: u64) -> (u64, u64) {
    (n / CHUNKS_SIZE, n % CHUNKS_SIZE)
}

/// The relative path of a data file.
pub(crate) fn data_file_path(chunk: u64, file: u64) -> String {
    format!("data/chunk-{chunk:03}/file-{file:03}.parquet")
}

/// The relative path of a video file.
pub(crate) fn video_file_path(video_key: &str, chunk: u64, file: u64) -> String {
    format!("videos/{video_key}/chunk-{chunk:03}/file-{file:03}.mp4")
}

/// The relative path of an episodes metadata file.
pub(crate) fn episodes_file_path(chunk: u64, file: u64) -> String {
    format!("meta/episodes/chunk-{chunk:03}/file-{file:03}.parquet")
}
