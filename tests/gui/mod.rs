//! Shared helpers of the real-window tests (`gui_smoke`, `gui_robots`, `gui_cameras`): an Xvfb
//! server of each test's own, the app launched on it with its log collected, key presses through
//! xdotool and the screenshots read back as pixels. They need Xvfb, xdotool and Mesa (`.ci/run`
//! installs them).

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
        let log = log.lock().unwrap();
        if log.contains("XOpenDisplayFailed") {
            panic!(
                "no display for this window test: armsim could not open the test's X display \
                 ({status}), see its log:\n{log}"
            );
        }
        panic!("armsim exited early ({status}):\n{log}");
    }
}

/// An X server of one test's own, stopped with SIGTERM when dropped (then killed if it lingers):
/// a server killed outright leaves its lock and socket files in `/tmp` for the next one to trip on.
pub struct Xvfb {
    child: Child,
    /// `:N`, the number Xvfb chose itself.
    pub display: String,
    log: Arc<Mutex<String>>,
}

impl Xvfb {
    /// Panics with one line naming the display unless the server still runs: a window test whose
    /// display died fails as the test machine's X server, not as armsim.
    pub fn check(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the test's X server on {} exited ({status}): no display for this window test, \
                 not an armsim failure; Xvfb said: {}",
                self.display,
                self.log.lock().unwrap().trim()
            );
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// SIGTERM, so the server removes its files; SIGKILL after 5 s.
fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on our own child's pid, which `child` has not reaped yet.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A fresh Xvfb server of this test's own, ready for clients, and its display name.
///
/// Xvfb chooses a free display itself (`-displayfd`): it takes the first number whose socket
/// nobody else holds, which no scheme of ours (the process id, a search of `/tmp`) can know
/// across the test binaries and CI runs on one machine. It writes that number only once it is
/// ready for clients, so no probe connection is needed either (a probe that connects and leaves
/// is the server's last client: without `-noreset` the server resets behind it). When no server
/// comes up, this fails in one line that says so, with what Xvfb printed.
pub fn start_xvfb() -> (Xvfb, String) {
    let mut child = Command::new("Xvfb")
        .args(["-displayfd", "1", "-screen", "0", "1280x800x24"])
        .args(["-nolisten", "tcp", "-noreset"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("no display for this window test: Xvfb does not start: {e}"));
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("piped");
    let into = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut l = into.lock().unwrap();
            l.push_str(&line);
            l.push(' ');
        }
    });
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let number = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let mut xvfb = Xvfb {
        child,
        display: format!(":{}", number.trim()),
        log,
    };
    if number.trim().parse::<u32>().is_err() {
        let status = xvfb.child.try_wait().ok().flatten();
        stop(&mut xvfb.child);
        panic!(
            "no display for this window test: Xvfb did not report a display within 60 s \
             (exit: {status:?}), not an armsim failure; Xvfb said: {}",
            xvfb.log.lock().unwrap().trim()
        );
    }
    let display = xvfb.display.clone();
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
