//! `extensions.armsim.cameras`: the default scene's cameras, defaults, every validation rule with
//! its JSON path, write-back, and how the robot file's own cameras join the scene's.

use super::tests::{assert_has, default_scene, default_value, errors_for, parse_value};
use super::*;
use crate::camera::{CameraMount, Placement};
use crate::robot::model::Pose;
use serde_json::json;

const P: &str = "$.extensions.armsim.cameras";

/// The default scene with its cameras replaced by `cameras`.
fn with_cameras(cameras: Value) -> Result<Scene, SceneErrors> {
    let mut v = default_value();
    v["extensions"]["armsim"]["cameras"] = cameras;
    parse_value(&v)
}

fn cameras_errors(cameras: Value) -> SceneErrors {
    errors_for(|v| v["extensions"]["armsim"]["cameras"] = cameras)
}

#[test]
fn the_default_scene_has_a_front_and_a_wrist_camera() {
    let scene = default_scene();
    let cameras = scene.cameras();
    let names: Vec<&str> = cameras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["front", "wrist"]);
    for c in &cameras {
        assert_eq!(
            (c.width, c.height, c.rate_hz, c.depth),
            (256, 256, 30.0, false)
        );
    }
    assert!(matches!(cameras[0].mount, CameraMount::Fixed { .. }));
    let wrist_link = scene.robot.link_index("wrist_3_link").unwrap();
    match cameras[1].placement(&scene.robot) {
        Some(Placement::Link { link, .. }) => assert_eq!(link, wrist_link),
        other => panic!("the wrist camera rides on wrist_3_link, not {other:?}"),
    }
    // The front camera sees the cubes in its image.
    let front = &cameras[0];
    let pose = front
        .placement(&scene.robot)
        .unwrap()
        .world_pose(&[])
        .unwrap();
    let state = crate::camera::CameraState::new(front, &pose);
    for o in &scene.config.objects {
        let [u, v] = state.project(o.pose.translation()).expect("in front");
        assert!(
            (0.0..256.0).contains(&u) && (0.0..256.0).contains(&v),
            "{}: {u} {v}",
            o.name
        );
    }
}

#[test]
fn only_a_name_and_a_mount_are_required() {
    let scene = with_cameras(json!([
        {"name": "top", "pose": {"pos_m": [0.4, 0, 2], "look_at_m": [0.4, 0, 1]}},
        {"name": "hand", "attach": {"frame": "ee"}, "depth": true, "width": 64, "height": 48,
         "fov_deg": 90, "rate_hz": 10}
    ]))
    .unwrap_or_else(|e| panic!("{e}"));
    let c = &scene.config.extensions.armsim.cameras;
    assert_eq!(
        (
            c[0].fov_deg,
            c[0].width,
            c[0].height,
            c[0].rate_hz,
            c[0].depth
        ),
        (60.0, 256, 256, 30.0, false)
    );
    assert_eq!(
        c[1].mount,
        CameraMount::Attached {
            frame: "ee".into(),
            pos_m: [0.0; 3],
            quat_xyzw: [0.0, 0.0, 0.0, 1.0],
        }
    );
    assert_eq!(
        (
            c[1].fov_deg,
            c[1].width,
            c[1].height,
            c[1].rate_hz,
            c[1].depth
        ),
        (90.0, 64, 48, 10.0, true)
    );
}

#[test]
fn cameras_are_written_back() {
    let scene = default_scene();
    let text = scene.config.to_json_pretty();
    assert!(text.contains("\"cameras\""), "{text}");
    assert!(text.contains("\"look_at_m\": [0.5, 0.0, 1.05]"), "{text}");
    let again = parse_scene(&text, &super::tests::scenes_dir()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        again.config.extensions.armsim.cameras,
        scene.config.extensions.armsim.cameras
    );
    // A scene without cameras writes none.
    let none = with_cameras(json!([])).unwrap();
    assert!(!none.config.to_json_pretty().contains("cameras"));
}

#[test]
fn a_camera_needs_exactly_one_mount() {
    let e = cameras_errors(json!([{"name": "a"}]));
    assert_has(&e, &format!("{P}[0]"), "missing `pose`");
    let e = cameras_errors(json!([{
        "name": "a",
        "pose": {"pos_m": [1, 0, 1], "look_at_m": [0, 0, 1]},
        "attach": {"frame": "ee"}
    }]));
    assert_has(&e, &format!("{P}[0]"), "not both");
    let e = cameras_errors(json!([{"name": "a", "pose": {"pos_m": [1, 0, 1]}}]));
    assert_has(
        &e,
        &format!("{P}[0].pose.look_at_m"),
        "missing required field",
    );
    let e = cameras_errors(
        json!([{"name": "a", "pose": {"pos_m": [1, 0, 1], "look_at_m": [1, 0, 1]}}]),
    );
    assert_has(
        &e,
        &format!("{P}[0].pose.look_at_m"),
        "where the camera stands",
    );
    let e =
        cameras_errors(json!([{"name": "a", "pose": {"pos_m": [1, 0], "look_at_m": [0, 0, 1]}}]));
    assert_has(&e, &format!("{P}[0].pose.pos_m"), "expected 3 numbers");
}

#[test]
fn attached_cameras_name_a_frame_of_the_robot() {
    let e = cameras_errors(json!([{"name": "a", "attach": {"frame": "no_such_link"}}]));
    assert_has(
        &e,
        &format!("{P}[0].attach.frame"),
        "no site or link named \"no_such_link\"",
    );
    let e = cameras_errors(json!([{"name": "a", "attach": {"frame": ""}}]));
    assert_has(&e, &format!("{P}[0].attach.frame"), "must not be empty");
    let e = cameras_errors(
        json!([{"name": "a", "attach": {"frame": "ee", "quat_xyzw": [0, 0, 0, 2]}}]),
    );
    assert_has(&e, &format!("{P}[0].attach.quat_xyzw"), "unit quaternion");
    // A site and a link both work.
    for frame in ["ee", "wrist_3_link", "base_link"] {
        with_cameras(json!([{"name": "a", "attach": {"frame": frame}}]))
            .unwrap_or_else(|e| panic!("{frame}: {e}"));
    }
}

#[test]
fn names_are_required_and_unique() {
    let pose = json!({"pos_m": [1, 0, 1.5], "look_at_m": [0.5, 0, 1]});
    let e = cameras_errors(json!([{"name": "a", "pose": pose}, {"name": "a", "pose": pose}]));
    assert_has(
        &e,
        &format!("{P}[1].name"),
        "duplicate camera name \"a\" (first used by",
    );
    let e = cameras_errors(json!([{"pose": pose}]));
    assert_has(&e, &format!("{P}[0].name"), "missing required field");
    let e = cameras_errors(json!([{"name": "", "pose": pose}]));
    assert_has(&e, &format!("{P}[0].name"), "must not be empty");
    let e = cameras_errors(json!({"name": "a"}));
    assert_has(&e, P, "expected an array");
}

#[test]
fn field_of_view_size_rate_and_depth_are_checked() {
    let cam = |k: &str, v: Value| {
        let mut c = json!({"name": "a", "pose": {"pos_m": [1, 0, 1.5], "look_at_m": [0.5, 0, 1]}});
        c[k] = v;
        cameras_errors(json!([c]))
    };
    assert_has(
        &cam("fov_deg", json!(0)),
        &format!("{P}[0].fov_deg"),
        "between 0 and 180",
    );
    assert_has(
        &cam("fov_deg", json!(180)),
        &format!("{P}[0].fov_deg"),
        "between 0 and 180",
    );
    assert_has(
        &cam("width", json!(0)),
        &format!("{P}[0].width"),
        "must be in 1..=4096",
    );
    assert_has(
        &cam("height", json!(5000)),
        &format!("{P}[0].height"),
        "must be in 1..=4096",
    );
    assert_has(
        &cam("width", json!(12.5)),
        &format!("{P}[0].width"),
        "non-negative integer",
    );
    assert_has(
        &cam("rate_hz", json!(0)),
        &format!("{P}[0].rate_hz"),
        "must be > 0",
    );
    assert_has(
        &cam("rate_hz", json!(500)),
        &format!("{P}[0].rate_hz"),
        "step rate",
    );
    assert_has(
        &cam("depth", json!("yes")),
        &format!("{P}[0].depth"),
        "true or false",
    );
}

#[test]
fn the_robot_files_cameras_follow_the_scenes_unless_replaced() {
    let mut scene = default_scene();
    let wrist = scene.robot.link_index("wrist_3_link").unwrap();
    let mount = CameraMount::Link {
        link: wrist,
        pose: Pose::IDENTITY,
    };
    scene
        .robot
        .cameras
        .push(crate::camera::CameraSpec::new("front", mount.clone()));
    scene
        .robot
        .cameras
        .push(crate::camera::CameraSpec::new("hand_cam", mount));
    let cameras = scene.cameras();
    let names: Vec<&str> = cameras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["front", "wrist", "hand_cam"]);
    assert!(matches!(cameras[0].mount, CameraMount::Fixed { .. }));
}
