//! What runs on top of the simulation, assembled in one place: the protocol listeners, the rule
//! book, trajectory and LeRobot replays and recordings, and the session's start. The command
//! line fills an [`AppSetup`] from its flags and adds it to a headless app or the window's with
//! [`AppSetup::add_to`], so both get the same servers in the same order.
//!
//! The parts are a Bevy plugin group, [`ArmsimPlugins`], so an embedding app can leave one out
//! or put its own in its place (`ArmsimPlugins::new(..).build().disable::<TeleopPart>()`). A
//! part can fail to start (a listener that cannot bind its port, a replay whose file does not
//! load), and `Plugin::build` cannot return an error: the first failure is kept in
//! [`SetupFailed`], the parts after it are not added, and [`take_failure`] turns it into the
//! error that stops the start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use armsim_lerobot::LeRobotRobot;
use bevy::app::PluginGroupBuilder;
use bevy::prelude::*;

use crate::lerobot::LeRobotDefaults;
use crate::lerobot::replay::ReplayOptions;
use crate::protocol::sexp::plugin::SexpOptions;
use crate::protocol::teleop::plugin::TeleopOptions;
use crate::protocol::xr::XrOptions;
use crate::scene::Scene;
use crate::session::{SessionCommand, SessionRequest};
use crate::trajectory::plugin as trajectory;
use crate::trajectory::plugin::ReplayMode;

/// A MetaSim trajectory to replay (`--replay`).
#[derive(Clone, Debug)]
pub struct TrajectoryReplay {
    pub path: PathBuf,
    pub mode: ReplayMode,
    /// Which demo of the file.
    pub demo: usize,
}

/// A MetaSim trajectory to record (`--record`).
#[derive(Clone, Debug)]
pub struct TrajectoryRecord {
    pub path: PathBuf,
    /// A state every this many steps (actions every step).
    pub every: u32,
}

/// The LeRobot recorder's settings and what it starts with (`--record-lerobot`,
/// `--replay-lerobot`).
#[derive(Clone, Debug)]
pub struct LeRobotSetup {
    pub fps: u32,
    /// The dataset's schema (`--lerobot-robot`); `None`: the scene's, else the file's joints.
    pub robot: Option<LeRobotRobot>,
    pub replay: Option<ReplayOptions>,
    pub record: Option<PathBuf>,
}

impl Default for LeRobotSetup {
    fn default() -> Self {
        Self {
            fps: crate::lerobot::DEFAULT_FPS,
            robot: None,
            replay: None,
            record: None,
        }
    }
}

/// Everything the app serves and runs on top of the simulation; `None` leaves a part out.
#[derive(Clone, Debug, Default)]
pub struct AppSetup {
    /// The gripper project's lockstep listener and how long a client may take to answer.
    pub lockstep: Option<(SocketAddr, Duration)>,
    /// The referee's rule book by name (`--rules`); `None`: the scene's default.
    pub rules: Option<String>,
    /// RCSSServerMJ's agent and monitor ports.
    pub sexp: Option<SexpOptions>,
    pub replay: Option<TrajectoryReplay>,
    pub record: Option<TrajectoryRecord>,
    pub lerobot: LeRobotSetup,
    /// TeleSpace revA over WebSocket.
    pub teleop: Option<TeleopOptions>,
    /// The headset page over https and wss (needs `teleop`).
    pub xr: Option<XrOptions>,
    #[cfg(feature = "ros2")]
    pub ros2: Option<crate::protocol::ros2::options::Ros2Options>,
    /// Start the session at once (`--start`).
    pub start: bool,
}

impl AppSetup {
    /// Adds every part to `app`, which runs `scene`, as [`ArmsimPlugins`], and returns the
    /// first part's failure, if any.
    pub fn add_to(&self, app: &mut App, scene: &Arc<Scene>) -> anyhow::Result<()> {
        app.add_plugins(ArmsimPlugins::new(self.clone(), scene.clone()));
        take_failure(app)
    }
}

/// The parts of an [`AppSetup`] as one plugin group, in the order they must be added: the
/// lockstep listener and the rule book, the agent and monitor ports, a replay (it sets the world
/// the recordings then start from), the recorders, the teleop, headset and ROS 2 listeners, and
/// the session's start. A part whose setting is `None` is not in the group.
pub struct ArmsimPlugins {
    setup: AppSetup,
    scene: Arc<Scene>,
}

impl ArmsimPlugins {
    /// The group for `setup` on an app that runs `scene`.
    pub fn new(setup: AppSetup, scene: Arc<Scene>) -> Self {
        Self { setup, scene }
    }
}

impl PluginGroup for ArmsimPlugins {
    fn build(self) -> PluginGroupBuilder {
        let s = self.setup;
        let mut group = PluginGroupBuilder::start::<Self>();
        if let Some((addr, timeout)) = s.lockstep {
            group = group.add(LockstepPart { addr, timeout });
        }
        if let Some(name) = s.rules {
            group = group.add(RulesPart {
                name,
                scene: self.scene,
            });
        }
        if let Some(options) = s.sexp {
            group = group.add(SexpPart(options));
        }
        if let Some(replay) = s.replay {
            group = group.add(ReplayPart(replay));
        }
        if let Some(record) = s.record {
            group = group.add(RecordPart(record));
        }
        group = group.add(LeRobotPart(s.lerobot));
        if let Some(options) = s.teleop {
            group = group.add(TeleopPart(options));
        }
        if let Some(options) = s.xr {
            group = group.add(XrPart(options));
        }
        #[cfg(feature = "ros2")]
        if let Some(options) = s.ros2 {
            group = group.add(Ros2Part(options));
        }
        if s.start {
            group = group.add(StartPart);
        }
        group
    }
}

/// The first part of [`ArmsimPlugins`] that could not start, and why.
#[derive(Resource, Debug)]
pub struct SetupFailed(pub anyhow::Error);

/// The first part's failure, taken out of `app`: the error that stops the start.
pub fn take_failure(app: &mut App) -> anyhow::Result<()> {
    match app.world_mut().remove_resource::<SetupFailed>() {
        Some(SetupFailed(error)) => Err(error),
        None => Ok(()),
    }
}

/// Runs one part's setup unless an earlier part failed, keeping its failure.
fn attempt(app: &mut App, setup: impl FnOnce(&mut App) -> anyhow::Result<()>) {
    if app.world().contains_resource::<SetupFailed>() {
        return;
    }
    if let Err(error) = setup(app) {
        app.insert_resource(SetupFailed(error));
    }
}

/// The gripper project's lockstep listener, and how long a client may take to answer.
pub struct LockstepPart {
    pub addr: SocketAddr,
    pub timeout: Duration,
}

impl Plugin for LockstepPart {
    fn build(&self, app: &mut App) {
        let (addr, timeout) = (self.addr, self.timeout);
        attempt(app, |app| {
            crate::protocol::lockstep::plugin::add(app, addr, timeout)
                .with_context(|| format!("cannot listen for lockstep clients on {addr}"))
                .map(|_| ())
        });
    }
}

/// The referee's rule book by name (`--rules`).
pub struct RulesPart {
    pub name: String,
    pub scene: Arc<Scene>,
}

impl Plugin for RulesPart {
    fn build(&self, app: &mut App) {
        attempt(app, |app| {
            crate::referee::plugin::use_rule_book(app, &self.scene, &self.name).context("--rules")
        });
    }
}

/// RCSSServerMJ's agent and monitor ports.
pub struct SexpPart(pub SexpOptions);

impl Plugin for SexpPart {
    fn build(&self, app: &mut App) {
        attempt(app, |app| {
            crate::protocol::sexp::plugin::add(app, self.0.clone()).context(
                "cannot open the agent/monitor ports (another armsim running? use --agent-port, \
                 --monitor-port or --no-agent-ports)",
            )?;
            Ok(())
        });
    }
}

/// A MetaSim trajectory replayed from the start (`--replay`).
pub struct ReplayPart(pub TrajectoryReplay);

impl Plugin for ReplayPart {
    fn build(&self, app: &mut App) {
        let r = &self.0;
        attempt(app, |app| {
            trajectory::start_replay(app.world_mut(), &r.path, r.mode, r.demo)
                .with_context(|| format!("cannot replay {}", r.path.display()))
        });
    }
}

/// A MetaSim trajectory recorded from the start (`--record`).
pub struct RecordPart(pub TrajectoryRecord);

impl Plugin for RecordPart {
    fn build(&self, app: &mut App) {
        let r = &self.0;
        attempt(app, |app| {
            trajectory::start_recording(app.world_mut(), &r.path, r.every)
                .with_context(|| format!("cannot record to {}", r.path.display()))
        });
    }
}

/// The LeRobot recorder (always: the panel's button uses it), then what the flags ask: the
/// replay first, so a recording of it starts where it does.
pub struct LeRobotPart(pub LeRobotSetup);

impl Plugin for LeRobotPart {
    fn build(&self, app: &mut App) {
        attempt(app, |app| add_lerobot(app, &self.0));
    }
}

fn add_lerobot(app: &mut App, l: &LeRobotSetup) -> anyhow::Result<()> {
    crate::lerobot::plugin(app);
    app.insert_resource(LeRobotDefaults {
        fps: l.fps,
        robot: l.robot,
    });
    if let Some(options) = &l.replay {
        crate::lerobot::replay::plugin(app);
        crate::lerobot::replay::start(app.world_mut(), options)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("--replay-lerobot {}", options.root.display()))?;
    }
    if let Some(root) = &l.record {
        crate::lerobot::start(app.world_mut(), root, l.fps, l.robot)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("--record-lerobot {}", root.display()))?;
    }
    Ok(())
}

/// TeleSpace revA over WebSocket.
pub struct TeleopPart(pub TeleopOptions);

impl Plugin for TeleopPart {
    fn build(&self, app: &mut App) {
        let addr = self.0.addr;
        attempt(app, |app| {
            crate::protocol::teleop::plugin::add(app, self.0.clone()).with_context(|| {
                format!(
                    "cannot listen for teleop clients on {addr} (another armsim running? \
                     use --teleop-port or --no-teleop)"
                )
            })?;
            Ok(())
        });
    }
}

/// The headset page over https and wss (after [`TeleopPart`]: it hands sessions to its hub).
pub struct XrPart(pub XrOptions);

impl Plugin for XrPart {
    fn build(&self, app: &mut App) {
        attempt(app, |app| {
            crate::protocol::xr::add(app, self.0.clone()).map(|_| ())
        });
    }
}

/// ROS 2 over DDS.
#[cfg(feature = "ros2")]
pub struct Ros2Part(pub crate::protocol::ros2::options::Ros2Options);

#[cfg(feature = "ros2")]
impl Plugin for Ros2Part {
    fn build(&self, app: &mut App) {
        attempt(app, |app| {
            crate::protocol::ros2::plugin::add(app, self.0.clone()).context("--ros2")
        });
    }
}

/// Starts the session at once (`--start`).
pub struct StartPart;

impl Plugin for StartPart {
    fn build(&self, app: &mut App) {
        attempt(app, |app| {
            app.world_mut()
                .write_message(SessionRequest(SessionCommand::Start));
            Ok(())
        });
    }
}
