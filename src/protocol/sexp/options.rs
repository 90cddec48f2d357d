//! What the agent port ([`super::agent`]) and the monitor port ([`super::monitor`]) share: their
//! options, as [`super::plugin`] starts the two ports with them, and what both show of the
//! game.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bevy::ecs::system::SystemParam;
use bevy::prelude::{App, Res};
use crossbeam_channel::Receiver;

use super::framing::DEFAULT_MAX_FRAME;
use super::messages::GameInfo;
use super::server::{self, NetEvent, PortLimits, PortWriter};
use crate::protocol::net;
use crate::protocol::registry::{self, Protocol};
use crate::referee::LoggedEvent;
use crate::referee::plugin::Referee;
use crate::session::{Session, SessionState};
use crate::sim::{SimClock, SimRef, SimWaker};

/// Which RCSSServerMJ ports to open and how they run.
#[derive(Clone, Debug)]
pub struct SexpOptions {
    /// Agent port (None = off).
    pub agent: Option<SocketAddr>,
    /// Monitor port (None = off).
    pub monitor: Option<SocketAddr>,
    /// Sync mode: each cycle waits for exactly one message from the agent.
    pub sync: bool,
    /// Sim steps per cycle (4 = 60 Hz perceptions at 240 Hz).
    pub cycle_steps: u32,
    /// Sync mode: an agent silent this long while the cycle waits on it is dropped.
    pub sync_timeout: Duration,
    /// Largest frame accepted from a client.
    pub max_frame: usize,
}

impl Default for SexpOptions {
    fn default() -> Self {
        Self {
            agent: None,
            monitor: None,
            sync: false,
            cycle_steps: 4,
            sync_timeout: Duration::from_secs(5),
            max_frame: DEFAULT_MAX_FRAME,
        }
    }
}

impl SexpOptions {
    /// Sim steps per cycle, at least 1.
    pub(super) fn cycle(&self) -> u32 {
        self.cycle_steps.max(1)
    }

    /// Starts `port` on `addr` with these options' frame limit (its threads wake the
    /// simulation), warns if it listens beyond loopback, and lists it in the connection
    /// registry as `listing` of the bound address says (the exposure note added).
    pub(super) fn open(
        &self,
        app: &mut App,
        addr: SocketAddr,
        port: &Port,
        listing: impl FnOnce(SocketAddr) -> String,
    ) -> io::Result<(SocketAddr, Receiver<NetEvent>, PortWriter)> {
        let waker = app.world().resource::<SimWaker>().clone();
        let (max_connections, max_silent) = port.limits;
        let limits = PortLimits {
            max_frame: self.max_frame,
            max_connections,
            max_silent,
        };
        let (addr, events, writer) = server::start(addr, port.name, limits, waker)?;
        let exposed = net::warn_if_exposed(port.name, addr, port.powers);
        let label = format!("{}{}", listing(addr), exposed.unwrap_or_default());
        registry::add_listener(app, port.protocol, label);
        Ok((addr, events, writer))
    }
}

/// One of the two ports, as [`SexpOptions::open`] starts it.
pub(super) struct Port {
    /// Its name in log lines and thread names.
    pub name: &'static str,
    pub protocol: Protocol,
    /// Connections at most, and of those at most how many silent ones (see [`PortLimits`]).
    pub limits: (usize, Option<usize>),
    /// What a client of the port can do, for the warning when it listens beyond loopback.
    pub powers: &'static str,
}

/// What the systems that send perceptions and world frames read of the game: the world, the
/// referee, the clock and the session.
#[derive(SystemParam)]
pub(super) struct Game<'w, 's> {
    pub sim: SimRef<'w, 's>,
    pub referee: Res<'w, Referee>,
    pub clock: Res<'w, SimClock>,
    pub session: Res<'w, Session>,
}

/// The game as perceptions and world frames show it.
pub(super) fn game_info<'a>(
    referee: &'a Referee,
    clock: &SimClock,
    session: SessionState,
    events: &'a [&'a LoggedEvent],
) -> GameInfo<'a> {
    GameInfo {
        sim_time: clock.sim_time,
        play_time: referee.book.play_time(),
        play_mode: referee.book.play_mode(),
        score: referee.book.score(),
        rules: referee.book.name(),
        session: session.as_str(),
        events,
    }
}
