//! A two-camera, three-joint, two-episode dataset read back file by file.

use std::path::Path;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_schema::DataType;
use serde_json::{Value, json};

use super::{
    H, VIDEO, W, action, files_without_tmp, mp4, push, read_parquet, read_video, scratch, spec,
    square_at, square_centre, state,
};
use crate::{DatasetSpec, DatasetWriter};

/// Episode lengths of the main test, and its tasks.
const LENGTHS: [u64; 2] = [40, 25];
const TASKS: [&str; 2] = ["pick up the red cube", "put it in the bin"];

fn write_dataset(root: &Path) -> crate::DatasetSummary {
    let mut w = DatasetWriter::create_with_options(root, spec(), VIDEO).unwrap();
    w.begin_episode(TASKS[0]).unwrap();
    push(&mut w, LENGTHS[0]);
    let s0 = w.end_episode().unwrap().expect("episode 0");
    assert_eq!((s0.episode_index, s0.length, s0.task_index), (0, 40, 0));
    assert_eq!((s0.dataset_from_index, s0.dataset_to_index), (0, 40));
    assert!(s0.video_bytes > 0);

    // A discarded episode and an empty one leave no trace.
    w.begin_episode("a task that never makes it").unwrap();
    push(&mut w, 7);
    w.discard_episode();
    w.begin_episode("empty").unwrap();
    assert_eq!(w.end_episode().unwrap(), None);

    w.begin_episode(TASKS[1]).unwrap();
    push(&mut w, LENGTHS[1]);
    // finish() ends the open episode.
    let summary = w.finish().unwrap();
    assert_eq!(
        (summary.episodes, summary.frames, summary.tasks),
        (2, 65, 2)
    );
    let text = summary.to_string();
    assert!(
        text.starts_with("2 episodes, 65 frames, 2 tasks; "),
        "{text}"
    );
    assert!(
        s0.to_string()
            .starts_with("episode 0: 40 frames (index 0..40), task 0, "),
        "{s0}"
    );
    summary
}

#[test]
fn two_episodes_two_cameras() {
    let keep = std::env::var_os("ARMSIM_LEROBOT_KEEP").map(std::path::PathBuf::from);
    let root = keep.clone().unwrap_or_else(|| scratch("two_episodes"));
    let summary = write_dataset(&root);
    let on_disk: u64 = summary
        .files
        .iter()
        .map(|f| std::fs::metadata(root.join(f)).unwrap().len())
        .sum();
    assert_eq!(on_disk, summary.total_bytes, "summary bytes = file sizes");
    // A data file and an mp4 per camera for each episode, and four metadata files.
    assert_eq!(summary.files.len(), 2 + 2 * 2 + 4, "{:?}", summary.files);

    check_info(&root);
    check_data(&root);
    check_episodes(&root);
    check_tasks(&root);
    check_stats(&root);
    for cam in 0..2 {
        check_video(&root, cam);
    }
    if keep.is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    }
}

fn check_info(root: &Path) {
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/info.json")).unwrap())
            .unwrap();
    let names = json!(["shoulder.pos", "elbow.pos", "wrist.pos"]);
    let video = |_cam: &str| {
        json!({
            "dtype": "video", "shape": [H, W, 3], "names": ["height", "width", "channels"],
            "info": {
                "video.height": H, "video.width": W, "video.codec": "h264",
                "video.pix_fmt": "yuv420p", "video.is_depth_map": false, "video.fps": 30,
                "video.channels": 3, "has_audio": false
            }
        })
    };
    let scalar = |dtype: &str| json!({"dtype": dtype, "shape": [1], "names": null});
    let expected = json!({
        "codebase_version": "v3.0",
        "robot_type": "armsim_test_arm",
        "total_episodes": 2,
        "total_frames": 65,
        "total_tasks": 2,
        "chunks_size": 1000,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 200,
        "fps": 30,
        "splits": {"train": "0:2"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": {
            "observation.state": {"dtype": "float32", "shape": [3], "names": names},
            "action": {"dtype": "float32", "shape": [3], "names": names},
            "observation.images.front": video("front"),
            "observation.images.wrist": video("wrist"),
            "timestamp": scalar("float32"),
            "frame_index": scalar("int64"),
            "episode_index": scalar("int64"),
            "index": scalar("int64"),
            "task_index": scalar("int64"),
        }
    });
    assert_eq!(info, expected);
    // Keys in LeRobot's order, indented by four spaces.
    let text = std::fs::read_to_string(root.join("meta/info.json")).unwrap();
    assert!(
        text.starts_with("{\n    \"codebase_version\": \"v3.0\",\n    \"robot_type\""),
        "{text}"
    );
    let pos = |k: &str| text.find(k).unwrap();
    assert!(pos("\"observation.state\"") < pos("\"action\""));
    assert!(pos("\"action\"") < pos("\"observation.images.front\""));
    assert!(pos("\"observation.images.wrist\"") < pos("\"timestamp\""));
}

fn check_data(root: &Path) {
    // Each episode has a data file of its own.
    let (schema, mut batches) = read_parquet(&root.join("data/chunk-000/file-000.parquet"));
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 40);
    let (schema1, more) = read_parquet(&root.join("data/chunk-000/file-001.parquet"));
    assert_eq!(schema, schema1);
    batches.extend(more);
    let cols: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        cols,
        [
            "observation.state",
            "action",
            "timestamp",
            "frame_index",
            "episode_index",
            "index",
            "task_index"
        ]
    );
    for key in ["observation.state", "action"] {
        match schema.field_with_name(key).unwrap().data_type() {
            DataType::FixedSizeList(item, 3) => assert_eq!(item.data_type(), &DataType::Float32),
            other => panic!("{key} is {other:?}, not fixed_size_list<float32>[3]"),
        }
    }
    assert_eq!(
        schema.field_with_name("timestamp").unwrap().data_type(),
        &DataType::Float32
    );
    for key in ["frame_index", "episode_index", "index", "task_index"] {
        assert_eq!(
            schema.field_with_name(key).unwrap().data_type(),
            &DataType::Int64,
            "{key}"
        );
    }
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 65);

    let mut g = 0u64;
    for batch in &batches {
        let st = batch.column(0).as_fixed_size_list();
        let ac = batch.column(1).as_fixed_size_list();
        let ts = batch.column(2).as_primitive::<Float32Type>();
        let fi = batch.column(3).as_primitive::<Int64Type>();
        let ep = batch.column(4).as_primitive::<Int64Type>();
        let ix = batch.column(5).as_primitive::<Int64Type>();
        let tk = batch.column(6).as_primitive::<Int64Type>();
        for r in 0..batch.num_rows() {
            let (episode, frame) = if g < 40 { (0, g) } else { (1, g - 40) };
            assert_eq!(ix.value(r), g as i64, "index is global and continuous");
            assert_eq!(fi.value(r), frame as i64);
            assert_eq!(ep.value(r), episode);
            assert_eq!(tk.value(r), episode, "task_index");
            // Exactly the float32 nearest to frame_index / fps.
            let want = (frame as f64 / 30.0) as f32;
            assert_eq!(
                ts.value(r).to_bits(),
                want.to_bits(),
                "timestamp of frame {frame}"
            );
            let s = st.value(r);
            let s = s.as_primitive::<Float32Type>();
            let a = ac.value(r);
            let a = a.as_primitive::<Float32Type>();
            assert_eq!(s.values().to_vec(), state(g).to_vec());
            assert_eq!(a.values().to_vec(), action(g).to_vec());
            g += 1;
        }
    }
    assert_eq!(g, 65);
}

fn check_episodes(root: &Path) {
    let (schema, batches) = read_parquet(&root.join("meta/episodes/chunk-000/file-000.parquet"));
    let mut cols: Vec<String> = vec![
        "episode_index",
        "tasks",
        "length",
        "data/chunk_index",
        "data/file_index",
        "dataset_from_index",
        "dataset_to_index",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    for key in ["observation.images.front", "observation.images.wrist"] {
        for c in [
            "chunk_index",
            "file_index",
            "from_timestamp",
            "to_timestamp",
        ] {
            cols.push(format!("videos/{key}/{c}"));
        }
    }
    for key in [
        "observation.state",
        "action",
        "observation.images.front",
        "observation.images.wrist",
        "timestamp",
        "frame_index",
        "episode_index",
        "index",
        "task_index",
    ] {
        for stat in crate::stats::STAT_NAMES {
            cols.push(format!("stats/{key}/{stat}"));
        }
    }
    cols.push("meta/episodes/chunk_index".into());
    cols.push("meta/episodes/file_index".into());
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, cols);
    assert_eq!(batches.len(), 1);
    let b = &batches[0];
    assert_eq!(b.num_rows(), 2);
    let int = |name: &str| -> Vec<i64> {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    };
    let float = |name: &str| -> Vec<f64> {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Float64Type>()
            .values()
            .to_vec()
    };
    assert_eq!(int("episode_index"), [0, 1]);
    assert_eq!(int("length"), [40, 25]);
    assert_eq!(int("dataset_from_index"), [0, 40]);
    assert_eq!(int("dataset_to_index"), [40, 65]);
    assert_eq!(int("data/chunk_index"), [0, 0]);
    assert_eq!(int("data/file_index"), [0, 1]);
    let tasks = b.column_by_name("tasks").unwrap().as_list::<i32>();
    for (i, task) in TASKS.iter().enumerate() {
        let v = tasks.value(i);
        let v = v.as_string::<i32>();
        assert_eq!((v.len(), v.value(0)), (1, *task));
    }
    for key in ["observation.images.front", "observation.images.wrist"] {
        assert_eq!(int(&format!("videos/{key}/chunk_index")), [0, 0]);
        // Each episode has an mp4 of its own, starting at 0.
        assert_eq!(int(&format!("videos/{key}/file_index")), [0, 1]);
        assert_eq!(float(&format!("videos/{key}/from_timestamp")), [0.0, 0.0]);
        assert_eq!(
            float(&format!("videos/{key}/to_timestamp")),
            [40.0 / 30.0, 25.0 / 30.0]
        );
    }
}

fn check_tasks(root: &Path) {
    let (schema, batches) = read_parquet(&root.join("meta/tasks.parquet"));
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["task_index", "__index_level_0__"]);
    // The pandas index must be declared in the Arrow schema metadata.
    let pandas: Value =
        serde_json::from_str(schema.metadata().get("pandas").expect("pandas metadata")).unwrap();
    assert_eq!(pandas["index_columns"], json!(["__index_level_0__"]));
    let b = &batches[0];
    assert_eq!(
        b.column(0).as_primitive::<Int64Type>().values().to_vec(),
        [0, 1]
    );
    let t = b.column(1).as_string::<i32>();
    assert_eq!((t.value(0), t.value(1)), (TASKS[0], TASKS[1]));
}

fn check_stats(root: &Path) {
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/stats.json")).unwrap())
            .unwrap();
    let keys: Vec<&String> = stats.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 9, "{keys:?}");
    for (key, st) in stats.as_object().unwrap() {
        for k in [
            "min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99",
        ] {
            assert!(st.get(k).is_some(), "{key} has no {k}");
        }
    }
    let close = |v: &Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-5;
    let s = &stats["observation.state"];
    assert_eq!(s["count"], json!([65]));
    assert!(close(&s["min"][1], 1.0) && close(&s["max"][1], 1.64), "{s}");
    assert!(close(&s["mean"][0], 0.32), "{s}");
    assert!(close(&stats["action"]["min"][2], 2.5));
    // Int features keep integer min and max, as numpy gives them to LeRobot.
    assert_eq!(stats["frame_index"]["max"], json!([39]));
    assert_eq!(stats["index"]["max"], json!([64]));
    assert_eq!(stats["episode_index"]["count"], json!([65]));
    for key in ["observation.images.front", "observation.images.wrist"] {
        let img = &stats[key];
        // Every 5th frame of each episode: 8 + 5.
        assert_eq!(img["count"], json!([13]), "{key}");
        for k in ["min", "max", "mean", "std", "q01", "q50", "q99"] {
            let v = img[k].as_array().unwrap();
            assert_eq!(v.len(), 3, "{key} {k} has 3 channels");
            for ch in v {
                let x = ch[0][0].as_f64().unwrap();
                assert!((0.0..=1.0).contains(&x), "{key} {k} {x}");
                assert_eq!(ch.as_array().unwrap().len(), 1);
            }
        }
        // Mostly background: the median is the background level in every channel.
        assert!(close(&img["q50"][0][0][0], 30.0 / 255.0), "{img}");
    }
    assert!(close(
        &stats["observation.images.front"]["max"][0][0][0],
        230.0 / 255.0
    ));
}

fn check_video(root: &Path, cam: usize) {
    let key = ["observation.images.front", "observation.images.wrist"][cam];
    // Episode e is file e; its first frame is global frame `first`.
    for (file, first, n) in [(0, 0u64, 40usize), (1, 40, 25)] {
        let path = root.join(format!("videos/{key}/chunk-000/file-{file:03}.mp4"));
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 1000, "mp4 of {} bytes", bytes.len());
        let track = mp4::read(&bytes);
        assert_eq!((track.width as u32, track.height as u32), (W, H));
        assert_eq!(track.samples.len(), n, "{}", path.display());
        assert!(
            !track.has_edit_list,
            "pts must start at 0 without an edit list"
        );
        // Constant frame rate: every frame lasts exactly 1/30 s, in FFmpeg's time base for
        // 30 fps (what LeRobot's own videos have, so its merge can join them).
        assert_eq!(track.timescale, 15_360);
        assert!(
            track.durations.iter().all(|&d| d == 512),
            "{:?}",
            track.durations
        );
        // The episode's start and every 16th frame are keyframes.
        for k in (0..n).step_by(16) {
            assert!(
                track.keyframes.contains(&k),
                "sample {k} is not a keyframe: {:?}",
                track.keyframes
            );
        }
        let frames = mp4::decode(&track, 0..n);
        assert_eq!(frames.len(), n, "decoded frames");
        for (i, rgb) in frames.iter().enumerate() {
            assert_square(cam, first + i as u64, rgb);
        }
    }
}

fn assert_square(cam: usize, g: u64, rgb: &[u8]) {
    let (x0, y0) = square_at(cam, g);
    let want = (x0 as f64 + 5.5, y0 as f64 + 5.5);
    let got =
        square_centre(cam, rgb).unwrap_or_else(|| panic!("camera {cam} frame {g}: no square"));
    let err = ((got.0 - want.0).powi(2) + (got.1 - want.1).powi(2)).sqrt();
    assert!(
        err < 0.6,
        "camera {cam} frame {g}: square at {got:?}, expected {want:?}"
    );
}

/// Three episodes: three data files and three mp4s per camera, each named by its episode's row.
#[test]
fn every_episode_has_files_of_its_own() {
    let root = scratch("split");
    let mut w = DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap();
    for (e, n) in [(0, 5u64), (1, 6), (2, 4)] {
        w.begin_episode(TASKS[e % 2]).unwrap();
        push(&mut w, n);
        w.end_episode().unwrap();
    }
    let summary = w.finish().unwrap();
    assert_eq!(summary.files.len(), 3 + 2 * 3 + 4);
    let (_, batches) = read_parquet(&root.join("meta/episodes/chunk-000/file-000.parquet"));
    let b = &batches[0];
    let col = |name: &str| b.column_by_name(name).unwrap().clone();
    let ints = |name: &str| col(name).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(ints("data/file_index"), [0, 1, 2]);
    assert_eq!(ints("dataset_from_index"), [0, 5, 11]);
    let key = "videos/observation.images.wrist";
    assert_eq!(ints(&format!("{key}/file_index")), [0, 1, 2]);
    let from = col(&format!("{key}/from_timestamp"));
    assert_eq!(
        from.as_primitive::<Float64Type>().values().to_vec(),
        [0.0, 0.0, 0.0]
    );
    let to = col(&format!("{key}/to_timestamp"));
    assert_eq!(
        to.as_primitive::<Float64Type>().values().to_vec(),
        [5.0 / 30.0, 6.0 / 30.0, 4.0 / 30.0]
    );
    // The task table lists each task once.
    let (_, tasks) = read_parquet(&root.join("meta/tasks.parquet"));
    assert_eq!(tasks[0].num_rows(), 2);
    for (file, first_g, n) in [(0, 0u64, 5usize), (1, 5, 6), (2, 11, 4)] {
        let (_, rows) = read_parquet(&root.join(format!("data/chunk-000/file-{file:03}.parquet")));
        let index = rows[0].column_by_name("index").unwrap();
        assert_eq!(index.as_primitive::<Int64Type>().value(0), first_g as i64);
        assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), n);
        let frames = read_video(&root.join(format!("{key}/chunk-000/file-{file:03}.mp4")), n);
        assert_square(1, first_g, &frames[0]);
    }
    // No temporary file is left behind.
    files_without_tmp(&root);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A dataset without cameras: `video_path` is null and no video folder is made.
#[test]
fn no_cameras() {
    let root = scratch("no_cameras");
    let spec = DatasetSpec {
        fps: 7,
        joint_names: vec!["j".into()],
        ..DatasetSpec::default()
    };
    let mut w = DatasetWriter::create(&root, spec).unwrap();
    w.begin_episode("wave").unwrap();
    for i in 0..3 {
        w.push_frame(&[i as f32], &[0.0], &[]).unwrap();
    }
    let summary = w.finish().unwrap();
    assert_eq!(
        (summary.episodes, summary.frames, summary.video_bytes),
        (1, 3, 0)
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["video_path"], Value::Null);
    assert_eq!(info["fps"], json!(7));
    assert!(!root.join("videos").exists());
    let (_, batches) = read_parquet(&root.join("data/chunk-000/file-000.parquet"));
    let ts = batches[0].column(2).as_primitive::<Float32Type>();
    assert_eq!(ts.value(2), (2.0f64 / 7.0) as f32);
    std::fs::remove_dir_all(&root).unwrap();
}
