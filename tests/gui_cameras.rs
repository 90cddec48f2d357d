//! The scene's simulated cameras in the real window under Xvfb with Mesa's software Vulkan:
//! armsim runs the default scene with `--camera-snapshots DIR`, and the images its `front` and
//! `wrist` cameras read back show the table, the cubes and the arm where the cameras' poses and
//! intrinsics (armsim-core's camera model) project them; their step tags advance with the sim
//! and restart after a reset. Needs Xvfb, xdotool and Mesa, like `gui_smoke`; images and the log
//! are kept in `target/gui-artifacts/cameras/`.
//!
//! Without anything using their images, the cameras stop rendering after their warm-up and stay
//! stopped while the arm runs; a monitor client's `(getCamera front)` is told the camera is
//! warming up, starts it, and soon gets a fresh image of the present; the camera stops again
//! when the client stops asking (`cameras_nothing_uses_do_not_render_until_a_client_asks`).

mod gui;
#[path = "common/scene_view.rs"]
mod scene_view;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use armsim::scene::load_scene;
use glam::Vec3;
use gui::{Rgb, alive, launch, press_key, require, start_xvfb, wait_for, window_id};
use scene_view::{blue, camera_state, green, home_link_poses, object, orange, red, wood, yellow};

/// A camera's stamp as `--camera-snapshots` writes it (`<camera>.json`).
#[derive(Debug, Clone)]
struct Tag {
    episode: u64,
    step: u64,
    sim_time: f64,
    pos: Vec3,
    /// w, x, y, z.
    quat: [f32; 4],
}

fn read_tag(dir: &Path, camera: &str) -> Option<Tag> {
    let text = std::fs::read_to_string(dir.join(format!("{camera}.json"))).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let f = |k: &str, i: usize| v[k][i].as_f64().unwrap() as f32;
    Some(Tag {
        episode: v["episode"].as_u64()?,
        step: v["step"].as_u64()?,
        sim_time: v["sim_time"].as_f64()?,
        pos: Vec3::new(f("pos", 0), f("pos", 1), f("pos", 2)),
        quat: [
            f("quat_world", 0),
            f("quat_world", 1),
            f("quat_world", 2),
            f("quat_world", 3),
        ],
    })
}

/// Fraction of the `2r+1` square around `(u, v)` whose pixels are `colour`.
fn around(img: &Rgb, [u, v]: [f32; 2], r: usize, colour: fn(&[u8; 3]) -> bool) -> f64 {
    let (u, v) = (u.round() as usize, v.round() as usize);
    img.fraction(
        u.saturating_sub(r),
        u + r + 1,
        v.saturating_sub(r),
        v + r + 1,
        |p| colour(&p),
    )
}

#[test]
fn the_default_scenes_cameras_show_what_they_look_at_tagged_with_the_step() {
    for tool in ["Xvfb", "xdotool"] {
        require(tool);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let artifacts = root.join("target/gui-artifacts/cameras");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).unwrap();
    let snapshots = artifacts.join("snapshots");
    let shot = artifacts.join("window.png");
    let cwd = std::env::temp_dir().join(format!("armsim-gui-cameras-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();

    let (_xvfb, display) = start_xvfb();
    let mut armsim = Command::new(env!("CARGO_BIN_EXE_armsim"));
    armsim
        .env("ARMSIM_CONFIG_DIR", cwd.join("config"))
        .args([
            "--render-profile",
            "lite",
            "--no-teleop",
            "--no-agent-ports",
        ])
        .arg("--camera-snapshots")
        .arg(&snapshots);
    let (mut app, log) = launch(armsim, &display, &cwd, &shot);
    let save_log = |log: &str| std::fs::write(artifacts.join("armsim.log"), log).unwrap();
    for camera in ["front", "wrist"] {
        let line = format!("camera {camera}: 256x256 at 30 Hz");
        assert!(
            log.lock().unwrap().contains(&line),
            "no `{line}` in the log"
        );
    }

    // Images keep coming: each camera's tag advances with the sim.
    let first_of = |camera: &str, app: &mut gui::Guard| {
        let mut tag = None;
        wait_for(
            &format!("a {camera} image"),
            Duration::from_secs(120),
            || {
                alive(app, &log);
                tag = read_tag(&snapshots, camera).filter(|t| t.step > 0);
                tag.is_some()
            },
        );
        tag.unwrap()
    };
    let front0 = first_of("front", &mut app);
    let wrist0 = first_of("wrist", &mut app);
    // Images from three seconds of sim time after the first ones: the scene has settled into
    // its first images' state (pipelines compiled, cubes at rest). Counted in steps, not in
    // wall time, which a loaded machine stretches.
    let mut later = |camera: &str, before: &Tag| {
        let mut tag = None;
        wait_for(
            &format!("a {camera} image 3 s of sim time later"),
            Duration::from_secs(60),
            || {
                alive(&mut app, &log);
                tag = read_tag(&snapshots, camera).filter(|t| t.step >= before.step + 3 * 240);
                tag.is_some()
            },
        );
        tag.unwrap()
    };
    let front = later("front", &front0);
    let wrist = later("wrist", &wrist0);
    for (camera, tag) in [("front", &front), ("wrist", &wrist)] {
        assert_eq!(tag.episode, 0, "{camera}: {tag:?}");
        assert!(
            (tag.sim_time - tag.step as f64 / 240.0).abs() < 1e-6,
            "{camera}: the sim time is the step's: {tag:?}"
        );
        for ext in ["png", "json"] {
            let _ = std::fs::copy(
                snapshots.join(format!("{camera}.{ext}")),
                artifacts.join(format!("{camera}_step{}.{ext}", tag.step)),
            );
        }
    }

    let scene = load_scene(&root.join("assets/scenes/default_scene.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    let links = home_link_poses(&scene);

    // The front camera: the cubes where their centres project, the arm's upper link where it
    // projects at the home posture, the table around them, and no gizmo (the goal zone's
    // yellow line is in its field of view).
    let img = Rgb::load(&artifacts.join(format!("front_step{}.png", front.step)));
    assert_eq!((img.width, img.height), (256, 256));
    let state = camera_state(&scene, "front", &links);
    assert!(
        (Vec3::from_array(state.pos) - front.pos).length() < 1e-4,
        "{front:?}"
    );
    for (cube, colour) in [
        ("cube_red", red as fn(&[u8; 3]) -> bool),
        ("cube_green", green),
        ("cube_blue", blue),
    ] {
        let uv = state.project(object(&scene, cube)).unwrap();
        let share = around(&img, uv, 2, colour);
        assert!(
            share > 0.6,
            "front: {cube} at {uv:?}: {share:.2} of it is its colour"
        );
    }
    let upper_arm = scene.robot.link_index("upper_arm_link").unwrap();
    let arm_uv = state
        .project(links[upper_arm].transform_point(Vec3::new(0.0, 0.0, 0.165)))
        .unwrap();
    let arm = around(&img, arm_uv, 2, orange);
    assert!(
        arm > 0.6,
        "front: the upper arm at {arm_uv:?}: {arm:.2} orange"
    );
    let table = img.fraction(0, 256, 0, 256, |p| wood(&p));
    assert!(
        table > 0.15,
        "front: {table:.2} of the image is the table's wood"
    );
    let near_corner = state.project(Vec3::new(0.8, -0.3, 1.0)).unwrap();
    let corner = around(&img, near_corner, 3, wood);
    assert!(
        corner > 0.8,
        "front: the table at {near_corner:?}: {corner:.2} wood"
    );
    let goal = scene
        .config
        .extensions
        .armsim
        .goal_zone
        .expect("a goal zone");
    let corners: Vec<[f32; 2]> = [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
        .iter()
        .map(|&(sx, sy)| {
            let c = goal.center_xy_m;
            let h = goal.half_size_m;
            state
                .project(Vec3::new(c[0] + sx * h[0], c[1] + sy * h[1], 1.0))
                .unwrap()
        })
        .collect();
    let (u0, u1) = corners
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), p| (a.min(p[0]), b.max(p[0])));
    let (v0, v1) = corners
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), p| (a.min(p[1]), b.max(p[1])));
    assert!(
        u0 >= 0.0 && v0 >= 0.0 && u1 < 256.0 && v1 < 256.0,
        "the goal zone is in view"
    );
    let (u0, u1, v0, v1) = (u0 as usize, u1 as usize + 2, v0 as usize, v1 as usize + 2);
    let zone = img.fraction(u0, u1, v0, v1, |p| yellow(&p)) * ((u1 - u0) * (v1 - v0)) as f64;
    assert!(
        zone < 3.0,
        "front: {zone} yellow pixels: the goal zone gizmo is drawn"
    );

    // The wrist camera: riding on wrist_3_link at the home posture (where the app says it is,
    // within the arm's sag), looking down between the fingers at the table and the cubes.
    let img = Rgb::load(&artifacts.join(format!("wrist_step{}.png", wrist.step)));
    let state = camera_state(&scene, "wrist", &links);
    let moved = (Vec3::from_array(state.pos) - wrist.pos).length();
    assert!(
        moved < 0.02,
        "wrist: {moved:.4} m from the home posture's pose: {wrist:?}"
    );
    let [w, x, y, z] = state.quat_world;
    let dot = w * wrist.quat[0] + x * wrist.quat[1] + y * wrist.quat[2] + z * wrist.quat[3];
    assert!(
        dot.abs() > 0.995,
        "wrist: turned away from the home posture's: {wrist:?}"
    );
    for (cube, colour) in [
        ("cube_red", red as fn(&[u8; 3]) -> bool),
        ("cube_green", green),
        ("cube_blue", blue),
    ] {
        let uv = state.project(object(&scene, cube)).unwrap();
        let share = around(&img, uv, 3, colour);
        assert!(
            share > 0.6,
            "wrist: {cube} at {uv:?}: {share:.2} of it is its colour"
        );
    }
    let table = img.fraction(0, 256, 0, 256, |p| wood(&p));
    assert!(
        table > 0.3,
        "wrist: {table:.2} of the image is the table's wood"
    );

    // A reset: the images go on, stamped with the new episode's steps.
    let id = window_id(&display);
    press_key(&display, &id, "BackSpace");
    let mut reset = None;
    wait_for(
        "a front image after the reset",
        Duration::from_secs(60),
        || {
            alive(&mut app, &log);
            reset = read_tag(&snapshots, "front").filter(|t| t.episode == 1);
            reset.is_some()
        },
    );
    let reset = reset.unwrap();
    assert!(
        reset.step < front.step && (reset.sim_time - reset.step as f64 / 240.0).abs() < 1e-6,
        "steps restart at a reset: {reset:?} after {front:?}"
    );

    // The panel shows both cameras live: with the Robot section folded, the Cameras section
    // comes into the window, and its thumbnails bring the cubes' colours into the dark panel.
    let st = Command::new("xdotool")
        .env("DISPLAY", &display)
        .args(["mousemove", "--window", &id, "44", "168", "click", "1"])
        .status()
        .expect("xdotool runs");
    assert!(st.success());
    std::thread::sleep(Duration::from_secs(2));
    press_key(&display, &id, "F12");
    let panel_shot = cwd.join("armsim-screenshot-1.png");
    wait_for("the F12 screenshot", Duration::from_secs(60), || {
        alive(&mut app, &log);
        std::fs::metadata(&panel_shot).is_ok_and(|m| m.len() > 0)
    });
    std::thread::sleep(Duration::from_millis(500));
    let _ = std::fs::copy(&panel_shot, artifacts.join("panel.png"));
    let img = Rgb::load(&panel_shot);
    let in_panel = |colour: fn(&[u8; 3]) -> bool| {
        let share = img.fraction(0, 300, 150, 800, |p| colour(&p));
        (share * 300.0 * 650.0) as usize
    };
    let (r, g, b) = (in_panel(red), in_panel(green), in_panel(blue));
    assert!(
        r > 40 && g > 40 && b > 40,
        "the panel's thumbnails: red {r}, green {g}, blue {b} pixels"
    );
    let text = log.lock().unwrap().clone();
    save_log(&text);
    // The snapshots use the cameras' images all along: they never stop.
    for camera in ["front", "wrist"] {
        let stop = format!("camera {camera}: stopped rendering");
        assert!(!text.contains(&stop), "`{stop}` with --camera-snapshots");
    }
}

/// A monitor connection reading the port's length-prefixed S-expressions.
struct Monitor {
    s: TcpStream,
    decoder: armsim::protocol::sexp::framing::FrameDecoder,
}

impl Monitor {
    /// Sends `cmd` and returns its reply, the first top-level `(camera …)` (world frames in
    /// between are skipped).
    fn get_camera(&mut self, cmd: &str) -> armsim::protocol::sexp::Sexp {
        let mut frame = Vec::new();
        armsim::protocol::sexp::framing::encode_frame(cmd.as_bytes(), &mut frame).unwrap();
        self.s.write_all(&frame).expect("send");
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            while let Some(frame) = self.decoder.next_frame().expect("server frames fit") {
                let reply = armsim::protocol::sexp::parse_all(&frame)
                    .map(|r| r.expect("well-formed"))
                    .find(|e| e.is("camera") || e.is("error"));
                if let Some(e) = reply {
                    assert!(e.is("camera"), "{cmd}: {e}");
                    return e;
                }
            }
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => panic!("the monitor port closed the connection"),
                Ok(n) => self.decoder.push(&chunk[..n]),
            }
        }
    }
}

#[test]
fn cameras_nothing_uses_do_not_render_until_a_client_asks() {
    for tool in ["Xvfb", "xdotool"] {
        require(tool);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let artifacts = root.join("target/gui-artifacts/cameras-idle");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("window.png");
    let cwd = std::env::temp_dir().join(format!("armsim-gui-cameras-idle-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();

    let (_xvfb, display) = start_xvfb();
    let mut armsim = Command::new(env!("CARGO_BIN_EXE_armsim"));
    armsim
        .env("ARMSIM_CONFIG_DIR", cwd.join("config"))
        .args(["--render-profile", "lite", "--no-teleop"])
        .args([
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
            "--frame-log-secs",
            "2",
        ]);
    let (mut app, log) = launch(armsim, &display, &cwd, &shot);
    let count = |what: &str| log.lock().unwrap().matches(what).count();
    let stops = |camera: &str| count(&format!("camera {camera}: stopped rendering"));
    let save_log = || std::fs::write(artifacts.join("armsim.log"), &*log.lock().unwrap()).unwrap();

    // Their warm-up over, nothing uses the cameras (the Cameras section is below the fold of
    // the panel): both stop.
    for camera in ["front", "wrist"] {
        wait_for(
            &format!("camera {camera} to stop rendering"),
            Duration::from_secs(180),
            || {
                alive(&mut app, &log);
                stops(camera) >= 1
            },
        );
    }
    // And stay stopped while the arm runs: two frame-rate lines (4 s) after the start.
    let starts = |camera: &str| count(&format!("camera {camera}: rendering ("));
    let started = [starts("front"), starts("wrist")];
    let id = window_id(&display);
    press_key(&display, &id, "space");
    wait_for("the session to run", Duration::from_secs(60), || {
        alive(&mut app, &log);
        count("session IDLE -> RUNNING") == 1
    });
    let lines = count("frames/s over the last");
    wait_for("two frame-rate lines", Duration::from_secs(120), || {
        alive(&mut app, &log);
        count("frames/s over the last") >= lines + 2
    });
    save_log();
    for (camera, before) in ["front", "wrist"].into_iter().zip(started) {
        assert_eq!(
            starts(camera),
            before,
            "camera {camera} rendered again with nothing using it"
        );
    }

    // A client asks: the camera is warming up, and the request starts it.
    let port: u16 = {
        let text = log.lock().unwrap().clone();
        let at = text
            .find("monitor: listening on ")
            .expect("the monitor port's line")
            + "monitor: listening on ".len();
        let addr = text[at..].split_whitespace().next().unwrap();
        addr.rsplit(':').next().unwrap().parse().expect("a port")
    };
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connects to the monitor port");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut monitor = Monitor {
        s,
        decoder: armsim::protocol::sexp::framing::FrameDecoder::new(64 << 20),
    };
    let atom = |e: &armsim::protocol::sexp::Sexp, name: &str| -> String {
        e.find(name)
            .and_then(|f| f.arg(0))
            .and_then(armsim::protocol::sexp::Sexp::as_atom)
            .unwrap_or_else(|| panic!("no ({name} …) in {e}"))
            .to_string()
    };
    let front_stops = stops("front");
    let first = monitor.get_camera("(getCamera front)");
    assert!(
        first.find("rgb").is_none()
            && first
                .find("noimage")
                .is_some_and(|n| n.to_string().contains("warming up")),
        "an idle camera's answer: {first}"
    );
    let asked_at: u64 = atom(&first, "step").parse().unwrap();
    wait_for("camera front to start", Duration::from_secs(30), || {
        alive(&mut app, &log);
        count("camera front: rendering (a client asked for its images)") >= 1
    });
    // Asking again soon gets a fresh image: of a step at or after the request.
    let mut image = None;
    wait_for("a fresh front image", Duration::from_secs(60), || {
        alive(&mut app, &log);
        let e = monitor.get_camera("(getCamera front)");
        image = e.find("rgb").is_some().then_some(e);
        image.is_some()
    });
    let image = image.unwrap();
    let step: u64 = atom(&image, "step").parse().unwrap();
    assert!(
        step >= asked_at,
        "image of step {step}, asked at step {asked_at}"
    );
    use base64::Engine as _;
    let rgb = base64::engine::general_purpose::STANDARD
        .decode(atom(&image, "rgb"))
        .expect("base64");
    assert_eq!(rgb.len(), 256 * 256 * 3);
    let table = rgb
        .chunks_exact(3)
        .filter(|p| wood(&[p[0], p[1], p[2]]))
        .count() as f64
        / (256.0 * 256.0);
    assert!(
        table > 0.15,
        "front: {table:.2} of the fresh image is the table's wood"
    );

    // The client stops asking: the lease runs out and the camera stops again; the wrist camera,
    // which nobody asked for, never started.
    wait_for(
        "camera front to stop again",
        Duration::from_secs(60),
        || {
            alive(&mut app, &log);
            stops("front") > front_stops
        },
    );
    save_log();
    assert_eq!(
        starts("wrist"),
        started[1],
        "nobody asked for the wrist camera"
    );
}
