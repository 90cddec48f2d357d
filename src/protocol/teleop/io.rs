//! The one I/O thread behind every teleop session, whichever listener (ws or wss) accepted it.
//! After its WebSocket handshake (on a short-lived thread of its own, with a deadline) a
//! connection's socket is made non-blocking and handed here; a readiness poller (`polling`)
//! wakes the thread when a socket has bytes to read or room to write, when the ECS queues an
//! event or a state frame, or when a ping or a write deadline is due. So an observer costs no
//! thread and no wake-up of its own: a state frame to 256 sessions is one wake-up and 256
//! writes of the shared, once-serialised payload ([`EncodedState`]) with each session's
//! envelope spliced around it.
//!
//! A wss session is the same: its rustls session (`StreamOwned`) lives in its connection and is
//! driven non-blocking by this thread (TLS records are sealed per connection, as they must be).
//!
//! Guarantees kept from the thread-per-connection server: heartbeats are answered (and flushed)
//! as soon as they are read, so `heartbeat_ack` is a true round trip; the 500 ms ping still
//! measures `rtt_ms_est`; state frames are latest-only (a session whose socket is full keeps
//! only the newest one, and events queue up to [`EVENT_QUEUE`]); a session that does not take
//! what is written within [`WRITE_TIMEOUT`] is closed; nothing here waits on a client.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bevy::log::info;
use crossbeam_channel::Sender;
use polling::{Event, Poller};
use tungstenite::{Error as WsError, Message};

use super::envelope::EncodedState;
use super::sessions::Input;
use super::wire::{
    ConnCounters, PING_INTERVAL, ServerEvent, SharedSimState, TeleopConfig, ToClient, Wire, WsIo,
    now_ms, on_pong, on_text, ping, refuse,
};
use crate::protocol::poller::{ConnectionSet, Handle, stalls};

/// Events one session may have queued while its socket is full; more are dropped.
pub const EVENT_QUEUE: usize = 256;
/// A session whose writes stay blocked this long has stopped reading and is closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the thread needs of the server (shared with the listeners through the `Hub`).
pub(super) struct IoContext {
    pub config: Arc<TeleopConfig>,
    pub events: Sender<ServerEvent>,
    pub shared: Arc<SharedSimState>,
    pub sessions: Arc<AtomicUsize>,
}

/// A connection past its handshake.
pub(super) struct NewConn {
    pub conn: u64,
    pub peer: SocketAddr,
    pub ws: Box<dyn WsIo>,
    pub via: String,
}

enum Cmd {
    Add(Box<NewConn>),
    /// Messages queued together: a DISCONNECTED and the end of its session are taken in one
    /// go, so a CONNECT the client sends on reading the first never meets the old session.
    Send {
        conn: u64,
        msgs: Vec<ToClient>,
    },
    State {
        conns: Vec<u64>,
        frame: Arc<EncodedState>,
    },
}

/// The handle to the I/O thread (cheap to clone): what the ECS sends sessions through.
#[derive(Clone)]
pub struct TeleopIo(Handle<Cmd>);

impl TeleopIo {
    /// Starts the I/O thread (the shared poller loop, [`crate::protocol::poller::run`]).
    pub(super) fn start(ctx: IoContext) -> io::Result<Self> {
        let handle = Handle::spawn("teleop-io".into(), "teleop: I/O".into(), |poller| {
            IoThread::new(ctx, poller)
        })?;
        Ok(Self(handle))
    }

    fn command(&self, cmd: Cmd) -> bool {
        self.0.send(cmd)
    }

    /// Hands a connection over after its handshake; false if the thread is gone.
    pub(super) fn add(&self, conn: NewConn) -> bool {
        self.command(Cmd::Add(Box::new(conn)))
    }

    /// An event (or end of session, or close) for one connection.
    pub fn send(&self, conn: u64, msg: ToClient) {
        self.send_all(conn, vec![msg]);
    }

    /// Queues `msgs` for `conn` as one command (see [`Cmd::Send`]).
    pub fn send_all(&self, conn: u64, msgs: Vec<ToClient>) {
        if !msgs.is_empty() {
            self.command(Cmd::Send { conn, msgs });
        }
    }

    /// One state frame to every connection in `conns` (latest-only per connection).
    pub fn send_state(&self, conns: Vec<u64>, frame: Arc<EncodedState>) {
        if !conns.is_empty() {
            self.command(Cmd::State { conns, frame });
        }
    }
}

struct Conn {
    wire: Wire,
    peer: SocketAddr,
    via: String,
    events: VecDeque<ToClient>,
    state: Option<Arc<EncodedState>>,
    /// Since when writes have been blocked (the socket is full).
    stalled_since: Option<Instant>,
    /// The interest the poller holds (one-shot: `None` once an event fired).
    interest: Option<(bool, bool)>,
}

/// What ends a connection: the reason logged and told to the sessions' machine.
type Ended = Option<String>;

struct IoThread {
    ctx: IoContext,
    poller: Arc<Poller>,
    conns: HashMap<u64, Conn>,
    next_ping: Instant,
}

impl IoThread {
    fn new(ctx: IoContext, poller: Arc<Poller>) -> Self {
        Self {
            ctx,
            poller,
            conns: HashMap::new(),
            next_ping: Instant::now() + PING_INTERVAL,
        }
    }
}

/// The sessions' side of the shared loop: commands queue events and state frames, a flush (or a
/// poller event) reads what arrived and writes what is queued, and what is due is the ping
/// round and the write deadline.
impl ConnectionSet for IoThread {
    type Cmd = Cmd;

    fn take(&mut self, cmd: Cmd, touched: &mut Vec<u64>) {
        match cmd {
            Cmd::Add(new) => {
                let NewConn {
                    conn,
                    peer,
                    ws,
                    via,
                } = *new;
                let counters = Arc::new(ConnCounters::default());
                // SAFETY (polling's contract): the socket is deleted from the poller before the
                // connection (which owns it) is dropped, in `finish`.
                let watched = unsafe { self.poller.add(ws.tcp(), Event::none(conn as usize)) };
                if let Err(e) = watched {
                    info!("teleop: connection {conn} ({peer}{via}) refused: cannot watch it: {e}");
                    self.ctx.sessions.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                let opened = ServerEvent::Opened {
                    conn,
                    peer,
                    counters: counters.clone(),
                };
                if self.ctx.events.send(opened).is_err() {
                    let _ = self.poller.delete(ws.tcp());
                    self.ctx.sessions.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                info!("teleop: connection {conn} from {peer}{via}");
                self.conns.insert(
                    conn,
                    Conn {
                        wire: Wire::new(ws, conn, counters),
                        peer,
                        via,
                        events: VecDeque::new(),
                        state: None,
                        stalled_since: None,
                        interest: None,
                    },
                );
                // The client may have sent its CONNECT with the handshake: read what is here.
                self.service(conn, true);
            }
            Cmd::Send { conn, msgs } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    for msg in msgs {
                        // Only events are dropped from a full queue; the end of a session
                        // and a close always take effect.
                        if c.events.len() < EVENT_QUEUE || !matches!(msg, ToClient::Event(_)) {
                            c.events.push_back(msg);
                        }
                    }
                    touched.push(conn);
                }
            }
            Cmd::State { conns, frame } => {
                for conn in conns {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        // Latest-only: an unsent older frame is stale.
                        c.state = Some(frame.clone());
                        touched.push(conn);
                    }
                }
            }
        }
    }

    fn flush(&mut self, conn: u64) {
        self.service(conn, false);
    }

    fn ready(&mut self, conn: u64, readable: bool) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.interest = None;
        }
        self.service(conn, readable);
    }

    /// The ping round when it is due, and the write deadline; with no session there is nothing
    /// to ping, so the thread sleeps until a command comes.
    fn due(&mut self, now: Instant) -> Option<Instant> {
        if now >= self.next_ping {
            self.ping_round(now);
        }
        let stalled = self.conns.iter().map(|(&id, c)| (id, c.stalled_since));
        let (late, next) = stalls(stalled, WRITE_TIMEOUT, now);
        for conn in late {
            self.finish(conn, "the client stopped reading (write timed out)".into());
        }
        let pings = (!self.conns.is_empty()).then_some(self.next_ping);
        next.into_iter().chain(pings).min()
    }

    fn shut_all(&mut self) {
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for conn in ids {
            if let Some(c) = self.conns.get_mut(&conn) {
                let _ = c.wire.ws.close();
                let _ = c.wire.ws.flush();
            }
            self.finish(conn, "simulation stopped".into());
        }
    }
}

impl IoThread {
    /// Reads what arrived (if `readable`), writes what is queued, and re-arms the poller.
    fn service(&mut self, conn: u64, readable: bool) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let ended = (|| -> Result<Ended, WsError> {
            if readable && let Some(why) = read_all(c, &self.ctx)? {
                return Ok(Some(why));
            }
            write_queued(c)
        })();
        let ended = match ended {
            Ok(None) => None,
            Ok(Some(why)) => Some(why),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = ended {
            return self.finish(conn, why);
        }
        let now = Instant::now();
        if c.wire.blocked {
            c.stalled_since.get_or_insert(now);
        } else {
            c.stalled_since = None;
        }
        // A session whose writes are blocked is not read until they move (a TLS read would try
        // to write first, and the socket would stay readable): the deadline bounds the wait.
        let want = (!c.wire.blocked, c.wire.blocked);
        if c.interest != Some(want) {
            let (r, w) = want;
            match self
                .poller
                .modify(c.wire.ws.tcp(), Event::new(conn as usize, r, w))
            {
                Ok(()) => c.interest = Some(want),
                Err(e) => self.finish(conn, format!("cannot watch it: {e}")),
            }
        }
    }

    /// Every connection not pinged in the last half interval gets a ping (batched, so 256
    /// sessions cost two wake-ups a second, not 512).
    fn ping_round(&mut self, now: Instant) {
        self.next_ping = now + PING_INTERVAL;
        let due: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| now.duration_since(c.wire.last_ping) >= PING_INTERVAL / 2)
            .map(|(&id, _)| id)
            .collect();
        for conn in due {
            if let Some(c) = self.conns.get_mut(&conn)
                && let Err(e) = ping(&mut c.wire)
            {
                self.finish(conn, e.to_string());
                continue;
            }
            self.service(conn, false);
        }
    }

    /// The connection is over: forget it, close its socket, tell the sessions' machine.
    fn finish(&mut self, conn: u64, reason: String) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        let _ = self.poller.delete(c.wire.ws.tcp());
        info!(
            "teleop: connection {conn} ({}{}) closed: {reason}",
            c.peer, c.via
        );
        drop(c);
        self.ctx.sessions.fetch_sub(1, Ordering::SeqCst);
        let _ = self
            .ctx
            .events
            .send(ServerEvent::Session(Input::Closed { conn, reason }));
    }
}

/// Reads every message the socket holds (until it would block); `Some(reason)` if the
/// connection ended.
fn read_all(c: &mut Conn, ctx: &IoContext) -> Result<Ended, WsError> {
    loop {
        match c.wire.ws.read() {
            Ok(Message::Text(text)) => {
                c.wire.counters.msgs_in.fetch_add(1, Ordering::Relaxed);
                on_text(
                    &mut c.wire,
                    text.as_str(),
                    &ctx.config,
                    &ctx.events,
                    &ctx.shared,
                )?;
            }
            Ok(Message::Binary(_)) => {
                c.wire.counters.msgs_in.fetch_add(1, Ordering::Relaxed);
                refuse(
                    &mut c.wire,
                    &ctx.events,
                    &ctx.shared,
                    "MALFORMED_MESSAGE",
                    "binary messages are not part of revA; send JSON text".into(),
                )?;
            }
            Ok(Message::Pong(payload)) => on_pong(&mut c.wire, &payload),
            Ok(Message::Close(_) | Message::Ping(_) | Message::Frame(_)) => {}
            Err(WsError::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(WsError::Io(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {
                return Ok(Some("closed by the client".into()));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes the queued events, then the newest state frame, then flushes; stops where the socket
/// is full (what is left waits for the poller). `Some(reason)` if the connection is to end.
fn write_queued(c: &mut Conn) -> Result<Ended, WsError> {
    if c.wire.blocked {
        c.wire.flush()?;
        if c.wire.blocked {
            return Ok(None);
        }
    }
    while !c.wire.blocked
        && let Some(msg) = c.events.pop_front()
    {
        match msg {
            ToClient::Event(payload) => c.wire.send("sim_event", &payload)?,
            ToClient::EndSession => c.wire.session = None,
            ToClient::Close(why) => {
                let _ = c.wire.ws.close();
                let _ = c.wire.ws.flush();
                return Ok(Some(why));
            }
        }
    }
    if !c.wire.blocked
        && let Some(frame) = c.state.take()
        && let Some(session) = c.wire.session.as_deref()
    {
        c.wire.seq += 1;
        let text = frame.envelope(c.wire.seq, now_ms(), session, c.wire.rtt());
        c.wire.counters.msgs_out.fetch_add(1, Ordering::Relaxed);
        c.wire.write(Message::text(text))?;
    }
    c.wire.flush()?;
    Ok(None)
}
