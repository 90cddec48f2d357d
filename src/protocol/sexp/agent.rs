//! The RCSSServerMJ agent port, the ECS side: one agent controls the arm through per-joint PD
//! effectors, perceptions every cycle, sync mode through the `StepGate`. Who is pending and who
//! controls, inits, queues and sync accounting are the pure machine in [`super::agents`]; this
//! bridge moves the threads' events into it and applies its actions. Effectors go through the
//! protocol tick: each message is decoded once, and the adapter turns the latest effector of
//! every joint into a torque on every step from the measured state.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use crossbeam_channel::Receiver;

use super::ConnEvent;
use super::Sexp;
pub use super::agents::AgentRole;
use super::agents::{AgentAction, AgentCtx, AgentInput, Agents, AgentsConfig};
use super::messages::{Effectors, JointEffector, parse_effectors, perception};
use super::options::{Game, Port, SexpOptions, game_info};
use super::reader::{ReadSide, Sides};
use super::server::{NetEvent, Outbox, error_payload, payload};
use crate::protocol::registry::{ArmOf, BridgeIo, ConnKey, Connections, Counters, Protocol, Role};
use crate::protocol::tick::{
    Codec, CommandAdapter, LatestCommand, ProtocolTick, ProtocolTime, Transport,
};
use crate::referee::LoggedEvent;
use crate::referee::plugin::Referee;
use crate::robot::RobotModel;
use crate::session::{SessionEvent, SessionNotice, SessionState, SessionSystems};
use crate::sim::{
    GatePoll, JointCommand, JointTargets, SIM_DT, Sim, SimClock, SimRef, SimStep, SimSystems,
    SimView, StepGate, gripper_commands,
};

/// The protocol name in logs and arm ownership.
pub const PROTOCOL: &str = Protocol::Agent.as_str();

fn agent_key(conn: u64) -> ConnKey {
    ConnKey::new(Protocol::Agent, conn)
}

/// A connection must send `(init …)` within this time.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an `(init …)` waits for the arm when its owner may be a client that has just gone
/// (a client restarting in a loop reconnects before its old connection's close is seen).
const CLAIM_GRACE: Duration = Duration::from_secs(1);

/// Agent messages queued before the oldest is dropped (real time) or the agent is (sync).
const MAX_INBOX: usize = 256;

/// Agent connections past their first message open at once (one controls; the rest are being
/// refused or wait for the arm).
pub const MAX_AGENT_CONNECTIONS: usize = 32;
/// Connections that have not sent `(init …)` yet, counted apart from the agents: past this
/// many the oldest is cut off, so half-open handshakes cannot lock a real agent out.
pub const MAX_PENDING_AGENTS: usize = 64;

/// Agent messages → effectors (decoded once per message).
pub struct EffectorCodec {
    robot: RobotModel,
}

/// What the adapter reads each step: measured joints.
#[derive(Default)]
pub struct JointState {
    pub q: Vec<f32>,
    pub qd: Vec<f32>,
}

impl Codec for EffectorCodec {
    type Inbound = Vec<Sexp>;
    type Outbound = Vec<u8>;
    type Command = Effectors;
    type State = JointState;
    type Error = std::convert::Infallible;

    fn decode(&mut self, wire: &Vec<Sexp>) -> Result<Effectors, Self::Error> {
        Ok(parse_effectors(&self.robot, wire))
    }

    // Perceptions are built from the whole world by the bridge, not from the joint state.
    fn encode(&mut self, _state: &JointState, _time: ProtocolTime, _out: &mut Vec<Vec<u8>>) {}
}

/// Merges each message's effectors into a per-joint table (idempotent, so re-applying the
/// latest message every step is harmless) and turns the table into torques from the measured
/// state on every step.
pub struct TorqueAdapter {
    robot: RobotModel,
    gripper_leader: Option<usize>,
    table: Vec<Option<JointEffector>>,
    gripper: Option<f32>,
}

impl TorqueAdapter {
    /// Takes a message's effectors into the table; joints it does not name keep theirs.
    fn merge(&mut self, cmd: &Effectors) {
        for &(j, e) in &cmd.joints {
            if let Some(slot) = self.table.get_mut(j) {
                *slot = Some(e);
            }
        }
        if cmd.gripper.is_some() {
            self.gripper = cmd.gripper;
        }
    }

    fn clear(&mut self) {
        self.table.iter_mut().for_each(|e| *e = None);
        self.gripper = None;
    }
}

impl CommandAdapter for TorqueAdapter {
    type Command = Effectors;
    type State = JointState;
    /// Per joint, its torque and the position it aims at: a PD effector with `kp > 0` aims at
    /// its `q`, which recordings take as the joint's action; a pure torque or damping aims at
    /// nothing.
    type Action = Vec<Option<(JointCommand, Option<f32>)>>;

    fn adapt(&mut self, cmd: &Effectors, state: &JointState) -> Option<Self::Action> {
        self.merge(cmd);
        let mut out: Self::Action = self
            .table
            .iter()
            .enumerate()
            .map(|(j, e)| {
                e.map(|e| {
                    let torque = JointCommand::Effort {
                        torque: e.torque(state.q[j], state.qd[j]),
                    };
                    (torque, (e.kp > 0.0).then_some(e.q))
                })
            })
            .collect();
        if let (Some(leader), Some(closed)) = (self.gripper_leader, self.gripper) {
            for (j, c) in gripper_commands(&self.robot, leader, closed) {
                // An explicit effector on a finger joint wins over the gripper command.
                if self.table[j].is_none() {
                    out[j] = Some((c, None));
                }
            }
        }
        Some(out)
    }
}

/// The protocol tick's transport for the agent: the message being applied.
#[derive(Default)]
struct MessageSlot {
    latest: LatestCommand<Vec<Sexp>>,
}

impl Transport for MessageSlot {
    type Inbound = Vec<Sexp>;
    type Outbound = Vec<u8>;

    fn latest_command_with_token(&mut self) -> Option<(u64, &Vec<Sexp>)> {
        self.latest.latest()
    }

    fn publish(&mut self, _msg: Vec<u8>) {}
}

/// The channels to one agent connection's threads, and what the bridge keeps per connection.
pub struct AgentConn {
    pub peer: SocketAddr,
    /// Shared with the connection registry.
    pub counters: Arc<Counters>,
    out: Outbox,
    /// Its read side; while it is the sync controller, the simulation reads it directly.
    read: Arc<ReadSide>,
    /// Its source in the `StepGate` (sync mode, while it controls).
    gate: Option<u64>,
    steps_in_cycle: u32,
    referee_cursor: u64,
}

impl AgentConn {
    /// From the ECS thread straight to the socket when nothing is queued (see
    /// [`Outbox::send_direct`]): a sync cycle does not wait for the writer thread to wake.
    fn send(&mut self, bytes: Vec<u8>) {
        if self.out.send_direct(&bytes) {
            self.counters.count_out();
        }
    }

    fn refuse(&mut self, reason: &str) {
        self.send(error_payload(reason));
        self.out.close();
    }
}

#[derive(Resource)]
pub struct AgentPort {
    pub addr: SocketAddr,
    pub sync: bool,
    pub cycle_steps: u32,
    conns: BTreeMap<u64, AgentConn>,
    agents: Agents,
    events: Receiver<NetEvent>,
    tick: ProtocolTick<EffectorCodec, TorqueAdapter>,
    slot: MessageSlot,
}

impl AgentPort {
    /// Messages the simulation thread read from its agents' sockets itself (a sync agent in
    /// control, `ReadSide`), over the connections open now.
    pub fn messages_read_directly(&self) -> u64 {
        self.conns
            .values()
            .map(|c| c.read.frames_read_by_simulation())
            .sum()
    }

    /// The agent controlling the arm.
    pub fn active(&self) -> Option<u64> {
        self.agents.active()
    }

    /// The agents' state machine (roles, inits, queues).
    pub fn agents(&self) -> &Agents {
        &self.agents
    }

    /// Closes an agent's connection (the panel's disconnect button).
    pub fn disconnect(&mut self, conn: u64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.refuse("disconnected from the panel");
        }
    }

    /// Hands `input` to the machine, with the arm as the registry holds it; `state` is the
    /// session state this batch's messages meet (a claim starts an IDLE session).
    fn feed(
        &mut self,
        conns: &mut Connections,
        state: &mut SessionState,
        input: Option<AgentInput>,
    ) {
        let mut arm = ArmOf {
            conns,
            protocol: Protocol::Agent,
        };
        let mut ctx = AgentCtx {
            now: Instant::now(),
            state: *state,
            arm: &mut arm,
        };
        match input {
            Some(input) => self.agents.handle(input, &mut ctx),
            None => self.agents.end_batch(&mut ctx),
        }
        *state = ctx.state;
    }
}

/// What the agent bridge's systems touch besides the port.
#[derive(SystemParam)]
struct AgentFx<'w, 's> {
    io: BridgeIo<'w, 's>,
    gate: ResMut<'w, StepGate>,
    referee: Res<'w, Referee>,
}

/// Does what the machine asked, in order; `state` is the session state the batch left.
fn apply(port: &mut AgentPort, fx: &mut AgentFx, state: SessionState) {
    let t = fx.io.clock.sim_time;
    while let Some(action) = port.agents.poll() {
        match action {
            AgentAction::Refuse { conn, reason } => {
                if let Some(c) = port.conns.get_mut(&conn) {
                    warn!("agent: refusing {}: {reason}", c.peer);
                    c.refuse(&reason);
                }
            }
            AgentAction::Warn { conn, text } => {
                if let Some(c) = port.conns.get_mut(&conn) {
                    info!("agent: {}: effectors not applied: {text}", c.peer);
                    c.send(payload(&[Sexp::list([
                        Sexp::atom("warning"),
                        Sexp::atom(text),
                    ])]));
                }
            }
            AgentAction::Claimed { conn, label, then } => {
                let Some(c) = port.conns.get_mut(&conn) else {
                    continue;
                };
                if port.sync {
                    c.gate = Some(fx.gate.register(format!("agent {}", c.peer)));
                    // Every cycle waits on its message: read it here, not through a thread.
                    c.read.set_direct(true);
                }
                fx.io.session_command(then);
                port.tick.reset_command();
                port.tick.adapter_mut().clear();
                port.slot = MessageSlot::default();
                info!(
                    "agent: {label} controls {}{}",
                    fx.io.sim.model().robot.name,
                    if port.sync {
                        "; each cycle waits for its message"
                    } else {
                        ""
                    }
                );
                fx.io.conns.announce(
                    agent_key(conn),
                    t,
                    &mut fx.io.log,
                    &format!("{label} controls the arm"),
                );
                // The first perception goes out now, so a sync agent can answer cycle 1.
                send_perception(
                    port,
                    conn,
                    &fx.io.sim.view(),
                    &fx.referee,
                    &fx.io.clock,
                    state,
                );
            }
            AgentAction::Dropped { conn } => {
                if let Some(c) = port.conns.get_mut(&conn) {
                    c.read.set_direct(true);
                    if let Some(id) = c.gate.take() {
                        fx.gate.unregister(id);
                    }
                }
                fx.io.conns.set_role(agent_key(conn), Role::Pending, None);
                port.tick.forget_command();
                port.tick.adapter_mut().clear();
                fx.io.hold_arm();
            }
            AgentAction::Closed { conn, reason } => {
                if let Some(c) = port.conns.remove(&conn) {
                    c.read.set_direct(true);
                    if let Some(id) = c.gate {
                        fx.gate.unregister(id);
                    }
                }
                fx.io
                    .conns
                    .close(agent_key(conn), &reason, t, &mut fx.io.log);
            }
            AgentAction::Ready { conn } => {
                if let Some(id) = port.conns.get(&conn).and_then(|c| c.gate) {
                    fx.gate.mark_ready(id);
                }
            }
            AgentAction::Log { code, text } => {
                warn!("agent: {code}: {text}");
                fx.io.log.push(t, PROTOCOL, code, text);
            }
            AgentAction::Note(text) => info!("agent: {text}"),
        }
    }
}

/// The agent port: a client drives the arm.
const PORT: Port = Port {
    name: "agent",
    protocol: Protocol::Agent,
    limits: (MAX_AGENT_CONNECTIONS, Some(MAX_PENDING_AGENTS)),
    powers: "drive the arm",
};

/// Starts the agent port on `addr` and wires it into the app; returns the bound address.
pub(super) fn add(
    app: &mut App,
    options: &SexpOptions,
    addr: SocketAddr,
) -> io::Result<SocketAddr> {
    let sync = if options.sync { " (sync)" } else { "" };
    let (addr, events, _writer) =
        options.open(app, addr, &PORT, |addr| format!("agents {addr}{sync}"))?;
    let cycle = options.cycle();
    let robot = app.world().resource::<Sim>().0.robot.clone();
    let gripper_leader = app
        .world()
        .resource::<crate::sim::SimScene>()
        .0
        .gripper_joint();
    let n = robot.joints.len();
    info!(
        "agent: listening on {addr} (robot {}, {} mode, {cycle} steps per cycle)",
        robot.name,
        if options.sync { "sync" } else { "real-time" }
    );
    let agents = Agents::new(AgentsConfig {
        robot: robot.name.clone(),
        sync: options.sync,
        sync_timeout: options.sync_timeout,
        init_timeout: INIT_TIMEOUT,
        claim_grace: CLAIM_GRACE,
        max_inbox: MAX_INBOX,
    });
    app.insert_resource(AgentPort {
        addr,
        sync: options.sync,
        cycle_steps: cycle,
        conns: BTreeMap::new(),
        agents,
        events,
        tick: ProtocolTick::new(
            EffectorCodec {
                robot: robot.clone(),
            },
            TorqueAdapter {
                robot,
                gripper_leader,
                table: vec![None; n],
                gripper: None,
            },
            SIM_DT,
        ),
        slot: MessageSlot::default(),
    })
    .add_systems(First, agent_events.before(SessionSystems))
    .add_systems(GatePoll, (agent_events, agent_gate).chain())
    .add_systems(SimStep, agent_sample.in_set(SimSystems::Sample))
    .add_systems(SimStep, agent_adapt.in_set(SimSystems::Adapt))
    .add_systems(SimStep, agent_publish.in_set(SimSystems::Publish))
    .add_systems(Last, agent_session_events);
    Ok(addr)
}

/// Sends a perception to `conn` (the active agent) and starts its cycle: its answer is owed.
fn send_perception(
    port: &mut AgentPort,
    conn: u64,
    world: &SimView<'_>,
    referee: &Referee,
    clock: &SimClock,
    session: SessionState,
) {
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    let events: Vec<&LoggedEvent> = referee.since(agent.referee_cursor).collect();
    agent.referee_cursor = referee.last_seq();
    let info = game_info(referee, clock, session, &events);
    let bytes = payload(&perception(world, &info));
    agent.send(bytes);
    agent.steps_in_cycle = 0;
    port.agents.perception_sent(Instant::now());
}

/// [`send_perception`] of the game as it stands (outside a batch of the machine).
fn publish(port: &mut AgentPort, conn: u64, game: &Game) {
    let state = game.session.state();
    send_perception(
        port,
        conn,
        &game.sim.view(),
        &game.referee,
        &game.clock,
        state,
    );
}

/// The connection threads' events through the machine (in `First`, and between steps).
fn agent_events(mut port: ResMut<AgentPort>, mut fx: AgentFx) {
    let port = &mut *port;
    let panel = fx.io.conns.panel_requests(Protocol::Agent);
    for conn in panel.kicks {
        port.disconnect(conn);
    }
    // The state this batch's messages meet: a claim below starts an IDLE session before any
    // step, so effectors sent right after `(init)` are not refused as "not running".
    let mut state = fx.io.session.state();
    if panel.revoked.is_some() {
        port.feed(&mut fx.io.conns, &mut state, Some(AgentInput::Revoked));
    }
    // A sync controller's socket is read here (see `ReadSide`): its frames join the queue.
    if let Some(c) = port.agents.active().and_then(|a| port.conns.get(&a)) {
        c.read.pump_now();
    }
    while let Ok(event) = port.events.try_recv() {
        let input = match event {
            NetEvent::Opened {
                conn,
                peer,
                with: Sides { out, read },
            } => {
                let counters = Arc::new(Counters::default());
                fx.io.conns.open(
                    agent_key(conn),
                    peer,
                    Role::Pending,
                    counters.clone(),
                    false,
                );
                port.conns.insert(
                    conn,
                    AgentConn {
                        peer,
                        counters,
                        out,
                        read,
                        gate: None,
                        steps_in_cycle: 0,
                        referee_cursor: fx.referee.last_seq(),
                    },
                );
                ConnEvent::Opened {
                    conn,
                    peer,
                    with: (),
                }
            }
            NetEvent::Message { conn, exprs } => {
                if let Some(c) = port.conns.get(&conn) {
                    c.counters.count_in();
                }
                ConnEvent::Message { conn, exprs }
            }
            NetEvent::Closed { conn, reason } => ConnEvent::Closed { conn, reason },
        };
        port.feed(&mut fx.io.conns, &mut state, Some(AgentInput::Conn(input)));
    }
    port.feed(&mut fx.io.conns, &mut state, None);
    apply(port, &mut fx, state);
}

/// A pause, reset or error reaches the agent at once, as a perception carrying the new
/// `(state …)`: while paused no cycle runs, so no perception would tell it otherwise.
fn agent_session_events(
    mut events: MessageReader<SessionNotice>,
    mut port: ResMut<AgentPort>,
    game: Game,
) {
    let (mut started, mut stopped) = (false, false);
    for e in events.read().map(|n| &n.0) {
        match e {
            SessionEvent::Started => started = true,
            _ => stopped = true,
        }
    }
    let port = &mut *port;
    let Some(conn) = port.agents.active() else {
        return;
    };
    if started {
        port.agents.session_started();
    }
    // Resuming needs no extra word: the cycles, and their perceptions, come back by themselves.
    if stopped {
        publish(port, conn, &game);
    }
}

/// Sync mode, between steps: the step that starts a cycle needs the agent's message; a silent
/// agent is dropped after the timeout so it never stalls the simulation.
fn agent_gate(mut port: ResMut<AgentPort>, mut fx: AgentFx) {
    let port = &mut *port;
    let mut state = fx.io.session.state();
    port.feed(&mut fx.io.conns, &mut state, Some(AgentInput::GatePoll));
    apply(port, &mut fx, state);
}

/// Step phase Sample: the messages this step applies (see [`Agents::take_batch`]), each
/// decoded and merged once, in arrival order.
fn agent_sample(mut port: ResMut<AgentPort>) {
    let port = &mut *port;
    let Some(conn) = port.agents.active() else {
        return;
    };
    for msg in port.agents.take_batch() {
        port.slot.latest.set(msg);
        port.tick.sample(&mut port.slot);
        let problems = port
            .tick
            .latest_command()
            .map(|c| c.problems.clone())
            .unwrap_or_default();
        // One warning and one `(error …)` per message, however many problems it has.
        if let (Some(agent), Some(first)) = (port.conns.get_mut(&conn), problems.first()) {
            let reason = match problems.len() {
                1 => first.clone(),
                n => format!("{n} problems in one message; the first: {first}"),
            };
            warn!("agent: {}: {reason}", agent.peer);
            agent.send(error_payload(&reason));
        }
        if let Some(cmd) = port.tick.latest_command().cloned() {
            port.tick.adapter_mut().merge(&cmd);
        }
    }
}

/// Step phase Adapt: the effectors become torques from this step's measured state.
fn agent_adapt(mut port: ResMut<AgentPort>, sim: SimRef, mut targets: ResMut<JointTargets>) {
    if port.agents.active().is_none() {
        return;
    }
    let (q, qd) = crate::state::joint_state(&sim.view());
    let state = JointState { q, qd };
    if let Some(commands) = port.tick.adapt(&state) {
        for (j, cmd) in commands.into_iter().enumerate() {
            if let Some((cmd, aim)) = cmd {
                // Torques come out finite (effectors are bounded where they are parsed); a
                // refusal would only leave the joint's previous command in place.
                let _ = targets.set_aiming(j, cmd, aim);
            }
        }
    }
}

/// Step phase Publish: a perception at the end of each cycle.
fn agent_publish(mut port: ResMut<AgentPort>, game: Game) {
    let port = &mut *port;
    port.tick.advance();
    let Some(conn) = port.agents.active() else {
        return;
    };
    let cycle = port.cycle_steps;
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    agent.steps_in_cycle += 1;
    if agent.steps_in_cycle >= cycle {
        publish(port, conn, &game);
    }
}
