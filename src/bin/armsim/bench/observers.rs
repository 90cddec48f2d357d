//! `armsim bench observers`: what watchers cost. A headless real-time simulation runs
//! in this process with one port open (monitor, teleop `ws://` or the headset page's `wss://`);
//! its process CPU time (`getrusage`, every thread) is measured for a few seconds with nobody
//! connected, then with `n` observers connected. The observers are played by one client thread
//! with a readiness poller; its own CPU time (`CLOCK_THREAD_CPUTIME_ID`) is taken out, so the
//! difference is the server's cost of the watchers. Also printed: the frames each observer
//! received per second (min and median) and the real-time factor in both phases.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use armsim::headless::{self, StopAfter};
use armsim::protocol::sexp::framing::FrameDecoder;
use armsim::protocol::sexp::plugin::{self as sexp, SexpOptions};
use armsim::protocol::teleop::plugin::{self as teleop, TeleopOptions};
use armsim::protocol::xr::{self, CertSource, XrOptions};
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SIM_DT, SimClock};
use polling::{Event, Events, PollMode, Poller};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::json;
use tungstenite::{Message, WebSocket};

use super::{BenchError, app_on};

/// Which port the observers watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Watch {
    /// RCSSServerMJ monitors: a world frame every cycle (60 Hz).
    Monitor,
    /// TeleSpace teleop sessions on the plain `ws://` listener: state frames at 60 Hz.
    Teleop,
    /// TeleSpace teleop sessions over the headset page's `wss://` (TLS).
    Wss,
}

impl Watch {
    fn as_str(self) -> &'static str {
        match self {
            Watch::Monitor => "monitor",
            Watch::Teleop => "teleop ws://",
            Watch::Wss => "teleop wss://",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ObserversReport {
    pub scene_id: String,
    pub watch: Watch,
    pub n: usize,
    pub wall: Duration,
    /// Process CPU over wall time (1.0 = one core) with nobody connected.
    pub idle_cores: f64,
    /// The same with the observers connected, their client thread taken out.
    pub watched_cores: f64,
    /// The observers' client thread, for reference.
    pub client_cores: f64,
    pub idle_rtf: f64,
    pub watched_rtf: f64,
    /// Frames per second each observer received, sorted.
    pub rates: Vec<f64>,
}

impl ObserversReport {
    /// Server CPU per observer, in ms of CPU per second.
    pub fn ms_per_observer(&self) -> f64 {
        (self.watched_cores - self.idle_cores) * 1e3 / self.n.max(1) as f64
    }
}

impl fmt::Display for ObserversReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |q: f64| {
            if self.rates.is_empty() {
                f64::NAN
            } else {
                self.rates[((self.rates.len() - 1) as f64 * q).round() as usize]
            }
        };
        writeln!(
            f,
            "scene {}: {} {} observers on loopback, real time, process CPU (getrusage) over {:.1} s",
            self.scene_id,
            self.n,
            self.watch.as_str(),
            self.wall.as_secs_f64()
        )?;
        writeln!(
            f,
            "  nobody connected : {:>6.2}% of a core, real-time factor {:.3}",
            self.idle_cores * 100.0,
            self.idle_rtf
        )?;
        writeln!(
            f,
            "  {:>4} observers   : {:>6.2}% of a core, real-time factor {:.3} (their client thread, {:.1}% of a core, not counted)",
            self.n,
            self.watched_cores * 100.0,
            self.watched_rtf,
            self.client_cores * 100.0
        )?;
        writeln!(
            f,
            "  per observer     : {:.3} ms of CPU per second ({:.2}% of a core for all of them)",
            self.ms_per_observer(),
            (self.watched_cores - self.idle_cores) * 100.0
        )?;
        write!(
            f,
            "  frames received  : min {:.1}/s, median {:.1}/s per observer",
            rate(0.0),
            rate(0.5)
        )
    }
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    // SAFETY: clock_gettime only writes the struct it is given.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What the client thread and the measuring thread share.
struct Shared {
    /// Observers that received their first frame.
    ready: AtomicUsize,
    /// The client thread's CPU time (ns), updated after each wake-up.
    client_cpu: AtomicU64,
    /// Frames each observer received so far.
    frames: Vec<AtomicU64>,
    stop: AtomicBool,
    /// Why the client thread gave up, if it did.
    failed: std::sync::Mutex<Option<String>>,
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

enum Observer {
    Monitor(TcpStream, FrameDecoder),
    Ws(Box<WebSocket<TcpStream>>),
    Wss(Box<WebSocket<Tls>>),
}

impl Observer {
    fn tcp(&self) -> &TcpStream {
        match self {
            Observer::Monitor(s, _) => s,
            Observer::Ws(ws) => ws.get_ref(),
            Observer::Wss(ws) => &ws.get_ref().sock,
        }
    }

    /// Reads everything there is; the frames it held.
    fn drain(&mut self, buf: &mut [u8]) -> io::Result<u64> {
        match self {
            Observer::Monitor(s, decoder) => {
                loop {
                    match s.read(buf) {
                        Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                        Ok(n) => decoder.push(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                let mut frames = 0;
                while decoder
                    .next_frame()
                    .map_err(|e| io::Error::other(e.to_string()))?
                    .is_some()
                {
                    frames += 1;
                }
                Ok(frames)
            }
            Observer::Ws(ws) => drain_ws(ws),
            Observer::Wss(ws) => drain_ws(ws),
        }
    }
}

/// State frames read from a non-blocking WebSocket; pongs to the server's pings go out too.
fn drain_ws<S: Read + Write>(ws: &mut WebSocket<S>) -> io::Result<u64> {
    let mut frames = 0;
    loop {
        match ws.read() {
            Ok(Message::Text(t)) if t.as_str().contains("\"msg_type\":\"state_frame\"") => {
                frames += 1
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
    }
    match ws.flush() {
        Ok(()) => Ok(frames),
        Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => Ok(frames),
        Err(e) => Err(io::Error::other(e.to_string())),
    }
}

fn connect_msg(scene_id: &str) -> Message {
    let env = json!({"schema_version": "1.0.0-revA", "msg_type": "ui_cmd", "seq": 1,
        "t_send_ms": 1, "session_id": "",
        "payload": {"command": "CONNECT", "requested_scene_config_id": scene_id},
        "extensions": {}});
    Message::text(env.to_string())
}

/// Where the observers connect, and how.
#[derive(Clone)]
enum Target {
    Monitor(SocketAddr),
    Ws {
        addr: SocketAddr,
        path: String,
    },
    Wss {
        addr: SocketAddr,
        key: String,
        tls: Arc<ClientConfig>,
    },
}

fn open(target: &Target, scene_id: &str) -> Result<Observer, String> {
    let err = |e: &dyn fmt::Display| e.to_string();
    match target {
        Target::Monitor(addr) => {
            let s = TcpStream::connect(addr).map_err(|e| err(&e))?;
            s.set_nonblocking(true).map_err(|e| err(&e))?;
            Ok(Observer::Monitor(s, FrameDecoder::default()))
        }
        Target::Ws { addr, path } => {
            let s = TcpStream::connect(addr).map_err(|e| err(&e))?;
            s.set_nodelay(true).map_err(|e| err(&e))?;
            let url = format!("ws://{addr}{path}");
            let (mut ws, _) = tungstenite::client::client(url, s).map_err(|e| err(&e))?;
            ws.send(connect_msg(scene_id)).map_err(|e| err(&e))?;
            ws.get_ref().set_nonblocking(true).map_err(|e| err(&e))?;
            Ok(Observer::Ws(Box::new(ws)))
        }
        Target::Wss { addr, key, tls } => {
            let s = TcpStream::connect(addr).map_err(|e| err(&e))?;
            s.set_nodelay(true).map_err(|e| err(&e))?;
            let name = ServerName::try_from("localhost").map_err(|e| err(&e))?;
            let conn = ClientConnection::new(tls.clone(), name).map_err(|e| err(&e))?;
            let url = format!("wss://localhost:{}/ws?key={key}", addr.port());
            let (mut ws, _) =
                tungstenite::client::client(url, StreamOwned::new(conn, s)).map_err(|e| err(&e))?;
            ws.send(connect_msg(scene_id)).map_err(|e| err(&e))?;
            ws.get_ref()
                .sock
                .set_nonblocking(true)
                .map_err(|e| err(&e))?;
            Ok(Observer::Wss(Box::new(ws)))
        }
    }
}

/// The client thread: connects `n` observers, then reads them all until told to stop.
fn clients(target: Target, scene_id: String, n: usize, shared: Arc<Shared>) {
    let fail = |why: String| {
        *shared.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    };
    let poller = match Poller::new() {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let mut observers = Vec::with_capacity(n);
    for i in 0..n {
        let o = match open(&target, &scene_id) {
            Ok(o) => o,
            Err(e) => return fail(format!("observer {i}: {e}")),
        };
        // SAFETY (polling's contract): every socket is deleted before it is dropped, below.
        if let Err(e) =
            unsafe { poller.add_with_mode(o.tcp(), Event::readable(i), PollMode::Level) }
        {
            return fail(e.to_string());
        }
        observers.push(Some(o));
    }
    let mut events = Events::new();
    let mut buf = vec![0u8; 256 * 1024];
    // A server closing an observer would show as a level-triggered event forever: drop it.
    while !shared.stop.load(Ordering::Relaxed) {
        events.clear();
        if poller
            .wait(&mut events, Some(Duration::from_millis(100)))
            .is_err()
        {
            continue;
        }
        for ev in events.iter() {
            let Some(slot) = observers.get_mut(ev.key) else {
                continue;
            };
            let Some(o) = slot.as_mut() else {
                continue;
            };
            match o.drain(&mut buf) {
                Ok(k) if k > 0 => {
                    if shared.frames[ev.key].fetch_add(k, Ordering::Relaxed) == 0 {
                        shared.ready.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = poller.delete(o.tcp());
                    *slot = None;
                }
            }
        }
        shared.client_cpu.store(thread_cpu_ns(), Ordering::Relaxed);
    }
    for o in observers.iter().flatten() {
        let _ = poller.delete(o.tcp());
    }
}

/// A TLS client that trusts only the certificate generated in `dir`.
fn client_tls(dir: &std::path::Path) -> Result<Arc<ClientConfig>, BenchError> {
    let cert = CertificateDer::from_pem_file(dir.join("xr-cert.pem"))
        .map_err(|e| BenchError::Client(format!("the generated certificate: {e}")))?;
    let mut roots = RootCertStore::empty();
    roots
        .add(cert)
        .map_err(|e| BenchError::Client(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| BenchError::Client(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Runs the app for `wall`; (process CPU over wall time, real-time factor).
fn measure(app: &mut bevy::app::App, wall: Duration) -> (f64, f64, Duration) {
    let steps0 = app.world().resource::<SimClock>().steps;
    let cpu0 = super::process_cpu();
    let t0 = Instant::now();
    headless::run(app, StopAfter::Wall(wall));
    let took = t0.elapsed();
    let cpu = (super::process_cpu() - cpu0).as_secs_f64();
    let steps = app.world().resource::<SimClock>().steps - steps0;
    let secs = took.as_secs_f64();
    (cpu / secs, steps as f64 * SIM_DT / secs, took)
}

/// Measures `n` observers of `watch` on `scene` for `wall` (and as long with nobody connected).
pub fn run(
    scene: Arc<Scene>,
    watch: Watch,
    n: usize,
    wall: Duration,
) -> Result<ObserversReport, BenchError> {
    if n == 0 || wall.is_zero() {
        return Err(BenchError::NoSteps);
    }
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut app = app_on(&scene, ClockMode::RealTime { speed: 1.0 });
    let scene_id = scene.config.scene_id.clone();
    let mut cert_dir: Option<PathBuf> = None;
    let target = match watch {
        Watch::Monitor => {
            let (_, monitor) = sexp::add(
                &mut app,
                SexpOptions {
                    monitor: Some(loopback),
                    ..Default::default()
                },
            )?;
            Target::Monitor(monitor.ok_or_else(|| BenchError::Client("no monitor port".into()))?)
        }
        Watch::Teleop | Watch::Wss => {
            let addr = teleop::add(
                &mut app,
                TeleopOptions {
                    addr: loopback,
                    state_rate_hz: 60.0,
                    controller_grace: None,
                    key: None,
                },
            )?;
            let path = scene.config.networking.ws_path.clone();
            if watch == Watch::Teleop {
                Target::Ws { addr, path }
            } else {
                let dir = std::env::temp_dir()
                    .join(format!("armsim-bench-observers-{}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                let key = "bench-observers-key".to_string();
                let info = xr::add(
                    &mut app,
                    XrOptions {
                        bind: loopback.ip(),
                        port: 0,
                        key: key.clone(),
                        cert: CertSource::Generated { dir: dir.clone() },
                    },
                )
                .map_err(|e| BenchError::Client(format!("{e:#}")))?;
                let tls = client_tls(&dir)?;
                cert_dir = Some(dir);
                Target::Wss {
                    addr: info.addr,
                    key,
                    tls,
                }
            }
        }
    };
    headless::finish_setup(&mut app);
    headless::run(&mut app, StopAfter::Wall(Duration::from_millis(300)));
    let (idle_cores, idle_rtf, _) = measure(&mut app, wall);

    let shared = Arc::new(Shared {
        ready: AtomicUsize::new(0),
        client_cpu: AtomicU64::new(0),
        frames: (0..n).map(|_| AtomicU64::new(0)).collect(),
        stop: AtomicBool::new(false),
        failed: std::sync::Mutex::new(None),
    });
    let client = {
        let shared = shared.clone();
        let scene_id = scene_id.clone();
        thread::Builder::new()
            .name("bench-observers".into())
            .spawn(move || clients(target, scene_id, n, shared))?
    };
    // The app runs while the observers connect (teleop sessions are answered by the ECS).
    let deadline = Instant::now() + Duration::from_secs(60);
    while shared.ready.load(Ordering::Relaxed) < n {
        if let Some(why) = shared
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            shared.stop.store(true, Ordering::Relaxed);
            let _ = client.join();
            return Err(BenchError::Client(why));
        }
        if Instant::now() > deadline {
            shared.stop.store(true, Ordering::Relaxed);
            let _ = client.join();
            return Err(BenchError::Client(format!(
                "only {} of {n} observers got a frame within 60 s",
                shared.ready.load(Ordering::Relaxed)
            )));
        }
        headless::run(&mut app, StopAfter::Wall(Duration::from_millis(100)));
    }
    headless::run(&mut app, StopAfter::Wall(Duration::from_millis(500)));
    let frames0: Vec<u64> = shared
        .frames
        .iter()
        .map(|f| f.load(Ordering::Relaxed))
        .collect();
    let client0 = shared.client_cpu.load(Ordering::Relaxed);
    let (cores, watched_rtf, took) = measure(&mut app, wall);
    let client1 = shared.client_cpu.load(Ordering::Relaxed);
    let secs = took.as_secs_f64();
    let mut rates: Vec<f64> = shared
        .frames
        .iter()
        .zip(frames0)
        .map(|(f, f0)| (f.load(Ordering::Relaxed) - f0) as f64 / secs)
        .collect();
    rates.sort_by(f64::total_cmp);
    shared.stop.store(true, Ordering::Relaxed);
    let _ = client.join();
    if let Some(dir) = cert_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    let client_cores = client1.saturating_sub(client0) as f64 * 1e-9 / secs;
    Ok(ObserversReport {
        scene_id,
        watch,
        n,
        wall,
        idle_cores,
        watched_cores: cores - client_cores,
        client_cores,
        idle_rtf,
        watched_rtf,
        rates,
    })
}
