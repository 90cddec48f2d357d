//! The parquet tables: frames (`data/`), episodes (`meta/episodes/`) and tasks
//! (`meta/tasks.parquet`). Every column is nullable, as pyarrow writes them for LeRobot.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::json;

use crate::LeRobotError;
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

/// Writes `data/chunk-000/file-000.parquet`, one row group per episode.
pub(crate) struct DataFile {
    path: PathBuf,
    /// In a `Mutex` only to make the dataset writer `Sync` (Bevy resources must be); it is only
    /// reached through `&mut self`, so it is never locked.
    writer: Mutex<ArrowWriter<BufWriter<File>>>,
    schema: SchemaRef,
    joints: usize,
}

impl DataFile {
    pub(crate) fn create(path: &Path, joints: usize) -> Result<Self, LeRobotError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| LeRobotError::io(dir, e))?;
        }
        let file = File::create(path).map_err(|e| LeRobotError::io(path, e))?;
        let schema = data_schema(joints);
        let writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(props()))
            .map_err(|e| LeRobotError::parquet(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            writer: Mutex::new(writer),
            schema,
            joints,
        })
    }

    /// Appends one episode as its own row group.
    pub(crate) fn write_episode(
        &mut self,
        frames: &EpisodeFrames,
        episode_index: u64,
        first_index: u64,
        task_index: u64,
        fps: u32,
    ) -> Result<(), LeRobotError> {
        let n = frames.len(self.joints);
        let vec_col = |values: &[f32]| -> Result<ArrayRef, LeRobotError> {
            let field = Arc::new(Field::new_list_field(DataType::Float32, true));
            let values = Arc::new(Float32Array::from(values.to_vec()));
            FixedSizeListArray::try_new(field, self.joints as i32, values, None)
                .map(|a| Arc::new(a) as ArrayRef)
                .map_err(|e| LeRobotError::parquet(&self.path, e))
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
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| LeRobotError::parquet(&self.path, e))?;
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        writer
            .write(&batch)
            .and_then(|_| writer.flush())
            .map_err(|e| LeRobotError::parquet(&self.path, e))
    }

    /// Writes the footer and returns the file's size.
    pub(crate) fn close(self) -> Result<u64, LeRobotError> {
        let path = self.path;
        let writer = self
            .writer
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_inner()
            .map_err(|e| LeRobotError::parquet(&path, e))?;
        let file = writer
            .into_inner()
            .map_err(|e| LeRobotError::io(&path, e.into_error()))?;
        file.sync_all().map_err(|e| LeRobotError::io(&path, e))?;
        file.metadata()
            .map(|m| m.len())
            .map_err(|e| LeRobotError::io(&path, e))
    }
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
}

/// Writes one Arrow record batch as a whole parquet file; returns its size.
fn write_table(path: &Path, batch: &RecordBatch) -> Result<u64, LeRobotError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| LeRobotError::io(dir, e))?;
    }
    let file = File::create(path).map_err(|e| LeRobotError::io(path, e))?;
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
    file.sync_all().map_err(|e| LeRobotError::io(path, e))?;
    file.metadata()
        .map(|m| m.len())
        .map_err(|e| LeRobotError::io(path, e))
}

/// Writes the episodes table: LeRobot 0.4.4's columns in its order (without the optional
/// per-episode `stats/...` columns, which its loader drops anyway).
pub(crate) fn write_episodes(
    path: &Path,
    rows: &[EpisodeRow],
    video_keys: &[String],
) -> Result<u64, LeRobotError> {
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
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| LeRobotError::parquet(path, e))?;
    write_table(path, &batch)
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
pub(crate) fn write_tasks(path: &Path, tasks: &[String]) -> Result<u64, LeRobotError> {
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
