//! `armsim bench window`: the real window on the default scene, one child `armsim` per render
//! profile, under the current DISPLAY (or a private Xvfb at 1280×800 when DISPLAY is unset).
//! Each child logs its frame rate, frame-time p50/p99 and real-time factor over a window of
//! `--seconds` while the session runs (`--frame-log-secs`); the benchmark then clicks the
//! panel's Pause button with xdotool and reads the window's pixels back from the X server until
//! the state label turns PAUSED-yellow: input to repaint, as a user sees it. Profiles run one
//! after the other in the same invocation, so their figures compare on the same machine load.
//!
//! **Scene cameras.** Where the scene has cameras, the lite profile is measured twice: on the
//! scene, and on the same scene with its cameras removed (a copy written to a temporary folder).
//! The window renders a camera only while something uses its images (`ui::camera_demand`), and
//! nothing does here, so the two should draw as many frames/s. The pair runs in the order
//! A B B A (with, without, without, with), so that a drift in the machine's load during the run
//! weighs on both alike, and each of its rows gives the mean of its two runs and both runs'
//! frame rates. Each row names the cameras that rendered during its measurement (from the
//! window's log).

use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt, ImageFormat};

/// Where the panel's Start and Pause buttons are in the default layout (1280×800, scale 1),
/// in window pixels; the GUI smoke test clicks the same places.
const START_BUTTON: (u32, u32) = (26, 83);
const PAUSE_BUTTON: (u32, u32) = (72, 83);
/// The strip of the panel holding the state label (x, y, width, height).
const STATE_LABEL: (i16, i16, u16, u16) = (0, 40, 260, 36);

/// `--breakdown`'s variants: a profile with one thing taken out or added (the arguments after
/// `--render-profile PROFILE`), each named for its row.
const BREAKDOWN: [(&str, &str, [&str; 2]); 7] = [
    ("full, no panel", "full", ["--render-tweak", "no-panel"]),
    ("lite, no panel", "lite", ["--render-tweak", "no-panel"]),
    ("full, no gizmos", "full", ["--render-tweak", "no-gizmos"]),
    ("lite at 100% resolution", "lite", ["--render-scale", "1"]),
    ("lite + tonemapping", "lite", ["--render-tweak", "tonemap"]),
    ("lite + PBR materials", "lite", ["--render-tweak", "pbr"]),
    ("lite, no frame cap", "lite", ["--max-fps", "1000"]),
];

pub struct Options {
    /// `--scene` as given (none: the built-in default scene).
    pub scene: Option<PathBuf>,
    pub seconds: f64,
    pub clicks: usize,
    pub breakdown: bool,
}

/// The window's title as the window manager reads it (`_NET_WM_NAME`, UTF-8).
fn title(x11: &impl Connection, window: u32, atom: u32) -> anyhow::Result<String> {
    let reply = x11
        .get_property(false, window, atom, AtomEnum::ANY, 0, 256)?
        .reply()?;
    Ok(String::from_utf8_lossy(&reply.value).into_owned())
}

/// One configuration of the window and the figures measured for it.
pub struct Row {
    name: String,
    args: String,
    /// The scene cameras that rendered during the measurement ("none", or their names).
    cameras: String,
    fps: f64,
    p50_ms: f64,
    p99_ms: f64,
    rtf: f64,
    clicks_ms: Vec<f64>,
    titles_ms: Vec<f64>,
    /// The frame rate of each run this row merges (one, or two for the camera pair).
    fps_runs: Vec<f64>,
}

impl Row {
    /// Merges a second run of the same configuration into this row: the mean of the rates,
    /// every click, the cameras of either run.
    fn merge(&mut self, other: Row) {
        let n = self.fps_runs.len() as f64;
        let mean = |a: f64, b: f64| (a * n + b) / (n + 1.0);
        self.fps = mean(self.fps, other.fps);
        self.p50_ms = mean(self.p50_ms, other.p50_ms);
        self.p99_ms = mean(self.p99_ms, other.p99_ms);
        self.rtf = mean(self.rtf, other.rtf);
        self.clicks_ms.extend(other.clicks_ms);
        self.titles_ms.extend(other.titles_ms);
        self.fps_runs.extend(other.fps_runs);
        if other.cameras != "none" && other.cameras != self.cameras {
            self.cameras = if self.cameras == "none" {
                other.cameras
            } else {
                format!("{}, {}", self.cameras, other.cameras)
            };
        }
    }
}

pub struct Report {
    display: String,
    adapter: String,
    load: String,
    seconds: f64,
    rows: Vec<Row>,
}

/// Kills the child when dropped, however the benchmark ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(options: &Options) -> anyhow::Result<Report> {
    if !(options.seconds.is_finite() && options.seconds >= 2.0) {
        bail!("--seconds must be at least 2");
    }
    require("xdotool")?;
    let (display, _xvfb) = match std::env::var("DISPLAY") {
        Ok(d) if !d.is_empty() => (d, None),
        _ => {
            let (d, guard) = start_xvfb()?;
            (d, Some(guard))
        }
    };
    let (x11, _) = x11rb::connect(Some(&display))
        .with_context(|| format!("cannot connect to the X display {display}"))?;
    let mut variants: Vec<(&str, Vec<&str>)> =
        Vec::from(["full", "lite"].map(|profile| (profile, vec!["--render-profile", profile])));
    if options.breakdown {
        variants.extend(
            BREAKDOWN.map(|(name, profile, extra)| {
                (name, [["--render-profile", profile], extra].concat())
            }),
        );
    }
    let mut report = Report {
        display: display.clone(),
        adapter: String::from("?"),
        load: String::new(),
        seconds: options.seconds,
        rows: Vec::new(),
    };
    let bare = scene_without_cameras(options.scene.as_deref())?;
    for (name, args) in variants {
        let mut runs = vec![(name.to_string(), options.scene.clone())];
        if let (Some(bare), "lite") = (&bare, name) {
            // A B B A: see the module's comment.
            let without = (
                "lite, no scene cameras".to_string(),
                Some(bare.scene.clone()),
            );
            runs.extend([without.clone(), without, runs[0].clone()]);
        }
        let first = report.rows.len();
        for (name, scene) in runs {
            eprintln!("bench window: measuring {name} ({} s) …", options.seconds);
            let (row, adapter) = measure(options, scene.as_deref(), &display, &x11, &name, &args)
                .with_context(|| format!("measuring {name}"))?;
            report.adapter = adapter;
            match report.rows[first..].iter_mut().find(|r| r.name == row.name) {
                Some(earlier) => earlier.merge(row),
                None => report.rows.push(row),
            }
        }
    }
    report.load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    Ok(report)
}

fn require(tool: &str) -> anyhow::Result<()> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        bail!("the window benchmark needs `{tool}` (Debian: apt-get install xdotool xvfb)");
    }
    Ok(())
}

/// A private Xvfb: it picks a free display itself (`-displayfd`) and names it only once it takes
/// clients, so neither a guessed number nor a probe connection can race another X server.
fn start_xvfb() -> anyhow::Result<(String, XServer)> {
    require("Xvfb")?;
    let mut child = Command::new("Xvfb")
        .args(["-displayfd", "1", "-screen", "0", "1280x800x24"])
        .args(["-nolisten", "tcp", "-noreset"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start Xvfb")?;
    let stdout = child.stdout.take().context("Xvfb's stdout")?;
    let server = XServer(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let number = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    let number: u32 = number
        .trim()
        .parse()
        .context("Xvfb did not come up (it named no display within 60 s)")?;
    let display = format!(":{number}");
    eprintln!("bench window: DISPLAY unset, started Xvfb on {display} at 1280x800");
    Ok((display, server))
}

/// Stops the private Xvfb with SIGTERM, so it removes its socket and lock files (SIGKILL leaves
/// them in /tmp), and kills it if it lingers.
struct XServer(Child);

impl Drop for XServer {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `ok` every 2 ms until it holds; an error after `timeout`.
fn wait_until(timeout: Duration, mut ok: impl FnMut() -> bool) -> anyhow::Result<Duration> {
    let start = Instant::now();
    loop {
        if ok() {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            bail!("timed out after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn xdotool(display: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(args)
        .output()
        .context("xdotool runs")?;
    if !out.status.success() {
        bail!(
            "xdotool {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Pixels of the state label that are PAUSED-yellow and RUNNING-green.
fn state_pixels(x11: &impl Connection, window: u32) -> anyhow::Result<(usize, usize)> {
    let (x, y, w, h) = STATE_LABEL;
    let image = x11
        .get_image(ImageFormat::Z_PIXMAP, window, x, y, w, h, !0)?
        .reply()?;
    let (mut yellow, mut green) = (0, 0);
    // 24-bit visuals come back as 32-bit BGRX.
    for px in image.data.chunks_exact(4) {
        let (b, g, r) = (i32::from(px[0]), i32::from(px[1]), i32::from(px[2]));
        if (r - 230).abs() < 30 && (g - 190).abs() < 30 && b < 110 {
            yellow += 1;
        }
        if (r - 90).abs() < 30 && (g - 200).abs() < 30 && (b - 110).abs() < 30 {
            green += 1;
        }
    }
    Ok((yellow, green))
}

fn measure(
    options: &Options,
    scene: Option<&Path>,
    display: &str,
    x11: &impl Connection,
    name: &str,
    args: &[&str],
) -> anyhow::Result<(Row, String)> {
    let exe = std::env::current_exe().context("own executable")?;
    let mut command = Command::new(exe);
    if let Some(scene) = scene {
        command.arg("--scene").arg(scene);
    }
    let mut child = command
        .env("DISPLAY", display)
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "info")
        .args(["--no-teleop", "--no-agent-ports", "--frame-log-secs"])
        .arg(options.seconds.to_string())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start armsim")?;
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    for stream in [
        Box::new(child.stdout.take().expect("piped")) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().expect("piped")),
    ] {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                log.lock().expect("log lock").push(line);
            }
        });
    }
    let mut app = Guard(child);
    let pid = app.0.id().to_string();
    let has = |what: &str| {
        log.lock()
            .expect("log lock")
            .iter()
            .any(|l| l.contains(what))
    };
    let frame_lines = || -> Vec<String> {
        log.lock()
            .expect("log lock")
            .iter()
            .filter(|l| l.contains("frames/s over the last"))
            .cloned()
            .collect()
    };
    let dump = || log.lock().expect("log lock").join("\n");
    let mut alive = || -> anyhow::Result<()> {
        if let Some(status) = app.0.try_wait()? {
            bail!("armsim exited ({status}):\n{}", dump());
        }
        Ok(())
    };
    let start = Instant::now();
    while !has("first frame rendered") {
        alive()?;
        if start.elapsed() > Duration::from_secs(180) {
            bail!("no first frame after 180 s:\n{}", dump());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let adapter = log
        .lock()
        .expect("log lock")
        .iter()
        .find_map(|l| {
            let at = l.find("armsim::ui::render: ")? + "armsim::ui::render: ".len();
            Some(l[at..].split(": ").next().unwrap_or_default().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let window: u32 = xdotool(
        display,
        &["search", "--sync", "--pid", &pid, "--name", "armsim"],
    )?
    .lines()
    .next()
    .context("the armsim window is not on the display")?
    .parse()
    .context("xdotool window id")?;
    let wid = window.to_string();
    let click = |(x, y): (u32, u32)| -> anyhow::Result<()> {
        xdotool(
            display,
            &[
                "mousemove",
                "--window",
                &wid,
                &x.to_string(),
                &y.to_string(),
            ],
        )?;
        xdotool(display, &["click", "1"])?;
        Ok(())
    };
    // Start the session: figures are for a running arm. Without the panel, by key.
    let panel = !args.contains(&"no-panel");
    if panel {
        click(START_BUTTON)?;
    } else {
        xdotool(display, &["windowfocus", "--sync", &wid, "key", "space"])?;
    }
    let t = Instant::now();
    while !has("session IDLE -> RUNNING") {
        alive()?;
        if t.elapsed() > Duration::from_secs(60) {
            bail!("the Start button did not start the session:\n{}", dump());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The first log window after RUNNING overlaps the start; take the one after it.
    let wanted = frame_lines().len() + 2;
    while frame_lines().len() < wanted {
        alive()?;
        std::thread::sleep(Duration::from_millis(100));
    }
    let line = frame_lines()[wanted - 1].clone();
    let (fps, p50_ms, p99_ms, rtf) =
        parse_frame_line(&line).with_context(|| format!("cannot read {line:?}"))?;
    let cameras = {
        let log = log.lock().expect("log lock");
        let frame_line_at = |n: usize| {
            log.iter()
                .enumerate()
                .filter(|(_, l)| l.contains("frames/s over the last"))
                .nth(n)
                .map_or(0, |(i, _)| i)
        };
        let rendered = cameras_rendering(
            &log[..=frame_line_at(wanted - 1)],
            frame_line_at(wanted - 2),
        );
        if rendered.is_empty() {
            "none".to_string()
        } else {
            rendered.join(", ")
        }
    };

    // Input to repaint: click Pause, read pixels until the label turns yellow; Start again.
    let mut clicks_ms = Vec::new();
    let mut titles_ms = Vec::new();
    let net_wm_name = x11.intern_atom(false, b"_NET_WM_NAME")?.reply()?.atom;
    let clicks = if panel { options.clicks } else { 0 };
    for i in 0..clicks {
        wait_until(Duration::from_secs(30), || {
            state_pixels(x11, window).is_ok_and(|(y, g)| g > 5 && y == 0)
        })
        .context("the panel does not show RUNNING")?;
        xdotool(
            display,
            &[
                "mousemove",
                "--window",
                &wid,
                &PAUSE_BUTTON.0.to_string(),
                &PAUSE_BUTTON.1.to_string(),
            ],
        )?;
        // Land the clicks at different phases of the frame.
        std::thread::sleep(Duration::from_millis(250 + (i as u64 * 37) % 150));
        let t0 = Instant::now();
        let mut clicker = Command::new("xdotool")
            .env("DISPLAY", display)
            .args(["click", "1"])
            .spawn()
            .context("xdotool runs")?;
        // Both the title (set by the main world at the end of a frame) and the panel's pixels
        // (drawn by the render thread a frame later), whichever comes first.
        let (mut panel_at, mut title_at) = (None, None);
        let seen = wait_until(Duration::from_secs(30), || {
            if title_at.is_none()
                && title(x11, window, net_wm_name).is_ok_and(|t| t.ends_with("PAUSED"))
            {
                title_at = Some(t0.elapsed());
            }
            if panel_at.is_none() && state_pixels(x11, window).is_ok_and(|(y, _)| y > 5) {
                panel_at = Some(t0.elapsed());
            }
            panel_at.is_some() && title_at.is_some()
        });
        let _ = clicker.wait();
        alive()?;
        seen.context("the Pause click never showed PAUSED")?;
        clicks_ms.extend(panel_at.map(|d| d.as_secs_f64() * 1e3));
        titles_ms.extend(title_at.map(|d| d.as_secs_f64() * 1e3));
        click(START_BUTTON)?;
    }
    drop(app);
    Ok((
        Row {
            name: name.to_string(),
            args: args.join(" "),
            cameras,
            fps,
            p50_ms,
            p99_ms,
            rtf,
            clicks_ms,
            titles_ms,
            fps_runs: vec![fps],
        },
        adapter,
    ))
}

/// The scene cameras that rendered at any time from line `from` of the window's `log` to its
/// end, by the cameras' start and stop lines (`camera NAME: rendering (…)`, `camera NAME:
/// stopped rendering: …`).
fn cameras_rendering(log: &[String], from: usize) -> Vec<String> {
    let mut on = std::collections::BTreeSet::<String>::new();
    let mut rendered = std::collections::BTreeSet::new();
    for (i, line) in log.iter().enumerate() {
        if i == from {
            rendered.extend(on.iter().cloned());
        }
        let Some((name, what)) = line
            .find("camera ")
            .and_then(|at| line[at + "camera ".len()..].split_once(": "))
        else {
            continue;
        };
        if what.starts_with("rendering (") {
            on.insert(name.to_string());
            if i >= from {
                rendered.insert(name.to_string());
            }
        } else if what.starts_with("stopped rendering") {
            on.remove(name);
        }
    }
    if from >= log.len() {
        rendered.extend(on);
    }
    rendered.into_iter().collect()
}

/// A copy of a scene without its cameras, in a temporary folder removed when dropped.
struct BareScene {
    dir: PathBuf,
    scene: PathBuf,
}

impl Drop for BareScene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The scene (`--scene` as given, or the built-in default) without its cameras
/// (`extensions.armsim.cameras`), written to a temporary folder with its robot path made
/// absolute (a built-in robot is written beside it); `None` when the scene has no cameras.
fn scene_without_cameras(spec: Option<&Path>) -> anyhow::Result<Option<BareScene>> {
    use armsim::scene::{SceneSource, bundled};
    let source = SceneSource::choose(spec);
    let scene = source
        .load()
        .map_err(|e| anyhow::anyhow!("{}: {e}", source.describe()))?;
    if scene.cameras().is_empty() {
        return Ok(None);
    }
    if scene.config.extensions.armsim.cameras.is_empty() {
        bail!(
            "{}: its cameras come from the robot file, which the benchmark cannot take away",
            source.describe()
        );
    }
    let text = match &source {
        SceneSource::File(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        SceneSource::Bundled(name) => bundled::scene_json(name)
            .context("a built-in scene's JSON")?
            .to_string(),
    };
    let mut json: serde_json::Value = serde_json::from_str(&text).context("the scene's JSON")?;
    let dir = std::env::temp_dir().join(format!("armsim-bench-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let bare = BareScene {
        scene: dir.join("scene_without_cameras.json"),
        dir,
    };
    let robot = match scene.robot_path.strip_prefix(bundled::BUNDLED_ROOT) {
        Ok(rel) => {
            // `scenes/../robots/arm6.xml` → `robots/arm6.xml`, as the bundled files are named.
            let mut parts: Vec<String> = Vec::new();
            for c in rel.components() {
                match c {
                    std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into()),
                    std::path::Component::ParentDir => {
                        parts.pop();
                    }
                    _ => {}
                }
            }
            let rel = parts.join("/");
            let path = bare.dir.join(&rel);
            let text =
                bundled::file(&rel).with_context(|| format!("a built-in robot file {rel}"))?;
            std::fs::create_dir_all(path.parent().unwrap_or(&bare.dir))?;
            std::fs::write(&path, text)?;
            path
        }
        Err(_) => std::path::absolute(&scene.robot_path)?,
    };
    json["robot"]["mjcf_path"] = robot.to_string_lossy().into_owned().into();
    if let Some(armsim) = json
        .pointer_mut("/extensions/armsim")
        .and_then(|v| v.as_object_mut())
    {
        armsim.remove("cameras");
    }
    std::fs::write(&bare.scene, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("cannot write {}", bare.scene.display()))?;
    Ok(Some(bare))
}

/// Reads `F frames/s over the last S s (frame time p50 A ms, p99 B ms); simulation real-time
/// factor R` into (F, A, B, R).
fn parse_frame_line(line: &str) -> Option<(f64, f64, f64, f64)> {
    let number_after = |key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        let token: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        token.parse().ok()
    };
    let fps_text = line[..line.find(" frames/s")?].rsplit(' ').next()?;
    Some((
        fps_text.parse().ok()?,
        number_after("p50")?,
        number_after("p99")?,
        number_after("real-time factor")?,
    ))
}

fn median_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    (s[s.len() / 2], s[s.len() - 1])
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "window benchmark: default scene, DISPLAY {}, adapter {}; each profile measured over \
             {:.0} s while running, then Pause clicked {} times",
            self.display,
            self.adapter,
            self.seconds,
            self.rows.first().map_or(0, |r| r.clicks_ms.len())
        )?;
        writeln!(
            f,
            "  {:<26} {:>9} {:>9} {:>9} {:>7} {:>16} {:>16} {:>10}  scene cameras rendering",
            "profile",
            "frames/s",
            "p50 ms",
            "p99 ms",
            "RTF",
            "→panel med/max",
            "→title med/max",
            "fps ratio"
        )?;
        let base = self.rows.first().map_or(f64::NAN, |r| r.fps);
        for r in &self.rows {
            let (med, max) = median_max(&r.clicks_ms);
            let (tmed, tmax) = median_max(&r.titles_ms);
            writeln!(
                f,
                "  {:<26} {:>9.1} {:>9.1} {:>9.1} {:>7.3} {:>8.0}/{:<4.0} ms {:>8.0}/{:<4.0} ms {:>9.2}×  {}",
                r.name,
                r.fps,
                r.p50_ms,
                r.p99_ms,
                r.rtf,
                med,
                max,
                tmed,
                tmax,
                r.fps / base,
                r.cameras
            )?;
            if r.fps_runs.len() > 1 {
                let runs: Vec<String> = r.fps_runs.iter().map(|f| format!("{f:.1}")).collect();
                writeln!(f, "  {:<26} frames/s of its runs: {}", "", runs.join(", "))?;
            }
        }
        writeln!(
            f,
            "  (fps ratio against the first row; load average at the end {})",
            self.load
        )?;
        for r in &self.rows {
            writeln!(f, "  {}: armsim {}", r.name, r.args)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_frame_log_line() {
        let line = "2026-11-23T16:04:47Z INFO armsim::ui: 17.9 frames/s over the last 20 s \
                    (frame time p50 52.3 ms, p99 80.0 ms); simulation real-time factor 0.998";
        assert_eq!(parse_frame_line(line), Some((17.9, 52.3, 80.0, 0.998)));
        assert_eq!(parse_frame_line("nothing here"), None);
    }

    #[test]
    fn a_second_run_merges_into_its_row_as_a_mean() {
        let row = |fps: f64, cameras: &str| Row {
            name: "lite".into(),
            args: String::new(),
            cameras: cameras.into(),
            fps,
            p50_ms: 1000.0 / fps,
            p99_ms: 2000.0 / fps,
            rtf: 1.0,
            clicks_ms: vec![fps],
            titles_ms: vec![],
            fps_runs: vec![fps],
        };
        let mut a = row(10.0, "none");
        a.merge(row(14.0, "front"));
        assert_eq!(a.fps, 12.0);
        assert_eq!(a.p50_ms, (100.0 + 1000.0 / 14.0) / 2.0);
        assert_eq!(a.fps_runs, [10.0, 14.0]);
        assert_eq!(a.clicks_ms, [10.0, 14.0]);
        assert_eq!(
            a.cameras, "front",
            "a camera that rendered in either run is named"
        );
    }

    #[test]
    fn names_the_cameras_that_rendered_in_the_window() {
        let log: Vec<String> = [
            "INFO armsim::ui::cameras: camera front: 256x256 at 30 Hz, 60° vertical field of view",
            "INFO armsim::ui::camera_demand: camera front: rendering (its first images, …)",
            "INFO armsim::ui::camera_demand: camera wrist: rendering (its first images, …)",
            "INFO armsim::ui::camera_demand: camera front: stopped rendering: nothing uses …",
            "INFO armsim::ui: 14.0 frames/s over the last 20 s",
            "INFO armsim::ui::camera_demand: camera front: rendering (a client asked …)",
            "INFO armsim::ui: 14.0 frames/s over the last 20 s",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(cameras_rendering(&log, 4), ["front", "wrist"]);
        assert_eq!(cameras_rendering(&log[..5], 4), ["wrist"]);
        assert_eq!(cameras_rendering(&log[..5], 5), ["wrist"]);
        let stopped = [log[1].clone(), log[3].clone(), log[4].clone()];
        assert!(cameras_rendering(&stopped, 2).is_empty());
    }

    #[test]
    fn the_default_scene_without_its_cameras_loads_and_has_none() {
        let bare = scene_without_cameras(None)
            .expect("written")
            .expect("the default scene has cameras");
        let scene = armsim::scene::SceneSource::choose(Some(&bare.scene))
            .load()
            .expect("loads");
        assert!(scene.cameras().is_empty());
        assert_eq!(scene.robot.links.len(), {
            let default = armsim::scene::SceneSource::choose(None).load().unwrap();
            default.robot.links.len()
        });
        let dir = bare.dir.clone();
        drop(bare);
        assert!(!dir.exists(), "removed when dropped");
    }
}
