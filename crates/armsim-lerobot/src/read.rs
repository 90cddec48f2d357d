//! One episode of a LeRobot v3 dataset read back: the dataset's rate, robot type and feature
//! names, and the episode's `observation.state` and `action` rows in frame order. It reads
//! armsim's datasets and those LeRobot's own `LeRobotDataset` writes (several episodes per data
//! file, lists or fixed-size lists of float32 or float64).

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int32Array, Int64Array,
    LargeListArray, ListArray, RecordBatch,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::LeRobotError;

/// One episode of a dataset, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEpisode {
    /// Which episode (`episode_index`).
    pub episode: u64,
    /// The dataset's `total_episodes`.
    pub total_episodes: u64,
    pub fps: u32,
    /// `info.json`'s `robot_type` (empty where it is null).
    pub robot_type: String,
    /// `observation.state`'s names, each without its `.pos`.
    pub state_names: Vec<String>,
    /// `action`'s names, each without its `.pos`.
    pub action_names: Vec<String>,
    /// One row per frame, in frame order.
    pub states: Vec<Vec<f32>>,
    pub actions: Vec<Vec<f32>>,
    /// The episode's `armsim/episode_seed` in the episodes table: the seed armsim drew its start
    /// from (a scene with a `randomize` block); `None` for a dataset without it (a real arm's)
    /// or an episode that started as the scene file says (-1).
    pub episode_seed: Option<u64>,
}

fn invalid(path: &Path, message: impl Into<String>) -> LeRobotError {
    LeRobotError::InvalidDataset {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reads episode `episode` of the dataset at `root`.
pub fn read_episode(root: &Path, episode: u64) -> Result<RecordedEpisode, LeRobotError> {
    let info_path = root.join("meta").join("info.json");
    let text = std::fs::read_to_string(&info_path).map_err(|e| LeRobotError::io(&info_path, e))?;
    let info: Value =
        serde_json::from_str(&text).map_err(|e| invalid(&info_path, format!("not JSON: {e}")))?;
    let version = info["codebase_version"].as_str().unwrap_or("");
    if !version.starts_with("v3") {
        return Err(invalid(
            &info_path,
            format!("codebase_version is {version:?}; only LeRobot v3 datasets are read"),
        ));
    }
    let fps = info["fps"]
        .as_f64()
        .filter(|f| *f >= 1.0 && f.fract() == 0.0)
        .ok_or_else(|| invalid(&info_path, "fps is not a whole number of frames per second"))?
        as u32;
    let total_episodes = info["total_episodes"]
        .as_u64()
        .ok_or_else(|| invalid(&info_path, "total_episodes is missing"))?;
    if episode >= total_episodes {
        return Err(invalid(
            root,
            format!(
                "episode {episode} is out of range: the dataset has {total_episodes} episode(s), \
                 0 to {}",
                total_episodes.saturating_sub(1)
            ),
        ));
    }
    let names = |key: &str| feature_names(&info["features"][key], key, &info_path);
    let state_names = names("observation.state")?;
    let action_names = names("action")?;

    let mut rows: Vec<(i64, Vec<f32>, Vec<f32>)> = Vec::new();
    let mut files = Vec::new();
    parquet_files(&root.join("data"), &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(invalid(root, "data/ holds no parquet file"));
    }
    for file in &files {
        for batch in read_batches(file)? {
            take_rows(&batch, episode, file, &mut rows)?;
        }
    }
    if rows.is_empty() {
        return Err(invalid(
            root,
            format!("no row of the data files belongs to episode {episode}"),
        ));
    }
    rows.sort_by_key(|(frame, _, _)| *frame);
    let (states, actions) = rows.into_iter().map(|(_, s, a)| (s, a)).unzip();
    let episode = RecordedEpisode {
        episode,
        total_episodes,
        fps,
        robot_type: info["robot_type"].as_str().unwrap_or("").to_string(),
        state_names,
        action_names,
        states,
        actions,
        episode_seed: episode_seed(root, episode)?,
    };
    for (what, rows, names) in [
        ("observation.state", &episode.states, &episode.state_names),
        ("action", &episode.actions, &episode.action_names),
    ] {
        if let Some(row) = rows.iter().find(|r| r.len() != names.len()) {
            return Err(invalid(
                root,
                format!(
                    "a row's {what} has {} values, its names {}",
                    row.len(),
                    names.len()
                ),
            ));
        }
    }
    Ok(episode)
}

/// The episode's `armsim/episode_seed`, where the episodes table has the column (an integer,
/// or a float where a merge with a dataset without it filled the gaps with NaN).
fn episode_seed(root: &Path, episode: u64) -> Result<Option<u64>, LeRobotError> {
    let dir = root.join("meta").join("episodes");
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut files = Vec::new();
    parquet_files(&dir, &mut files)?;
    for file in &files {
        for batch in read_batches(file)? {
            let (Some(index), Some(seed)) = (
                batch.column_by_name("episode_index"),
                batch.column_by_name("armsim/episode_seed"),
            ) else {
                continue;
            };
            let index = integers(index, "episode_index", file)?;
            let Some(row) = index.iter().position(|&e| u64::try_from(e) == Ok(episode)) else {
                continue;
            };
            if seed.is_null(row) {
                return Ok(None);
            }
            let any = seed.as_any();
            let value = if let Some(a) = any.downcast_ref::<Int64Array>() {
                u64::try_from(a.value(row)).ok()
            } else if let Some(a) = any.downcast_ref::<Float64Array>() {
                let v = a.value(row);
                (v.is_finite() && v >= 0.0 && v.fract() == 0.0).then_some(v as u64)
            } else {
                return Err(invalid(
                    file,
                    format!(
                        "column \"armsim/episode_seed\" is {}, not integers",
                        seed.data_type()
                    ),
                ));
            };
            return Ok(value);
        }
    }
    Ok(None)
}

/// A vector feature's names without `.pos`: a list, or LeRobot's older `{"motors": [...]}`.
fn feature_names(feature: &Value, key: &str, path: &Path) -> Result<Vec<String>, LeRobotError> {
    let list = match &feature["names"] {
        Value::Array(a) => Some(a),
        Value::Object(o) if o.len() == 1 => o.values().next().and_then(Value::as_array),
        _ => None,
    };
    let Some(list) = list else {
        return Err(invalid(
            path,
            format!("feature {key:?} is missing or has no list of names"),
        ));
    };
    list.iter()
        .map(|v| {
            v.as_str()
                .map(|s| s.strip_suffix(".pos").unwrap_or(s).to_string())
                .ok_or_else(|| {
                    invalid(
                        path,
                        format!("feature {key:?} has a name that is no string"),
                    )
                })
        })
        .collect()
}

fn parquet_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LeRobotError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LeRobotError::io(dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| LeRobotError::io(dir, e))?.path();
        if path.is_dir() {
            parquet_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}

fn read_batches(path: &Path) -> Result<Vec<RecordBatch>, LeRobotError> {
    let file = File::open(path).map_err(|e| LeRobotError::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    builder
        .build()
        .map_err(|e| LeRobotError::parquet(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| LeRobotError::parquet(path, e))
}

/// Appends `(frame_index, state, action)` for each of `batch`'s rows of `episode`.
fn take_rows(
    batch: &RecordBatch,
    episode: u64,
    path: &Path,
    rows: &mut Vec<(i64, Vec<f32>, Vec<f32>)>,
) -> Result<(), LeRobotError> {
    let column = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| invalid(path, format!("no column {name:?}")))
    };
    let episodes = integers(column("episode_index")?, "episode_index", path)?;
    let frames = integers(column("frame_index")?, "frame_index", path)?;
    let state = column("observation.state")?;
    let action = column("action")?;
    for (i, &e) in episodes.iter().enumerate() {
        if u64::try_from(e).ok() != Some(episode) {
            continue;
        }
        rows.push((
            frames[i],
            vector(state, i, "observation.state", path)?,
            vector(action, i, "action", path)?,
        ));
    }
    Ok(())
}

fn integers(col: &ArrayRef, name: &str, path: &Path) -> Result<Vec<i64>, LeRobotError> {
    if let Some(a) = col.as_any().downcast_ref::<Int64Array>() {
        return Ok(a.values().to_vec());
    }
    if let Some(a) = col.as_any().downcast_ref::<Int32Array>() {
        return Ok(a.values().iter().map(|&v| i64::from(v)).collect());
    }
    Err(invalid(
        path,
        format!("column {name:?} is {}, not integers", col.data_type()),
    ))
}

/// Row `i` of a list column of floats.
fn vector(col: &ArrayRef, i: usize, name: &str, path: &Path) -> Result<Vec<f32>, LeRobotError> {
    let any = col.as_any();
    let values: ArrayRef = if let Some(a) = any.downcast_ref::<FixedSizeListArray>() {
        a.value(i)
    } else if let Some(a) = any.downcast_ref::<ListArray>() {
        a.value(i)
    } else if let Some(a) = any.downcast_ref::<LargeListArray>() {
        a.value(i)
    } else {
        return Err(invalid(
            path,
            format!(
                "column {name:?} is {}, not a list of numbers",
                col.data_type()
            ),
        ));
    };
    if values.null_count() > 0 {
        return Err(invalid(
            path,
            format!("column {name:?} holds a null at row {i}"),
        ));
    }
    if let Some(v) = values.as_any().downcast_ref::<Float32Array>() {
        return Ok(v.values().to_vec());
    }
    if let Some(v) = values.as_any().downcast_ref::<Float64Array>() {
        return Ok(v.values().iter().map(|&x| x as f32).collect());
    }
    Err(invalid(
        path,
        format!("column {name:?} holds {}, not floats", values.data_type()),
    ))
}
