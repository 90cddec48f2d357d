//! Shared helpers of the real-window tests (`gui_smoke`, `gui_robots`): an Xvfb display, the
//! app launched on it with its log collected, key presses through xdotool and the screenshots
//! read back as pixels. Both need Xvfb, xdotool and Mesa (`.ci/run` installs them).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Kills the child when the test ends, however it ends.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Fails the test, saying what to install, unless `tool` is on the PATH.
pub fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        found,
        "the GUI tests need `{tool}`: apt-get install -y xvfb xdotool mesa-vulkan-drivers"
    );
}

pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A screenshot's pixels.
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    data: Vec<u8>,
    channels: usize,
}

/// Where the 3D view begins: right of the panel (its text is white), which widens with long joint
/// names (363 px with the URDF Panda's `panda_finger_joint1`).
pub const VIEW_X0: usize = 400;

impl Rgb {
    pub fn load(path: &Path) -> Rgb {
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

    pub fn px(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * self.channels;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Fraction of pixels in the rectangle for which `pred` holds.
    pub fn fraction(
        &self,
        x0: usize,
        x1: usize,
        y0: usize,
        y1: usize,
        pred: impl Fn([u8; 3]) -> bool,
    ) -> f64 {
        let mut hit = 0usize;
        let mut all = 0usize;
        for y in y0..y1.min(self.height) {
            for x in x0..x1.min(self.width) {
                all += 1;
                if pred(self.px(x, y)) {
                    hit += 1;
                }
            }
        }
        hit as f64 / all.max(1) as f64
    }

    /// How many pixels at `x0` and right of it satisfy `pred`.
    pub fn count(&self, x0: usize, pred: impl Fn([u8; 3]) -> bool) -> usize {
        let mut n = 0;
        for y in 0..self.height {
            for x in x0..self.width {
                if pred(self.px(x, y)) {
                    n += 1;
                }
            }
        }
        n
    }

    /// The pixels of the 3D view (right of the panel) at the centre of a `2r+1` square all of
    /// whose pixels satisfy `pred`: areas of a colour, not thin lines of it (gizmos, text).
    pub fn solid(&self, r: usize, pred: impl Fn([u8; 3]) -> bool) -> Vec<(usize, usize)> {
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

/// Panics with the app's log if it has exited.
pub fn alive(app: &mut Guard, log: &Arc<Mutex<String>>) {
    if let Ok(Some(status)) = app.0.try_wait() {
        panic!("armsim exited early ({status}):\n{}", log.lock().unwrap());
    }
}

/// A fresh Xvfb display and its name: `base` plus an offset from the process id and `n` (0 to
/// 7), so tests in one binary do not share one; each test file has its own `base`, 1600 apart.
pub fn start_xvfb(base: u32, n: u32) -> (Guard, String) {
    let display = format!(":{}", base + (std::process::id() * 8 + n) % 1600);
    let xvfb = Guard(
        Command::new("Xvfb")
            .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb starts"),
    );
    // Connect rather than look for the socket: an Xvfb killed earlier on this display leaves
    // its socket file behind, which refuses connections until the new server replaces it.
    let socket = format!("/tmp/.X11-unix/X{}", &display[1..]);
    wait_for("Xvfb", Duration::from_secs(20), || {
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    (xvfb, display)
}

/// Starts `cmd` in `cwd` on `display`, logging at info level into one log (stdout and stderr),
/// with `--screenshot SHOT`, and waits for that screenshot.
pub fn launch(
    mut cmd: Command,
    display: &str,
    cwd: &Path,
    shot: &Path,
) -> (Guard, Arc<Mutex<String>>) {
    let mut child = cmd
        .current_dir(cwd)
        .env("DISPLAY", display)
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "info")
        .arg("--screenshot")
        .arg(shot)
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
    wait_for_screenshot(&mut app, &log, shot);
    (app, log)
}

/// Waits (generously: software rendering in a debug build is slow to start) for a screenshot.
pub fn wait_for_screenshot(app: &mut Guard, log: &Arc<Mutex<String>>, shot: &Path) {
    wait_for("the screenshot", Duration::from_secs(300), || {
        alive(app, log);
        std::fs::metadata(shot)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
    });
    std::thread::sleep(Duration::from_millis(500));
}

/// The X id of the armsim window on `display`.
pub fn window_id(display: &str) -> String {
    let window = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(["search", "--sync", "--name", "armsim"])
        .output()
        .expect("xdotool runs");
    String::from_utf8_lossy(&window.stdout)
        .lines()
        .next()
        .expect("the armsim window is on the display")
        .to_string()
}

/// A real key press through X into window `id`.
pub fn press_key(display: &str, id: &str, key: &str) {
    let st = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(["windowfocus", "--sync", id, "key", "--delay", "80", key])
        .status()
        .expect("xdotool runs");
    assert!(st.success());
}
