//! The WebSocket side of revA: an accept thread, a short-lived thread per connection for its
//! WebSocket handshake (held to a deadline), then the one I/O thread ([`super::io`]) that serves
//! every session non-blocking. What a connection's session state is ([`Wire`]) and the events
//! to and from the simulation live in [`super::wire`], which both this module and the I/O
//! thread build on. Everything about the simulation goes through channels to the ECS.

use std::collections::VecDeque;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::info;
use crossbeam_channel::{Receiver, Sender, unbounded};
use tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tungstenite::http::StatusCode;
use tungstenite::protocol::WebSocketConfig;
use tungstenite::{Error as WsError, Message, WebSocket};

use super::io::{IoContext, NewConn, TeleopIo};
use super::wire::{ServerEvent, SharedSimState, TeleopConfig, WsIo};
use crate::protocol::net;

/// During the handshake, a client that does not take a write within this time is dropped.
const HANDSHAKE_WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// The WebSocket handshake must complete within this time, counted from the connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Messages larger than this are a protocol violation and end the connection (1009); those
/// between `max_message` and this are refused with an alert and the connection stays usable.
const HARD_MESSAGE_LIMIT: usize = 4 << 20;
/// Bytes tungstenite reads from a session's socket at once.
const READ_CHUNK: usize = 8 * 1024;
/// Sessions (connections past their handshake) beyond this are refused (HTTP 503).
pub const MAX_CONNECTIONS: usize = 256;
/// Handshakes in progress at once; a new connection past this cuts off the oldest.
pub const MAX_HANDSHAKES: usize = 64;

/// Binds (a port in use is an error here, at start-up) and starts the accept thread. The
/// returned [`Hub`] lets another listener (the headset page's wss) feed the same connections.
pub fn start(
    config: TeleopConfig,
    shared: Arc<SharedSimState>,
) -> io::Result<(SocketAddr, Receiver<ServerEvent>, Hub)> {
    let listener = TcpListener::bind(config.addr)?;
    let local = listener.local_addr()?;
    let (events, rx) = unbounded();
    let config = Arc::new(config);
    let sessions = Arc::new(AtomicUsize::new(0));
    let io = TeleopIo::start(IoContext {
        config: config.clone(),
        events: events.clone(),
        shared,
        sessions: sessions.clone(),
    })?;
    let hub = Hub {
        config,
        events,
        sessions,
        handshakes: Arc::new(Handshakes::default()),
        next_conn: Arc::new(AtomicU64::new(1)),
        io,
    };
    let accept = hub.clone();
    thread::Builder::new()
        .name("teleop-accept".into())
        .spawn(move || accept_loop(listener, accept))?;
    Ok((local, rx, hub))
}

/// What every teleop listener shares: the events channel to the simulation, the session and
/// handshake counts (the limits hold for all listeners together), the connection ids and the
/// I/O thread that serves the sessions.
#[derive(Clone)]
pub struct Hub {
    config: Arc<TeleopConfig>,
    events: Sender<ServerEvent>,
    sessions: Arc<AtomicUsize>,
    handshakes: Arc<Handshakes>,
    next_conn: Arc<AtomicU64>,
    io: TeleopIo,
}

impl Hub {
    /// A new connection: its id, counted among the handshakes in progress (see [`Handshakes`]).
    pub fn begin(&self, stream: &TcpStream) -> u64 {
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        self.handshakes.begin(conn, stream);
        conn
    }

    /// The connection is past its handshake, or gone.
    pub fn end_handshake(&self, conn: u64) {
        self.handshakes.end(conn);
    }

    pub fn config(&self) -> &TeleopConfig {
        &self.config
    }

    /// The I/O thread that serves every session: what the ECS sends sessions through.
    pub fn io(&self) -> &TeleopIo {
        &self.io
    }

    /// Something the simulation should hear about that is not a session's (a refused request).
    pub fn notify(&self, event: ServerEvent) {
        let _ = self.events.send(event);
    }

    /// The WebSocket handshake on `stream` (whose bytes may start with a request head already
    /// read, see [`ByteStream`]) on this thread; then the connection is handed to the I/O thread
    /// for its life as a revA session, and this returns.
    pub fn run<S: ByteStream>(&self, conn: u64, peer: SocketAddr, stream: S, via: &str) {
        let shaken = handshake(stream, &self.config, &self.sessions);
        self.handshakes.end(conn);
        let ws = match shaken {
            Ok(ws) => ws,
            Err(Refused::Key(what)) => {
                let text =
                    format!("{peer} refused{via}: {what} pairing key from beyond loopback (403)");
                info!("teleop: {text}");
                self.notify(ServerEvent::Alert {
                    code: "TELEOP_KEY_REFUSED",
                    text,
                });
                return;
            }
            Err(Refused::Other(reason)) => {
                info!("teleop: {peer} refused at the handshake{via}: {reason}");
                return;
            }
        };
        let handed = self.io.add(NewConn {
            conn,
            peer,
            ws: Box::new(ws),
            via: via.to_string(),
        });
        if !handed {
            info!("teleop: {peer} refused{via}: simulation stopped");
            self.sessions.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn accept_loop(listener: TcpListener, hub: Hub) {
    net::accept_loop(&listener, "teleop", |stream| {
        let peer = stream
            .peer_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let conn = hub.begin(&stream);
        let hub_conn = hub.clone();
        let spawned = thread::Builder::new()
            .name(format!("teleop-{peer}"))
            .spawn(move || {
                let stream = HandshakeStream::new(stream);
                hub_conn.run(conn, peer, stream, "");
            });
        if let Err(e) = spawned {
            hub.end_handshake(conn);
            return Err(e);
        }
        Ok(ControlFlow::Continue(()))
    });
}

/// Connections still in their WebSocket handshake. They do not count against
/// [`MAX_CONNECTIONS`]; past [`MAX_HANDSHAKES`] the oldest is cut off, so sockets that trickle
/// a request byte by byte cannot keep a real client (whose handshake takes a millisecond) out.
#[derive(Default)]
struct Handshakes(Mutex<VecDeque<(u64, Option<TcpStream>)>>);

impl Handshakes {
    fn begin(&self, conn: u64, stream: &TcpStream) {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() >= MAX_HANDSHAKES
            && let Some((old, old_stream)) = pending.pop_front()
        {
            info!("teleop: connection {old} cut off: {MAX_HANDSHAKES} handshakes in progress");
            if let Some(s) = old_stream {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        pending.push_back((conn, stream.try_clone().ok()));
    }

    fn end(&self, conn: u64) {
        let mut pending = self.0.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|(c, _)| *c != conn);
    }
}

/// The byte stream under a WebSocket: a plain socket, or TLS over one. Reads are held to a
/// deadline during the handshake (one deadline in all, however its bytes trickle in); after it
/// the socket is non-blocking, driven by the I/O thread's poller.
pub trait ByteStream: io::Read + io::Write + Send + 'static {
    /// The socket underneath.
    fn tcp(&self) -> &TcpStream;
    /// The handshake is over: lift its deadline and make the socket non-blocking.
    fn end_handshake(&mut self) -> io::Result<()>;
}

/// A socket with an optional deadline that every read is held to.
pub struct HandshakeStream {
    pub stream: TcpStream,
    pub deadline: Option<Instant>,
}

impl HandshakeStream {
    /// The stream with the handshake's deadline, counted from now.
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            deadline: Some(Instant::now() + HANDSHAKE_TIMEOUT),
        }
    }
}

impl io::Read for HandshakeStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.deadline {
            Some(deadline) => net::read_before(&self.stream, deadline, buf),
            None => self.stream.read(buf),
        }
    }
}

impl io::Write for HandshakeStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl ByteStream for HandshakeStream {
    fn tcp(&self) -> &TcpStream {
        &self.stream
    }

    fn end_handshake(&mut self) -> io::Result<()> {
        self.deadline = None;
        self.stream.set_read_timeout(None)?;
        self.stream.set_nonblocking(true)
    }
}

/// Why a handshake did not make a session.
enum Refused {
    /// A peer beyond loopback gave no key, or a wrong one (`"no"` / `"a wrong"`).
    Key(&'static str),
    Other(String),
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        Self::Other(e.to_string())
    }
}

fn handshake<S: ByteStream>(
    conn: S,
    config: &TeleopConfig,
    sessions: &AtomicUsize,
) -> Result<WebSocket<S>, Refused> {
    let stream = conn.tcp();
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(HANDSHAKE_WRITE_TIMEOUT))?;
    let path = config.path.clone();
    // A peer whose address cannot be read is treated as remote: it must give the key.
    let remote = stream.peer_addr().map_or(true, |p| !net::from_loopback(p));
    let key = config.key.as_deref().filter(|_| remote);
    let refused_key = std::cell::Cell::new(None);
    let counted = std::cell::Cell::new(false);
    // tungstenite's callback signature fixes the error type; its size is not ours to choose.
    #[allow(clippy::result_large_err)]
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let refuse = |status: StatusCode, body: String| {
            let mut r = ErrorResponse::new(Some(body));
            *r.status_mut() = status;
            r
        };
        if req.uri().path() != path {
            return Err(refuse(
                StatusCode::NOT_FOUND,
                format!(
                    "armsim: no WebSocket endpoint at {}; the teleop endpoint is {path}\n",
                    req.uri().path()
                ),
            ));
        }
        if let Some(key) = key {
            let given = req.uri().query().and_then(net::key_in_query);
            if let Err(what) = net::check_pairing_key(given, key) {
                refused_key.set(Some(what));
                return Err(refuse(StatusCode::FORBIDDEN, KEY_NEEDED.to_owned()));
            }
        }
        // A session counts from here: the request is complete and about to be accepted.
        if sessions.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            sessions.fetch_sub(1, Ordering::SeqCst);
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("armsim: more than {MAX_CONNECTIONS} teleop connections\n"),
            ));
        }
        counted.set(true);
        Ok(resp)
    };
    // Reads are small (heartbeats, pongs, control frames) and tungstenite zero-fills its whole
    // read chunk before every read: 8 KiB instead of its 128 KiB default (larger messages are
    // still read, over several reads).
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(HARD_MESSAGE_LIMIT))
        .max_frame_size(Some(HARD_MESSAGE_LIMIT))
        .read_buffer_size(READ_CHUNK);
    let mut ws = match tungstenite::accept_hdr_with_config(conn, check, Some(ws_config)) {
        Ok(ws) => ws,
        Err(e) => {
            if counted.get() {
                sessions.fetch_sub(1, Ordering::SeqCst);
            }
            return Err(match refused_key.get() {
                Some(what) => Refused::Key(what),
                None => Refused::Other(e.to_string()),
            });
        }
    };
    if let Err(e) = ws.get_mut().end_handshake() {
        sessions.fetch_sub(1, Ordering::SeqCst);
        return Err(e.into());
    }
    Ok(ws)
}

const KEY_NEEDED: &str = "armsim: connections from beyond this machine need the pairing key: \
                          ws://ADDR:PORT/PATH?key=KEY, with the key armsim logged at start\n";

impl<S: ByteStream> WsIo for WebSocket<S> {
    fn read(&mut self) -> Result<Message, WsError> {
        WebSocket::read(self)
    }

    fn write(&mut self, msg: Message) -> Result<(), WsError> {
        WebSocket::write(self, msg)
    }

    fn flush(&mut self) -> Result<(), WsError> {
        WebSocket::flush(self)
    }

    fn close(&mut self) -> Result<(), WsError> {
        WebSocket::close(self, None)
    }

    fn tcp(&self) -> &TcpStream {
        self.get_ref().tcp()
    }
}
