//! What armsim opens to the network, as a user starts it: which address each listener binds
//! with and without its flag, the loud line an unauthenticated listener logs beyond loopback,
//! and the pairing key the plain ws:// teleop listener asks of a peer that is not on loopback.
//! That peer lives in a network namespace this test makes (a veth pair with addresses from
//! TEST-NET-1, 192.0.2.0/24, which is never routed); nothing is sent to any other address.
//! Making the namespace needs root and iproute2, as in CI.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running armsim whose log lines arrive on a channel; killed on drop.
struct Armsim {
    child: Child,
    lines: mpsc::Receiver<String>,
    log: Vec<String>,
}

impl Drop for Armsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Armsim {
    /// Starts a headless real-time armsim with every listener on an ephemeral port (lockstep
    /// included) and `args`, its certificate in a scratch folder.
    fn start(name: &str, args: &[&str]) -> Self {
        let config =
            std::env::temp_dir().join(format!("armsim-exposure-{name}-{}", std::process::id()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env("ARMSIM_CONFIG_DIR", &config)
            .args([
                "--headless",
                "--realtime",
                "--teleop-port",
                "0",
                "--xr-port",
                "0",
            ])
            .args([
                "--agent-port",
                "0",
                "--monitor-port",
                "0",
                "--remote-control-port",
                "0",
            ])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("armsim starts");
        let (tx, lines) = mpsc::channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        Self {
            child,
            lines,
            log: Vec::new(),
        }
    }

    /// Reads the log until a line contains `what`; returns that line.
    fn wait_for(&mut self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        if let Some(l) = self.log.iter().find(|l| l.contains(what)) {
            return l.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no log line with {what:?}; the log:\n{}",
                    self.log.join("\n")
                ),
            }
        }
    }

    /// Where `protocol` says it is listening (`lockstep: listening on 127.0.0.1:PORT …`).
    fn listening(&mut self, protocol: &str) -> SocketAddr {
        let line = self.wait_for(&format!("{protocol}: listening on "));
        let rest = line.split("listening on ").nth(1).unwrap();
        let addr = rest
            .trim_start_matches("ws://")
            .split(['/', ' '])
            .next()
            .unwrap();
        addr.parse()
            .unwrap_or_else(|e| panic!("{addr:?} in {line:?}: {e}"))
    }

    /// The loud lines of start-up (the headset page is the last listener to start).
    fn warnings(&mut self) -> Vec<String> {
        self.wait_for("xr: listening on ");
        self.log
            .iter()
            .filter(|l| l.contains("OPEN TO THE NETWORK WITHOUT AUTHENTICATION"))
            .cloned()
            .collect()
    }
}

const LISTENERS: [&str; 5] = ["lockstep", "agent", "monitor", "teleop", "xr"];

#[test]
fn every_listener_binds_loopback_unless_its_own_flag_opens_it() {
    let loopback: IpAddr = [127, 0, 0, 1].into();
    let any: IpAddr = [0, 0, 0, 0].into();

    let mut plain = Armsim::start("plain", &[]);
    for l in LISTENERS {
        assert_eq!(plain.listening(l).ip(), loopback, "{l} without flags");
    }
    assert!(plain.warnings().is_empty(), "{:?}", plain.warnings());
    drop(plain);

    // The headset path (`--bind`, as the README once said, is the page's own flag now) opens
    // the page only, and nothing unauthenticated.
    let mut headset = Armsim::start("headset", &["--bind", "0.0.0.0"]);
    assert_eq!(headset.listening("xr").ip(), any);
    for l in ["lockstep", "agent", "monitor", "teleop"] {
        assert_eq!(headset.listening(l).ip(), loopback, "{l} with --bind");
    }
    assert!(headset.warnings().is_empty(), "{:?}", headset.warnings());
    drop(headset);

    // Each opened on purpose: each unauthenticated one says so, once.
    let mut open = Armsim::start(
        "open",
        &[
            "--lockstep-bind",
            "0.0.0.0",
            "--agent-bind",
            "0.0.0.0",
            "--monitor-bind",
            "0.0.0.0",
            "--teleop-bind",
            "0.0.0.0",
            "--teleop-no-key",
        ],
    );
    for l in ["lockstep", "agent", "monitor", "teleop"] {
        assert_eq!(open.listening(l).ip(), any, "{l} with its flag");
    }
    assert_eq!(open.listening("xr").ip(), loopback);
    let warnings = open.warnings();
    for l in ["lockstep", "agent", "monitor", "teleop"] {
        let n = warnings.iter().filter(|w| w.contains(l)).count();
        assert!(n >= 1, "no loud line for {l}: {warnings:?}");
    }
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    drop(open);

    // Opened with the key (the default): no warning, the key URL is logged instead.
    let mut keyed = Armsim::start(
        "keyed",
        &["--teleop-bind", "0.0.0.0", "--xr-key", "k3y-for-the-test"],
    );
    assert_eq!(keyed.listening("teleop").ip(), any);
    keyed.wait_for("teleop: peers beyond loopback need the pairing key: ws://0.0.0.0:");
    assert!(keyed.warnings().is_empty());
}

/// A veth pair between this namespace and a fresh one; removed on drop.
struct Netns {
    name: String,
    host_if: String,
    host_ip: IpAddr,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("this test needs iproute2 (`ip`) and root, as in CI: {e}"));
    assert!(
        out.status.success(),
        "`ip {}` failed (this test needs root, as in CI): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Netns {
    fn new() -> Self {
        let id = std::process::id() % 60;
        let name = format!("armsim-t{}", std::process::id());
        let host_if = format!("arh{}", std::process::id() % 100_000);
        let peer_if = format!("arp{}", std::process::id() % 100_000);
        // A /30 of TEST-NET-1 per process: .1 here, .2 in the namespace.
        let host_ip = format!("192.0.2.{}", id * 4 + 1);
        let peer_ip = format!("192.0.2.{}", id * 4 + 2);
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let _ = Command::new("ip").args(["link", "del", &host_if]).output();
        ip(&["netns", "add", &name]);
        let ns = Self {
            name: name.clone(),
            host_if: host_if.clone(),
            host_ip: host_ip.parse().unwrap(),
        };
        ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", &peer_if,
        ]);
        ip(&["link", "set", &peer_if, "netns", &name]);
        ip(&["addr", "add", &format!("{host_ip}/30"), "dev", &host_if]);
        ip(&["link", "set", &host_if, "up"]);
        let exec = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &name, "ip"];
            all.extend_from_slice(args);
            ip(&all);
        };
        exec(&["addr", "add", &format!("{peer_ip}/30"), "dev", &peer_if]);
        exec(&["link", "set", &peer_if, "up"]);
        exec(&["link", "set", "lo", "up"]);
        ns
    }

    /// Runs `f` on a thread that has entered the namespace (`setns` moves only that thread).
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("the namespace's handle");
            // SAFETY: setns on a descriptor we own; it changes only this thread's namespace.
            let rc =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the namespace's thread")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// The WebSocket handshake's outcome: Ok, or the HTTP status of the refusal.
fn upgrade(url: String) -> Result<(), u16> {
    match tungstenite::connect(url) {
        Ok(_) => Ok(()),
        Err(tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("neither an upgrade nor an HTTP refusal: {e}"),
    }
}

#[test]
fn a_peer_beyond_loopback_needs_the_key_on_the_plain_teleop_listener() {
    const KEY: &str = "netns-key-0123";
    let ns = Netns::new();
    let mut sim = Armsim::start("netns", &["--teleop-bind", "0.0.0.0", "--xr-key", KEY]);
    let port = sim.listening("teleop").port();
    let remote = SocketAddr::new(ns.host_ip, port);
    let from_ns = |url: String| ns.run(move || upgrade(url));

    assert_eq!(from_ns(format!("ws://{remote}/ws")), Err(403), "no key");
    assert_eq!(
        from_ns(format!("ws://{remote}/ws?key=wrong-key-99")),
        Err(403),
        "wrong key"
    );
    sim.wait_for("no pairing key from beyond loopback (403)");
    sim.wait_for("a wrong pairing key from beyond loopback (403)");
    assert_eq!(
        from_ns(format!("ws://{remote}/ws?key={KEY}")),
        Ok(()),
        "with the key"
    );
    // An unmodified local client (no key) keeps working.
    assert_eq!(upgrade(format!("ws://127.0.0.1:{port}/ws")), Ok(()));
    drop(sim);

    // The explicit opt-out lets the same peer in without a key, and says so loudly.
    let mut open = Armsim::start(
        "netns-open",
        &["--teleop-bind", "0.0.0.0", "--teleop-no-key"],
    );
    let port = open.listening("teleop").port();
    let remote = SocketAddr::new(ns.host_ip, port);
    assert_eq!(ns.run(move || upgrade(format!("ws://{remote}/ws"))), Ok(()));
    assert!(
        open.warnings().iter().any(|w| w.contains("teleop")),
        "{:?}",
        open.log
    );
}
