//! The agent port of spec 001: one agent controls the arm through per-joint PD effectors,
//! perceptions every cycle, sync mode through the `StepGate`. Effectors go through the spec-000
//! core: each message is decoded once, and the adapter turns the latest effector of every joint
//! into a torque on every step from the measured state.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender};

use super::messages::{Effectors, JointEffector, parse_effectors, perception};
use super::plugin::{SexpOptions, game_info};
use super::server::{self, NetEvent, Out, PortLimits, error_payload, payload};
use super::sexp::Sexp;
use crate::protocol::core::{
    Codec, CommandAdapter, LatestCommand, ProtocolTick, ProtocolTime, Transport,
};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::referee::plugin::{LoggedEvent, Referee};
use crate::robot::RobotModel;
use crate::session::{
    AlertLog, Session, SessionCommand, SessionEvent, SessionState, SessionSystems,
};
use crate::sim::{
    GatePoll, JointCommand, JointTargets, SIM_DT, Sim, SimClock, SimStep, SimSystems, StepGate,
    gripper_commands,
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

/// Agent connections open at once (one controls; the rest wait for `(init …)` or a refusal).
pub const MAX_AGENT_CONNECTIONS: usize = 32;

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
    type Action = Vec<Option<JointCommand>>;

    fn adapt(&mut self, cmd: &Effectors, state: &JointState) -> Option<Self::Action> {
        self.merge(cmd);
        let mut out: Vec<Option<JointCommand>> = self
            .table
            .iter()
            .enumerate()
            .map(|(j, e)| {
                e.map(|e| JointCommand::Effort {
                    torque: e.torque(state.q[j], state.qd[j]),
                })
            })
            .collect();
        if let (Some(leader), Some(closed)) = (self.gripper_leader, self.gripper) {
            for (j, c) in gripper_commands(&self.robot, leader, closed) {
                // An explicit effector on a finger joint wins over the gripper command.
                if self.table[j].is_none() {
                    out[j] = Some(c);
                }
            }
        }
        Some(out)
    }
}

/// Spec 000's transport for the agent: the message being applied.
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentRole {
    /// Connected, `(init …)` not yet received.
    Pending,
    Active {
        team: String,
        number: String,
    },
}

pub struct AgentConn {
    pub peer: SocketAddr,
    pub role: AgentRole,
    pub opened: Instant,
    /// Shared with the connection registry.
    pub counters: Arc<Counters>,
    out: Sender<Out>,
    inbox: VecDeque<Vec<Sexp>>,
    gate: Option<u64>,
    /// Perceptions sent whose answers have not been consumed yet (sync mode: one message per
    /// perception; usually 0 or 1, 2 after a session change sent an extra perception).
    owed: usize,
    waiting_since: Instant,
    /// The session state effectors were last refused in, so the agent is told once per stretch.
    warned: Option<SessionState>,
    steps_in_cycle: u32,
    referee_cursor: u64,
    init_timed_out: bool,
    /// An `(init …)` waiting for the arm's current owner to leave, and since when.
    parked_init: Option<(Vec<Sexp>, Instant)>,
}

impl AgentConn {
    fn send(&mut self, bytes: Vec<u8>) {
        if self.out.try_send(Out::Frame(bytes)).is_ok() {
            self.counters.count_out();
        }
    }

    fn refuse(&mut self, reason: &str) {
        self.send(error_payload(reason));
        let _ = self.out.try_send(Out::Close);
    }
}

#[derive(Resource)]
pub struct AgentPort {
    pub addr: SocketAddr,
    pub conns: BTreeMap<u64, AgentConn>,
    pub sync: bool,
    pub cycle_steps: u32,
    events: Receiver<NetEvent>,
    active: Option<u64>,
    sync_timeout: Duration,
    tick: ProtocolTick<EffectorCodec, TorqueAdapter>,
    slot: MessageSlot,
}

impl AgentPort {
    /// The agent controlling the arm.
    pub fn active(&self) -> Option<u64> {
        self.active
    }

    /// Closes an agent's connection (the panel's disconnect button).
    pub fn disconnect(&mut self, conn: u64) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.refuse("disconnected from the panel");
        }
    }
}

/// Starts the agent port on `addr` and wires it into the app; returns the bound address.
pub(super) fn add(
    app: &mut App,
    options: &SexpOptions,
    addr: SocketAddr,
) -> io::Result<SocketAddr> {
    let cycle = options.cycle_steps.max(1);
    let (addr, events) = server::start(
        addr,
        "agent",
        PortLimits {
            max_frame: options.max_frame,
            max_connections: MAX_AGENT_CONNECTIONS,
        },
    )?;
    let robot = app.world().resource::<Sim>().0.robot.clone();
    let gripper_leader = app
        .world()
        .resource::<crate::sim::SimScene>()
        .0
        .gripper_joint();
    let n = robot.joints.len();
    crate::protocol::registry::add_listener(
        app,
        Protocol::Agent,
        format!("agents {addr}{}", if options.sync { " (sync)" } else { "" }),
    );
    info!(
        "agent: listening on {addr} (robot {}, {} mode, {cycle} steps per cycle)",
        robot.name,
        if options.sync { "sync" } else { "real-time" }
    );
    app.insert_resource(AgentPort {
        addr,
        conns: BTreeMap::new(),
        sync: options.sync,
        cycle_steps: cycle,
        events,
        active: None,
        sync_timeout: options.sync_timeout,
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

fn send_perception(
    agent: &mut AgentConn,
    world: &Sim,
    referee: &Referee,
    clock: &SimClock,
    session: SessionState,
) {
    let events: Vec<&LoggedEvent> = referee.since(agent.referee_cursor).collect();
    agent.referee_cursor = referee.last_seq();
    let info = game_info(referee, clock, session, &events);
    let bytes = payload(&perception(&world.0, &info));
    agent.send(bytes);
    agent.steps_in_cycle = 0;
    agent.owed += 1;
    agent.waiting_since = Instant::now();
}

#[allow(clippy::too_many_arguments)]
fn agent_events(
    mut port: ResMut<AgentPort>,
    mut owner: ResMut<Connections>,
    mut gate: ResMut<StepGate>,
    mut targets: ResMut<JointTargets>,
    sim: Res<Sim>,
    referee: Res<Referee>,
    clock: Res<SimClock>,
    session: Res<Session>,
    mut log: ResMut<AlertLog>,
    mut commands: MessageWriter<SessionCommand>,
) {
    let port = &mut *port;
    let t = clock.sim_time;
    // The state this batch's messages meet: a claim below starts an IDLE session before any
    // step, so effectors sent right after `(init)` are not refused as "not running".
    let mut state = session.state();
    for conn in owner.take_kicks(Protocol::Agent) {
        port.disconnect(conn);
    }
    if owner.take_revoked(Protocol::Agent)
        && let Some(conn) = port.active.take()
        && let Some(agent) = port.conns.get_mut(&conn)
    {
        owner.set_role(agent_key(conn), Role::Pending, None);
        agent.refuse("control of the arm was revoked from the panel");
        if let Some(id) = agent.gate.take() {
            gate.unregister(id);
        }
        agent.role = AgentRole::Pending;
        port.tick.forget_command();
        port.tick.adapter_mut().clear();
        targets.commands = session.hold_posture(&sim.0);
        log.push(t, PROTOCOL, "REVOKED", format!("{} dropped", agent.peer));
    }
    while let Ok(event) = port.events.try_recv() {
        match event {
            NetEvent::Opened { conn, peer, out } => {
                let counters = Arc::new(Counters::default());
                owner.open(
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
                        role: AgentRole::Pending,
                        opened: Instant::now(),
                        counters,
                        out,
                        inbox: VecDeque::new(),
                        gate: None,
                        owed: 0,
                        waiting_since: Instant::now(),
                        warned: None,
                        steps_in_cycle: 0,
                        referee_cursor: referee.last_seq(),
                        init_timed_out: false,
                        parked_init: None,
                    },
                );
            }
            NetEvent::Message { conn, exprs } => {
                let Some(agent) = port.conns.get_mut(&conn) else {
                    continue;
                };
                agent.counters.count_in();
                // While its init waits for the arm, what an agent sends next waits with it.
                if agent.role != AgentRole::Pending || agent.parked_init.is_some() {
                    if agent.parked_init.is_none() {
                        warn_if_ignored(agent, &exprs, state);
                    }
                    if agent.inbox.len() >= MAX_INBOX {
                        if port.sync {
                            // More than one message per cycle, for long: it will never catch up.
                            warn!(
                                "agent: {} is {MAX_INBOX} messages ahead of the cycle; dropping it",
                                agent.peer
                            );
                            agent.refuse(&format!(
                                "sync mode takes one message per cycle; {MAX_INBOX} are queued"
                            ));
                            continue;
                        }
                        // Real time while paused: the oldest effectors are superseded anyway.
                        agent.inbox.pop_front();
                    }
                    agent.inbox.push_back(exprs);
                    continue;
                }
                // Taken after the batch, so a close already in it frees the arm first.
                agent.parked_init = Some((exprs, Instant::now()));
            }
            NetEvent::Closed { conn, reason } => {
                owner.close(agent_key(conn), &reason, t, &mut log);
                if let Some(agent) = port.conns.remove(&conn) {
                    if let Some(id) = agent.gate {
                        gate.unregister(id);
                    }
                    if port.active == Some(conn) {
                        port.active = None;
                        port.tick.forget_command();
                        port.tick.adapter_mut().clear();
                        targets.commands = session.hold_posture(&sim.0);
                        info!(
                            "agent: {} gone ({reason}); the arm follows pause_behavior",
                            agent.peer
                        );
                    }
                }
            }
        }
    }
    // This batch's inits, and those that waited for an owner who has left since (or who stays:
    // refused after the grace).
    let parked: Vec<(u64, Vec<Sexp>, Instant)> = port
        .conns
        .iter_mut()
        .filter_map(|(&conn, a)| a.parked_init.take().map(|(e, since)| (conn, e, since)))
        .collect();
    for (conn, exprs, since) in parked {
        let mut world = InitWorld {
            owner: &mut owner,
            gate: &mut gate,
            sim: &sim,
            referee: &referee,
            clock: &clock,
            state: &mut state,
            commands: &mut commands,
            log: &mut log,
        };
        try_init(port, conn, exprs, since, &mut world);
    }
    // A connection that never says who it is would hold a thread and a socket forever.
    for agent in port.conns.values_mut() {
        if agent.role == AgentRole::Pending
            && !agent.init_timed_out
            && agent.opened.elapsed() >= INIT_TIMEOUT
        {
            agent.init_timed_out = true;
            warn!(
                "agent: {} sent no (init …) within {INIT_TIMEOUT:?}; closing",
                agent.peer
            );
            agent.refuse("no (init <model> <team> <number>) within 10 s");
        }
    }
}

/// What handling an `(init …)` touches besides the port.
struct InitWorld<'a, 'w> {
    owner: &'a mut Connections,
    gate: &'a mut StepGate,
    sim: &'a Sim,
    referee: &'a Referee,
    clock: &'a SimClock,
    /// The session state this batch's messages meet (a claim starts an IDLE session).
    state: &'a mut SessionState,
    commands: &'a mut MessageWriter<'w, SessionCommand>,
    log: &'a mut AlertLog,
}

/// Takes `conn`'s `(init …)` (first sent at `since`): the agent gets the arm, or is refused,
/// or, while the arm's owner may be a client that has just gone (its close not yet seen), the
/// init waits up to [`CLAIM_GRACE`] for the arm to come free.
fn try_init(
    port: &mut AgentPort,
    conn: u64,
    exprs: Vec<Sexp>,
    since: Instant,
    world: &mut InitWorld<'_, '_>,
) {
    let t = world.clock.sim_time;
    let robot = &world.sim.0.robot.name;
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    let (team, number) = match check_init(&exprs, robot) {
        Ok(ok) => ok,
        Err(reason) => {
            warn!("agent: refusing {}: {reason}", agent.peer);
            world
                .log
                .push(t, PROTOCOL, "REFUSED", format!("{}: {reason}", agent.peer));
            agent.refuse(&reason);
            return;
        }
    };
    let label = format!("{} ({team} {number})", agent.peer);
    if port.active.is_some() || !world.owner.claim(agent_key(conn), &label) {
        if since.elapsed() < CLAIM_GRACE {
            agent.parked_init = Some((exprs, since));
            return;
        }
        let reason = format!(
            "the arm is already controlled by {}",
            world.owner.describe()
        );
        warn!("agent: refusing {}: {reason}", agent.peer);
        agent.refuse(&reason);
        return;
    }
    agent.role = AgentRole::Active { team, number };
    if port.sync {
        agent.gate = Some(world.gate.register(format!("agent {}", agent.peer)));
    }
    port.active = Some(conn);
    // The client that claims the arm starts the session (one rule for every protocol); a pause
    // from the panel stays a pause.
    world.commands.write(SessionCommand::StartOnClaim);
    if *world.state == SessionState::Idle {
        *world.state = SessionState::Running;
    }
    port.tick.reset_command();
    port.tick.adapter_mut().clear();
    port.slot = MessageSlot::default();
    info!(
        "agent: {label} controls {robot}{}",
        if port.sync {
            "; each cycle waits for its message"
        } else {
            ""
        }
    );
    world.owner.announce(
        agent_key(conn),
        t,
        world.log,
        &format!("{label} controls the arm"),
    );
    // The first perception goes out now, so a sync agent can answer cycle 1.
    send_perception(agent, world.sim, world.referee, world.clock, *world.state);
}

/// Effectors only apply while the session is RUNNING. Told once per stretch of another state,
/// with `(warning …)`, so the agent knows why the arm does not follow (a pause from the panel,
/// a reset, an error); `(syn)` alone is not an effector.
fn warn_if_ignored(agent: &mut AgentConn, exprs: &[Sexp], state: SessionState) {
    if state == SessionState::Running {
        agent.warned = None;
        return;
    }
    if agent.warned == Some(state) || exprs.iter().all(|e| e.is("syn")) {
        return;
    }
    agent.warned = Some(state);
    let why = match state {
        SessionState::Paused => "the session is PAUSED; effectors apply when it runs again",
        SessionState::Idle => {
            "the session is IDLE (reset); effectors apply once it is started (panel Start or the monitor's (start))"
        }
        SessionState::Error => "the session is in ERROR; effectors apply after a reset and a start",
        SessionState::Running => return,
    };
    info!("agent: {}: effectors not applied: {why}", agent.peer);
    agent.send(payload(&[Sexp::list([
        Sexp::atom("warning"),
        Sexp::atom(why),
    ])]));
}

/// A pause, reset or error reaches the agent at once, as a perception carrying the new
/// `(state …)`: while paused no cycle runs, so no perception would tell it otherwise.
fn agent_session_events(
    mut events: MessageReader<SessionEvent>,
    mut port: ResMut<AgentPort>,
    sim: Res<Sim>,
    referee: Res<Referee>,
    clock: Res<SimClock>,
    session: Res<Session>,
) {
    let (mut started, mut stopped) = (false, false);
    for e in events.read() {
        match e {
            SessionEvent::Started => started = true,
            _ => stopped = true,
        }
    }
    let port = &mut *port;
    let Some(agent) = port.active.and_then(|c| port.conns.get_mut(&c)) else {
        return;
    };
    if started {
        // The next stretch out of RUNNING gets its own warning.
        agent.warned = None;
    }
    // Resuming needs no extra word: the cycles, and their perceptions, come back by themselves.
    if stopped {
        send_perception(agent, &sim, &referee, &clock, session.state());
    }
}

/// `(init <model> <team> <number>)` for this robot.
fn check_init(exprs: &[Sexp], robot: &str) -> Result<(String, String), String> {
    let Some(first) = exprs.first() else {
        return Err("the first message must be (init <model> <team> <number>)".into());
    };
    if !first.is("init") {
        return Err(format!(
            "the first message must be (init <model> <team> <number>), got {first}"
        ));
    }
    let args: Vec<&str> = first.args().iter().filter_map(Sexp::as_atom).collect();
    match args.as_slice() {
        [model, team, number] if first.args().len() == 3 => {
            if *model == robot {
                Ok((team.to_string(), number.to_string()))
            } else {
                Err(format!(
                    "unknown model {model:?}; this scene's robot is {robot:?}"
                ))
            }
        }
        _ => Err(format!(
            "(init <model> <team> <number>) expected, got {first}"
        )),
    }
}

/// Sync mode, between steps: the step that starts a cycle needs the agent's message; a silent
/// agent is dropped after the timeout so it never stalls the simulation.
fn agent_gate(
    mut port: ResMut<AgentPort>,
    mut gate: ResMut<StepGate>,
    mut owner: ResMut<Connections>,
    mut targets: ResMut<JointTargets>,
    sim: Res<Sim>,
    session: Res<Session>,
) {
    let port = &mut *port;
    let Some(conn) = port.active else {
        return;
    };
    let timeout = port.sync_timeout;
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    let Some(id) = agent.gate else {
        return;
    };
    if agent.inbox.len() >= agent.owed {
        gate.mark_ready(id);
    } else if agent.waiting_since.elapsed() >= timeout {
        warn!(
            "agent: {} sent nothing for {:.1} s in sync mode; dropping it",
            agent.peer,
            timeout.as_secs_f64()
        );
        agent.refuse(&format!(
            "sync mode: no message for {:.1} s; dropped",
            timeout.as_secs_f64()
        ));
        gate.unregister(id);
        agent.gate = None;
        agent.owed = 0;
        agent.role = AgentRole::Pending;
        port.active = None;
        owner.release(agent_key(conn));
        owner.set_role(agent_key(conn), Role::Pending, None);
        port.tick.forget_command();
        port.tick.adapter_mut().clear();
        targets.commands = session.hold_posture(&sim.0);
    }
}

/// Step phase Sample: the message this step applies. In sync mode the step that starts a cycle
/// takes exactly one message; otherwise everything that arrived is applied in order.
fn agent_sample(mut port: ResMut<AgentPort>) {
    let port = &mut *port;
    let Some(conn) = port.active else {
        return;
    };
    let sync = port.sync;
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    let mut batch = Vec::new();
    if sync {
        // The answers to every perception sent so far, in order (the gate waited for them).
        let n = agent.owed.min(agent.inbox.len());
        batch.extend(agent.inbox.drain(..n));
        agent.owed -= n;
    } else {
        agent.owed = 0;
        batch.extend(agent.inbox.drain(..));
    }
    for msg in batch {
        port.slot.latest.set(msg);
        port.tick.sample(&mut port.slot);
        // The merge into the per-joint table happens here, once per message, in arrival order.
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
fn agent_adapt(mut port: ResMut<AgentPort>, sim: Res<Sim>, mut targets: ResMut<JointTargets>) {
    if port.active.is_none() {
        return;
    }
    let (q, qd) = crate::state::joint_state(&sim.0);
    let state = JointState { q, qd };
    if let Some(commands) = port.tick.adapt(&state) {
        for (slot, cmd) in targets.commands.iter_mut().zip(commands) {
            if let Some(cmd) = cmd {
                *slot = cmd;
            }
        }
    }
}

/// Step phase Publish: a perception at the end of each cycle.
fn agent_publish(
    mut port: ResMut<AgentPort>,
    sim: Res<Sim>,
    referee: Res<Referee>,
    clock: Res<SimClock>,
    session: Res<Session>,
) {
    let port = &mut *port;
    port.tick.advance();
    let Some(conn) = port.active else {
        return;
    };
    let cycle = port.cycle_steps;
    let Some(agent) = port.conns.get_mut(&conn) else {
        return;
    };
    agent.steps_in_cycle += 1;
    if agent.steps_in_cycle >= cycle {
        send_perception(agent, &sim, &referee, &clock, session.state());
    }
}
