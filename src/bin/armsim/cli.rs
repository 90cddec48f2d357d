//! The command line: every flag and subcommand of `armsim`, as clap parses them. What they
//! mean for the app is `setup.rs`'s; the benchmarks are `bench/`'s.

use std::path::PathBuf;

use armsim::ui::render::ProfileChoice;
use clap::{Parser, Subcommand};

use crate::cli_parse::{ReplayArg, parse_package_path};
use crate::{bench, lerobot_cli, ros2_cli, scene_cli, trajectory_cmd};

#[derive(Parser, Debug)]
#[command(
    name = "armsim",
    version,
    about = "A robot arm on a table with cubes, simulated by Rapier at 240 Hz",
    long_about = "A robot arm on a table with cubes, simulated by Rapier at a fixed 240 Hz inside a \
                  Bevy app. Without options it opens the window on the default scene; \
                  --headless runs the same simulation without one."
)]
pub struct Cli {
    /// Scene file (revA scene_config.json), or the name of a scene built into armsim:
    /// default_scene, gripper4. Default: the built-in default_scene (arm6 and three cubes),
    /// compiled into the binary from assets/scenes/default_scene.json, so armsim runs from any
    /// folder. Paths inside a scene file resolve relative to that file.
    #[arg(long, value_name = "PATH|NAME", global = true)]
    pub scene: Option<PathBuf>,

    /// Where a robot file's `package://NAME/…` mesh paths point: NAME=DIR (repeatable). Tried
    /// before the scene's `extensions.armsim.robot.package_paths` and before looking for a
    /// folder named NAME above the robot file.
    #[arg(long, value_name = "NAME=DIR", value_parser = parse_package_path, global = true)]
    pub package_path: Vec<(String, PathBuf)>,

    /// Run without a window; prints steps, sim time, wall time and steps/s at exit.
    #[arg(long)]
    pub headless: bool,

    /// Start the session (RUNNING) at once instead of waiting in IDLE for a client or the
    /// panel's Start: e.g. a headless --record-lerobot of the scene without a client.
    #[arg(long)]
    pub start: bool,

    /// Stop after N physics steps (headless).
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub steps: Option<u64>,

    /// Stop after S seconds of simulated time (headless).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,

    /// Pace the simulation to wall-clock time (default, except headless with --steps,
    /// --duration or --replay, which default to --fast).
    #[arg(long, conflicts_with = "fast")]
    pub realtime: bool,

    /// Step as fast as possible.
    #[arg(long)]
    pub fast: bool,

    /// Real-time speed factor when pacing to the wall clock (0.5 = half speed).
    #[arg(long, default_value_t = 1.0, value_name = "FACTOR")]
    pub speed: f64,

    /// Serve the gripper project's binary remote-control lockstep protocol on this TCP port
    /// (0 = any free port).
    #[arg(long, visible_alias = "remote_control_port", value_name = "PORT")]
    pub remote_control_port: Option<u16>,

    /// Address the headset page (HTTPS + wss, guarded by the pairing key) listens on; 0.0.0.0
    /// opens it to headsets on the network. Only the page: every other listener stays on
    /// loopback unless its own --*-bind opens it. (--bind is the same flag.)
    #[arg(
        long = "xr-bind",
        visible_alias = "bind",
        default_value = "127.0.0.1",
        value_name = "ADDR"
    )]
    pub xr_bind: std::net::IpAddr,

    /// Address of the plain ws:// teleop listener (default: the scene's `networking.ws_host`).
    /// Peers beyond loopback must give the pairing key (?key=KEY) unless --teleop-no-key.
    #[arg(long, value_name = "ADDR")]
    pub teleop_bind: Option<std::net::IpAddr>,

    /// Let peers beyond loopback use the plain ws:// teleop listener without the pairing key
    /// (for an unmodified native client across the network; logged loudly).
    #[arg(long)]
    pub teleop_no_key: bool,

    /// Address of the agent port. It has no authentication: anything but loopback lets anyone
    /// who can reach it drive the arm (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub agent_bind: std::net::IpAddr,

    /// Address of the monitor port. It has no authentication: anything but loopback lets anyone
    /// who can reach it reset the scene or stop armsim (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub monitor_bind: std::net::IpAddr,

    /// Address of the remote-control lockstep port. It has no authentication: anything but
    /// loopback lets anyone who can reach it drive the arm (logged loudly).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub lockstep_bind: std::net::IpAddr,

    /// Serve TeleSpace revA teleoperation (WebSocket) on this port instead of the scene's
    /// `ws_port` (0 = any free port).
    #[arg(long, value_name = "PORT", conflicts_with = "no_teleop")]
    pub teleop_port: Option<u16>,

    /// Do not start the teleoperation WebSocket server.
    #[arg(long)]
    pub no_teleop: bool,

    /// Serve the headset page (HTTPS: the WebXR page, /scene.json and revA over wss at the
    /// scene's ws_path) on this port, at the teleop address (0 = any free port).
    #[arg(long, default_value_t = armsim::protocol::xr::DEFAULT_PORT, value_name = "PORT")]
    pub xr_port: u16,

    /// Do not serve the headset page.
    #[arg(long)]
    pub no_xr: bool,

    /// The pairing key of the headset page, and of the ws:// listener for peers beyond
    /// loopback (default: a random one per start); 8-128 characters of A-Z a-z 0-9 - _.
    #[arg(long, value_name = "KEY")]
    pub xr_key: Option<String>,

    /// The headset page's certificate (PEM), e.g. from mkcert; with --tls-key. Default: a
    /// self-signed one made at first start and kept in the config directory
    /// ($ARMSIM_CONFIG_DIR, $XDG_CONFIG_HOME/armsim or ~/.config/armsim).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// RCSSServerMJ-style agent port (length-prefixed S-expressions; 0 = any free port).
    #[arg(long, default_value_t = 60000, value_name = "PORT")]
    pub agent_port: u16,

    /// RCSSServerMJ-style monitor port (0 = any free port).
    #[arg(long, default_value_t = 60001, value_name = "PORT")]
    pub monitor_port: u16,

    /// Do not open the agent and monitor ports.
    #[arg(long)]
    pub no_agent_ports: bool,

    /// Sync mode: every cycle waits for exactly one message from the agent (dropped after 5 s
    /// of silence).
    #[arg(long)]
    pub sync: bool,

    /// Sim steps per agent/monitor cycle (4 = 60 Hz at 240 Hz).
    #[arg(long, global = true, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=240))]
    pub cycle_steps: u32,

    /// Referee rule book: pick_and_place (needs the scene's goal zone) or free_play (default:
    /// pick_and_place where the scene has a goal zone).
    #[arg(long, value_name = "NAME")]
    pub rules: Option<String>,

    /// Teleop state frames per second (wall clock), to every session.
    #[arg(long, default_value_t = 60.0, value_name = "HZ")]
    pub state_rate: f64,

    /// Seconds a teleop controller may stay in NET_TIMEOUT (no heartbeat) before it is demoted
    /// and the longest-connected observer promoted (default: the scene's
    /// `extensions.armsim.controller_grace_s`, or 10).
    #[arg(long, value_name = "SECS")]
    pub controller_grace: Option<f64>,

    /// Seconds a lockstep client may take to answer a frame before it is dropped.
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub lockstep_timeout: f64,

    #[command(flatten)]
    pub ros2_flags: ros2_cli::Ros2Args,

    /// Record a trajectory (MetaSim v2) into this file: .json, .json.gz, .pkl or .pkl.gz.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// Record a state every N steps (actions are recorded every step).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub record_every: u32,

    #[command(flatten)]
    pub lerobot_flags: lerobot_cli::LeRobotArgs,

    #[command(flatten)]
    pub scene_flags: scene_cli::SceneArgs,

    /// Replay a MetaSim trajectory file (headless: exits when the replay ends, or earlier at
    /// --steps/--duration). With --record, the replay is recorded anew (e.g. by action in
    /// another scene).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,

    /// How to replay: `state` (set each recorded state; exact) or `action` (drive the physics
    /// with the recorded actions; reports the divergence).
    #[arg(long, value_enum, default_value_t = ReplayArg::State)]
    pub replay_mode: ReplayArg,

    /// Which demo of the file to replay (0 = first).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub demo: usize,

    /// Window only: save a PNG of the window here once the scene has rendered.
    #[arg(long, value_name = "PATH")]
    pub screenshot: Option<PathBuf>,

    /// Write each scene camera's newest image to DIR/<camera>.png and the step, sim time and
    /// pose it shows to DIR/<camera>.json, at most twice a second (headless: implies --cameras).
    #[arg(long, value_name = "DIR")]
    pub camera_snapshots: Option<PathBuf>,

    /// Headless: render the scene's cameras offscreen (Vulkan; Mesa's software lavapipe will
    /// do, no display needed), for --record-lerobot's video and --camera-snapshots, which imply
    /// it where the scene has cameras.
    #[arg(long)]
    pub cameras: bool,

    /// Window only: `full` (window resolution, tonemapping, no frame cap), `lite` (for software
    /// renderers: reduced resolution, no tonemapping, capped frame rate) or `auto` (lite on a
    /// software adapter such as Mesa's llvmpipe, full on a GPU). The panel's View section
    /// switches it too.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto, value_name = "PROFILE")]
    pub render_profile: ProfileChoice,

    /// Window, lite profile: fraction of the view's resolution the 3D scene renders at.
    #[arg(long, default_value_t = 0.5, value_name = "FRACTION")]
    pub render_scale: f32,

    /// Window, lite profile: frame cap (input still wakes the window at once).
    #[arg(long, default_value_t = 30.0, value_name = "FPS")]
    pub max_fps: f64,

    /// Window: seconds between the frame-rate log lines.
    #[arg(long, default_value_t = 10.0, value_name = "SECS", hide = true)]
    pub frame_log_secs: f64,

    /// Benchmark switches (hidden): tonemap, pbr (lite keeps PBR materials), no-panel, no-gizmos.
    #[arg(long, value_delimiter = ',', value_name = "SWITCH", hide = true)]
    pub render_tweak: Vec<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Trajectory files: `recover` turns a killed recording's journal into the complete file.
    Trajectory {
        #[command(subcommand)]
        command: trajectory_cmd::TrajectorySubcommand,
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
    Bench(BenchArgs),
}

/// `armsim bench`: what to measure and how long.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(value_enum, default_value_t = BenchKind::Step)]
    pub kind: BenchKind,
    /// Steps per round (default: 24000 for `step` and `record`, 10000 for `lockstep`); cycles for
    /// `agent` (default 5000); samples for `teleop` (default 600).
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// `step`: the arm at rest, or following sines about home (a new target every step).
    #[arg(long, value_enum, default_value_t = bench::Motion::Rest)]
    pub motion: bench::Motion,
    /// `quality`: the settings to compare, each `N[+E][xP][/JOINTS]`: solver_iterations,
    /// then arm_extra_iterations, pgs_iterations and arm_joints (multibody, hybrid or
    /// impulse), the scene's own where left out, e.g. `3+0x2/hybrid`; default: the scene's
    /// own and a spread of the others.
    #[arg(long, value_delimiter = ',', value_name = "N[+E][xP][/JOINTS],...")]
    pub iterations: Vec<String>,
    /// `idle`, `window`, `observers`: wall seconds each case (idle, observers) or render
    /// profile (window) is measured for (default: 3 for `idle` and `observers`, 20 for
    /// `window`).
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// `teleop`: observer sessions besides the controller.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub observers: usize,
    /// `observers`: the port the observers watch.
    #[arg(long, value_enum, default_value_t = bench::observers::Watch::Monitor)]
    pub protocol: bench::observers::Watch,
    /// `observers`: how many observers connect.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub n: usize,
    /// `window`: Pause clicks per profile for the input-to-repaint latency.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub clicks: usize,
    /// `window`: also measure what each part costs (lite with one thing put back or taken away).
    #[arg(long)]
    pub breakdown: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum BenchKind {
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
