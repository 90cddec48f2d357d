//! Test fixture for the protocols' connection state machines (the agents' and the teleop
//! sessions'): the machine, the arm's owner it claims in, a hand-driven clock and the session
//! state, and the [`Ctx`] that each call into the machine gets over them. It is shared so that
//! both machines' unit tests drive their machine the same way, as the app's bridges do.

use std::fmt;
use std::time::Instant;

use super::{Arm, ArmOwner, Claimed, Ctx, Released, SessionState};

/// Which protocol's connection a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Teleop,
    Agent,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Teleop => "teleop",
            Side::Agent => "agent",
        })
    }
}

/// A connection: its protocol and number.
pub type Key = (Side, u64);

/// One side's view of the arm's owner, as the app's registry gives each protocol.
struct SideOf<'a> {
    owner: &'a mut ArmOwner<Key>,
    side: Side,
}

impl Arm for SideOf<'_> {
    fn claim(&mut self, id: u64, label: &str) -> Option<Claimed> {
        self.owner.claim((self.side, id), label)
    }

    fn release(&mut self, id: u64) -> Option<Released> {
        self.owner.release((self.side, id))
    }

    fn is_free(&self) -> bool {
        self.owner.is_free()
    }

    fn describe(&self) -> String {
        match self.owner.owner() {
            Some(((side, _), label)) => format!("{side} {label}"),
            None => "nobody".into(),
        }
    }
}

/// A machine `m` with everything its calls need, held by the test.
pub struct Rig<M> {
    pub m: M,
    pub arm: ArmOwner<Key>,
    pub now: Instant,
    pub state: SessionState,
    /// Whose arm claims the machine's calls make.
    side: Side,
}

impl<M> Rig<M> {
    /// `m` with a free arm, the clock at now and the session idle.
    pub fn of(m: M, side: Side) -> Self {
        Self {
            m,
            arm: ArmOwner::default(),
            now: Instant::now(),
            state: SessionState::Idle,
            side,
        }
    }

    /// Calls into the machine with a context over the rig (its clock, its session state, the
    /// arm as the rig's side sees it) and keeps the session state the call leaves, as one
    /// batch of a bridge does.
    pub fn call<R>(&mut self, f: impl FnOnce(&mut M, &mut Ctx<'_>) -> R) -> R {
        let mut arm = SideOf {
            owner: &mut self.arm,
            side: self.side,
        };
        let mut ctx = Ctx {
            now: self.now,
            state: self.state,
            arm: &mut arm,
        };
        let out = f(&mut self.m, &mut ctx);
        self.state = ctx.state;
        out
    }

    /// The connection that controls the arm.
    pub fn owner_key(&self) -> Option<Key> {
        self.arm.owner().map(|(k, _)| k)
    }

    /// The panel's Revoke, and whether this side notices it (once).
    pub fn revoke_noticed(&mut self) -> bool {
        self.arm.revoke();
        let side = self.side;
        self.arm.take_revoked(|k| k.0 == side).is_some()
    }
}
