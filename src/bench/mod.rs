//! `armsim bench`: steps/s of a scene through the full ECS step path and, in the same run, the
//! same world stepped by bare Rapier, so the cost of the ECS around the physics is a measured
//! ratio rather than a guess. Protocol benchmarks live in the submodules.

pub mod agent;
pub mod idle;
pub mod load;
pub mod lockstep;
pub mod observers;
pub mod quality;
pub mod record;
#[cfg(feature = "ros2")]
pub mod ros2;
pub mod teleop;
pub mod window;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::scene::Scene;
use armsim::session::SessionCommand;
use armsim::sim::{self, ClockMode, SimWorld};
use armsim::{SimOptions, headless_app};
use bevy::app::App;

/// Rounds per measurement; the median is reported so one descheduled round does not skew it.
pub const ROUNDS: usize = 5;

/// User + system CPU time of the whole process so far, every thread (getrusage): what the
/// CPU benchmarks compare between phases.
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The median of `ROUNDS` timings.
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

#[derive(Clone, Debug)]
pub struct BenchReport {
    pub scene_id: String,
    pub steps: u64,
    pub ecs: Duration,
    pub bare: Duration,
}

impl BenchReport {
    pub fn ecs_steps_per_second(&self) -> f64 {
        self.steps as f64 / self.ecs.as_secs_f64()
    }
    pub fn bare_steps_per_second(&self) -> f64 {
        self.steps as f64 / self.bare.as_secs_f64()
    }
    /// ECS time per step over bare Rapier time per step (1.0 = no overhead).
    pub fn overhead_ratio(&self) -> f64 {
        self.ecs.as_secs_f64() / self.bare.as_secs_f64()
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scene {}: {} steps per round, median of {ROUNDS} rounds",
            self.scene_id, self.steps
        )?;
        writeln!(
            f,
            "  ECS step path : {:>8.0} steps/s ({:.1} µs/step)",
            self.ecs_steps_per_second(),
            self.ecs.as_secs_f64() * 1e6 / self.steps as f64
        )?;
        writeln!(
            f,
            "  bare Rapier   : {:>8.0} steps/s ({:.1} µs/step)",
            self.bare_steps_per_second(),
            self.bare.as_secs_f64() * 1e6 / self.steps as f64
        )?;
        write!(f, "  ECS / bare    : {:.3}x", self.overhead_ratio())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("the step count must be positive")]
    NoSteps,
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Client(String),
}

/// A headless app on `scene` with `clock`, not set up yet (servers are added first).
pub fn app_on(scene: &Arc<Scene>, clock: ClockMode) -> App {
    headless_app(scene.clone(), &SimOptions { clock })
}

/// `n` round trips between two bare loopback sockets: `out` bytes one way, `back` bytes the
/// other, nothing in between (no-delay sockets, as the servers use).
pub fn ping_pong(out: usize, back: usize, n: u64) -> Result<Duration, BenchError> {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let addr = listener.local_addr()?;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut stream, _) = listener.accept()?;
        stream.set_nodelay(true)?;
        let (mut ask, answer) = (vec![0u8; out], vec![0u8; back]);
        for _ in 0..n {
            stream.read_exact(&mut ask)?;
            stream.write_all(&answer)?;
        }
        Ok(())
    });
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let (ask, mut answer) = (vec![0u8; out], vec![0u8; back]);
    let t0 = Instant::now();
    for _ in 0..n {
        stream.write_all(&ask)?;
        stream.read_exact(&mut answer)?;
    }
    let took = t0.elapsed();
    server
        .join()
        .map_err(|_| BenchError::Client("the ping-pong thread panicked".into()))??;
    Ok(took)
}

/// The baseline every benchmark compares with: `steps` steps of a fresh world of `scene` by
/// Rapier's `PhysicsPipeline` on the very sets the ECS steps, with no ECS around it
/// (`SimWorld::step`: the scene's home commands pushed into the motors, Rapier's step, the
/// joints' bookkeeping). The ECS step path gives the same state bit for bit
/// (`crates/armsim-sim/tests/ecs.rs`), so the two do the same physics and the ratio is the
/// ECS's cost alone.
pub fn bare_steps(scene: &Scene, steps: u64) -> Duration {
    let mut world = SimWorld::new(scene);
    let t0 = Instant::now();
    for _ in 0..steps {
        world.step();
    }
    t0.elapsed()
}

/// Steps `scene` `steps` times per round through the ECS (session RUNNING, every step-path
/// system in place) and through `PhysicsWorld::step` alone, alternating rounds.
pub fn run(scene: Arc<Scene>, steps: u64) -> Result<BenchReport, BenchError> {
    if steps == 0 {
        return Err(BenchError::NoSteps);
    }
    let mut ecs = Vec::with_capacity(ROUNDS);
    let mut bare = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut app = headless_app(scene.clone(), &SimOptions::default());
        finish_setup(&mut app);
        app.world_mut().write_message(SessionCommand::Start);
        app.update();
        let t0 = Instant::now();
        sim::run_steps(&mut app, steps);
        ecs.push(t0.elapsed());

        bare.push(bare_steps(&scene, steps));
    }
    Ok(BenchReport {
        scene_id: scene.config.scene_id.clone(),
        steps,
        ecs: median(ecs),
        bare: median(bare),
    })
}
