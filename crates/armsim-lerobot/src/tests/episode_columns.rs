//! Columns of the episodes table that LeRobot does not define (`DatasetSpec::episode_columns`):
//! written after LeRobot's own with their types and each episode's values, checked when an
//! episode begins, and refused where they would take a LeRobot column's name.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_schema::DataType;

use super::{action, image, read_parquet, scratch, spec, state};
use crate::{
    DatasetSpec, DatasetWriter, EpisodeColumn, EpisodeValue, EpisodeValueKind, LeRobotError,
};

fn spec_with_columns() -> DatasetSpec {
    DatasetSpec {
        episode_columns: vec![
            EpisodeColumn::new("armsim/episode_seed", EpisodeValueKind::Int),
            EpisodeColumn::new("armsim/cube/mass_kg", EpisodeValueKind::Float),
            EpisodeColumn::new("armsim/cube/pos_m", EpisodeValueKind::Floats(3)),
        ],
        ..spec()
    }
}

fn values(e: u64) -> Vec<EpisodeValue> {
    vec![
        EpisodeValue::Int(1000 + e as i64),
        EpisodeValue::Float(0.05 * (e + 1) as f64),
        EpisodeValue::Floats(vec![0.5, -0.1 * e as f64, 1.025]),
    ]
}

fn push_frames(w: &mut DatasetWriter, n: u64) {
    for _ in 0..n {
        let g = w.frames() + w.open_episode_frames().unwrap();
        let (a, b) = (image(0, g), image(1, g));
        w.push_frame(&state(g), &action(g), &[&a, &b]).unwrap();
    }
}

#[test]
fn each_episodes_values_are_its_row_of_the_episodes_table() {
    let root = scratch("episode_columns");
    let mut w = DatasetWriter::create(&root, spec_with_columns()).unwrap();
    for e in 0..3 {
        w.begin_episode_with("pick", values(e)).unwrap();
        push_frames(&mut w, 4);
        w.end_episode().unwrap();
    }
    w.finish().unwrap();
    let (schema, batches) = read_parquet(&root.join("meta/episodes/chunk-000/file-000.parquet"));
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
    // After LeRobot's own columns, in the spec's order.
    assert!(at("meta/episodes/file_index") < at("armsim/episode_seed"));
    assert_eq!(at("armsim/cube/pos_m"), names.len() - 1);
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 3);
    let seed = batch.column(at("armsim/episode_seed"));
    assert_eq!(seed.data_type(), &DataType::Int64);
    let seeds: Vec<i64> = seed.as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(seeds, vec![1000, 1001, 1002]);
    let mass = batch.column(at("armsim/cube/mass_kg"));
    assert_eq!(mass.as_primitive::<Float64Type>().value(2), 0.05 * 3.0);
    let pos = batch
        .column(at("armsim/cube/pos_m"))
        .as_list::<i32>()
        .value(1);
    let pos: Vec<f64> = pos.as_primitive::<Float64Type>().values().to_vec();
    assert_eq!(pos, vec![0.5, -0.1, 1.025]);
}

#[test]
fn values_that_do_not_fit_their_columns_are_refused_and_lose_nothing() {
    let root = scratch("episode_columns_bad");
    let mut w = DatasetWriter::create(&root, spec_with_columns()).unwrap();
    let short = values(0)[..2].to_vec();
    assert!(matches!(
        w.begin_episode_with("pick", short),
        Err(LeRobotError::InvalidEpisodeValues(_))
    ));
    let mut nan = values(0);
    nan[1] = EpisodeValue::Float(f64::NAN);
    assert!(matches!(
        w.begin_episode_with("pick", nan),
        Err(LeRobotError::InvalidEpisodeValues(_))
    ));
    let mut wrong = values(0);
    wrong[2] = EpisodeValue::Floats(vec![1.0]);
    let e = w.begin_episode_with("pick", wrong).unwrap_err().to_string();
    assert!(e.contains("armsim/cube/pos_m"), "{e}");
    // Nothing was opened: a good episode still goes in as episode 0.
    w.begin_episode_with("pick", values(0)).unwrap();
    push_frames(&mut w, 2);
    assert_eq!(w.end_episode().unwrap().map(|s| s.episode_index), Some(0));
}

#[test]
fn an_episode_column_may_not_take_a_lerobot_name() {
    for name in ["length", "stats/x/mean", "videos/a", "", "tasks"] {
        let spec = DatasetSpec {
            episode_columns: vec![EpisodeColumn::new(name, EpisodeValueKind::Int)],
            ..spec()
        };
        let root = scratch("episode_columns_name");
        let Err(e) = DatasetWriter::create(&root, spec) else {
            panic!("episode column {name:?} was accepted");
        };
        assert!(matches!(e, LeRobotError::InvalidSpec(_)), "{name}: {e}");
    }
    let twice = DatasetSpec {
        episode_columns: vec![
            EpisodeColumn::new("a", EpisodeValueKind::Int),
            EpisodeColumn::new("a", EpisodeValueKind::Float),
        ],
        ..spec()
    };
    let Err(e) = DatasetWriter::create(&scratch("episode_columns_twice"), twice) else {
        panic!("a column named twice was accepted");
    };
    assert!(e.to_string().contains("twice"), "{e}");
}
