//! `armsim bench ros2`: what `--ros2` costs (target: `/joint_states` at 100 Hz plus `/tf` within
//! 2 % of a core, real-time factor 1.00). A headless real-time simulation of the scene runs in
//! this process for the same wall time in each of these runs, one after the other:
//! - without ROS 2;
//! - with the ROS 2 bridge at `--ros2-rate` and nobody subscribed (a DDS writer with no matched
//!   reader sends nothing);
//! - with one subscriber of `/joint_states` and `/tf` (the target's case);
//! - with that subscriber also reading `/clock` (RViz with `use_sim_time`);
//! - without ROS 2 again, after the participant is gone. The baseline is the mean of the two
//!   runs without, so that a machine that drifts over the bench shows as their difference.
//!
//! Each run's process CPU time (`getrusage`, every thread: the ECS, the DDS thread and RustDDS's
//! own threads) and real-time factor are compared with the baseline. The subscriber is another
//! process (this binary's hidden `bench ros2-peer`), so its DDS threads are not counted; it
//! reports the samples it received.
//!
//! DDS discovery multicasts on every interface, and nothing here may reach the network: the bench
//! re-runs itself under `unshare -n` with only a loopback interface (up, multicast on, a
//! `224.0.0.0/4` route), and refuses to run if it cannot.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use armsim::headless::{self, StopAfter};
use armsim::protocol::ros2::msgs::{Clock, JointState, TFMessage};
use armsim::protocol::ros2::options::{Discovery, Ros2Options};
use armsim::protocol::ros2::plugin as ros2;
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SIM_DT, SimClock};
use bevy::diagnostic::FrameCount;
use ros2_client::qos::History;
use ros2_client::{Context, MessageTypeName, Name, NodeName, NodeOptions, QosProfile};
use rustdds::DomainParticipantBuilder;
use rustdds::mio1::{Events, Interest, Poll, Token, Waker};

use super::{BenchError, app_on};

/// Set (to the outer network namespace's id) when the bench runs in its own namespace.
const IN_NETNS: &str = "ARMSIM_IN_NETNS";

/// The namespace set-up, each step checked, then this binary again in place of the shell.
const SETUP: &str = "ip link set lo up && ip link set lo multicast on && \
                     ip route add 224.0.0.0/4 dev lo && exec \"$0\" \"$@\"";

/// The DDS domain of the bench (its namespace is private, so any will do).
const DOMAIN: u16 = 0;

/// The peer's poll token for its stdin thread's waker.
const WAKE: Token = Token(9);

/// How long the subscriber may take to receive its first joint state (or clock).
const PEER_READY: Duration = Duration::from_secs(60);

/// One measured run of the app.
#[derive(Clone, Debug)]
pub struct PhaseReport {
    /// Process CPU over wall time (1.0 = one core).
    pub cores: f64,
    pub rtf: f64,
    /// Share of a core per thread name, largest first.
    pub threads: Vec<(String, f64)>,
    /// ECS frames (wake-ups of the simulation loop) per second.
    pub frames_per_s: f64,
    /// Samples per wall second the subscriber received: joint_states, /tf, /clock.
    pub received: [f64; 3],
    /// UDP datagrams sent per wall second in the bench's network namespace (both processes).
    pub datagrams_per_s: f64,
}

#[derive(Clone, Debug)]
pub struct Ros2Report {
    pub scene_id: String,
    pub rate_hz: u32,
    pub wall: Duration,
    /// Without ROS 2, first and last: their mean is the baseline, their difference shows how
    /// much the machine drifted over the bench.
    pub plain: [PhaseReport; 2],
    /// The bridge on and nobody subscribed (DDS sends no samples).
    pub unread: PhaseReport,
    /// One subscriber of `joint_states` and `/tf` (the target's case).
    pub read: PhaseReport,
    /// The same subscriber, also reading `/clock` (RViz with `use_sim_time`).
    pub read_clock: PhaseReport,
}

impl Ros2Report {
    /// The baseline: the mean of the two runs without ROS 2.
    pub fn plain_cores(&self) -> f64 {
        (self.plain[0].cores + self.plain[1].cores) / 2.0
    }

    /// What `phase` costs over the baseline, in cores.
    pub fn cost(&self, phase: &PhaseReport) -> f64 {
        phase.cores - self.plain_cores()
    }
}

impl fmt::Display for Ros2Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scene {}: ROS 2 at {} Hz to one subscriber process, real time, process CPU \
             (getrusage, every thread) over {:.1} s per run",
            self.scene_id,
            self.rate_hz,
            self.wall.as_secs_f64()
        )?;
        let [first, last] = &self.plain;
        writeln!(
            f,
            "  without --ros2          : {:>6.2}% of a core (first {:.2}%, last {:.2}%), real-time \
             factor {:.3} / {:.3}",
            self.plain_cores() * 100.0,
            first.cores * 100.0,
            last.cores * 100.0,
            first.rtf,
            last.rtf
        )?;
        let runs = [
            ("--ros2, nobody reads    ", &self.unread),
            ("joint_states + /tf read ", &self.read),
            ("  + /clock read         ", &self.read_clock),
        ];
        for (name, phase) in runs {
            writeln!(
                f,
                "  {name}: {:>6.2}% of a core, cost {:+.2}%, real-time factor {:.3}",
                phase.cores * 100.0,
                self.cost(phase) * 100.0,
                phase.rtf
            )?;
        }
        for (name, phase) in &runs[1..] {
            let [js, tf, clock] = phase.received;
            writeln!(
                f,
                "  received, {}: joint_states {js:.1}/s, /tf {tf:.1}/s, /clock {clock:.1}/s; \
                 {:.0} UDP datagrams/s sent in all",
                name.trim(),
                phase.datagrams_per_s
            )?;
        }
        writeln!(
            f,
            "  ECS frames: {:.0}/s and {:.0}/s without, {:.0}/s unread, {:.0}/s and {:.0}/s read \
             (nobody connected: four steps a wake-up; ROS 2 peers that only watch: one wake-up \
             per batch of frames)",
            first.frames_per_s,
            last.frames_per_s,
            self.unread.frames_per_s,
            self.read.frames_per_s,
            self.read_clock.frames_per_s
        )?;
        let top = |threads: &[(String, f64)]| {
            threads
                .iter()
                .take(6)
                .map(|(name, c)| format!("{name} {:.2}%", c * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "  threads, without : {}", top(&first.threads))?;
        writeln!(f, "  threads, unread  : {}", top(&self.unread.threads))?;
        writeln!(f, "  threads, read    : {}", top(&self.read.threads))?;
        write!(f, "  threads, + clock : {}", top(&self.read_clock.threads))
    }
}

/// Runs the bench in a private network namespace: re-runs this command under `unshare -n`
/// (and returns `None`: that run printed the report) unless it already is that run.
pub fn run(
    scene: Arc<Scene>,
    rate_hz: u32,
    wall: Duration,
) -> Result<Option<Ros2Report>, BenchError> {
    let Some(outer) = std::env::var_os(IN_NETNS) else {
        reexec_isolated()?;
        return Ok(None);
    };
    check_isolated(&outer.to_string_lossy())?;
    measure_runs(scene, rate_hz, wall).map(Some)
}

/// This process's network namespace (`net:[4026531840]`).
fn net_namespace() -> Result<String, BenchError> {
    Ok(std::fs::read_link("/proc/self/ns/net")?
        .to_string_lossy()
        .into_owned())
}

fn reexec_isolated() -> Result<(), BenchError> {
    let exe = std::env::current_exe()?;
    let status = Command::new("unshare")
        .args(["-n", "sh", "-c", SETUP])
        .arg(exe)
        .args(std::env::args_os().skip(1))
        .env(IN_NETNS, net_namespace()?)
        .status()
        .map_err(|e| {
            BenchError::Client(format!(
                "cannot run `unshare -n` ({e}): the ROS 2 bench runs DDS only in a private \
                 network namespace (root, util-linux and iproute2), never on the host network"
            ))
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(BenchError::Client(format!(
            "the bench in its private network namespace failed ({status}); without root, \
             util-linux's unshare and iproute2 it cannot make one, and it never uses the host \
             network"
        )))
    }
}

/// Refuses to run unless this is a network namespace other than the one that started the
/// bench, holding only `lo`.
fn check_isolated(outer: &str) -> Result<(), BenchError> {
    if net_namespace()? == outer {
        return Err(BenchError::Client(format!(
            "{IN_NETNS} is set, but this is the host's network namespace; run `armsim bench ros2` \
             without it"
        )));
    }
    // /proc/self/net is this namespace's; /sys/class/net would show the host's.
    let dev = std::fs::read_to_string("/proc/self/net/dev")?;
    let interfaces: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    if interfaces != ["lo"] {
        return Err(BenchError::Client(format!(
            "the bench's network namespace has {interfaces:?}, not only lo"
        )));
    }
    Ok(())
}

/// CPU time (user + system, in clock ticks) of each thread of this process, by thread id, with
/// its name (`/proc/self/task/*/{comm,stat}`).
fn thread_cpu() -> HashMap<u64, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // After the `(comm)` field (which may hold spaces): state is field 3, utime 14, stime 15.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        out.insert(tid, (name.trim().to_owned(), ticks(11) + ticks(12)));
    }
    out
}

/// Share of a core per thread name between two snapshots `secs` apart, with how many threads
/// bear the name (unnamed threads inherit the process's), largest first.
fn by_thread(
    before: &HashMap<u64, (String, u64)>,
    after: &HashMap<u64, (String, u64)>,
    secs: f64,
) -> Vec<(String, f64)> {
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut sums: HashMap<String, (f64, usize)> = HashMap::new();
    for (tid, (name, ticks)) in after {
        let t0 = before.get(tid).map_or(0, |(_, t)| *t);
        let used = ticks.saturating_sub(t0) as f64 / hz / secs;
        if used > 0.0 {
            let e = sums.entry(name.clone()).or_default();
            e.0 += used;
            e.1 += 1;
        }
    }
    let mut v: Vec<(String, f64)> = sums
        .into_iter()
        .map(|(name, (c, n))| match n {
            1 => (name, c),
            n => (format!("{name} (x{n})"), c),
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// Runs the app for `wall` and measures it.
fn measure(app: &mut bevy::app::App, wall: Duration) -> PhaseReport {
    let steps0 = app.world().resource::<SimClock>().steps;
    let frames = |app: &bevy::app::App| app.world().get_resource::<FrameCount>().map_or(0, |f| f.0);
    let frames0 = frames(app);
    let threads0 = thread_cpu();
    let udp0 = udp_datagrams_sent();
    let cpu0 = super::process_cpu();
    let t0 = Instant::now();
    headless::run(app, StopAfter::Wall(wall));
    let took = t0.elapsed();
    let cpu = (super::process_cpu() - cpu0).as_secs_f64();
    let threads1 = thread_cpu();
    let udp = udp_datagrams_sent().saturating_sub(udp0);
    let steps = app.world().resource::<SimClock>().steps - steps0;
    let secs = took.as_secs_f64();
    PhaseReport {
        cores: cpu / secs,
        rtf: steps as f64 * SIM_DT / secs,
        threads: by_thread(&threads0, &threads1, secs),
        frames_per_s: frames(app).wrapping_sub(frames0) as f64 / secs,
        received: [0.0; 3],
        datagrams_per_s: udp as f64 / secs,
    }
}

/// UDP datagrams sent in this network namespace so far (`OutDatagrams` of
/// `/proc/self/net/snmp`); 0 if it cannot be read.
fn udp_datagrams_sent() -> u64 {
    let Ok(snmp) = std::fs::read_to_string("/proc/self/net/snmp") else {
        return 0;
    };
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "OutDatagrams")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// [`measure`], with what `peer` received meanwhile.
fn measure_read(
    app: &mut bevy::app::App,
    wall: Duration,
    peer: &mut PeerProcess,
) -> Result<PhaseReport, BenchError> {
    let before = peer.counts()?;
    let t0 = Instant::now();
    let mut phase = measure(app, wall);
    let after = peer.counts()?;
    let secs = t0.elapsed().as_secs_f64();
    phase.received = [0, 1, 2].map(|i| (after[i] - before[i]) as f64 / secs);
    Ok(phase)
}

/// The subscriber process: its stdin asks for counts, its stdout answers.
struct PeerProcess {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl PeerProcess {
    fn start() -> Result<Self, BenchError> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["bench", "ros2-peer"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            stdin,
            lines,
        })
    }

    /// Waits up to `within` for the line the subscriber prints next.
    fn line(&mut self, within: Duration) -> Result<String, BenchError> {
        self.lines
            .recv_timeout(within)
            .map_err(|_| BenchError::Client("the subscriber process stopped answering".into()))
    }

    fn say(&mut self, what: &str) -> Result<(), BenchError> {
        writeln!(self.stdin, "{what}")?;
        self.stdin.flush()?;
        Ok(())
    }

    /// The samples received so far: joint_states, /tf, /clock.
    fn counts(&mut self) -> Result<[u64; 3], BenchError> {
        self.say("count")?;
        let line = self.line(Duration::from_secs(10))?;
        let n: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        match n[..] {
            [a, b, c] => Ok([a, b, c]),
            _ => Err(BenchError::Client(format!(
                "the subscriber process said {line:?}"
            ))),
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the app until the subscriber says `word` (it does at its first sample of a topic it
/// has just subscribed to), then three seconds more, so that discovery has settled.
fn run_until(
    app: &mut bevy::app::App,
    peer: &mut PeerProcess,
    word: &str,
) -> Result<(), BenchError> {
    let deadline = Instant::now() + PEER_READY;
    loop {
        match peer.lines.try_recv() {
            Ok(line) if line == word => break,
            Ok(_) => {}
            Err(mpsc::TryRecvError::Disconnected) => {
                return Err(BenchError::Client(format!(
                    "the subscriber process ended before it said {word:?}"
                )));
            }
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() > deadline {
            return Err(BenchError::Client(format!(
                "the subscriber did not say {word:?} within {} s",
                PEER_READY.as_secs()
            )));
        }
        headless::run(app, StopAfter::Wall(Duration::from_millis(100)));
    }
    headless::run(app, StopAfter::Wall(Duration::from_millis(3000)));
    Ok(())
}

/// The same scene without ROS 2, measured after a short warm-up.
fn measure_plain(scene: &Arc<Scene>, wall: Duration) -> PhaseReport {
    let mut app = app_on(scene, ClockMode::RealTime { speed: 1.0 });
    headless::finish_setup(&mut app);
    headless::run(&mut app, StopAfter::Wall(Duration::from_millis(300)));
    measure(&mut app, wall)
}

/// The five runs of the bench, in order (see the module's doc).
fn measure_runs(scene: Arc<Scene>, rate_hz: u32, wall: Duration) -> Result<Ros2Report, BenchError> {
    if wall.is_zero() {
        return Err(BenchError::NoSteps);
    }
    let first = measure_plain(&scene, wall);

    let mut app = app_on(&scene, ClockMode::RealTime { speed: 1.0 });
    let options = Ros2Options {
        domain: DOMAIN,
        discovery: Discovery::Local,
        rate_hz,
        ..Default::default()
    };
    ros2::add(&mut app, options).map_err(|e| BenchError::Client(e.to_string()))?;
    headless::finish_setup(&mut app);
    // The bridge and the participant with nobody subscribed: DDS sends no samples then.
    headless::run(&mut app, StopAfter::Wall(Duration::from_millis(300)));
    let unread = measure(&mut app, wall);

    // The app runs while the subscriber discovers it; it says `ready` at its first joint state.
    let mut peer = PeerProcess::start()?;
    run_until(&mut app, &mut peer, "ready")?;
    let read = measure_read(&mut app, wall, &mut peer)?;
    peer.say("clock")?;
    run_until(&mut app, &mut peer, "clock")?;
    let read_clock = measure_read(&mut app, wall, &mut peer)?;
    drop(peer);
    // The participant and its threads go before the last run without ROS 2.
    drop(app);
    let last = measure_plain(&scene, wall);
    Ok(Ros2Report {
        scene_id: scene.config.scene_id.clone(),
        rate_hz,
        wall,
        plain: [first, last],
        unread,
        read,
        read_clock,
    })
}

/// `bench ros2-peer`: the bench's subscriber, a plain ROS 2 reader of `/joint_states` and `/tf`
/// (reliable, as robot_state_publisher and RViz read them). Prints `ready` at its first joint
/// state. For each line read on stdin: `count` prints the three sample counts (joint_states,
/// /tf, /clock); `clock` subscribes to `/clock` as well, and it prints `clock` at the first.
/// Ends when stdin closes.
pub fn peer() -> Result<(), BenchError> {
    let Some(outer) = std::env::var_os(IN_NETNS) else {
        return Err(BenchError::Client(
            "bench ros2-peer runs only as `bench ros2`'s subscriber, in its namespace".into(),
        ));
    };
    check_isolated(&outer.to_string_lossy())?;
    let mut poll = Poll::new()?;
    let waker = Waker::new(poll.registry(), WAKE)?;
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let want_clock = Arc::new(AtomicBool::new(false));
    {
        let (counts, want_clock) = (counts.clone(), want_clock.clone());
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if line == "clock" {
                    want_clock.store(true, Ordering::Relaxed);
                    let _ = waker.wake();
                    continue;
                }
                let [a, b, c] = counts
                    .as_ref()
                    .each_ref()
                    .map(|n| n.load(Ordering::Relaxed));
                println!("{a} {b} {c}");
            }
            std::process::exit(0);
        });
    }
    let dds = |e: &dyn fmt::Debug| BenchError::Client(format!("subscriber: {e:?}"));
    let participant = DomainParticipantBuilder::new(DOMAIN)
        .socket_receive_buffer_size(0)
        .socket_send_buffer_size(0)
        .build()
        .map_err(|e| dds(&e))?;
    let context = Context::from_domain_participant(participant).map_err(|e| dds(&e))?;
    let mut node = context
        .new_node(
            NodeName::new("/", "armsim_bench_peer").map_err(|e| dds(&e))?,
            NodeOptions::new().enable_rosout(false),
        )
        .map_err(|e| dds(&e))?;
    let qos = |depth| QosProfile::publisher_default().history(History::KeepLast { depth });
    let topic = |name: &str, pkg: &str, ty: &str, depth| {
        let name = Name::parse(name).map_err(|e| dds(&e))?;
        node.create_topic(&name, MessageTypeName::new(pkg, ty), &qos(depth))
            .map_err(|e| dds(&e))
    };
    let js_topic = topic("/joint_states", "sensor_msgs", "JointState", 100)?;
    let tf_topic = topic("/tf", "tf2_msgs", "TFMessage", 100)?;
    let clock_topic = topic("/clock", "rosgraph_msgs", "Clock", 1)?;
    let mut js = node
        .create_subscription::<JointState>(&js_topic, None)
        .map_err(|e| dds(&e))?;
    let mut tf = node
        .create_subscription::<TFMessage>(&tf_topic, None)
        .map_err(|e| dds(&e))?;
    poll.registry()
        .register(&mut js, Token(0), Interest::READABLE)?;
    poll.registry()
        .register(&mut tf, Token(1), Interest::READABLE)?;
    let mut clock = None;
    let mut events = Events::with_capacity(8);
    let (mut ready, mut clocked) = (false, false);
    loop {
        // Edge-triggered: read each reader dry on every wake.
        while let Ok(Some(_)) = js.take() {
            counts[0].fetch_add(1, Ordering::Relaxed);
            if !std::mem::replace(&mut ready, true) {
                println!("ready");
            }
        }
        while let Ok(Some(_)) = tf.take() {
            counts[1].fetch_add(1, Ordering::Relaxed);
        }
        if clock.is_none() && want_clock.load(Ordering::Relaxed) {
            let mut sub = node
                .create_subscription::<Clock>(&clock_topic, None)
                .map_err(|e| dds(&e))?;
            poll.registry()
                .register(&mut sub, Token(2), Interest::READABLE)?;
            clock = Some(sub);
        }
        if let Some(clock) = &clock {
            while let Ok(Some(_)) = clock.take() {
                counts[2].fetch_add(1, Ordering::Relaxed);
                if !std::mem::replace(&mut clocked, true) {
                    println!("clock");
                }
            }
        }
        poll.poll(&mut events, None)?;
    }
}
