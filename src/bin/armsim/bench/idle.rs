//! `armsim bench idle`: what the simulator costs while it has nothing to do but keep time, or
//! waits on a client that does not answer. Each case runs the headless loop for a few seconds
//! of wall time and reads the process's CPU time (`getrusage`, every thread) around it; the
//! physics alone (240 bare steps a second) is measured in the same run as the floor to compare
//! with (the targets: idle ≤ physics + 3 % of a core, waiting ≤ 5 %).

use std::fmt;
use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use armsim::headless::{self, StopAfter};
use armsim::protocol::lockstep::plugin as lockstep;
use armsim::protocol::sexp::Sexp;
use armsim::protocol::sexp::framing::FrameDecoder;
use armsim::protocol::sexp::plugin::{self as sexp, SexpOptions};
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SIM_DT, SimClock};
use crossbeam_channel::{Sender, bounded};

use super::{BenchError, app_on, bare_steps};

/// One measured case.
#[derive(Clone, Debug)]
pub struct IdleCase {
    pub name: &'static str,
    /// Process CPU time over wall time (1.0 = one core busy).
    pub cores: f64,
    /// Sim steps taken while measuring, per wall second.
    pub steps_per_second: f64,
}

#[derive(Clone, Debug)]
pub struct IdleBenchReport {
    pub scene_id: String,
    pub wall: Duration,
    /// One bare Rapier step.
    pub bare_step: Duration,
    pub cases: Vec<IdleCase>,
}

impl IdleBenchReport {
    /// 240 bare steps a second, as a share of a core: what real time cannot go below.
    pub fn physics_cores(&self) -> f64 {
        self.bare_step.as_secs_f64() / SIM_DT
    }
}

impl fmt::Display for IdleBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scene {}: process CPU time (getrusage, all threads) over {:.1} s of wall time per case",
            self.scene_id,
            self.wall.as_secs_f64()
        )?;
        writeln!(
            f,
            "  {:<38}: {:>5.1}% of a core (240 × {:.1} µs bare step)",
            "physics alone",
            self.physics_cores() * 100.0,
            self.bare_step.as_secs_f64() * 1e6
        )?;
        for (i, c) in self.cases.iter().enumerate() {
            let last = i + 1 == self.cases.len();
            write!(
                f,
                "  {:<38}: {:>5.1}% of a core, {:>4.0} steps/s",
                c.name,
                c.cores * 100.0,
                c.steps_per_second
            )?;
            if !last {
                writeln!(f)?;
            }
        }
        Ok(())
    }
}

/// Runs the set-up app in real time for `wall` and measures it; a short warm-up first, so
/// start-up work (threads, first frames) is not counted.
fn measure(name: &'static str, app: &mut bevy::app::App, wall: Duration) -> IdleCase {
    headless::finish_setup(app);
    headless::run(app, StopAfter::Wall(Duration::from_millis(300)));
    let steps0 = app.world().resource::<SimClock>().steps;
    let cpu0 = super::process_cpu();
    let t0 = Instant::now();
    headless::run(app, StopAfter::Wall(wall));
    let took = t0.elapsed().as_secs_f64();
    let cpu = (super::process_cpu() - cpu0).as_secs_f64();
    let steps = app.world().resource::<SimClock>().steps - steps0;
    IdleCase {
        name,
        cores: cpu / took,
        steps_per_second: steps as f64 / took,
    }
}

/// A client thread that connects with `hello`, then stays silent until `done` is dropped.
fn silent_client(
    addr: SocketAddr,
    hello: impl FnOnce(&mut TcpStream) -> io::Result<()> + Send + 'static,
) -> (Sender<()>, thread::JoinHandle<io::Result<()>>) {
    let (done, wait) = bounded::<()>(0);
    let handle = thread::spawn(move || {
        let mut s = TcpStream::connect(addr)?;
        hello(&mut s)?;
        let _ = wait.recv();
        Ok(())
    });
    (done, handle)
}

fn finish(done: Sender<()>, handle: thread::JoinHandle<io::Result<()>>) -> Result<(), BenchError> {
    drop(done);
    handle
        .join()
        .map_err(|_| BenchError::Client("the silent client thread panicked".into()))?
        .map_err(BenchError::from)
}

/// Measures the four cases on `scene` for `wall` each.
pub fn run(scene: Arc<Scene>, wall: Duration) -> Result<IdleBenchReport, BenchError> {
    if wall.is_zero() {
        return Err(BenchError::NoSteps);
    }
    let bare_step = bare_steps(&scene, 2400) / 2400;
    let real_time = ClockMode::RealTime { speed: 1.0 };
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut cases = Vec::new();

    let mut app = app_on(&scene, real_time);
    cases.push(measure("idle, real time, nobody connected", &mut app, wall));

    let mut app = app_on(&scene, real_time);
    lockstep::add(&mut app, loopback, Duration::from_secs(3600))?;
    cases.push(measure(
        "lockstep, waiting for a first client",
        &mut app,
        wall,
    ));

    let mut app = app_on(&scene, real_time);
    let addr = lockstep::add(&mut app, loopback, Duration::from_secs(3600))?;
    let joints = app.world().resource::<armsim::sim::Sim>().0.joint_count();
    let (done, client) = silent_client(addr, move |s| {
        // Frame 0, then silence: the clock waits for an answer that never comes.
        let mut frame = vec![0u8; armsim::protocol::lockstep::codec::frame_sizes(joints).0];
        s.read_exact(&mut frame)
    });
    cases.push(measure("lockstep, connected client silent", &mut app, wall));
    finish(done, client)?;

    let mut app = app_on(&scene, real_time);
    let (agent, _) = sexp::add(
        &mut app,
        SexpOptions {
            agent: Some(loopback),
            sync: true,
            sync_timeout: Duration::from_secs(3600),
            ..Default::default()
        },
    )?;
    let agent = agent.ok_or_else(|| BenchError::Client("no agent port".into()))?;
    let robot = scene.robot.name.clone();
    let (done, client) = silent_client(agent, move |s| {
        let init = ["init", &robot, "bench", "1"].map(Sexp::atom);
        super::agent::send(s, &[Sexp::list(init)])?;
        super::agent::recv(s, &mut FrameDecoder::default()).map(drop)
    });
    cases.push(measure(
        "sync agent, connected agent silent",
        &mut app,
        wall,
    ));
    finish(done, client)?;

    Ok(IdleBenchReport {
        scene_id: scene.config.scene_id.clone(),
        wall,
        bare_step,
        cases,
    })
}
