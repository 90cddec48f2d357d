//! The TCP side of spec 001, shared by the agent and the monitor port: an accept thread, and per
//! connection a reader thread (4-byte length prefix frames → S-expressions) and a writer thread
//! (frames out, one write each). The ECS sees only channels; malformed expressions are answered
//! here with `(error …)` and never reach it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread;

use bevy::log::{info, warn};
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};

use super::framing::{FrameDecoder, FramingError, encode_frame};
use super::sexp::{Sexp, parse_all};

/// Frames a connection may have queued outbound before new ones are dropped (it stopped reading).
const OUTBOX: usize = 1024;
/// A write that cannot complete in this time ends the connection.
const WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a port's threads tell the simulation.
pub enum NetEvent {
    Opened {
        conn: u64,
        peer: SocketAddr,
        out: Sender<Out>,
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

/// What the simulation sends one connection.
pub enum Out {
    /// One frame's payload (the writer adds the length prefix).
    Frame(Vec<u8>),
    /// Flush what is queued, then close.
    Close,
}

/// Builds the payload of one message from top-level expressions.
pub fn payload(exprs: &[Sexp]) -> Vec<u8> {
    let mut out = Vec::new();
    super::sexp::write_all(exprs, &mut out);
    out
}

/// `(error <reason>)` as a frame payload.
pub fn error_payload(reason: &str) -> Vec<u8> {
    payload(&[Sexp::list([Sexp::atom("error"), Sexp::atom(reason)])])
}

/// Binds `addr` (errors such as a port in use surface here, at start-up) and starts accepting.
pub fn start(
    addr: SocketAddr,
    name: &'static str,
    max_frame: usize,
) -> io::Result<(SocketAddr, Receiver<NetEvent>)> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let (events, rx) = unbounded();
    thread::Builder::new()
        .name(format!("{name}-accept"))
        .spawn(move || {
            let mut next = 1u64;
            for stream in listener.incoming() {
                match stream {
                    Ok(s) => {
                        let conn = next;
                        next += 1;
                        if let Err(e) = open(s, conn, name, max_frame, &events) {
                            warn!("{name}: cannot serve a new connection: {e}");
                        }
                    }
                    Err(e) => warn!("{name}: accept failed: {e}"),
                }
            }
        })?;
    Ok((local, rx))
}

fn open(
    stream: TcpStream,
    conn: u64,
    name: &'static str,
    max_frame: usize,
    events: &Sender<NetEvent>,
) -> io::Result<()> {
    let peer = stream.peer_addr()?;
    stream.set_nodelay(true)?;
    let writer_stream = stream.try_clone()?;
    // A client that stops reading must not pin the writer (and its queued Close) forever.
    writer_stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let (out, out_rx) = bounded::<Out>(OUTBOX);
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
    info!("{name}: connection {conn} from {peer}");
    thread::Builder::new()
        .name(format!("{name}-write-{peer}"))
        .spawn(move || write_loop(writer_stream, &out_rx))?;
    let events = events.clone();
    thread::Builder::new()
        .name(format!("{name}-read-{peer}"))
        .spawn(move || {
            let reason = read_loop(&stream, conn, max_frame, &events, &out);
            info!("{name}: connection {conn} ({peer}) closed: {reason}");
            // The writer closes the socket once it has sent what is queued (e.g. the error).
            let _ = stream.shutdown(Shutdown::Read);
            let _ = events.send(NetEvent::Closed { conn, reason });
        })?;
    Ok(())
}

fn write_loop(mut stream: TcpStream, out: &Receiver<Out>) {
    let mut buf = Vec::new();
    while let Ok(msg) = out.recv() {
        match msg {
            Out::Frame(payload) => {
                buf.clear();
                if encode_frame(&payload, &mut buf).is_err() {
                    continue;
                }
                if stream.write_all(&buf).is_err() {
                    break;
                }
            }
            Out::Close => break,
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

fn read_loop(
    mut stream: &TcpStream,
    conn: u64,
    max_frame: usize,
    events: &Sender<NetEvent>,
    out: &Sender<Out>,
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
                    let mut exprs = Vec::new();
                    for parsed in parse_all(&frame) {
                        match parsed {
                            Ok(e) => exprs.push(e),
                            Err(e) => {
                                let _ = out.try_send(Out::Frame(error_payload(&format!(
                                    "malformed expression skipped: {e}"
                                ))));
                            }
                        }
                    }
                    if events.send(NetEvent::Message { conn, exprs }).is_err() {
                        return "simulation stopped".into();
                    }
                }
                Ok(None) => break,
                Err(e @ FramingError::TooLong { .. }) => {
                    let _ = out.try_send(Out::Frame(error_payload(&e.to_string())));
                    let _ = out.try_send(Out::Close);
                    return format!("refused: {e}");
                }
                Err(e) => return format!("refused: {e}"),
            }
        }
    }
}
