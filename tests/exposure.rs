//! What armsim opens to the network, as a user starts it: which address each listener binds
//! with and without its flag, the loud line an unauthenticated listener logs beyond loopback,
//! and the pairing key the plain ws:// teleop listener asks of a peer that is not on loopback.
//! That peer lives in a network namespace this test makes (a veth pair with a /30 of the
//! documentation ranges, never routed, that overlaps no network of this machine); nothing is
//! sent to any other address.
//! Making the namespace needs root and iproute2, as in CI.

mod common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;

use common::child::Armsim;

/// Starts a headless real-time armsim with every listener on an ephemeral port (lockstep
/// included) and `args`.
fn start(name: &str, args: &[&str]) -> Armsim {
    let mut all = vec!["--teleop-port", "0", "--xr-port", "0", "--agent-port", "0"];
    all.extend(["--monitor-port", "0", "--remote-control-port", "0"]);
    all.extend_from_slice(args);
    Armsim::start(&format!("exposure-{name}"), &all)
}

/// The loud lines of `sim`'s start-up (the headset page is the last listener to start).
fn warnings(sim: &mut Armsim) -> Vec<String> {
    sim.wait_for("xr: listening on ");
    sim.log
        .iter()
        .filter(|l| l.contains("OPEN TO THE NETWORK WITHOUT AUTHENTICATION"))
        .cloned()
        .collect()
}

const LISTENERS: [&str; 5] = ["lockstep", "agent", "monitor", "teleop", "xr"];

#[test]
fn every_listener_binds_loopback_unless_its_own_flag_opens_it() {
    let loopback: IpAddr = [127, 0, 0, 1].into();
    let any: IpAddr = [0, 0, 0, 0].into();

    let mut plain = start("plain", &[]);
    for l in LISTENERS {
        assert_eq!(plain.listening(l).ip(), loopback, "{l} without flags");
    }
    assert!(
        warnings(&mut plain).is_empty(),
        "{:?}",
        warnings(&mut plain)
    );
    drop(plain);

    // The headset path (`--bind`, as the README once said, is the page's own flag now) opens
    // the page only, and nothing unauthenticated.
    let mut headset = start("headset", &["--bind", "0.0.0.0"]);
    assert_eq!(headset.listening("xr").ip(), any);
    for l in ["lockstep", "agent", "monitor", "teleop"] {
        assert_eq!(headset.listening(l).ip(), loopback, "{l} with --bind");
    }
    assert!(
        warnings(&mut headset).is_empty(),
        "{:?}",
        warnings(&mut headset)
    );
    drop(headset);

    // Each opened on purpose: each unauthenticated one says so, once.
    let mut open = start(
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
    let loud = warnings(&mut open);
    for l in ["lockstep", "agent", "monitor", "teleop"] {
        let n = loud.iter().filter(|w| w.contains(l)).count();
        assert!(n >= 1, "no loud line for {l}: {loud:?}");
    }
    assert_eq!(loud.len(), 4, "{loud:?}");
    drop(open);

    // Opened with the key (the default): no warning, the key URL is logged instead.
    let mut keyed = start(
        "keyed",
        &["--teleop-bind", "0.0.0.0", "--xr-key", "k3y-for-the-test"],
    );
    assert_eq!(keyed.listening("teleop").ip(), any);
    keyed.wait_for("teleop: peers beyond loopback need the pairing key: ws://0.0.0.0:");
    assert!(warnings(&mut keyed).is_empty());
}

/// The IPv4 networks this machine already has (`ip -4 addr` and `ip -4 route`), as
/// (address, prefix length); the default route is left out.
fn networks_in_use() -> Vec<(u32, u32)> {
    let mut nets = Vec::new();
    for args in [["-4", "-o", "addr", "show"], ["-4", "-o", "route", "show"]] {
        let out = Command::new("ip")
            .args(args)
            .output()
            .expect("iproute2 (`ip`)");
        for word in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let (addr, len) = word.split_once('/').unwrap_or((word, "32"));
            if let (Ok(addr), Ok(len)) = (addr.parse::<Ipv4Addr>(), len.parse::<u32>())
                && len <= 32
            {
                nets.push((u32::from(addr), len));
            }
        }
    }
    nets
}

/// A /30 in the documentation ranges (TEST-NET-2, TEST-NET-3, then TEST-NET-1) that overlaps no
/// network this machine has, starting from one chosen by the process id. A sandbox may number
/// its own network from these ranges (this machine's eth0 is 192.0.2.2/24, its gateway
/// 192.0.2.1): a block taken from it would shadow them.
fn free_block() -> u32 {
    let used = networks_in_use();
    let mask = |len: u32| if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let overlaps = |block: u32| {
        used.iter().any(|&(addr, len)| {
            let len = len.min(30);
            addr & mask(len) == block & mask(len)
        })
    };
    let start = std::process::id() % 64;
    [[198, 51, 100, 0], [203, 0, 113, 0], [192, 0, 2, 0]]
        .into_iter()
        .flat_map(|net| {
            (0..64).map(move |i| u32::from(Ipv4Addr::from(net)) + ((start + i) % 64) * 4)
        })
        .find(|&block| !overlaps(block))
        .expect("a /30 of the documentation ranges that this machine does not use")
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
        let name = format!("armsim-t{}", std::process::id());
        let host_if = format!("arh{}", std::process::id() % 100_000);
        let peer_if = format!("arp{}", std::process::id() % 100_000);
        // A /30 per process: .1 here, .2 in the namespace.
        let block = free_block();
        let host_ip = Ipv4Addr::from(block + 1).to_string();
        let peer_ip = Ipv4Addr::from(block + 2).to_string();
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
        ns.wait_until_reachable();
        ns
    }

    /// Waits until a TCP connection from the namespace to this side's address goes through, so a
    /// pair that does not carry traffic (or not yet: the kernel switches a new link's queues on
    /// a moment after it is up) fails here with its own message, not as a refused handshake.
    fn wait_until_reachable(&self) {
        let listener = std::net::TcpListener::bind(SocketAddr::new(self.host_ip, 0))
            .expect("a listener on the veth's address");
        let addr = listener.local_addr().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let reached = self.run(move || {
                std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2))
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
            match reached {
                Ok(()) => return,
                Err(e) if std::time::Instant::now() > deadline => {
                    panic!("the namespace never reached {addr} over the veth pair: {e}")
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
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
    let mut sim = start("netns", &["--teleop-bind", "0.0.0.0", "--xr-key", KEY]);
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
    let mut open = start(
        "netns-open",
        &["--teleop-bind", "0.0.0.0", "--teleop-no-key"],
    );
    let port = open.listening("teleop").port();
    let remote = SocketAddr::new(ns.host_ip, port);
    assert_eq!(ns.run(move || upgrade(format!("ws://{remote}/ws"))), Ok(()));
    assert!(
        warnings(&mut open).iter().any(|w| w.contains("teleop")),
        "{:?}",
        open.log
    );
}
