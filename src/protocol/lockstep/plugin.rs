//! The ECS side of lockstep: connects the TCP threads to the one step path through the protocol
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

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use crossbeam_channel::Receiver;

use super::codec::{LockstepError, encode_state};
use super::server::{self, LockstepConfig, LockstepEvent};
use crate::protocol::registry::{BridgeIo, ConnKey, Counters, Protocol, Role};
use crate::protocol::tick::{
    ChannelTransport, Codec, CommandAdapter, ProtocolTick, ProtocolTime, SampleOutcome,
};
use crate::session::{Session, SessionState, SessionSystems};
use crate::sim::{
    GatePoll, JointCommand, JointTargets, SIM_DT, Sim, SimRef, SimStep, SimSystems, SimWaker,
    StepGate,
};

/// Lockstep frames ↔ joint velocity commands. State is the joint angles in robot joint order.
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
    /// The client's velocities integrated into positions since the session last ran (anchored
    /// at the measured angles): what recordings take as its action.
    integrated: Option<Vec<f32>>,
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

    /// The step counter the next frame carries: steps since the start (not reset by a scene
    /// reset or a reconnect).
    pub fn steps(&self) -> u64 {
        self.tick.time().ticks
    }
}

/// Joints of the gripper project's robot (gripper4), the one lockstep clients are written for.
const SPEC_003_JOINTS: usize = 10;

/// Starts the server for the app's robot and wires it into the step path. Returns the bound
/// address (a port of 0 is resolved), or the bind error (e.g. port in use).
pub fn add(
    app: &mut App,
    addr: SocketAddr,
    answer_timeout: std::time::Duration,
) -> io::Result<SocketAddr> {
    let joints = app.world().resource::<Sim>().0.joint_count();
    // Lockstep is the gripper project's protocol, for its 10-joint robot (gripper4); any other
    // robot is served with its own joint count, which an unmodified client cannot talk to.
    if joints != SPEC_003_JOINTS {
        let robot = app.world().resource::<Sim>().0.robot.name.clone();
        warn!(
            "lockstep: the gripper project's clients drive its {SPEC_003_JOINTS}-joint robot \
             (--scene gripper4); this scene's robot `{robot}` has {joints} joints, so each frame \
             carries {joints} angles and each answer must carry {joints} velocities: an unmodified \
             client will not work with it"
        );
    }
    let waker = app.world().resource::<SimWaker>().clone();
    let (addr, events) = server::start(LockstepConfig {
        addr,
        joints,
        answer_timeout,
        waker,
    })?;
    info!(
        "lockstep: listening on {addr} ({joints} joints per frame); the simulation waits for the first client"
    );
    let exposed = crate::protocol::net::warn_if_exposed("lockstep", addr, "drive the arm");
    crate::protocol::registry::add_listener(
        app,
        Protocol::Lockstep,
        format!("lockstep {addr}{}", exposed.unwrap_or_default()),
    );
    // The original "pauses until a client connects": steps wait, frames (and the window) go on.
    let hold = app
        .world_mut()
        .resource_mut::<StepGate>()
        .hold("lockstep (first client)");
    app.insert_resource(LockstepServer {
        addr,
        events,
        client: None,
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

/// What the bridge's event systems touch besides the server.
#[derive(SystemParam)]
struct LockstepFx<'w, 's> {
    io: BridgeIo<'w, 's>,
    gate: ResMut<'w, StepGate>,
}

/// The client's connection and the panel's requests: a client claims the arm on connect (or is
/// refused), and is dropped when it goes, or when the panel revokes or disconnects it.
fn handle_events(mut server: ResMut<LockstepServer>, mut fx: LockstepFx) {
    let server = &mut *server;
    let panel = fx.io.conns.panel_requests(Protocol::Lockstep);
    let (revoked, kicked) = (panel.revoked.is_some(), !panel.kicks.is_empty());
    if revoked || kicked {
        let why = if revoked {
            "control revoked"
        } else {
            "disconnected"
        };
        drop_client(server, &mut fx, &format!("{why} from the panel"));
    }
    // The wait is for the first client, whatever its protocol: once another client has taken
    // the arm (an agent, a teleop headset), no lockstep client can connect, so steps go on.
    if fx
        .io
        .conns
        .owner()
        .is_some_and(|(p, _)| p != Protocol::Lockstep)
        && let Some(hold) = server.first_client_hold.take()
    {
        fx.gate.unregister(hold);
        info!(
            "lockstep: {} took the arm first; the clock no longer waits for a lockstep client",
            fx.io.conns.describe()
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
                let Some(claimed) = fx.io.conns.claim(key(id), &peer.to_string()) else {
                    // Dropping the channels ends the client's thread, which closes the socket.
                    warn!(
                        "lockstep: refusing {peer}: the arm is controlled by {}",
                        fx.io.conns.describe()
                    );
                    continue;
                };
                server.next_id += 1;
                let counters = Arc::new(Counters::default());
                fx.io
                    .conns
                    .open(key(id), peer, Role::Controller, counters.clone(), true);
                let mut client = Client {
                    id,
                    peer,
                    transport: ChannelTransport::new(velocities, frames),
                    gate: fx.gate.register(format!("lockstep {peer}")),
                    counters,
                    integrated: None,
                };
                if let Some(hold) = server.first_client_hold.take() {
                    fx.gate.unregister(hold);
                }
                // A new transport's tokens start over; the counter does not.
                server.tick.reset_command();
                // The angles now, before the step this client pays for (counter 0 on the first
                // connection: the scene as loaded).
                server.tick.publish(
                    &mut client.transport,
                    &crate::state::joint_state(&fx.io.sim.view()).0,
                );
                client.counters.count_out();
                info!(
                    "lockstep: {peer} controls the arm from step {}; the clock now waits for its answers",
                    server.tick.time().ticks
                );
                server.client = Some(client);
                let t = fx.io.clock.sim_time;
                fx.io.conns.announce(
                    key(id),
                    t,
                    &mut fx.io.log,
                    &format!("{peer} controls the arm"),
                );
                fx.io.session_command(claimed.then);
            }
            LockstepEvent::Disconnected { peer, reason } => {
                if server.client.as_ref().is_some_and(|c| c.peer == peer) {
                    drop_client(server, &mut fx, &reason);
                }
            }
        }
    }
}

/// Drops the client, if any, for `reason`: it leaves the gate, the arm follows
/// `pause_behavior` and is free again, and its close is logged.
fn drop_client(server: &mut LockstepServer, fx: &mut LockstepFx, reason: &str) {
    let Some(client) = server.client.take() else {
        return;
    };
    fx.gate.unregister(client.gate);
    server.tick.forget_command();
    fx.io.hold_arm();
    warn!(
        "lockstep: dropping {} ({reason}); the arm follows pause_behavior",
        client.peer
    );
    let t = fx.io.clock.sim_time;
    fx.io.conns.close(key(client.id), reason, t, &mut fx.io.log);
}

/// Between steps: has the client answered? A decoded answer opens the gate for one step; one
/// that cannot be decoded drops the client.
fn poll_answer(mut server: ResMut<LockstepServer>, mut fx: LockstepFx) {
    let server = &mut *server;
    let Some(client) = server.client.as_mut() else {
        return;
    };
    match server.tick.sample(&mut client.transport) {
        SampleOutcome::Decoded { .. } => {
            client.counters.count_in();
            fx.gate.mark_ready(client.gate);
        }
        SampleOutcome::DecodeError { error, .. } => {
            drop_client(server, &mut fx, &error.to_string());
        }
        SampleOutcome::NoMessage | SampleOutcome::Unchanged => {}
    }
}

/// The client's velocities become the joints' commands, each aiming at the position the
/// velocities integrate to (within the joint's limits). The integral restarts from the
/// measured angles whenever the session is not RUNNING, since the arm then holds and a
/// velocity moves nothing.
fn adapt(
    mut server: ResMut<LockstepServer>,
    sim: SimRef,
    session: Res<Session>,
    mut targets: ResMut<JointTargets>,
) {
    let server = &mut *server;
    let Some(client) = server.client.as_mut() else {
        return;
    };
    let view = sim.view();
    let q = crate::state::joint_state(&view).0;
    let Some(velocities) = server.tick.adapt(&q) else {
        return;
    };
    if session.state() != SessionState::Running {
        client.integrated = None;
    }
    let integrated = client.integrated.get_or_insert_with(|| q.clone());
    for (j, v) in velocities.into_iter().enumerate() {
        let Some(at) = integrated.get_mut(j) else {
            break;
        };
        *at += v * SIM_DT as f32;
        if let Some((lo, hi)) = view.robot.joints[j].limits {
            *at = at.max(lo).min(hi);
        }
        // Decoded velocities are finite (the codec refuses others).
        let _ = targets.set_aiming(j, JointCommand::Velocity { target: v }, Some(*at));
    }
}

/// Every step counts, with a client or without one (between clients the clock runs freely).
fn publish(mut server: ResMut<LockstepServer>, sim: SimRef) {
    let server = &mut *server;
    server.tick.advance();
    let Some(client) = server.client.as_mut() else {
        return;
    };
    server.tick.publish(
        &mut client.transport,
        &crate::state::joint_state(&sim.view()).0,
    );
    client.counters.count_out();
}
