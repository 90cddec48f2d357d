//! What a dataset records: frame rate, joints, cameras, and columns of its own in the episodes
//! table.

use std::collections::HashSet;

use crate::LeRobotError;

/// The mp4 media timescale muxide writes (ticks per second); `fps` must divide it so that every
/// frame lasts the same whole number of ticks.
pub(crate) const MEDIA_TIMESCALE: u32 = 90_000;

/// One RGB camera, recorded as the video feature `observation.images.<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CameraSpec {
    /// Letters, digits, `_`, `-` and `.` (it becomes part of a path and a feature key).
    pub name: String,
    /// Even, 16..=3840 (or up to 2160 for the shorter side).
    pub width: u32,
    /// Even, 16..=3840 (or up to 2160 for the shorter side).
    pub height: u32,
}

impl CameraSpec {
    pub fn new(name: impl Into<String>, width: u32, height: u32) -> Self {
        Self {
            name: name.into(),
            width,
            height,
        }
    }

    /// The LeRobot feature key, `observation.images.<name>`.
    pub fn feature_key(&self) -> String {
        format!("observation.images.{}", self.name)
    }

    /// Bytes of one RGB8 frame.
    pub fn frame_bytes(&self) -> usize {
        self.width as usize * self.height as usize * 3
    }
}

/// Everything fixed for the whole dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSpec {
    /// Frames per second of every stream (default 30). With cameras it must divide 90 000 (the mp4
    /// timescale): 1–6, 8–10, 12, 15, 16, 18, 20, 24, 25, 30, 36, 40, 45, 48, 50, 60, 72, 75, 80, 90, 100, 120, ...
    pub fps: u32,
    /// `info.json`'s `robot_type`.
    pub robot_type: String,
    /// One entry per joint; `observation.state` and `action` are named `<joint>.pos`.
    pub joint_names: Vec<String>,
    /// Cameras, in the order `push_frame` takes their images. May be empty.
    pub cameras: Vec<CameraSpec>,
    /// Columns of the episodes table (`meta/episodes/...parquet`) after LeRobot's own: one value
    /// per episode, given to `begin_episode_with` in this order. May be empty.
    pub episode_columns: Vec<EpisodeColumn>,
}

/// A column of the episodes table that LeRobot does not define (armsim's varied episodes: each
/// episode's seed and drawn start). LeRobot's loaders read the table whole and keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeColumn {
    pub name: String,
    pub kind: EpisodeValueKind,
}

impl EpisodeColumn {
    pub fn new(name: impl Into<String>, kind: EpisodeValueKind) -> Self {
        Self {
            name: name.into(),
            kind,
        }
    }
}

/// How an episode column is typed: `int64`, `double`, or `list<double>` of a fixed length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpisodeValueKind {
    Int,
    Float,
    Floats(usize),
}

/// One episode's value of an [`EpisodeColumn`].
#[derive(Debug, Clone, PartialEq)]
pub enum EpisodeValue {
    Int(i64),
    Float(f64),
    Floats(Vec<f64>),
}

impl EpisodeValue {
    /// Whether the value is of `kind` and finite.
    pub fn fits(&self, kind: EpisodeValueKind) -> bool {
        match (self, kind) {
            (EpisodeValue::Int(_), EpisodeValueKind::Int) => true,
            (EpisodeValue::Float(x), EpisodeValueKind::Float) => x.is_finite(),
            (EpisodeValue::Floats(v), EpisodeValueKind::Floats(n)) => {
                v.len() == n && v.iter().all(|x| x.is_finite())
            }
            _ => false,
        }
    }
}

/// The episodes table's own columns (and the prefixes of its per-feature ones), which an
/// episode column may not take.
const LEROBOT_EPISODE_COLUMNS: [&str; 7] = [
    "episode_index",
    "tasks",
    "length",
    "dataset_from_index",
    "dataset_to_index",
    "meta/episodes/chunk_index",
    "meta/episodes/file_index",
];
const LEROBOT_EPISODE_PREFIXES: [&str; 4] = ["data/", "videos/", "stats/", "meta/"];

impl Default for DatasetSpec {
    fn default() -> Self {
        Self {
            fps: 30,
            robot_type: String::new(),
            joint_names: Vec::new(),
            cameras: Vec::new(),
            episode_columns: Vec::new(),
        }
    }
}

/// How the videos are encoded (`DatasetWriter::create_with_options`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoOptions {
    /// A keyframe (IDR) every this many frames within an episode, besides the one that starts each
    /// episode; 0 = only at episode starts. Shorter means faster random access when training
    /// (LeRobot seeks to the previous keyframe and decodes forward) and bigger files. Default 30.
    pub keyframe_interval: u32,
}

impl Default for VideoOptions {
    fn default() -> Self {
        Self {
            keyframe_interval: 30,
        }
    }
}

impl DatasetSpec {
    /// `["<joint>.pos", ...]`, the names of `observation.state` and `action`.
    pub fn vector_names(&self) -> Vec<String> {
        self.joint_names
            .iter()
            .map(|j| format!("{j}.pos"))
            .collect()
    }

    /// Checks everything that `DatasetWriter::create` relies on.
    pub fn validate(&self) -> Result<(), LeRobotError> {
        let bad = |msg: String| Err(LeRobotError::InvalidSpec(msg));
        if self.fps == 0 {
            return bad("fps must be at least 1".into());
        }
        if !self.cameras.is_empty() && !MEDIA_TIMESCALE.is_multiple_of(self.fps) {
            return bad(format!(
                "fps {} does not divide the mp4 timescale {MEDIA_TIMESCALE}, so video frames could \
                 not all last the same time; use e.g. 10, 15, 20, 24, 25, 30, 50 or 60",
                self.fps
            ));
        }
        if self.joint_names.is_empty() {
            return bad(
                "joint_names is empty; observation.state and action need at least one joint".into(),
            );
        }
        let mut seen = HashSet::new();
        for name in &self.joint_names {
            if name.is_empty() {
                return bad("a joint name is empty".into());
            }
            if !seen.insert(name.as_str()) {
                return bad(format!("joint name {name:?} appears twice"));
            }
        }
        let mut seen = HashSet::new();
        for cam in &self.cameras {
            let name_ok = !cam.name.is_empty()
                && !cam.name.starts_with('.')
                && cam
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !name_ok {
                return bad(format!(
                    "camera name {:?} must be non-empty ASCII letters, digits, '_', '-' or '.' \
                     (not starting with '.'): it becomes a feature key and a folder name",
                    cam.name
                ));
            }
            if !seen.insert(cam.name.as_str()) {
                return bad(format!("camera name {:?} appears twice", cam.name));
            }
            let (w, h) = (cam.width, cam.height);
            if w < 16 || h < 16 || !w.is_multiple_of(2) || !h.is_multiple_of(2) {
                return bad(format!(
                    "camera {:?} is {w}x{h}; width and height must be even and at least 16 (H.264 4:2:0)",
                    cam.name
                ));
            }
            if w.max(h) > 3840 || w.min(h) > 2160 {
                return bad(format!(
                    "camera {:?} is {w}x{h}; OpenH264 encodes at most 3840x2160 (or 2160x3840)",
                    cam.name
                ));
            }
        }
        let mut seen = HashSet::new();
        for column in &self.episode_columns {
            let name = column.name.as_str();
            if name.is_empty()
                || LEROBOT_EPISODE_COLUMNS.contains(&name)
                || LEROBOT_EPISODE_PREFIXES.iter().any(|p| name.starts_with(p))
            {
                return bad(format!(
                    "episode column {name:?} is empty or one of LeRobot's own (or under data/, \
                     videos/, stats/ or meta/)"
                ));
            }
            if !seen.insert(name) {
                return bad(format!("episode column {name:?} appears twice"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> DatasetSpec {
        DatasetSpec {
            robot_type: "arm".into(),
            joint_names: vec!["a".into(), "b".into()],
            cameras: vec![CameraSpec::new("front", 64, 48)],
            ..DatasetSpec::default()
        }
    }

    #[test]
    fn defaults_and_names() {
        let s = spec();
        assert_eq!(s.fps, 30);
        assert_eq!(VideoOptions::default().keyframe_interval, 30);
        assert_eq!(s.vector_names(), vec!["a.pos", "b.pos"]);
        assert_eq!(s.cameras[0].feature_key(), "observation.images.front");
        assert!(s.validate().is_ok());
    }

    #[test]
    fn rejects_bad_specs() {
        type Mutation = Box<dyn Fn(&mut DatasetSpec)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|s| s.fps = 0), "fps must be"),
            (Box::new(|s| s.fps = 7), "does not divide"),
            (Box::new(|s| s.joint_names.clear()), "joint_names is empty"),
            (Box::new(|s| s.joint_names[1] = "a".into()), "appears twice"),
            (
                Box::new(|s| s.joint_names[0] = String::new()),
                "joint name is empty",
            ),
            (
                Box::new(|s| s.cameras[0].name = "a/b".into()),
                "must be non-empty",
            ),
            (
                Box::new(|s| s.cameras[0].name = "..".into()),
                "must be non-empty",
            ),
            (Box::new(|s| s.cameras[0].width = 63), "must be even"),
            (Box::new(|s| s.cameras[0].height = 8), "at least 16"),
            (Box::new(|s| s.cameras[0].width = 4096), "at most 3840x2160"),
            (
                Box::new(|s| s.cameras.push(CameraSpec::new("front", 64, 48))),
                "appears twice",
            ),
        ];
        for (mutate, needle) in cases {
            let mut s = spec();
            mutate(&mut s);
            let err = s.validate().expect_err(needle).to_string();
            assert!(err.contains(needle), "{err:?} should contain {needle:?}");
        }
        // Without cameras any positive fps is fine.
        let mut s = spec();
        s.cameras.clear();
        s.fps = 7;
        assert!(s.validate().is_ok());
    }
}
