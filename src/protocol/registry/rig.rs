//! Test fixture for the protocols' connection state machines (the agents' and the teleop
//! sessions'): the machine, the registry it claims the arm in, a hand-driven clock and the
//! session state, and the [`Ctx`] that each call into the machine gets over them. It is shared so
//! that both machines' unit tests drive their machine the same way, as the ECS bridges do.

use std::time::Instant;

use super::{ArmOf, Connections, Ctx, Protocol};
use crate::session::SessionState;

/// A machine `m` with everything its calls need, held by the test.
pub struct Rig<M> {
    pub m: M,
    pub conns: Connections,
    pub now: Instant,
    pub state: SessionState,
    /// Whose arm claims the machine's calls make.
    protocol: Protocol,
}

impl<M> Rig<M> {
    /// `m` with an empty registry, the clock at now and the session idle.
    pub fn of(m: M, protocol: Protocol) -> Self {
        Self {
            m,
            conns: Connections::default(),
            now: Instant::now(),
            state: SessionState::Idle,
            protocol,
        }
    }

    /// Calls into the machine with a context over the rig (its clock, its session state, the
    /// arm as the rig's protocol sees it) and keeps the session state the call leaves, as one
    /// batch of a bridge does.
    pub fn call<R>(&mut self, f: impl FnOnce(&mut M, &mut Ctx<'_>) -> R) -> R {
        let mut arm = ArmOf {
            conns: &mut self.conns,
            protocol: self.protocol,
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
}
