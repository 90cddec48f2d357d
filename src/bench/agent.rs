//! `armsim bench agent`: spec 001 sync-mode cycles/s with one agent over loopback, headless, as
//! fast as the agent answers. The agent is the Python example's loop in Rust (read a
//! perception, answer PD effectors for three joints); the bare step cost is measured in the same
//! run for context (a cycle is `cycle_steps` steps).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use armsim::headless;
use armsim::protocol::sexp::framing::{FrameDecoder, encode_frame};
use armsim::protocol::sexp::plugin::{self, SexpOptions};
use armsim::protocol::sexp::{self, Sexp};
use armsim::scene::Scene;
use armsim::session::SessionCommand;
use armsim::sim::ClockMode;

use super::{BenchError, ROUNDS, app_on, bare_steps, median};

#[derive(Clone, Debug)]
pub struct AgentBenchReport {
    pub scene_id: String,
    pub cycles: u64,
    pub cycle_steps: u32,
    pub sync: Duration,
    pub bare_step: Duration,
}

impl AgentBenchReport {
    pub fn cycles_per_second(&self) -> f64 {
        self.cycles as f64 / self.sync.as_secs_f64()
    }
}

impl fmt::Display for AgentBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps = self.cycles * u64::from(self.cycle_steps);
        writeln!(
            f,
            "scene {}: sync-mode agent over loopback, {} steps per cycle, {} cycles per round, median of {ROUNDS} rounds",
            self.scene_id, self.cycle_steps, self.cycles
        )?;
        writeln!(
            f,
            "  sync cycles    : {:>8.0} cycles/s ({:.1} µs/cycle, {:.0} steps/s)",
            self.cycles_per_second(),
            self.sync.as_secs_f64() * 1e6 / self.cycles as f64,
            steps as f64 / self.sync.as_secs_f64()
        )?;
        write!(
            f,
            "  bare Rapier    : {:>8.0} steps/s ({:.1} µs/step; {:.1} µs per cycle of steps)",
            steps as f64 / self.bare_step.as_secs_f64(),
            self.bare_step.as_secs_f64() * 1e6 / steps as f64,
            self.bare_step.as_secs_f64() * 1e6 / self.cycles as f64
        )
    }
}

pub fn run(
    scene: Arc<Scene>,
    cycles: u64,
    cycle_steps: u32,
) -> Result<AgentBenchReport, BenchError> {
    if cycles == 0 || cycle_steps == 0 {
        return Err(BenchError::NoSteps);
    }
    let mut sync = Vec::with_capacity(ROUNDS);
    let mut bare = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        sync.push(round(&scene, cycles, cycle_steps)?);
        bare.push(bare_steps(&scene, cycles * u64::from(cycle_steps)));
    }
    Ok(AgentBenchReport {
        scene_id: scene.config.scene_id.clone(),
        cycles,
        cycle_steps,
        sync: median(sync),
        bare_step: median(bare),
    })
}

fn round(scene: &Arc<Scene>, cycles: u64, cycle_steps: u32) -> Result<Duration, BenchError> {
    let mut app = app_on(scene, ClockMode::Fast);
    let (agent, _) = plugin::add(
        &mut app,
        SexpOptions {
            agent: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            sync: true,
            cycle_steps,
            ..Default::default()
        },
    )?;
    let agent = agent.ok_or_else(|| BenchError::Client("no agent port".into()))?;
    let robot = scene.robot.name.clone();
    let joints: Vec<String> = scene
        .arm_joints()
        .iter()
        .take(3)
        .map(|&j| scene.robot.joints[j].name.clone())
        .collect();
    let client = thread::spawn(move || -> io::Result<Duration> {
        let mut s = TcpStream::connect(agent)?;
        s.set_nodelay(true)?;
        let mut decoder = FrameDecoder::default();
        let init = ["init", &robot, "bench", "1"].map(Sexp::atom);
        send(&mut s, &[Sexp::list(init)])?;
        recv(&mut s, &mut decoder)?;
        let t0 = Instant::now();
        for cycle in 0..cycles {
            let v = Sexp::fixed((cycle as f64 / 60.0).sin() * 10.0, 2).map_err(io::Error::other)?;
            let msg: Vec<Sexp> = joints
                .iter()
                .map(|j| {
                    let gains = ["0", "200", "10", "0"].map(Sexp::atom);
                    Sexp::list([Sexp::atom(j.as_str()), v.clone()].into_iter().chain(gains))
                })
                .collect();
            send(&mut s, &msg)?;
            recv(&mut s, &mut decoder)?;
        }
        Ok(t0.elapsed())
    });
    headless::finish_setup(&mut app);
    // Running, so the effectors really drive the arm (the world steps in IDLE too).
    app.world_mut().write_message(SessionCommand::Start);
    while !client.is_finished() {
        app.update();
    }
    client
        .join()
        .map_err(|_| BenchError::Client("the agent thread panicked".into()))?
        .map_err(BenchError::from)
}

/// Sends `exprs` as one spec-001 message (length prefix and payload in one write).
pub(super) fn send(s: &mut TcpStream, exprs: &[Sexp]) -> io::Result<()> {
    let mut payload = Vec::new();
    sexp::write_all(exprs, &mut payload);
    let mut frame = Vec::with_capacity(payload.len() + 4);
    encode_frame(&payload, &mut frame).map_err(io::Error::other)?;
    s.write_all(&frame)
}

/// Reads until `decoder` has one whole message; returns its payload.
pub(super) fn recv(s: &mut TcpStream, decoder: &mut FrameDecoder) -> io::Result<Vec<u8>> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(frame) = decoder.next_frame().map_err(io::Error::other)? {
            return Ok(frame);
        }
        match s.read(&mut chunk)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => decoder.push(&chunk[..n]),
        }
    }
}
