//! `armsim bench ros2`: what `--ros2` costs (issue 37: `/joint_states` at 100 Hz plus `/tf` within
//! 2 % of a core, real-time factor 1.00). A headless real-time simulation of the scene runs in
//! this process twice for the same wall time: without ROS 2, then with the ROS 2 bridge at
//! `--ros2-rate` and one subscriber (`/joint_states`, `/tf`, `/clock`) so that data really flows
//! (a DDS writer with no matched reader sends nothing). The process CPU time (`getrusage`, every
//! thread: the ECS, the DDS thread and RustDDS's own threads) and the real-time factor are
//! compared. The subscriber is another process (this binary's hidden `bench ros2-peer`), so its
//! DDS threads are not counted; it reports the samples it received.
//!
//! DDS discovery multicasts on every interface, and nothing here may reach the network
//! (`/work/shared/ros2.md`): the bench re-runs itself under `unshare -n` with only a loopback
//! interface (up, multicast on, a `224.0.0.0/4` route), and refuses to run if it cannot.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use armsim::headless::{self, StopAfter};
use armsim::protocol::ros2::msgs::{Clock, JointState, TFMessage};
use armsim::protocol::ros2::options::{Discovery, Ros2Options};
use armsim::protocol::ros2::plugin as ros2;
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SIM_DT, SimClock};
use ros2_client::qos::History;
use ros2_client::{Context, MessageTypeName, Name, NodeName, NodeOptions, QosProfile};
use rustdds::DomainParticipantBuilder;
use rustdds::mio1::{Events, Interest, Poll, Token};

use super::{BenchError, app_on};

/// Set (to the outer network namespace's id) when the bench runs in its own namespace.
const IN_NETNS: &str = "ARMSIM_IN_NETNS";

/// The namespace set-up, each step checked, then this binary again in place of the shell.
const SETUP: &str = "ip link set lo up && ip link set lo multicast on && \
                     ip route add 224.0.0.0/4 dev lo && exec \"$0\" \"$@\"";

/// The DDS domain of the bench (its namespace is private, so any will do).
const DOMAIN: u16 = 0;

/// How long the subscriber may take to receive its first joint state.
const PEER_READY: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct Ros2Report {
    pub scene_id: String,
    pub rate_hz: u32,
    pub wall: Duration,
    /// Process CPU over wall time (1.0 = one core) without ROS 2.
    pub plain_cores: f64,
    /// The same with the bridge on and one subscriber.
    pub ros2_cores: f64,
    pub plain_rtf: f64,
    pub ros2_rtf: f64,
    /// Samples per wall second the subscriber received: joint_states, /tf, /clock.
    pub received: [f64; 3],
}

impl fmt::Display for Ros2Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scene {}: ROS 2 at {} Hz (/clock, joint_states, /tf) to one subscriber process, real \
             time, process CPU (getrusage, every thread) over {:.1} s each",
            self.scene_id,
            self.rate_hz,
            self.wall.as_secs_f64()
        )?;
        writeln!(
            f,
            "  without --ros2 : {:>6.2}% of a core, real-time factor {:.3}",
            self.plain_cores * 100.0,
            self.plain_rtf
        )?;
        writeln!(
            f,
            "  with --ros2    : {:>6.2}% of a core, real-time factor {:.3}",
            self.ros2_cores * 100.0,
            self.ros2_rtf
        )?;
        writeln!(
            f,
            "  cost of ROS 2  : {:+.2}% of a core",
            (self.ros2_cores - self.plain_cores) * 100.0
        )?;
        let [js, tf, clock] = self.received;
        write!(
            f,
            "  received       : joint_states {js:.1}/s, /tf {tf:.1}/s, /clock {clock:.1}/s"
        )
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
    measure_both(scene, rate_hz, wall).map(Some)
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

/// User + system CPU time of the whole process so far.
fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Runs the app for `wall`; (process CPU over wall time, real-time factor, wall time taken).
fn measure(app: &mut bevy::app::App, wall: Duration) -> (f64, f64, Duration) {
    let steps0 = app.world().resource::<SimClock>().steps;
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    headless::run(app, StopAfter::Wall(wall));
    let took = t0.elapsed();
    let cpu = (process_cpu() - cpu0).as_secs_f64();
    let steps = app.world().resource::<SimClock>().steps - steps0;
    let secs = took.as_secs_f64();
    (cpu / secs, steps as f64 * SIM_DT / secs, took)
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

    /// The samples received so far: joint_states, /tf, /clock.
    fn counts(&mut self) -> Result<[u64; 3], BenchError> {
        writeln!(self.stdin, "count")?;
        self.stdin.flush()?;
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| BenchError::Client("the subscriber process stopped answering".into()))?;
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

fn measure_both(scene: Arc<Scene>, rate_hz: u32, wall: Duration) -> Result<Ros2Report, BenchError> {
    if wall.is_zero() {
        return Err(BenchError::NoSteps);
    }
    let realtime = ClockMode::RealTime { speed: 1.0 };
    let (plain_cores, plain_rtf) = {
        let mut app = app_on(&scene, realtime);
        headless::finish_setup(&mut app);
        headless::run(&mut app, StopAfter::Wall(Duration::from_millis(300)));
        let (cores, rtf, _) = measure(&mut app, wall);
        (cores, rtf)
    };

    let mut app = app_on(&scene, realtime);
    let options = Ros2Options {
        domain: DOMAIN,
        discovery: Discovery::Local,
        rate_hz,
        ..Default::default()
    };
    ros2::add(&mut app, options).map_err(|e| BenchError::Client(e.to_string()))?;
    headless::finish_setup(&mut app);
    let mut peer = PeerProcess::start()?;
    // The app runs while the subscriber discovers it; it says `ready` at its first joint state.
    let deadline = Instant::now() + PEER_READY;
    loop {
        match peer.lines.try_recv() {
            Ok(line) if line == "ready" => break,
            Ok(_) => {}
            Err(mpsc::TryRecvError::Disconnected) => {
                return Err(BenchError::Client(
                    "the subscriber process ended before its first joint state".into(),
                ));
            }
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() > deadline {
            return Err(BenchError::Client(format!(
                "the subscriber got no joint state within {} s",
                PEER_READY.as_secs()
            )));
        }
        headless::run(&mut app, StopAfter::Wall(Duration::from_millis(100)));
    }
    headless::run(&mut app, StopAfter::Wall(Duration::from_millis(500)));
    let before = peer.counts()?;
    let (ros2_cores, ros2_rtf, took) = measure(&mut app, wall);
    let after = peer.counts()?;
    let secs = took.as_secs_f64();
    let received = [0, 1, 2].map(|i| (after[i] - before[i]) as f64 / secs);
    Ok(Ros2Report {
        scene_id: scene.config.scene_id.clone(),
        rate_hz,
        wall,
        plain_cores,
        ros2_cores,
        plain_rtf,
        ros2_rtf,
        received,
    })
}

/// `bench ros2-peer`: the bench's subscriber, a plain ROS 2 reader of `/joint_states`, `/tf` and
/// `/clock` (reliable, as RViz reads them). Prints `ready` at its first joint state, and the
/// three sample counts for each line read on stdin; ends when stdin closes.
pub fn peer() -> Result<(), BenchError> {
    let Some(outer) = std::env::var_os(IN_NETNS) else {
        return Err(BenchError::Client(
            "bench ros2-peer runs only as `bench ros2`'s subscriber, in its namespace".into(),
        ));
    };
    check_isolated(&outer.to_string_lossy())?;
    let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    {
        let counts = counts.clone();
        std::thread::spawn(move || {
            for _ in std::io::stdin().lock().lines().map_while(Result::ok) {
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
    let mut clock = node
        .create_subscription::<Clock>(&clock_topic, None)
        .map_err(|e| dds(&e))?;
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut js, Token(0), Interest::READABLE)?;
    poll.registry()
        .register(&mut tf, Token(1), Interest::READABLE)?;
    poll.registry()
        .register(&mut clock, Token(2), Interest::READABLE)?;
    let mut events = Events::with_capacity(8);
    let mut ready = false;
    loop {
        // Edge-triggered: read each reader dry on every wake.
        while let Ok(Some(_)) = js.take() {
            counts[0].fetch_add(1, Ordering::Relaxed);
            if !ready {
                ready = true;
                println!("ready");
            }
        }
        while let Ok(Some(_)) = tf.take() {
            counts[1].fetch_add(1, Ordering::Relaxed);
        }
        while let Ok(Some(_)) = clock.take() {
            counts[2].fetch_add(1, Ordering::Relaxed);
        }
        poll.poll(&mut events, None)?;
    }
}
