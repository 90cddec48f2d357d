//! What the agent port ([`super::agent`]) and the monitor port ([`super::monitor`]) share: their
//! options and what both show of the game. [`super::plugin`], which starts the two ports, uses
//! this module as they do, so imports run one way: plugin → agent/monitor → options.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crossbeam_channel::Receiver;

use super::framing::DEFAULT_MAX_FRAME;
use super::messages::GameInfo;
use super::server::{self, NetEvent, PortLimits, PortWriter};
use crate::referee::LoggedEvent;
use crate::referee::plugin::Referee;
use crate::session::SessionState;
use crate::sim::{SimClock, SimWaker};

/// Which spec 001 ports to open and how they run.
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

    /// Binds one of the two ports with these options' frame limit, `max_connections` and
    /// `max_silent` (see [`PortLimits`]).
    pub(super) fn bind(
        &self,
        addr: SocketAddr,
        name: &'static str,
        (max_connections, max_silent): (usize, Option<usize>),
        waker: SimWaker,
    ) -> io::Result<(SocketAddr, Receiver<NetEvent>, PortWriter)> {
        server::start(
            addr,
            name,
            PortLimits {
                max_frame: self.max_frame,
                max_connections,
                max_silent,
            },
            waker,
        )
    }
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
