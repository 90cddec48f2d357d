//! `armsim bench lockstep`: lockstep steps/s over loopback with the example client's loop, and,
//! in the same run, the two things it is made of measured bare (a loopback ping-pong of the same
//! frame sizes, and a bare Rapier step), so the protocol's own cost is a measured ratio.

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use armsim::headless;
use armsim::protocol::lockstep::codec::{decode_state, encode_velocities, frame_sizes};
use armsim::protocol::lockstep::plugin;
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SimWorld};

use super::{BenchError, ROUNDS, app_on, bare_steps, median};

#[derive(Clone, Debug)]
pub struct LockstepBenchReport {
    pub scene_id: String,
    pub joints: usize,
    pub steps: u64,
    /// Lockstep client loop: `steps` answered frames, each one sim step.
    pub lockstep: Duration,
    /// Bare loopback ping-pong of the same sizes, `steps` round trips.
    pub ping_pong: Duration,
    /// Bare Rapier, `steps` steps.
    pub bare_step: Duration,
}

impl LockstepBenchReport {
    fn per_step(&self, d: Duration) -> f64 {
        d.as_secs_f64() / self.steps as f64
    }
    pub fn lockstep_steps_per_second(&self) -> f64 {
        1.0 / self.per_step(self.lockstep)
    }
    /// 1 / (bare round trip + bare step): what a perfect lockstep server would reach.
    pub fn ideal_steps_per_second(&self) -> f64 {
        1.0 / (self.per_step(self.ping_pong) + self.per_step(self.bare_step))
    }
    /// Lockstep rate over the ideal rate (1.0 = the protocol costs nothing).
    pub fn efficiency(&self) -> f64 {
        self.lockstep_steps_per_second() / self.ideal_steps_per_second()
    }
}

impl fmt::Display for LockstepBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |d: Duration| self.per_step(d) * 1e6;
        writeln!(
            f,
            "scene {}: lockstep over loopback, {} joints ({} bytes out, {} in), {} steps per round, median of {ROUNDS} rounds",
            self.scene_id,
            self.joints,
            frame_sizes(self.joints).0,
            frame_sizes(self.joints).1,
            self.steps
        )?;
        writeln!(
            f,
            "  lockstep client loop : {:>8.0} steps/s ({:.1} µs/step)",
            self.lockstep_steps_per_second(),
            us(self.lockstep)
        )?;
        writeln!(
            f,
            "  bare loopback rtt    : {:>8.0} round trips/s ({:.1} µs)",
            1.0 / self.per_step(self.ping_pong),
            us(self.ping_pong)
        )?;
        writeln!(
            f,
            "  bare Rapier step     : {:>8.0} steps/s ({:.1} µs)",
            1.0 / self.per_step(self.bare_step),
            us(self.bare_step)
        )?;
        write!(
            f,
            "  1/(rtt + step)       : {:>8.0} steps/s; lockstep reaches {:.0}% of it",
            self.ideal_steps_per_second(),
            self.efficiency() * 100.0
        )
    }
}

/// Runs the three measurements `ROUNDS` times, interleaved, and reports the medians.
pub fn run(scene: Arc<Scene>, steps: u64) -> Result<LockstepBenchReport, BenchError> {
    if steps == 0 {
        return Err(BenchError::NoSteps);
    }
    let joints = SimWorld::new(&scene).joint_count();
    let mut lockstep = Vec::with_capacity(ROUNDS);
    let mut ping_pong = Vec::with_capacity(ROUNDS);
    let mut bare = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        lockstep.push(lockstep_round(&scene, joints, steps)?);
        ping_pong.push(ping_pong_sized(joints, steps)?);
        bare.push(bare_steps(&scene, steps));
    }
    Ok(LockstepBenchReport {
        scene_id: scene.config.scene_id.clone(),
        joints,
        steps,
        lockstep: median(lockstep),
        ping_pong: median(ping_pong),
        bare_step: median(bare),
    })
}

/// A headless sim serving lockstep on an ephemeral loopback port, driven by a client thread
/// running the example client's loop (read a frame, answer `sin(step / 10)` for every joint).
fn lockstep_round(scene: &Arc<Scene>, joints: usize, steps: u64) -> Result<Duration, BenchError> {
    let mut app = app_on(scene, ClockMode::Fast);
    let addr = plugin::add(
        &mut app,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Duration::from_secs(5),
    )?;
    let client = thread::spawn(move || -> std::io::Result<Duration> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let (frame_len, _) = frame_sizes(joints);
        let mut frame = vec![0u8; frame_len];
        let mut answer = Vec::with_capacity(4 * joints);
        // Frame 0 arrives on connect; the clock starts there, so connecting is not measured.
        stream.read_exact(&mut frame)?;
        let t0 = Instant::now();
        for _ in 0..steps {
            let (step, _) = decode_state(&frame, joints).map_err(std::io::Error::other)?;
            let v = (step as f32 / 10.0).sin();
            answer.clear();
            encode_velocities(&vec![v; joints], &mut answer);
            stream.write_all(&answer)?;
            stream.read_exact(&mut frame)?;
        }
        Ok(t0.elapsed())
    });
    // Until the client is done: steps taken before it connected (the world steps while IDLE)
    // make the sim's own step count the wrong stop condition.
    headless::finish_setup(&mut app);
    while !client.is_finished() {
        app.update();
    }
    let took = client
        .join()
        .map_err(|_| BenchError::Client("the lockstep client thread panicked".into()))??;
    Ok(took)
}

/// The same frame sizes bounced over loopback by two bare sockets, nothing else in between.
fn ping_pong_sized(joints: usize, steps: u64) -> Result<Duration, BenchError> {
    let (frame_len, answer_len) = frame_sizes(joints);
    super::ping_pong(answer_len, frame_len, steps)
}
