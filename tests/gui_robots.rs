//! Real robots in the real window, under Xvfb with Mesa's software Vulkan: the Menagerie Panda
//! (MJCF, OBJ meshes with several parts per link) and the SO-101 (MJCF, STL meshes) are drawn
//! from their mesh files in their materials' colours, in both render profiles, and again after a
//! reset. The robot files are the fixtures `scripts/robot-fixtures` fetches (cached under
//! `target/robot-fixtures/`); the scenes are the shipped `assets/scenes/panda.json` and
//! `so101.json` with their robot path pointed at those files. Screenshots are kept in
//! `target/gui-artifacts/robot_*.png`. Like `gui_smoke`, this needs Xvfb, xdotool and Mesa.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;

/// Kills the child when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "the GUI robot tests need `{tool}`: apt-get install -y xvfb xdotool mesa-vulkan-drivers"
    );
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn alive(app: &mut Guard, log: &Arc<Mutex<String>>) {
    if let Ok(Some(status)) = app.0.try_wait() {
        panic!("armsim exited early ({status}):\n{}", log.lock().unwrap());
    }
}

/// A fresh Xvfb display (offset `n` so tests in one binary do not share one; another range
/// than `gui_smoke`'s) and its name.
fn start_xvfb(n: u32) -> (Guard, String) {
    let display = format!(":{}", 1700 + (std::process::id() * 4 + n) % 1600);
    let xvfb = Guard(
        Command::new("Xvfb")
            .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts"),
    );
    let socket = format!("/tmp/.X11-unix/X{}", &display[1..]);
    wait_for("Xvfb", Duration::from_secs(20), || {
        Path::new(&socket).exists()
    });
    (xvfb, display)
}

/// Waits (generously: software rendering in a debug build is slow to start) for a screenshot.
fn wait_for_screenshot(app: &mut Guard, log: &Arc<Mutex<String>>, shot: &Path) {
    wait_for("the screenshot", Duration::from_secs(300), || {
        alive(app, log);
        std::fs::metadata(shot)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
    });
    std::thread::sleep(Duration::from_millis(500));
}

struct Rgb {
    width: usize,
    height: usize,
    data: Vec<u8>,
    channels: usize,
}

impl Rgb {
    fn load(path: &Path) -> Rgb {
        let decoder = png::Decoder::new(BufReader::new(
            std::fs::File::open(path).expect("screenshot exists"),
        ));
        let mut reader = decoder.read_info().expect("screenshot is a PNG");
        let mut data = vec![0; reader.output_buffer_size().expect("sane PNG size")];
        let info = reader.next_frame(&mut data).expect("PNG decodes");
        let channels = info.color_type.samples();
        data.truncate(info.buffer_size());
        Rgb {
            width: info.width as usize,
            height: info.height as usize,
            data,
            channels,
        }
    }

    fn px(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * self.channels;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// The pixels of the 3D view (right of the panel) at the centre of a `2r+1` square all of
    /// whose pixels satisfy `pred`: areas of a colour, not thin lines of it (gizmos, text).
    fn solid(&self, r: usize, pred: impl Fn([u8; 3]) -> bool) -> Vec<(usize, usize)> {
        let hit: Vec<bool> = (0..self.width * self.height)
            .map(|i| pred(self.px(i % self.width, i / self.width)))
            .collect();
        let mut out = Vec::new();
        for y in r..self.height - r {
            for x in VIEW_X0.max(r)..self.width - r {
                let all =
                    (y - r..=y + r).all(|yy| (x - r..=x + r).all(|xx| hit[yy * self.width + xx]));
                if all {
                    out.push((x, y));
                }
            }
        }
        out
    }
}

/// Where the 3D view begins: right of the panel (its text is white).
const VIEW_X0: usize = 330;

/// White and off-white (the Panda's rgba 1 1 1 and 0.90 0.92 0.93), lit or in the fill light.
fn near_white([r, g, b]: [u8; 3]) -> bool {
    r.min(g).min(b) > 165 && r.max(g).max(b) - r.min(g).min(b) < 30
}

/// The Panda's black (rgba 0.25 0.25 0.25) and the SO-101's motors (0.1): dark and grey.
fn dark_grey([r, g, b]: [u8; 3]) -> bool {
    r.max(g).max(b) < 110 && r.max(g).max(b) - r.min(g).min(b) < 14
}

/// The SO-101's yellow (rgba 1 0.82 0.12): the table's wood is redder and less saturated
/// (green under 0.75 of red, blue over 0.3 of it).
fn yellow([r, g, b]: [u8; 3]) -> bool {
    let (r, g, b) = (f32::from(r), f32::from(g), f32::from(b));
    r > 140.0 && g > 0.75 * r && g <= r + 10.0 && b < 0.3 * r
}

/// The cubes: red, green and blue areas (the scene around the robot is drawn too).
fn cubes(img: &Rgb) -> [usize; 3] {
    [
        img.solid(1, |[r, g, b]| r > 120 && g < 70 && b < 70).len(),
        img.solid(1, |[r, g, b]| g > 100 && r < 80 && b < 90).len(),
        img.solid(1, |[r, g, b]| b > 120 && r < 70 && g < 90).len(),
    ]
}

/// The height in pixels that `points` span.
fn height(points: &[(usize, usize)]) -> usize {
    let lo = points.iter().map(|p| p.1).min().unwrap_or(0);
    let hi = points.iter().map(|p| p.1).max().unwrap_or(0);
    hi - lo
}

/// A scene of the shipped `assets/scenes/NAME.json` with its robot at `robot` (an absolute
/// path), written into a scratch folder.
fn scene_with_robot(name: &str, robot: &Path) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(format!("assets/scenes/{name}.json")))
        .expect("the shipped scene");
    let mut scene: serde_json::Value = serde_json::from_str(&text).expect("scene JSON");
    assert!(robot.is_file(), "no robot file {}", robot.display());
    scene["robot"]["mjcf_path"] = serde_json::Value::String(robot.display().to_string());
    let dir = std::env::temp_dir().join(format!("armsim-gui-robots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&scene).unwrap()).unwrap();
    path
}

/// A window on `scene` under its own Xvfb, after its first screenshot (`target/gui-artifacts/
/// robot_{tag}.png`), which it returns loaded. The log is checked for a load without boxes
/// standing in for meshes.
struct Window {
    app: Guard,
    log: Arc<Mutex<String>>,
    display: String,
    cwd: PathBuf,
    artifacts: PathBuf,
    tag: String,
    // Dropped last: the display outlives the app.
    _xvfb: Guard,
}

fn open(scene: &Path, profile: &str, tag: &str, n: u32) -> (Window, Rgb) {
    for tool in ["Xvfb", "xdotool"] {
        require(tool);
    }
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/gui-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(format!("robot_{tag}.png"));
    let _ = std::fs::remove_file(&shot);
    // F12 writes its screenshot into the working folder: a scratch one per window.
    let cwd = std::env::temp_dir().join(format!("armsim-gui-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    let (xvfb, display) = start_xvfb(n);
    let mut child = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .current_dir(&cwd)
        .env("DISPLAY", &display)
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "info")
        .env("ARMSIM_CONFIG_DIR", cwd.join("config"))
        .arg("--scene")
        .arg(scene)
        .args(["--render-profile", profile])
        .args(["--teleop-port", "0", "--xr-port", "0", "--agent-port", "0"])
        .args(["--monitor-port", "0"])
        .arg("--screenshot")
        .arg(&shot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the window app starts");
    let log = Arc::new(Mutex::new(String::new()));
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let mut l = log.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
    }
    let mut app = Guard(child);
    wait_for_screenshot(&mut app, &log, &shot);
    {
        let log = log.lock().unwrap();
        let wanted = format!("render profile {profile}");
        assert!(log.contains(&wanted), "no `{wanted}` in the log:\n{log}");
        assert!(
            !log.contains("drawn as its box"),
            "a mesh geom was drawn as a box:\n{log}"
        );
    }
    let img = Rgb::load(&shot);
    assert_eq!((img.width, img.height), (1280, 800), "window size");
    (
        Window {
            app,
            log,
            display,
            cwd,
            artifacts,
            tag: tag.to_string(),
            _xvfb: xvfb,
        },
        img,
    )
}

impl Window {
    /// Backspace (reset: the scene's entities are despawned and spawned again, the meshes kept),
    /// then an F12 screenshot, saved as `robot_{tag}_after_reset.png`.
    fn reset_and_shoot(&mut self) -> Rgb {
        let window = Command::new("xdotool")
            .env("DISPLAY", &self.display)
            .args(["search", "--sync", "--name", "armsim"])
            .output()
            .expect("xdotool runs");
        let id = String::from_utf8_lossy(&window.stdout)
            .lines()
            .next()
            .expect("the armsim window is on the display")
            .to_string();
        let press = |key: &str| {
            let st = Command::new("xdotool")
                .env("DISPLAY", &self.display)
                .args(["windowfocus", "--sync", &id, "key", "--delay", "80", key])
                .status()
                .expect("xdotool runs");
            assert!(st.success());
        };
        press("BackSpace");
        let (app, log) = (&mut self.app, &self.log);
        wait_for("Backspace to reset", Duration::from_secs(60), || {
            alive(app, log);
            log.lock().unwrap().contains("session reset")
        });
        let after = self.cwd.join("armsim-screenshot-1.png");
        press("F12");
        wait_for_screenshot(&mut self.app, &self.log, &after);
        let kept = self
            .artifacts
            .join(format!("robot_{}_after_reset.png", self.tag));
        std::fs::copy(&after, &kept).unwrap();
        Rgb::load(&kept)
    }

    fn save_log(&self) {
        std::fs::write(
            self.artifacts.join(format!("robot_{}.log", self.tag)),
            self.log.lock().unwrap().as_bytes(),
        )
        .unwrap();
    }
}

/// The Panda is drawn: a large white/off-white area standing up from the table, with black
/// parts, more white than black, and the cubes. Without its meshes the view has no white area
/// at all (the default scene's arm is orange; the floor, table and sky are not near-white).
fn check_panda(img: &Rgb, what: &str) {
    let white = img.solid(2, near_white);
    let dark = img.solid(1, dark_grey);
    let [red, green, blue] = cubes(img);
    eprintln!(
        "{what}: {} white px over {} rows, {} dark px, cubes {red}/{green}/{blue}",
        white.len(),
        height(&white),
        dark.len()
    );
    assert!(
        white.len() > 8000,
        "{what}: the Panda is not drawn: {} near-white pixels",
        white.len()
    );
    assert!(
        height(&white) > 150,
        "{what}: the white area is {} px tall, not an arm standing up",
        height(&white)
    );
    assert!(
        dark.len() > 100,
        "{what}: the Panda's black parts are missing: {} dark pixels",
        dark.len()
    );
    assert!(
        white.len() > 3 * dark.len(),
        "{what}: the Panda should be mostly white: {} white, {} dark pixels",
        white.len(),
        dark.len()
    );
    assert!(
        red > 20 && green > 20 && blue > 20,
        "{what}: cubes: red {red}, green {green}, blue {blue} pixels"
    );
}

/// The Panda of MuJoCo Menagerie in the lite profile (the default on a software renderer, as
/// in CI), at start and after a reset.
#[test]
fn window_draws_the_menagerie_panda_from_its_meshes() {
    let robot = fixtures::menagerie_panda_dir().join("panda.xml");
    let scene = scene_with_robot("panda", &robot);
    let (mut w, img) = open(&scene, "lite", "panda_lite", 0);
    check_panda(&img, "panda lite");
    let img = w.reset_and_shoot();
    check_panda(&img, "panda lite after reset");
    w.save_log();
}

/// The same in the full profile (PBR materials, tonemapping).
#[test]
fn full_profile_draws_the_menagerie_panda() {
    let robot = fixtures::menagerie_panda_dir().join("panda.xml");
    let scene = scene_with_robot("panda", &robot);
    let (w, img) = open(&scene, "full", "panda_full", 1);
    check_panda(&img, "panda full");
    w.save_log();
}

/// The SO-101 (MJCF with STL meshes): its yellow printed parts and its black motors. The goal
/// zone's yellow gizmo is a thin line, which the solid-area count leaves out.
#[test]
fn window_draws_the_so101_from_its_meshes() {
    let robot = fixtures::so101_dir().join("so101_new_calib.xml");
    let scene = scene_with_robot("so101", &robot);
    let (w, img) = open(&scene, "lite", "so101_lite", 2);
    let yellow = img.solid(2, yellow);
    let dark = img.solid(1, dark_grey);
    let [red, green, blue] = cubes(&img);
    eprintln!(
        "so101: {} yellow px over {} rows, {} dark px, cubes {red}/{green}/{blue}",
        yellow.len(),
        height(&yellow),
        dark.len()
    );
    assert!(
        yellow.len() > 800,
        "the SO-101 is not drawn: {} yellow pixels",
        yellow.len()
    );
    assert!(
        height(&yellow) > 60,
        "the yellow area is {} px tall, not an arm standing up",
        height(&yellow)
    );
    assert!(
        dark.len() > 40,
        "the SO-101's motors are missing: {} dark pixels",
        dark.len()
    );
    assert!(
        red > 5 && green > 5 && blue > 5,
        "cubes: red {red}, green {green}, blue {blue} pixels"
    );
    w.save_log();
}
