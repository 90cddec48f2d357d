//! The episodes parquet's per-episode statistics (`stats/<feature>/<stat>`): the column types
//! pyarrow gives LeRobot's own rows, values computed from the synthetic frames, and `stats.json`
//! equal to their aggregate.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use serde_json::Value;

use super::{
    BACKGROUND, COLOURS, H, SQ, VIDEO, W, action, image, read_parquet, scratch, spec, state,
};
use crate::DatasetWriter;
use crate::stats::STAT_NAMES;

const LENGTHS: [u64; 2] = [12, 7];

/// `list<double>`, `list<int64>` or `list<list<list<double>>>`, as pyarrow types LeRobot's rows.
fn list_of(item: DataType) -> DataType {
    DataType::List(std::sync::Arc::new(arrow_schema::Field::new_list_field(
        item, true,
    )))
}

/// Row `row` of a `list<double>` or `list<int64>` column, as f64.
fn values(col: &ArrayRef, row: usize) -> Vec<f64> {
    let list = col.as_list::<i32>().value(row);
    match list.data_type() {
        DataType::Int64 => list
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|&v| v as f64)
            .collect(),
        _ => list.as_primitive::<Float64Type>().values().to_vec(),
    }
}

/// Row `row` of a `list<list<list<double>>>` column: the three channels.
fn channels(col: &ArrayRef, row: usize) -> Vec<f64> {
    let outer = col.as_list::<i32>().value(row);
    let outer = outer.as_list::<i32>();
    (0..outer.len())
        .map(|c| {
            let mid = outer.value(c);
            let inner = mid.as_list::<i32>().value(0);
            assert_eq!(mid.len(), 1);
            assert_eq!(inner.len(), 1);
            inner.as_primitive::<Float64Type>().value(0)
        })
        .collect()
}

fn column(b: &RecordBatch, name: &str) -> ArrayRef {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .clone()
}

#[test]
fn the_episodes_table_carries_each_episodes_stats() {
    let root = scratch("episode_stats");
    let mut w = DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap();
    let tasks = ["first task", "second task"];
    for (e, &n) in LENGTHS.iter().enumerate() {
        w.begin_episode(tasks[e]).unwrap();
        for _ in 0..n {
            let g = w.frames() + w.open_episode_frames().unwrap();
            let (a, b) = (image(0, g), image(1, g));
            w.push_frame(&state(g), &action(g), &[&a, &b]).unwrap();
        }
        w.end_episode().unwrap();
    }
    w.finish().unwrap();

    let (schema, batches) = read_parquet(&root.join("meta/episodes/chunk-000/file-000.parquet"));
    let features = [
        ("observation.state", "float"),
        ("action", "float"),
        ("observation.images.front", "image"),
        ("observation.images.wrist", "image"),
        ("timestamp", "float"),
        ("frame_index", "int"),
        ("episode_index", "int"),
        ("index", "int"),
        ("task_index", "int"),
    ];
    let image3 = list_of(list_of(list_of(DataType::Float64)));
    for (key, kind) in features {
        for stat in STAT_NAMES {
            let name = format!("stats/{key}/{stat}");
            let got = schema.field_with_name(&name).unwrap().data_type().clone();
            let want = match (kind, stat) {
                (_, "count") | ("int", "min" | "max") => list_of(DataType::Int64),
                ("image", _) => image3.clone(),
                _ => list_of(DataType::Float64),
            };
            assert_eq!(got, want, "{name}");
        }
    }
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.num_rows(), 2);

    let mut from = 0u64;
    for (e, &n) in LENGTHS.iter().enumerate() {
        let last = from + n - 1;
        let row = |key: &str, stat: &str| values(&column(b, &format!("stats/{key}/{stat}")), e);
        // state(g)[j] = j + 0.01 g: min, max and mean of the episode's frames.
        let st = |g: u64| state(g).map(|v| v as f64);
        assert_eq!(row("observation.state", "min"), st(from).to_vec());
        assert_eq!(row("observation.state", "max"), st(last).to_vec());
        assert_eq!(row("observation.state", "count"), [n as f64]);
        let mean = row("observation.state", "mean");
        let want = (from..=last).map(|g| st(g)[1]).sum::<f64>() / n as f64;
        assert!((mean[1] - want).abs() < 1e-9, "{mean:?} vs {want}");
        let act = row("action", "q50");
        let mid = (st(from)[0] + st(last)[0]) / 2.0 + 0.5;
        assert!(
            (act[0] - mid).abs() < 1e-6,
            "action median {act:?} vs {mid}"
        );
        assert_eq!(row("action", "max")[2], action(last)[2] as f64);
        // The default features.
        assert_eq!(row("frame_index", "min"), [0.0]);
        assert_eq!(row("frame_index", "max"), [(n - 1) as f64]);
        assert_eq!(row("frame_index", "mean"), [(n - 1) as f64 / 2.0]);
        assert_eq!(row("index", "min"), [from as f64]);
        assert_eq!(row("index", "max"), [last as f64]);
        assert_eq!(row("episode_index", "mean"), [e as f64]);
        assert_eq!(row("episode_index", "std"), [0.0]);
        assert_eq!(row("task_index", "max"), [e as f64]);
        assert_eq!(row("timestamp", "max"), [(n - 1) as f64 / 30.0]);
        assert_eq!(row("timestamp", "count"), [n as f64]);
        // Images: every 5th frame is sampled; a frame is the background and one 12x12 square,
        // so each channel's mean is the same in every frame.
        for cam in 0..2 {
            let key = ["observation.images.front", "observation.images.wrist"][cam];
            let count = values(&column(b, &format!("stats/{key}/count")), e);
            assert_eq!(count, [n.div_ceil(5) as f64], "{key}");
            let px = (W * H) as f64;
            let sq = (SQ * SQ) as f64;
            let mean = channels(&column(b, &format!("stats/{key}/mean")), e);
            let min = channels(&column(b, &format!("stats/{key}/min")), e);
            let max = channels(&column(b, &format!("stats/{key}/max")), e);
            for c in 0..3 {
                let (bg, fg) = (BACKGROUND[c] as f64, COLOURS[cam][c] as f64);
                let want = (bg * (px - sq) + fg * sq) / px / 255.0;
                assert!((mean[c] - want).abs() < 1e-12, "{key} channel {c}");
                assert_eq!(min[c], bg.min(fg) / 255.0);
                assert_eq!(max[c], bg.max(fg) / 255.0);
            }
        }
        from += n;
    }

    // stats.json is the episodes' aggregate: the counts add up, min/max pool, means weigh.
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/stats.json")).unwrap())
            .unwrap();
    let total: u64 = LENGTHS.iter().sum();
    assert_eq!(stats["observation.state"]["count"][0], total);
    assert_eq!(stats["index"]["max"][0], total - 1);
    let means = values(&column(b, "stats/observation.state/mean"), 0)[0] * LENGTHS[0] as f64
        + values(&column(b, "stats/observation.state/mean"), 1)[0] * LENGTHS[1] as f64;
    let got = stats["observation.state"]["mean"][0].as_f64().unwrap();
    assert!((got - means / total as f64).abs() < 1e-12);
    let images = LENGTHS.iter().map(|n| n.div_ceil(5)).sum::<u64>();
    assert_eq!(stats["observation.images.wrist"]["count"][0], images);
    std::fs::remove_dir_all(&root).unwrap();
}
