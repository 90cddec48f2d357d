//! The parquet tables: frames (`data/`, one file per episode), episodes (`meta/episodes/`) and
//! tasks (`meta/tasks.parquet`). Every column is nullable, as pyarrow writes them for LeRobot.
//! Each table is written whole under a temporary name and committed by the writer
//! (`atomic.rs`).

use std::collections::HashMap;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::json;

use crate::LeRobotError;
use crate::atomic::{Staged, create_tmp};
use crate::spec::{EpisodeColumn, EpisodeValue, EpisodeValueKind};
use crate::stats::{FeatureStats, STAT_NAMES, StatKind};
use crate::video::EpisodeVideo;

/// Snappy, like pyarrow's default and LeRobot's writers.
fn props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("armsim-lerobot {}", env!("CARGO_PKG_VERSION")))
        .build()
}

fn vector_type(n: usize) -> DataType {
    DataType::FixedSizeList(
        Arc::new(Field::new_list_field(DataType::Float32, true)),
        n as i32,
    )
}

/// The frame table's Arrow schema.
pub(crate) fn data_schema(joints: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("observation.state", vector_type(joints), true),
        Field::new("action", vector_type(joints), true),
        Field::new("timestamp", DataType::Float32, true),
        Field::new("frame_index", DataType::Int64, true),
        Field::new("episode_index", DataType::Int64, true),
        Field::new("index", DataType::Int64, true),
        Field::new("task_index", DataType::Int64, true),
    ]))
}

/// One episode's frames, column by column.
#[derive(Debug, Default)]
pub(crate) struct EpisodeFrames {
    pub state: Vec<f32>,
    pub action: Vec<f32>,
}

impl EpisodeFrames {
    pub(crate) fn len(&self, joints: usize) -> usize {
        self.state.len() / joints
    }
}

/// `timestamp` of frame `frame_index`: the float32 nearest to `frame_index / fps`.
pub(crate) fn timestamp(frame_index: u64, fps: u32) -> f32 {
    (frame_index as f64 / fps as f64) as f32
}

/// Writes one episode's frames as a data file of its own (`data/chunk-C/file-F.parquet`, one row
/// group), complete and fsynced under its temporary name: the caller commits it just before the
/// metadata that names it.
pub(crate) fn stage_episode_data(
    path: &Path,
    frames: &EpisodeFrames,
    joints: usize,
    episode_index: u64,
    first_index: u64,
    task_index: u64,
    fps: u32,
) -> Result<Staged, LeRobotError> {
    let n = frames.len(joints);
    let vec_col = |values: &[f32]| -> Result<ArrayRef, LeRobotError> {
        let field = Arc::new(Field::new_list_field(DataType::Float32, true));
        let values = Arc::new(Float32Array::from(values.to_vec()));
        FixedSizeListArray::try_new(field, joints as i32, values, None)
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(|e| LeRobotError::parquet(path, e))
    };
    let columns: Vec<ArrayRef> = vec![
        vec_col(&frames.state)?,
        vec_col(&frames.action)?,
        Arc::new(Float32Array::from_iter_values(
            (0..n as u64).map(|i| timestamp(i, fps)),
        )),
        Arc::new(Int64Array::from_iter_values(0..n as i64)),
        Arc::new(Int64Array::from_iter_values(std::iter::repeat_n(
            episode_index as i64,
            n,
        ))),
        Arc::new(Int64Array::from_iter_values(
            (0..n as i64).map(|i| first_index as i64 + i),
        )),
        Arc::new(Int64Array::from_iter_values(std::iter::repeat_n(
            task_index as i64,
            n,
        ))),
    ];
    let batch = RecordBatch::try_new(data_schema(joints), columns)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    write_table(path, &batch)
}

/// One row of `meta/episodes/...parquet`.
#[derive(Debug, Clone)]
pub(crate) struct EpisodeRow {
    pub episode_index: u64,
    pub task: String,
    pub length: u64,
    pub data_chunk_index: u64,
    pub data_file_index: u64,
    pub dataset_from_index: u64,
    pub dataset_to_index: u64,
    /// One per camera, in spec order.
    pub videos: Vec<EpisodeVideo>,
    /// One per feature, in the order of the writer's `stat_features`.
    pub stats: Vec<FeatureStats>,
    /// One per `DatasetSpec::episode_columns`, checked against its kind.
    pub values: Vec<EpisodeValue>,
}

/// Writes one Arrow record batch as a whole parquet file under its temporary name.
fn write_table(path: &Path, batch: &RecordBatch) -> Result<Staged, LeRobotError> {
    let file = create_tmp(path)?;
    let mut writer = ArrowWriter::try_new(BufWriter::new(file), batch.schema(), Some(props()))
        .map_err(|e| LeRobotError::parquet(path, e))?;
    writer
        .write(batch)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    let buf = writer
        .into_inner()
        .map_err(|e| LeRobotError::parquet(path, e))?;
    let file = buf
        .into_inner()
        .map_err(|e| LeRobotError::io(path, e.into_error()))?;
    Staged::from_file(path, file)
}

/// Writes the episodes table: LeRobot 0.4.4's columns in its order, the per-episode statistics
/// (`stats/<feature>/<stat>`, features in `stat_features` order) included.
pub(crate) fn write_episodes(
    path: &Path,
    rows: &[EpisodeRow],
    video_keys: &[String],
    stat_features: &[(String, StatKind)],
    extra: &[EpisodeColumn],
) -> Result<Staged, LeRobotError> {
    let i64_col = |f: &dyn Fn(&EpisodeRow) -> u64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(
            rows.iter().map(|r| f(r) as i64),
        ))
    };
    let mut fields = vec![
        Field::new("episode_index", DataType::Int64, true),
        Field::new(
            "tasks",
            DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
            true,
        ),
        Field::new("length", DataType::Int64, true),
        Field::new("data/chunk_index", DataType::Int64, true),
        Field::new("data/file_index", DataType::Int64, true),
        Field::new("dataset_from_index", DataType::Int64, true),
        Field::new("dataset_to_index", DataType::Int64, true),
    ];
    let mut tasks = ListBuilder::new(StringBuilder::new());
    for r in rows {
        tasks.values().append_value(&r.task);
        tasks.append(true);
    }
    let mut columns: Vec<ArrayRef> = vec![
        i64_col(&|r| r.episode_index),
        Arc::new(tasks.finish()),
        i64_col(&|r| r.length),
        i64_col(&|r| r.data_chunk_index),
        i64_col(&|r| r.data_file_index),
        i64_col(&|r| r.dataset_from_index),
        i64_col(&|r| r.dataset_to_index),
    ];
    for (c, key) in video_keys.iter().enumerate() {
        fields.push(Field::new(
            format!("videos/{key}/chunk_index"),
            DataType::Int64,
            true,
        ));
        fields.push(Field::new(
            format!("videos/{key}/file_index"),
            DataType::Int64,
            true,
        ));
        fields.push(Field::new(
            format!("videos/{key}/from_timestamp"),
            DataType::Float64,
            true,
        ));
        fields.push(Field::new(
            format!("videos/{key}/to_timestamp"),
            DataType::Float64,
            true,
        ));
        columns.push(i64_col(&|r| r.videos[c].chunk_index));
        columns.push(i64_col(&|r| r.videos[c].file_index));
        columns.push(Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.videos[c].from_timestamp),
        )));
        columns.push(Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.videos[c].to_timestamp),
        )));
    }
    for (f, (key, kind)) in stat_features.iter().enumerate() {
        for name in STAT_NAMES {
            let (field, column) = stat_column(rows, f, *kind, name);
            fields.push(Field::new(format!("stats/{key}/{name}"), field, true));
            columns.push(column);
        }
    }
    // Where each episode's own metadata row lives: LeRobot reads these when it resumes recording.
    fields.push(Field::new(
        "meta/episodes/chunk_index",
        DataType::Int64,
        true,
    ));
    fields.push(Field::new(
        "meta/episodes/file_index",
        DataType::Int64,
        true,
    ));
    columns.push(i64_col(&|_| 0));
    columns.push(i64_col(&|_| 0));
    for (c, column) in extra.iter().enumerate() {
        let array = episode_column(rows, c, column.kind);
        fields.push(Field::new(&column.name, array.data_type().clone(), true));
        columns.push(array);
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    write_table(path, &batch)
}

/// Episode column `c` (its values checked against `kind` when each episode began).
fn episode_column(rows: &[EpisodeRow], c: usize, kind: EpisodeValueKind) -> ArrayRef {
    match kind {
        EpisodeValueKind::Int => {
            Arc::new(Int64Array::from_iter(rows.iter().map(
                |r| match r.values.get(c) {
                    Some(EpisodeValue::Int(v)) => Some(*v),
                    _ => None,
                },
            )))
        }
        EpisodeValueKind::Float => {
            Arc::new(Float64Array::from_iter(rows.iter().map(
                |r| match r.values.get(c) {
                    Some(EpisodeValue::Float(v)) => Some(*v),
                    _ => None,
                },
            )))
        }
        EpisodeValueKind::Floats(_) => {
            let mut b = ListBuilder::new(Float64Builder::new());
            for r in rows {
                match r.values.get(c) {
                    Some(EpisodeValue::Floats(v)) => {
                        b.values().append_slice(v);
                        b.append(true);
                    }
                    _ => b.append(false),
                }
            }
            Arc::new(b.finish())
        }
    }
}

/// One `stats/<feature>/<stat>` column, typed as pyarrow types what LeRobot hands it
/// (`numpy.ndarray.tolist()` per episode): `list<int64>` for `count` (and an int feature's `min`
/// and `max`), `list<list<list<double>>>` for an image's `[3, 1, 1]` values, else `list<double>`.
fn stat_column(
    rows: &[EpisodeRow],
    feature: usize,
    kind: StatKind,
    name: &str,
) -> (DataType, ArrayRef) {
    let stats = rows.iter().map(|r| &r.stats[feature]);
    if FeatureStats::is_int(kind, name) {
        let mut b = ListBuilder::new(Int64Builder::new());
        for st in stats {
            if name == "count" {
                b.values().append_value(st.count as i64);
            } else {
                for &v in st.values(name) {
                    b.values().append_value(v as i64);
                }
            }
            b.append(true);
        }
        let a = b.finish();
        return (a.data_type().clone(), Arc::new(a));
    }
    if kind == StatKind::Image {
        let mut b = ListBuilder::new(ListBuilder::new(ListBuilder::new(Float64Builder::new())));
        for st in stats {
            for &v in st.values(name) {
                let channel = b.values();
                channel.values().values().append_value(v);
                channel.values().append(true);
                channel.append(true);
            }
            b.append(true);
        }
        let a = b.finish();
        return (a.data_type().clone(), Arc::new(a));
    }
    let mut b = ListBuilder::new(Float64Builder::new());
    for st in stats {
        b.values().append_slice(st.values(name));
        b.append(true);
    }
    let a = b.finish();
    (a.data_type().clone(), Arc::new(a))
}

/// The pandas metadata that makes `__index_level_0__` the DataFrame index (the task strings). It
/// has to be in the Arrow schema metadata: pyarrow ignores parquet key-value metadata for this.
pub(crate) fn tasks_pandas_metadata() -> String {
    json!({
        "index_columns": ["__index_level_0__"],
        "column_indexes": [{
            "name": null, "field_name": null, "pandas_type": "unicode",
            "numpy_type": "object", "metadata": {"encoding": "UTF-8"}
        }],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
             "numpy_type": "int64", "metadata": null},
            {"name": null, "field_name": "__index_level_0__", "pandas_type": "unicode",
             "numpy_type": "object", "metadata": null}
        ],
        "creator": {"library": "armsim-lerobot", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.2.3"
    })
    .to_string()
}

/// Writes `meta/tasks.parquet`: `task_index` (int64) and the task strings as the pandas index.
pub(crate) fn write_tasks(path: &Path, tasks: &[String]) -> Result<Staged, LeRobotError> {
    let metadata = HashMap::from([("pandas".to_string(), tasks_pandas_metadata())]);
    let schema = Schema::new_with_metadata(
        vec![
            Field::new("task_index", DataType::Int64, true),
            Field::new("__index_level_0__", DataType::Utf8, true),
        ],
        metadata,
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..tasks.len() as i64)),
        Arc::new(StringArray::from_iter_values(tasks)),
    ];
    let batch = RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    write_table(path, &batch)
}
