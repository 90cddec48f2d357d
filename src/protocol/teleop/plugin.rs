//! The ECS side of revA: a thin bridge between the connection threads, the
//! sessions' state machine ([`Sessions`], roles and START, heartbeat watchdog, hand-over) and the
//! simulation. It moves the threads' events into the machine and applies the actions it asks for
//! (events to queue, session commands, control frames, the hold posture, the alert log); it runs
//! the control pipeline in the step path (through the `ProtocolTick`) and publishes state frames
//! at a fixed wall-clock rate to every session, each frame serialised once for all of them.
//! Sockets stay on the server's threads.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use crossbeam_channel::Receiver;
use serde_json::{Map, json};

use super::control::{LimitFlags, TeleopCodec, TeleopController, TeleopState, state_payload};
use super::envelope::RefereeSummary;
use super::envelope::{
    ControlFrame, DEFAULT_MAX_MESSAGE, EncodedState, SimEventPayload, StateFramePayload,
};
use super::io::TeleopIo;
use super::server;
use super::sessions::{Action, Ctx, Input, Sessions, SessionsConfig, alert_ext};
pub use super::sessions::{SessionRole, seen_state, view};
use super::wire::{ServerEvent, SharedSimState, TeleopConfig, ToClient};
use crate::protocol::dataset::DatasetControl;
use crate::protocol::registry::{self, ArmOf, BridgeIo, ConnKey, Connections, Protocol};
use crate::protocol::tick::{LatestCommand, ProtocolTick, SampleOutcome, Transport};
use crate::referee::plugin::Referee;
use crate::session::{SessionNotice, SessionState, SessionSystems};
use crate::sim::{SIM_DT, Sim, SimScene, SimStep, SimSystems, Stamp, sim_view};

/// The protocol name in logs, ownership and the panel.
pub const PROTOCOL: &str = Protocol::Teleop.as_str();

/// A teleop connection's key in the registry.
fn key(conn: u64) -> ConnKey {
    ConnKey::new(Protocol::Teleop, conn)
}

/// Settings of the teleop server beyond the scene's `networking` block.
#[derive(Clone, Debug)]
pub struct TeleopOptions {
    pub addr: SocketAddr,
    /// State frames per second of wall-clock time, to every session.
    pub state_rate_hz: f64,
    /// How long a controller may stay in NET_TIMEOUT before it is demoted (None: the scene's
    /// `extensions.armsim.controller_grace_s`, default 10 s).
    pub controller_grace: Option<Duration>,
    /// The pairing key peers beyond loopback must give (`?key=`); `None`: nobody is asked
    /// (`--teleop-no-key`, loudly logged when the listener is reachable from the network).
    pub key: Option<String>,
}

/// One connection, as the I/O thread serves it.
struct Link {
    conn: u64,
    io: TeleopIo,
}

impl Link {
    fn send(&self, msg: ToClient) {
        // A client that stopped reading loses events past its queue; its write deadline
        // closes it.
        self.io.send(self.conn, msg);
    }
}

/// The control slot: the tick's `Transport` for the controller's frames. Only frames that the
/// sessions accepted (controller, started, RUNNING) are put here; state frames go out per
/// connection.
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
    pub state_rate_hz: f64,
    links: BTreeMap<u64, Link>,
    /// What another listener (the headset page's wss) needs to feed these sessions.
    hub: server::Hub,
    sessions: Sessions,
    events: Receiver<ServerEvent>,
    shared: Arc<SharedSimState>,
    tick: ProtocolTick<TeleopCodec, TeleopController>,
    slot: ControlSlot,
    next_state: Instant,
    alert_flags: LimitFlags,
    /// Limits met on any step since the last state frame, so a frame reports a limit the arm
    /// touched between frames too.
    step_flags: LimitFlags,
    referee_cursor: u64,
    /// The clock when the events being sent happened: with the state
    /// frames' own stamp, a client can tell a frame from before an event from one after it.
    stamp: Stamp,
    /// Controllers' requests to the LeRobot recorder, answered by `answer_dataset_requests`.
    dataset_requests: Vec<(u64, DatasetControl)>,
}

impl TeleopServer {
    /// The connection that controls the arm, if any.
    pub fn controller(&self) -> Option<u64> {
        self.sessions.controller()
    }

    /// The shared side of the connection threads, for another listener to feed these sessions.
    pub fn hub(&self) -> &server::Hub {
        &self.hub
    }

    /// The sessions' state machine (roles, START, heartbeats).
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
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
        self.controller()?;
        self.tick.latest_command().map(|c| c.target)
    }

    /// Whether the controller's heartbeat has lapsed.
    pub fn net_timeout(&self) -> bool {
        self.sessions.net_timeout()
    }

    /// Closes a connection (the panel's disconnect button).
    pub fn disconnect(&self, conn: u64) {
        if let Some(l) = self.links.get(&conn) {
            l.send(ToClient::Close("disconnected from the panel".into()));
        }
    }

    /// Hands `input` to the sessions' machine, with the arm as the registry holds it; `state`
    /// is the session state this batch's messages meet, updated as they ask for commands.
    fn feed(&mut self, conns: &mut Connections, state: &mut SessionState, input: Input) {
        let mut arm = ArmOf {
            conns,
            protocol: Protocol::Teleop,
        };
        let mut ctx = Ctx {
            now: Instant::now(),
            state: *state,
            arm: &mut arm,
        };
        self.sessions.handle(input, &mut ctx);
        *state = ctx.state;
    }
}

/// Does what the machine asked, in order.
fn apply(server: &mut TeleopServer, fx: &mut BridgeIo) {
    let t = fx.clock.sim_time;
    // Each connection's events go out as one batch, in order, once the machine is drained.
    let mut outgoing: BTreeMap<u64, Vec<ToClient>> = BTreeMap::new();
    while let Some(action) = server.sessions.poll() {
        match action {
            Action::Send { conn, event } => {
                let SimEventPayload {
                    event,
                    sim_state,
                    session_id,
                    mut extensions,
                } = event;
                extensions.insert("episode".into(), json!(server.stamp.episode));
                extensions.insert("step".into(), json!(server.stamp.step));
                outgoing
                    .entry(conn)
                    .or_default()
                    .push(ToClient::Event(SimEventPayload {
                        event,
                        sim_state,
                        session_id,
                        extensions,
                    }));
            }
            Action::EndSession(conn) => {
                outgoing.entry(conn).or_default().push(ToClient::EndSession);
            }
            Action::Session(command) => fx.session_command(command),
            Action::Apply { seq, frame } => server.slot.latest.set((seq, frame)),
            Action::NewController => {
                server.tick.forget_command();
                server.slot.latest.clear();
                server.tick.adapter_mut().hand_over();
            }
            Action::Hold => fx.hold_arm(),
            Action::Disengage { hold } => server.tick.adapter_mut().disengage(hold),
            Action::ForgetControl => {
                server.tick.forget_command();
                server.slot.latest.clear();
            }
            Action::Announce { conn, text } => fx.conns.announce(key(conn), t, &mut fx.log, &text),
            Action::Closed { conn, reason } => {
                fx.conns.close(key(conn), &reason, t, &mut fx.log);
                server.links.remove(&conn);
            }
            Action::Log { code, text } => {
                warn!("teleop: {code}: {text}");
                fx.log.push(t, PROTOCOL, code, text);
            }
            Action::Note(text) => info!("teleop: {text}"),
            Action::Dataset { conn, control } => server.dataset_requests.push((conn, control)),
        }
    }
    for (conn, msgs) in outgoing {
        if let Some(l) = server.links.get(&conn) {
            l.io.send_all(conn, msgs);
        }
    }
}

/// Starts the server on `options.addr` (the scene's `ws_path`) and wires it into the app.
/// Returns the bound address, or the bind error (e.g. port in use).
pub fn add(app: &mut App, options: TeleopOptions) -> io::Result<SocketAddr> {
    let scene = app.world().resource::<SimScene>().0.clone();
    let cfg = &scene.config;
    let shared = Arc::new(SharedSimState::default());
    let (addr, events, hub) = server::start(
        TeleopConfig {
            addr: options.addr,
            path: cfg.networking.ws_path.clone(),
            scene_id: cfg.scene_id.clone(),
            max_message: DEFAULT_MAX_MESSAGE,
            key: options.key.clone(),
        },
        shared.clone(),
    )?;
    let controller = {
        let world = sim_view(app.world());
        TeleopController::new(&scene, &world, cfg.control.filter.params)
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
    let exposure = match &options.key {
        Some(key) if crate::protocol::net::exposed(addr) => {
            info!(
                "teleop: peers beyond loopback need the pairing key: ws://{addr}{}?key={key}",
                cfg.networking.ws_path
            );
            Some(" (key needed beyond loopback)".to_owned())
        }
        Some(_) => None,
        None => crate::protocol::net::warn_if_exposed(
            "teleop (--teleop-no-key)",
            addr,
            "drive the arm and start, pause or reset the simulation",
        ),
    };
    registry::add_listener(
        app,
        Protocol::Teleop,
        format!(
            "teleop ws://{addr}{}{}",
            cfg.networking.ws_path,
            exposure.unwrap_or_default()
        ),
    );
    let hb = cfg.heartbeat;
    let mut connected_ext = Map::new();
    connected_ext.insert("scene_id".into(), json!(cfg.scene_id));
    let robot = &app.world().resource::<Sim>().0.robot;
    let joints: Vec<&str> = robot.joints.iter().map(|j| j.name.as_str()).collect();
    connected_ext.insert("joint_names".into(), json!(joints));
    connected_ext.insert("state_rate_hz".into(), json!(options.state_rate_hz));
    connected_ext.insert(
        "heartbeat".into(),
        json!({"period_ms": hb.period_ms, "timeout_ms": hb.timeout_ms}),
    );
    let sessions = Sessions::new(SessionsConfig {
        heartbeat_timeout: Duration::from_millis(hb.timeout_ms),
        controller_grace,
        connected_ext,
    });
    app.insert_resource(TeleopServer {
        addr,
        path: cfg.networking.ws_path.clone(),
        state_rate_hz: options.state_rate_hz,
        links: BTreeMap::new(),
        hub,
        sessions,
        events,
        shared,
        tick: ProtocolTick::new(codec, controller, SIM_DT),
        slot: ControlSlot::default(),
        next_state: Instant::now(),
        alert_flags: LimitFlags::default(),
        step_flags: LimitFlags::default(),
        referee_cursor: 0,
        stamp: Stamp::default(),
        dataset_requests: Vec::new(),
    })
    .add_systems(
        First,
        (handle_events, answer_dataset_requests)
            .chain()
            .before(SessionSystems),
    )
    .add_systems(Update, (session_events, watchdog, referee_events))
    .add_systems(SimStep, adapt.in_set(SimSystems::Adapt))
    .add_systems(Last, (publish_state, mirror_roles));
    Ok(addr)
}

/// Controllers' `LEROBOT_*` ui_cmds to the recorder, each answered: its event
/// (`EPISODE_ENDED`, `EPISODE_DISCARDED`, `RECORDING_STOPPED`) with what happens, or an ALERT
/// `NOT_RECORDING` with why nothing can.
fn answer_dataset_requests(
    mut server: ResMut<TeleopServer>,
    mut fx: BridgeIo,
    mut dataset: crate::lerobot::DatasetRequests,
) {
    if server.dataset_requests.is_empty() {
        return;
    }
    let server = &mut *server;
    let state = fx.session.state();
    for (conn, control) in std::mem::take(&mut server.dataset_requests) {
        match dataset.request(control) {
            Ok(what) => {
                let mut ext = Map::new();
                ext.insert("lerobot".into(), json!(what));
                server.sessions.event(conn, control.event(), state, ext);
            }
            Err(why) => server.sessions.alert(conn, state, "NOT_RECORDING", &why),
        }
    }
    apply(server, &mut fx);
}

/// The connection threads' events through the sessions' machine, then its actions.
fn handle_events(mut server: ResMut<TeleopServer>, mut fx: BridgeIo) {
    let server = &mut *server;
    server.stamp = fx.clock.stamp();
    let panel = fx.conns.panel_requests(Protocol::Teleop);
    for conn in panel.kicks {
        server.disconnect(conn);
    }
    // Updated as this batch writes session commands, so each message meets the state the
    // messages before it left (`armsim_core::session::transition`).
    let mut state = fx.session.state();
    if panel.revoked.is_some() {
        server.feed(&mut fx.conns, &mut state, Input::Revoked);
    }
    while let Ok(event) = server.events.try_recv() {
        let input = match event {
            ServerEvent::Opened {
                conn,
                peer,
                counters,
            } => {
                fx.conns
                    .open(key(conn), peer, registry::Role::NoSession, counters, true);
                let io = server.hub.io().clone();
                server.links.insert(conn, Link { conn, io });
                Input::Opened { conn, peer }
            }
            ServerEvent::Session(input) => input,
            ServerEvent::Alert { code, text } => {
                warn!("teleop: {code}: {text}");
                fx.log.push(fx.clock.sim_time, PROTOCOL, code, text);
                continue;
            }
        };
        server.feed(&mut fx.conns, &mut state, input);
    }
    let mut arm = ArmOf {
        conns: &mut fx.conns,
        protocol: Protocol::Teleop,
    };
    server.sessions.end_batch(&mut Ctx {
        now: Instant::now(),
        state,
        arm: &mut arm,
    });
    apply(server, &mut fx);
}

/// Tells every session about session changes, whoever caused them.
fn session_events(
    mut events: MessageReader<SessionNotice>,
    mut server: ResMut<TeleopServer>,
    mut fx: BridgeIo,
) {
    let server = &mut *server;
    server.stamp = fx.clock.stamp();
    let state = fx.session.state();
    server.shared.set(state.as_str());
    for event in events.read().map(|n| &n.0) {
        server.feed(&mut fx.conns, &mut state.clone(), Input::Session(*event));
    }
    apply(server, &mut fx);
}

/// The referee's decisions (scores, cubes put back, play modes) reach every session as alerts.
fn referee_events(mut server: ResMut<TeleopServer>, referee: Res<Referee>, mut fx: BridgeIo) {
    if referee.last_seq() == server.referee_cursor {
        return;
    }
    let server = &mut *server;
    let state = fx.session.state();
    for e in referee.since(server.referee_cursor) {
        let mut ext = alert_ext(e.event.code(), &e.event.to_string());
        ext.insert("referee_seq".into(), json!(e.seq));
        ext.insert("sim_time_s".into(), json!(e.sim_time));
        server.sessions.broadcast("ALERT", state, &ext);
    }
    server.referee_cursor = referee.last_seq();
    apply(server, &mut fx);
}

/// Heartbeat loss and the controller's grace period (see [`Sessions`]).
fn watchdog(mut server: ResMut<TeleopServer>, mut fx: BridgeIo) {
    let server = &mut *server;
    let mut state = fx.session.state();
    server.feed(&mut fx.conns, &mut state, Input::Tick);
    apply(server, &mut fx);
}

/// In the step path: the controller's latest frame through the control pipeline.
fn adapt(mut server: ResMut<TeleopServer>, mut fx: BridgeIo) {
    let server = &mut *server;
    let Some(conn) = server.sessions.controlling() else {
        return;
    };
    let state = fx.session.state();
    if state != SessionState::Running {
        return;
    }
    if let SampleOutcome::DecodeError { error, .. } = server.tick.sample(&mut server.slot) {
        server
            .sessions
            .alert(conn, state, "BAD_CONTROL_FRAME", &error.to_string());
        apply(server, &mut fx);
    }
    let (q, qd) = crate::state::joint_state(&fx.sim.view());
    let teleop_state = TeleopState { q, qd, frame: None };
    if let Some(commands) = server.tick.adapt(&teleop_state) {
        fx.targets.commands = commands;
    }
    server.step_flags = server.step_flags.union(server.tick.adapter().flags());
}

/// State frames at `state_rate_hz` of wall-clock time, and limit alerts as they start.
fn publish_state(mut server: ResMut<TeleopServer>, referee: Res<Referee>, mut fx: BridgeIo) {
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
    let state = fx.session.state();
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
        server
            .sessions
            .broadcast("ALERT", state, &alert_ext(code, message));
        fx.log.push(fx.clock.sim_time, PROTOCOL, code, *message);
    }
    apply(server, &mut fx);
    server.alert_flags = flags;
    if server.sessions.sessions().next().is_none() {
        return;
    }
    let controller = server.controller().map(|_| server.tick.adapter());
    let sim = fx.sim.view();
    let snap = crate::state::snapshot(&sim);
    let mut frame = state_payload(
        &snap,
        &sim,
        state.as_str(),
        fx.clock.stamp(),
        alerts,
        controller,
    );
    // Who holds the arm and the simulation's own state are everyone's; `sim_state` and `role`
    // are set per session below.
    frame.extensions.arm_holder = fx.conns.owner().map(|_| fx.conns.describe());
    frame.extensions.global_sim_state = state.as_str();
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
        // Sessions are grouped by what they are shown, (state seen, role): every observer is
        // IDLE unless the simulation is in ERROR (see `view`), so the observers share one
        // group; one serialisation and one hand-off to the I/O thread per group.
        let mut groups: BTreeMap<(&str, &str), (View, Vec<u64>)> = BTreeMap::new();
        for (id, c) in server.sessions.sessions() {
            if server.links.contains_key(&id) {
                let seen = (view(c, state), c.role);
                groups
                    .entry((seen.0.as_str(), seen.1.as_str()))
                    .or_insert_with(|| (seen, Vec::new()))
                    .1
                    .push(id);
            }
        }
        for (seen, conns) in groups.into_values() {
            let encoded = EncodedState::new(&with_view(frame.clone(), seen));
            server.hub.io().send_state(conns, Arc::new(encoded));
        }
    }
}

/// What a session is shown: the state it sees and its role.
type View = (SessionState, SessionRole);

/// `frame` as a session with this (state seen, role) gets it; cloned only if it differs.
fn with_view(
    mut frame: Arc<StateFramePayload>,
    (seen, role): (SessionState, SessionRole),
) -> Arc<StateFramePayload> {
    if frame.sim_state != seen.as_str() || frame.extensions.role != role.as_str() {
        let f = Arc::make_mut(&mut frame);
        f.sim_state = seen.as_str();
        f.extensions.role = role.as_str();
    }
    frame
}

/// Once a frame: each connection's role as the panel shows it (a controller's frames apply only
/// after its START), and the NET_TIMEOUT line.
fn mirror_roles(server: Res<TeleopServer>, mut conns: ResMut<Connections>) {
    for (id, c) in server.sessions.iter() {
        let (role, detail) = match (c.session_id.is_some(), c.role) {
            (false, _) => (registry::Role::NoSession, None),
            (true, SessionRole::Controller) if !c.started => {
                (registry::Role::Controller, Some("no START yet"))
            }
            (true, SessionRole::Controller) => (registry::Role::Controller, None),
            (true, SessionRole::Observer) if c.watch_only => {
                (registry::Role::Observer, Some("watch only"))
            }
            (true, SessionRole::Observer) => (registry::Role::Observer, None),
        };
        conns.set_role(key(id), role, detail);
    }
    let warning = server
        .net_timeout()
        .then(|| "controller: NET_TIMEOUT".to_string());
    conns.set_warning(Protocol::Teleop, warning);
}
