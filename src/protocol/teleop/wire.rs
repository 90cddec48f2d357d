//! What the teleop socket threads and the ECS share, and one connection's wire state: the
//! server's options ([`TeleopConfig`]), the session state the threads answer with, the events
//! each way ([`ServerEvent`], [`ToClient`]), and a connection's [`Wire`] (the session id it
//! issued, its outbound `seq`, the ping/pong round trip) with the handling of what it reads.
//! Heartbeat acks are answered and flushed as soon as they are read, so a heartbeat measures
//! the network and not the frame rate.
//!
//! The listener and handshakes ([`super::server`]) hand connections to the I/O thread
//! ([`super::io`]), which drives each `Wire`.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::Sender;
use serde_json::{Map, Value};
use tungstenite::{Error as WsError, Message};

use super::envelope::{self, HeartbeatAckPayload, Inbound, SimEventPayload, UiCommand};
use super::sessions::Input;

/// Interval of the server's ping, whose pong gives `rtt_ms_est`.
pub(super) const PING_INTERVAL: Duration = Duration::from_millis(500);

#[derive(Clone, Debug)]
pub struct TeleopConfig {
    pub addr: SocketAddr,
    /// The only path a WebSocket is accepted on (`networking.ws_path`).
    pub path: String,
    /// CONNECT must request this scene (`scene_id`).
    pub scene_id: String,
    /// Messages over this size are refused with an alert.
    pub max_message: usize,
    /// The pairing key a peer beyond loopback must give on the upgrade (`?key=`), as the
    /// headset page's wss does; `None` asks no one (`--teleop-no-key`). Loopback peers never
    /// need it, so unmodified local clients keep working.
    pub key: Option<String>,
}

/// The session state every connection thread reads when it has to answer on its own.
#[derive(Debug, Default)]
pub struct SharedSimState(AtomicU8);

impl SharedSimState {
    pub fn set(&self, state: &'static str) {
        let code = match state {
            "RUNNING" => 1,
            "PAUSED" => 2,
            "ERROR" => 3,
            _ => 0,
        };
        self.0.store(code, Ordering::Relaxed);
    }

    pub fn get(&self) -> &'static str {
        match self.0.load(Ordering::Relaxed) {
            1 => "RUNNING",
            2 => "PAUSED",
            3 => "ERROR",
            _ => "IDLE",
        }
    }
}

/// Per-connection counters the panel shows (through the connection registry); written by the
/// connection thread.
pub use crate::protocol::registry::Counters as ConnCounters;

/// What the network side tells the simulation.
pub enum ServerEvent {
    /// Past its handshake; the ECS sends it events and state frames through [`Hub::io`].
    Opened {
        conn: u64,
        peer: SocketAddr,
        counters: Arc<ConnCounters>,
    },
    /// What the connection's session did (CONNECT accepted, a command, a control frame, a
    /// heartbeat, a refusal, the close), handed as it is to the sessions' state machine.
    Session(Input),
    /// For the panel's alert log, outside any session (a page request with a wrong key).
    Alert { code: &'static str, text: String },
}

/// What the simulation tells one connection.
pub enum ToClient {
    /// A `sim_event`; the thread stamps envelope `seq`, time and session id.
    Event(SimEventPayload),
    /// After DISCONNECTED: the session is over (the socket stays open for a new CONNECT).
    EndSession,
    /// Close the WebSocket (the panel's disconnect button).
    Close(String),
}

/// A fresh, unguessable session id (UUID v4 layout).
pub fn new_session_id() -> String {
    let a = getrandom::u64().unwrap_or_else(|_| fallback_random());
    let b = getrandom::u64().unwrap_or_else(|_| fallback_random());
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

fn fallback_random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A WebSocket over any [`ByteStream`], as the I/O thread drives it (non-blocking).
pub(super) trait WsIo: Send {
    fn read(&mut self) -> Result<Message, WsError>;
    fn write(&mut self, msg: Message) -> Result<(), WsError>;
    fn flush(&mut self) -> Result<(), WsError>;
    fn close(&mut self) -> Result<(), WsError>;
    /// The socket underneath, for the poller.
    fn tcp(&self) -> &TcpStream;
}

/// One connection's wire state.
pub(super) struct Wire {
    pub ws: Box<dyn WsIo>,
    pub conn: u64,
    pub session: Option<String>,
    pub seq: u64,
    pub rtt_ms: Option<f64>,
    pub ping: Option<(u64, Instant)>,
    pub last_ping: Instant,
    pub counters: Arc<ConnCounters>,
    /// The socket took less than was written: the rest waits in the WebSocket's buffer.
    pub blocked: bool,
}

/// `WouldBlock` from a non-blocking socket is not an error: what was written stays buffered.
fn unless_blocked(r: Result<(), WsError>, blocked: &mut bool) -> Result<(), WsError> {
    match r {
        Err(WsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
            *blocked = true;
            Ok(())
        }
        other => other,
    }
}

impl Wire {
    pub fn new(ws: Box<dyn WsIo>, conn: u64, counters: Arc<ConnCounters>) -> Self {
        Self {
            ws,
            conn,
            session: None,
            seq: 0,
            rtt_ms: None,
            ping: None,
            last_ping: Instant::now(),
            counters,
            blocked: false,
        }
    }

    /// Buffers one message (written now if the socket takes it).
    pub fn write(&mut self, msg: Message) -> Result<(), WsError> {
        unless_blocked(self.ws.write(msg), &mut self.blocked)
    }

    /// Writes what is buffered; `blocked` says whether some is left.
    pub fn flush(&mut self) -> Result<(), WsError> {
        self.blocked = false;
        unless_blocked(self.ws.flush(), &mut self.blocked)
    }

    pub fn send(&mut self, msg_type: &str, payload: &impl serde::Serialize) -> Result<(), WsError> {
        self.seq += 1;
        let session = self.session.as_deref().unwrap_or("");
        let text = envelope::encode(msg_type, self.seq, now_ms(), session, payload);
        self.counters.msgs_out.fetch_add(1, Ordering::Relaxed);
        self.write(Message::text(text))
    }

    fn alert(&mut self, sim_state: &'static str, code: &str, message: &str) -> Result<(), WsError> {
        let mut ext = Map::new();
        ext.insert(
            "alert".into(),
            serde_json::json!({ "code": code, "message": message }),
        );
        let payload = SimEventPayload {
            event: "ALERT",
            sim_state,
            session_id: self.session.clone().unwrap_or_default(),
            extensions: ext,
        };
        self.send("sim_event", &payload)
    }

    pub fn rtt(&self) -> f64 {
        self.rtt_ms.unwrap_or(0.0)
    }
}

pub(super) fn ping(wire: &mut Wire) -> Result<(), WsError> {
    let nonce = wire.ping.map_or(1, |(n, _)| n + 1);
    wire.write(Message::Ping(nonce.to_be_bytes().to_vec().into()))?;
    wire.ping = Some((nonce, Instant::now()));
    wire.last_ping = Instant::now();
    Ok(())
}

pub(super) fn on_pong(wire: &mut Wire, payload: &[u8]) {
    let Some((nonce, sent)) = wire.ping else {
        return;
    };
    if payload != nonce.to_be_bytes() {
        return;
    }
    let sample = sent.elapsed().as_secs_f64() * 1e3;
    // A light moving average: follows a changing network within a few pings, ignores one blip.
    let rtt = wire.rtt_ms.map_or(sample, |r| 0.7 * r + 0.3 * sample);
    wire.rtt_ms = Some(rtt);
    wire.counters
        .rtt_us
        .store((rtt * 1e3).round().max(1.0) as u64, Ordering::Relaxed);
}

pub(super) fn refuse(
    wire: &mut Wire,
    events: &Sender<ServerEvent>,
    shared: &SharedSimState,
    code: &'static str,
    message: String,
) -> Result<(), WsError> {
    wire.alert(shared.get(), code, &message)?;
    let _ = events.send(ServerEvent::Session(Input::Refused {
        conn: wire.conn,
        code,
        message,
    }));
    Ok(())
}

pub(super) fn on_text(
    wire: &mut Wire,
    text: &str,
    config: &TeleopConfig,
    events: &Sender<ServerEvent>,
    shared: &SharedSimState,
) -> Result<(), WsError> {
    let decoded = match envelope::decode(text, config.max_message) {
        Ok(d) => d,
        Err(e) => return refuse(wire, events, shared, e.code(), e.to_string()),
    };
    wire.counters
        .last_seq_in
        .store(decoded.seq, Ordering::Relaxed);
    let conn = wire.conn;
    if let Inbound::UiCmd(cmd) = &decoded.msg
        && cmd.command == UiCommand::Connect
    {
        if let Some(current) = &wire.session {
            let message = format!("already in session {current}; send DISCONNECT first");
            return refuse(wire, events, shared, "ALREADY_CONNECTED", message);
        }
        return match &cmd.requested_scene_config_id {
            None => refuse(
                wire,
                events,
                shared,
                "MALFORMED_MESSAGE",
                "CONNECT needs payload.requested_scene_config_id".into(),
            ),
            Some(id) if *id != config.scene_id => {
                let message = format!(
                    "requested scene {id:?} but this server runs {:?}",
                    config.scene_id
                );
                refuse(wire, events, shared, "SCENE_MISMATCH", message)
            }
            Some(_) => {
                let session_id = new_session_id();
                wire.session = Some(session_id.clone());
                wire.seq = 0;
                // The first pong gives rtt_ms_est before the first heartbeat needs it.
                ping(wire)?;
                let _ = events.send(ServerEvent::Session(Input::SessionOpened {
                    conn,
                    session_id,
                    role: cmd.role,
                }));
                Ok(())
            }
        };
    }
    let Some(session) = wire.session.as_deref() else {
        let message = format!(
            "{} before CONNECT: send ui_cmd CONNECT first",
            decoded.msg.msg_type()
        );
        return refuse(wire, events, shared, "NOT_CONNECTED", message);
    };
    if decoded.session_id != session {
        let message = format!(
            "session_id {:?} is not this connection's session; {} ignored",
            decoded.session_id,
            decoded.msg.msg_type()
        );
        return refuse(wire, events, shared, "SESSION_MISMATCH", message);
    }
    match decoded.msg {
        Inbound::UiCmd(cmd) => {
            let _ = events.send(ServerEvent::Session(Input::Command {
                conn,
                command: cmd.command,
                role: cmd.role,
            }));
        }
        Inbound::Control(frame) => {
            let _ = events.send(ServerEvent::Session(Input::Control {
                conn,
                seq: decoded.seq,
                frame,
            }));
        }
        Inbound::Heartbeat(hb) => {
            let ack = HeartbeatAckPayload {
                t_origin_ms: hb.t_origin_ms,
                rtt_ms_est: wire.rtt(),
                extensions: Map::<String, Value>::new(),
            };
            wire.send("heartbeat_ack", &ack)?;
            // Sent now, not after the other messages read with it: the client is timing this.
            wire.flush()?;
            let _ = events.send(ServerEvent::Session(Input::Heartbeat { conn }));
        }
    }
    Ok(())
}
