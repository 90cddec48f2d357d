//! `armsim bench agent`: sync-mode cycles/s with one agent over loopback, headless, as
//! fast as the agent answers. The agent is the Python example's loop in Rust (read a
//! perception, answer PD effectors for three joints). Its limit is measured bare in the same run:
//! a loopback ping-pong of the same message sizes plus the bare steps of a cycle, so the
//! protocol's own cost is a ratio (target: ≥ 80 % of the loopback limit).

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
use armsim::session::{SessionCommand, SessionRequest};
use armsim::sim::ClockMode;

use super::{BenchError, ROUNDS, app_on, bare_steps, median};

#[derive(Clone, Debug)]
pub struct AgentBenchReport {
    pub scene_id: String,
    pub cycles: u64,
    pub cycle_steps: u32,
    pub sync: Duration,
    /// The bare steps of all cycles.
    pub bare_step: Duration,
    /// `cycles` round trips of the same message sizes between two bare loopback sockets.
    pub ping_pong: Duration,
    /// Bytes of one effector message and one perception (with their length prefixes).
    pub sizes: (usize, usize),
}

impl AgentBenchReport {
    pub fn cycles_per_second(&self) -> f64 {
        self.cycles as f64 / self.sync.as_secs_f64()
    }

    /// 1 / (bare round trip + a cycle's bare steps): what a perfect sync server would reach.
    pub fn ideal_cycles_per_second(&self) -> f64 {
        self.cycles as f64 / (self.ping_pong + self.bare_step).as_secs_f64()
    }

    pub fn efficiency(&self) -> f64 {
        self.cycles_per_second() / self.ideal_cycles_per_second()
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
        writeln!(
            f,
            "  bare Rapier    : {:>8.0} steps/s ({:.1} µs/step; {:.1} µs per cycle of steps)",
            steps as f64 / self.bare_step.as_secs_f64(),
            self.bare_step.as_secs_f64() * 1e6 / steps as f64,
            self.bare_step.as_secs_f64() * 1e6 / self.cycles as f64
        )?;
        writeln!(
            f,
            "  bare loopback  : {:>8.0} round trips/s ({:.1} µs; {} B out, {} B back)",
            self.cycles as f64 / self.ping_pong.as_secs_f64(),
            self.ping_pong.as_secs_f64() * 1e6 / self.cycles as f64,
            self.sizes.0,
            self.sizes.1
        )?;
        write!(
            f,
            "  limit (1 / (rtt + cycle steps)): {:.0} cycles/s; sync / limit = {:.0} %",
            self.ideal_cycles_per_second(),
            self.efficiency() * 100.0
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
    let mut pong = Vec::with_capacity(ROUNDS);
    let mut sizes = (0, 0);
    for _ in 0..ROUNDS {
        let (took, s) = round(&scene, cycles, cycle_steps)?;
        sync.push(took);
        sizes = s;
        bare.push(bare_steps(&scene, cycles * u64::from(cycle_steps)));
        pong.push(super::ping_pong(sizes.0, sizes.1, cycles)?);
    }
    Ok(AgentBenchReport {
        scene_id: scene.config.scene_id.clone(),
        cycles,
        cycle_steps,
        sync: median(sync),
        bare_step: median(bare),
        ping_pong: median(pong),
        sizes,
    })
}

/// One sync run; returns its time and the bytes of one effector message and one perception.
fn round(
    scene: &Arc<Scene>,
    cycles: u64,
    cycle_steps: u32,
) -> Result<(Duration, (usize, usize)), BenchError> {
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
    let client = thread::spawn(move || -> io::Result<(Duration, (usize, usize))> {
        let mut s = TcpStream::connect(agent)?;
        s.set_nodelay(true)?;
        let mut decoder = FrameDecoder::default();
        let init = ["init", &robot, "bench", "1"].map(Sexp::atom);
        send(&mut s, &[Sexp::list(init)])?;
        recv(&mut s, &mut decoder)?;
        let t0 = Instant::now();
        let mut sizes = (0, 0);
        for cycle in 0..cycles {
            let v = Sexp::fixed((cycle as f64 / 60.0).sin() * 10.0, 2).map_err(io::Error::other)?;
            let msg: Vec<Sexp> = joints
                .iter()
                .map(|j| {
                    let gains = ["0", "200", "10", "0"].map(Sexp::atom);
                    Sexp::list([Sexp::atom(j.as_str()), v.clone()].into_iter().chain(gains))
                })
                .collect();
            let sent = send(&mut s, &msg)?;
            let got = recv(&mut s, &mut decoder)?.len() + 4;
            sizes = (sent, got);
        }
        Ok((t0.elapsed(), sizes))
    });
    headless::finish_setup(&mut app);
    // Running, so the effectors really drive the arm (the world steps in IDLE too).
    app.world_mut()
        .write_message(SessionRequest(SessionCommand::Start));
    while !client.is_finished() {
        app.update();
    }
    client
        .join()
        .map_err(|_| BenchError::Client("the agent thread panicked".into()))?
        .map_err(BenchError::from)
}

/// Sends `exprs` as one framed message (length prefix and payload in one write); returns its
/// bytes.
pub(super) fn send(s: &mut TcpStream, exprs: &[Sexp]) -> io::Result<usize> {
    let mut payload = Vec::new();
    sexp::write_all(exprs, &mut payload);
    let mut frame = Vec::with_capacity(payload.len() + 4);
    encode_frame(&payload, &mut frame).map_err(io::Error::other)?;
    s.write_all(&frame)?;
    Ok(frame.len())
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
