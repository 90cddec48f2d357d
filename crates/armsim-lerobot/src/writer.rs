//! [`DatasetWriter`]: episodes in, a LeRobot v3.0 folder out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::data::{DataFile, EpisodeFrames, EpisodeRow, timestamp, write_episodes, write_tasks};
use crate::meta::{Obj, info, ordered_stats, write_json};
use crate::spec::{DatasetSpec, VideoOptions};
use crate::stats::{ImageStats, vector_stats};
use crate::video::CameraVideo;
use crate::{LeRobotError, VIDEO_FILES_SIZE_IN_MB, data_file_path, episodes_file_path};

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
    /// Every file written, relative to `root`, in the order written.
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

struct OpenEpisode {
    task: String,
    frames: EpisodeFrames,
    image_stats: Vec<ImageStats>,
    /// Set when encoding failed part-way through a frame: the cameras and the data disagree.
    broken: Option<String>,
}

/// Writes one LeRobot v3.0 dataset. See the crate docs for the layout, memory use and limits.
///
/// Frames are encoded as they arrive; a dataset is complete only once [`finish`](Self::finish)
/// returns. Dropping the writer without `finish` leaves an incomplete folder without
/// `meta/info.json`.
pub struct DatasetWriter {
    root: PathBuf,
    spec: DatasetSpec,
    data: Option<DataFile>,
    cameras: Vec<CameraVideo>,
    tasks: Vec<String>,
    task_index: HashMap<String, u64>,
    episodes: Vec<EpisodeRow>,
    frames: u64,
    /// Every saved frame's state and action, for `stats.json`.
    all_state: Vec<f32>,
    all_action: Vec<f32>,
    image_stats: Vec<ImageStats>,
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
            .map(|cam| {
                CameraVideo::new(
                    root,
                    cam,
                    spec.fps,
                    video.keyframe_interval,
                    VIDEO_FILES_SIZE_IN_MB * 1024 * 1024,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let data = DataFile::create(&root.join(data_file_path(0, 0)), spec.joint_names.len())?;
        Ok(Self {
            root: root.to_path_buf(),
            image_stats: vec![ImageStats::new(); spec.cameras.len()],
            spec,
            data: Some(data),
            cameras,
            tasks: Vec::new(),
            task_index: HashMap::new(),
            episodes: Vec::new(),
            frames: 0,
            all_state: Vec::new(),
            all_action: Vec::new(),
            open: None,
            failed: None,
        })
    }

    /// Overrides the video file size limit (tests use it to exercise the file split).
    #[cfg(test)]
    pub(crate) fn set_video_file_limit_bytes(&mut self, bytes: u64) {
        for cam in &mut self.cameras {
            cam.set_max_file_bytes(bytes);
        }
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

    /// Starts an episode of `task` (a non-empty natural-language instruction).
    pub fn begin_episode(&mut self, task: &str) -> Result<(), LeRobotError> {
        self.check_usable()?;
        if self.open.is_some() {
            return Err(LeRobotError::EpisodeAlreadyOpen);
        }
        if task.trim().is_empty() {
            return Err(LeRobotError::InvalidTask(
                "the task is empty; LeRobot policies are conditioned on it".into(),
            ));
        }
        self.open = Some(OpenEpisode {
            task: task.to_string(),
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

    /// Saves the open episode: its rows go to the data parquet, its video frames to each camera's
    /// mp4. An episode without frames is dropped and gives `None`. A broken episode (encoding
    /// failed) stays open and gives an error: discard it.
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
        let task_index = match self.task_index.get(&open.task) {
            Some(&i) => i,
            None => {
                let i = self.tasks.len() as u64;
                self.tasks.push(open.task.clone());
                self.task_index.insert(open.task.clone(), i);
                i
            }
        };
        let episode_index = self.episodes.len() as u64;
        let from = self.frames;
        let data = self.data.as_mut().expect("open until finish");
        if let Err(e) =
            data.write_episode(&open.frames, episode_index, from, task_index, self.spec.fps)
        {
            return Err(self.fail(e));
        }
        let mut videos = Vec::with_capacity(self.cameras.len());
        let mut video_bytes = 0;
        for c in 0..self.cameras.len() {
            video_bytes += self.cameras[c].pending_bytes();
            match self.cameras[c].commit_episode() {
                Ok(v) => videos.push(v),
                Err(e) => return Err(self.fail(e)),
            }
        }
        for (total, ep) in self.image_stats.iter_mut().zip(&open.image_stats) {
            total.merge(ep);
        }
        self.all_state.extend_from_slice(&open.frames.state);
        self.all_action.extend_from_slice(&open.frames.action);
        self.frames += length;
        self.episodes.push(EpisodeRow {
            episode_index,
            task: open.task,
            length,
            data_chunk_index: 0,
            data_file_index: 0,
            dataset_from_index: from,
            dataset_to_index: from + length,
            videos,
        });
        Ok(Some(EpisodeSummary {
            episode_index,
            length,
            task_index,
            dataset_from_index: from,
            dataset_to_index: from + length,
            video_bytes,
        }))
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

    /// Ends the open episode (a broken one is discarded), closes the data and video files and
    /// writes the episodes and tasks tables, `stats.json` and, last, `info.json`.
    pub fn finish(mut self) -> Result<DatasetSummary, LeRobotError> {
        self.check_usable()?;
        if self.open.as_ref().is_some_and(|o| o.broken.is_some()) {
            self.discard_episode();
        }
        if self.open.is_some() {
            self.end_episode()?;
        }
        let root = self.root.clone();
        let mut files: Vec<PathBuf> = Vec::new();
        let (mut video_bytes, mut data_bytes, mut meta_bytes) = (0u64, 0u64, 0u64);

        let data = self.data.take().expect("open until finish");
        data_bytes += data.close()?;
        files.push(data_file_path(0, 0).into());

        for cam in &mut self.cameras {
            cam.close_file()?;
            video_bytes += cam.closed_bytes();
            for f in cam.closed_files() {
                files.push(f.strip_prefix(&root).unwrap_or(f).to_path_buf());
            }
        }

        let rel = episodes_file_path(0, 0);
        let keys: Vec<String> = self.cameras.iter().map(|c| c.key.clone()).collect();
        meta_bytes += write_episodes(&root.join(&rel), &self.episodes, &keys)?;
        files.push(rel.into());

        meta_bytes += write_tasks(&root.join("meta/tasks.parquet"), &self.tasks)?;
        files.push("meta/tasks.parquet".into());

        meta_bytes += write_json(&root.join("meta/stats.json"), &self.stats())?;
        files.push("meta/stats.json".into());

        let episodes = self.episodes.len() as u64;
        let tasks = self.tasks.len() as u64;
        let info = info(&self.spec, episodes, self.frames, tasks);
        meta_bytes += write_json(&root.join("meta/info.json"), &info)?;
        files.push("meta/info.json".into());

        Ok(DatasetSummary {
            root,
            episodes,
            frames: self.frames,
            tasks,
            files,
            video_bytes,
            data_bytes,
            meta_bytes,
            total_bytes: video_bytes + data_bytes + meta_bytes,
        })
    }

    /// `stats.json`: every feature LeRobot computes stats for, in `info.json`'s order.
    fn stats(&self) -> Obj {
        let mut out = Obj::new();
        if self.frames == 0 {
            return out;
        }
        let joints = self.spec.joint_names.len();
        let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        out = out
            .put(
                "observation.state",
                ordered_stats(&vector_stats(&widen(&self.all_state), joints)),
            )
            .put(
                "action",
                ordered_stats(&vector_stats(&widen(&self.all_action), joints)),
            );
        for (cam, st) in self.spec.cameras.iter().zip(&self.image_stats) {
            out = out.put(cam.feature_key(), ordered_stats(&st.to_json()));
        }
        let n = self.frames as usize;
        let mut columns: [Vec<f64>; 5] = std::array::from_fn(|_| Vec::with_capacity(n));
        for ep in &self.episodes {
            let task = self.task_index[&ep.task] as f64;
            for i in 0..ep.length {
                columns[0].push(timestamp(i, self.spec.fps) as f64);
                columns[1].push(i as f64);
                columns[2].push(ep.episode_index as f64);
                columns[3].push((ep.dataset_from_index + i) as f64);
                columns[4].push(task);
            }
        }
        let names = [
            "timestamp",
            "frame_index",
            "episode_index",
            "index",
            "task_index",
        ];
        for (name, col) in names.iter().zip(&columns) {
            out = out.put(*name, ordered_stats(&vector_stats(col, 1)));
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
