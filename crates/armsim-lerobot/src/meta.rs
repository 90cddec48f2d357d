//! `meta/info.json` and `meta/stats.json`, with keys in LeRobot's order (serde_json's `Value` would
//! sort them), indented by four spaces like LeRobot's `write_json`.

use std::path::Path;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::atomic::Staged;
use crate::spec::DatasetSpec;
use crate::stats::{FeatureStats, STAT_NAMES};
use crate::{
    CHUNKS_SIZE, CODEBASE_VERSION, DATA_FILES_SIZE_IN_MB, DATA_PATH, LeRobotError,
    VIDEO_FILES_SIZE_IN_MB, VIDEO_PATH,
};

/// A JSON object whose keys keep their insertion order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Obj(Vec<(String, J)>);

/// A JSON value that may hold an ordered object.
#[derive(Debug, Clone)]
pub(crate) enum J {
    V(Value),
    O(Obj),
}

impl Obj {
    pub(crate) fn new() -> Self {
        Self(Vec::new())
    }

    pub(crate) fn put(mut self, key: impl Into<String>, value: impl Into<J>) -> Self {
        self.0.push((key.into(), value.into()));
        self
    }
}

impl From<Value> for J {
    fn from(v: Value) -> Self {
        J::V(v)
    }
}

impl From<Obj> for J {
    fn from(o: Obj) -> Self {
        J::O(o)
    }
}

impl Serialize for Obj {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            J::V(v) => v.serialize(s),
            J::O(o) => o.serialize(s),
        }
    }
}

/// Writes `value` as JSON indented by four spaces, under its temporary name (see `atomic.rs`).
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<Staged, LeRobotError> {
    let mut buf = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
    value
        .serialize(&mut ser)
        .map_err(|e| LeRobotError::io(path, std::io::Error::other(e)))?;
    buf.push(b'\n');
    Staged::write(path, &buf)
}

/// The `features` block: state, action, cameras, then LeRobot's five default features.
pub(crate) fn features(spec: &DatasetSpec) -> Obj {
    let n = spec.joint_names.len();
    let vector = || {
        Obj::new()
            .put("dtype", json!("float32"))
            .put("shape", json!([n]))
            .put("names", json!(spec.vector_names()))
    };
    let mut f = Obj::new()
        .put("observation.state", vector())
        .put("action", vector());
    for cam in &spec.cameras {
        let info = Obj::new()
            .put("video.height", json!(cam.height))
            .put("video.width", json!(cam.width))
            .put("video.codec", json!("h264"))
            .put("video.pix_fmt", json!("yuv420p"))
            .put("video.is_depth_map", json!(false))
            .put("video.fps", json!(spec.fps))
            .put("video.channels", json!(3))
            .put("has_audio", json!(false));
        let feature = Obj::new()
            .put("dtype", json!("video"))
            .put("shape", json!([cam.height, cam.width, 3]))
            .put("names", json!(["height", "width", "channels"]))
            .put("info", info);
        f = f.put(cam.feature_key(), feature);
    }
    for (key, dtype) in [
        ("timestamp", "float32"),
        ("frame_index", "int64"),
        ("episode_index", "int64"),
        ("index", "int64"),
        ("task_index", "int64"),
    ] {
        f = f.put(
            key,
            Obj::new()
                .put("dtype", json!(dtype))
                .put("shape", json!([1]))
                .put("names", Value::Null),
        );
    }
    f
}

/// The whole `info.json`, in the key order of LeRobot's `create_empty_dataset_info`.
pub(crate) fn info(spec: &DatasetSpec, episodes: u64, frames: u64, tasks: u64) -> Obj {
    let video_path = if spec.cameras.is_empty() {
        Value::Null
    } else {
        json!(VIDEO_PATH)
    };
    Obj::new()
        .put("codebase_version", json!(CODEBASE_VERSION))
        .put("robot_type", json!(spec.robot_type))
        .put("total_episodes", json!(episodes))
        .put("total_frames", json!(frames))
        .put("total_tasks", json!(tasks))
        .put("chunks_size", json!(CHUNKS_SIZE))
        .put("data_files_size_in_mb", json!(DATA_FILES_SIZE_IN_MB))
        .put("video_files_size_in_mb", json!(VIDEO_FILES_SIZE_IN_MB))
        .put("fps", json!(spec.fps))
        .put(
            "splits",
            Obj::new().put("train", json!(format!("0:{episodes}"))),
        )
        .put("data_path", json!(DATA_PATH))
        .put("video_path", video_path)
        .put("features", features(spec))
}

/// One feature's statistics as LeRobot's `stats.json` holds them, in its key order.
pub(crate) fn ordered_stats(stat: &FeatureStats) -> Obj {
    STAT_NAMES
        .iter()
        .fold(Obj::new(), |o, name| o.put(*name, stat.json(name)))
}
