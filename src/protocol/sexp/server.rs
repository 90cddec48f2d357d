//! The TCP side of spec 001, shared by the agent and the monitor port: an accept thread, per
//! connection a reader thread (4-byte length prefix frames → S-expressions; it blocks in `read`
//! and costs nothing while the peer is quiet), and one writer thread for the whole port
//! ([`super::writer`]: non-blocking sends through a readiness poller). The ECS sees only
//! channels and [`Outbox`]es; malformed expressions are answered here with `(error …)` and never
//! reach it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use bevy::log::info;
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::framing::{FrameDecoder, FramingError, encode_frame};
pub use super::writer::{Frame, Outbox, PortWriter};
use super::{ParseErrorKind, Sexp, parse_all};
use crate::protocol::net;
use crate::sim::SimWaker;

/// What a port's threads tell the simulation.
pub enum NetEvent {
    Opened {
        conn: u64,
        peer: SocketAddr,
        out: Outbox,
    },
    /// One frame's well-formed expressions, in order (possibly none: the frame still counts as
    /// the client's message for sync mode).
    Message {
        conn: u64,
        exprs: Vec<Sexp>,
    },
    Closed {
        conn: u64,
        reason: String,
    },
}

/// Builds the payload of one message from top-level expressions.
pub fn payload(exprs: &[Sexp]) -> Vec<u8> {
    let mut out = Vec::new();
    super::write_all(exprs, &mut out);
    out
}

/// `(error <reason>)` as a frame payload.
pub fn error_payload(reason: &str) -> Vec<u8> {
    payload(&[Sexp::list([Sexp::atom("error"), Sexp::atom(reason)])])
}

/// Lists and atoms one frame may hold. An rcssserver-mj agent's busiest message (every joint's
/// effector) holds a few hundred; the bound keeps one 1 MiB frame of `(x)(x)…` from costing
/// hundreds of MiB and seconds of work.
pub const MAX_NODES_PER_FRAME: usize = 16 * 1024;

/// Limits of one port.
#[derive(Clone, Copy, Debug)]
pub struct PortLimits {
    /// Largest frame payload; a longer length prefix closes the connection.
    pub max_frame: usize,
    /// Connections open at once; more are answered `(error …)` and closed.
    pub max_connections: usize,
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
    let open_now = Arc::new(AtomicUsize::new(0));
    thread::Builder::new()
        .name(format!("{name}-accept"))
        .spawn(move || {
            let mut next = 1u64;
            net::accept_loop(&listener, name, |stream| {
                if open_now.load(Ordering::SeqCst) >= limits.max_connections {
                    refuse_full(stream, name, limits.max_connections);
                    return Ok(ControlFlow::Continue(()));
                }
                let conn = next;
                next += 1;
                open_now.fetch_add(1, Ordering::SeqCst);
                let guard = OpenGuard(open_now.clone());
                open(
                    stream,
                    conn,
                    &writer,
                    name,
                    limits.max_frame,
                    &events,
                    guard,
                    &waker,
                )?;
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
fn refuse_full(stream: TcpStream, name: &str, max: usize) {
    let mut frame = Vec::new();
    let reason = format!("the {name} port is full ({max} connections); try again later");
    if encode_frame(&error_payload(&reason), &mut frame).is_ok() {
        let _ = stream.set_nonblocking(true);
        let _ = (&stream).write_all(&frame);
    }
    let _ = stream.shutdown(Shutdown::Both);
}

#[allow(clippy::too_many_arguments)]
fn open(
    stream: TcpStream,
    conn: u64,
    writer: &PortWriter,
    name: &'static str,
    max_frame: usize,
    events: &Sender<NetEvent>,
    guard: OpenGuard,
    waker: &SimWaker,
) -> io::Result<()> {
    let peer = stream.peer_addr()?;
    stream.set_nodelay(true)?;
    let Some(out) = writer.open(conn, stream.try_clone()?) else {
        return Ok(());
    };
    if events
        .send(NetEvent::Opened {
            conn,
            peer,
            out: out.clone(),
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
            let _open = guard;
            let reason = read_loop(&stream, conn, max_frame, &reader_events, &out, &waker);
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

/// One frame's well-formed expressions. Problems are answered with one `(error …)` per frame:
/// malformed expressions are skipped and counted; a frame over [`MAX_NODES_PER_FRAME`] is
/// ignored whole (it still counts as the client's message for sync mode).
fn parse_frame(frame: &[u8], out: &Outbox) -> Vec<Sexp> {
    let mut exprs = Vec::new();
    let mut malformed = 0usize;
    let mut first_error = None;
    for parsed in parse_all(frame).with_max_nodes(MAX_NODES_PER_FRAME) {
        match parsed {
            Ok(e) => exprs.push(e),
            Err(e) if e.kind == ParseErrorKind::TooManyNodes => {
                let reason = format!(
                    "message ignored: it holds more than {MAX_NODES_PER_FRAME} lists and atoms"
                );
                out.send(&error_payload(&reason));
                return Vec::new();
            }
            Err(e) => {
                malformed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        let reason = match malformed {
            1 => format!("malformed expression skipped: {e}"),
            n => format!("{n} malformed expressions skipped; the first: {e}"),
        };
        out.send(&error_payload(&reason));
    }
    exprs
}

fn read_loop(
    mut stream: &TcpStream,
    conn: u64,
    max_frame: usize,
    events: &Sender<NetEvent>,
    out: &Outbox,
    waker: &SimWaker,
) -> String {
    let mut decoder = FrameDecoder::new(max_frame);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) => return "closed by the peer".into(),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return format!("read failed: {e}"),
        };
        decoder.push(&buf[..n]);
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    let exprs = parse_frame(&frame, out);
                    if events.send(NetEvent::Message { conn, exprs }).is_err() {
                        return "simulation stopped".into();
                    }
                    // A sync cycle (or the idle headless loop) may be blocked on this message.
                    waker.wake();
                }
                Ok(None) => break,
                Err(e @ FramingError::TooLong { .. }) => {
                    out.send(&error_payload(&e.to_string()));
                    out.close();
                    return format!("refused: {e}");
                }
                Err(e) => return format!("refused: {e}"),
            }
        }
    }
}
