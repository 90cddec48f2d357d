//! The `armsim` command: parse the command line, load and validate the scene, then open the
//! window, run headless, or run the benchmark.

// The benchmarks belong to the command, not to the library: `armsim bench …` is their only user.
mod bench;
mod cli_parse;
mod lerobot_cli;
mod ros2_cli;
mod ros2_types;
mod scene_cli;
mod trajectory_cmd;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use armsim::headless::{self, StopAfter};
use armsim::sim::ClockMode;
use armsim::trajectory::plugin as trajectory;
use armsim::ui::render::{ProfileChoice, RenderProfile};
use armsim::{SimOptions, scene};
use clap::{Parser, Subcommand};
use cli_parse::{ReplayArg, parse_package_path, resolve_host};

#[derive(Parser, Debug)]
#[command(
    name = "armsim",
    version,
    about = "A robot arm on a table with cubes, simulated by Rapier at 240 Hz",
    long_about = "A robot arm on a table with cubes, simulated by Rapier at a fixed 240 Hz inside a \
                  Bevy app. Without options it opens the window on the default scene; \
                  --headless runs the same simulation without one."
)]
struct Cli {
    /// Scene file (revA scene_config.json), or the name of a scene built into armsim:
    /// default_scene, gripper4. Default: the built-in default_scene (arm6 and three cubes),
    /// compiled into the binary from assets/scenes/default_scene.json, so armsim runs from any
    /// folder. Paths inside a scene file resolve relative to that file.
    #[arg(long, value_name = "PATH|NAME", global = true)]
    scene: Option<PathBuf>,

    /// Where a robot file's `package://NAME/…` mesh paths point: NAME=DIR (repeatable). Tried
    /// before the scene's `extensions.armsim.robot.package_paths` and before looking for a
    /// folder named NAME above the robot file.
    #[arg(long, value_name = "NAME=DIR", value_parser = parse_package_path, global = true)]
    package_path: Vec<(String, PathBuf)>,

    /// Run without a window; prints steps, sim time, wall time and steps/s at exit.
    #[arg(long)]
    headless: bool,

    /// Start the session (RUNNING) at once instead of waiting in IDLE for a client or the
    /// panel's Start: e.g. a headless --record-lerobot of the scene without a client.
    #[arg(long)]
    start: bool,

    /// Stop after N physics steps (headless).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    steps: Option<u64>,

    /// Stop after S seconds of simulated time (headless).
    #[arg(long, value_name = "S")]
    duration: Option<f64>,

    /// Pace the simulation to wall-clock time (default, except headless with --steps,
    /// --duration or --replay, which default to --fast).
    #[arg(long, conflicts_with = "fast")]
    realtime: bool,

    /// Step as fast as possible.
    #[arg(long)]
    fast: bool,

    /// Real-time speed factor when pacing to the wall clock (0.5 = half speed).
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    speed: f64,

    /// Serve the gripper project's binary remote-control lockstep protocol on this TCP port
    /// (0 = any free port).
    #[arg(long, visible_alias = "remote_control_port", value_name = "PORT")]
    remote_control_port: Option<u16>,

    /// Address the headset page (HTTPS + wss, guarded by the pairing key) listens on; 0.0.0.0
    /// opens it to headsets on the network. Only the page: every other listener stays on
    /// loopback unless its own --*-bind opens it. (--bind is the same flag.)
    #[arg(
        long = "xr-bind",
        visible_alias = "bind",
        default_value = "127.0.0.1",
        value_name = "ADDR"
    )]
    xr_bind: std::net::IpAddr,

    /// Address of the plain ws:// teleop listener (default: the scene's `networking.ws_host`).
    /// Peers beyond loopback must give the pairing key (?key=KEY) unless --teleop-no-key.
    #[arg(long, value_name = "ADDR")]
    teleop_bind: Option<std::net::IpAddr>,

    /// Let peers beyond loopback use the plain ws:// teleop listener without the pairing key
    /// (for an unmodified native client across the network; logged loudly).
    #[arg(long)]
    teleop_no_key: bool,

    /// Address of the agent port. It has no authentication: anything but loopback lets anyone
    /// who can reach it drive the arm (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    agent_bind: std::net::IpAddr,

    /// Address of the monitor port. It has no authentication: anything but loopback lets anyone
    /// who can reach it reset the scene or stop armsim (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    monitor_bind: std::net::IpAddr,

    /// Address of the remote-control lockstep port. It has no authentication: anything but
    /// loopback lets anyone who can reach it drive the arm (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    lockstep_bind: std::net::IpAddr,

    /// Serve TeleSpace revA teleoperation (WebSocket) on this port instead of the scene's
    /// `ws_port` (0 = any free port).
    #[arg(long, value_name = "PORT", conflicts_with = "no_teleop")]
    teleop_port: Option<u16>,

    /// Do not start the teleoperation WebSocket server.
    #[arg(long)]
    no_teleop: bool,

    /// Serve the headset page (HTTPS: the WebXR page, /scene.json and revA over wss at the
    /// scene's ws_path) on this port, at the teleop address (0 = any free port).
    #[arg(long, default_value_t = armsim::protocol::xr::DEFAULT_PORT, value_name = "PORT")]
    xr_port: u16,

    /// Do not serve the headset page.
    #[arg(long)]
    no_xr: bool,

    /// The pairing key of the headset page, and of the ws:// listener for peers beyond
    /// loopback (default: a random one per start); 8-128 characters of A-Z a-z 0-9 - _.
    #[arg(long, value_name = "KEY")]
    xr_key: Option<String>,

    /// The headset page's certificate (PEM), e.g. from mkcert; with --tls-key. Default: a
    /// self-signed one made at first start and kept in the config directory
    /// ($ARMSIM_CONFIG_DIR, $XDG_CONFIG_HOME/armsim or ~/.config/armsim).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// RCSSServerMJ-style agent port (length-prefixed S-expressions; 0 = any free port).
    #[arg(long, default_value_t = 60000, value_name = "PORT")]
    agent_port: u16,

    /// RCSSServerMJ-style monitor port (0 = any free port).
    #[arg(long, default_value_t = 60001, value_name = "PORT")]
    monitor_port: u16,

    /// Do not open the agent and monitor ports.
    #[arg(long)]
    no_agent_ports: bool,

    /// Sync mode: every cycle waits for exactly one message from the agent (dropped after 5 s
    /// of silence).
    #[arg(long)]
    sync: bool,

    /// Sim steps per agent/monitor cycle (4 = 60 Hz at 240 Hz).
    #[arg(long, global = true, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=240))]
    cycle_steps: u32,

    /// Referee rule book: pick_and_place (needs the scene's goal zone) or free_play (default:
    /// pick_and_place where the scene has a goal zone).
    #[arg(long, value_name = "NAME")]
    rules: Option<String>,

    /// Teleop state frames per second (wall clock), to every session.
    #[arg(long, default_value_t = 60.0, value_name = "HZ")]
    state_rate: f64,

    /// Seconds a teleop controller may stay in NET_TIMEOUT (no heartbeat) before it is demoted
    /// and the longest-connected observer promoted (default: the scene's
    /// `extensions.armsim.controller_grace_s`, or 10).
    #[arg(long, value_name = "SECS")]
    controller_grace: Option<f64>,

    /// Seconds a lockstep client may take to answer a frame before it is dropped.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    lockstep_timeout: f64,

    #[command(flatten)]
    ros2_flags: ros2_cli::Ros2Args,

    /// Record a trajectory (MetaSim v2) into this file: .json, .json.gz, .pkl or .pkl.gz.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,

    /// Record a state every N steps (actions are recorded every step).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    record_every: u32,

    #[command(flatten)]
    lerobot_flags: lerobot_cli::LeRobotArgs,

    #[command(flatten)]
    scene_flags: scene_cli::SceneArgs,

    /// Replay a MetaSim trajectory file (headless: exits when the replay ends, or earlier at
    /// --steps/--duration). With --record, the replay is recorded anew (e.g. by action in
    /// another scene).
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,

    /// How to replay: `state` (set each recorded state; exact) or `action` (drive the physics
    /// with the recorded actions; reports the divergence).
    #[arg(long, value_enum, default_value_t = ReplayArg::State)]
    replay_mode: ReplayArg,

    /// Which demo of the file to replay (0 = first).
    #[arg(long, default_value_t = 0, value_name = "N")]
    demo: usize,

    /// Window only: save a PNG of the window here once the scene has rendered.
    #[arg(long, value_name = "PATH")]
    screenshot: Option<PathBuf>,

    /// Write each scene camera's newest image to DIR/<camera>.png and the step, sim time and
    /// pose it shows to DIR/<camera>.json, at most twice a second (headless: implies --cameras).
    #[arg(long, value_name = "DIR")]
    camera_snapshots: Option<PathBuf>,

    /// Headless: render the scene's cameras offscreen (Vulkan; Mesa's software lavapipe will
    /// do, no display needed), for --record-lerobot's video and --camera-snapshots, which imply
    /// it where the scene has cameras.
    #[arg(long)]
    cameras: bool,

    /// Window only: `full` (window resolution, tonemapping, no frame cap), `lite` (for software
    /// renderers: reduced resolution, no tonemapping, capped frame rate) or `auto` (lite on a
    /// software adapter such as Mesa's llvmpipe, full on a GPU). The panel's View section
    /// switches it too.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto, value_name = "PROFILE")]
    render_profile: ProfileChoice,

    /// Window, lite profile: fraction of the view's resolution the 3D scene renders at.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    render_scale: f32,

    /// Window, lite profile: frame cap (input still wakes the window at once).
    #[arg(long, default_value_t = 30.0, value_name = "FPS")]
    max_fps: f64,

    /// Window: seconds between the frame-rate log lines.
    #[arg(long, default_value_t = 10.0, value_name = "SECS", hide = true)]
    frame_log_secs: f64,

    /// Benchmark switches (hidden): tonemap, pbr (lite keeps PBR materials), no-panel, no-gizmos.
    #[arg(long, value_delimiter = ',', value_name = "SWITCH", hide = true)]
    render_tweak: Vec<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Trajectory files: `recover` turns a killed recording's journal into the complete file.
    Trajectory {
        #[command(subcommand)]
        command: trajectory_cmd::TrajectoryCommand,
    },
    /// Writes a sample of every ROS 2 message type in armsim's CDR, as JSON, and the type table
    /// (python/tests/test_ros2_types.py checks them with rosbags).
    #[command(name = "ros2-types", hide = true)]
    Ros2Types {
        /// The folder to write `<pkg>_<msg|srv>_<Name>.{cdr,json}` and `index.json` into.
        #[arg(long, value_name = "DIR")]
        dump: PathBuf,
    },
    /// Measure the simulator and its protocols; prints figures (median of 5 rounds).
    Bench {
        /// What to measure.
        #[arg(value_enum, default_value_t = BenchKind::Step)]
        kind: BenchKind,
        /// Steps per round (default: 24000 for `step` and `record`, 10000 for `lockstep`); cycles for
        /// `agent` (default 5000); samples for `teleop` (default 600).
        #[arg(long, value_name = "N")]
        steps: Option<u64>,
        /// `step`: the arm at rest, or following sines about home (a new target every step).
        #[arg(long, value_enum, default_value_t = bench::Motion::Rest)]
        motion: bench::Motion,
        /// `quality`: the settings to compare, each `N[+E][xP][/JOINTS]`: solver_iterations,
        /// then arm_extra_iterations, pgs_iterations and arm_joints (multibody, hybrid or
        /// impulse), the scene's own where left out, e.g. `3+0x2/hybrid`; default: the scene's
        /// own and a spread of the others.
        #[arg(long, value_delimiter = ',', value_name = "N[+E][xP][/JOINTS],...")]
        iterations: Vec<String>,
        /// `idle`, `window`, `observers`: wall seconds each case (idle, observers) or render
        /// profile (window) is measured for (default: 3 for `idle` and `observers`, 20 for
        /// `window`).
        #[arg(long, value_name = "S")]
        seconds: Option<f64>,
        /// `teleop`: observer sessions besides the controller.
        #[arg(long, default_value_t = 64, value_name = "N")]
        observers: usize,
        /// `observers`: the port the observers watch.
        #[arg(long, value_enum, default_value_t = bench::observers::Watch::Monitor)]
        protocol: bench::observers::Watch,
        /// `observers`: how many observers connect.
        #[arg(long, default_value_t = 256, value_name = "N")]
        n: usize,
        /// `window`: Pause clicks per profile for the input-to-repaint latency.
        #[arg(long, default_value_t = 8, value_name = "N")]
        clicks: usize,
        /// `window`: also measure what each part costs (lite with one thing put back or taken away).
        #[arg(long)]
        breakdown: bool,
    },
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum BenchKind {
    /// steps/s through the ECS step path against bare Rapier.
    Step,
    /// remote-control lockstep over loopback against a bare ping-pong and a bare step (use the
    /// gripper4 scene).
    Lockstep,
    /// RCSSServerMJ agent sync-mode cycles/s with one agent over loopback.
    Agent,
    /// TeleSpace teleop reflection latency, heartbeat round trip and real-time factor with
    /// observers.
    Teleop,
    /// MetaSim trajectory recording overhead and the load time of a 100-demo file per format.
    Record,
    /// The window on the default scene under the current DISPLAY (or a private Xvfb when none):
    /// frames/s, frame time p50/p99, real-time factor and click-to-repaint latency of the
    /// panel's Pause button, for the full and the lite render profile.
    Window,
    /// Physics quality (tracking, cubes at rest, grasp, energy of a free swing) beside the step
    /// cost, for each --iterations setting (default scene).
    Quality,
    /// Process CPU time while idle in real time and while waiting on a silent lockstep client
    /// or sync agent, against the physics alone.
    Idle,
    /// How long the scene takes to load (robot file, meshes, convex hulls; median of 5 loads)
    /// and the loaded robot's size.
    Load,
    /// What watchers cost: process CPU per observer (--n of them on --protocol), the frames each
    /// receives per second and the real-time factor, against the same run with nobody connected.
    Observers,
    /// What --ros2 costs: process CPU and real-time factor with nobody subscribed, with one
    /// subscriber process of joint_states and /tf at --ros2-rate (default 100 Hz), and with it
    /// reading /clock too, against the mean of a run without ROS 2 before and one after. Runs
    /// itself in a private network namespace (`unshare -n`, needs root).
    Ros2,
    /// `bench ros2`'s subscriber process.
    #[value(hide = true)]
    Ros2Peer,
}

/// The window's render profile from the command line.
fn render_profile(cli: &Cli) -> anyhow::Result<RenderProfile> {
    if !(cli.render_scale.is_finite() && (0.25..=1.0).contains(&cli.render_scale)) {
        anyhow::bail!(
            "--render-scale must be in 0.25..=1, got {}",
            cli.render_scale
        );
    }
    if !(cli.max_fps.is_finite() && (1.0..=1000.0).contains(&cli.max_fps)) {
        anyhow::bail!("--max-fps must be in 1..=1000, got {}", cli.max_fps);
    }
    if !(cli.frame_log_secs.is_finite() && cli.frame_log_secs >= 0.5) {
        anyhow::bail!("--frame-log-secs must be at least 0.5");
    }
    let mut render = RenderProfile {
        choice: cli.render_profile,
        ..Default::default()
    };
    render.lite.scale = cli.render_scale;
    render.lite.max_fps = cli.max_fps;
    for tweak in &cli.render_tweak {
        match tweak.as_str() {
            "tonemap" => render.lite.tonemapping = true,
            "pbr" => render.lite.pbr = true,
            "no-panel" => render.ablation.no_panel = true,
            "no-gizmos" => render.ablation.no_gizmos = true,
            other => anyhow::bail!(
                "unknown --render-tweak {other:?} (tonemap, pbr, no-panel, no-gizmos)"
            ),
        }
    }
    Ok(render)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("armsim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    if let Some(Command::Trajectory { command }) = &cli.command {
        return trajectory_cmd::run(command);
    }
    if let Some(Command::Ros2Types { dump }) = &cli.command {
        let n = ros2_types::dump(dump)?;
        println!("wrote {n} ROS 2 types to {}", dump.display());
        return Ok(ExitCode::SUCCESS);
    }
    if !(cli.speed.is_finite() && cli.speed > 0.0) {
        anyhow::bail!("--speed must be a positive number, got {}", cli.speed);
    }
    if let Some(d) = cli.duration
        && !(d.is_finite() && d > 0.0)
    {
        anyhow::bail!("--duration must be a positive number of seconds, got {d}");
    }
    let source = scene::SceneSource::choose(cli.scene.as_deref());
    let load_options = armsim::robot::LoadOptions {
        package_paths: cli.package_path.clone(),
        ..Default::default()
    };
    let mut scene = match source.load_with(&load_options) {
        Ok(s) => s,
        Err(errors) => {
            eprintln!(
                "armsim: scene {} is not valid:\n{errors}",
                source.describe()
            );
            return Ok(ExitCode::from(2));
        }
    };
    if let Err(e) = cli.scene_flags.apply(&mut scene) {
        eprintln!("armsim: scene {}: {e}", source.describe());
        return Ok(ExitCode::from(2));
    }
    let scene = Arc::new(scene);
    // Logging starts with the app; until then the choice is a plain line on stderr, and only
    // where a named file was not found and the built-in copy stands in for it.
    if let (Some(asked), scene::SceneSource::Bundled(name)) = (&cli.scene, &source)
        && asked.as_os_str() != *name
    {
        eprintln!(
            "armsim: {} is not a file here; using the {}",
            asked.display(),
            source.describe()
        );
    }

    if let Some(Command::Bench {
        kind,
        steps,
        motion,
        seconds,
        iterations,
        observers,
        protocol,
        n,
        clicks,
        breakdown,
    }) = cli.command
    {
        let seconds = seconds.unwrap_or(match kind {
            BenchKind::Window => 20.0,
            _ => 3.0,
        });
        if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
            anyhow::bail!("--seconds must be between 0 and 3600, got {seconds}");
        }
        match kind {
            BenchKind::Window => {
                let options = bench::window::Options {
                    scene: cli.scene.clone(),
                    seconds,
                    clicks,
                    breakdown,
                };
                let report = bench::window::run(&options).context("window benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Step => {
                let report = bench::run(scene, steps.unwrap_or(24_000), motion)
                    .context("benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Lockstep => {
                let report = bench::lockstep::run(scene, steps.unwrap_or(10_000))
                    .context("lockstep benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Agent => {
                let report = bench::agent::run(scene, steps.unwrap_or(5_000), cli.cycle_steps)
                    .context("agent benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Record => {
                let report = bench::record::run(scene, steps.unwrap_or(24_000))
                    .context("record benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Quality => {
                let settings = if iterations.is_empty() {
                    bench::quality::Setting::defaults(&scene)
                } else {
                    bench::quality::parse_settings(&iterations, &scene)
                        .map_err(anyhow::Error::msg)?
                };
                let report =
                    bench::quality::run(scene, &settings).context("quality benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Load => match bench::load::run(&source, &load_options) {
                Ok(report) => println!("{report}"),
                Err(errors) => anyhow::bail!("scene {} is not valid:\n{errors}", source.describe()),
            },
            BenchKind::Idle => {
                let report = bench::idle::run(scene, std::time::Duration::from_secs_f64(seconds))
                    .context("idle benchmark failed")?;
                println!("{report}");
            }
            BenchKind::Observers => {
                let wall = std::time::Duration::from_secs_f64(seconds);
                let report = bench::observers::run(scene, protocol, n, wall)
                    .context("observers benchmark failed")?;
                println!("{report}");
            }
            #[cfg(feature = "ros2")]
            BenchKind::Ros2 => {
                let wall = std::time::Duration::from_secs_f64(seconds);
                let rate =
                    armsim::protocol::ros2::options::Ros2Options::rate(cli.ros2_flags.ros2_rate)
                        .context("--ros2-rate")?;
                // `None`: it ran (and printed) in its own network namespace.
                if let Some(report) =
                    bench::ros2::run(scene, rate, wall).context("ros2 benchmark failed")?
                {
                    println!("{report}");
                }
            }
            #[cfg(feature = "ros2")]
            BenchKind::Ros2Peer => bench::ros2::peer().context("ros2 benchmark's subscriber")?,
            #[cfg(not(feature = "ros2"))]
            BenchKind::Ros2 | BenchKind::Ros2Peer => {
                anyhow::bail!("bench ros2: this armsim was built without the ros2 feature")
            }
            BenchKind::Teleop => {
                let samples = usize::try_from(steps.unwrap_or(600)).unwrap_or(usize::MAX);
                let report = bench::teleop::run(scene, observers, samples)
                    .context("teleop benchmark failed")?;
                println!("{report}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }

    let realtime = ClockMode::RealTime { speed: cli.speed };
    let clock = if cli.fast {
        ClockMode::Fast
    } else if cli.realtime
        || !cli.headless
        || (cli.steps.is_none() && cli.duration.is_none() && cli.replay.is_none())
    {
        // A headless server (no stop condition) serves clients in real time; batch runs race.
        realtime
    } else {
        ClockMode::Fast
    };
    let options = SimOptions { clock };

    if !(cli.lockstep_timeout.is_finite() && cli.lockstep_timeout > 0.0) {
        anyhow::bail!("--lockstep-timeout must be a positive number of seconds");
    }
    if let Some(g) = cli.controller_grace
        && !(g.is_finite() && (0.0..=3600.0).contains(&g))
    {
        anyhow::bail!("--controller-grace must be in 0..=3600 seconds, got {g}");
    }
    if !(cli.state_rate.is_finite() && cli.state_rate > 0.0 && cli.state_rate <= 1000.0) {
        anyhow::bail!(
            "--state-rate must be in (0, 1000] Hz, got {}",
            cli.state_rate
        );
    }
    // One pairing key for the page and for the ws:// listener's peers beyond loopback.
    if let Some(key) = &cli.xr_key {
        armsim::protocol::xr::check_key(key).map_err(anyhow::Error::msg)?;
    }
    let key = cli
        .xr_key
        .clone()
        .unwrap_or_else(armsim::protocol::xr::random_key);
    let teleop = if cli.no_teleop {
        None
    } else {
        let net = &scene.config.networking;
        let ip = match cli.teleop_bind {
            Some(ip) => ip,
            None => resolve_host(&net.ws_host)?,
        };
        Some(armsim::protocol::teleop::plugin::TeleopOptions {
            addr: std::net::SocketAddr::new(ip, cli.teleop_port.unwrap_or(net.ws_port)),
            state_rate_hz: cli.state_rate,
            controller_grace: cli.controller_grace.map(std::time::Duration::from_secs_f64),
            key: (!cli.teleop_no_key).then(|| key.clone()),
        })
    };
    let xr = if cli.no_teleop || cli.no_xr {
        None
    } else {
        let cert = match (&cli.tls_cert, &cli.tls_key) {
            (Some(cert), Some(key)) => armsim::protocol::xr::CertSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => armsim::protocol::xr::CertSource::Generated {
                dir: armsim::protocol::xr::tls::config_dir()?,
            },
        };
        Some(armsim::protocol::xr::XrOptions {
            bind: cli.xr_bind,
            port: cli.xr_port,
            key: key.clone(),
            cert,
        })
    };
    let lockstep = cli.remote_control_port.map(|port| {
        (
            std::net::SocketAddr::new(cli.lockstep_bind, port),
            std::time::Duration::from_secs_f64(cli.lockstep_timeout),
        )
    });
    #[cfg_attr(not(feature = "ros2"), allow(unused_variables))]
    let ros2 = cli.ros2_flags.options()?;
    if cli.sync && cli.no_agent_ports {
        anyhow::bail!("--sync needs the agent port; drop --no-agent-ports");
    }
    let rules_scene = scene.clone();
    let add_servers = |app: &mut bevy::app::App| -> anyhow::Result<()> {
        if let Some((addr, timeout)) = lockstep {
            armsim::protocol::lockstep::plugin::add(app, addr, timeout)
                .with_context(|| format!("cannot listen for lockstep clients on {addr}"))?;
        }
        if let Some(name) = &cli.rules {
            armsim::referee::plugin::use_rule_book(app, &rules_scene, name).context("--rules")?;
        }
        if !cli.no_agent_ports {
            let options = armsim::protocol::sexp::plugin::SexpOptions {
                agent: Some(std::net::SocketAddr::new(cli.agent_bind, cli.agent_port)),
                monitor: Some(std::net::SocketAddr::new(
                    cli.monitor_bind,
                    cli.monitor_port,
                )),
                sync: cli.sync,
                cycle_steps: cli.cycle_steps,
                ..Default::default()
            };
            armsim::protocol::sexp::plugin::add(app, options).context(
                "cannot open the agent/monitor ports (another armsim running? use --agent-port, \
                 --monitor-port or --no-agent-ports)",
            )?;
        }
        // Replay first: it sets the world the recording then starts from.
        if let Some(path) = &cli.replay {
            trajectory::start_replay(app.world_mut(), path, cli.replay_mode.into(), cli.demo)
                .with_context(|| format!("cannot replay {}", path.display()))?;
        }
        if let Some(path) = &cli.record {
            trajectory::start_recording(app.world_mut(), path, cli.record_every)
                .with_context(|| format!("cannot record to {}", path.display()))?;
        }
        cli.lerobot_flags.add(app, cli.headless)?;
        if let Some(options) = &teleop {
            let addr = options.addr;
            armsim::protocol::teleop::plugin::add(app, options.clone()).with_context(|| {
                format!(
                    "cannot listen for teleop clients on {addr} (another armsim running? \
                     use --teleop-port or --no-teleop)"
                )
            })?;
        }
        if let Some(options) = &xr {
            armsim::protocol::xr::add(app, options.clone())?;
        }
        #[cfg(feature = "ros2")]
        if let Some(options) = &ros2 {
            armsim::protocol::ros2::plugin::add(app, options.clone()).context("--ros2")?;
        }
        if cli.start {
            app.world_mut()
                .write_message(armsim::session::SessionCommand::Start);
        }
        Ok(())
    };

    if cli.headless {
        let stop = match (cli.steps, cli.duration) {
            (Some(n), _) => StopAfter::Steps(n),
            (None, Some(s)) => StopAfter::SimSeconds(s),
            (None, None) => StopAfter::Never,
        };
        let cameras = armsim::offscreen::HeadlessCameras {
            // Images for ROS 2 need the offscreen renderer, as a recording's do.
            cameras: cli.cameras || !cli.ros2_flags.ros2_cameras.is_empty(),
            recording: cli.lerobot_flags.record_lerobot.is_some(),
            snapshots: cli.camera_snapshots.clone(),
        };
        let (mut app, rendering) = armsim::offscreen::headless_app(scene, &options, &cameras)
            .map_err(anyhow::Error::msg)?;
        add_servers(&mut app)?;
        headless::stop_on_signals().map_err(anyhow::Error::msg)?;
        let report = if rendering {
            armsim::offscreen::run(&mut app, stop)
        } else {
            headless::run(&mut app, stop)
        };
        let recording = trajectory::recording_outcome(app.world_mut());
        let dataset = armsim::lerobot::outcome(app.world_mut());
        let mut code = ExitCode::SUCCESS;
        if let Some(replay) = app.world().get_resource::<trajectory::Replay>() {
            println!("{}", replay.report());
            if replay.failed.is_some() {
                code = ExitCode::FAILURE;
            }
        }
        if let Some(report) = armsim::lerobot::replay::report(app.world()) {
            println!("{report}");
        }
        // The determinism fingerprint of the final world (`SimView::state_hash`): equal hashes
        // mean bit-identical physical states, e.g. against the Python package stepping the same inputs.
        println!(
            "state hash {:016x}",
            armsim::sim::sim_view(app.world()).state_hash()
        );
        println!("{report}");
        // A recording of nothing has said why in its one error line already.
        let world = app.world();
        if let Some(Err(e)) = recording {
            if !world.resource::<trajectory::Recording>().nothing_recorded {
                eprintln!("armsim: the recording could not be written: {e}");
            }
            code = ExitCode::FAILURE;
        }
        match dataset {
            Some(Ok(summary)) => println!("LeRobot dataset {summary}"),
            Some(Err(e)) => {
                if !world
                    .resource::<armsim::lerobot::LeRobotRecording>()
                    .nothing_recorded
                {
                    eprintln!("armsim: the LeRobot dataset could not be written: {e}");
                }
                code = ExitCode::FAILURE;
            }
            None => {}
        }
        return Ok(code);
    } else {
        let render = render_profile(&cli)?;
        let ui_options = armsim::ui::UiOptions {
            screenshot: cli.screenshot,
            frame_log_secs: Some(cli.frame_log_secs),
        };
        let mut app = armsim::window_app(scene, &options, ui_options, render);
        if cli.cameras {
            bevy::log::info!("--cameras is for --headless: the window renders its cameras anyway");
        }
        if let Some(dir) = &cli.camera_snapshots {
            app.insert_resource(armsim::ui::camera_snapshots::CameraSnapshots::new(dir));
        }
        add_servers(&mut app)?;
        // Ctrl-C, SIGTERM and SIGHUP close the window through AppExit; recordings and datasets
        // finish on it, and one that cannot be written makes the exit an error.
        headless::stop_on_signals().map_err(anyhow::Error::msg)?;
        app.add_systems(bevy::app::Update, headless::exit_on_stop_request);
        if app.run().is_error() {
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}
