//! Varied episodes (`extensions.armsim.randomize`): each reset draws the next episode's start,
//! the world is that draw, each episode's seed and values are its row of the episodes parquet,
//! the same seed records the same dataset, a replay of an episode starts from its draw again,
//! and the seed flags say what is wrong with a scene that varies nothing.

use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use armsim::lerobot::replay::ReplayOptions;
use armsim::scene::Scene;
use armsim::scene::variation::EpisodeStart;
use armsim::session::SessionCommand;
use armsim::sim::{EpisodeStartNow, run_steps};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Value, json};

use super::common::{self, app_for, command};
use super::scratch;

/// The default scene whose cubes are placed, turned, resized, weighed and roughened anew, and
/// whose arm starts somewhere else, at every episode.
fn varied_json(seed: u64) -> Value {
    let text = std::fs::read_to_string(common::asset("assets/scenes/default_scene.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["extensions"]["armsim"]["randomize"] = json!({
        "seed": seed,
        "objects": {
            "region": {"center_xy_m": [0.5, 0.0], "half_size_m": [0.08, 0.14]},
            "yaw_rad": [-1.5, 1.5],
            "mass_scale": [0.5, 1.5],
            "size_scale": [0.8, 1.2],
            "friction": [0.5, 1.0]
        },
        "arm": {"home_q_jitter": 0.05}
    });
    v
}

fn varied_scene(seed: u64) -> Arc<Scene> {
    let scene = armsim::scene::parse_scene(
        &varied_json(seed).to_string(),
        &common::asset("assets/scenes"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    Arc::new(scene)
}

/// Records three episodes of 1.25 s, a reset between them, and returns each one's start as the
/// world had it (after checking the world is the draw).
fn record(scene: Arc<Scene>, root: &Path) -> Vec<EpisodeStart> {
    let mut app = app_for(scene);
    armsim::lerobot::plugin(&mut app);
    armsim::lerobot::start(app.world_mut(), root, 30, None).expect("recording starts");
    let mut starts = Vec::new();
    for e in 0..3 {
        if e > 0 {
            command(&mut app, SessionCommand::Reset);
        }
        let start = app.world().resource::<EpisodeStartNow>().0.clone();
        let start = start.expect("a scene with a randomize block draws every start");
        assert_eq!(start.episode, e);
        let view = common::sim(&app);
        for (body, drawn) in view.objects.iter().zip(&start.objects) {
            let pose = view.body_pose(body.body);
            assert_eq!(body.name, drawn.name);
            assert_eq!(pose.translation.to_array(), drawn.pos_m, "{}", body.name);
            assert!(
                (2.0 * body.half_extent - drawn.size_m[0]).abs() < 1e-6,
                "{}",
                body.name
            );
        }
        for (q, want) in view.joint_positions().iter().zip(&start.home_q) {
            assert!((q - want).abs() < 1e-5, "joint at {q}, drawn {want}");
        }
        starts.push(start);
        command(&mut app, SessionCommand::Start);
        run_steps(&mut app, 300);
    }
    let outcome = armsim::lerobot::finish(app.world_mut())
        .expect("a recording ran")
        .expect("the dataset is written");
    assert!(outcome.contains("3 episodes"), "{outcome}");
    starts
}

fn read(path: &Path) -> RecordBatch {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut batches: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    // A few rows: one batch.
    assert_eq!(batches.len(), 1, "{}", path.display());
    batches.remove(0)
}

fn episodes(root: &Path) -> RecordBatch {
    read(&root.join("meta/episodes/chunk-000/file-000.parquet"))
}

fn floats(batch: &RecordBatch, column: &str, row: usize) -> Vec<f64> {
    let col = batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"));
    let list = col.as_list::<i32>().value(row);
    list.as_primitive::<Float64Type>().values().to_vec()
}

fn float(batch: &RecordBatch, column: &str, row: usize) -> f64 {
    batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .as_primitive::<Float64Type>()
        .value(row)
}

fn int(batch: &RecordBatch, column: &str, row: usize) -> i64 {
    batch
        .column_by_name(column)
        .unwrap_or_else(|| panic!("no column {column}"))
        .as_primitive::<Int64Type>()
        .value(row)
}

#[test]
fn each_episode_starts_from_its_draw_which_its_row_of_the_episodes_table_holds() {
    let root = scratch("varied");
    let starts = record(varied_scene(7), &root);
    let table = episodes(&root);
    assert_eq!(table.num_rows(), 3);
    let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    for (e, start) in starts.iter().enumerate() {
        assert_eq!(int(&table, "armsim/seed", e), 7);
        assert_eq!(int(&table, "armsim/episode", e), e as i64);
        let seed = int(&table, "armsim/episode_seed", e);
        assert_eq!(Some(seed as u64), start.episode_seed);
        for o in &start.objects {
            let col = |what: &str| format!("armsim/{}/{what}", o.name);
            assert_eq!(floats(&table, &col("pos_m"), e), wide(&o.pos_m));
            assert_eq!(floats(&table, &col("quat_xyzw"), e), wide(&o.quat_xyzw));
            assert_eq!(floats(&table, &col("size_m"), e), wide(&o.size_m));
            assert_eq!(float(&table, &col("mass_kg"), e), f64::from(o.mass_kg));
            assert_eq!(float(&table, &col("friction"), e), f64::from(o.friction));
            // Within the block's ranges: 0.08 kg × 0.5..1.5, edges 5 cm × 0.8..1.2.
            assert!((0.04 - 1e-6..=0.12 + 1e-6).contains(&o.mass_kg), "{o:?}");
            assert!((0.04 - 1e-6..=0.06 + 1e-6).contains(&o.size_m[0]), "{o:?}");
            assert!(
                (o.pos_m[0] - 0.5).abs() <= 0.08 && o.pos_m[1].abs() <= 0.14,
                "{o:?}"
            );
        }
        assert_eq!(floats(&table, "armsim/home_q", e), wide(&start.home_q));
    }
    assert_ne!(starts[0].objects, starts[1].objects);
    assert_ne!(starts[1].episode_seed, starts[2].episode_seed);
    // LeRobot's columns are still all there, in their place.
    assert_eq!(table.schema().field(0).name(), "episode_index");
    assert!(table.column_by_name("stats/action/mean").is_some());

    // The same seed records the same dataset: the same starts and the same rows.
    let again = scratch("varied-again");
    assert_eq!(record(varied_scene(7), &again), starts);
    let data = |root: &Path, file: u32| {
        let batch = read(&root.join(format!("data/chunk-000/file-{file:03}.parquet")));
        let state = batch.column_by_name("observation.state").unwrap().clone();
        state.to_data()
    };
    for file in 0..3 {
        assert_eq!(
            data(&root, file),
            data(&again, file),
            "episode {file}'s rows"
        );
    }
    // Another seed, other starts.
    let other = scratch("varied-other");
    let third = record(varied_scene(8), &other);
    assert_ne!(third[0].objects, starts[0].objects);

    // A replay of episode 1 starts from episode 1's draw: the cubes where they were.
    let mut replay = app_for(varied_scene(7));
    armsim::lerobot::replay::plugin(&mut replay);
    let options = ReplayOptions {
        root: root.clone(),
        episode: 1,
        threshold_deg: 1.0,
        robot: None,
        exit_when_done: false,
    };
    armsim::lerobot::replay::start(replay.world_mut(), &options).expect("the replay starts");
    let now = replay
        .world()
        .resource::<EpisodeStartNow>()
        .0
        .clone()
        .unwrap();
    assert_eq!(now.episode_seed, starts[1].episode_seed);
    assert_eq!(now.objects, starts[1].objects);
    let view = common::sim(&replay);
    for (body, drawn) in view.objects.iter().zip(&starts[1].objects) {
        assert_eq!(
            view.body_pose(body.body).translation.to_array(),
            drawn.pos_m
        );
    }
    for dir in [&root, &again, &other] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The flags, as a user runs them: `--randomize-seed` on a scene that varies nothing is an
/// error that says so, before anything runs; `--episode-seed` starts the run from that draw.
#[test]
fn the_seed_flags_need_a_randomize_block_and_start_from_the_seed_given() {
    let path = std::env::temp_dir().join(format!("armsim-varied-{}.json", std::process::id()));
    let mut json = varied_json(7);
    let robot = common::asset("assets/robots/arm6.xml");
    json["robot"]["mjcf_path"] = Value::from(robot.to_str().unwrap());
    std::fs::write(&path, json.to_string()).unwrap();
    let run = |scene: &Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_armsim"))
            .args([
                "--headless",
                "--no-teleop",
                "--no-agent-ports",
                "--steps",
                "1",
            ])
            .arg("--scene")
            .arg(scene)
            .args(extra)
            .env("RUST_LOG", "info")
            .output()
            .unwrap()
    };
    let out = run(
        &common::asset("assets/scenes/default_scene.json"),
        &["--randomize-seed", "3"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no extensions.armsim.randomize block"),
        "{err}"
    );

    let out = run(&path, &["--episode-seed", "424242"]);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("episode 0 starts from episode seed 424242 (randomize seed 7)"),
        "{log}"
    );
    let out = run(&path, &["--episode-seed", "9007199254740992"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("at most 2^53 - 1"), "{err}");
    let _ = std::fs::remove_file(&path);
}

/// `examples/scenes/varied_cubes.json`, which the docs run: it loads as a user's scene does, and
/// its episodes start apart.
#[test]
fn the_example_scene_loads_and_varies_its_episodes() {
    let source = armsim::scene::SceneSource::choose(Some(&common::asset(
        "examples/scenes/varied_cubes.json",
    )));
    let scene = source.load().unwrap_or_else(|e| panic!("{e}"));
    assert!(scene.config.extensions.armsim.randomize.is_some());
    let draw = |k| {
        armsim::scene::variation::start_of(&scene, k)
            .unwrap()
            .expect("the example has a randomize block")
            .1
    };
    let (a, b) = (draw(0), draw(1));
    assert_ne!(a.objects, b.objects);
    assert_ne!(a.home_q, b.home_q);
}
