//! The ECS side of revA (spec 004): sessions and roles, the global session commands, the control
//! pipeline in the step path (through the spec-000 core), heartbeat watchdog, and state frames
//! at a fixed wall-clock rate to every session. Sockets stay on the server's threads.
//!
//! Each teleop session has its own started / not-started state on top of the global session:
//! a controller's frames apply only once it has sent START (since its CONNECT, its promotion or
//! the last reset), and until then it is told IDLE even where the global session runs for the
//! panel or another protocol. The controller role passes to the longest-connected observer
//! whenever the arm is free (controller gone, demoted after a heartbeat loss plus a grace
//! period, revoked).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use serde_json::{Map, Value, json};

use super::control::{LimitFlags, TeleopCodec, TeleopController, TeleopState, state_payload};
use super::envelope::RefereeSummary;
use super::envelope::{
    ControlFrame, DEFAULT_MAX_MESSAGE, SimEventPayload, StateFramePayload, UiCommand,
};
use super::server::{self, ConnCounters, ServerEvent, SharedSimState, TeleopConfig, ToClient};
use crate::protocol::tick::{LatestCommand, ProtocolTick, SampleOutcome, Transport};
use crate::referee::plugin::Referee;
use crate::session::{
    AlertLog, ArmOwner, Session, SessionCommand, SessionEvent, SessionState, SessionSystems,
};
use crate::sim::{JointTargets, SIM_DT, Sim, SimClock, SimScene, SimStep, SimSystems};

/// The protocol name in logs, ownership and the panel.
pub const PROTOCOL: &str = "teleop";

/// Settings of the teleop server beyond the scene's `networking` block.
#[derive(Clone, Debug)]
pub struct TeleopOptions {
    pub addr: SocketAddr,
    /// State frames per second of wall-clock time, to every session.
    pub state_rate_hz: f64,
    /// How long a controller may stay in NET_TIMEOUT before it is demoted (None: the scene's
    /// `extensions.armsim.controller_grace_s`, default 10 s).
    pub controller_grace: Option<Duration>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Controller,
    Observer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Controller => "controller",
            Role::Observer => "observer",
        }
    }
}

/// One WebSocket connection as the ECS sees it.
pub struct Conn {
    pub peer: SocketAddr,
    /// Set between CONNECT and DISCONNECT.
    pub session_id: Option<String>,
    pub role: Role,
    pub opened: Instant,
    pub counters: Arc<ConnCounters>,
    outbox: Sender<ToClient>,
    states: Sender<Arc<StateFramePayload>>,
    states_drain: Receiver<Arc<StateFramePayload>>,
    last_heartbeat: Instant,
    timed_out: bool,
    /// When the heartbeat lapsed (the grace period of a controller runs from here).
    timed_out_at: Option<Instant>,
    /// When its session began (CONNECT): the longest-connected observer is promoted first.
    session_since: Instant,
    /// This session has sent START since its CONNECT, its promotion or the last reset: only
    /// then do its control frames apply.
    pub started: bool,
    /// Control was revoked from it in the panel: it is not handed control again.
    no_promote: bool,
    /// Rate limit of "control ignored" alerts.
    last_ignored_alert: Option<Instant>,
    /// Messages refused so far (the log shows only some).
    refused: u64,
}

impl Conn {
    fn send_event(&self, payload: SimEventPayload) {
        // A full queue means the client stopped reading; its write timeout will drop it.
        let _ = self.outbox.try_send(ToClient::Event(payload));
    }

    fn send_state(&self, state: &Arc<StateFramePayload>) {
        match self.states.try_send(state.clone()) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(_)) => {
                // Latest-only: the unsent frame is stale, replace it.
                let _ = self.states_drain.try_recv();
                let _ = self.states.try_send(state.clone());
            }
        }
    }
}

/// The control slot: spec 000's transport for the controller's frames. Only frames that the
/// plugin accepted (controller, RUNNING) are put here; state frames go out per connection.
#[derive(Default)]
pub struct ControlSlot {
    latest: LatestCommand<(u64, ControlFrame)>,
    outbox: Vec<Arc<StateFramePayload>>,
}

impl Transport for ControlSlot {
    type Inbound = (u64, ControlFrame);
    type Outbound = Arc<StateFramePayload>;

    fn latest_command_with_token(&mut self) -> Option<(u64, &(u64, ControlFrame))> {
        self.latest.latest()
    }

    fn publish(&mut self, msg: Arc<StateFramePayload>) {
        self.outbox.push(msg);
    }
}

#[derive(Resource)]
pub struct TeleopServer {
    pub addr: SocketAddr,
    pub path: String,
    pub conns: BTreeMap<u64, Conn>,
    pub state_rate_hz: f64,
    events: Receiver<ServerEvent>,
    shared: Arc<SharedSimState>,
    controller: Option<u64>,
    tick: ProtocolTick<TeleopCodec, TeleopController>,
    slot: ControlSlot,
    next_state: Instant,
    heartbeat_timeout: Duration,
    controller_grace: Duration,
    alert_flags: LimitFlags,
    /// Limits met on any step since the last state frame, so a frame reports a limit the arm
    /// touched between frames too.
    step_flags: LimitFlags,
    referee_cursor: u64,
    /// `[episode, step]` of the clock when the events being sent happened: with the state
    /// frames' own stamp, a client can tell a frame from before an event from one after it.
    stamp: [u64; 2],
    /// RESETs this server asked for whose RESET_DONE has not come back yet: those already
    /// cleared every session's `started` (see `session_events`).
    own_resets: u32,
    /// A teleop controller left (gone, or demoted after the grace period): the next observer
    /// takes over, unless another protocol's client takes the arm first.
    promote_pending: bool,
}

impl TeleopServer {
    /// The connection that controls the arm, if any.
    pub fn controller(&self) -> Option<u64> {
        self.controller
    }

    /// Limits currently shaping the controller's setpoint.
    pub fn limit_flags(&self) -> LimitFlags {
        self.tick.adapter().flags()
    }

    /// The clamped end-effector setpoint the arm follows (world frame).
    pub fn setpoint(&self) -> Option<Vec3> {
        self.tick.adapter().setpoint()
    }

    /// Where the controller's latest frame asked the end effector to go (world frame), before
    /// filtering and limits.
    pub fn raw_target(&self) -> Option<Vec3> {
        self.controller?;
        self.tick.latest_command().map(|c| c.target)
    }

    /// Whether the controller's heartbeat has lapsed.
    pub fn net_timeout(&self) -> bool {
        self.controller
            .and_then(|c| self.conns.get(&c))
            .is_some_and(|c| c.timed_out)
    }

    /// Closes a connection (the panel's disconnect button).
    pub fn disconnect(&self, conn: u64) {
        if let Some(c) = self.conns.get(&conn) {
            let _ = c
                .outbox
                .try_send(ToClient::Close("disconnected from the panel".into()));
        }
    }

    fn sessions(&self) -> impl Iterator<Item = &Conn> {
        self.conns.values().filter(|c| c.session_id.is_some())
    }

    /// Sends `event` to `conn`, with the session state as that session sees it.
    fn event(
        &self,
        conn: &Conn,
        event: &'static str,
        state: SessionState,
        ext: Map<String, Value>,
    ) {
        let mut extensions = ext;
        extensions.insert("episode".into(), json!(self.stamp[0]));
        extensions.insert("step".into(), json!(self.stamp[1]));
        conn.send_event(SimEventPayload {
            event,
            sim_state: view(conn, state).as_str(),
            session_id: conn.session_id.clone().unwrap_or_default(),
            extensions,
        });
    }

    fn broadcast(&self, event: &'static str, state: SessionState, ext: &Map<String, Value>) {
        for c in self.sessions() {
            self.event(c, event, state, ext.clone());
        }
    }

    fn alert(&self, conn: &Conn, state: SessionState, code: &str, message: &str) {
        self.event(conn, "ALERT", state, alert_ext(code, message));
    }
}

/// The global state as one teleop session sees it: a controller that has not sent START is IDLE
/// while the simulation runs (its frames do not apply), whoever started the simulation.
/// Observers see the simulation as it is.
pub fn view(conn: &Conn, global: SessionState) -> SessionState {
    if conn.role == Role::Controller && !conn.started && global == SessionState::Running {
        SessionState::Idle
    } else {
        global
    }
}

/// The global state once the commands written so far this frame are applied (they take effect
/// in `SessionSystems`, after this batch), so one connection's messages act in order: a control
/// frame right after START is applied, one right after PAUSE or RESET is not.
fn predict(state: SessionState, command: SessionCommand) -> SessionState {
    use SessionState::*;
    match (command, state) {
        (_, Error) if command != SessionCommand::Reset => Error,
        (SessionCommand::Start, _) => Running,
        (SessionCommand::Pause, Running | Idle) => Paused,
        (SessionCommand::Reset, _) => Idle,
        _ => state,
    }
}

fn alert_ext(code: &str, message: &str) -> Map<String, Value> {
    let mut ext = Map::new();
    ext.insert("alert".into(), json!({ "code": code, "message": message }));
    ext
}

/// Starts the server on `options.addr` (the scene's `ws_path`) and wires it into the app.
/// Returns the bound address, or the bind error (e.g. port in use).
pub fn add(app: &mut App, options: TeleopOptions) -> io::Result<SocketAddr> {
    let scene = app.world().resource::<SimScene>().0.clone();
    let cfg = &scene.config;
    let shared = Arc::new(SharedSimState::default());
    let (addr, events) = server::start(
        TeleopConfig {
            addr: options.addr,
            path: cfg.networking.ws_path.clone(),
            scene_id: cfg.scene_id.clone(),
            max_message: DEFAULT_MAX_MESSAGE,
        },
        shared.clone(),
    )?;
    let controller = {
        let world = &app.world().resource::<Sim>().0;
        TeleopController::new(&scene, world, cfg.control.filter.params)
    };
    let codec = TeleopCodec {
        anchor: cfg.frames.vp_operator_anchor.clone(),
    };
    let controller_grace = options
        .controller_grace
        .unwrap_or_else(|| Duration::from_secs_f32(cfg.extensions.armsim.controller_grace_s));
    info!(
        "teleop: listening on ws://{addr}{} (scene {}, state frames at {} Hz)",
        cfg.networking.ws_path, cfg.scene_id, options.state_rate_hz
    );
    app.init_resource::<ArmOwner>()
        .insert_resource(TeleopServer {
            addr,
            path: cfg.networking.ws_path.clone(),
            conns: BTreeMap::new(),
            state_rate_hz: options.state_rate_hz,
            events,
            shared,
            controller: None,
            tick: ProtocolTick::new(codec, controller, SIM_DT),
            slot: ControlSlot::default(),
            next_state: Instant::now(),
            heartbeat_timeout: Duration::from_millis(cfg.heartbeat.timeout_ms),
            controller_grace,
            alert_flags: LimitFlags::default(),
            step_flags: LimitFlags::default(),
            referee_cursor: 0,
            stamp: [0, 0],
            own_resets: 0,
            promote_pending: false,
        })
        .add_systems(First, handle_events.before(SessionSystems))
        .add_systems(Update, (session_events, watchdog, referee_events))
        .add_systems(SimStep, adapt.in_set(SimSystems::Adapt))
        .add_systems(Last, publish_state);
    Ok(addr)
}

#[allow(clippy::too_many_arguments)]
fn handle_events(
    mut server: ResMut<TeleopServer>,
    mut owner: ResMut<ArmOwner>,
    session: Res<Session>,
    sim: Res<Sim>,
    scene: Res<SimScene>,
    mut targets: ResMut<JointTargets>,
    mut commands: MessageWriter<SessionCommand>,
    mut log: ResMut<AlertLog>,
    clock: Res<SimClock>,
) {
    // Updated as this batch writes session commands, so each message meets the state the
    // messages before it left (see `predict`).
    let mut state = session.state();
    let server = &mut *server;
    let t = clock.sim_time;
    server.stamp = [clock.episode, clock.steps];
    if owner.take_revoked(PROTOCOL)
        && let Some(conn) = server.controller
    {
        demote(server, &session, &sim, &mut targets, conn);
        if let Some(c) = server.conns.get_mut(&conn) {
            c.no_promote = true;
            let peer = c.peer;
            let c = &server.conns[&conn];
            server.alert(
                c,
                state,
                "REVOKED",
                "control was revoked from the panel; you observe",
            );
            log.push(
                t,
                PROTOCOL,
                "REVOKED",
                format!("{peer} demoted to observer"),
            );
        }
    }
    while let Ok(event) = server.events.try_recv() {
        match event {
            ServerEvent::Opened {
                conn,
                peer,
                outbox,
                states,
                states_drain,
                counters,
            } => {
                let now = Instant::now();
                server.conns.insert(
                    conn,
                    Conn {
                        peer,
                        session_id: None,
                        role: Role::Observer,
                        opened: now,
                        counters,
                        outbox,
                        states,
                        states_drain,
                        last_heartbeat: now,
                        timed_out: false,
                        timed_out_at: None,
                        session_since: now,
                        started: false,
                        no_promote: false,
                        last_ignored_alert: None,
                        refused: 0,
                    },
                );
            }
            ServerEvent::SessionOpened { conn, session_id } => {
                let Some(c) = server.conns.get_mut(&conn) else {
                    continue;
                };
                let label = format!("{} (session {session_id})", c.peer);
                c.role = if server.controller.is_none() && owner.claim(PROTOCOL, &label) {
                    server.controller = Some(conn);
                    Role::Controller
                } else {
                    Role::Observer
                };
                c.session_id = Some(session_id.clone());
                c.last_heartbeat = Instant::now();
                c.session_since = Instant::now();
                c.timed_out = false;
                c.timed_out_at = None;
                // A new session starts not started (revA: CONNECTED comes with IDLE), whatever
                // the previous controller left running.
                c.started = false;
                c.no_promote = false;
                if server.controller == Some(conn) {
                    new_controller(server);
                }
                let c = &server.conns[&conn];
                info!(
                    "teleop: {} connected as {}, session {session_id}",
                    c.peer,
                    c.role.as_str()
                );
                log.push(
                    t,
                    PROTOCOL,
                    "CONNECTED",
                    format!("{} as {}", c.peer, c.role.as_str()),
                );
                let robot = &sim.0.robot;
                let mut ext = Map::new();
                ext.insert("role".into(), json!(c.role.as_str()));
                ext.insert("controller".into(), json!(owner.describe()));
                ext.insert("scene_id".into(), json!(scene.0.config.scene_id));
                ext.insert(
                    "joint_names".into(),
                    json!(
                        robot
                            .joints
                            .iter()
                            .map(|j| j.name.as_str())
                            .collect::<Vec<_>>()
                    ),
                );
                ext.insert("state_rate_hz".into(), json!(server.state_rate_hz));
                let hb = scene.0.config.heartbeat;
                ext.insert(
                    "heartbeat".into(),
                    json!({"period_ms": hb.period_ms, "timeout_ms": hb.timeout_ms}),
                );
                server.event(c, "CONNECTED", state, ext);
            }
            ServerEvent::Command { conn, command } => {
                let Some(c) = server.conns.get(&conn) else {
                    continue;
                };
                if command == UiCommand::Disconnect {
                    server.event(c, "DISCONNECTED", state, Map::new());
                    let _ = c.outbox.try_send(ToClient::EndSession);
                    info!("teleop: {} ended its session", c.peer);
                    end_session(server, &mut owner, &session, &sim, &mut targets, conn);
                    continue;
                }
                if c.role != Role::Controller {
                    server.alert(
                        c,
                        state,
                        "NOT_CONTROLLER",
                        &format!(
                            "observers cannot {command:?}; the arm is controlled by {}",
                            owner.describe()
                        ),
                    );
                    continue;
                }
                // A command that changes nothing still gets its answer, so a client never waits.
                let (wanted, event) = match command {
                    UiCommand::Start => (SessionCommand::Start, "STARTED"),
                    UiCommand::Pause => (SessionCommand::Pause, "PAUSED"),
                    UiCommand::Reset => (SessionCommand::Reset, "RESET_DONE"),
                    UiCommand::Connect | UiCommand::Disconnect => continue,
                };
                if command == UiCommand::Start && state == SessionState::Error {
                    server.alert(
                        c,
                        state,
                        "SIM_ERROR",
                        "the simulation is in ERROR; RESET first",
                    );
                    continue;
                }
                match command {
                    UiCommand::Start => {
                        if let Some(c) = server.conns.get_mut(&conn) {
                            c.started = true;
                        }
                    }
                    UiCommand::Reset => {
                        // RESET_DONE -> IDLE: every session needs START again. Done here, not
                        // when RESET_DONE comes back, so a START later in this batch stands.
                        server.own_resets += 1;
                        server.conns.values_mut().for_each(|c| c.started = false);
                    }
                    _ => {}
                }
                let c = &server.conns[&conn];
                let unchanged = matches!(
                    (command, state),
                    (UiCommand::Start, SessionState::Running)
                        | (UiCommand::Pause, SessionState::Paused)
                );
                if unchanged {
                    server.event(c, event, state, Map::new());
                } else {
                    commands.write(wanted);
                    state = predict(state, wanted);
                }
            }
            ServerEvent::Control { conn, seq, frame } => {
                let Some(c) = server.conns.get_mut(&conn) else {
                    continue;
                };
                let refusal = if c.role != Role::Controller {
                    Some((
                        "NOT_CONTROLLER",
                        "observers cannot send control frames".to_string(),
                    ))
                } else if !c.started {
                    Some((
                        "CONTROL_IGNORED",
                        "control frames apply only after this session sends START".to_string(),
                    ))
                } else if state != SessionState::Running {
                    Some((
                        "CONTROL_IGNORED",
                        format!(
                            "control frames apply only in RUNNING (now {})",
                            state.as_str()
                        ),
                    ))
                } else {
                    None
                };
                match refusal {
                    None => server.slot.latest.set((seq, frame)),
                    Some((code, message)) => {
                        // Once a second is enough to tell a 60 Hz stream why it is ignored.
                        let due = c
                            .last_ignored_alert
                            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
                        if due {
                            c.last_ignored_alert = Some(Instant::now());
                            let c = &server.conns[&conn];
                            server.alert(c, state, code, &message);
                        }
                    }
                }
            }
            ServerEvent::Heartbeat { conn } => {
                if let Some(c) = server.conns.get_mut(&conn) {
                    c.last_heartbeat = Instant::now();
                    if c.timed_out {
                        c.timed_out = false;
                        c.timed_out_at = None;
                        info!(
                            "teleop: heartbeats from {} are back; control resumes when the clutch is engaged again",
                            c.peer
                        );
                        let c = &server.conns[&conn];
                        server.alert(
                            c,
                            state,
                            "NET_RESTORED",
                            "heartbeats are back; release and engage the clutch to resume control",
                        );
                    }
                }
            }
            ServerEvent::Refused {
                conn,
                code,
                message,
            } => {
                // The client got its alert; the log gets the first few and then one in a hundred.
                if let Some(c) = server.conns.get_mut(&conn) {
                    c.refused += 1;
                    if c.refused <= 5 || c.refused % 100 == 0 {
                        warn!(
                            "teleop: refused message #{} from {}: {code}: {message}",
                            c.refused, c.peer
                        );
                        log.push(t, PROTOCOL, code, format!("{}: {message}", c.peer));
                    }
                }
            }
            ServerEvent::Closed { conn, reason } => {
                if let Some(c) = server.conns.get(&conn) {
                    info!("teleop: {} gone ({reason})", c.peer);
                    log.push(
                        t,
                        PROTOCOL,
                        "DISCONNECTED",
                        format!("{} ({reason})", c.peer),
                    );
                }
                end_session(server, &mut owner, &session, &sim, &mut targets, conn);
                server.conns.remove(&conn);
            }
        }
    }
    promote_observer(server, &mut owner, &mut log, t, state);
}

/// A new controller (first session, or a promoted observer) starts from a clean pipeline: no
/// frame of the previous controller is followed.
fn new_controller(server: &mut TeleopServer) {
    server.tick.forget_command();
    server.slot.latest.clear();
    server.tick.adapter_mut().hand_over();
}

/// Takes the controller role from `conn` (revoked, or frozen past the grace period): it
/// observes, the arm follows `pause_behavior`, and the arm is free for the next one.
fn demote(
    server: &mut TeleopServer,
    session: &Session,
    sim: &Sim,
    targets: &mut JointTargets,
    conn: u64,
) {
    if server.controller != Some(conn) {
        return;
    }
    server.controller = None;
    new_controller(server);
    targets.commands = session.hold_posture(&sim.0);
    if let Some(c) = server.conns.get_mut(&conn) {
        c.role = Role::Observer;
        c.started = false;
    }
}

/// After a teleop controller left, the longest-connected observer with a live heartbeat gets the
/// arm, and is told so (ALERT `PROMOTED`, `extensions.role`); it moves the arm after its START.
/// Only a teleop controller's leaving hands the arm on: an agent or lockstep client that leaves
/// (and may reconnect at once) keeps its claim free, and a panel Revoke promotes nobody.
fn promote_observer(
    server: &mut TeleopServer,
    owner: &mut ArmOwner,
    log: &mut AlertLog,
    t: f64,
    state: SessionState,
) {
    if !server.promote_pending {
        return;
    }
    if server.controller.is_some() || owner.owner().is_some() {
        // Someone (of any protocol) took the arm meanwhile.
        server.promote_pending = false;
        return;
    }
    let Some((&conn, c)) = server
        .conns
        .iter()
        .filter(|(_, c)| {
            c.session_id.is_some() && c.role == Role::Observer && !c.timed_out && !c.no_promote
        })
        .min_by_key(|(id, c)| (c.session_since, **id))
    else {
        return;
    };
    let label = format!(
        "{} (session {})",
        c.peer,
        c.session_id.as_deref().unwrap_or_default()
    );
    server.promote_pending = false;
    if !owner.claim(PROTOCOL, &label) {
        return;
    }
    server.controller = Some(conn);
    new_controller(server);
    let Some(c) = server.conns.get_mut(&conn) else {
        return;
    };
    c.role = Role::Controller;
    c.started = false;
    let peer = c.peer;
    info!("teleop: {peer} promoted to controller");
    log.push(
        t,
        PROTOCOL,
        "PROMOTED",
        format!("{peer} now controls the arm"),
    );
    let c = &server.conns[&conn];
    let mut ext = alert_ext(
        "PROMOTED",
        "you control the arm now (the previous controller left); send START to move it",
    );
    ext.insert("role".into(), json!(Role::Controller.as_str()));
    server.event(c, "ALERT", state, ext);
}

/// A session ends (DISCONNECT or socket closed): the controller's arm follows `pause_behavior`.
fn end_session(
    server: &mut TeleopServer,
    owner: &mut ArmOwner,
    session: &Session,
    sim: &Sim,
    targets: &mut JointTargets,
    conn: u64,
) {
    if server.controller == Some(conn) {
        demote(server, session, sim, targets, conn);
        owner.release(PROTOCOL);
        server.promote_pending = true;
        info!("teleop: the controller left; the arm follows pause_behavior");
    }
    if let Some(c) = server.conns.get_mut(&conn) {
        c.session_id = None;
        c.role = Role::Observer;
        c.started = false;
    }
}

/// Tells every session about session changes, whoever caused them.
fn session_events(
    mut events: MessageReader<SessionEvent>,
    mut server: ResMut<TeleopServer>,
    session: Res<Session>,
    clock: Res<SimClock>,
) {
    server.stamp = [clock.episode, clock.steps];
    let state = session.state();
    let server = &mut *server;
    server.shared.set(state.as_str());
    for event in events.read() {
        let name = match event {
            SessionEvent::Started => "STARTED",
            SessionEvent::Paused => "PAUSED",
            SessionEvent::ResetDone => "RESET_DONE",
            SessionEvent::Errored => "ERROR",
        };
        // Following restarts from where the arm is after any change of state.
        server.tick.adapter_mut().disengage(false);
        if matches!(event, SessionEvent::ResetDone) {
            server.tick.forget_command();
            server.slot.latest.clear();
            // A reset from elsewhere (panel, monitor) also ends every session's START; this
            // server's own RESETs did that when they were sent.
            if server.own_resets > 0 {
                server.own_resets -= 1;
            } else {
                server.conns.values_mut().for_each(|c| c.started = false);
            }
        }
        for c in server.sessions() {
            // A controller that has not sent START stays IDLE whoever starts the simulation.
            if matches!(event, SessionEvent::Started) && view(c, state) != SessionState::Running {
                continue;
            }
            server.event(c, name, state, Map::new());
        }
    }
}

/// The referee's decisions (scores, cubes put back, play modes) reach every session as alerts.
fn referee_events(mut server: ResMut<TeleopServer>, referee: Res<Referee>, session: Res<Session>) {
    if referee.last_seq() == server.referee_cursor {
        return;
    }
    let state = session.state();
    for e in referee.since(server.referee_cursor) {
        let mut ext = alert_ext(e.event.code(), &e.event.to_string());
        ext.insert("referee_seq".into(), json!(e.seq));
        ext.insert("sim_time_s".into(), json!(e.sim_time));
        server.broadcast("ALERT", state, &ext);
    }
    server.referee_cursor = referee.last_seq();
}

/// Heartbeat loss: NET_TIMEOUT, and the controller's arm follows `pause_behavior` while the
/// simulation keeps running. A controller still silent after the grace period (frozen, not
/// gone: its socket stays open) is demoted, so an observer or another client can take over.
fn watchdog(
    mut server: ResMut<TeleopServer>,
    mut owner: ResMut<ArmOwner>,
    session: Res<Session>,
    sim: Res<Sim>,
    mut targets: ResMut<JointTargets>,
    mut log: ResMut<AlertLog>,
    clock: Res<SimClock>,
) {
    let grace = server.controller_grace;
    let frozen = server.controller.filter(|c| {
        server
            .conns
            .get(c)
            .and_then(|c| c.timed_out_at)
            .is_some_and(|at| at.elapsed() >= grace)
    });
    if let Some(conn) = frozen {
        let server = &mut *server;
        demote(server, &session, &sim, &mut targets, conn);
        owner.release(PROTOCOL);
        server.promote_pending = true;
        let c = &server.conns[&conn];
        let message = format!(
            "no heartbeat for {} ms plus the {:.1} s grace period; you observe now",
            server.heartbeat_timeout.as_millis(),
            grace.as_secs_f64()
        );
        warn!("teleop: {} demoted: {message}", c.peer);
        log.push(
            clock.sim_time,
            PROTOCOL,
            "DEMOTED",
            format!("{}: {message}", c.peer),
        );
        let mut ext = alert_ext("DEMOTED", &message);
        ext.insert("role".into(), json!(Role::Observer.as_str()));
        server.event(c, "ALERT", session.state(), ext);
        promote_observer(
            server,
            &mut owner,
            &mut log,
            clock.sim_time,
            session.state(),
        );
    }
    let timeout = server.heartbeat_timeout;
    let state = session.state();
    let lapsed: Vec<u64> = server
        .conns
        .iter()
        .filter(|(_, c)| {
            c.session_id.is_some() && !c.timed_out && c.last_heartbeat.elapsed() > timeout
        })
        .map(|(&id, _)| id)
        .collect();
    for id in lapsed {
        let server = &mut *server;
        let Some(c) = server.conns.get_mut(&id) else {
            continue;
        };
        c.timed_out = true;
        c.timed_out_at = Some(Instant::now());
        warn!(
            "teleop: NET_TIMEOUT: no heartbeat from {} for {} ms",
            c.peer,
            timeout.as_millis()
        );
        log.push(
            clock.sim_time,
            PROTOCOL,
            "NET_TIMEOUT",
            format!(
                "no heartbeat from {} for {} ms",
                c.peer,
                timeout.as_millis()
            ),
        );
        if server.controller == Some(id) {
            server.tick.adapter_mut().disengage(true);
            targets.commands = session.hold_posture(&sim.0);
        }
        let c = &server.conns[&id];
        server.alert(
            c,
            state,
            "NET_TIMEOUT",
            &format!("no heartbeat for {} ms; the arm holds", timeout.as_millis()),
        );
    }
}

/// In the step path: the controller's latest frame through the control pipeline.
fn adapt(
    mut server: ResMut<TeleopServer>,
    session: Res<Session>,
    sim: Res<Sim>,
    mut targets: ResMut<JointTargets>,
) {
    let server = &mut *server;
    let Some(conn) = server.controller else {
        return;
    };
    if session.state() != SessionState::Running
        || server
            .conns
            .get(&conn)
            .is_none_or(|c| c.timed_out || !c.started)
    {
        return;
    }
    if let SampleOutcome::DecodeError { error, .. } = server.tick.sample(&mut server.slot) {
        let c = &server.conns[&conn];
        server.alert(c, session.state(), "BAD_CONTROL_FRAME", &error.to_string());
    }
    let (q, qd) = crate::state::joint_state(&sim.0);
    let state = TeleopState { q, qd, frame: None };
    if let Some(commands) = server.tick.adapt(&state) {
        targets.commands = commands;
    }
    server.step_flags = server.step_flags.union(server.tick.adapter().flags());
}

/// State frames at `state_rate_hz` of wall-clock time, and limit alerts as they start.
fn publish_state(
    mut server: ResMut<TeleopServer>,
    session: Res<Session>,
    sim: Res<Sim>,
    clock: Res<SimClock>,
    referee: Res<Referee>,
    mut log: ResMut<AlertLog>,
) {
    let now = Instant::now();
    if now < server.next_state {
        return;
    }
    let period = Duration::from_secs_f64(1.0 / server.state_rate_hz);
    // Keep the schedule (deadline += period) so the average rate is exact; after a stall, resync.
    server.next_state += period;
    if server.next_state < now {
        server.next_state = now + period;
    }
    let server = &mut *server;
    let state = session.state();
    let flags = std::mem::take(&mut server.step_flags).union(server.tick.adapter().flags());
    let mut alerts = Vec::new();
    if flags.workspace {
        alerts.push("WORKSPACE_LIMIT");
    }
    if flags.table_clearance {
        alerts.push("TABLE_CLEARANCE");
    }
    if flags.speed_limit {
        alerts.push("SPEED_LIMIT");
    }
    if server.net_timeout() {
        alerts.push("NET_TIMEOUT");
    }
    // Limit alerts also go out as events when they start, for logs that do not read every frame.
    let started = [
        (
            flags.workspace && !server.alert_flags.workspace,
            "WORKSPACE_LIMIT",
            "target clamped to the workspace box",
        ),
        (
            flags.table_clearance && !server.alert_flags.table_clearance,
            "TABLE_CLEARANCE",
            "target raised to the table clearance, or the arm is below it",
        ),
        (
            flags.speed_limit && !server.alert_flags.speed_limit,
            "SPEED_LIMIT",
            "motion slowed to the joint speed limit, or a joint is faster than it",
        ),
    ];
    for (_, code, message) in started.iter().filter(|(on, _, _)| *on) {
        server.broadcast("ALERT", state, &alert_ext(code, message));
        log.push(clock.sim_time, PROTOCOL, code, *message);
    }
    server.alert_flags = flags;
    if server.sessions().next().is_none() {
        return;
    }
    let controller = server.controller.map(|_| server.tick.adapter());
    let snap = crate::state::snapshot(&sim.0);
    let mut frame = state_payload(
        &snap,
        &sim.0,
        state.as_str(),
        clock.stamp(),
        alerts,
        controller,
    );
    let book = &referee.book;
    frame.extensions.referee = Some(RefereeSummary {
        rules: book.name(),
        play_mode: book.play_mode().as_str(),
        score: book.score(),
        play_time_s: book.play_time(),
    });
    let teleop_state = TeleopState {
        q: Vec::new(),
        qd: Vec::new(),
        frame: Some(frame),
    };
    server.tick.publish(&mut server.slot, &teleop_state);
    for frame in std::mem::take(&mut server.slot.outbox) {
        // At most one session (a controller that has not sent START) sees another state.
        let mut own: Option<Arc<StateFramePayload>> = None;
        for c in server.conns.values().filter(|c| c.session_id.is_some()) {
            let seen = view(c, state);
            if seen == state {
                c.send_state(&frame);
            } else {
                let own = own.get_or_insert_with(|| {
                    let mut f = (*frame).clone();
                    f.sim_state = seen.as_str();
                    Arc::new(f)
                });
                c.send_state(own);
            }
        }
    }
}
