//! A recording killed with SIGKILL in the middle of an episode: this test binary runs itself as
//! the recorder (a child process that saves three episodes, pushes frames into a fourth and
//! waits), kills it, and reads what is left the way LeRobot's loader does: `info.json`'s totals,
//! the episodes table, the data files it names (and no others), and the mp4s it names, decoded.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use serde_json::Value;

use super::{
    VIDEO, files_without_tmp, image, push, read_parquet, read_video, scratch, spec, square_centre,
};
use crate::DatasetWriter;

/// Set in the child: the dataset root it records into.
const CHILD: &str = "ARMSIM_LEROBOT_KILLED_CHILD";
const LENGTHS: [u64; 3] = [9, 14, 6];
/// Frames pushed into the episode the kill cuts short.
const CUT: u64 = 11;

/// The child: saves the episodes, says so on stdout after each, opens one more and waits for the
/// kill.
fn record(root: &Path) -> ! {
    let mut w = DatasetWriter::create_with_options(root, spec(), VIDEO).unwrap();
    for (e, &n) in LENGTHS.iter().enumerate() {
        w.begin_episode(&format!("task {}", e % 2)).unwrap();
        push(&mut w, n);
        w.end_episode().unwrap().expect("saved");
        println!("killed-child: saved {e}");
    }
    w.begin_episode("cut short").unwrap();
    push(&mut w, CUT);
    println!("killed-child: open");
    loop {
        std::thread::park();
    }
}

#[test]
fn killed_mid_episode_keeps_every_saved_episode() {
    if let Some(root) = std::env::var_os(CHILD) {
        record(Path::new(&root));
    }
    let root = scratch("killed");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tests::crash::killed_mid_episode_keeps_every_saved_episode",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &root)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut said = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        // libtest may print the test's name on the same line, before the child's first words.
        if let Some(at) = line.find("killed-child: ") {
            let msg = &line[at + "killed-child: ".len()..];
            said.push(msg.to_string());
            if msg == "open" {
                break;
            }
        }
    }
    assert_eq!(said, ["saved 0", "saved 1", "saved 2", "open"]);
    // SIGKILL: no destructor, no finish.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status}");
    check_saved_episodes(&root);
    std::fs::remove_dir_all(&root).unwrap();
}

fn check_saved_episodes(root: &Path) {
    let total: u64 = LENGTHS.iter().sum();
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["total_episodes"], 3);
    assert_eq!(info["total_frames"], total);
    assert_eq!(info["total_tasks"], 2);
    assert_eq!(info["splits"]["train"], "0:3");
    let stats: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/stats.json")).unwrap())
            .unwrap();
    assert_eq!(stats["observation.state"]["count"][0], total);
    let (_, tasks) = read_parquet(&root.join("meta/tasks.parquet"));
    assert_eq!(tasks[0].num_rows(), 2);

    let (_, batches) = read_parquet(&root.join("meta/episodes/chunk-000/file-000.parquet"));
    let b = &batches[0];
    assert_eq!(b.num_rows(), 3);
    let ints = |name: &str| -> Vec<i64> {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    };
    assert_eq!(ints("episode_index"), [0, 1, 2]);
    assert_eq!(ints("length"), LENGTHS.map(|n| n as i64));
    let mut named: Vec<PathBuf> = Vec::new();
    let mut from = 0u64;
    for (e, &n) in LENGTHS.iter().enumerate() {
        // The data file the row names holds exactly the episode's rows.
        let (chunk, file) = (ints("data/chunk_index")[e], ints("data/file_index")[e]);
        let rel = format!("data/chunk-{chunk:03}/file-{file:03}.parquet");
        let (_, rows) = read_parquet(&root.join(&rel));
        named.push(rel.into());
        let mut g = from;
        for batch in &rows {
            let ep = batch.column_by_name("episode_index").unwrap();
            let ix = batch.column_by_name("index").unwrap();
            for r in 0..batch.num_rows() {
                assert_eq!(ep.as_primitive::<Int64Type>().value(r), e as i64);
                assert_eq!(ix.as_primitive::<Int64Type>().value(r), g as i64);
                g += 1;
            }
        }
        assert_eq!(g - from, n, "rows of episode {e}");
        assert_eq!(ints("dataset_from_index")[e], from as i64);
        // The mp4 the row names holds the episode's frames, from its own start.
        for (cam, key) in ["observation.images.front", "observation.images.wrist"]
            .iter()
            .enumerate()
        {
            let (chunk, file) = (
                ints(&format!("videos/{key}/chunk_index"))[e],
                ints(&format!("videos/{key}/file_index"))[e],
            );
            let to = b
                .column_by_name(&format!("videos/{key}/to_timestamp"))
                .unwrap()
                .as_primitive::<Float64Type>()
                .value(e);
            assert_eq!(to, n as f64 / 30.0);
            let path = root.join(format!("videos/{key}/chunk-{chunk:03}/file-{file:03}.mp4"));
            let frames = read_video(&path, n as usize);
            // Its last frame shows the square where that frame put it.
            let want = square_centre(cam, &image(cam, from + n - 1)).unwrap();
            let got = square_centre(cam, &frames[n as usize - 1]).expect("a square");
            let err = ((got.0 - want.0).powi(2) + (got.1 - want.1).powi(2)).sqrt();
            assert!(
                err < 0.6,
                "{key} episode {e}: square at {got:?}, not {want:?}"
            );
        }
        from += n;
    }
    // LeRobot loads every parquet under data/: the cut episode left none, and nothing is
    // half-written.
    let found: Vec<PathBuf> = files_without_tmp(root)
        .into_iter()
        .filter(|path| path.starts_with("data"))
        .collect();
    assert_eq!(found, named);
}
