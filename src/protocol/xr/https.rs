//! The HTTPS listener: TLS (rustls) on each connection, then HTTP/1.1 requests read with
//! httparse, on the connection's own thread. `GET /` (the page), `/scene.json`, the robot's
//! mesh buffers (`/meshes/<mesh>/<part>.bin`, gzipped for a client that accepts it and cached
//! for good: their URLs carry a hash of their bytes) and the WebSocket upgrade at the scene's
//! `ws_path` need `?key=KEY`; a missing or wrong key gets 403 and an alert in the panel. The
//! page's static files (code that is in the repository anyway) are served without it, so its
//! module imports need no key. The upgrade goes to the teleop [`Hub`]: the same sessions, roles
//! and limits as the plain `ws://` listener.
//!
//! Bounded like the plain listener: the TLS handshake and each request head must arrive within
//! the handshake time, heads are at most [`MAX_HEAD`] bytes, connections still in TLS or HTTP
//! count as handshakes in progress (the oldest is cut off past the limit), and a kept-alive
//! connection serves at most [`MAX_REQUESTS`] requests.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::info;
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::web;
use crate::protocol::net::{self, RateLimited};
use crate::protocol::teleop::server::{ByteStream, HandshakeStream, Hub};
use crate::protocol::teleop::wire::ServerEvent;
use armsim_core::protocol::teleop::mesh_buffers::MeshBuffers;

/// A request head larger than this is refused (431).
pub const MAX_HEAD: usize = 16 * 1024;
/// Requests on one kept-alive connection before it is closed.
pub const MAX_REQUESTS: usize = 200;
/// How long a kept-alive connection may wait for its next request.
const IDLE: Duration = Duration::from_secs(5);

/// What every connection thread of the listener shares.
struct Site {
    hub: Hub,
    tls: Arc<ServerConfig>,
    key: String,
    scene_json: Arc<Vec<u8>>,
    /// The robot's mesh buffers, built once at start.
    meshes: MeshBuffers,
    /// Refusals reach the panel at most once a second (with a count), so a scan cannot flood it.
    refusals: Mutex<RateLimited>,
}

/// Binds `addr` and serves the page there; returns the bound address.
pub fn start(
    addr: SocketAddr,
    hub: Hub,
    tls: Arc<ServerConfig>,
    key: String,
    scene_json: Vec<u8>,
    meshes: MeshBuffers,
) -> io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    let site = Arc::new(Site {
        hub,
        tls,
        key,
        scene_json: Arc::new(scene_json),
        meshes,
        refusals: Mutex::new(RateLimited::new(Duration::from_secs(1))),
    });
    thread::Builder::new()
        .name("xr-accept".into())
        .spawn(move || {
            net::accept_loop(&listener, "xr", |stream| {
                let peer = stream
                    .peer_addr()
                    .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
                let conn = site.hub.begin(&stream);
                let s = site.clone();
                let spawned = thread::Builder::new()
                    .name(format!("xr-{peer}"))
                    .spawn(move || s.connection(conn, peer, stream));
                if let Err(e) = spawned {
                    site.hub.end_handshake(conn);
                    return Err(e);
                }
                Ok(ControlFlow::Continue(()))
            });
        })?;
    Ok(local)
}

/// TLS over a socket, with the bytes of a request head already read put back in front, so the
/// WebSocket handshake reads the request as it came.
pub struct TlsStream {
    tls: StreamOwned<ServerConnection, HandshakeStream>,
    replay: Vec<u8>,
    pos: usize,
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.replay.len() {
            let n = buf.len().min(self.replay.len() - self.pos);
            buf[..n].copy_from_slice(&self.replay[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.tls.read(buf)
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tls.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tls.flush()
    }
}

impl ByteStream for TlsStream {
    fn tcp(&self) -> &TcpStream {
        &self.tls.sock.stream
    }

    fn end_handshake(&mut self) -> io::Result<()> {
        self.tls.sock.end_handshake()
    }
}

/// One parsed request head.
struct Head {
    method: String,
    path: String,
    key: Option<String>,
    close: bool,
    /// Whether `Accept-Encoding` accepts gzip.
    gzip: bool,
    /// The whole head's length in the buffer.
    len: usize,
}

enum Got {
    Head(Head),
    /// The peer closed between requests.
    Closed,
    /// Answer with this status and close.
    Bad(u16, &'static str),
}

impl Site {
    fn connection(&self, conn: u64, peer: SocketAddr, stream: TcpStream) {
        let setup = stream
            .set_nodelay(true)
            .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(2))));
        let tls = match (setup, ServerConnection::new(self.tls.clone())) {
            (Ok(()), Ok(tls)) => tls,
            (Err(e), _) => return self.done(conn, peer, &e.to_string()),
            (_, Err(e)) => return self.done(conn, peer, &e.to_string()),
        };
        let mut io = StreamOwned::new(tls, HandshakeStream::new(stream));
        let mut buf = Vec::new();
        for _ in 0..MAX_REQUESTS {
            let head = match read_head(&mut io, &mut buf) {
                Ok(Got::Head(h)) => h,
                Ok(Got::Closed) => return self.done(conn, peer, "closed"),
                Ok(Got::Bad(status, why)) => {
                    let _ = respond(&mut io, status, "text/plain", why.as_bytes(), true, false);
                    return self.done(conn, peer, why);
                }
                Err(e) => return self.done(conn, peer, &e.to_string()),
            };
            if head.path == self.hub.config().path && head.method == "GET" {
                if !self.key_ok(&head, peer) {
                    let _ = respond(
                        &mut io,
                        403,
                        "text/plain",
                        FORBIDDEN.as_bytes(),
                        true,
                        false,
                    );
                    return self.done(conn, peer, "wrong key");
                }
                let transport = TlsStream {
                    tls: io,
                    replay: std::mem::take(&mut buf),
                    pos: 0,
                };
                return self.hub.run(conn, peer, transport, " over wss");
            }
            let head_only = head.method == "HEAD";
            let close = head.close;
            let sent = match (head.method.as_str(), head.path.as_str()) {
                ("GET" | "HEAD", path)
                    if (matches!(path, "/" | "/index.html" | "/scene.json")
                        || path.starts_with(MESHES))
                        && !self.key_ok(&head, peer) =>
                {
                    respond(
                        &mut io,
                        403,
                        "text/plain",
                        FORBIDDEN.as_bytes(),
                        true,
                        head_only,
                    )
                    .and(Err(io::ErrorKind::PermissionDenied.into()))
                }
                ("GET" | "HEAD", "/scene.json") => {
                    let body = self.scene_json.clone();
                    respond(&mut io, 200, "application/json", &body, close, head_only)
                }
                ("GET" | "HEAD", path) if path.starts_with(MESHES) => match self.meshes.get(path) {
                    Some(buffer) => {
                        let (body, gzipped) = buffer.body(head.gzip);
                        let headers = if gzipped {
                            MESH_HEADERS_GZIP
                        } else {
                            MESH_HEADERS
                        };
                        respond_with(
                            &mut io,
                            200,
                            "application/octet-stream",
                            body,
                            headers,
                            close,
                            head_only,
                        )
                    }
                    None => respond(
                        &mut io,
                        404,
                        "text/plain",
                        b"no such mesh\n",
                        close,
                        head_only,
                    ),
                },
                ("GET" | "HEAD", path) => match web::file(path) {
                    Some((mime, body)) => respond(&mut io, 200, mime, body, close, head_only),
                    None => respond(&mut io, 404, "text/plain", b"not found\n", close, head_only),
                },
                _ => respond(&mut io, 405, "text/plain", b"GET only\n", true, false)
                    .and(Err(io::ErrorKind::Unsupported.into())),
            };
            if sent.is_err() || close {
                return self.done(conn, peer, "request served");
            }
            buf.drain(..head.len);
            io.sock.deadline = Some(Instant::now() + IDLE);
        }
        self.done(conn, peer, "request limit")
    }

    fn done(&self, conn: u64, _peer: SocketAddr, _why: &str) {
        self.hub.end_handshake(conn);
    }

    /// Whether the request carries the pairing key; if not, an alert for the panel.
    fn key_ok(&self, head: &Head, peer: SocketAddr) -> bool {
        let checked = net::check_pairing_key(head.key.as_deref(), &self.key);
        if let Err(what) = checked {
            let suppressed = self
                .refusals
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .allow();
            if let Some(n) = suppressed {
                let text = format!(
                    "{peer} asked for {} with {what} pairing key: refused (403){}",
                    head.path,
                    net::suppressed_note(n)
                );
                info!("xr: {text}");
                self.hub.notify(ServerEvent::Alert {
                    code: "XR_KEY_REFUSED",
                    text,
                });
            }
        }
        checked.is_ok()
    }
}

/// Where the mesh buffers are served.
const MESHES: &str = "/meshes/";
/// A mesh buffer's URL carries a hash of its bytes (`?v=…`, see `/scene.json`), so it may be
/// cached for good. `Vary`: the same URL is sent gzipped or not by `Accept-Encoding`.
const MESH_HEADERS: &str = "Cache-Control: private, max-age=3600, immutable\r\n\
                            Vary: Accept-Encoding\r\n";
const MESH_HEADERS_GZIP: &str = "Cache-Control: private, max-age=3600, immutable\r\n\
                                 Vary: Accept-Encoding\r\nContent-Encoding: gzip\r\n";

const FORBIDDEN: &str = "armsim: this page needs the pairing key: open the URL armsim logged at \
                         start (https://ADDR:PORT/?key=KEY)\n";

/// Reads until `buf` holds a complete request head (bytes after it stay in `buf`).
fn read_head(io: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<Got> {
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 48];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(len)) => {
                let target = req.path.unwrap_or("/");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let key = net::key_in_query(query).map(String::from);
                let connection = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("connection"))
                    .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase());
                let close = req.version == Some(0)
                    || connection.is_some_and(|c| c.split(',').any(|t| t.trim() == "close"));
                let gzip = req
                    .headers
                    .iter()
                    .filter(|h| h.name.eq_ignore_ascii_case("accept-encoding"))
                    .any(|h| accepts_gzip(&String::from_utf8_lossy(h.value)));
                return Ok(Got::Head(Head {
                    method: req.method.unwrap_or("").to_string(),
                    path: path.to_string(),
                    key,
                    close,
                    gzip,
                    len,
                }));
            }
            Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
                return Ok(Got::Bad(431, "request head too large\n"));
            }
            Ok(httparse::Status::Partial) => {}
            Err(httparse::Error::TooManyHeaders) => {
                return Ok(Got::Bad(431, "too many header fields\n"));
            }
            Err(_) => return Ok(Got::Bad(400, "malformed HTTP request\n")),
        }
        match io.read(&mut chunk) {
            Ok(0) if buf.is_empty() => return Ok(Got::Closed),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            // The socket's timeout fired before the deadline; `read_before` ends it at the deadline.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether an `Accept-Encoding` value accepts gzip: `gzip` (or `x-gzip`) listed at a q above 0,
/// or, where it is not listed, `*` at a q above 0.
fn accepts_gzip(value: &str) -> bool {
    let (mut gzip, mut star) = (None::<f32>, None);
    for item in value.split(',') {
        let mut params = item.split(';');
        let coding = params.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = params
            .find_map(|p| {
                let p = p.trim();
                let q = p.strip_prefix("q=").or_else(|| p.strip_prefix("Q="))?;
                Some(q.trim().parse::<f32>().unwrap_or(0.0))
            })
            .unwrap_or(1.0);
        match coding.as_str() {
            "gzip" | "x-gzip" => gzip = Some(gzip.map_or(q, |g| g.max(q))),
            "*" => star = Some(q),
            _ => {}
        }
    }
    gzip.or(star).is_some_and(|q| q > 0.0)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

fn respond(
    io: &mut StreamOwned<ServerConnection, HandshakeStream>,
    status: u16,
    mime: &str,
    body: &[u8],
    close: bool,
    head_only: bool,
) -> io::Result<()> {
    respond_with(
        io,
        status,
        mime,
        body,
        "Cache-Control: no-store\r\n",
        close,
        head_only,
    )
}

/// `headers`: header lines, each ended by CRLF, with a `Cache-Control` among them.
fn respond_with(
    io: &mut StreamOwned<ServerConnection, HandshakeStream>,
    status: u16,
    mime: &str,
    body: &[u8],
    headers: &str,
    close: bool,
    head_only: bool,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {mime}\r\nContent-Length: {}\r\n\
         {headers}X-Content-Type-Options: nosniff\r\n\
         Connection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if close { "close" } else { "keep-alive" }
    );
    io.write_all(head.as_bytes())?;
    if !head_only {
        io.write_all(body)?;
    }
    io.flush()?;
    if close {
        io.conn.send_close_notify();
        let _ = io.flush();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Got {
        let mut buf = text.as_bytes().to_vec();
        read_head(&mut io::empty(), &mut buf).unwrap()
    }

    #[test]
    fn heads_give_path_key_and_keep_alive() {
        let Got::Head(h) = parse("GET /scene.json?x=1&key=abc HTTP/1.1\r\nHost: a\r\n\r\n") else {
            panic!("a head");
        };
        assert_eq!(
            (h.method.as_str(), h.path.as_str(), h.key.as_deref()),
            ("GET", "/scene.json", Some("abc"))
        );
        assert!(!h.close);
        let Got::Head(h) = parse("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n") else {
            panic!("a head");
        };
        assert!(h.close && h.key.is_none() && !h.gzip);
        let Got::Head(h) =
            parse("GET /meshes/0/0.bin HTTP/1.1\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n")
        else {
            panic!("a head");
        };
        assert!(h.gzip);
    }

    #[test]
    fn accept_encoding_is_read_with_its_q_values() {
        for (value, gzip) in [
            ("gzip", true),
            ("deflate, GZip;q=0.5", true),
            ("br;q=1.0, gzip;q=0.8, *;q=0.1", true),
            ("*", true),
            ("x-gzip", true),
            ("identity", false),
            ("br, deflate", false),
            ("gzip;q=0", false),
            ("gzip; q=0.0, identity", false),
            ("", false),
            ("gzip;q=0, *", false),
            ("*;q=0", false),
            ("identity, *;q=0.5", true),
        ] {
            assert_eq!(accepts_gzip(value), gzip, "{value:?}");
        }
    }

    #[test]
    fn bad_heads_are_refused_not_panicked_on() {
        assert!(matches!(
            parse("\x00\x01 nonsense\r\n\r\n"),
            Got::Bad(400, _)
        ));
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(parse(&huge), Got::Bad(431, _)));
        let many: String = (0..60).map(|i| format!("H{i}: v\r\n")).collect();
        assert!(matches!(
            parse(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            Got::Bad(431, _)
        ));
        assert!(matches!(parse(""), Got::Closed));
        let mut partial = b"GET / HT".to_vec();
        assert!(read_head(&mut io::empty(), &mut partial).is_err());
    }
}
