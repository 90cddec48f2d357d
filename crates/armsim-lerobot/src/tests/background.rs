//! The background writer writes the very dataset the synchronous one does, reports what it
//! saved in order, and stops at its first failure with the episodes saved before it.

use std::path::Path;
use std::sync::Arc;

use super::{VIDEO, action, image, scratch, spec, state};
use crate::{BackgroundWriter, DatasetWriter, SharedImage, WriterEvent};

fn images(g: u64) -> Vec<SharedImage> {
    vec![Arc::new(image(0, g)), Arc::new(image(1, g))]
}

/// Every file under `root`, relative, with its bytes, sorted.
fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn writes_the_same_dataset_as_the_synchronous_writer() {
    let (a, b) = (scratch("bg-sync"), scratch("bg-thread"));
    let mut sync = DatasetWriter::create_with_options(&a, spec(), VIDEO).unwrap();
    let mut bg =
        BackgroundWriter::start(DatasetWriter::create_with_options(&b, spec(), VIDEO).unwrap())
            .unwrap();
    let mut g = 0;
    for (task, n, keep) in [
        ("first", 40, true),
        ("dropped", 7, false),
        ("second", 25, true),
    ] {
        sync.begin_episode(task).unwrap();
        bg.begin_episode(task);
        for _ in 0..n {
            let (i0, i1) = (image(0, g), image(1, g));
            sync.push_frame(&state(g), &action(g), &[&i0, &i1]).unwrap();
            bg.push_frame(state(g).to_vec(), action(g).to_vec(), images(g));
            g += 1;
        }
        assert_eq!(bg.open_episode_frames(), Some(n));
        if keep {
            sync.end_episode().unwrap();
            bg.end_episode();
        } else {
            sync.discard_episode();
            bg.discard_episode();
            g -= n;
        }
    }
    assert_eq!((bg.episodes(), bg.frames()), (2, 65));
    let expected = sync.finish().unwrap();
    let done = bg.finish();
    assert!(done.failure.is_none(), "{:?}", done.failure);
    let summary = done.result.unwrap();
    assert_eq!(
        (summary.episodes, summary.frames),
        (expected.episodes, expected.frames)
    );
    let saved: Vec<u64> = done
        .events
        .iter()
        .map(|e| match e {
            WriterEvent::EpisodeSaved(s) => s.length,
            WriterEvent::Failed(f) => panic!("failed: {f}"),
            WriterEvent::EpisodeDropped { message, .. } => panic!("dropped: {message}"),
        })
        .collect();
    assert_eq!(saved, vec![40, 25]);
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(
        fa.iter().map(|f| &f.0).collect::<Vec<_>>(),
        fb.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{name} differs");
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn stops_at_its_first_failure_and_keeps_the_saved_episodes() {
    let root = scratch("bg-fail");
    let mut bg =
        BackgroundWriter::start(DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap())
            .unwrap();
    bg.begin_episode("kept");
    for g in 0..10 {
        bg.push_frame(state(g).to_vec(), action(g).to_vec(), images(g));
    }
    bg.end_episode();
    bg.begin_episode("broken");
    let mut bad = state(10).to_vec();
    bad[1] = f32::NAN;
    bg.push_frame(bad, action(10).to_vec(), images(10));
    // Skipped: the thread stopped at the NaN.
    bg.push_frame(state(11).to_vec(), action(11).to_vec(), images(11));
    bg.end_episode();
    let done = bg.finish();
    let failure = done.failure.expect("the NaN is reported");
    assert!(failure.contains("elbow"), "{failure}");
    assert!(
        done.events
            .iter()
            .any(|e| matches!(e, WriterEvent::Failed(f) if *f == failure))
    );
    let summary = done.result.unwrap();
    assert_eq!((summary.episodes, summary.frames), (1, 10));
    let _ = std::fs::remove_dir_all(&root);
}
