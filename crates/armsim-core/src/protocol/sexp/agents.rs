//! The RCSSServerMJ agent connections as a pure state machine (quinn-proto style): the app's ECS
//! bridge (`protocol::sexp::agent`) feeds it what the connection threads report
//! ([`AgentInput`], through [`Agents::handle`]) and applies what it asks for ([`AgentAction`],
//! from [`Agents::poll`]).
//! It owns who is pending and who controls, the `(init …)` check and claim (with the
//! [`AgentsConfig::claim_grace`] wait for an owner whose close is still on its way), the init
//! timeout, each agent's queued messages and, in sync mode, how many answers the cycle is owed.
//! No sockets, no Bevy, no clock of its own: it is unit-tested on its own.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{ConnEvent, Sexp};
use crate::session::{SessionCommand, SessionState, transition};

/// Settings of the machine.
#[derive(Clone, Debug)]
pub struct AgentsConfig {
    /// The scene's robot: `(init <model> …)` must name it.
    pub robot: String,
    /// Sync mode: each cycle waits for exactly one message per perception sent.
    pub sync: bool,
    /// Sync mode: an agent silent this long while the cycle waits on it is dropped.
    pub sync_timeout: Duration,
    /// A connection must send `(init …)` within this time.
    pub init_timeout: Duration,
    /// How long an `(init …)` waits for the arm when its owner may be a client that has just
    /// gone (a client restarting in a loop reconnects before its old connection's close is seen).
    pub claim_grace: Duration,
    /// Messages queued before the oldest is dropped (real time) or the agent is (sync).
    pub max_inbox: usize,
}

/// An agent connection's role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentRole {
    /// Connected, `(init …)` not yet received (or not yet taken).
    Pending,
    /// Controls the arm, as player `number` of `team` (its `(init …)`).
    Controller { team: String, number: String },
}

/// One agent connection as the machine sees it.
#[derive(Clone, Debug)]
pub struct AgentState {
    pub peer: SocketAddr,
    pub role: AgentRole,
    pub opened: Instant,
    inbox: VecDeque<Vec<Sexp>>,
    /// Perceptions sent whose answers have not been consumed yet (sync mode: one message per
    /// perception; usually 0 or 1, 2 after a session change sent an extra perception).
    owed: usize,
    waiting_since: Instant,
    /// The session state effectors were last refused in, so the agent is told once per stretch.
    warned: Option<SessionState>,
    init_timed_out: bool,
    /// An `(init …)` waiting for the arm's current owner to leave, and since when.
    parked_init: Option<(Vec<Sexp>, Instant)>,
}

impl AgentState {
    /// Messages queued, not yet applied.
    pub fn queued(&self) -> usize {
        self.inbox.len()
    }

    /// Answers the cycle still waits for (sync mode).
    pub fn owed(&self) -> usize {
        self.owed
    }
}

/// What happened, for the machine.
#[derive(Clone, Debug)]
pub enum AgentInput {
    /// What a connection did, as its threads reported it (an opening brings only the peer).
    Conn(ConnEvent<()>),
    /// The panel revoked this protocol's control of the arm.
    Revoked,
    /// Between steps, sync mode: is the active agent's answer in, or has it been silent too
    /// long?
    GatePoll,
}

/// What the machine asks the bridge to do.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentAction {
    /// Send `(error <reason>)` and close the connection.
    Refuse { conn: u64, reason: String },
    /// Send `(warning <text>)`: effectors are not applied, and why.
    Warn { conn: u64, text: &'static str },
    /// `conn` took the arm (as `label`): register it with the gate in sync mode, send `then` to
    /// the session, give it a clean pipeline, announce it and send its first perception.
    Claimed {
        conn: u64,
        label: String,
        /// What the claim sends to the session (START on claim).
        then: SessionCommand,
    },
    /// `conn` no longer controls: leave the gate, forget its effectors, hold the arm.
    Dropped { conn: u64 },
    /// The connection is gone: close its registry entry and its link.
    Closed { conn: u64, reason: String },
    /// Sync mode: the active agent has answered every perception; the gate may open.
    Ready { conn: u64 },
    /// For the alert log (and the log).
    Log { code: &'static str, text: String },
    /// For the log only.
    Note(String),
}

/// What one call needs from outside (the authority's context of every connection machine).
pub use crate::session::Ctx as AgentCtx;

/// Every agent connection, and the one in control.
#[derive(Debug)]
pub struct Agents {
    config: AgentsConfig,
    conns: BTreeMap<u64, AgentState>,
    active: Option<u64>,
    actions: VecDeque<AgentAction>,
}

/// `(init <model> <team> <number>)` for `robot`: the team and number, or why not.
pub fn check_init(exprs: &[Sexp], robot: &str) -> Result<(String, String), String> {
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

impl Agents {
    /// No connections yet.
    pub fn new(config: AgentsConfig) -> Self {
        Self {
            config,
            conns: BTreeMap::new(),
            active: None,
            actions: VecDeque::new(),
        }
    }

    /// The next thing to do, in the order asked.
    pub fn poll(&mut self) -> Option<AgentAction> {
        self.actions.pop_front()
    }

    /// The agent controlling the arm.
    pub fn active(&self) -> Option<u64> {
        self.active
    }

    /// One connection's state.
    pub fn conn(&self, conn: u64) -> Option<&AgentState> {
        self.conns.get(&conn)
    }

    /// Every connection.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &AgentState)> {
        self.conns.iter().map(|(id, c)| (*id, c))
    }

    /// Takes in one input.
    pub fn handle(&mut self, input: AgentInput, ctx: &mut AgentCtx<'_>) {
        match input {
            AgentInput::Conn(ConnEvent::Opened { conn, peer, .. }) => {
                self.conns.insert(
                    conn,
                    AgentState {
                        peer,
                        role: AgentRole::Pending,
                        opened: ctx.now,
                        inbox: VecDeque::new(),
                        owed: 0,
                        waiting_since: ctx.now,
                        warned: None,
                        init_timed_out: false,
                        parked_init: None,
                    },
                );
            }
            AgentInput::Conn(ConnEvent::Message { conn, exprs }) => self.message(conn, exprs, ctx),
            AgentInput::Conn(ConnEvent::Closed { conn, reason }) => {
                if let Some(agent) = self.conns.remove(&conn) {
                    if self.active == Some(conn) {
                        self.active = None;
                        ctx.arm.release(conn);
                        self.actions.push_back(AgentAction::Dropped { conn });
                        self.actions.push_back(AgentAction::Note(format!(
                            "{} gone ({reason}); the arm follows pause_behavior",
                            agent.peer
                        )));
                    }
                    self.actions.push_back(AgentAction::Closed { conn, reason });
                }
            }
            AgentInput::Revoked => {
                if let Some(conn) = self.active.take()
                    && let Some(agent) = self.conns.get_mut(&conn)
                {
                    agent.role = AgentRole::Pending;
                    let peer = agent.peer;
                    self.actions.push_back(AgentAction::Refuse {
                        conn,
                        reason: "control of the arm was revoked from the panel".into(),
                    });
                    self.actions.push_back(AgentAction::Dropped { conn });
                    self.actions.push_back(AgentAction::Log {
                        code: "REVOKED",
                        text: format!("{peer} dropped"),
                    });
                }
            }
            AgentInput::GatePoll => self.gate_poll(ctx),
        }
    }

    /// After a batch of inputs: this batch's inits, and those that waited for an owner who has
    /// left since (or who stays: refused after the grace), are taken; connections that never
    /// said who they are are closed after the init timeout.
    pub fn end_batch(&mut self, ctx: &mut AgentCtx<'_>) {
        // Taken after the batch, so a close already in it frees the arm first.
        let parked: Vec<(u64, Vec<Sexp>, Instant)> = self
            .conns
            .iter_mut()
            .filter_map(|(&conn, a)| a.parked_init.take().map(|(e, since)| (conn, e, since)))
            .collect();
        for (conn, exprs, since) in parked {
            self.try_init(conn, exprs, since, ctx);
        }
        // A connection that never says who it is would hold a thread and a socket forever.
        let timeout = self.config.init_timeout;
        for (&conn, agent) in &mut self.conns {
            if agent.role == AgentRole::Pending
                && !agent.init_timed_out
                && ctx.now.saturating_duration_since(agent.opened) >= timeout
            {
                agent.init_timed_out = true;
                self.actions.push_back(AgentAction::Note(format!(
                    "{} sent no (init …) within {timeout:?}; closing",
                    agent.peer
                )));
                self.actions.push_back(AgentAction::Refuse {
                    conn,
                    reason: format!(
                        "no (init <model> <team> <number>) within {} s",
                        timeout.as_secs()
                    ),
                });
            }
        }
    }

    /// Step phase Sample: the messages this step applies, in order. In sync mode the step that
    /// starts a cycle takes the answers to every perception sent so far (the gate waited for
    /// them); otherwise everything that arrived.
    pub fn take_batch(&mut self) -> Vec<Vec<Sexp>> {
        let sync = self.config.sync;
        let Some(agent) = self.active.and_then(|c| self.conns.get_mut(&c)) else {
            return Vec::new();
        };
        if sync {
            let n = agent.owed.min(agent.inbox.len());
            agent.owed -= n;
            agent.inbox.drain(..n).collect()
        } else {
            agent.owed = 0;
            agent.inbox.drain(..).collect()
        }
    }

    /// A perception went to the active agent: its answer is owed from now.
    pub fn perception_sent(&mut self, now: Instant) {
        if let Some(agent) = self.active.and_then(|c| self.conns.get_mut(&c)) {
            agent.owed += 1;
            agent.waiting_since = now;
        }
    }

    /// The session started: the next stretch out of RUNNING gets its own warning.
    pub fn session_started(&mut self) {
        if let Some(agent) = self.active.and_then(|c| self.conns.get_mut(&c)) {
            agent.warned = None;
        }
    }

    fn message(&mut self, conn: u64, exprs: Vec<Sexp>, ctx: &mut AgentCtx<'_>) {
        let (sync, max) = (self.config.sync, self.config.max_inbox);
        let Some(agent) = self.conns.get_mut(&conn) else {
            return;
        };
        // While its init waits for the arm, what an agent sends next waits with it.
        if agent.role == AgentRole::Pending && agent.parked_init.is_none() {
            agent.parked_init = Some((exprs, ctx.now));
            return;
        }
        if agent.parked_init.is_none()
            && let Some(text) = ignored(agent, &exprs, ctx.state)
        {
            self.actions.push_back(AgentAction::Warn { conn, text });
        }
        let Some(agent) = self.conns.get_mut(&conn) else {
            return;
        };
        if agent.inbox.len() >= max {
            if sync {
                // More than one message per cycle, for long: it will never catch up.
                let peer = agent.peer;
                self.actions.push_back(AgentAction::Note(format!(
                    "{peer} is {max} messages ahead of the cycle; dropping it"
                )));
                self.actions.push_back(AgentAction::Refuse {
                    conn,
                    reason: format!("sync mode takes one message per cycle; {max} are queued"),
                });
                return;
            }
            // Real time while paused: the oldest effectors are superseded anyway.
            agent.inbox.pop_front();
        }
        agent.inbox.push_back(exprs);
    }

    /// Takes `conn`'s `(init …)` (first sent at `since`): the agent gets the arm, or is
    /// refused, or, while the arm's owner may be a client that has just gone (its close not yet
    /// seen), the init waits up to the claim grace for the arm to come free.
    fn try_init(&mut self, conn: u64, exprs: Vec<Sexp>, since: Instant, ctx: &mut AgentCtx<'_>) {
        let Some(agent) = self.conns.get_mut(&conn) else {
            return;
        };
        let peer = agent.peer;
        let (team, number) = match check_init(&exprs, &self.config.robot) {
            Ok(ok) => ok,
            Err(reason) => {
                self.actions.push_back(AgentAction::Log {
                    code: "REFUSED",
                    text: format!("{peer}: {reason}"),
                });
                self.actions.push_back(AgentAction::Refuse { conn, reason });
                return;
            }
        };
        let label = format!("{peer} ({team} {number})");
        let claimed = self.active.is_none().then(|| ctx.arm.claim(conn, &label));
        let Some(claimed) = claimed.flatten() else {
            if ctx.now.saturating_duration_since(since) < self.config.claim_grace {
                agent.parked_init = Some((exprs, since));
                return;
            }
            let reason = format!("the arm is already controlled by {}", ctx.arm.describe());
            self.actions
                .push_back(AgentAction::Note(format!("refusing {peer}: {reason}")));
            self.actions.push_back(AgentAction::Refuse { conn, reason });
            return;
        };
        agent.role = AgentRole::Controller { team, number };
        self.active = Some(conn);
        // What the claim does to the session (START on claim: a pause from the panel stays a
        // pause), as this batch's later messages will meet it.
        ctx.state = transition(ctx.state, claimed.then).to;
        self.actions.push_back(AgentAction::Claimed {
            conn,
            label,
            then: claimed.then,
        });
    }

    /// Sync mode, between steps: the step that starts a cycle needs the agent's message; a
    /// silent agent is dropped after the timeout so it never stalls the simulation.
    fn gate_poll(&mut self, ctx: &mut AgentCtx<'_>) {
        if !self.config.sync {
            return;
        }
        let timeout = self.config.sync_timeout;
        let Some(conn) = self.active else {
            return;
        };
        let Some(agent) = self.conns.get_mut(&conn) else {
            return;
        };
        if agent.inbox.len() >= agent.owed {
            self.actions.push_back(AgentAction::Ready { conn });
        } else if ctx.now.saturating_duration_since(agent.waiting_since) >= timeout {
            let secs = timeout.as_secs_f64();
            agent.owed = 0;
            agent.role = AgentRole::Pending;
            let peer = agent.peer;
            self.active = None;
            ctx.arm.release(conn);
            self.actions.push_back(AgentAction::Note(format!(
                "{peer} sent nothing for {secs:.1} s in sync mode; dropping it"
            )));
            self.actions.push_back(AgentAction::Refuse {
                conn,
                reason: format!("sync mode: no message for {secs:.1} s; dropped"),
            });
            self.actions.push_back(AgentAction::Dropped { conn });
        }
    }
}

/// Effectors only apply while the session is RUNNING. Told once per stretch of another state,
/// so the agent knows why the arm does not follow (a pause from the panel, a reset, an error);
/// `(syn)` alone is not an effector.
fn ignored(agent: &mut AgentState, exprs: &[Sexp], state: SessionState) -> Option<&'static str> {
    if state == SessionState::Running {
        agent.warned = None;
        return None;
    }
    if agent.warned == Some(state) || exprs.iter().all(|e| e.is("syn")) {
        return None;
    }
    agent.warned = Some(state);
    Some(match state {
        SessionState::Paused => "the session is PAUSED; effectors apply when it runs again",
        SessionState::Idle => {
            "the session is IDLE (reset); effectors apply once it is started (panel Start or the monitor's (start))"
        }
        SessionState::Error => "the session is in ERROR; effectors apply after a reset and a start",
        SessionState::Running => return None,
    })
}

#[cfg(test)]
mod tests;
