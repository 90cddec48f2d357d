//! The ECS side of spec 003: connects the TCP threads to the one step path through the protocol
//! core. A connected client registers with the `StepGate`, so each of its answers buys exactly
//! one step; its velocities become `JointTargets` in the Adapt phase and the next frame (step
//! counter + joint angles) is published after the physics step.
//!
//! As the original, the simulation waits for the first client (a held gate source), so frame 0
//! is the scene as loaded; the step counter is the protocol core's time, kept by the server
//! rather than per client, so it counts steps since the start across reconnects.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bevy::prelude::*;
use crossbeam_channel::Receiver;

use super::codec::{LockstepError, encode_state};
use super::server::{self, LockstepConfig, LockstepEvent};
use crate::protocol::core::{
    ChannelTransport, Codec, CommandAdapter, ProtocolTick, ProtocolTime, SampleOutcome,
};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::session::{AlertLog, Session, SessionCommand, SessionSystems};
use crate::sim::{
    GatePoll, JointCommand, JointTargets, SIM_DT, Sim, SimClock, SimStep, SimSystems, StepGate,
};

/// Spec 003 frames ↔ joint velocity commands. State is the joint angles in robot joint order.
pub struct LockstepCodec {
    joints: usize,
}

impl Codec for LockstepCodec {
    type Inbound = Vec<f32>;
    type Outbound = Vec<u8>;
    type Command = Vec<f32>;
    type State = Vec<f32>;
    type Error = LockstepError;

    fn decode(&mut self, wire: &Vec<f32>) -> Result<Vec<f32>, LockstepError> {
        if wire.len() != self.joints {
            return Err(LockstepError::FrameLength {
                expected: self.joints,
                got: wire.len(),
            });
        }
        if let Some((index, &value)) = wire.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(LockstepError::NonFinite { index, value });
        }
        Ok(wire.clone())
    }

    fn encode(&mut self, angles: &Vec<f32>, time: ProtocolTime, out: &mut Vec<Vec<u8>>) {
        let mut frame = Vec::new();
        encode_state(time.ticks, angles, &mut frame);
        out.push(frame);
    }
}

/// Every answer is a full set of target velocities.
pub struct VelocityAdapter;

impl CommandAdapter for VelocityAdapter {
    type Command = Vec<f32>;
    type State = Vec<f32>;
    type Action = Vec<f32>;

    fn adapt(&mut self, cmd: &Vec<f32>, _angles: &Vec<f32>) -> Option<Vec<f32>> {
        Some(cmd.clone())
    }
}

struct Client {
    /// The client's number in the registry.
    id: u64,
    peer: SocketAddr,
    transport: ChannelTransport<Vec<f32>, Vec<u8>>,
    gate: u64,
    counters: Arc<Counters>,
}

fn key(id: u64) -> ConnKey {
    ConnKey::new(Protocol::Lockstep, id)
}

/// The lockstep server as the ECS sees it: its address, the accept thread's events, and the
/// client in control, if any.
#[derive(Resource)]
pub struct LockstepServer {
    pub addr: SocketAddr,
    events: Receiver<LockstepEvent>,
    client: Option<Client>,
    drop_requested: bool,
    /// One tick for every client: its time is the frame counter, steps since the start.
    tick: ProtocolTick<LockstepCodec, VelocityAdapter>,
    /// The held gate source that keeps the clock still until the first client connects.
    first_client_hold: Option<u64>,
    /// The next client's number in the registry.
    next_id: u64,
}

impl LockstepServer {
    /// The connected client's address.
    pub fn client(&self) -> Option<SocketAddr> {
        self.client.as_ref().map(|c| c.peer)
    }

    /// Drops the client at the next frame (the panel's disconnect button).
    pub fn request_disconnect(&mut self) {
        self.drop_requested = true;
    }

    /// The step counter the next frame carries: steps since the start (not reset by a scene
    /// reset or a reconnect).
    pub fn steps(&self) -> u64 {
        self.tick.time().ticks
    }
}

/// Starts the server for the app's robot and wires it into the step path. Returns the bound
/// address (a port of 0 is resolved), or the bind error (e.g. port in use).
pub fn add(
    app: &mut App,
    addr: SocketAddr,
    answer_timeout: std::time::Duration,
) -> io::Result<SocketAddr> {
    let joints = app.world().resource::<Sim>().0.joint_count();
    let (addr, events) = server::start(LockstepConfig {
        addr,
        joints,
        answer_timeout,
    })?;
    info!(
        "lockstep: listening on {addr} ({joints} joints per frame); the simulation waits for the first client"
    );
    crate::protocol::registry::add_listener(app, Protocol::Lockstep, format!("lockstep {addr}"));
    // "Pause until a client connects" (spec 003): steps wait, frames (and the window) go on.
    let hold = app
        .world_mut()
        .resource_mut::<StepGate>()
        .hold("lockstep (first client)");
    app.insert_resource(LockstepServer {
        addr,
        events,
        client: None,
        drop_requested: false,
        tick: ProtocolTick::new(LockstepCodec { joints }, VelocityAdapter, SIM_DT),
        first_client_hold: Some(hold),
        next_id: 1,
    })
    // Before the session handles commands, so the Start sent on connect precedes every step the
    // client pays for (same inputs, same trajectory, however the answers are timed).
    .add_systems(First, handle_events.before(SessionSystems))
    .add_systems(GatePoll, poll_answer)
    .add_systems(SimStep, adapt.in_set(SimSystems::Adapt))
    .add_systems(SimStep, publish.in_set(SimSystems::Publish));
    Ok(addr)
}

/// The protocol name in logs and arm ownership.
pub const PROTOCOL: &str = Protocol::Lockstep.as_str();

#[allow(clippy::too_many_arguments)]
fn handle_events(
    mut server: ResMut<LockstepServer>,
    mut conns: ResMut<Connections>,
    mut gate: ResMut<StepGate>,
    sim: Res<Sim>,
    session: Res<Session>,
    mut targets: ResMut<JointTargets>,
    mut commands: MessageWriter<SessionCommand>,
    mut log: ResMut<AlertLog>,
    clock: Res<SimClock>,
) {
    let t = clock.sim_time;
    let revoked = conns.take_revoked(Protocol::Lockstep);
    let kicked = !conns.take_kicks(Protocol::Lockstep).is_empty();
    if (revoked || kicked || std::mem::take(&mut server.drop_requested))
        && let Some(client) = drop_client(&mut server, &mut gate, &session, &sim, &mut targets)
    {
        let why = if revoked {
            "control revoked"
        } else {
            "disconnected"
        };
        warn!("lockstep: dropping {}: {why} from the panel", client.peer);
        conns.close(
            key(client.id),
            &format!("{why} from the panel"),
            t,
            &mut log,
        );
    }
    // The wait is for the first client, whatever its protocol: once another client has taken
    // the arm (an agent, a teleop headset), no lockstep client can connect, so steps go on.
    if conns.owner().is_some_and(|(p, _)| p != Protocol::Lockstep)
        && let Some(hold) = server.first_client_hold.take()
    {
        gate.unregister(hold);
        info!(
            "lockstep: {} took the arm first; the clock no longer waits for a lockstep client",
            conns.describe()
        );
    }
    while let Ok(event) = server.events.try_recv() {
        match event {
            LockstepEvent::Connected {
                peer,
                frames,
                velocities,
            } => {
                let id = server.next_id;
                if !conns.claim(key(id), &peer.to_string()) {
                    // Dropping the channels ends the client's thread, which closes the socket.
                    warn!(
                        "lockstep: refusing {peer}: the arm is controlled by {}",
                        conns.describe()
                    );
                    continue;
                }
                let server = &mut *server;
                server.next_id += 1;
                let counters = Arc::new(Counters::default());
                conns.open(key(id), peer, Role::Controller, counters.clone(), true);
                let mut client = Client {
                    id,
                    peer,
                    transport: ChannelTransport::new(velocities, frames),
                    gate: gate.register(format!("lockstep {peer}")),
                    counters,
                };
                if let Some(hold) = server.first_client_hold.take() {
                    gate.unregister(hold);
                }
                // A new transport's tokens start over; the counter does not.
                server.tick.reset_command();
                // The angles now, before the step this client pays for (counter 0 on the first
                // connection: the scene as loaded).
                server
                    .tick
                    .publish(&mut client.transport, &crate::state::joint_state(&sim.0).0);
                client.counters.count_out();
                info!(
                    "lockstep: {peer} controls the arm from step {}; the clock now waits for its answers",
                    server.tick.time().ticks
                );
                server.client = Some(client);
                conns.announce(key(id), t, &mut log, &format!("{peer} controls the arm"));
                commands.write(SessionCommand::StartOnClaim);
            }
            LockstepEvent::Disconnected { peer, reason } => {
                if server.client.as_ref().is_some_and(|c| c.peer == peer)
                    && let Some(client) =
                        drop_client(&mut server, &mut gate, &session, &sim, &mut targets)
                {
                    warn!("lockstep: {peer} gone ({reason}); the arm follows pause_behavior");
                    conns.close(key(client.id), &reason, t, &mut log);
                }
            }
        }
    }
}

/// Drops the client (the arm follows `pause_behavior`) and returns it; its registry entry is
/// the caller's to close.
fn drop_client(
    server: &mut LockstepServer,
    gate: &mut StepGate,
    session: &Session,
    sim: &Sim,
    targets: &mut JointTargets,
) -> Option<Client> {
    let client = server.client.take()?;
    gate.unregister(client.gate);
    server.tick.forget_command();
    targets.commands = session.hold_posture(&sim.0);
    Some(client)
}

/// Between steps: has the client answered? A decoded answer opens the gate for one step.
#[allow(clippy::too_many_arguments)]
fn poll_answer(
    mut server: ResMut<LockstepServer>,
    mut conns: ResMut<Connections>,
    mut gate: ResMut<StepGate>,
    session: Res<Session>,
    sim: Res<Sim>,
    mut targets: ResMut<JointTargets>,
    mut log: ResMut<AlertLog>,
    clock: Res<SimClock>,
) {
    let server_ref = &mut *server;
    let Some(client) = server_ref.client.as_mut() else {
        return;
    };
    match server_ref.tick.sample(&mut client.transport) {
        SampleOutcome::Decoded { .. } => {
            client.counters.count_in();
            gate.mark_ready(client.gate);
        }
        SampleOutcome::DecodeError { error, .. } => {
            let peer = client.peer;
            let id = client.id;
            drop_client(&mut server, &mut gate, &session, &sim, &mut targets);
            warn!("lockstep: dropping {peer}: {error}");
            conns.close(key(id), &error.to_string(), clock.sim_time, &mut log);
        }
        SampleOutcome::NoMessage | SampleOutcome::Unchanged => {}
    }
}

fn adapt(mut server: ResMut<LockstepServer>, sim: Res<Sim>, mut targets: ResMut<JointTargets>) {
    if server.client.is_none() {
        return;
    }
    if let Some(velocities) = server.tick.adapt(&crate::state::joint_state(&sim.0).0) {
        for (slot, v) in targets.commands.iter_mut().zip(velocities) {
            *slot = JointCommand::Velocity { target: v };
        }
    }
}

/// Every step counts, with a client or without one (between clients the clock runs freely).
fn publish(mut server: ResMut<LockstepServer>, sim: Res<Sim>) {
    let server = &mut *server;
    server.tick.advance();
    let Some(client) = server.client.as_mut() else {
        return;
    };
    server
        .tick
        .publish(&mut client.transport, &crate::state::joint_state(&sim.0).0);
    client.counters.count_out();
}
