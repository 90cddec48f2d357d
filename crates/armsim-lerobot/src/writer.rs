//! [`DatasetWriter`]: episodes in, a LeRobot v3.0 folder out, loadable after every saved episode.
//!
//! Crash safety: [`DatasetWriter::end_episode`] writes the episode's mp4s (each renamed into
//! place as it is finished: a video nothing names is ignored by loaders), then stages the
//! episode's data file and the whole metadata again (`tasks.parquet`, the episodes table,
//! `stats.json`, `info.json`), each complete and fsynced under a temporary name (`atomic.rs`), and
//! only then renames them into place back to back, data before the table that names it and
//! `info.json` last. A recording killed (SIGKILL, power cut) at any moment leaves a dataset of
//! exactly the episodes saved before the kill. The one exception is a kill inside the
//! microseconds between two of those renames: the data file, or the data file and the episodes
//! table, of the episode being saved can then be in place before `info.json` counts it; its
//! files are complete, and a data file that no episode row names is the one thing to delete by
//! hand. The open episode is in memory only and is lost. Rewriting the metadata costs one
//! episodes-table row per saved episode per episode (about 2 kB each), negligible next to the
//! video.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::atomic::{Staged, sync_dir};
use crate::data::{EpisodeFrames, EpisodeRow, stage_episode_data, write_episodes, write_tasks};
use crate::meta::{Obj, info, ordered_stats, write_json};
use crate::mp4;
use crate::spec::{DatasetSpec, EpisodeValue, VideoOptions};
use crate::stats::{FeatureStats, ImageStats, StatKind, aggregate, vector_stats};
use crate::video::{CameraVideo, EpisodeVideo};
use crate::{LeRobotError, chunk_file, data_file_path, episodes_file_path};

/// Image statistics sample every this many frames of an episode (from its first frame).
pub const IMAGE_STATS_EVERY: u64 = 5;

/// What [`DatasetWriter::end_episode`] saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeSummary {
    pub episode_index: u64,
    /// Frames in the episode.
    pub length: u64,
    pub task_index: u64,
    /// Global index of its first frame.
    pub dataset_from_index: u64,
    /// One past the global index of its last frame.
    pub dataset_to_index: u64,
    /// Encoded H.264 bytes of the episode, all cameras together.
    pub video_bytes: u64,
}

/// What [`DatasetWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSummary {
    pub root: PathBuf,
    pub episodes: u64,
    pub frames: u64,
    pub tasks: u64,
    /// Every file of the dataset, relative to `root`: the data files and the mp4s in episode
    /// order, then the metadata.
    pub files: Vec<PathBuf>,
    /// Bytes of the mp4 files.
    pub video_bytes: u64,
    /// Bytes of `data/`.
    pub data_bytes: u64,
    /// Bytes of `meta/`.
    pub meta_bytes: u64,
    /// All of the above.
    pub total_bytes: u64,
}

impl std::fmt::Display for EpisodeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "episode {}: {} frames (index {}..{}), task {}, {} video bytes",
            self.episode_index,
            self.length,
            self.dataset_from_index,
            self.dataset_to_index,
            self.task_index,
            self.video_bytes
        )
    }
}

impl std::fmt::Display for DatasetSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{}, {}, {}; {} bytes (video {}, data {}, meta {})",
            plural(self.episodes, "episode"),
            plural(self.frames, "frame"),
            plural(self.tasks, "task"),
            self.total_bytes,
            self.video_bytes,
            self.data_bytes,
            self.meta_bytes
        )
    }
}

/// An episode's checked mp4s, one per camera.
struct EpisodeVideos {
    places: Vec<EpisodeVideo>,
    /// Relative to the root, with their sizes.
    files: Vec<(PathBuf, u64)>,
    /// Encoded bytes.
    bytes: u64,
}

struct OpenEpisode {
    task: String,
    /// Its values of the spec's `episode_columns`.
    values: Vec<EpisodeValue>,
    frames: EpisodeFrames,
    image_stats: Vec<ImageStats>,
    /// Set when encoding failed part-way through a frame: the cameras and the data disagree.
    broken: Option<String>,
}

/// Writes one LeRobot v3.0 dataset. See the crate docs for the layout, memory use and limits.
///
/// Frames are encoded as they arrive. Each [`end_episode`](Self::end_episode) leaves a complete
/// dataset of the episodes saved so far (see the module docs for the write order), so dropping
/// the writer without [`finish`](Self::finish), or killing the process, loses only the open
/// episode. A folder without `meta/info.json` saved no episode.
pub struct DatasetWriter {
    root: PathBuf,
    spec: DatasetSpec,
    cameras: Vec<CameraVideo>,
    tasks: Vec<String>,
    task_index: HashMap<String, u64>,
    episodes: Vec<EpisodeRow>,
    frames: u64,
    /// The features with statistics, in `info.json`'s order, and how their stats are shaped.
    stat_features: Vec<(String, StatKind)>,
    /// Data and video files written so far, relative to `root`, with their sizes.
    data_files: Vec<(PathBuf, u64)>,
    video_files: Vec<(PathBuf, u64)>,
    open: Option<OpenEpisode>,
    /// Set when writing to disk failed: the files no longer match the bookkeeping.
    failed: Option<String>,
}

impl DatasetWriter {
    /// Creates `root` (which must not exist, or be an empty directory: an existing dataset is never
    /// overwritten) and opens the data file and one H.264 encoder per camera.
    pub fn create(root: &Path, spec: DatasetSpec) -> Result<Self, LeRobotError> {
        Self::create_with_options(root, spec, VideoOptions::default())
    }

    /// [`create`](Self::create) with explicit video encoding options.
    pub fn create_with_options(
        root: &Path,
        spec: DatasetSpec,
        video: VideoOptions,
    ) -> Result<Self, LeRobotError> {
        spec.validate()?;
        match std::fs::read_dir(root) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(LeRobotError::RootNotEmpty(root.to_path_buf()));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(root).map_err(|e| LeRobotError::io(root, e))?;
            }
            Err(_) if root.exists() => return Err(LeRobotError::RootNotEmpty(root.to_path_buf())),
            Err(e) => return Err(LeRobotError::io(root, e)),
        }
        let cameras = spec
            .cameras
            .iter()
            .map(|cam| CameraVideo::new(root, cam, spec.fps, video.keyframe_interval))
            .collect::<Result<Vec<_>, _>>()?;
        let mut stat_features = vec![
            ("observation.state".to_string(), StatKind::Float),
            ("action".to_string(), StatKind::Float),
        ];
        for cam in &spec.cameras {
            stat_features.push((cam.feature_key(), StatKind::Image));
        }
        stat_features.push(("timestamp".to_string(), StatKind::Float));
        for key in ["frame_index", "episode_index", "index", "task_index"] {
            stat_features.push((key.to_string(), StatKind::Int));
        }
        Ok(Self {
            root: root.to_path_buf(),
            spec,
            cameras,
            tasks: Vec::new(),
            task_index: HashMap::new(),
            episodes: Vec::new(),
            frames: 0,
            stat_features,
            data_files: Vec::new(),
            video_files: Vec::new(),
            open: None,
            failed: None,
        })
    }

    fn check_usable(&self) -> Result<(), LeRobotError> {
        match &self.failed {
            Some(msg) => Err(LeRobotError::WriterFailed(msg.clone())),
            None => Ok(()),
        }
    }

    /// Records an I/O failure: the writer refuses everything from now on.
    fn fail(&mut self, err: LeRobotError) -> LeRobotError {
        self.failed = Some(err.to_string());
        err
    }

    /// Starts an episode of `task` (a non-empty natural-language instruction), in a dataset
    /// without episode columns.
    pub fn begin_episode(&mut self, task: &str) -> Result<(), LeRobotError> {
        self.begin_episode_with(task, Vec::new())
    }

    /// Starts an episode of `task` with its values of the spec's `episode_columns`, in their
    /// order (each of its column's kind, and finite).
    pub fn begin_episode_with(
        &mut self,
        task: &str,
        values: Vec<EpisodeValue>,
    ) -> Result<(), LeRobotError> {
        self.check_usable()?;
        if self.open.is_some() {
            return Err(LeRobotError::EpisodeAlreadyOpen);
        }
        if task.trim().is_empty() {
            return Err(LeRobotError::InvalidTask(
                "the task is empty; LeRobot policies are conditioned on it".into(),
            ));
        }
        let columns = &self.spec.episode_columns;
        if values.len() != columns.len() {
            return Err(LeRobotError::InvalidEpisodeValues(format!(
                "{} value(s) for the dataset's {} episode column(s)",
                values.len(),
                columns.len()
            )));
        }
        if let Some((c, v)) = columns.iter().zip(&values).find(|(c, v)| !v.fits(c.kind)) {
            return Err(LeRobotError::InvalidEpisodeValues(format!(
                "episode column {:?} is {:?}, which does not fit its kind {:?} (or is not finite)",
                c.name, v, c.kind
            )));
        }
        self.open = Some(OpenEpisode {
            task: task.to_string(),
            values,
            frames: EpisodeFrames::default(),
            image_stats: vec![ImageStats::new(); self.cameras.len()],
            broken: None,
        });
        Ok(())
    }

    /// Adds one frame at the dataset's fps: joint positions, joint targets (one value per joint,
    /// finite) and one RGB8 image per camera, in spec order (width*height*3 bytes, row-major, top
    /// row first). Bad input is refused before anything is recorded.
    pub fn push_frame(
        &mut self,
        state: &[f32],
        action: &[f32],
        images: &[&[u8]],
    ) -> Result<(), LeRobotError> {
        self.check_usable()?;
        let Some(open) = self.open.as_mut() else {
            return Err(LeRobotError::NoOpenEpisode);
        };
        if let Some(msg) = &open.broken {
            return Err(LeRobotError::EpisodeBroken(msg.clone()));
        }
        let joints = &self.spec.joint_names;
        for (what, values) in [("state", state), ("action", action)] {
            if values.len() != joints.len() {
                return Err(LeRobotError::WrongLength {
                    what,
                    expected: joints.len(),
                    got: values.len(),
                });
            }
            if let Some((i, &v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(LeRobotError::NonFinite {
                    what,
                    joint: joints[i].clone(),
                    value: v,
                });
            }
        }
        if images.len() != self.spec.cameras.len() {
            return Err(LeRobotError::WrongImageCount {
                expected: self.spec.cameras.len(),
                got: images.len(),
            });
        }
        for (cam, img) in self.spec.cameras.iter().zip(images) {
            if img.len() != cam.frame_bytes() {
                return Err(LeRobotError::WrongImageSize {
                    camera: cam.name.clone(),
                    width: cam.width,
                    height: cam.height,
                    expected: cam.frame_bytes(),
                    got: img.len(),
                });
            }
        }
        let frame_in_episode = open.frames.len(joints.len()) as u64;
        for (c, img) in images.iter().enumerate() {
            if let Err(e) = self.cameras[c].encode(img, frame_in_episode) {
                open.broken = Some(e.to_string());
                return Err(e);
            }
            if frame_in_episode.is_multiple_of(IMAGE_STATS_EVERY) {
                open.image_stats[c].add_frame(img);
            }
        }
        open.frames.state.extend_from_slice(state);
        open.frames.action.extend_from_slice(action);
        Ok(())
    }

    /// Saves the open episode: its video frames to an mp4 per camera and its rows to a data
    /// file, all of the episode's own, then rewrites the metadata, so that the folder is a
    /// complete dataset of the episodes saved so far (see the module docs). An episode without
    /// frames is dropped and gives `None`. A broken episode (encoding failed) stays open and gives
    /// an error: discard it.
    pub fn end_episode(&mut self) -> Result<Option<EpisodeSummary>, LeRobotError> {
        self.check_usable()?;
        let Some(open) = self.open.as_ref() else {
            return Err(LeRobotError::NoOpenEpisode);
        };
        if let Some(msg) = &open.broken {
            return Err(LeRobotError::EpisodeBroken(msg.clone()));
        }
        let open = self.open.take().expect("checked above");
        let joints = self.spec.joint_names.len();
        let length = open.frames.len(joints) as u64;
        if length == 0 {
            for cam in &mut self.cameras {
                cam.discard_pending();
            }
            return Ok(None);
        }
        match self.save_episode(open, length) {
            Ok(summary) => Ok(Some(summary)),
            // Dropped whole, with nothing of it on disk: the writer goes on.
            Err(e @ LeRobotError::EpisodeDropped { .. }) => Err(e),
            // The files on disk may no longer match the bookkeeping: refuse everything after.
            Err(e) => Err(self.fail(e)),
        }
    }

    /// [`end_episode`](Self::end_episode) of a non-empty episode.
    fn save_episode(
        &mut self,
        open: OpenEpisode,
        length: u64,
    ) -> Result<EpisodeSummary, LeRobotError> {
        let episode_index = self.episodes.len() as u64;
        // Videos first: a finished mp4 that no metadata names yet is harmless to every loader.
        let EpisodeVideos {
            places: videos,
            files: video_files,
            bytes: video_bytes,
        } = self.commit_videos(episode_index, length)?;
        let task_index = match self.task_index.get(&open.task) {
            Some(&i) => i,
            None => {
                let i = self.tasks.len() as u64;
                self.tasks.push(open.task.clone());
                self.task_index.insert(open.task.clone(), i);
                i
            }
        };
        let from = self.frames;
        let stats = self.episode_stats(&open, episode_index, from, task_index);
        self.video_files.extend(video_files);
        // The data file is staged, not yet in place: LeRobot loads every parquet under `data/`,
        // so it must appear together with the metadata that names its episode.
        let (chunk, file) = chunk_file(episode_index);
        let data_rel = PathBuf::from(data_file_path(chunk, file));
        let data = stage_episode_data(
            &self.root.join(&data_rel),
            &open.frames,
            self.spec.joint_names.len(),
            episode_index,
            from,
            task_index,
            self.spec.fps,
        )?;
        self.frames += length;
        self.episodes.push(EpisodeRow {
            episode_index,
            task: open.task,
            values: open.values,
            length,
            data_chunk_index: chunk,
            data_file_index: file,
            dataset_from_index: from,
            dataset_to_index: from + length,
            videos,
            stats,
        });
        let mut meta = self.stage_metadata()?.into_iter();
        // Every file is complete on disk; now the renames, back to back (microseconds), in the
        // order that keeps each prefix loadable: tasks (an extra task harms nobody), the data
        // file, the episodes table that names it, stats.json, info.json. Then the folders are
        // fsynced once, so the episode is durable when this returns.
        let (_, tasks) = meta.next().expect("tasks.parquet first");
        tasks.commit()?;
        let data_bytes = data.commit()?;
        for (_, staged) in meta {
            staged.commit()?;
        }
        let episodes_rel = PathBuf::from(episodes_file_path(0, 0));
        for dir in [
            data_rel.parent(),
            episodes_rel.parent(),
            Some(Path::new("meta")),
        ]
        .into_iter()
        .flatten()
        {
            sync_dir(&self.root.join(dir))?;
        }
        self.data_files.push((data_rel, data_bytes));
        Ok(EpisodeSummary {
            episode_index,
            length,
            task_index,
            dataset_from_index: from,
            dataset_to_index: from + length,
            video_bytes,
        })
    }

    /// The episode's statistics, one per feature of `stat_features`.
    fn episode_stats(
        &self,
        open: &OpenEpisode,
        episode_index: u64,
        from: u64,
        task_index: u64,
    ) -> Vec<FeatureStats> {
        let joints = self.spec.joint_names.len();
        let n = open.frames.len(joints) as u64;
        let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let column = |f: &dyn Fn(u64) -> f64| (0..n).map(f).collect::<Vec<f64>>();
        let fps = self.spec.fps;
        let mut out = vec![
            vector_stats(&widen(&open.frames.state), joints, StatKind::Float),
            vector_stats(&widen(&open.frames.action), joints, StatKind::Float),
        ];
        out.extend(open.image_stats.iter().map(ImageStats::feature_stats));
        // LeRobot computes `timestamp`'s stats from the float64 frame_index / fps it buffers,
        // not from the float32 column.
        out.push(vector_stats(
            &column(&|i| i as f64 / fps as f64),
            1,
            StatKind::Float,
        ));
        for value in [
            &|i: u64| i as f64,
            &|_| episode_index as f64,
            &|i| (from + i) as f64,
            &|_| task_index as f64,
        ] as [&dyn Fn(u64) -> f64; 4]
        {
            out.push(vector_stats(&column(value), 1, StatKind::Int));
        }
        out
    }

    /// Every metadata file for the episodes saved so far, staged, in the order to commit them:
    /// `tasks.parquet`, the episodes table, `stats.json`, and `info.json`, whose totals a loader
    /// trusts, last.
    fn stage_metadata(&self) -> Result<Vec<(PathBuf, Staged)>, LeRobotError> {
        let root = &self.root;
        let keys: Vec<String> = self.cameras.iter().map(|c| c.key.clone()).collect();
        let tasks = PathBuf::from("meta/tasks.parquet");
        let episodes = PathBuf::from(episodes_file_path(0, 0));
        let stats = PathBuf::from("meta/stats.json");
        let info_path = PathBuf::from("meta/info.json");
        let n = self.episodes.len() as u64;
        let info = info(&self.spec, n, self.frames, self.tasks.len() as u64);
        Ok(vec![
            (tasks.clone(), write_tasks(&root.join(&tasks), &self.tasks)?),
            (
                episodes.clone(),
                write_episodes(
                    &root.join(&episodes),
                    &self.episodes,
                    &keys,
                    &self.stat_features,
                    &self.spec.episode_columns,
                )?,
            ),
            (
                stats.clone(),
                write_json(&root.join(&stats), &self.stats())?,
            ),
            (
                info_path.clone(),
                write_json(&root.join(&info_path), &info)?,
            ),
        ])
    }

    /// Writes each camera's mp4 of the episode and checks it as written: exactly `length` frames,
    /// their timestamps `k / fps`. A video that disagrees drops the whole episode: its mp4s are
    /// removed (no metadata names them yet) and the error names the episode and the camera.
    fn commit_videos(
        &mut self,
        episode_index: u64,
        length: u64,
    ) -> Result<EpisodeVideos, LeRobotError> {
        let mut videos = Vec::with_capacity(self.cameras.len());
        let mut files: Vec<(PathBuf, u64)> = Vec::with_capacity(self.cameras.len());
        let mut bytes = 0;
        for k in 0..self.cameras.len() {
            let cam = &mut self.cameras[k];
            bytes += cam.pending_bytes();
            let v = cam.commit_episode(episode_index)?;
            let checked = mp4::check_frames(&self.root.join(&v.rel), length, self.spec.fps);
            files.push((v.rel, v.bytes));
            if let Err(message) = checked {
                let camera = self.cameras[k].key.clone();
                for cam in &mut self.cameras {
                    cam.discard_pending();
                }
                for (rel, _) in &files {
                    let path = self.root.join(rel);
                    std::fs::remove_file(&path).map_err(|e| LeRobotError::io(&path, e))?;
                }
                return Err(LeRobotError::EpisodeDropped {
                    episode: episode_index,
                    frames: length,
                    message: format!("{camera}: {message}"),
                });
            }
            videos.push(v.video);
        }
        Ok(EpisodeVideos {
            places: videos,
            files,
            bytes,
        })
    }

    /// Camera `k` loses the open episode's last encoded frame (see
    /// `CameraVideo::lose_a_frame_for_test`).
    #[cfg(test)]
    pub(crate) fn lose_a_frame_for_test(&mut self, k: usize) {
        self.cameras[k].lose_a_frame_for_test();
    }

    /// Drops the open episode, if any: its rows, its statistics and its encoded video frames
    /// (which were held back, so no file is touched). The next episode starts with a keyframe, so
    /// nothing refers to the dropped frames. Also the way out of a broken episode.
    pub fn discard_episode(&mut self) {
        if self.open.take().is_some() {
            for cam in &mut self.cameras {
                cam.discard_pending();
            }
        }
    }

    /// Ends the open episode (a broken one is discarded). Every saved episode's files and the
    /// metadata are on disk already; a dataset that saved no episode gets its (empty) metadata
    /// now.
    pub fn finish(mut self) -> Result<DatasetSummary, LeRobotError> {
        self.check_usable()?;
        if self.open.as_ref().is_some_and(|o| o.broken.is_some()) {
            self.discard_episode();
        }
        if self.open.is_some() {
            self.end_episode()?;
        }
        let meta_files: Vec<PathBuf> = if self.episodes.is_empty() {
            let staged = self.stage_metadata()?;
            let mut files = Vec::new();
            for (rel, s) in staged {
                s.commit()?;
                files.push(rel);
            }
            sync_dir(&self.root.join("meta"))?;
            let episodes = self.root.join(episodes_file_path(0, 0));
            if let Some(dir) = episodes.parent() {
                sync_dir(dir)?;
            }
            files
        } else {
            self.stage_metadata_paths()
        };
        let root = self.root.clone();
        let mut files: Vec<PathBuf> = Vec::new();
        let sum = |list: &[(PathBuf, u64)], files: &mut Vec<PathBuf>| -> u64 {
            files.extend(list.iter().map(|(p, _)| p.clone()));
            list.iter().map(|(_, b)| b).sum()
        };
        let data_bytes = sum(&self.data_files, &mut files);
        let video_bytes = sum(&self.video_files, &mut files);
        let mut meta_bytes = 0;
        for rel in meta_files {
            meta_bytes += std::fs::metadata(root.join(&rel))
                .map_err(|e| LeRobotError::io(root.join(&rel), e))?
                .len();
            files.push(rel);
        }
        Ok(DatasetSummary {
            root,
            episodes: self.episodes.len() as u64,
            frames: self.frames,
            tasks: self.tasks.len() as u64,
            files,
            video_bytes,
            data_bytes,
            meta_bytes,
            total_bytes: video_bytes + data_bytes + meta_bytes,
        })
    }

    /// The metadata files, relative to the root, in the order [`stage_metadata`] writes them.
    fn stage_metadata_paths(&self) -> Vec<PathBuf> {
        [
            "meta/tasks.parquet".to_string(),
            episodes_file_path(0, 0),
            "meta/stats.json".to_string(),
            "meta/info.json".to_string(),
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect()
    }

    /// `stats.json`: LeRobot's aggregate of the episodes' statistics, feature by feature in
    /// `info.json`'s order, exactly what `lerobot-edit-dataset` rebuilds from the episodes table.
    fn stats(&self) -> Obj {
        let mut out = Obj::new();
        if self.episodes.is_empty() {
            return out;
        }
        for (f, (key, _)) in self.stat_features.iter().enumerate() {
            let parts: Vec<&FeatureStats> = self.episodes.iter().map(|e| &e.stats[f]).collect();
            out = out.put(key.clone(), ordered_stats(&aggregate(&parts)));
        }
        out
    }

    /// Frames saved so far (in ended episodes).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Episodes saved so far.
    pub fn episodes(&self) -> u64 {
        self.episodes.len() as u64
    }

    /// Frames pushed to the open episode, or `None` when no episode is open.
    pub fn open_episode_frames(&self) -> Option<u64> {
        self.open
            .as_ref()
            .map(|o| o.frames.len(self.spec.joint_names.len()) as u64)
    }

    /// The dataset's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The spec the dataset was created with.
    pub fn spec(&self) -> &DatasetSpec {
        &self.spec
    }
}
