//! Watchers over real sockets: many monitors and many teleop observers are
//! served by one writer per port. What must hold whatever the implementation: every watcher gets
//! the same frames, each teleop session keeps its own envelope (`session_id`, monotonic `seq`,
//! its own `rtt_ms_est`), and a watcher that stops reading is closed after its write deadline
//! while the others keep receiving. Behaviour only: nothing here times the server's speed.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::sexp::plugin::{self, MonitorPort, SexpOptions};
use armsim::protocol::sexp::writer::WRITE_TIMEOUT as MONITOR_WRITE_TIMEOUT;
use armsim::protocol::teleop::io::WRITE_TIMEOUT as TELEOP_WRITE_TIMEOUT;
use armsim::protocol::teleop::plugin::{TeleopOptions, TeleopServer};
use armsim::sim::ClockMode;
use bevy::prelude::App;
use common::sexp::Peer;
use common::teleop::Client;
use common::*;

fn monitor_app(clock: ClockMode, cycle_steps: u32) -> (App, SocketAddr) {
    let mut app = headless(default_scene(), clock);
    let (_, monitor) = plugin::add(
        &mut app,
        SexpOptions {
            monitor: Some("127.0.0.1:0".parse().unwrap()),
            cycle_steps,
            ..Default::default()
        },
    )
    .expect("binds");
    finish_setup(&mut app);
    (app, monitor.unwrap())
}

/// `(time (now T))` of a world frame, as written.
fn now_of(frame: &[u8]) -> String {
    let text = String::from_utf8_lossy(frame);
    let at = text
        .find("(now ")
        .expect("a world frame has (time (now …))");
    text[at + 5..]
        .split(')')
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn many_monitors_receive_the_same_frames() {
    const MONITORS: usize = 24;
    let (mut app, addr) = monitor_app(ClockMode::RealTime { speed: 1.0 }, 4);
    let client = std::thread::spawn(move || {
        let peers: Vec<Peer> = (0..MONITORS).map(|_| Peer::open(addr)).collect();
        let readers: Vec<_> = peers
            .into_iter()
            .map(|mut p| {
                std::thread::spawn(move || {
                    (0..40)
                        .map(|_| p.recv_bytes().expect("a world frame"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().expect("reader"))
            .collect::<Vec<_>>()
    });
    let frames = drive(&mut app, client, Duration::from_micros(300));
    // The same sim time means the same bytes, whoever reads them (the first frame of each
    // monitor carries the referee's history and may differ).
    let mut by_time: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut shared = 0;
    for of_one in &frames {
        for f in &of_one[1..] {
            match by_time.get(&now_of(f)) {
                Some(seen) => {
                    assert_eq!(seen, f, "two monitors got different frames for one cycle");
                    shared += 1;
                }
                None => {
                    by_time.insert(now_of(f), f.clone());
                }
            }
        }
    }
    assert!(
        shared >= 20 * (MONITORS - 1),
        "monitors saw too few cycles in common ({shared})"
    );
}

#[test]
fn a_monitor_that_never_reads_is_closed_after_its_write_deadline_while_others_keep_receiving() {
    // Fast clock and a frame every step: the stalled monitor's socket fills within a second.
    let (mut app, addr) = monitor_app(ClockMode::Fast, 1);
    let stalled = Peer::open(addr);
    let connected = Instant::now();
    let monitors = |app: &App| app.world().resource::<MonitorPort>().conns.len();
    let watch = Watchers {
        count: &monitors,
        what: "monitor",
        write_timeout: MONITOR_WRITE_TIMEOUT,
    };
    let reader = Reader::spawn(
        move || Peer::open(addr),
        |good| {
            good.recv_bytes().expect("the reading monitor stays served");
        },
    );
    watch.the_stalled_one_is_closed(&mut app, connected, reader);
    drop(stalled);
}

#[test]
fn teleop_observers_get_their_own_session_id_and_monotonic_seq() {
    const SESSIONS: usize = 12;
    let logs = common::teleop::serve(default_scene(), |addr| {
        let clients: Vec<Client> = (0..SESSIONS).map(|_| Client::connected(addr)).collect();
        let readers: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                std::thread::spawn(move || {
                    for _ in 0..30 {
                        c.state();
                    }
                    (c.session.clone(), c.log)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().expect("reader"))
            .collect::<Vec<_>>()
    });
    let mut ids: Vec<&str> = Vec::new();
    for (session, log) in &logs {
        ids.push(session);
        let mut last_seq = 0;
        let mut frames = 0;
        for v in log {
            let seq = v["seq"].as_u64().expect("seq");
            assert!(seq > last_seq, "seq went {last_seq} → {seq}");
            last_seq = seq;
            assert_eq!(v["session_id"], session.as_str());
            assert!(v["t_send_ms"].as_u64().is_some());
            if v["msg_type"] == "state_frame" {
                frames += 1;
                let p = &v["payload"];
                assert!(p["stats"]["rtt_ms_est"].as_f64().is_some(), "{v}");
                assert!(p["q_rad"].as_array().is_some_and(|q| !q.is_empty()));
                assert!(p["extensions"]["link_poses"].is_object());
            }
        }
        assert!(frames >= 30);
        // The server's ping (sent at CONNECT, then every 500 ms) has come back by now.
        let last = log.iter().rev().find(|v| v["msg_type"] == "state_frame");
        let rtt = last.unwrap()["payload"]["stats"]["rtt_ms_est"].as_f64();
        assert!(rtt.is_some_and(|r| r > 0.0), "no round trip measured");
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), SESSIONS, "session ids are distinct");
}

#[test]
fn a_teleop_observer_that_never_reads_is_closed_while_the_others_keep_receiving() {
    let mut app = headless(default_scene(), ClockMode::RealTime { speed: 1.0 });
    // State frames as often as frames run: the stalled session's socket fills within seconds.
    let addr = armsim::protocol::teleop::plugin::add(
        &mut app,
        TeleopOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            state_rate_hz: 2000.0,
            controller_grace: None,
            key: None,
        },
    )
    .expect("binds");
    finish_setup(&mut app);
    let sessions = |app: &App| {
        app.world()
            .resource::<TeleopServer>()
            .sessions()
            .iter()
            .count()
    };
    let stalled = std::thread::spawn(move || Client::connected(addr));
    let stalled = drive(&mut app, stalled, Duration::ZERO);
    let connected = Instant::now();
    let watch = Watchers {
        count: &sessions,
        what: "session",
        write_timeout: TELEOP_WRITE_TIMEOUT,
    };
    let reader = Reader::spawn(
        move || Client::connected(addr),
        |good| {
            good.state();
            good.log.clear();
        },
    );
    watch.the_stalled_one_is_closed(&mut app, connected, reader);
    drop(stalled);
}

/// The watcher that reads: a thread that opens it, then reads message after message, counting
/// them, until stopped.
struct Reader {
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Reader {
    fn spawn<C>(
        open: impl FnOnce() -> C + Send + 'static,
        next: impl Fn(&mut C) + Send + 'static,
    ) -> Self {
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (received, stop) = (received.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut good = open();
                while !stop.load(Ordering::Relaxed) {
                    next(&mut good);
                    received.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        Self {
            received,
            stop,
            thread,
        }
    }
}

/// Two watchers of one port, one of them stalled (it never reads).
struct Watchers<'a> {
    /// How many the port has open.
    count: &'a dyn Fn(&App) -> usize,
    what: &'static str,
    write_timeout: Duration,
}

impl Watchers<'_> {
    /// Runs frames until the stalled watcher is closed, not before its write deadline (counted
    /// from `connected`), then checks that the reading one is still served, and stops it.
    fn the_stalled_one_is_closed(&self, app: &mut App, connected: Instant, reader: Reader) {
        let Reader {
            received,
            stop,
            thread: reader,
        } = reader;
        let what = self.what;
        let deadline = Instant::now() + Duration::from_secs(60);
        while (self.count)(app) < 2 {
            assert!(
                Instant::now() < deadline,
                "the second {what} never connected"
            );
            app.update();
        }
        while (self.count)(app) > 1 {
            assert!(
                Instant::now() < deadline,
                "the stalled {what} was never closed"
            );
            app.update();
        }
        let closed_after = connected.elapsed();
        assert!(
            closed_after >= self.write_timeout,
            "closed after {closed_after:?}, before its write deadline"
        );
        let before = received.load(Ordering::Relaxed);
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            app.update();
        }
        assert!(
            received.load(Ordering::Relaxed) > before,
            "the reading {what} stopped receiving"
        );
        stop.store(true, Ordering::Relaxed);
        let until = Instant::now() + Duration::from_secs(5);
        while !reader.is_finished() && Instant::now() < until {
            app.update();
        }
        reader.join().expect("reader");
    }
}

/// The threads of process `pid` (Linux: its `/proc/PID/task` entries).
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("/proc is readable")
        .count()
}

/// Watchers cost no thread of their own: 64 teleop observers (past their handshake) add none
/// beyond a few, 64 monitors one each (its reader, asleep in `poll`), not the two of a reader
/// and a writer. Counted on an armsim of its own, so no other test's threads are in the count.
#[test]
fn watchers_do_not_cost_a_thread_each() {
    const N: usize = 64;
    let mut sim = common::child::Armsim::start(
        "threads",
        &[
            "--no-xr",
            "--teleop-port",
            "0",
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
        ],
    );
    let (teleop, monitor) = (sim.listening("teleop"), sim.listening("monitor"));
    let pid = sim.child.id();
    std::thread::sleep(Duration::from_millis(500));
    let before = threads_of(pid);

    let mut observers: Vec<Client> = (0..N).map(|_| Client::connected(teleop)).collect();
    for c in &mut observers {
        c.state();
    }
    // Handshake threads end once their session is handed over (give a loaded machine time).
    let settle = Instant::now() + Duration::from_secs(5);
    let mut with_teleop = threads_of(pid);
    while with_teleop > before + 4 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(50));
        with_teleop = threads_of(pid);
    }

    let mut monitors: Vec<Peer> = (0..N).map(|_| Peer::open(monitor)).collect();
    for m in &mut monitors {
        assert!(m.recv().is_some(), "a monitor gets frames");
    }
    let with_monitors = threads_of(pid);
    drop(sim);

    let teleop_threads = with_teleop.saturating_sub(before);
    let monitor_threads = with_monitors.saturating_sub(with_teleop);
    assert!(
        teleop_threads <= 4,
        "{N} teleop observers added {teleop_threads} threads ({before} before)"
    );
    assert!(
        monitor_threads <= N + N / 4,
        "{N} monitors added {monitor_threads} threads (one reader each is expected)"
    );
}
