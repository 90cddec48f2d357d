//! Writes datasets and reads them back with the parquet crate, serde_json and OpenH264's decoder.
//!
//! `ARMSIM_LEROBOT_KEEP=DIR cargo test -p armsim-lerobot two_episodes` keeps the main test's
//! dataset in DIR (which must not exist or be empty), e.g. for `python/tests/lerobot_check.py`.

mod background;
mod bad_input;
mod bench;
mod counts;
mod crash;
mod dataset;
mod episode_columns;
mod episode_stats;
mod mp4;

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::{CameraSpec, DatasetSpec, DatasetWriter, VideoOptions};

pub const W: u32 = 64;
pub const H: u32 = 48;
pub const SQ: usize = 12;
pub const BACKGROUND: [u8; 3] = [30, 30, 30];
pub const COLOURS: [[u8; 3]; 2] = [[230, 40, 40], [40, 90, 230]];

/// A fresh scratch folder (removed first if a previous run left it).
pub fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("armsim-lerobot-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

pub fn spec() -> DatasetSpec {
    DatasetSpec {
        fps: 30,
        robot_type: "armsim_test_arm".into(),
        joint_names: vec!["shoulder".into(), "elbow".into(), "wrist".into()],
        cameras: vec![
            CameraSpec::new("front", W, H),
            CameraSpec::new("wrist", W, H),
        ],
        ..DatasetSpec::default()
    }
}

/// A keyframe every 16 frames (the default is 30).
pub const VIDEO: VideoOptions = VideoOptions {
    keyframe_interval: 16,
};

/// Top-left corner of camera `cam`'s square in the `g`-th saved frame: camera 0's square moves
/// right 2 px per frame, camera 1's moves down 1 px per frame.
pub fn square_at(cam: usize, g: u64) -> (usize, usize) {
    match cam {
        0 => (((g * 2) % (W as u64 - SQ as u64)) as usize, 18),
        _ => (26, (g % (H as u64 - SQ as u64)) as usize),
    }
}

/// The synthetic RGB8 frame of camera `cam` at saved frame `g`.
pub fn image(cam: usize, g: u64) -> Vec<u8> {
    let mut img = BACKGROUND.repeat((W * H) as usize);
    let (x0, y0) = square_at(cam, g);
    for y in y0..y0 + SQ {
        for x in x0..x0 + SQ {
            let at = (y * W as usize + x) * 3;
            img[at..at + 3].copy_from_slice(&COLOURS[cam]);
        }
    }
    img
}

/// Joint positions at saved frame `g`; the targets are these plus 0.5.
pub fn state(g: u64) -> [f32; 3] {
    [
        g as f32 * 0.01,
        1.0 + g as f32 * 0.01,
        2.0 + g as f32 * 0.01,
    ]
}

pub fn action(g: u64) -> [f32; 3] {
    state(g).map(|v| v + 0.5)
}

/// Centre of the pixels close to camera `cam`'s square colour, or `None` if there are none.
pub fn square_centre(cam: usize, rgb: &[u8]) -> Option<(f64, f64)> {
    let want = COLOURS[cam];
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0.0);
    for (i, px) in rgb.chunks_exact(3).enumerate() {
        let close = px
            .iter()
            .zip(want)
            .all(|(&a, b)| (a as i32 - b as i32).abs() < 60);
        if close {
            sx += (i % W as usize) as f64;
            sy += (i / W as usize) as f64;
            n += 1.0;
        }
    }
    (n > 0.0).then(|| (sx / n, sy / n))
}

/// Pushes `n` frames, numbering them from the writer's saved frames (the open episode's count
/// on top): frame `g` carries `image(_, g)`, `state(g)` and `action(g)`.
pub fn push(w: &mut DatasetWriter, n: u64) {
    for _ in 0..n {
        let g = w.frames() + w.open_episode_frames().unwrap();
        let (a, b) = (image(0, g), image(1, g));
        w.push_frame(&state(g), &action(g), &[&a, &b]).unwrap();
    }
}

/// The mp4 at `path`, which must hold `n` frames, decoded (RGB8 each).
pub fn read_video(path: &Path, n: usize) -> Vec<Vec<u8>> {
    let track = mp4::read(&std::fs::read(path).unwrap());
    assert_eq!(track.samples.len(), n, "{}", path.display());
    mp4::decode(&track, 0..n)
}

/// Every file under `root`, relative to it and sorted; fails on any path ending in `.tmp` (a
/// temporary a write left behind: every write renames its temporary into place).
pub fn files_without_tmp(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            assert!(
                !path.to_string_lossy().ends_with(".tmp"),
                "{}",
                path.display()
            );
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    files
}

pub fn read_parquet(path: &Path) -> (arrow_schema::SchemaRef, Vec<RecordBatch>) {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("parquet footer");
    let schema = builder.schema().clone();
    let batches = builder
        .build()
        .expect("reader")
        .collect::<Result<Vec<_>, _>>()
        .expect("batches");
    (schema, batches)
}

/// The app keeps a writer in a Bevy resource, which must be `Send + Sync`.
#[test]
fn writer_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<crate::DatasetWriter>();
}
