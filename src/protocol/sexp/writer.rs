//! One writer thread per S-expression port: every connection's outbound frames, written with
//! non-blocking sends and a readiness poller (`polling`), so a message to 256 monitors is one
//! wake-up of one thread and 256 `send` calls, not 256 threads woken. A frame is encoded once
//! (length prefix included) and shared by every connection it goes to (`Arc<[u8]>`).
//!
//! The guarantees of the thread-per-connection writer it replaced: each connection's queue is
//! bounded ([`OUTBOX`] frames; past it new frames are dropped, so a slow reader loses frames and
//! never stalls the simulation), and a connection whose queue makes no progress for
//! [`WRITE_TIMEOUT`] is shut down (its reader thread then sees the end and reports it closed).
//! Sends use `MSG_DONTWAIT` instead of making the socket non-blocking, because the connection's
//! reader thread blocks on the same socket (the flag would be shared with it).
//!
//! [`Outbox::send_direct`] (the sync agent's perceptions) writes from the caller's thread when
//! the writer holds nothing for that connection, so a cycle does not wait for the writer
//! thread to wake; what the socket does not take goes to the writer as usual. Each connection's
//! count of frames held by the writer sits under a lock that the writer also holds while it
//! writes that connection, so two frames' bytes never interleave and order is kept.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bevy::log::{info, warn};
use polling::{Event, Poller};

use super::framing::encode_frame;
use crate::protocol::net;
use crate::protocol::poller::{self, ConnectionSet, Handle};

/// Frames a connection may have queued before new ones are dropped (it stopped reading).
pub const OUTBOX: usize = 1024;
/// A connection whose queued frames make no progress for this long is shut down.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// One encoded frame (length prefix and payload), shared by every connection it is sent to.
pub type Frame = Arc<[u8]>;

/// Frames `payload` (the 4-byte length prefix in front); `None` if it is too long to frame.
pub fn frame(payload: &[u8]) -> Option<Frame> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    encode_frame(payload, &mut out).ok()?;
    Some(out.into())
}

/// Frames of one connection the writer holds (queued or being written), counted by the
/// senders of [`Outbox`] frames; `CLOSED` once the writer has let the connection go.
type Pending = Arc<Mutex<usize>>;
const CLOSED: usize = usize::MAX / 2;

fn lock(p: &Pending) -> MutexGuard<'_, usize> {
    p.lock().unwrap_or_else(PoisonError::into_inner)
}

enum Cmd {
    Add {
        conn: u64,
        stream: Arc<TcpStream>,
        pending: Pending,
    },
    /// A frame for many connections (not counted in their `Pending`).
    Send { conns: Vec<u64>, frame: Frame },
    /// A frame for one connection, counted in its `Pending`.
    SendCounted { conn: u64, frame: Frame },
    /// Write what is queued, then shut the socket down.
    Close { conn: u64 },
}

/// The handle to a port's writer thread (cheap to clone).
#[derive(Clone)]
pub struct PortWriter(Handle<Cmd>);

impl PortWriter {
    /// Starts the writer thread of port `name` (the shared poller loop, [`poller::run`]).
    pub fn start(name: &str) -> io::Result<Self> {
        let owned = name.to_string();
        let handle = Handle::spawn(format!("{name}-write"), format!("{name}: writer"), |p| {
            Writer::new(owned, p)
        })?;
        Ok(Self(handle))
    }

    fn command(&self, cmd: Cmd) -> bool {
        self.0.send(cmd)
    }

    /// Hands connection `conn`'s socket (a clone: its reader keeps the other) to the thread;
    /// the outbox to send it frames through, or `None` if the writer is gone.
    pub fn open(&self, conn: u64, stream: TcpStream) -> Option<Outbox> {
        let stream = Arc::new(stream);
        let pending = Pending::default();
        let added = self.command(Cmd::Add {
            conn,
            stream: stream.clone(),
            pending: pending.clone(),
        });
        added.then(|| Outbox {
            conn,
            writer: self.clone(),
            stream,
            pending,
        })
    }

    /// Queues one frame for every connection in `conns`: one hand-off, whatever their number.
    /// False if the writer is gone.
    pub fn send_to(&self, conns: Vec<u64>, frame: Frame) -> bool {
        if conns.is_empty() {
            return true;
        }
        self.command(Cmd::Send { conns, frame })
    }
}

/// What the simulation (and the connection's reader) sends one connection through.
#[derive(Clone)]
pub struct Outbox {
    conn: u64,
    writer: PortWriter,
    stream: Arc<TcpStream>,
    pending: Pending,
}

impl Outbox {
    /// The connection's id on its port.
    pub fn conn(&self) -> u64 {
        self.conn
    }

    /// The port's writer.
    pub fn writer(&self) -> &PortWriter {
        &self.writer
    }

    /// Replies queued for this connection and not yet written (the frames sent through this
    /// outbox; the port's broadcasts are not counted).
    pub fn pending(&self) -> usize {
        *lock(&self.pending)
    }

    /// Queues one message's payload (framed here). False if it cannot be framed or the writer
    /// is gone; a frame dropped later for a full queue is not reported.
    pub fn send(&self, payload: &[u8]) -> bool {
        match frame(payload) {
            Some(f) => self.send_frame(f),
            None => false,
        }
    }

    /// Queues an already framed message.
    pub fn send_frame(&self, frame: Frame) -> bool {
        let mut pending = lock(&self.pending);
        *pending += 1;
        self.writer.command(Cmd::SendCounted {
            conn: self.conn,
            frame,
        })
    }

    /// Writes one message's payload from this thread if the writer holds nothing for the
    /// connection (the rest, if the socket does not take it all, goes to the writer); else
    /// queues it. False if it cannot be framed, the connection failed or the writer is gone.
    pub fn send_direct(&self, payload: &[u8]) -> bool {
        let Some(frame) = frame(payload) else {
            return false;
        };
        let mut pending = lock(&self.pending);
        let rest: Frame = if *pending == 0 {
            match net::send_nonblocking(&self.stream, &frame) {
                Ok(n) if n == frame.len() => return true,
                Ok(n) => frame[n..].into(),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    frame
                }
                // The reader sees the failed socket and reports the connection closed.
                Err(_) => return false,
            }
        } else {
            frame
        };
        *pending += 1;
        self.writer.command(Cmd::SendCounted {
            conn: self.conn,
            frame: rest,
        })
    }

    /// Writes what is queued, then closes the connection.
    pub fn close(&self) {
        self.writer.command(Cmd::Close { conn: self.conn });
    }
}

struct Conn {
    stream: Arc<TcpStream>,
    pending: Pending,
    /// Frames to write, each with whether it is counted in `pending`.
    queue: VecDeque<(Frame, bool)>,
    /// Bytes of the front frame already written.
    offset: usize,
    /// Since when the queue has waited for the socket without progress.
    stalled_since: Option<Instant>,
    /// Registered for writability (the socket was full).
    armed: bool,
    closing: bool,
}

struct Writer {
    name: String,
    poller: Arc<Poller>,
    conns: HashMap<u64, Conn>,
    dropped: net::RateLimited,
}

impl Writer {
    fn new(name: String, poller: Arc<Poller>) -> Self {
        Self {
            name,
            poller,
            conns: HashMap::new(),
            dropped: net::RateLimited::new(Duration::from_secs(1)),
        }
    }

    fn queue(&mut self, conn: u64, frame: Frame, counted: bool, touched: &mut Vec<u64>) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.closing || c.queue.len() >= OUTBOX {
            if counted {
                *lock(&c.pending) -= 1;
            }
            if !c.closing
                && let Some(held) = self.dropped.allow()
            {
                info!(
                    "{}: connection {conn} is not reading; frames dropped{}",
                    self.name,
                    net::suppressed_note(held)
                );
            }
            return;
        }
        c.queue.push_back((frame, counted));
        touched.push(conn);
    }

    /// Forgets a connection and shuts its socket down (its reader thread then sees the end).
    fn remove(&mut self, conn: u64, _why: &str) {
        if let Some(c) = self.conns.remove(&conn) {
            // No direct send may write to it any more.
            *lock(&c.pending) = CLOSED;
            let _ = self.poller.delete(&*c.stream);
            let _ = c.stream.shutdown(Shutdown::Both);
        }
    }
}

/// The writer's side of the shared loop: commands queue frames, a flush writes what the socket
/// takes, and a connection whose queue has not moved for [`WRITE_TIMEOUT`] is shut down.
impl ConnectionSet for Writer {
    type Cmd = Cmd;

    fn take(&mut self, cmd: Cmd, touched: &mut Vec<u64>) {
        match cmd {
            Cmd::Add {
                conn,
                stream,
                pending,
            } => {
                // SAFETY (polling's contract): the socket is deleted from the poller before the
                // writer lets it go, in `remove`; `shut_all` does the same on the way out.
                if let Err(e) = unsafe { self.poller.add(&*stream, Event::none(conn as usize)) } {
                    warn!("{}: connection {conn}: cannot watch it: {e}", self.name);
                    *lock(&pending) = CLOSED;
                    let _ = stream.shutdown(Shutdown::Both);
                    return;
                }
                self.conns.insert(
                    conn,
                    Conn {
                        stream,
                        pending,
                        queue: VecDeque::new(),
                        offset: 0,
                        stalled_since: None,
                        armed: false,
                        closing: false,
                    },
                );
            }
            Cmd::Send { conns, frame } => {
                for conn in conns {
                    self.queue(conn, frame.clone(), false, touched);
                }
            }
            Cmd::SendCounted { conn, frame } => self.queue(conn, frame, true, touched),
            Cmd::Close { conn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.closing = true;
                    touched.push(conn);
                }
            }
        }
    }

    /// Writes what the socket takes now; arms the poller if it is full.
    fn flush(&mut self, conn: u64) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.armed {
            // The poller will say when the socket has room.
            return;
        }
        // Held while writing, so a direct send cannot slip between two of our writes.
        let pending = c.pending.clone();
        let mut held = lock(&pending);
        let mut progressed = false;
        let failed = loop {
            let Some((front, counted)) = c.queue.front() else {
                break None;
            };
            let counted = *counted;
            match net::send_nonblocking(&c.stream, &front[c.offset..]) {
                Ok(0) => break Some("the socket took nothing".to_string()),
                Ok(n) => {
                    progressed = true;
                    c.offset += n;
                    if c.offset == front.len() {
                        c.queue.pop_front();
                        c.offset = 0;
                        if counted {
                            *held -= 1;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if progressed || c.stalled_since.is_none() {
                        c.stalled_since = Some(Instant::now());
                    }
                    let armed = self
                        .poller
                        .modify(&*c.stream, Event::writable(conn as usize));
                    c.armed = armed.is_ok();
                    return;
                }
                Err(e) => break Some(format!("write failed: {e}")),
            }
        };
        drop(held);
        if let Some(why) = failed {
            return self.remove(conn, &why);
        }
        c.stalled_since = None;
        if c.closing {
            self.remove(conn, "closed");
        }
    }

    fn ready(&mut self, conn: u64, _readable: bool) {
        if let Some(c) = self.conns.get_mut(&conn) {
            // One-shot interest: it must be armed again if the socket is still full.
            c.armed = false;
        }
        self.flush(conn);
    }

    /// Shuts down the connections whose queue has not moved for [`WRITE_TIMEOUT`]; nothing
    /// stalled, nothing is due: the thread sleeps until a socket or a command wakes it.
    fn due(&mut self, now: Instant) -> Option<Instant> {
        let stalled = self.conns.iter().map(|(&id, c)| (id, c.stalled_since));
        let (late, next) = poller::stalls(stalled, WRITE_TIMEOUT, now);
        for conn in late {
            info!(
                "{}: connection {conn} stopped reading for {} s; closing it",
                self.name,
                WRITE_TIMEOUT.as_secs()
            );
            self.remove(conn, "write timed out");
        }
        next
    }

    fn shut_all(&mut self) {
        let ids: Vec<u64> = self.conns.keys().copied().collect();
        for conn in ids {
            self.remove(conn, "port closed");
        }
    }
}
