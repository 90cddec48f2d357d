//! Bad input gets a clear error, is not recorded, and leaves the writer usable.

use super::{H, W, action, image, scratch, spec, state};
use crate::{CameraSpec, DatasetWriter, LeRobotError};

fn writer(name: &str) -> (std::path::PathBuf, DatasetWriter) {
    let root = scratch(name);
    let w = DatasetWriter::create(&root, spec()).unwrap();
    (root, w)
}

#[test]
fn refuses_bad_frames_without_recording_them() {
    let (root, mut w) = writer("bad_frames");
    let (a, b) = (image(0, 0), image(1, 0));
    let imgs: [&[u8]; 2] = [&a, &b];

    let err = w.push_frame(&state(0), &action(0), &imgs).unwrap_err();
    assert!(matches!(err, LeRobotError::NoOpenEpisode), "{err}");
    assert!(matches!(w.end_episode(), Err(LeRobotError::NoOpenEpisode)));
    assert!(matches!(
        w.begin_episode("  "),
        Err(LeRobotError::InvalidTask(_))
    ));

    w.begin_episode("task").unwrap();
    assert!(matches!(
        w.begin_episode("task"),
        Err(LeRobotError::EpisodeAlreadyOpen)
    ));

    let err = w
        .push_frame(&[0.0, f32::NAN, 0.0], &action(0), &imgs)
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, LeRobotError::NonFinite { what: "state", .. }),
        "{msg}"
    );
    assert!(msg.contains("\"elbow\"") && msg.contains("NaN"), "{msg}");

    let err = w
        .push_frame(&state(0), &[0.0, 0.0, f32::INFINITY], &imgs)
        .unwrap_err();
    assert!(
        err.to_string().contains("action of joint \"wrist\" is inf"),
        "{err}"
    );

    let err = w.push_frame(&[0.0; 2], &action(0), &imgs).unwrap_err();
    assert!(
        matches!(
            err,
            LeRobotError::WrongLength {
                what: "state",
                expected: 3,
                got: 2
            }
        ),
        "{err}"
    );
    let err = w.push_frame(&state(0), &[0.0; 4], &imgs).unwrap_err();
    assert!(
        matches!(
            err,
            LeRobotError::WrongLength {
                what: "action",
                got: 4,
                ..
            }
        ),
        "{err}"
    );

    let err = w.push_frame(&state(0), &action(0), &imgs[..1]).unwrap_err();
    assert!(
        matches!(
            err,
            LeRobotError::WrongImageCount {
                expected: 2,
                got: 1
            }
        ),
        "{err}"
    );

    let small = vec![0u8; (W * H * 3 - 1) as usize];
    let err = w
        .push_frame(&state(0), &action(0), &[&a, &small])
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LeRobotError::WrongImageSize { .. }), "{msg}");
    assert!(
        msg.contains("\"wrist\"") && msg.contains("9215") && msg.contains("9216"),
        "{msg}"
    );

    // None of that was recorded; good frames still go in.
    assert_eq!(w.open_episode_frames(), Some(0));
    w.push_frame(&state(0), &action(0), &imgs).unwrap();
    assert_eq!(w.open_episode_frames(), Some(1));
    let ep = w.end_episode().unwrap().unwrap();
    assert_eq!(ep.length, 1);
    assert_eq!((w.frames(), w.episodes()), (1, 1));
    let summary = w.finish().unwrap();
    assert_eq!(summary.frames, 1);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn refuses_to_overwrite() {
    let root = scratch("overwrite");
    // A missing root is created; an empty one is fine.
    std::fs::create_dir_all(&root).unwrap();
    let w = DatasetWriter::create(&root, spec()).unwrap();
    w.finish().unwrap();
    // Now it holds a dataset: refused, and nothing in it is touched.
    let info = std::fs::read(root.join("meta/info.json")).unwrap();
    let err = DatasetWriter::create(&root, spec())
        .err()
        .expect("must refuse");
    assert!(matches!(err, LeRobotError::RootNotEmpty(_)), "{err}");
    assert!(err.to_string().contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(root.join("meta/info.json")).unwrap(), info);
    // A file in the way is refused too.
    let file = root.join("meta/info.json");
    let err = DatasetWriter::create(&file, spec())
        .err()
        .expect("must refuse");
    assert!(matches!(err, LeRobotError::RootNotEmpty(_)), "{err}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn refuses_bad_specs_before_touching_disk() {
    let root = scratch("bad_spec");
    let mut s = spec();
    s.cameras.push(CameraSpec::new("odd", 65, 48));
    let err = DatasetWriter::create(&root, s).err().expect("must refuse");
    assert!(matches!(err, LeRobotError::InvalidSpec(_)), "{err}");
    assert!(!root.exists());
}

#[test]
fn empty_dataset_and_discarded_episode() {
    let (root, mut w) = writer("empty");
    w.begin_episode("dropped").unwrap();
    let (a, b) = (image(0, 0), image(1, 0));
    w.push_frame(&state(0), &action(0), &[&a, &b]).unwrap();
    w.discard_episode();
    w.discard_episode(); // nothing open: a no-op
    assert_eq!(
        (w.frames(), w.episodes(), w.open_episode_frames()),
        (0, 0, None)
    );
    let summary = w.finish().unwrap();
    assert_eq!(
        (
            summary.episodes,
            summary.frames,
            summary.tasks,
            summary.video_bytes
        ),
        (0, 0, 0, 0)
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["total_episodes"], 0);
    assert_eq!(info["splits"]["train"], "0:0");
    assert_eq!(
        std::fs::read_to_string(root.join("meta/stats.json"))
            .unwrap()
            .trim(),
        "{}"
    );
    assert!(!root.join("videos").exists(), "no mp4 without frames");
    std::fs::remove_dir_all(&root).unwrap();
}
