//! What runs on top of the simulation, assembled in one place: the protocol listeners, the rule
//! book, trajectory and LeRobot replays and recordings, and the session's start. The command
//! line fills an [`AppSetup`] from its flags and adds it to a headless app or the window's with
//! [`AppSetup::add_to`], so both get the same servers in the same order.
//!
//! A fallible builder rather than a Bevy `PluginGroup`: a listener that cannot bind its port, or
//! a replay whose file does not load, must stop the start with an error that says what to do,
//! and `Plugin::build` cannot return one.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use armsim_lerobot::LeRobotRobot;
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
    /// Adds every part to `app`, which runs `scene`. The order matters: a replay first (it sets
    /// the world the recordings then start from), the recorders, then the listeners.
    pub fn add_to(&self, app: &mut App, scene: &Arc<Scene>) -> anyhow::Result<()> {
        if let Some((addr, timeout)) = self.lockstep {
            crate::protocol::lockstep::plugin::add(app, addr, timeout)
                .with_context(|| format!("cannot listen for lockstep clients on {addr}"))?;
        }
        if let Some(name) = &self.rules {
            crate::referee::plugin::use_rule_book(app, scene, name).context("--rules")?;
        }
        if let Some(options) = &self.sexp {
            crate::protocol::sexp::plugin::add(app, options.clone()).context(
                "cannot open the agent/monitor ports (another armsim running? use --agent-port, \
                 --monitor-port or --no-agent-ports)",
            )?;
        }
        if let Some(r) = &self.replay {
            trajectory::start_replay(app.world_mut(), &r.path, r.mode, r.demo)
                .with_context(|| format!("cannot replay {}", r.path.display()))?;
        }
        if let Some(r) = &self.record {
            trajectory::start_recording(app.world_mut(), &r.path, r.every)
                .with_context(|| format!("cannot record to {}", r.path.display()))?;
        }
        self.add_lerobot(app)?;
        if let Some(options) = &self.teleop {
            let addr = options.addr;
            crate::protocol::teleop::plugin::add(app, options.clone()).with_context(|| {
                format!(
                    "cannot listen for teleop clients on {addr} (another armsim running? \
                     use --teleop-port or --no-teleop)"
                )
            })?;
        }
        if let Some(options) = &self.xr {
            crate::protocol::xr::add(app, options.clone())?;
        }
        #[cfg(feature = "ros2")]
        if let Some(options) = &self.ros2 {
            crate::protocol::ros2::plugin::add(app, options.clone()).context("--ros2")?;
        }
        if self.start {
            app.world_mut()
                .write_message(SessionRequest(SessionCommand::Start));
        }
        Ok(())
    }

    /// The recorder (always: the panel's button uses it), then what the flags ask: the replay
    /// first, so a recording of it starts where it does.
    fn add_lerobot(&self, app: &mut App) -> anyhow::Result<()> {
        let l = &self.lerobot;
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
}
