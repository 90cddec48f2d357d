//! The scene's cameras rendered headless (`armsim::offscreen`, `--headless --cameras`) through
//! Bevy's render stack with no window and no X display (`DISPLAY` is removed from this test
//! process's environment, so every armsim it starts has none either): on Mesa's software
//! Vulkan (lavapipe) like CI, the images arrive stamped with increasing steps and show the
//! default scene where armsim-core's camera model projects it, and `--record-lerobot` writes the
//! cameras as video. Without a Vulkan driver the run fails with an error naming the fix, and a
//! plain headless run does not need one.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::SimOptions;
use armsim::headless::StopAfter;
use armsim::sim::{ClockMode, SimClock};
use armsim::ui::cameras::{CameraFrame, CameraFrameReady};
use bevy::prelude::*;
use common::child::Armsim;
use common::scene_view::{blue, camera_state, green, home_link_poses, object, orange, red, wood};
use common::sexp::Peer;
use common::{default_scene, lerobot_info};
use glam::Vec3;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "armsim-headless-cameras-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[derive(Resource, Default)]
struct Got(Vec<Arc<CameraFrame>>);

fn collect(mut ready: MessageReader<CameraFrameReady>, mut got: ResMut<Got>) {
    got.0.extend(ready.read().map(|r| r.0.clone()));
}

fn px(f: &CameraFrame, x: usize, y: usize) -> [u8; 3] {
    let i = (y * f.width as usize + x) * 3;
    [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
}

/// Fraction of the `2r+1` square around `(u, v)` whose pixels are `colour`.
fn around(f: &CameraFrame, [u, v]: [f32; 2], r: usize, colour: fn(&[u8; 3]) -> bool) -> f64 {
    let (u, v) = (u.round() as usize, v.round() as usize);
    let (mut hit, mut all) = (0, 0);
    for y in v.saturating_sub(r)..(v + r + 1).min(f.height as usize) {
        for x in u.saturating_sub(r)..(u + r + 1).min(f.width as usize) {
            all += 1;
            hit += usize::from(colour(&px(f, x, y)));
        }
    }
    hit as f64 / all.max(1) as f64
}

fn share(f: &CameraFrame, colour: fn(&[u8; 3]) -> bool) -> f64 {
    let n = f
        .rgb
        .chunks_exact(3)
        .filter(|p| colour(&[p[0], p[1], p[2]]))
        .count();
    n as f64 / (f.width * f.height) as f64
}

#[test]
fn offscreen_images_show_the_scene_stamped_with_increasing_steps() {
    let scene = default_scene();
    let options = SimOptions {
        clock: ClockMode::Fast,
    };
    let mut app = armsim::offscreen::headless_render_app(scene.clone(), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    app.init_resource::<Got>().add_systems(Last, collect);
    let t0 = Instant::now();
    let frames = armsim::offscreen::warm_up(&mut app, Duration::from_secs(60));
    let warm = t0.elapsed();
    // As while recording a dataset at 30 fps: every frame ends on a multiple of 8 steps.
    app.world_mut().resource_mut::<SimClock>().align_frames_to = 8;
    let t0 = Instant::now();
    armsim::headless::run(&mut app, StopAfter::Steps(240));
    armsim::offscreen::drain(&mut app);
    let wall = t0.elapsed();
    eprintln!(
        "warm-up {frames} frames in {warm:.1?}; 240 steps with images in {wall:.1?}; {}",
        armsim::offscreen::report(app.world())
    );
    let got = std::mem::take(&mut app.world_mut().resource_mut::<Got>().0);

    for camera in ["front", "wrist"] {
        let steps: Vec<u64> = got
            .iter()
            .filter(|f| f.camera == camera && f.step > 0)
            .map(|f| f.step)
            .collect();
        // One image at every 30 Hz period (every 8th step), in order, the last one included.
        let wanted: Vec<u64> = (1..=30).map(|k| k * 8).collect();
        assert_eq!(steps, wanted, "{camera}: the steps of its images");
        for f in got.iter().filter(|f| f.camera == camera) {
            assert_eq!((f.width, f.height), (256, 256));
            assert_eq!(f.rgb.len(), 256 * 256 * 3);
            assert_eq!(f.episode, 0);
            assert!(
                (f.sim_time - f.step as f64 / 240.0).abs() < 1e-9,
                "{camera}"
            );
        }
    }

    // Each camera's first image after the start: the cubes where their centres project, the
    // table around them, and in the front camera the arm's upper link where it projects.
    let links = home_link_poses(&scene);
    for (camera, radius, table) in [("front", 2, 0.15), ("wrist", 3, 0.3)] {
        let state = camera_state(&scene, camera, &links);
        let img = got
            .iter()
            .find(|f| f.camera == camera && f.step == 8)
            .unwrap();
        for (cube, colour) in [
            ("cube_red", red as fn(&[u8; 3]) -> bool),
            ("cube_green", green),
            ("cube_blue", blue),
        ] {
            let uv = state.project(object(&scene, cube)).unwrap();
            let s = around(img, uv, radius, colour);
            assert!(
                s > 0.6,
                "{camera}: {cube} at {uv:?}: {s:.2} of it is its colour"
            );
        }
        let wood = share(img, wood);
        assert!(
            wood > table,
            "{camera}: {wood:.2} of the image is the table's wood"
        );
        if camera == "front" {
            // The arm's upper link where it projects at the home posture.
            let upper_arm = scene.robot.link_index("upper_arm_link").unwrap();
            let uv = state
                .project(links[upper_arm].transform_point(Vec3::new(0.0, 0.0, 0.165)))
                .unwrap();
            let arm = around(img, uv, 2, orange);
            assert!(arm > 0.6, "front: the upper arm at {uv:?}: {arm:.2} orange");
        }
    }
}

/// `--headless --record-lerobot` with an agent that starts the session: the dataset lists both
/// cameras as video features and their mp4 files hold frames; `--camera-snapshots` writes
/// their images too. As fast as it goes, every row gets the image of its own step (a fast
/// frame ends on each row's step: `offscreen::end_frames_on_aligned_steps`).
#[test]
fn headless_record_lerobot_writes_the_cameras_as_video() {
    let root = scratch("dataset");
    let snapshots = scratch("snapshots");
    let (root_arg, snap_arg) = (root.display().to_string(), snapshots.display().to_string());
    // Not real time: there a frame that runs late on a busy machine covers two rows, and the
    // first takes the image before (README, "Cameras"), so how many do would hang on the
    // machine's load (60 to 105 of 180 with three copies of this test on two cores).
    let mut sim = Armsim::start_fast(
        "headless-cameras",
        &[
            "--duration",
            "3",
            "--no-teleop",
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
            "--record-lerobot",
            &root_arg,
            "--camera-snapshots",
            &snap_arg,
        ],
    );
    let agent = sim.listening("agent");
    // An agent's (init) starts the session; its perceptions are read until the run ends.
    let mut peer = Peer::agent(agent);
    let reader = std::thread::spawn(move || while peer.recv_bytes().is_some() {});
    let line = sim.wait_for("LeRobot dataset written");
    let exit = sim.child.wait().unwrap();
    let _ = reader.join();
    let log = sim.log.join("\n");
    assert!(exit.success(), "exit status {exit:?}; the log:\n{log}");
    assert!(line.contains("1 episode"), "{line}");
    assert!(log.contains("rendering 2 camera(s) offscreen"), "{log}");
    let stale: u64 = sim
        .log
        .iter()
        .filter(|l| l.contains("taken from the step before"))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "image(s)")?;
            words.get(at.checked_sub(1)?)?.parse::<u64>().ok()
        })
        .sum();

    let info = lerobot_info(&root);
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 30, "{frames} frames");
    assert_eq!(
        stale,
        0,
        "{stale} of {} row images came from the step before",
        frames * 2
    );
    for camera in ["front", "wrist"] {
        let key = format!("observation.images.{camera}");
        let feature = &info["features"][&key];
        assert_eq!(feature["dtype"], "video", "{key}: {feature}");
        assert_eq!(feature["shape"], serde_json::json!([256, 256, 3]), "{key}");
        let mp4 = root.join(format!("videos/{key}/chunk-000/file-000.mp4"));
        let size = std::fs::metadata(&mp4)
            .unwrap_or_else(|e| panic!("{}: {e}", mp4.display()))
            .len();
        assert!(size > 1000, "{}: {size} bytes", mp4.display());
        let png = snapshots.join(format!("{camera}.png"));
        assert!(
            std::fs::metadata(&png).is_ok_and(|m| m.len() > 0),
            "{} written",
            png.display()
        );
        let tag: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(snapshots.join(format!("{camera}.json"))).unwrap(),
        )
        .unwrap();
        assert!(tag["step"].as_u64().unwrap() > 0, "{camera}: {tag}");
    }
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&snapshots);
}

/// Without a Vulkan driver, `--cameras` fails with an error that names the fix, while a plain
/// headless run (which says its cameras are not rendered) needs none.
#[test]
fn without_a_vulkan_driver_cameras_fail_clearly_and_plain_runs_go_on() {
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_armsim"))
            // No display either: headless rendering needs none.
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env("VK_ICD_FILENAMES", "/nonexistent/armsim-no-icd.json")
            .env("VK_DRIVER_FILES", "/nonexistent/armsim-no-icd.json")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .args([
                "--headless",
                // Over a second: the recording below keeps its episode.
                "--steps",
                "300",
                "--no-teleop",
                "--no-agent-ports",
            ])
            .args(extra)
            .output()
            .expect("armsim runs")
    };
    let out = run(&["--cameras"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("mesa-vulkan-drivers"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 scene camera(s) not rendered"), "{err}");

    // A recording asked for no cameras explicitly: it goes on with joints only, and says so.
    let dir = scratch("no-vulkan-dataset");
    let out = run(&["--start", "--record-lerobot", dir.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("mesa-vulkan-drivers"), "{err}");
    assert!(err.contains("joints only"), "{err}");
    assert!(dir.join("meta/info.json").is_file(), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `depth: true` camera looking down at a bare spot of the table gives the distance to it at
/// the image's centre (its optical axis), the table's plane around it, and infinity where it
/// sees nothing (a camera looking at the sky); a camera without depth gives none.
#[test]
fn depth_cameras_measure_metres_along_the_optical_axis() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("assets/scenes/default_scene.json")).unwrap(),
    )
    .unwrap();
    config["robot"]["mjcf_path"] = root
        .join("assets/robots/arm6.xml")
        .display()
        .to_string()
        .into();
    let (eye, spot) = (Vec3::new(1.1, -0.5, 1.5), Vec3::new(0.75, -0.3, 1.0));
    config["extensions"]["armsim"]["cameras"] = serde_json::json!([
        {"name": "down", "pose": {"pos_m": eye.to_array(), "look_at_m": spot.to_array()},
         "fov_deg": 40.0, "width": 65, "height": 65, "rate_hz": 30.0, "depth": true},
        {"name": "sky", "pose": {"pos_m": [0.5, 0.0, 2.0], "look_at_m": [0.6, 0.0, 3.0]},
         "fov_deg": 40.0, "width": 32, "height": 32, "rate_hz": 30.0, "depth": true},
        {"name": "plain", "pose": {"pos_m": eye.to_array(), "look_at_m": spot.to_array()},
         "fov_deg": 40.0, "width": 32, "height": 32, "rate_hz": 30.0}
    ]);
    let dir = scratch("depth");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("depth_scene.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let scene = Arc::new(armsim::scene::load_scene(&file).unwrap_or_else(|e| panic!("{e}")));
    let options = SimOptions {
        clock: ClockMode::Fast,
    };
    let mut app =
        armsim::offscreen::headless_render_app(scene, &options).unwrap_or_else(|e| panic!("{e}"));
    app.init_resource::<Got>().add_systems(Last, collect);
    armsim::offscreen::warm_up(&mut app, Duration::from_secs(60));
    armsim::headless::run(&mut app, StopAfter::Steps(16));
    armsim::offscreen::drain(&mut app);
    let got = std::mem::take(&mut app.world_mut().resource_mut::<Got>().0);
    let last = |name: &str| {
        got.iter()
            .rev()
            .find(|f| f.camera == name && f.step == 16)
            .unwrap_or_else(|| panic!("an image of {name} at step 16"))
            .clone()
    };

    let down = last("down");
    let depth = down
        .depth
        .as_ref()
        .expect("a depth camera's frame has depth");
    assert_eq!(depth.len(), 65 * 65);
    let at = |x: usize, y: usize| depth[y * 65 + x];
    let centre = at(32, 32);
    let wanted = (spot - eye).length();
    eprintln!("depth at the centre {centre} m; the spot is {wanted} m away");
    assert!(
        (centre - wanted).abs() < 0.003,
        "depth at the centre {centre} m, the table is {wanted} m away along the axis"
    );
    // Along the optical axis, not the ray: on the table's plane 1 / depth is affine in the
    // image's coordinates, so pixels mirrored about the centre have the centre's harmonic mean.
    for (dx, dy) in [(10, 0), (0, 10), (12, 7)] {
        let (a, b) = (at(32 + dx, 32 + dy), at(32 - dx, 32 - dy));
        let mean = 2.0 / (1.0 / a + 1.0 / b);
        assert!(
            (mean - centre).abs() < 0.003,
            "({dx}, {dy}): {a}, {b}: {mean} against {centre}"
        );
    }
    // The table, the floor beyond its edge: something everywhere, nothing nearer than the table.
    let nearest = depth.iter().copied().fold(f32::INFINITY, f32::min);
    assert!(
        depth.iter().all(|d| d.is_finite()) && nearest > 0.4,
        "nearest {nearest}"
    );

    let sky = last("sky");
    let sky = sky.depth.as_ref().expect("depth");
    assert!(
        sky.iter().all(|d| d.is_infinite()),
        "the sky is infinitely far"
    );
    assert!(
        last("plain").depth.is_none(),
        "no depth asked for, none given"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
