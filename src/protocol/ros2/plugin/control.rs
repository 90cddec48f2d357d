//! The ROS 2 bridge's control rules without Bevy or DDS: which remote participants are in the
//! registry, which one holds the arm, and what it last asked the arm to do. The bridge's systems
//! feed it what the DDS thread reports and apply what it returns, so the arm-ownership rules
//! (one controller, first come; the others watch; the panel's revoke and disconnect) are
//! unit-tested here on a plain `Connections`.
//!
//! DDS has no connections: a peer is a remote participant (its GUID prefix), in the registry
//! from its discovery to its loss. The first valid command of a peer claims the arm; the arm is
//! freed when that participant is lost or its last command writer goes away (a `ros2 topic pub`
//! that exits), so the next node can take it without waiting for a lease to run out.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use armsim_core::protocol::ros2::command::JointGoal;
use armsim_core::protocol::ros2::trajectory::Trajectory;
use bevy::log::{info, warn};

use super::super::link::PeerPrefix;
use crate::protocol::net::{RateLimited, suppressed_note};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::session::AlertLog;
use crate::sim::JointCommand;
use armsim_core::session::Claimed;

/// One refusal line per peer per this long: a node streaming commands at 100 Hz while another
/// client holds the arm would otherwise flood the log.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(5);

/// The registry key of the bridge's connection `id`.
pub fn key(id: u64) -> ConnKey {
    ConnKey::new(Protocol::Ros2, id)
}

/// How a peer is named in logs and on the panel: its vendor and the part of its GUID prefix
/// that tells participants apart (Fast DDS and Cyclone DDS put host and vendor bits first, then
/// the process and participant).
pub fn label(vendor: &str, prefix: &PeerPrefix) -> String {
    let short: String = prefix[4..].iter().map(|b| format!("{b:02x}")).collect();
    format!("{vendor} {short}")
}

/// What a command of the arm's owner asks for, until another replaces it.
#[derive(Clone, Debug, PartialEq)]
pub enum Goal {
    /// `/joint_command` or `/forward_position_controller/commands`: these joints' targets, set
    /// once; the other joints keep theirs.
    Joints(Vec<(usize, JointGoal)>),
    /// `/joint_trajectory`: sampled at every step's sim time until its last point.
    Trajectory(Trajectory),
}

/// The owner's latest goal and the episode it was given in: a reset (anyone's) ends it, since
/// the session has just put the arm's targets back to home.
#[derive(Clone, Debug, PartialEq)]
struct Order {
    goal: Goal,
    episode: u64,
    applied: bool,
}

/// One joint's target for this step, before joint limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    Position { position: f64, velocity: f64 },
    Velocity(f64),
    Effort(f64),
}

impl From<JointGoal> for Target {
    fn from(goal: JointGoal) -> Self {
        match goal {
            JointGoal::Position(position) => Target::Position {
                position,
                velocity: 0.0,
            },
            JointGoal::Velocity(v) => Target::Velocity(v),
            JointGoal::Effort(e) => Target::Effort(e),
        }
    }
}

/// The joint command for `target`, a position clamped to the joint's `limits` (a target past a
/// limit would only press the joint against its stop).
pub fn joint_command(target: Target, limits: Option<(f32, f32)>) -> JointCommand {
    match target {
        Target::Position { position, velocity } => {
            let mut position = position as f32;
            if let Some((lo, hi)) = limits {
                position = position.max(lo).min(hi);
            }
            JointCommand::Position {
                target: position,
                velocity: velocity as f32,
            }
        }
        Target::Velocity(v) => JointCommand::Velocity { target: v as f32 },
        Target::Effort(e) => JointCommand::Effort { torque: e as f32 },
    }
}

/// A remote participant in the registry.
#[derive(Debug)]
struct Peer {
    id: u64,
    label: String,
    counters: Arc<Counters>,
    refusals: RateLimited,
}

/// What became of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It is the arm's goal now; `claimed`: this command took the arm, and what the claim
    /// sends to the session (START on claim).
    Accepted { claimed: Option<Claimed> },
    /// Another client holds the arm (logged, at most once per peer per 5 s).
    Refused,
    /// The peer was disconnected from the panel and is ignored until it is rediscovered.
    Ignored,
}

/// The peers, the owner and its goal.
#[derive(Debug, Default)]
pub struct Control {
    peers: HashMap<PeerPrefix, Peer>,
    /// Disconnected from the panel: DDS cannot close a participant, so its commands and state
    /// changes are ignored until it is lost and found again.
    kicked: HashSet<PeerPrefix>,
    next_id: u64,
    owner: Option<PeerPrefix>,
    order: Option<Order>,
}

impl Control {
    /// A participant was discovered (again, after a loss): it joins the registry as an
    /// observer, and a disconnect from the panel is forgotten.
    pub fn peer_up(
        &mut self,
        prefix: PeerPrefix,
        vendor: &str,
        addr: SocketAddr,
        conns: &mut Connections,
        log: &mut AlertLog,
        t: f64,
    ) {
        self.kicked.remove(&prefix);
        let label = label(vendor, &prefix);
        if let Some(peer) = self.peers.get_mut(&prefix) {
            // Its data came before its discovery: now its address and vendor are known.
            peer.label.clone_from(&label);
            conns.set_peer(key(peer.id), addr, Some(label));
            return;
        }
        let id = self.open(prefix, addr, label.clone(), conns);
        conns.announce(key(id), t, log, &format!("{label} at {addr}"));
    }

    /// The participant was lost (lease ran out, or it said goodbye). True if it held the arm:
    /// the arm is free, and holds its posture.
    pub fn peer_down(
        &mut self,
        prefix: PeerPrefix,
        conns: &mut Connections,
        log: &mut AlertLog,
        t: f64,
    ) -> bool {
        self.kicked.remove(&prefix);
        let Some(peer) = self.peers.remove(&prefix) else {
            return false;
        };
        let closed = conns.close(key(peer.id), "participant lost", t, log);
        self.lose_owner(prefix) | closed.is_some_and(|c| c.was_owner)
    }

    /// A peer's writer on a command topic went away. True if that was the owner's last: the
    /// arm is free, and holds its posture.
    pub fn writer_lost(
        &mut self,
        prefix: PeerPrefix,
        writers_left: usize,
        conns: &mut Connections,
    ) -> bool {
        if writers_left > 0 || self.owner != Some(prefix) {
            return false;
        }
        let Some(peer) = self.peers.get(&prefix) else {
            return self.lose_owner(prefix);
        };
        conns.release(key(peer.id));
        conns.set_role(key(peer.id), Role::Observer, None);
        info!(
            "ros2: {} has no command publisher left; the arm is free",
            peer.label
        );
        self.lose_owner(prefix)
    }

    /// The panel took the arm away. True if a ROS peer had it: it watches now, and the arm
    /// holds its posture. Its later commands may claim the arm again.
    pub fn revoked(&mut self, conns: &mut Connections) -> bool {
        let Some(prefix) = self.owner else {
            return false;
        };
        if let Some(peer) = self.peers.get(&prefix) {
            conns.set_role(key(peer.id), Role::Observer, None);
            warn!(
                "ros2: control revoked from {} from the panel; the arm follows pause_behavior",
                peer.label
            );
        }
        self.lose_owner(prefix)
    }

    /// The panel's disconnects. True if the owner was among them: the arm holds its posture.
    pub fn kick(
        &mut self,
        ids: &[u64],
        conns: &mut Connections,
        log: &mut AlertLog,
        t: f64,
    ) -> bool {
        let mut hold = false;
        for &id in ids {
            let Some(prefix) = self.prefix_of(id) else {
                continue;
            };
            let peer = self.peers.remove(&prefix).expect("found above");
            warn!(
                "ros2: ignoring {} until it is rediscovered (disconnected from the panel; DDS \
                 cannot close a participant)",
                peer.label
            );
            let closed = conns.close(key(id), "disconnected from the panel", t, log);
            hold |= self.lose_owner(prefix) | closed.is_some_and(|c| c.was_owner);
            self.kicked.insert(prefix);
        }
        hold
    }

    /// The peer was disconnected from the panel and not yet rediscovered.
    pub fn is_kicked(&self, prefix: &PeerPrefix) -> bool {
        self.kicked.contains(prefix)
    }

    /// A valid command of `prefix`'s on `topic`, made in `episode`: it claims the arm if the
    /// arm is free, replaces the goal if the peer holds it, and is refused otherwise.
    pub fn command(
        &mut self,
        prefix: PeerPrefix,
        topic: &str,
        goal: Goal,
        episode: u64,
        conns: &mut Connections,
    ) -> Verdict {
        if self.kicked.contains(&prefix) {
            return Verdict::Ignored;
        }
        let peer_id = self.ensure(prefix, conns);
        let peer = &self.peers[&prefix];
        peer.counters.count_in();
        let mut claimed = None;
        if self.owner != Some(prefix) || conns.owner_key() != Some(key(peer_id)) {
            let label = peer.label.clone();
            let Some(claim) = conns.claim(key(peer_id), &label) else {
                let owner = conns.describe();
                let peer = self.peers.get_mut(&prefix).expect("ensured");
                if let Some(suppressed) = peer.refusals.allow() {
                    warn!(
                        "ros2: refusing {}'s {topic}: the arm is controlled by {owner}{}",
                        peer.label,
                        suppressed_note(suppressed)
                    );
                }
                return Verdict::Refused;
            };
            // A claim after a revoke or a writer loss: whatever the old owner asked is void.
            self.order = None;
            self.owner = Some(prefix);
            claimed = Some(claim);
        }
        self.order = Some(Order {
            goal,
            episode,
            applied: false,
        });
        Verdict::Accepted { claimed }
    }

    /// Counts a message from `prefix` (a request, a bad command), entering it in the registry
    /// if its data came before its discovery; a kicked peer stays out.
    pub fn count_in(&mut self, prefix: PeerPrefix, conns: &mut Connections) {
        if !self.kicked.contains(&prefix) {
            self.ensure(prefix, conns);
            self.peers[&prefix].counters.count_in();
        }
    }

    /// Counts a reply to `prefix`, if it is still there.
    pub fn count_out(&self, prefix: &PeerPrefix) {
        if let Some(peer) = self.peers.get(prefix) {
            peer.counters.count_out();
        }
    }

    /// Forgets the owner's goal (a reset of ours: the session puts the targets back to home).
    pub fn forget_goal(&mut self) {
        self.order = None;
    }

    /// The owner's goal, if any.
    #[cfg(test)]
    pub fn goal(&self) -> Option<&Goal> {
        self.order.as_ref().map(|o| &o.goal)
    }

    /// The owner, if a ROS peer holds the arm.
    #[cfg(test)]
    pub fn owner(&self) -> Option<PeerPrefix> {
        self.owner
    }

    /// What the owner's goal sets in the step that ends at sim time `t` of `episode`: a joint
    /// command once, a trajectory's sample every step (and it ends after its last point).
    /// Nothing if no ROS peer holds the arm in the registry (revoked, lost) or the goal was
    /// given before a reset.
    pub fn targets(&mut self, conns: &Connections, episode: u64, t: f64) -> Vec<(usize, Target)> {
        let owns = self
            .owner
            .and_then(|p| self.peers.get(&p))
            .is_some_and(|peer| conns.owner_key() == Some(key(peer.id)));
        if !owns {
            return Vec::new();
        }
        let Some(order) = self.order.as_mut() else {
            return Vec::new();
        };
        if order.episode != episode {
            self.order = None;
            return Vec::new();
        }
        match &order.goal {
            Goal::Joints(goals) if !order.applied => {
                order.applied = true;
                goals.iter().map(|&(j, g)| (j, g.into())).collect()
            }
            Goal::Joints(_) => Vec::new(),
            Goal::Trajectory(trajectory) => {
                let targets = trajectory
                    .sample(t)
                    .into_iter()
                    .map(|(j, position, velocity)| (j, Target::Position { position, velocity }))
                    .collect();
                if t >= trajectory.end_time() {
                    // The last point is the target now and stays one: nothing left to sample.
                    self.order = None;
                }
                targets
            }
        }
    }

    fn prefix_of(&self, id: u64) -> Option<PeerPrefix> {
        self.peers
            .iter()
            .find(|(_, p)| p.id == id)
            .map(|(prefix, _)| *prefix)
    }

    /// Forgets `prefix` as the owner; true if it was.
    fn lose_owner(&mut self, prefix: PeerPrefix) -> bool {
        if self.owner != Some(prefix) {
            return false;
        }
        self.owner = None;
        self.order = None;
        true
    }

    /// The peer's registry id, opening an entry for a peer whose data came before its
    /// discovery (its address and vendor follow with the discovery).
    fn ensure(&mut self, prefix: PeerPrefix, conns: &mut Connections) -> u64 {
        if let Some(peer) = self.peers.get(&prefix) {
            return peer.id;
        }
        let addr = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
        self.open(prefix, addr, label("DDS participant", &prefix), conns)
    }

    fn open(
        &mut self,
        prefix: PeerPrefix,
        addr: SocketAddr,
        label: String,
        conns: &mut Connections,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let counters = Arc::new(Counters::default());
        conns.open(key(id), addr, Role::Observer, counters.clone(), true);
        conns.set_peer(key(id), addr, Some(label.clone()));
        self.peers.insert(
            prefix,
            Peer {
                id,
                label,
                counters,
                refusals: RateLimited::new(REFUSAL_LOG_INTERVAL),
            },
        );
        id
    }
}
