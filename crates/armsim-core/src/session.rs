//! The control authority: the one session every client shares (IDLE | RUNNING | PAUSED | ERROR)
//! and who controls the arm. It holds the session's one transition function ([`transition`]),
//! the arm's ownership ([`ArmOwner`]: claim, release, revoke, kick) and what follows each: a
//! claim starts an IDLE session ([`ArmOwner::claim`] answers with the command to send), and an
//! owner that is lost leaves the arm holding its posture ([`Released`]).
//!
//! Plain data and functions, no I/O and no clock: the simulation applies a [`Transition`] to the
//! world and the clock, every protocol's connection machine predicts the session with the same
//! function, and the app's connection registry keeps one [`ArmOwner`]. The panel, the keys and
//! every protocol therefore follow the same rules:
//!
//! - START runs the session from IDLE or PAUSED; nothing but RESET leaves ERROR.
//! - PAUSE (or a STEP, which pauses first) freezes a RUNNING session and latches the posture the
//!   arm holds; single steps run only while PAUSED.
//! - RESET restores the scene (the next episode) and leaves the session IDLE for everyone. The
//!   owner keeps the arm; the session runs again when someone starts it.
//! - The client that claims the arm starts an IDLE session (START on claim). A pause or an error
//!   stays as it is: the panel's decision wins over a client's arrival.

/// The global session state shared by the panel, the keyboard and every protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SessionState {
    /// The world steps, the arm holds, no external control is applied.
    #[default]
    Idle,
    /// The world steps and the controller's targets are applied.
    Running,
    /// Simulation time is frozen for everyone; single steps still run.
    Paused,
    /// Something went wrong (e.g. the physics produced non-finite state); reset to recover.
    Error,
}

impl SessionState {
    /// The spelling used on every wire (revA `sim_state`, monitor streams, the panel).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Idle => "IDLE",
            SessionState::Running => "RUNNING",
            SessionState::Paused => "PAUSED",
            SessionState::Error => "ERROR",
        }
    }
}

/// A request to change the session, from any source (panel, keys, protocols).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionCommand {
    Start,
    /// A client has just claimed the arm: start from IDLE, so the client that takes the arm is
    /// the one that starts it. A pause (the panel's decision) and an error stay as they are.
    StartOnClaim,
    Pause,
    /// Pause (if running) and run exactly `n` steps.
    Step(u32),
    /// Start if paused or idle, pause if running (the Space key).
    TogglePause,
    Reset,
}

/// Announced after the session changed, so every protocol can tell its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    Started,
    Paused,
    ResetDone,
    Errored,
}

/// What one command does to the session, for the simulation to carry out (or a protocol to
/// predict).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: SessionState,
    pub to: SessionState,
    /// Control stops while the arm moves (RUNNING → PAUSED): latch the posture it holds from
    /// where it is now.
    pub latch_hold: bool,
    /// Single steps to queue (a STEP that leaves the session PAUSED).
    pub steps: u32,
    /// Restore the scene: the next episode starts, the clock and the step count go back to 0,
    /// the controller's targets go home and the error (if any) is cleared.
    pub reset: bool,
}

impl Transition {
    /// The state changed. A reset from IDLE does not change it; see `reset` for what a reset
    /// does besides.
    pub fn changed(&self) -> bool {
        self.from != self.to
    }
}

/// The session's one transition function: what `command` does in `state`.
pub fn transition(state: SessionState, command: SessionCommand) -> Transition {
    use SessionState::*;
    let mut t = Transition {
        from: state,
        to: state,
        latch_hold: false,
        steps: 0,
        reset: false,
    };
    let start = |t: &mut Transition| {
        if t.to != Error {
            t.to = Running;
        }
    };
    let pause = |t: &mut Transition| match t.to {
        Running => {
            t.latch_hold = true;
            t.to = Paused;
        }
        Idle => t.to = Paused,
        Paused | Error => {}
    };
    match command {
        SessionCommand::Start => start(&mut t),
        SessionCommand::StartOnClaim => {
            if state == Idle {
                t.to = Running;
            }
        }
        SessionCommand::Pause => pause(&mut t),
        SessionCommand::TogglePause => match state {
            Running => pause(&mut t),
            _ => start(&mut t),
        },
        SessionCommand::Step(n) => {
            pause(&mut t);
            if t.to == Paused {
                t.steps = n;
            }
        }
        SessionCommand::Reset => {
            t.to = Idle;
            t.reset = true;
        }
    }
    t
}

/// The one client that controls the arm, first come, and the panel's requests about clients:
/// revoke (take the arm away) and kick (disconnect). `K` names a connection (the app's registry
/// uses protocol and connection number); `label` names the client in logs and to other clients.
#[derive(Clone, Debug)]
pub struct ArmOwner<K> {
    owner: Option<(K, String)>,
    /// Control taken away by the panel, not yet noticed by the owner's protocol.
    revoked: Option<K>,
    /// Disconnects the panel asked for, not yet carried out by their protocol.
    kicks: Vec<K>,
}

impl<K> Default for ArmOwner<K> {
    fn default() -> Self {
        Self {
            owner: None,
            revoked: None,
            kicks: Vec::new(),
        }
    }
}

/// A claim the authority granted: the client controls the arm, and `then` is the command the
/// claim sends to the session (START on claim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claimed {
    pub then: SessionCommand,
}

/// An owner that gave the arm back, or was lost (it closed, timed out, was kicked): nobody
/// controls the arm, which holds its posture (`pause_behavior`) until the next claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released;

impl<K: Copy + PartialEq> ArmOwner<K> {
    /// Takes the arm for `key`; None if anyone (`key` included) has it.
    pub fn claim(&mut self, key: K, label: &str) -> Option<Claimed> {
        if self.owner.is_some() {
            return None;
        }
        self.owner = Some((key, label.to_string()));
        Some(Claimed {
            then: SessionCommand::StartOnClaim,
        })
    }

    /// Gives the arm back if `key` has it.
    pub fn release(&mut self, key: K) -> Option<Released> {
        match &self.owner {
            Some((k, _)) if *k == key => {
                self.owner = None;
                Some(Released)
            }
            _ => None,
        }
    }

    /// The connection in control and its label.
    pub fn owner(&self) -> Option<(K, &str)> {
        self.owner.as_ref().map(|(k, l)| (*k, l.as_str()))
    }

    /// Nobody controls the arm.
    pub fn is_free(&self) -> bool {
        self.owner.is_none()
    }

    /// Takes the arm away from whoever has it (the panel's Revoke): the owner and its label,
    /// if anyone had it. Its protocol notices once, through [`ArmOwner::take_revoked`].
    pub fn revoke(&mut self) -> Option<(K, String)> {
        let (key, label) = self.owner.take()?;
        self.revoked = Some(key);
        Some((key, label))
    }

    /// The revoked connection, once, if `mine` says it is the caller's.
    pub fn take_revoked(&mut self, mine: impl Fn(&K) -> bool) -> Option<K> {
        let key = self.revoked.filter(|k| mine(k))?;
        self.revoked = None;
        Some(key)
    }

    /// Asks the connection's protocol to close it (at most once until it is carried out).
    pub fn kick(&mut self, key: K) {
        if !self.kicks.contains(&key) {
            self.kicks.push(key);
        }
    }

    /// The kicks `mine` says are the caller's, asked since the last call, oldest first.
    pub fn take_kicks(&mut self, mine: impl Fn(&K) -> bool) -> Vec<K> {
        let mut out = Vec::new();
        self.kicks.retain(|k| {
            if mine(k) {
                out.push(*k);
                false
            } else {
                true
            }
        });
        out
    }

    /// A connection closed: it gives the arm back if it had it, and requests about it lapse.
    pub fn forget(&mut self, key: K) -> Option<Released> {
        self.kicks.retain(|k| *k != key);
        if self.revoked == Some(key) {
            self.revoked = None;
        }
        self.release(key)
    }
}

/// The arm as one protocol's connection state machine sees it: a claim is answered at once
/// (the answer decides the client's role), so machines take it as a call, not an action. The
/// app's registry is one (`ArmOf`, over every protocol's connections); the machines' unit tests
/// use one over a plain [`ArmOwner`] (`rig`).
pub trait Arm {
    /// Takes the arm for connection `id`; None if anyone has it.
    fn claim(&mut self, id: u64, label: &str) -> Option<Claimed>;
    /// Gives the arm back if connection `id` has it.
    fn release(&mut self, id: u64) -> Option<Released>;
    /// Nobody has the arm.
    fn is_free(&self) -> bool;
    /// Who has it, for messages ("agent 127.0.0.1:5 (teamA 1)", "nobody").
    fn describe(&self) -> String;
}

/// What one call into a protocol's connection state machine needs from outside: the time, the
/// global session state as this batch's messages meet it (the machine updates it as it asks for
/// session commands, through [`transition`], so one connection's messages act in the order
/// sent), and the arm.
pub struct Ctx<'a> {
    pub now: std::time::Instant,
    pub state: SessionState,
    pub arm: &'a mut dyn Arm,
}

#[cfg(test)]
pub(crate) mod rig;
#[cfg(test)]
mod tests;
