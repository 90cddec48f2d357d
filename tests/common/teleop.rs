//! revA test clients: a headless sim serving teleop on 127.0.0.1:0, and `Client`, a
//! headset on a real WebSocket that keeps every message it read, with the checks tests share.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::teleop::envelope;
use armsim::protocol::teleop::plugin::{self, TeleopOptions};
use armsim::scene::Scene;
use armsim::sim::ClockMode;
use bevy::prelude::App;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// A headless sim in real time serving teleop on an ephemeral loopback port.
pub fn teleop_app(scene: Arc<Scene>) -> (App, SocketAddr) {
    let mut app = super::headless(scene, ClockMode::RealTime { speed: 1.0 });
    let addr = add_teleop(&mut app);
    finish_setup(&mut app);
    (app, addr)
}

/// Serves teleop (60 Hz state frames) on an ephemeral loopback port of `app`; returns it.
pub fn add_teleop(app: &mut App) -> SocketAddr {
    plugin::add(
        app,
        TeleopOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            state_rate_hz: 60.0,
            controller_grace: None,
            key: None,
        },
    )
    .expect("binds")
}

/// A teleop server on `scene` with `client` playing a headset against it in a thread while this
/// thread runs the frames; returns what the client returns.
pub fn serve<T: Send + 'static>(
    scene: Arc<Scene>,
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
) -> T {
    let (mut app, addr) = teleop_app(scene);
    let client = std::thread::spawn(move || client(addr));
    super::drive(&mut app, client, Duration::from_micros(300))
}

/// A headset: one WebSocket session, with every message it has read.
pub struct Client {
    pub ws: WebSocket<MaybeTlsStream<TcpStream>>,
    pub seq: u64,
    pub session: String,
    /// Every message received, in order.
    pub log: Vec<Value>,
    /// When this session last sent a heartbeat (see [`Client::keep_alive`]).
    last_heartbeat: Option<Instant>,
}

/// How often a streaming client sends a heartbeat, in wall time: the heartbeat watchdog is a
/// wall-clock rule, and the shortest timeout a test sets is 400 ms. Counted in frames instead,
/// a loaded machine's slower frames stretched the gaps past it.
const HEARTBEAT_EVERY: Duration = Duration::from_millis(50);

/// Steps of `secs` of sim time (240 Hz).
fn steps_of(secs: f64) -> u64 {
    (secs * 240.0).round() as u64
}

impl Client {
    pub fn open(addr: SocketAddr) -> Self {
        let (ws, _) = tungstenite::connect(format!("ws://{addr}/ws")).expect("handshake");
        if let MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        Self {
            ws,
            seq: 0,
            session: String::new(),
            log: Vec::new(),
            last_heartbeat: None,
        }
    }

    pub fn send_raw(&mut self, text: String) {
        self.ws.send(Message::text(text)).expect("send");
    }

    /// The next envelope of this session (its `seq` counted), built by the server's own codec.
    pub fn envelope(&mut self, msg_type: &str, payload: Value) -> String {
        self.seq += 1;
        envelope::encode(
            msg_type,
            self.seq,
            1_700_000_000_000u64 + self.seq,
            &self.session,
            &payload,
        )
    }

    pub fn send(&mut self, msg_type: &str, payload: Value) {
        let env = self.envelope(msg_type, payload);
        self.send_raw(env);
    }

    pub fn recv(&mut self) -> Value {
        // Pings keep the socket busy without a message: the deadline is the call's, not a read's.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(
                Instant::now() < deadline,
                "no message within 5 s (pings only)"
            );
            match self.ws.read().expect("a message within 5 s") {
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(t.as_str()).expect("server sends JSON");
                    assert_eq!(v["schema_version"], "1.0.0-revA");
                    self.log.push(v.clone());
                    return v;
                }
                Message::Close(_) => panic!("server closed the connection"),
                _ => {}
            }
        }
    }

    /// Reads until `pred` holds (skipping state frames and the rest).
    pub fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(Instant::now() < deadline, "no {what} within 5 s");
            let v = self.recv();
            if pred(&v) {
                return v;
            }
        }
    }

    pub fn event(&mut self, name: &str) -> Value {
        self.until(name, |v| {
            v["msg_type"] == "sim_event" && v["payload"]["event"] == name
        })
    }

    pub fn alert(&mut self, code: &str) -> Value {
        self.until(code, |v| {
            v["msg_type"] == "sim_event"
                && v["payload"]["event"] == "ALERT"
                && v["payload"]["extensions"]["alert"]["code"] == code
        })
    }

    /// Whether an ALERT with `code` has been received so far (including ones skipped over).
    pub fn saw_alert(&self, code: &str) -> bool {
        self.log.iter().any(|v| {
            v["msg_type"] == "sim_event"
                && v["payload"]["event"] == "ALERT"
                && v["payload"]["extensions"]["alert"]["code"] == code
        })
    }

    pub fn state(&mut self) -> Value {
        self.until("state_frame", |v| v["msg_type"] == "state_frame")
    }

    /// The first state frame stamped at or after `event` (a `sim_event`), skipping frames that
    /// were already on their way when it happened. After waiting on an event, read the state
    /// with this, never with [`Client::state`].
    pub fn state_after(&mut self, event: &Value) -> Value {
        let at = stamp(event);
        self.until("a state frame after the event", |v| {
            v["msg_type"] == "state_frame" && stamp(v) >= at
        })
    }

    pub fn ui(&mut self, command: &str) {
        self.send("ui_cmd", json!({ "command": command }));
    }

    /// A session that has sent CONNECT and read its CONNECTED.
    pub fn connected(addr: SocketAddr) -> Self {
        let mut c = Self::open(addr);
        c.hello();
        c
    }

    /// A session that has connected and started: the controller, if nobody else is.
    pub fn started(addr: SocketAddr) -> Self {
        let mut c = Self::connected(addr);
        c.start();
        c
    }

    /// START, and its STARTED event.
    pub fn start(&mut self) -> Value {
        self.ui("START");
        self.event("STARTED")
    }

    /// CONNECT; returns the CONNECTED event.
    pub fn hello(&mut self) -> Value {
        self.send(
            "ui_cmd",
            json!({"command": "CONNECT", "requested_scene_config_id": "default_scene"}),
        );
        let ev = self.event("CONNECTED");
        self.session = ev["session_id"].as_str().unwrap().to_string();
        assert_eq!(ev["payload"]["session_id"], self.session.as_str());
        ev
    }

    /// CONNECT asking for `role` (`extensions.role`, an armsim extension); returns CONNECTED.
    pub fn hello_as(&mut self, role: &str) -> Value {
        self.send(
            "ui_cmd",
            json!({"command": "CONNECT", "requested_scene_config_id": "default_scene",
                   "extensions": {"role": role}}),
        );
        let ev = self.event("CONNECTED");
        self.session = ev["session_id"].as_str().unwrap().to_string();
        ev
    }

    pub fn control(&mut self, target: [f64; 3], grip: u8, clutch: bool) {
        self.send("control_frame", control_payload(target, grip, clutch));
    }

    pub fn heartbeat(&mut self) {
        self.send("heartbeat", json!({ "t_origin_ms": 1_700_000_000_123u64 }));
        self.last_heartbeat = Some(Instant::now());
    }

    /// A heartbeat if none went for [`HEARTBEAT_EVERY`] of wall time.
    pub fn keep_alive(&mut self) {
        if self
            .last_heartbeat
            .is_none_or(|t| t.elapsed() >= HEARTBEAT_EVERY)
        {
            self.heartbeat();
        }
    }

    /// Streams control frames, one per state frame read (with heartbeats, if `heartbeats`),
    /// until a state frame stamped `secs` of sim time after the first one read arrives; returns
    /// that state. Paced by the simulation, not by the wall clock: on a loaded machine a
    /// real-time run falls behind real time, and a wall-clock stream then covered too little
    /// motion for the arm to arrive.
    pub fn stream(
        &mut self,
        target: [f64; 3],
        grip: u8,
        clutch: bool,
        secs: f64,
        heartbeats: bool,
    ) -> Value {
        let mut until = None;
        loop {
            self.control(target, grip, clutch);
            if heartbeats {
                self.keep_alive();
            }
            let s = self.state();
            let step = step_of(&s);
            if step >= *until.get_or_insert(step + steps_of(secs)) {
                return s;
            }
        }
    }

    /// Streams control frames (with heartbeats) for `secs` of wall time while the simulation is
    /// paused, when no step comes to pace [`Client::stream`]; returns the last state.
    pub fn stream_while_paused(&mut self, target: [f64; 3], clutch: bool, secs: f64) -> Value {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut last = Value::Null;
        while Instant::now() < end {
            self.control(target, 0, clutch);
            self.keep_alive();
            last = self.state();
        }
        last
    }

    /// Reads state frames until one stamped `secs` of sim time after the first one read; returns
    /// it. For a check that nothing moved: the simulation must have run that long.
    pub fn state_after_sim(&mut self, secs: f64) -> Value {
        let first = step_of(&self.state());
        self.until("a state frame later in sim time", |v| {
            v["msg_type"] == "state_frame" && step_of(v) >= first + steps_of(secs)
        })
    }
}

/// `(episode, step)` of a state frame or sim_event: orders them across resets.
pub fn stamp(msg: &Value) -> (u64, u64) {
    let ext = &msg["payload"]["extensions"];
    let field = |name: &str| {
        ext[name]
            .as_u64()
            .unwrap_or_else(|| panic!("no extensions.{name} in {msg}"))
    };
    (field("episode"), field("step"))
}

pub fn ee(state: &Value) -> [f64; 3] {
    let p = &state["payload"]["ee_pos_m"];
    [
        p[0].as_f64().unwrap(),
        p[1].as_f64().unwrap(),
        p[2].as_f64().unwrap(),
    ]
}

pub fn dist(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

pub fn alerts(state: &Value) -> Vec<String> {
    state["payload"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

pub fn step_of(state: &Value) -> u64 {
    state["payload"]["extensions"]["step"].as_u64().unwrap()
}

pub fn last_seq(state: &Value) -> u64 {
    state["payload"]["extensions"]["last_control_seq"]
        .as_u64()
        .unwrap()
}

impl Client {
    /// Streams control frames (with heartbeats) until a state frame stamped at
    /// `until_step` or later arrives; returns every state frame seen. Paced by the state frames,
    /// not by the wall clock.
    pub fn stream_until_step(
        &mut self,
        target: [f64; 3],
        clutch: bool,
        until_step: u64,
    ) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            self.control(target, 0, clutch);
            self.keep_alive();
            let s = self.state();
            let done = step_of(&s) >= until_step;
            frames.push(s);
            if done {
                break;
            }
        }
        frames
    }

    /// Sends two messages in one flush, so the server reads them together.
    pub fn send_pair(&mut self, a: (&str, Value), b: (&str, Value)) {
        for (msg_type, payload) in [a, b] {
            let env = self.envelope(msg_type, payload);
            self.ws.write(Message::text(env)).expect("write");
        }
        self.ws.flush().expect("flush");
    }

    /// Reads (sending a heartbeat after each message, so this session stays live) until an
    /// ALERT with `code` arrives.
    pub fn alert_keeping_alive(&mut self, code: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no {code} within 10 s");
            let v = self.recv();
            self.heartbeat();
            if v["msg_type"] == "sim_event"
                && v["payload"]["event"] == "ALERT"
                && v["payload"]["extensions"]["alert"]["code"] == code
            {
                return v;
            }
        }
    }
}

/// A control frame's payload: binary grip, no alerts.
pub fn control_payload(target: [f64; 3], grip: u8, clutch: bool) -> Value {
    json!({
        "frame_id": "vp_operator_anchor",
        "left_target_pos_m": target,
        "left_grip": {"mode": "binary", "value": grip},
        "clutch_enabled": clutch,
        "alerts": []
    })
}
