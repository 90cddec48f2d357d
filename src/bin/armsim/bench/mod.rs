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
use armsim::robot::model::JointKind;
use armsim::scene::Scene;
use armsim::session::{SessionCommand, SessionRequest};
use armsim::sim::{self, ClockMode, JointCommand, Sim, SimWorld};
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

/// How the arm moves while `armsim bench step` runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Motion {
    /// The arm holds its home pose: the cubes and, once still, the arm rest.
    #[default]
    Rest,
    /// Every arm joint follows a sine about home, a new target every step (see
    /// [`sine_targets`]); the gripper holds home and the cubes lie still.
    Sines,
}

/// Sine amplitude of a hinge (rad) and of a slide (m) under [`Motion::Sines`].
pub const SINE_AMPLITUDE: [f32; 2] = [0.2, 0.02];

/// The position targets of [`Motion::Sines`] at time `t` (s): arm joint number `i` (in the
/// scene's arm-joint order) at `home + A·sin(2π·(0.23 + 0.06·i)·t)`, A from [`SINE_AMPLITUDE`],
/// clamped 10 mrad (1 mm) inside its limits. benches/mujoco_compare.py gives MuJoCo the same.
pub fn sine_targets(scene: &Scene, t: f64) -> Vec<(usize, f32)> {
    let home = scene.home_q_full();
    let robot = &scene.robot;
    scene
        .arm_joints()
        .into_iter()
        .enumerate()
        .map(|(i, j)| {
            let joint = &robot.joints[j];
            let (amp, inset) = match joint.kind {
                JointKind::Revolute => (SINE_AMPLITUDE[0], 0.01),
                JointKind::Prismatic => (SINE_AMPLITUDE[1], 0.001),
            };
            let phase = std::f64::consts::TAU * (0.23 + 0.06 * i as f64) * t;
            let mut q = home[j] + amp * phase.sin() as f32;
            if let Some((lo, hi)) = joint.limits {
                q = q.clamp(lo + inset, hi - inset);
            }
            (j, q)
        })
        .collect()
}

/// Before step `k` (from 1) under `motion`: its targets into `model`'s commands.
fn command_motion(model: &mut sim::SimModel, scene: &Scene, motion: Motion, k: u64) {
    if motion == Motion::Sines {
        for (j, target) in sine_targets(scene, k as f64 * sim::SIM_DT) {
            let cmd = JointCommand::Position {
                target,
                velocity: 0.0,
            };
            // Finite by construction: `set_command` refuses only non-finite values.
            let _ = model.set_command(j, cmd);
        }
    }
}

#[derive(Clone, Debug)]
pub struct BenchReport {
    pub scene_id: String,
    pub motion: Motion,
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
            "scene {}: {} steps per round, median of {ROUNDS} rounds, arm {}",
            self.scene_id,
            self.steps,
            match self.motion {
                Motion::Rest => "at rest",
                Motion::Sines => "moving (sines)",
            }
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
    bare_steps_moving(scene, steps, Motion::Rest)
}

/// [`bare_steps`] with the arm under `motion` (its targets set before each step, timed too).
pub fn bare_steps_moving(scene: &Scene, steps: u64, motion: Motion) -> Duration {
    let mut world = SimWorld::new(scene);
    let t0 = Instant::now();
    for k in 1..=steps {
        command_motion(&mut world.model, scene, motion, k);
        world.step();
    }
    t0.elapsed()
}

/// Steps `scene` `steps` times per round through the ECS (session RUNNING, every step-path
/// system in place) and through `PhysicsWorld::step` alone, alternating rounds. Under
/// [`Motion::Sines`] each ECS step is a batch of its own, its targets written into the world's
/// commands first, as a protocol's command arrives between steps.
pub fn run(scene: Arc<Scene>, steps: u64, motion: Motion) -> Result<BenchReport, BenchError> {
    if steps == 0 {
        return Err(BenchError::NoSteps);
    }
    let mut ecs = Vec::with_capacity(ROUNDS);
    let mut bare = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let mut app = headless_app(scene.clone(), &SimOptions::default());
        finish_setup(&mut app);
        app.world_mut()
            .write_message(SessionRequest(SessionCommand::Start));
        app.update();
        let t0 = Instant::now();
        match motion {
            Motion::Rest => sim::run_steps(&mut app, steps),
            Motion::Sines => {
                for k in 1..=steps {
                    command_motion(
                        &mut app.world_mut().resource_mut::<Sim>().0,
                        &scene,
                        motion,
                        k,
                    );
                    sim::run_steps(&mut app, 1);
                }
            }
        }
        ecs.push(t0.elapsed());

        bare.push(bare_steps_moving(&scene, steps, motion));
    }
    Ok(BenchReport {
        scene_id: scene.config.scene_id.clone(),
        motion,
        steps,
        ecs: median(ecs),
        bare: median(bare),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sines_start_at_home_and_swing_each_arm_joint_inside_its_range() {
        let scene = armsim::scene::load_bundled_scene("default_scene")
            .expect("bundled")
            .unwrap_or_else(|e| panic!("{e}"));
        let home = scene.home_q_full();
        let arm = scene.arm_joints();
        let at = |t: f64| sine_targets(&scene, t);
        assert_eq!(at(0.0).iter().map(|&(j, _)| j).collect::<Vec<_>>(), arm);
        for (j, q) in at(0.0) {
            assert_eq!(q, home[j]);
        }
        // Joint 0 peaks a quarter period in (0.23 Hz).
        let (j, q) = at(0.25 / 0.23)[0];
        assert!((q - home[j] - SINE_AMPLITUDE[0]).abs() < 1e-5, "{q}");
        for k in 0..2400 {
            for (j, q) in at(k as f64 / 240.0) {
                let (lo, hi) = scene.robot.joints[j].limits.unwrap();
                assert!(lo < q && q < hi);
            }
        }
        // The bare loop moves the arm off home.
        let mut world = SimWorld::new(&scene);
        for k in 1..=240 {
            command_motion(&mut world.model, &scene, Motion::Sines, k);
            world.step();
        }
        let q = world.view().joint_positions();
        assert!(arm.iter().any(|&j| (q[j] - home[j]).abs() > 0.05), "{q:?}");
    }
}
