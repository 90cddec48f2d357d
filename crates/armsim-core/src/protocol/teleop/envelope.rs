//! revA's wire format, sans-IO: the envelope every message travels in, the typed
//! payloads both ways, and a decoder that turns any text into either a message or an error a
//! client can be told about. No sockets, no clocks, no Bevy: the server thread and the tests
//! call it the same way.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::protocol::dataset::DatasetControl;

/// The only schema version revA speaks.
pub const SCHEMA_VERSION: &str = "1.0.0-revA";

/// Messages over this size are refused with an alert; the connection stays usable.
pub const DEFAULT_MAX_MESSAGE: usize = 64 * 1024;

/// `ui_cmd.payload.command`: revA's five, armsim's two extensions that ask for or give up the
/// arm on an open session (`REQUEST_CONTROL`, `RELEASE_CONTROL`), and its three for the LeRobot
/// dataset being recorded (`LEROBOT_END_EPISODE`, `LEROBOT_RERECORD`, `LEROBOT_STOP`). Any other
/// name is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UiCommand {
    Connect,
    Start,
    Pause,
    Reset,
    Disconnect,
    /// armsim extension: take the arm if nobody holds it (as `extensions.role: "controller"`).
    RequestControl,
    /// armsim extension: give the arm up and only watch (as `extensions.role: "observer"`).
    ReleaseControl,
    /// armsim extension, the controller's: end the LeRobot dataset's open episode and keep it.
    LerobotEndEpisode,
    /// armsim extension, the controller's: discard the open episode and reset the scene.
    LerobotRerecord,
    /// armsim extension, the controller's: stop recording and finish the dataset.
    LerobotStop,
}

impl UiCommand {
    /// The LeRobot recorder's request this command is, if it is one.
    pub fn dataset_control(self) -> Option<DatasetControl> {
        match self {
            UiCommand::LerobotEndEpisode => Some(DatasetControl::EndEpisode),
            UiCommand::LerobotRerecord => Some(DatasetControl::Rerecord),
            UiCommand::LerobotStop => Some(DatasetControl::Stop),
            _ => None,
        }
    }
}

/// The role a client asks for in a `ui_cmd`'s `extensions.role` (armsim extension): on CONNECT,
/// `observer` watches without ever holding the arm and `controller` takes it if it is free
/// (absent: the first session controls, as before); on any other command, the role is asked
/// for before the command acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleRequest {
    Controller,
    Observer,
}

#[derive(Clone, Debug, PartialEq)]
pub struct UiCmd {
    pub command: UiCommand,
    /// Required by CONNECT; must equal the scene's `scene_id`.
    pub requested_scene_config_id: Option<String>,
    /// `extensions.role`, from the payload's `extensions` or else the envelope's.
    pub role: Option<RoleRequest>,
}

/// `ui_cmd.payload` as sent; `extensions` is read for `role` only.
#[derive(Deserialize)]
struct UiCmdWire {
    command: UiCommand,
    #[serde(default)]
    requested_scene_config_id: Option<String>,
    #[serde(default)]
    extensions: Option<Value>,
}

/// `extensions.role` of a payload's or an envelope's `extensions` (absent, or null: none).
fn role_of(extensions: Option<&Value>) -> Result<Option<RoleRequest>, String> {
    match extensions.and_then(|e| e.get("role")) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|_| {
            format!("extensions.role must be \"controller\" or \"observer\", got {v}")
        }),
    }
}

/// `control_frame.payload.left_grip`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct Grip {
    pub mode: GripMode,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GripMode {
    Binary,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ControlFrame {
    pub frame_id: String,
    pub left_target_pos_m: [f64; 3],
    pub left_grip: Grip,
    pub clutch_enabled: bool,
    #[serde(default)]
    pub alerts: Vec<Value>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HeartbeatPayload {
    /// Echoed verbatim in `heartbeat_ack`, whatever number type the client used.
    pub t_origin_ms: Value,
}

/// An upstream (client → server) message.
#[derive(Clone, Debug, PartialEq)]
pub enum Inbound {
    UiCmd(UiCmd),
    Control(ControlFrame),
    Heartbeat(HeartbeatPayload),
}

impl Inbound {
    pub fn msg_type(&self) -> &'static str {
        match self {
            Inbound::UiCmd(_) => "ui_cmd",
            Inbound::Control(_) => "control_frame",
            Inbound::Heartbeat(_) => "heartbeat",
        }
    }
}

/// A decoded upstream envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub seq: u64,
    pub t_send_ms: Value,
    pub session_id: String,
    pub msg: Inbound,
}

/// Why a message was refused; the text goes back to the client in an alert.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("message of {len} bytes exceeds the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("malformed JSON: {0}")]
    Json(String),
    #[error("the message is not a JSON object")]
    NotAnObject,
    #[error("missing envelope field `{0}`")]
    MissingField(&'static str),
    #[error("envelope field `{field}` {reason}")]
    BadField { field: &'static str, reason: String },
    #[error("schema_version {got:?} is not supported (expected \"{SCHEMA_VERSION}\")")]
    SchemaVersion { got: String },
    #[error("unknown msg_type {0:?} (expected ui_cmd, control_frame or heartbeat)")]
    UnknownMsgType(String),
    #[error("msg_type {0:?} is sent by the server, not to it")]
    Downstream(String),
    #[error("bad {msg_type} payload: {reason}")]
    Payload {
        msg_type: &'static str,
        reason: String,
    },
}

impl DecodeError {
    /// The alert code sent with the refusal.
    pub fn code(&self) -> &'static str {
        match self {
            DecodeError::TooLarge { .. } => "MESSAGE_TOO_LARGE",
            DecodeError::SchemaVersion { .. } => "SCHEMA_VERSION",
            DecodeError::UnknownMsgType(_) | DecodeError::Downstream(_) => "UNKNOWN_MSG_TYPE",
            _ => "MALFORMED_MESSAGE",
        }
    }
}

/// Decodes one text message. Envelope fields are checked in the order a reader would fix them.
pub fn decode(text: &str, max_len: usize) -> Result<Decoded, DecodeError> {
    if text.len() > max_len {
        return Err(DecodeError::TooLarge {
            len: text.len(),
            max: max_len,
        });
    }
    let value: Value = serde_json::from_str(text).map_err(|e| DecodeError::Json(e.to_string()))?;
    let Value::Object(mut obj) = value else {
        return Err(DecodeError::NotAnObject);
    };
    let version = take_str(&mut obj, "schema_version")?;
    if version != SCHEMA_VERSION {
        return Err(DecodeError::SchemaVersion { got: version });
    }
    let msg_type = take_str(&mut obj, "msg_type")?;
    let seq = match obj.remove("seq") {
        None => return Err(DecodeError::MissingField("seq")),
        Some(v) => v.as_u64().ok_or_else(|| DecodeError::BadField {
            field: "seq",
            reason: format!("must be a non-negative integer, got {v}"),
        })?,
    };
    let t_send_ms = match obj.remove("t_send_ms") {
        None => return Err(DecodeError::MissingField("t_send_ms")),
        Some(v) if v.is_number() => v,
        Some(v) => {
            return Err(DecodeError::BadField {
                field: "t_send_ms",
                reason: format!("must be a number, got {v}"),
            });
        }
    };
    let session_id = take_str(&mut obj, "session_id")?;
    let payload = obj
        .remove("payload")
        .ok_or(DecodeError::MissingField("payload"))?;
    let msg = match msg_type.as_str() {
        "ui_cmd" => {
            let wire: UiCmdWire = payload_of("ui_cmd", payload)?;
            let bad = |reason| DecodeError::Payload {
                msg_type: "ui_cmd",
                reason,
            };
            let role = match role_of(wire.extensions.as_ref()).map_err(bad)? {
                Some(role) => Some(role),
                None => role_of(obj.get("extensions")).map_err(bad)?,
            };
            Inbound::UiCmd(UiCmd {
                command: wire.command,
                requested_scene_config_id: wire.requested_scene_config_id,
                role,
            })
        }
        "control_frame" => {
            let frame: ControlFrame = payload_of("control_frame", payload)?;
            Inbound::Control(frame)
        }
        "heartbeat" => {
            let hb: HeartbeatPayload = payload_of("heartbeat", payload)?;
            if !hb.t_origin_ms.is_number() {
                return Err(DecodeError::Payload {
                    msg_type: "heartbeat",
                    reason: "t_origin_ms must be a number".into(),
                });
            }
            Inbound::Heartbeat(hb)
        }
        "sim_event" | "state_frame" | "heartbeat_ack" => {
            return Err(DecodeError::Downstream(msg_type));
        }
        _ => return Err(DecodeError::UnknownMsgType(msg_type)),
    };
    Ok(Decoded {
        seq,
        t_send_ms,
        session_id,
        msg,
    })
}

fn take_str(obj: &mut Map<String, Value>, field: &'static str) -> Result<String, DecodeError> {
    match obj.remove(field) {
        None => Err(DecodeError::MissingField(field)),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(DecodeError::BadField {
            field,
            reason: format!("must be a string, got {v}"),
        }),
    }
}

fn payload_of<T: serde::de::DeserializeOwned>(
    msg_type: &'static str,
    payload: Value,
) -> Result<T, DecodeError> {
    serde_json::from_value(payload).map_err(|e| DecodeError::Payload {
        msg_type,
        reason: e.to_string(),
    })
}

/// Writes one downstream envelope. `payload` is serialised in place, so a state frame shared by
/// many clients is never cloned.
pub fn encode(
    msg_type: &str,
    seq: u64,
    t_send_ms: u64,
    session_id: &str,
    payload: &impl Serialize,
) -> String {
    #[derive(Serialize)]
    struct Envelope<'a, P> {
        schema_version: &'static str,
        msg_type: &'a str,
        seq: u64,
        t_send_ms: u64,
        session_id: &'a str,
        payload: &'a P,
        extensions: Map<String, Value>,
    }
    serde_json::to_string(&Envelope {
        schema_version: SCHEMA_VERSION,
        msg_type,
        seq,
        t_send_ms,
        session_id,
        payload,
        extensions: Map::new(),
    })
    // Our payload types are plain structs of strings and finite numbers: serialising cannot fail.
    .unwrap_or_else(|e| format!("{{\"error\":\"cannot encode {msg_type}: {e}\"}}"))
}

/// A state frame's payload serialised once for every connection it goes to. What differs per
/// connection is spliced around it: the envelope (`seq`, `t_send_ms`, `session_id`) before it,
/// and `stats.rtt_ms_est` inside it (the bytes are cut at that number). [`EncodedState::envelope`]
/// gives exactly the bytes [`encode`] would for the same payload with that connection's values.
#[derive(Clone, Debug)]
pub struct EncodedState {
    /// The payload up to and including `"rtt_ms_est":`.
    head: String,
    /// The rest of the payload after the number.
    tail: String,
}

impl EncodedState {
    /// Serialises `payload` once (its `stats.rtt_ms_est` is replaced per connection).
    pub fn new(payload: &StateFramePayload) -> Self {
        const MARK: &str = ",\"stats\":{\"rtt_ms_est\":";
        let text = serde_json::to_string(payload).unwrap_or_else(|_| "{}".into());
        // Strings escape their quotes, so the first match is the field itself (`stats` comes
        // before `extensions`, the only field with keys of the client's naming); the number
        // ends at the `}` that closes `stats`.
        let cut = text.find(MARK).and_then(|at| {
            let head_end = at + MARK.len();
            let number = text[head_end..].find('}')?;
            Some((head_end, head_end + number))
        });
        match cut {
            Some((head_end, tail_start)) => Self {
                head: text[..head_end].to_string(),
                tail: text[tail_start..].to_string(),
            },
            None => Self {
                head: text,
                tail: String::new(),
            },
        }
    }

    /// The whole `state_frame` envelope for one connection.
    pub fn envelope(&self, seq: u64, t_send_ms: u64, session_id: &str, rtt_ms_est: f64) -> String {
        let session = serde_json::to_string(session_id).unwrap_or_else(|_| "\"\"".into());
        let rtt = if self.tail.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&rtt_ms_est).unwrap_or_else(|_| "0.0".into())
        };
        let mut out = String::with_capacity(self.head.len() + self.tail.len() + 160);
        out.push_str("{\"schema_version\":\"");
        out.push_str(SCHEMA_VERSION);
        out.push_str("\",\"msg_type\":\"state_frame\",\"seq\":");
        out.push_str(&seq.to_string());
        out.push_str(",\"t_send_ms\":");
        out.push_str(&t_send_ms.to_string());
        out.push_str(",\"session_id\":");
        out.push_str(&session);
        out.push_str(",\"payload\":");
        out.push_str(&self.head);
        out.push_str(&rtt);
        out.push_str(&self.tail);
        out.push_str(",\"extensions\":{}}");
        out
    }

    /// Bytes shared by every connection (the payload).
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `sim_event.payload`. `event` is one of CONNECTED, STARTED, PAUSED, RESET_DONE, DISCONNECTED,
/// or ALERT (armsim: a refusal or a limit, with `extensions.alert`).
#[derive(Clone, Debug, Serialize)]
pub struct SimEventPayload {
    pub event: &'static str,
    pub sim_state: &'static str,
    pub session_id: String,
    pub extensions: Map<String, Value>,
}

/// One object's pose in a state frame; the quaternion really is x, y, z, w.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectPose {
    pub name: String,
    pub pose: PoseOut,
}

#[derive(Clone, Debug, Serialize)]
pub struct PoseOut {
    pub pos_m: [f32; 3],
    pub quat_xyzw: [f32; 4],
}

#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    /// Server-measured WebSocket ping/pong round trip (ms); 0 until the first pong.
    pub rtt_ms_est: f64,
}

/// `state_frame.payload`, shared by every session of a publish; `stats` is per client and
/// filled by [`StateFramePayload::with_rtt`].
#[derive(Clone, Debug, Serialize)]
pub struct StateFramePayload {
    pub sim_state: &'static str,
    pub q_rad: Vec<f32>,
    pub qd_rad_s: Vec<f32>,
    pub ee_pos_m: [f32; 3],
    pub objects: Vec<ObjectPose>,
    pub alerts: Vec<&'static str>,
    pub stats: Stats,
    pub extensions: StateExtensions,
}

/// armsim's additions to the state frame.
#[derive(Clone, Debug, Serialize)]
pub struct StateExtensions {
    pub sim_time_s: f64,
    pub step: u64,
    /// RESETs since start. `(episode, step)` orders frames and events (whose extensions carry
    /// the same two fields) across resets, which restart `step` at 0.
    pub episode: u64,
    /// The `seq` of the newest control frame the arm is following (0 = none yet): lets a client
    /// measure when its command shows up in the state.
    pub last_control_seq: u64,
    /// The clamped end-effector setpoint the arm is moving to, if a controller is active.
    pub ee_target_m: Option<[f32; 3]>,
    /// The referee's view of the episode.
    pub referee: Option<RefereeSummary>,
    /// Every robot link's pose in the sim frame, by link name: with `/scene.json`'s link
    /// shapes, what a client needs to draw the arm.
    pub link_poses: std::collections::BTreeMap<String, PoseOut>,
    /// This session's role, `controller` or `observer` (set per session by the server).
    pub role: &'static str,
    /// Who holds the arm, whatever the protocol ("teleop 127.0.0.1:50000 (session …)"), or
    /// null when nobody does: with `role`, whether the arm is this client's, another's or free.
    pub arm_holder: Option<String>,
    /// The simulation's own state; `sim_state` is this session's view (IDLE until its START).
    pub global_sim_state: &'static str,
    /// The arm rests and sleeps (joint velocities zero) until a command or contact wakes it.
    pub arm_asleep: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct RefereeSummary {
    pub rules: &'static str,
    pub play_mode: &'static str,
    pub score: u32,
    pub play_time_s: f64,
}

/// `heartbeat_ack.payload`.
#[derive(Clone, Debug, Serialize)]
pub struct HeartbeatAckPayload {
    pub t_origin_ms: Value,
    pub rtt_ms_est: f64,
    pub extensions: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(msg_type: &str, payload: &str) -> String {
        format!(
            r#"{{"schema_version":"1.0.0-revA","msg_type":"{msg_type}","seq":7,"t_send_ms":1700000000,"session_id":"abc","payload":{payload},"extensions":{{}}}}"#
        )
    }

    #[test]
    fn decodes_the_spec_examples() {
        let connect = r#"{
          "schema_version": "1.0.0-revA", "msg_type": "ui_cmd", "seq": 1,
          "t_send_ms": 1700000000, "session_id": "",
          "payload": {"command": "CONNECT", "requested_scene_config_id": "default_scene"},
          "extensions": {}
        }"#;
        let d = decode(connect, DEFAULT_MAX_MESSAGE).unwrap();
        assert_eq!(d.seq, 1);
        assert_eq!(d.session_id, "");
        assert_eq!(
            d.msg,
            Inbound::UiCmd(UiCmd {
                command: UiCommand::Connect,
                requested_scene_config_id: Some("default_scene".into()),
                role: None,
            })
        );

        let control = env(
            "control_frame",
            r#"{"frame_id":"vp_operator_anchor","left_target_pos_m":[0.45,-0.2,1.05],"left_grip":{"mode":"binary","value":1},"clutch_enabled":true,"alerts":[]}"#,
        );
        let Inbound::Control(c) = decode(&control, DEFAULT_MAX_MESSAGE).unwrap().msg else {
            panic!("not a control frame");
        };
        assert_eq!(c.left_target_pos_m, [0.45, -0.2, 1.05]);
        assert_eq!(c.left_grip.value, 1.0);
        assert!(c.clutch_enabled);

        let hb = env(
            "heartbeat",
            r#"{"t_origin_ms":1700000123456,"extensions":{}}"#,
        );
        let Inbound::Heartbeat(h) = decode(&hb, DEFAULT_MAX_MESSAGE).unwrap().msg else {
            panic!("not a heartbeat");
        };
        // Echoed as the same JSON number, not as a float with ".0".
        assert_eq!(h.t_origin_ms.to_string(), "1700000123456");
    }

    fn sample_state() -> StateFramePayload {
        let mut link_poses = std::collections::BTreeMap::new();
        link_poses.insert(
            "l\"ink \"stats\":{\"rtt_ms_est\":".to_string(),
            PoseOut {
                pos_m: [0.1, 0.2, 0.3],
                quat_xyzw: [0.0, 0.0, 0.0, 1.0],
            },
        );
        StateFramePayload {
            sim_state: "RUNNING",
            q_rad: vec![0.5, -1.25],
            qd_rad_s: vec![0.0, 3.0],
            ee_pos_m: [0.4, 0.0, 1.0],
            objects: vec![ObjectPose {
                name: ",\"stats\":{\"rtt_ms_est\":".into(),
                pose: PoseOut {
                    pos_m: [1.0, 2.0, 3.0],
                    quat_xyzw: [0.0, 0.0, 0.0, 1.0],
                },
            }],
            alerts: vec!["SPEED_LIMIT"],
            stats: Stats { rtt_ms_est: 7.5 },
            extensions: StateExtensions {
                sim_time_s: 1.5,
                step: 360,
                episode: 2,
                last_control_seq: 9,
                ee_target_m: Some([0.1, 0.2, 0.3]),
                referee: None,
                link_poses,
                role: "observer",
                arm_holder: Some("teleop \"quoted\" client".into()),
                global_sim_state: "RUNNING",
                arm_asleep: false,
            },
        }
    }

    #[test]
    fn a_shared_state_frame_is_what_encode_writes_per_connection() {
        let mut payload = sample_state();
        let shared = EncodedState::new(&payload);
        for (seq, sid, rtt) in [(1, "abc", 0.0), (77, "d\"e", 12.345_678), (3, "", 1e-7)] {
            payload.stats.rtt_ms_est = rtt;
            let want = encode("state_frame", seq, 1_700_000_000_123, sid, &payload);
            assert_eq!(shared.envelope(seq, 1_700_000_000_123, sid, rtt), want);
            let v: Value = serde_json::from_str(&want).unwrap();
            assert_eq!(v["payload"]["stats"]["rtt_ms_est"].as_f64(), Some(rtt));
            assert_eq!(v["session_id"], sid);
        }
    }

    #[test]
    fn ui_cmd_roles_and_the_control_commands() {
        let max = DEFAULT_MAX_MESSAGE;
        let cmd = |text: &str| match decode(text, max).map(|d| d.msg) {
            Ok(Inbound::UiCmd(c)) => Ok(c),
            Ok(other) => panic!("not a ui_cmd: {other:?}"),
            Err(e) => Err(e),
        };
        // In the payload's extensions (revA puts `extensions` in every payload).
        let c = cmd(&env(
            "ui_cmd",
            r#"{"command":"CONNECT","requested_scene_config_id":"s","extensions":{"role":"observer"}}"#,
        ))
        .unwrap();
        assert_eq!(c.role, Some(RoleRequest::Observer));
        // In the envelope's extensions, when the payload has none.
        let c = cmd(&env("ui_cmd", r#"{"command":"START"}"#).replace(
            r#""extensions":{}"#,
            r#""extensions":{"role":"controller"}"#,
        ))
        .unwrap();
        assert_eq!(
            (c.command, c.role),
            (UiCommand::Start, Some(RoleRequest::Controller))
        );
        // Absent, null or among other extensions: no request.
        for payload in [
            r#"{"command":"CONNECT"}"#,
            r#"{"command":"CONNECT","extensions":null}"#,
            r#"{"command":"CONNECT","extensions":{"role":null,"debug":1}}"#,
            r#"{"command":"CONNECT","extensions":[1]}"#,
        ] {
            assert_eq!(
                cmd(&env("ui_cmd", payload)).unwrap().role,
                None,
                "{payload}"
            );
        }
        for (name, command) in [
            ("REQUEST_CONTROL", UiCommand::RequestControl),
            ("RELEASE_CONTROL", UiCommand::ReleaseControl),
            ("DISCONNECT", UiCommand::Disconnect),
            ("LEROBOT_END_EPISODE", UiCommand::LerobotEndEpisode),
            ("LEROBOT_RERECORD", UiCommand::LerobotRerecord),
            ("LEROBOT_STOP", UiCommand::LerobotStop),
        ] {
            let c = cmd(&env("ui_cmd", &format!(r#"{{"command":"{name}"}}"#))).unwrap();
            assert_eq!(c.command, command);
        }
        assert_eq!(
            UiCommand::LerobotRerecord.dataset_control(),
            Some(DatasetControl::Rerecord)
        );
        assert_eq!(UiCommand::Reset.dataset_control(), None);
        // A role that is neither, and commands of neither list, are refused.
        for payload in [
            r#"{"command":"CONNECT","extensions":{"role":"admin"}}"#,
            r#"{"command":"CONNECT","extensions":{"role":1}}"#,
            r#"{"command":"TAKE"}"#,
            r#"{"command":"request_control"}"#,
        ] {
            let e = cmd(&env("ui_cmd", payload)).unwrap_err();
            assert_eq!(e.code(), "MALFORMED_MESSAGE", "{payload}");
        }
    }

    #[test]
    fn every_refusal_is_typed() {
        let max = DEFAULT_MAX_MESSAGE;
        assert!(matches!(
            decode("{not json", max),
            Err(DecodeError::Json(_))
        ));
        assert_eq!(decode("[1,2]", max), Err(DecodeError::NotAnObject));
        let wrong_version = env("heartbeat", "{}").replace("1.0.0-revA", "0.9");
        assert_eq!(
            decode(&wrong_version, max).unwrap_err().code(),
            "SCHEMA_VERSION"
        );
        assert_eq!(
            decode(&env("teleport", "{}"), max),
            Err(DecodeError::UnknownMsgType("teleport".into()))
        );
        assert_eq!(
            decode(&env("state_frame", "{}"), max),
            Err(DecodeError::Downstream("state_frame".into()))
        );
        let no_seq = env("heartbeat", r#"{"t_origin_ms":1}"#).replace(r#""seq":7,"#, "");
        assert_eq!(decode(&no_seq, max), Err(DecodeError::MissingField("seq")));
        let neg_seq = env("heartbeat", r#"{"t_origin_ms":1}"#).replace(r#""seq":7"#, r#""seq":-3"#);
        assert!(matches!(
            decode(&neg_seq, max),
            Err(DecodeError::BadField { field: "seq", .. })
        ));
        let bad_cmd = env("ui_cmd", r#"{"command":"FLY"}"#);
        assert!(matches!(
            decode(&bad_cmd, max),
            Err(DecodeError::Payload {
                msg_type: "ui_cmd",
                ..
            })
        ));
        let short_target = env(
            "control_frame",
            r#"{"frame_id":"vp_operator_anchor","left_target_pos_m":[0.4,0.1],"left_grip":{"mode":"binary","value":0},"clutch_enabled":true}"#,
        );
        assert!(matches!(
            decode(&short_target, max),
            Err(DecodeError::Payload { .. })
        ));
        let big = env(
            "heartbeat",
            &format!(r#"{{"t_origin_ms":1,"pad":"{}"}}"#, "x".repeat(100)),
        );
        assert_eq!(decode(&big, 64).unwrap_err().code(), "MESSAGE_TOO_LARGE");
        let hb_string = env("heartbeat", r#"{"t_origin_ms":"soon"}"#);
        assert!(decode(&hb_string, max).is_err());
    }

    #[test]
    fn encodes_a_full_envelope() {
        let payload = SimEventPayload {
            event: "CONNECTED",
            sim_state: "IDLE",
            session_id: "s1".into(),
            extensions: Map::new(),
        };
        let text = encode("sim_event", 2, 1700000001, "s1", &payload);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["msg_type"], "sim_event");
        assert_eq!(v["seq"], 2);
        assert_eq!(v["t_send_ms"], 1700000001u64);
        assert_eq!(v["session_id"], "s1");
        assert_eq!(v["payload"]["event"], "CONNECTED");
        assert_eq!(v["payload"]["sim_state"], "IDLE");
        assert!(v["extensions"].is_object());
    }

    #[test]
    fn never_panics_on_arbitrary_text() {
        // A cheap deterministic fuzz: every prefix and byte-flip of a valid message.
        let good = env(
            "control_frame",
            r#"{"frame_id":"vp_operator_anchor","left_target_pos_m":[0.45,-0.2,1.05],"left_grip":{"mode":"binary","value":1},"clutch_enabled":true}"#,
        );
        for end in 0..good.len() {
            let _ = decode(&good[..end], DEFAULT_MAX_MESSAGE);
        }
        let bytes = good.as_bytes();
        for i in 0..bytes.len() {
            let mut b = bytes.to_vec();
            b[i] = b"{}[]\",:0-e."[i % 11];
            if let Ok(s) = std::str::from_utf8(&b) {
                let _ = decode(s, DEFAULT_MAX_MESSAGE);
            }
        }
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        /// JSON-ish text: envelope keys and values mixed with noise, so the decoder gets past
        /// the parser into its field checks.
        fn jsonish() -> impl Strategy<Value = String> {
            let key = prop_oneof![
                Just("schema_version"),
                Just("msg_type"),
                Just("seq"),
                Just("t_send_ms"),
                Just("session_id"),
                Just("payload"),
                Just("command"),
                Just("left_target_pos_m"),
                Just("left_grip"),
                Just("t_origin_ms"),
            ];
            let value = prop_oneof![
                Just("\"1.0.0-revA\"".to_string()),
                Just("\"control_frame\"".to_string()),
                Just("\"ui_cmd\"".to_string()),
                Just("\"heartbeat\"".to_string()),
                Just("[1e308, -1e308, 0]".to_string()),
                Just("{}".to_string()),
                any::<i64>().prop_map(|v| v.to_string()),
                any::<f64>().prop_map(|v| v.to_string()),
                ".{0,12}",
            ];
            proptest::collection::vec((key, value), 0..8).prop_map(|fields| {
                let body: Vec<String> =
                    fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", body.join(","))
            })
        }

        proptest! {
            #[test]
            fn on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
                let text = String::from_utf8_lossy(&bytes);
                let _ = decode(&text, 256);
            }

            #[test]
            fn on_jsonish_envelopes(text in jsonish()) {
                if let Err(e) = decode(&text, 64 * 1024) {
                    // Every refusal has a code to send and words to show.
                    prop_assert!(!e.code().is_empty());
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }
}
