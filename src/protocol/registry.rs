//! One registry of every live connection, whatever its protocol: who is connected (peer, role,
//! since when, message rates, round trip), who controls the arm, and the panel's requests
//! (revoke, disconnect). The panel draws it without knowing any protocol; each protocol's ECS
//! bridge registers its listener and connections and drains the requests meant for it.
//!
//! It keeps the core's authority over the arm ([`ArmOwner`]) for every protocol: one client of
//! one protocol controls the arm at a time, first come; the panel's Revoke takes it away and the
//! owning protocol notices once ([`Connections::panel_requests`]); a connection that closes gives
//! the arm back ([`Connections::close`]), and its protocol makes the arm hold
//! ([`BridgeIo::hold_arm`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

pub use armsim_core::session::{Arm, Ctx};
use armsim_core::session::{ArmOwner, Claimed, Released};

use crate::session::{AlertLog, Session, SessionCommand, SessionRequest};
use crate::sim::{JointTargets, SimClock, SimRef};

/// The protocols a connection can speak, in the order the panel lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TeleSpace revA headset teleoperation over WebSocket (docs/protocols/teleop.md).
    Teleop,
    /// RCSSServerMJ agents (S-expressions over TCP, docs/protocols/rcss.md).
    Agent,
    /// RCSSServerMJ monitors.
    Monitor,
    /// The gripper project's lockstep clients (docs/protocols/lockstep.md).
    Lockstep,
    /// ROS 2 participants over DDS (one entry per remote participant).
    Ros2,
}

impl Protocol {
    /// The name in logs, the alert log, arm ownership and the panel.
    pub const fn as_str(self) -> &'static str {
        match self {
            Protocol::Teleop => "teleop",
            Protocol::Agent => "agent",
            Protocol::Monitor => "monitor",
            Protocol::Lockstep => "lockstep",
            Protocol::Ros2 => "ros2",
        }
    }
}

/// One connection: its protocol and the protocol's own connection number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnKey {
    pub protocol: Protocol,
    pub id: u64,
}

impl ConnKey {
    /// The key of `protocol`'s connection number `id`.
    pub fn new(protocol: Protocol, id: u64) -> Self {
        Self { protocol, id }
    }
}

/// What a connection is to the arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Controls the arm.
    Controller,
    /// Sees the simulation, cannot move the arm.
    Observer,
    /// Connected, not yet identified (an agent before its `(init …)`).
    Pending,
    /// Connected, no session open (a teleop socket between DISCONNECT and CONNECT).
    NoSession,
}

impl Role {
    /// The panel's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Controller => "controller",
            Role::Observer => "observer",
            Role::Pending => "pending",
            Role::NoSession => "no session",
        }
    }
}

/// Message counters of one connection. Shared (`Arc`) so a connection thread can count what it
/// reads and writes itself; the ECS counts through the same type where it sees the messages.
#[derive(Debug, Default)]
pub struct Counters {
    pub msgs_in: AtomicU64,
    pub msgs_out: AtomicU64,
    /// The last sequence number received (0: the protocol has none, or none yet).
    pub last_seq_in: AtomicU64,
    /// Round trip in microseconds (0: not measured).
    pub rtt_us: AtomicU64,
}

impl Counters {
    /// One message in.
    pub fn count_in(&self) {
        self.msgs_in.fetch_add(1, Ordering::Relaxed);
    }

    /// One message out.
    pub fn count_out(&self) {
        self.msgs_out.fetch_add(1, Ordering::Relaxed);
    }

    fn load(a: &AtomicU64) -> u64 {
        a.load(Ordering::Relaxed)
    }
}

/// One live connection as the registry shows it.
#[derive(Debug)]
pub struct Connection {
    pub peer: SocketAddr,
    /// What the peer calls itself, where its address alone does not say (a DDS participant:
    /// its vendor and GUID prefix). The panel shows it after the address.
    pub name: Option<String>,
    pub role: Role,
    /// A short qualifier of the role ("no START yet"), if any.
    pub detail: Option<&'static str>,
    pub since: Instant,
    pub counters: Arc<Counters>,
    /// Its close goes to the alert log (it was announced, or its protocol logs every close).
    logged: bool,
}

impl Connection {
    /// Messages received so far.
    pub fn msgs_in(&self) -> u64 {
        Counters::load(&self.counters.msgs_in)
    }

    /// Messages sent so far.
    pub fn msgs_out(&self) -> u64 {
        Counters::load(&self.counters.msgs_out)
    }

    /// Messages per second in and out, averaged since the connection opened (as of `now`).
    pub fn rates(&self, now: Instant) -> (f64, f64) {
        let secs = now
            .saturating_duration_since(self.since)
            .as_secs_f64()
            .max(1e-3);
        (self.msgs_in() as f64 / secs, self.msgs_out() as f64 / secs)
    }

    /// The measured round trip, if the protocol measures one.
    pub fn rtt(&self) -> Option<Duration> {
        match Counters::load(&self.counters.rtt_us) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// The last sequence number received, if the protocol numbers its messages.
    pub fn last_seq_in(&self) -> Option<u64> {
        match Counters::load(&self.counters.last_seq_in) {
            0 => None,
            seq => Some(seq),
        }
    }

    /// "controller", or "controller (no START yet)".
    pub fn role_text(&self) -> String {
        match self.detail {
            Some(d) => format!("{} ({d})", self.role.as_str()),
            None => self.role.as_str().to_string(),
        }
    }
}

/// Where a protocol listens, as the panel shows it, and a warning line under its connections.
#[derive(Clone, Debug)]
pub struct Listener {
    /// "teleop ws://127.0.0.1:9001/teleop", "agents 127.0.0.1:3100 (sync)".
    pub label: String,
    /// A condition the panel shows in red ("controller: NET_TIMEOUT").
    pub warning: Option<String>,
}

/// What [`Connections::close`] removed.
#[derive(Debug)]
pub struct Closed {
    pub peer: SocketAddr,
    /// The connection controlled the arm; the arm is free now.
    pub was_owner: bool,
}

/// The registry: listeners, live connections, the arm's owner and the panel's requests.
#[derive(Resource, Debug, Default)]
pub struct Connections {
    listeners: BTreeMap<Protocol, Listener>,
    entries: BTreeMap<ConnKey, Connection>,
    /// Who controls the arm, and the panel's revokes and kicks not yet carried out.
    arm: ArmOwner<ConnKey>,
}

/// The panel's requests for one protocol, drained at once: the arm was revoked from one of its
/// connections, and the connections it asked to close.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PanelRequests {
    pub revoked: Option<u64>,
    pub kicks: Vec<u64>,
}

impl Connections {
    /// Registers `protocol`'s listener line (replacing an earlier one).
    pub fn listen(&mut self, protocol: Protocol, label: impl Into<String>) {
        self.listeners.insert(
            protocol,
            Listener {
                label: label.into(),
                warning: None,
            },
        );
    }

    /// Sets or clears the warning line under `protocol`'s connections.
    pub fn set_warning(&mut self, protocol: Protocol, warning: Option<String>) {
        if let Some(l) = self.listeners.get_mut(&protocol) {
            l.warning = warning;
        }
    }

    /// Listeners, in protocol order.
    pub fn listeners(&self) -> impl Iterator<Item = (Protocol, &Listener)> {
        self.listeners.iter().map(|(p, l)| (*p, l))
    }

    /// Adds a live connection. `logged`: its close goes to the alert log even if it was never
    /// announced with [`Connections::announce`].
    pub fn open(
        &mut self,
        key: ConnKey,
        peer: SocketAddr,
        role: Role,
        counters: Arc<Counters>,
        logged: bool,
    ) {
        self.entries.insert(
            key,
            Connection {
                peer,
                name: None,
                role,
                detail: None,
                since: Instant::now(),
                counters,
                logged,
            },
        );
    }

    /// The connection's entry.
    pub fn get(&self, key: ConnKey) -> Option<&Connection> {
        self.entries.get(&key)
    }

    /// Sets the connection's role and its qualifier.
    pub fn set_role(&mut self, key: ConnKey, role: Role, detail: Option<&'static str>) {
        if let Some(e) = self.entries.get_mut(&key) {
            e.role = role;
            e.detail = detail;
        }
    }

    /// Sets the connection's address and name, learnt after it opened (a DDS participant whose
    /// data arrived before its discovery).
    pub fn set_peer(&mut self, key: ConnKey, peer: SocketAddr, name: Option<String>) {
        if let Some(e) = self.entries.get_mut(&key) {
            e.peer = peer;
            e.name = name;
        }
    }

    /// Every live connection, by protocol then connection number.
    pub fn iter(&self) -> impl Iterator<Item = (ConnKey, &Connection)> {
        self.entries.iter().map(|(k, c)| (*k, c))
    }

    /// `protocol`'s live connections.
    pub fn of(&self, protocol: Protocol) -> impl Iterator<Item = (u64, &Connection)> {
        self.iter()
            .filter(move |(k, _)| k.protocol == protocol)
            .map(|(k, c)| (k.id, c))
    }

    /// Live connections, all protocols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No live connection.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Logs the connection as CONNECTED (tracing and the alert log, `text` after the code) and
    /// marks it so its close is logged too.
    pub fn announce(&mut self, key: ConnKey, t: f64, log: &mut AlertLog, text: &str) {
        if let Some(e) = self.entries.get_mut(&key) {
            e.logged = true;
        }
        info!("{}: connected: {text}", key.protocol.as_str());
        log.push(t, key.protocol.as_str(), "CONNECTED", text);
    }

    /// Removes a connection: it gives the arm back if it had it, and its close is logged
    /// (DISCONNECTED, "peer (reason)") if it was announced. None if it was not registered.
    pub fn close(
        &mut self,
        key: ConnKey,
        reason: &str,
        t: f64,
        log: &mut AlertLog,
    ) -> Option<Closed> {
        let entry = self.entries.remove(&key)?;
        let was_owner = self.arm.forget(key).is_some();
        if entry.logged {
            let who = match &entry.name {
                Some(name) => format!("{} {name}", entry.peer),
                None => entry.peer.to_string(),
            };
            info!("{}: {who} gone ({reason})", key.protocol.as_str());
            log.push(
                t,
                key.protocol.as_str(),
                "DISCONNECTED",
                format!("{who} ({reason})"),
            );
        }
        Some(Closed {
            peer: entry.peer,
            was_owner,
        })
    }

    /// Takes the arm for `key` (`label` names the client in the logs and to other clients);
    /// None if anyone has it. The connection's role becomes controller. What the claim does to
    /// the session is in the answer (START on claim).
    pub fn claim(&mut self, key: ConnKey, label: &str) -> Option<Claimed> {
        let claimed = self.arm.claim(key, label)?;
        info!("{} client {label} controls the arm", key.protocol.as_str());
        if let Some(e) = self.entries.get_mut(&key) {
            e.role = Role::Controller;
        }
        Some(claimed)
    }

    /// Gives the arm back if `key` has it; the arm then holds ([`BridgeIo::hold_arm`]).
    pub fn release(&mut self, key: ConnKey) -> Option<Released> {
        self.arm.release(key)
    }

    /// The protocol and client in control.
    pub fn owner(&self) -> Option<(Protocol, &str)> {
        self.arm.owner().map(|(k, c)| (k.protocol, c))
    }

    /// The connection in control.
    pub fn owner_key(&self) -> Option<ConnKey> {
        self.arm.owner().map(|(k, _)| k)
    }

    /// Takes the arm away from whoever has it (the panel's Revoke). Their protocol notices once
    /// through [`Connections::panel_requests`] and demotes or drops the client.
    pub fn revoke(&mut self) {
        if let Some((key, client)) = self.arm.revoke() {
            warn!(
                "control of the arm revoked from {} client {client}",
                key.protocol.as_str()
            );
        }
    }

    /// "teleop 127.0.0.1:50000 (session …)", or "nobody".
    pub fn describe(&self) -> String {
        match self.arm.owner() {
            Some((k, c)) => format!("{} {c}", k.protocol.as_str()),
            None => "nobody".into(),
        }
    }

    /// Asks the connection's protocol to close it (the panel's disconnect button).
    pub fn kick(&mut self, key: ConnKey) {
        if self.entries.contains_key(&key) {
            self.arm.kick(key);
        }
    }

    /// The panel's revoke and kicks meant for `protocol` since the last call, once.
    pub fn panel_requests(&mut self, protocol: Protocol) -> PanelRequests {
        let mine = |k: &ConnKey| k.protocol == protocol;
        PanelRequests {
            revoked: self.arm.take_revoked(mine).map(|k| k.id),
            kicks: self
                .arm
                .take_kicks(mine)
                .into_iter()
                .map(|k| k.id)
                .collect(),
        }
    }
}

/// The registry's arm, seen by one protocol.
pub struct ArmOf<'a> {
    pub conns: &'a mut Connections,
    pub protocol: Protocol,
}

impl Arm for ArmOf<'_> {
    fn claim(&mut self, id: u64, label: &str) -> Option<Claimed> {
        self.conns.claim(ConnKey::new(self.protocol, id), label)
    }

    fn release(&mut self, id: u64) -> Option<Released> {
        self.conns.release(ConnKey::new(self.protocol, id))
    }

    fn is_free(&self) -> bool {
        self.conns.arm.is_free()
    }

    fn describe(&self) -> String {
        self.conns.describe()
    }
}

/// What every protocol bridge's systems touch, whatever the protocol: the registry, the alert
/// log, session commands, the controller's joint targets, the session, the world and the clock.
/// A bridge adds what only it needs (the step gate, the referee) around it.
#[derive(SystemParam)]
pub struct BridgeIo<'w, 's> {
    pub conns: ResMut<'w, Connections>,
    pub log: ResMut<'w, AlertLog>,
    pub commands: MessageWriter<'w, SessionRequest>,
    pub targets: ResMut<'w, JointTargets>,
    pub session: Res<'w, Session>,
    pub sim: SimRef<'w, 's>,
    pub clock: Res<'w, SimClock>,
}

impl BridgeIo<'_, '_> {
    /// The owner was lost (it closed, timed out, was kicked or revoked): the arm follows
    /// `pause_behavior` from where it is, until the next claim.
    pub fn hold_arm(&mut self) {
        self.targets.commands = self.session.hold_posture(&self.sim.view());
    }

    /// Sends `command` to the session (it takes effect in `SessionSystems`).
    pub fn session_command(&mut self, command: SessionCommand) {
        self.commands.write(SessionRequest(command));
    }
}

/// Registers `protocol`'s listener line in the app's registry, creating the registry if this is
/// the first protocol added.
pub fn add_listener(app: &mut App, protocol: Protocol, label: String) {
    app.init_resource::<Connections>();
    app.world_mut()
        .resource_mut::<Connections>()
        .listen(protocol, label);
}

#[cfg(test)]
mod tests;
