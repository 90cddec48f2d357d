//! `armsim bench teleop`: revA on loopback, as a headset sees it. In one run: control frame →
//! first state frame that reflects it (the frame's `last_control_seq`), heartbeat → ack round
//! trip, and the real-time factor while one controller streams at 60 Hz and `observers` more
//! sessions receive every state frame.

use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use armsim::headless;
use armsim::protocol::teleop::envelope;
use armsim::protocol::teleop::plugin::{self, TeleopOptions};
use armsim::scene::Scene;
use armsim::sim::{ClockMode, SimClock};
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use super::{BenchError, app_on};

#[derive(Clone, Debug)]
pub struct TeleopBenchReport {
    pub scene_id: String,
    pub observers: usize,
    /// Sorted samples (ms).
    pub reflection_ms: Vec<f64>,
    pub heartbeat_ms: Vec<f64>,
    pub real_time_factor: f64,
    /// State frames each observer received per second, min over observers.
    pub observer_rate_min: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

impl fmt::Display for TeleopBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scene {}: teleop revA over loopback, 1 controller at 60 Hz + {} observers",
            self.scene_id, self.observers
        )?;
        writeln!(
            f,
            "  control → reflecting state frame: p50 {:.2} ms, p99 {:.2} ms ({} samples)",
            percentile(&self.reflection_ms, 0.5),
            percentile(&self.reflection_ms, 0.99),
            self.reflection_ms.len()
        )?;
        writeln!(
            f,
            "  heartbeat round trip            : p50 {:.3} ms, p99 {:.3} ms ({} samples)",
            percentile(&self.heartbeat_ms, 0.5),
            percentile(&self.heartbeat_ms, 0.99),
            self.heartbeat_ms.len()
        )?;
        write!(
            f,
            "  real-time factor {:.3}; slowest observer got {:.1} state frames/s",
            self.real_time_factor, self.observer_rate_min
        )
    }
}

type Ws = WebSocket<MaybeTlsStream<TcpStream>>;

struct Session {
    ws: Ws,
    seq: u64,
    id: String,
}

impl Session {
    fn open(addr: SocketAddr) -> Result<Self, BenchError> {
        let (ws, _) = tungstenite::connect(format!("ws://{addr}/ws"))
            .map_err(|e| BenchError::Client(format!("connect: {e}")))?;
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            s.set_nodelay(true)?;
        }
        Ok(Self {
            ws,
            seq: 0,
            id: String::new(),
        })
    }

    fn send(&mut self, msg_type: &str, payload: Value) -> Result<(), BenchError> {
        self.seq += 1;
        let env = envelope::encode(msg_type, self.seq, 0, &self.id, &payload);
        self.ws
            .send(Message::text(env))
            .map_err(|e| BenchError::Client(format!("send: {e}")))
    }

    fn recv(&mut self) -> Result<Value, BenchError> {
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    return serde_json::from_str(t.as_str())
                        .map_err(|e| BenchError::Client(format!("bad JSON from the server: {e}")));
                }
                Ok(_) => {}
                Err(e) => return Err(BenchError::Client(format!("read: {e}"))),
            }
        }
    }

    fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Result<Value, BenchError> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let v = self.recv()?;
            if pred(&v) {
                return Ok(v);
            }
        }
        Err(BenchError::Client(
            "the server did not answer as expected within 10 s".into(),
        ))
    }

    fn connect(&mut self, scene_id: &str) -> Result<(), BenchError> {
        self.send(
            "ui_cmd",
            json!({"command": "CONNECT", "requested_scene_config_id": scene_id}),
        )?;
        let hello = self.until(|v| v["payload"]["event"] == "CONNECTED")?;
        self.id = hello["session_id"].as_str().unwrap_or_default().to_string();
        Ok(())
    }
}

pub fn run(
    scene: Arc<Scene>,
    observers: usize,
    samples: usize,
) -> Result<TeleopBenchReport, BenchError> {
    if samples == 0 {
        return Err(BenchError::NoSteps);
    }
    let mut app = app_on(&scene, ClockMode::RealTime { speed: 1.0 });
    let addr = plugin::add(
        &mut app,
        TeleopOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            state_rate_hz: 60.0,
            controller_grace: None,
            key: None,
        },
    )?;
    headless::finish_setup(&mut app);
    let scene_id = scene.config.scene_id.clone();
    let done = Arc::new(AtomicBool::new(false));

    // The controller first, so it owns the arm; observers join once it has.
    let id = scene_id.clone();
    let controlling = Arc::new(AtomicBool::new(false));
    let controlling_set = controlling.clone();
    let controller = thread::spawn(move || -> Result<(Vec<f64>, Vec<f64>), BenchError> {
        let mut c = Session::open(addr)?;
        c.connect(&id)?;
        controlling_set.store(true, Ordering::SeqCst);
        c.send("ui_cmd", json!({"command": "START"}))?;
        c.until(|v| v["payload"]["event"] == "STARTED")?;
        // Observers connect while the controller settles.
        thread::sleep(Duration::from_millis(1500));
        let mut reflection = Vec::with_capacity(samples);
        for i in 0..samples {
            let t = i as f64 / 60.0;
            let target = [0.45 + 0.05 * t.cos(), 0.05 * t.sin(), 1.2];
            let sent = Instant::now();
            c.send(
                "control_frame",
                json!({"frame_id": "vp_operator_anchor", "left_target_pos_m": target,
                       "left_grip": {"mode": "binary", "value": 0}, "clutch_enabled": true}),
            )?;
            let seq = c.seq;
            c.until(|v| {
                v["msg_type"] == "state_frame"
                    && v["payload"]["extensions"]["last_control_seq"].as_u64() >= Some(seq)
            })?;
            reflection.push(sent.elapsed().as_secs_f64() * 1e3);
            if i % 30 == 0 {
                c.send("heartbeat", json!({"t_origin_ms": 0}))?;
            }
            thread::sleep(Duration::from_secs_f64(1.0 / 60.0).saturating_sub(sent.elapsed()));
        }
        let mut heartbeat = Vec::with_capacity(samples);
        for _ in 0..samples {
            let sent = Instant::now();
            c.send("heartbeat", json!({"t_origin_ms": 1}))?;
            c.until(|v| v["msg_type"] == "heartbeat_ack")?;
            heartbeat.push(sent.elapsed().as_secs_f64() * 1e3);
            thread::sleep(Duration::from_millis(3));
        }
        Ok((reflection, heartbeat))
    });
    let watchers: Vec<_> = (0..observers)
        .map(|_| {
            let (done, id, controlling) = (done.clone(), scene_id.clone(), controlling.clone());
            thread::spawn(move || -> Result<f64, BenchError> {
                // Wait for the controller's CONNECT before taking a session.
                let wait = Instant::now();
                while !controlling.load(Ordering::SeqCst)
                    && wait.elapsed() < Duration::from_secs(10)
                {
                    thread::sleep(Duration::from_millis(5));
                }
                let mut o = Session::open(addr)?;
                o.connect(&id)?;
                let t0 = Instant::now();
                let mut frames = 0u64;
                while !done.load(Ordering::Relaxed) {
                    if o.recv()?["msg_type"] == "state_frame" {
                        frames += 1;
                    }
                }
                Ok(frames as f64 / t0.elapsed().as_secs_f64())
            })
        })
        .collect();

    let mut measured_from: Option<(Instant, f64)> = None;
    while !controller.is_finished() {
        app.update();
        if measured_from.is_none() {
            let sim_time = app.world().resource::<SimClock>().sim_time;
            if sim_time > 1.0 {
                measured_from = Some((Instant::now(), sim_time));
            }
        }
        thread::sleep(Duration::from_micros(500));
    }
    let sim_end = app.world().resource::<SimClock>().sim_time;
    done.store(true, Ordering::Relaxed);
    // Observers read until their next frame; keep serving them until they stop.
    let deadline = Instant::now() + Duration::from_secs(5);
    while watchers.iter().any(|w| !w.is_finished()) && Instant::now() < deadline {
        app.update();
        thread::sleep(Duration::from_micros(500));
    }
    let (mut reflection, mut heartbeat) = controller
        .join()
        .map_err(|_| BenchError::Client("the controller thread panicked".into()))??;
    let mut observer_rate_min = f64::INFINITY;
    for w in watchers {
        let rate = w
            .join()
            .map_err(|_| BenchError::Client("an observer thread panicked".into()))??;
        observer_rate_min = observer_rate_min.min(rate);
    }
    reflection.sort_by(f64::total_cmp);
    heartbeat.sort_by(f64::total_cmp);
    let real_time_factor = measured_from
        .map(|(t0, s0)| (sim_end - s0) / t0.elapsed().as_secs_f64())
        .unwrap_or(f64::NAN);
    Ok(TeleopBenchReport {
        scene_id,
        observers,
        reflection_ms: reflection,
        heartbeat_ms: heartbeat,
        real_time_factor,
        observer_rate_min: if observers == 0 {
            0.0
        } else {
            observer_rate_min
        },
    })
}
