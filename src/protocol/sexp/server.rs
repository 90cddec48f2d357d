//! The TCP side, shared by the agent and the monitor port: an accept thread, per
//! connection a reader thread (4-byte length prefix frames → S-expressions; it blocks in `read`
//! and costs nothing while the peer is quiet), and one writer thread for the whole port
//! ([`super::writer`]: non-blocking sends through a readiness poller). The ECS sees only
//! channels and [`Outbox`]es; malformed expressions are answered here with `(error …)` and never
//! reach it.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use bevy::log::info;
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::framing::encode_frame;
pub use super::payload::{MAX_NODES_PER_FRAME, error_payload, payload};
pub use super::reader::NetEvent;
use super::reader::{self, ReadSide, Sides};
pub use super::writer::{Frame, Outbox, PortWriter};
use crate::protocol::net;
use crate::sim::SimWaker;

/// Limits of one port.
#[derive(Clone, Copy, Debug)]
pub struct PortLimits {
    /// Largest frame payload; a longer length prefix closes the connection.
    pub max_frame: usize,
    /// Connections open at once; more are answered `(error …)` and closed. With `max_silent`,
    /// only connections that have sent their first message count.
    pub max_connections: usize,
    /// Connections that have not sent their first message yet (an agent's `(init …)`), counted
    /// apart from `max_connections`: past this many the oldest is cut off, so sockets that
    /// never finish their handshake cannot keep a real client out. `None`: every connection
    /// counts from its accept (monitors, which may never send anything).
    pub max_silent: Option<usize>,
}

/// The connections of a port that have not sent their first message, oldest first.
struct Silent {
    cap: usize,
    name: &'static str,
    queue: Mutex<SilentQueue>,
}

#[derive(Default)]
struct SilentQueue {
    conns: VecDeque<(u64, Option<TcpStream>)>,
    /// A flood of silent connections logs its cut-offs once a second, with a count.
    log: Option<net::RateLimited>,
}

impl Silent {
    /// Counts a new connection; past the cap, the oldest silent one is shut down (its reader
    /// then ends it as usual).
    fn begin(&self, conn: u64, stream: &TcpStream) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue.conns.len() >= self.cap
            && let Some((old, old_stream)) = queue.conns.pop_front()
        {
            let log = queue
                .log
                .get_or_insert_with(|| net::RateLimited::new(Duration::from_secs(1)));
            if let Some(held_back) = log.allow() {
                info!(
                    "{}: connection {old} cut off: {} connections have not sent their first \
                     message{}",
                    self.name,
                    self.cap,
                    net::suppressed_note(held_back)
                );
            }
            if let Some(s) = old_stream {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        queue.conns.push_back((conn, stream.try_clone().ok()));
    }

    /// The connection spoke, or is gone.
    fn end(&self, conn: u64) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.conns.retain(|(c, _)| *c != conn);
    }
}

/// How a connection is admitted against the port's `max_connections`: at accept, or (ports
/// with `max_silent`) at its first message.
#[derive(Clone)]
struct Admission {
    open_now: Arc<AtomicUsize>,
    max: usize,
    silent: Option<Arc<Silent>>,
    name: &'static str,
}

impl Admission {
    /// Takes a slot, or says why there is none.
    fn admit(&self) -> Result<OpenGuard, String> {
        if self.open_now.fetch_add(1, Ordering::SeqCst) >= self.max {
            self.open_now.fetch_sub(1, Ordering::SeqCst);
            return Err(format!(
                "the {} port is full ({} connections); try again later",
                self.name, self.max
            ));
        }
        Ok(OpenGuard(self.open_now.clone()))
    }
}

/// Binds `addr` (errors such as a port in use surface here, at start-up) and starts accepting
/// and the port's writer thread (also returned, for frames sent to many connections at once).
pub fn start(
    addr: SocketAddr,
    name: &'static str,
    limits: PortLimits,
    waker: SimWaker,
) -> io::Result<(SocketAddr, Receiver<NetEvent>, PortWriter)> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let (events, rx) = unbounded();
    let writer = PortWriter::start(name)?;
    let port_writer = writer.clone();
    let admission = Admission {
        open_now: Arc::new(AtomicUsize::new(0)),
        max: limits.max_connections,
        silent: limits.max_silent.map(|cap| {
            Arc::new(Silent {
                cap: cap.max(1),
                name,
                queue: Mutex::default(),
            })
        }),
        name,
    };
    thread::Builder::new()
        .name(format!("{name}-accept"))
        .spawn(move || {
            let mut next = 1u64;
            net::accept_loop(&listener, name, |stream| {
                let conn = next;
                next += 1;
                let guard = match &admission.silent {
                    Some(silent) => {
                        silent.begin(conn, &stream);
                        None
                    }
                    None => match admission.admit() {
                        Ok(guard) => Some(guard),
                        Err(reason) => {
                            refuse(stream, &reason);
                            return Ok(ControlFlow::Continue(()));
                        }
                    },
                };
                let port = Port {
                    name,
                    max_frame: limits.max_frame,
                    events: &events,
                    waker: &waker,
                    admission: &admission,
                    writer: &writer,
                };
                if let Err(e) = open(stream, conn, &port, guard) {
                    if let Some(silent) = &admission.silent {
                        silent.end(conn);
                    }
                    return Err(e);
                }
                Ok(ControlFlow::Continue(()))
            });
        })?;
    Ok((local, rx, port_writer))
}

/// Counts a connection as open until dropped (by its reader thread, or on a failed start).
struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tells a connection over the cap why it is closed, without waiting on it.
fn refuse(stream: TcpStream, reason: &str) {
    let mut frame = Vec::new();
    if encode_frame(&error_payload(reason), &mut frame).is_ok() {
        let _ = stream.set_nonblocking(true);
        let _ = (&stream).write_all(&frame);
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// What the accept thread hands each connection's threads.
struct Port<'a> {
    name: &'static str,
    max_frame: usize,
    events: &'a Sender<NetEvent>,
    waker: &'a SimWaker,
    admission: &'a Admission,
    writer: &'a PortWriter,
}

/// Starts serving `stream`; `guard` is its slot when it was admitted at accept (`None`: at its
/// first message).
fn open(stream: TcpStream, conn: u64, port: &Port, guard: Option<OpenGuard>) -> io::Result<()> {
    let Port {
        name,
        max_frame,
        events,
        waker,
        admission,
        writer,
    } = *port;
    let admission = admission.clone();
    let peer = stream.peer_addr()?;
    stream.set_nodelay(true)?;
    let Some(out) = writer.open(conn, stream.try_clone()?) else {
        return Ok(());
    };
    let read = Arc::new(ReadSide::new(
        conn,
        stream.try_clone()?,
        max_frame,
        events.clone(),
        out.clone(),
    ));
    if events
        .send(NetEvent::Opened {
            conn,
            peer,
            with: Sides {
                out: out.clone(),
                read: read.clone(),
            },
        })
        .is_err()
    {
        return Ok(());
    }
    waker.wake();
    info!("{name}: connection {conn} from {peer}");
    let reader_events = events.clone();
    let waker = waker.clone();
    let reader_out = out.clone();
    let spawned = thread::Builder::new()
        .name(format!("{name}-read-{peer}"))
        .spawn(move || {
            let mut slot = Slot { guard, admission };
            let reason = read_first(&read, conn, &mut slot, &waker)
                .unwrap_or_else(|| reader::read_loop(&read, &waker));
            if let Some(silent) = &slot.admission.silent {
                silent.end(conn);
            }
            info!("{name}: connection {conn} ({peer}) closed: {reason}");
            // The writer closes the socket once it has sent what is queued (an error).
            let _ = stream.shutdown(Shutdown::Read);
            out.close();
            let _ = reader_events.send(NetEvent::Closed { conn, reason });
            waker.wake();
        });
    if let Err(e) = spawned {
        reader_out.close();
        // The simulation already knows the connection: tell it that it is gone.
        let reason = format!("no thread to serve it: {e}");
        let _ = events.send(NetEvent::Closed { conn, reason });
        return Err(e);
    }
    Ok(())
}

/// A connection's place in the port's count: held from accept, or taken at its first message.
struct Slot {
    guard: Option<OpenGuard>,
    admission: Admission,
}

impl Slot {
    /// Before a message is handed on: takes the slot if the connection has none yet.
    fn take(&mut self, conn: u64) -> Result<(), String> {
        if self.guard.is_none() {
            if let Some(silent) = &self.admission.silent {
                silent.end(conn);
            }
            self.guard = Some(self.admission.admit()?);
        }
        Ok(())
    }
}

/// Until the connection's first frame: waits for it and takes the port's slot before it is
/// queued (see [`Slot`]), or says why the connection ends. `None`: it spoke and has its slot;
/// read on.
fn read_first(read: &ReadSide, conn: u64, slot: &mut Slot, waker: &SimWaker) -> Option<String> {
    if slot.guard.is_some() {
        return None;
    }
    reader::wait_first_frame(read, waker, &mut || slot.take(conn)).err()
}
