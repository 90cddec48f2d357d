//! Counts that cannot disagree: every saved episode's videos hold exactly its rows' frames at
//! `k / fps`, read back from the files; an episode whose video does not is dropped whole and
//! named. And episodes read back (`read_episode`) as they were written.

use super::{VIDEO, action, files_without_tmp, push, scratch, spec, state};
use crate::mp4::{check_frames, track_timing};
use crate::{DatasetWriter, LeRobotError, read_episode};

#[test]
fn an_episode_whose_video_misses_a_frame_is_dropped_and_named() {
    let root = scratch("counts");
    let mut w = DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap();
    w.begin_episode("kept").unwrap();
    push(&mut w, 35);
    let kept = w.end_episode().unwrap().expect("episode 0");
    assert_eq!(kept.episode_index, 0);
    // Episode 1 loses a frame of its wrist camera's video: 30 rows, 29 frames.
    w.begin_episode("broken").unwrap();
    push(&mut w, 30);
    w.lose_a_frame_for_test(1);
    let err = w.end_episode().expect_err("a video one frame short");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            LeRobotError::EpisodeDropped {
                episode: 1,
                frames: 30,
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.starts_with("episode 1 (30 rows) is dropped: its video does not match its rows: ")
            && text.contains("observation.images.wrist: ")
            && text.contains("holds 29 video frame(s) for 30 row(s)"),
        "{text}"
    );
    // The writer goes on: the next episode takes index 1, and nothing of the dropped one stays.
    w.begin_episode("kept too").unwrap();
    push(&mut w, 31);
    let next = w.end_episode().unwrap().expect("episode 1");
    assert_eq!((next.episode_index, next.dataset_from_index), (1, 35));
    let summary = w.finish().unwrap();
    assert_eq!((summary.episodes, summary.frames), (2, 66));
    let videos: Vec<_> = files_without_tmp(&root)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|x| x == "mp4"))
        .collect();
    assert_eq!(videos.len(), 4, "{videos:?}");
    for (video, frames) in videos.iter().zip([35, 31, 35, 31]) {
        check_frames(&root.join(video), frames, 30).unwrap();
    }
    // The dropped episode's rows are in no data file: episode 1 reads back as the second saved one, numbered on from episode 0.
    let e1 = read_episode(&root, 1).unwrap();
    assert_eq!(e1.states.len(), 31);
    assert_eq!(e1.states[0], state(35).to_vec());
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_frame_check_reads_the_files_counts_and_times() {
    let root = scratch("frame-check");
    let mut w = DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap();
    w.begin_episode("one").unwrap();
    push(&mut w, 20);
    w.finish().unwrap();
    let mp4 = root.join("videos/observation.images.front/chunk-000/file-000.mp4");
    let t = track_timing(&mp4).unwrap();
    assert_eq!(
        (t.timescale, t.samples, t.durations.len()),
        (15_360, 20, 20)
    );
    assert!(
        t.durations[..19].iter().all(|&d| d == 512),
        "{:?}",
        t.durations
    );
    check_frames(&mp4, 20, 30).unwrap();
    let e = check_frames(&mp4, 20, 25).unwrap_err();
    assert!(
        e.contains("timescale 15360 has no whole tick count per frame at 25 fps"),
        "{e}"
    );
    let e = check_frames(&mp4, 21, 30).unwrap_err();
    assert!(e.ends_with("holds 20 video frame(s) for 21 row(s)"), "{e}");
    let e = check_frames(&mp4, 20, 60).unwrap_err();
    assert!(
        e.contains("frame 1 starts 512 tick(s) after frame 0, not 256"),
        "{e}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_episode_reads_back_as_written() {
    let root = scratch("read-back");
    let mut w = DatasetWriter::create_with_options(&root, spec(), VIDEO).unwrap();
    for n in [32, 40] {
        w.begin_episode("task").unwrap();
        push(&mut w, n);
        w.end_episode().unwrap();
    }
    w.finish().unwrap();
    let e = read_episode(&root, 1).unwrap();
    assert_eq!((e.episode, e.total_episodes, e.fps), (1, 2, 30));
    assert_eq!(e.robot_type, "armsim_test_arm");
    assert_eq!(e.state_names, vec!["shoulder", "elbow", "wrist"]);
    assert_eq!(e.action_names, e.state_names);
    assert_eq!(e.states.len(), 40);
    for (k, (s, a)) in e.states.iter().zip(&e.actions).enumerate() {
        let g = 32 + k as u64;
        assert_eq!(
            (s.as_slice(), a.as_slice()),
            (&state(g)[..], &action(g)[..])
        );
    }
    let err = read_episode(&root, 2).unwrap_err().to_string();
    assert!(
        err.ends_with("episode 2 is out of range: the dataset has 2 episode(s), 0 to 1"),
        "{err}"
    );
    let err = read_episode(&root.join("nowhere"), 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("info.json"), "{err}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn ffmpegs_time_base_for_a_rate_is_the_rate_doubled_past_10000() {
    use crate::mp4::ffmpeg_timescale;
    assert_eq!(ffmpeg_timescale(30), 15_360);
    assert_eq!(ffmpeg_timescale(60), 15_360);
    assert_eq!(ffmpeg_timescale(25), 12_800);
    assert_eq!(ffmpeg_timescale(24), 12_288);
    assert_eq!(ffmpeg_timescale(10_000), 10_000);
}
