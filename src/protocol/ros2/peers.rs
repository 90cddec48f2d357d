//! Which remote DDS participants are there, as the DDS thread tells the bridge: a pure state
//! machine over rustdds's discovery events, so its rules are tested without sockets.
//!
//! - A participant is announced ([`Inbound::PeerUp`]) at its first endpoint, not at its SPDP
//!   announcement: `ParticipantDiscovered` carries no locators, and the endpoints (which SEDP
//!   brings just after) carry the participant's unicast locators, so waiting one discovery
//!   round trip gives the panel a real address. A command from a peer implies a matched writer,
//!   so its `PeerUp` always comes first.
//! - Our own participant is never a peer: rustdds lets its own looped-back SPDP in and reports
//!   our own endpoints too.
//! - Writers on the command topics are tracked per participant, so that a `ros2 topic pub` that
//!   exits releases the arm at once ([`Inbound::CommandWriterLost`]) instead of at the end of
//!   its participant's lease.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use super::link::{Inbound, PeerPrefix};

/// A DDS endpoint's GUID: its participant's 12-byte prefix, then its 4-byte entity id.
pub type EndpointGuid = [u8; 16];

/// The participant an endpoint belongs to.
pub fn prefix_of(guid: &EndpointGuid) -> PeerPrefix {
    let mut prefix = [0; 12];
    prefix.copy_from_slice(&guid[..12]);
    prefix
}

/// The remote participants and their command writers.
#[derive(Debug)]
pub struct Peers {
    own: PeerPrefix,
    /// Discovered, not yet announced: waiting for a first endpoint (and its address).
    pending: HashMap<PeerPrefix, String>,
    /// Announced with `PeerUp`.
    up: HashSet<PeerPrefix>,
    /// Remote writers on a command topic.
    command_writers: HashSet<EndpointGuid>,
}

impl Peers {
    pub fn new(own: PeerPrefix) -> Self {
        Self {
            own,
            pending: HashMap::new(),
            up: HashSet::new(),
            command_writers: HashSet::new(),
        }
    }

    /// SPDP found a participant (`vendor` is its RTPS vendor's name). Nothing is announced
    /// yet: see [`Peers::endpoint`].
    pub fn discovered(&mut self, prefix: PeerPrefix, vendor: String) {
        if prefix != self.own && !self.up.contains(&prefix) {
            self.pending.insert(prefix, vendor);
        }
    }

    /// Whether the next endpoint of `prefix` would announce it, so the caller looks up its
    /// address (a walk over rustdds's discovery tables) only then.
    pub fn wants_address(&self, prefix: &PeerPrefix) -> bool {
        self.pending.contains_key(prefix)
    }

    /// SEDP found an endpoint of `prefix`, reachable at `addr` (`0.0.0.0:0` if it advertises
    /// no unicast locator): the participant's `PeerUp`, the first time.
    pub fn endpoint(&mut self, prefix: PeerPrefix, addr: SocketAddr) -> Option<Inbound> {
        let vendor = self.pending.remove(&prefix)?;
        self.up.insert(prefix);
        Some(Inbound::PeerUp {
            prefix,
            vendor,
            addr,
        })
    }

    /// A remote writer on one of the command topics appeared (again: SEDP repeats itself).
    pub fn command_writer(&mut self, guid: EndpointGuid) {
        if prefix_of(&guid) != self.own {
            self.command_writers.insert(guid);
        }
    }

    /// A remote writer went away: `CommandWriterLost` if it was a command writer.
    pub fn writer_lost(&mut self, guid: EndpointGuid) -> Option<Inbound> {
        if !self.command_writers.remove(&guid) {
            return None;
        }
        let prefix = prefix_of(&guid);
        let writers_left = self
            .command_writers
            .iter()
            .filter(|g| prefix_of(g) == prefix)
            .count();
        Some(Inbound::CommandWriterLost {
            prefix,
            writers_left,
        })
    }

    /// A participant left or its lease ran out: `PeerDown` if it had been announced. Its
    /// command writers go with it, without a `CommandWriterLost` each (`PeerDown` says more).
    pub fn lost(&mut self, prefix: PeerPrefix) -> Option<Inbound> {
        self.pending.remove(&prefix);
        self.command_writers.retain(|g| prefix_of(g) != prefix);
        self.up
            .remove(&prefix)
            .then_some(Inbound::PeerDown { prefix })
    }

    /// How many peers are announced (for tests and the log).
    pub fn count(&self) -> usize {
        self.up.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: PeerPrefix = [1; 12];
    const A: PeerPrefix = [2; 12];
    const B: PeerPrefix = [3; 12];

    fn guid(prefix: PeerPrefix, entity: u8) -> EndpointGuid {
        let mut g = [0; 16];
        g[..12].copy_from_slice(&prefix);
        g[15] = entity;
        g
    }

    fn addr() -> SocketAddr {
        "127.0.0.1:7411".parse().unwrap()
    }

    #[test]
    fn a_peer_is_announced_once_at_its_first_endpoint_and_never_ourselves() {
        let mut p = Peers::new(OWN);
        p.discovered(OWN, "RustDDS".into());
        assert!(!p.wants_address(&OWN));
        assert!(
            p.endpoint(OWN, addr()).is_none(),
            "never our own participant"
        );

        p.discovered(A, "Eclipse Cyclone DDS".into());
        assert!(p.wants_address(&A));
        match p.endpoint(A, addr()) {
            Some(Inbound::PeerUp {
                prefix,
                vendor,
                addr: a,
            }) => {
                assert_eq!(prefix, A);
                assert_eq!(vendor, "Eclipse Cyclone DDS");
                assert_eq!(a, addr());
            }
            other => panic!("expected PeerUp, got {other:?}"),
        }
        assert!(!p.wants_address(&A));
        assert!(p.endpoint(A, addr()).is_none(), "announced once");
        p.discovered(A, "again".into());
        assert!(
            p.endpoint(A, addr()).is_none(),
            "a repeated SPDP is no news"
        );
        assert_eq!(p.count(), 1);
    }

    #[test]
    fn peer_down_only_for_announced_peers_and_rediscovery_announces_again() {
        let mut p = Peers::new(OWN);
        p.discovered(A, "x".into());
        assert!(p.lost(A).is_none(), "never announced, so no PeerDown");
        assert!(p.endpoint(A, addr()).is_none(), "forgotten when lost");

        p.discovered(A, "x".into());
        p.endpoint(A, addr()).unwrap();
        assert!(matches!(p.lost(A), Some(Inbound::PeerDown { prefix }) if prefix == A));
        assert!(p.lost(A).is_none());
        p.discovered(A, "x".into());
        assert!(p.endpoint(A, addr()).is_some(), "back after a restart");
    }

    #[test]
    fn losing_a_command_writer_counts_the_ones_its_participant_has_left() {
        let mut p = Peers::new(OWN);
        p.command_writer(guid(A, 1));
        p.command_writer(guid(A, 2));
        p.command_writer(guid(A, 2)); // SEDP repeats
        p.command_writer(guid(B, 1));
        p.command_writer(guid(OWN, 9));
        assert!(p.writer_lost(guid(A, 7)).is_none(), "not a command writer");
        assert!(
            p.writer_lost(guid(OWN, 9)).is_none(),
            "ours are not tracked"
        );
        assert!(matches!(
            p.writer_lost(guid(A, 1)),
            Some(Inbound::CommandWriterLost { prefix, writers_left: 1 }) if prefix == A
        ));
        assert!(matches!(
            p.writer_lost(guid(A, 2)),
            Some(Inbound::CommandWriterLost { prefix, writers_left: 0 }) if prefix == A
        ));
        assert!(p.writer_lost(guid(A, 2)).is_none(), "reported once");
        p.lost(B);
        assert!(
            p.writer_lost(guid(B, 1)).is_none(),
            "a lost participant's writers go with it"
        );
    }
}
