//! A headset-like TeleSpace revA teleoperation client: connects, starts the session, traces a circle with the
//! end effector, then picks up the green cube, carries it into the goal zone and puts it down.
//! It streams control frames at 60 Hz and heartbeats at the scene's period, like a headset.
//!
//! ```sh
//! cargo run --release &                      # the window, teleop on ws://127.0.0.1:8765/ws
//! cargo run --release --example teleop_headset -- ws://127.0.0.1:8765/ws
//! ```

use std::net::TcpStream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use armsim::protocol::teleop::envelope;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

type Ws = WebSocket<MaybeTlsStream<TcpStream>>;

struct Headset {
    ws: Ws,
    seq: u64,
    session: String,
    heartbeat_every: Duration,
    last_heartbeat: Instant,
    latest: Option<Value>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Headset {
    fn send(&mut self, msg_type: &str, payload: Value) -> tungstenite::Result<()> {
        self.seq += 1;
        let env = envelope::encode(msg_type, self.seq, now_ms(), &self.session, &payload);
        self.ws.send(Message::text(env))
    }

    /// Reads whatever has arrived; prints events and alerts, keeps the newest state frame.
    fn drain(&mut self) -> tungstenite::Result<Vec<Value>> {
        let mut events = Vec::new();
        loop {
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                    match v["msg_type"].as_str() {
                        Some("state_frame") => self.latest = Some(v),
                        Some("heartbeat_ack") => {
                            let rtt = now_ms()
                                .saturating_sub(v["payload"]["t_origin_ms"].as_u64().unwrap_or(0));
                            println!(
                                "heartbeat round trip {rtt} ms (server estimate {} ms)",
                                v["payload"]["rtt_ms_est"]
                            );
                        }
                        Some("sim_event") => {
                            let p = &v["payload"];
                            match p["event"].as_str() {
                                Some("ALERT") => println!(
                                    "alert {}: {}",
                                    p["extensions"]["alert"]["code"],
                                    p["extensions"]["alert"]["message"]
                                ),
                                _ => println!("event {} (sim {})", p["event"], p["sim_state"]),
                            }
                            events.push(v);
                        }
                        _ => {}
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(events);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn wait_event(&mut self, name: &str) -> tungstenite::Result<Value> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some(ev) = self
                .drain()?
                .into_iter()
                .find(|e| e["payload"]["event"] == name)
            {
                return Ok(ev);
            }
        }
        panic!("no {name} from the server within 5 s");
    }

    /// Streams the target for `secs` at 60 Hz, heartbeating on schedule.
    fn hold(&mut self, target: [f64; 3], grip: u8, secs: f64) -> tungstenite::Result<()> {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            self.frame(target, grip)?;
        }
        Ok(())
    }

    fn frame(&mut self, target: [f64; 3], grip: u8) -> tungstenite::Result<()> {
        let tick = Instant::now();
        self.send(
            "control_frame",
            json!({
                "frame_id": "vp_operator_anchor", "left_target_pos_m": target,
                "left_grip": {"mode": "binary", "value": grip}, "clutch_enabled": true, "alerts": []
            }),
        )?;
        if self.last_heartbeat.elapsed() >= self.heartbeat_every {
            self.last_heartbeat = Instant::now();
            self.send("heartbeat", json!({ "t_origin_ms": now_ms() }))?;
        }
        self.drain()?;
        std::thread::sleep(Duration::from_secs_f64(1.0 / 60.0).saturating_sub(tick.elapsed()));
        Ok(())
    }

    fn cube(&self, name: &str) -> Option<[f64; 3]> {
        let objects = self.latest.as_ref()?["payload"]["objects"]
            .as_array()?
            .clone();
        let o = objects.iter().find(|o| o["name"] == name)?;
        serde_json::from_value(o["pose"]["pos_m"].clone()).ok()
    }
}

fn main() -> tungstenite::Result<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:8765/ws".into());
    let (ws, _) = tungstenite::connect(&url)?;
    if let MaybeTlsStream::Plain(s) = ws.get_ref() {
        s.set_read_timeout(Some(Duration::from_millis(2)))?;
    }
    let mut h = Headset {
        ws,
        seq: 0,
        session: String::new(),
        heartbeat_every: Duration::from_secs(1),
        last_heartbeat: Instant::now(),
        latest: None,
    };
    h.send(
        "ui_cmd",
        json!({"command": "CONNECT", "requested_scene_config_id": "default_scene"}),
    )?;
    let hello = h.wait_event("CONNECTED")?;
    h.session = hello["session_id"].as_str().unwrap_or_default().to_string();
    let ext = &hello["payload"]["extensions"];
    if let Some(ms) = ext["heartbeat"]["period_ms"].as_u64() {
        h.heartbeat_every = Duration::from_millis(ms);
    }
    println!("session {} as {}", h.session, ext["role"]);
    if ext["role"] != "controller" {
        println!(
            "someone else controls the arm ({}); watching only",
            ext["controller"]
        );
        return Ok(());
    }
    h.send("ui_cmd", json!({"command": "START"}))?;
    h.wait_event("STARTED")?;

    println!("tracing a 10 cm circle");
    let (cx, cy, cz, r) = (0.45, 0.0, 1.2, 0.1);
    h.hold([cx + r, cy, cz], 0, 1.5)?;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(6) {
        let a = t0.elapsed().as_secs_f64() / 6.0 * std::f64::consts::TAU;
        h.frame([cx + r * a.cos(), cy + r * a.sin(), cz], 0)?;
    }

    let Some(cube) = h.cube("cube_green") else {
        println!("no cube_green in this scene");
        return Ok(());
    };
    println!("picking cube_green at {cube:.3?}");
    let (x, y) = (cube[0], cube[1]);
    h.hold([x, y, 1.15], 0, 1.5)?;
    // Aim at the cube's centre; the table clearance stops the hand just above the table.
    h.hold([x, y, cube[2]], 0, 1.5)?;
    h.hold([x, y, cube[2]], 1, 1.0)?;
    h.hold([x, y, 1.2], 1, 1.5)?;
    println!("carrying it to the goal zone");
    h.hold([0.45, 0.3, 1.2], 1, 2.0)?;
    h.hold([0.45, 0.3, 1.03], 1, 1.5)?;
    h.hold([0.45, 0.3, 1.03], 0, 1.0)?;
    h.hold([0.45, 0.3, 1.2], 0, 1.5)?;
    if let Some(p) = h.cube("cube_green") {
        println!("cube_green now at {p:.3?}");
    }
    h.send("ui_cmd", json!({"command": "DISCONNECT"}))?;
    h.wait_event("DISCONNECTED")?;
    Ok(())
}
