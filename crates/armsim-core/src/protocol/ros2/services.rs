//! ROS 2's `simulation_interfaces` services mapped onto armsim's one session, as a pure machine
//! (quinn-proto style, like `teleop::sessions`): the bridge hands it each request with a view of
//! the session ([`Services::handle`]), once a frame lets it see the clock ([`Services::tick`]),
//! and applies what [`Services::poll`] returns: replies, `SessionCommand`s, and "forget the ROS
//! command" after a reset. No DDS, no Bevy, no clock of its own, so every row of the mapping is
//! unit-tested (`services/tests.rs`).
//!
//! The mapping (the standard's words in `simulation_interfaces` 2.1.0's `.msg`/`.srv` files):
//! - armsim's IDLE and RUNNING both step the world, so both are PLAYING; PAUSED is PAUSED, or
//!   STOPPED after `SetSimulationState(STOPPED)` (= pause + reset ALL) until time moves or the
//!   state changes; ERROR has time stopped, so it reads PAUSED with the reason in
//!   `error_message`.
//! - `StepSimulation` assumes a paused simulation and answers only once its steps have run:
//!   the reply is deferred until the clock's step count reaches the target in the same
//!   episode. While playing it fails with RESULT_OPERATION_FAILED, as the `.srv` says.
//! - armsim's reset is all or nothing (world, clock and the arm's targets back to home), so
//!   `ResetSimulation` takes the scopes that include both TIME and STATE (DEFAULT and ALL among
//!   them; SPAWNED is vacuous, armsim spawns nothing) and refuses the others as unsupported.
//! - QUITTING is refused: DDS has no authentication, and a peer must not close the app.
//!
//! Session commands take effect later, in `SessionSystems`; the machine predicts their effect
//! on the [`SessionView`] it was handed, so requests of one batch see each other's effects
//! ("pause, then step" in one drain steps).

use std::collections::VecDeque;

use super::sim_interfaces::{
    GetSimulationStateResponse, GetSimulatorFeaturesResponse, ResetSimulationRequest,
    ResetSimulationResponse, ServiceRequest, ServiceResponse, SetSimulationStateResponse as Set,
    SimResult as R, SimulationState as S, SimulatorFeatures as F, StepSimulationResponse,
};

use crate::session::{SessionCommand, SessionState, transition};

/// The most steps one `StepSimulation` may ask for, and the most that may wait at once: the
/// clock's `MAX_PENDING_STEPS` (armsim-sim's `sim::clock`, not exported). Steps past the
/// clock's cap would be dropped and their reply would never come, so they are refused here.
pub const MAX_STEPS: u64 = 100_000;

/// What the machine needs to know of the session and the clock. The bridge builds one per
/// batch of requests (`session_view` in the app's ROS 2 bridge), after the session's commands of
/// earlier frames have been applied; the machine updates it with the predicted effect of each
/// command it hands out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView {
    pub state: SessionState,
    /// Why the session is in ERROR (`Session::error`).
    pub error: Option<String>,
    /// `SimClock::steps`: steps since the scene was loaded or reset.
    pub steps: u64,
    /// `SimClock::episode`: resets since start.
    pub episode: u64,
    /// `SimClock::pending_steps()`: queued single steps not yet run (a step batch in flight,
    /// ours or another protocol's).
    pub pending_steps: u32,
}

impl SessionView {
    /// What `SessionSystems` will make of the session once it applies `command`, as the
    /// authority says ([`transition`]).
    pub fn apply(&mut self, command: SessionCommand) {
        let t = transition(self.state, command);
        self.state = t.to;
        if t.reset {
            self.error = None;
            self.episode += 1;
            self.steps = 0;
            self.pending_steps = 0;
        }
        self.pending_steps = (self.pending_steps.saturating_add(t.steps)).min(MAX_STEPS as u32);
    }
}

/// What the machine asks the bridge to do, in order. `T` is the bridge's handle on a request
/// (the DDS request id), given back with its reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Action<T> {
    /// Send this response to the caller of `ticket`.
    Reply {
        ticket: T,
        response: ServiceResponse,
    },
    /// A command for the global session.
    Session(SessionCommand),
    /// A reset was asked: drop the latest ROS command and any trajectory, so the arm follows
    /// the home targets the reset set rather than what a ROS node sent before it.
    ForgetControl,
}

/// Why a request was refused: the reply's `error_message`. The result code depends on the
/// service as well (an ERROR session is STATE_TRANSITION_ERROR for `SetSimulationState` and
/// OPERATION_FAILED for `StepSimulation`), so it is chosen where the refusal is made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the simulation is not paused (it is playing); pause it first")]
    NotPaused,
    #[error("the session is in ERROR ({0}); reset it first (ResetSimulation, or state STOPPED)")]
    SessionError(String),
    #[error("{0} steps asked; at most {MAX_STEPS} per call")]
    TooManySteps(u64),
    #[error("{queued} steps are already queued; {asked} more would pass the limit of {MAX_STEPS}")]
    QueueFull { queued: u32, asked: u64 },
    #[error("the simulation was reset before the steps ran")]
    ResetBeforeSteps,
    #[error("the session went into ERROR before the steps ran ({0})")]
    ErrorBeforeSteps(String),
    #[error("the steps were dropped (the queue of single steps was full)")]
    StepsDropped,
    #[error("the simulation is already {0}")]
    AlreadyInState(&'static str),
    #[error("armsim does not quit on a ROS request")]
    NoQuit,
    #[error("state {0} cannot be set: armsim always has its one world loaded")]
    IncorrectTransition(u8),
    #[error(
        "reset scope {0}: armsim resets time and state together; use SCOPE_DEFAULT (0) or \
         SCOPE_ALL (255)"
    )]
    ResetScope(u8),
}

impl Refusal {
    fn result(&self, code: u8) -> R {
        R::failed(code, self.to_string())
    }
}

/// The refusal of a session in ERROR, with its reason.
fn in_error(view: &SessionView) -> Refusal {
    Refusal::SessionError(view.error.clone().unwrap_or_default())
}

/// A `StepSimulation` whose steps have not all run.
#[derive(Clone, Debug)]
struct PendingStep<T> {
    ticket: T,
    /// The episode the steps run in (after any reset handed out before them).
    episode: u64,
    /// The clock's step count once they have run (steps already queued run first).
    target: u64,
    /// Ticks in a row that saw the clock paused, nothing queued and the target not reached.
    /// One such tick is allowed: a bridge that applies commands a frame late shows it once
    /// before the steps are queued.
    starved: u8,
}

/// The five services' state: whether the simulation is STOPPED, the deferred step replies, and
/// the actions not yet polled.
#[derive(Debug)]
pub struct Services<T> {
    /// `Some(episode)`: `SetSimulationState(STOPPED)` paused that episode at time zero. It
    /// reads STOPPED only while that still holds (see [`Services::is_stopped`]).
    stopped: Option<u64>,
    pending: VecDeque<PendingStep<T>>,
    actions: VecDeque<Action<T>>,
    custom_info: String,
}

/// What `GetSimulatorFeatures` lists. Not RESET_TIME / RESET_STATE / RESET_SPAWNED: each alone
/// is refused, and the standard reads them as "that flag alone works".
pub const FEATURES: [u16; 6] = [
    F::SIMULATION_RESET,
    F::SIMULATION_STATE_GETTING,
    F::SIMULATION_STATE_SETTING,
    F::SIMULATION_STATE_PAUSE,
    F::STEP_SIMULATION_SINGLE,
    F::STEP_SIMULATION_MULTIPLE,
];

impl<T> Default for Services<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Services<T> {
    pub fn new() -> Self {
        Self {
            stopped: None,
            pending: VecDeque::new(),
            actions: VecDeque::new(),
            custom_info: format!(
                "armsim {}; ResetSimulation resets time and state together (scopes DEFAULT, ALL); \
                 IDLE and RUNNING read PLAYING, ERROR reads PAUSED with the reason",
                env!("CARGO_PKG_VERSION")
            ),
        }
    }

    /// The next thing to do, in the order asked.
    pub fn poll(&mut self) -> Option<Action<T>> {
        self.actions.pop_front()
    }

    /// `StepSimulation` calls still waiting for their steps.
    pub fn pending_steps(&self) -> usize {
        self.pending.len()
    }

    /// STOPPED holds while the session is still paused at time zero of the episode that
    /// `SetSimulationState(STOPPED)` reset; any step, start or other reset ends it.
    pub fn is_stopped(&self, view: &SessionView) -> bool {
        self.stopped == Some(view.episode)
            && view.state == SessionState::Paused
            && view.steps == 0
            && view.pending_steps == 0
    }

    /// The session as a `SimulationState` code.
    pub fn ros_state(&self, view: &SessionView) -> u8 {
        match view.state {
            SessionState::Idle | SessionState::Running => S::STATE_PLAYING,
            SessionState::Paused if self.is_stopped(view) => S::STATE_STOPPED,
            SessionState::Paused | SessionState::Error => S::STATE_PAUSED,
        }
    }

    /// One request. Its reply is queued now, or, for a `StepSimulation` that steps, once
    /// [`Services::tick`] sees its steps done.
    ///
    /// Where the bridge calls it: in `First` before `SessionSystems`, so the commands take
    /// effect in the same frame, with [`Services::tick`] in `Publish`. A bridge whose commands
    /// land a frame later still works: a deferred step waits for the episode its reset starts,
    /// and is called dropped only after two frames paused short of its target with nothing
    /// queued.
    pub fn handle(&mut self, ticket: T, request: ServiceRequest, view: &mut SessionView) {
        self.forget_stale_stop(view);
        let response = match request {
            ServiceRequest::GetSimulatorFeatures(_) => {
                ServiceResponse::GetSimulatorFeatures(GetSimulatorFeaturesResponse {
                    features: F {
                        features: FEATURES.to_vec(),
                        spawn_formats: Vec::new(),
                        custom_info: self.custom_info.clone(),
                    },
                })
            }
            ServiceRequest::GetSimulationState(_) => {
                ServiceResponse::GetSimulationState(GetSimulationStateResponse {
                    state: S {
                        state: self.ros_state(view),
                    },
                    result: R {
                        result: R::RESULT_OK,
                        error_message: match view.state {
                            SessionState::Error => view.error.clone().unwrap_or_default(),
                            _ => String::new(),
                        },
                    },
                })
            }
            ServiceRequest::SetSimulationState(req) => {
                let result = self.set_state(req.state.state, view);
                ServiceResponse::SetSimulationState(Set { result })
            }
            ServiceRequest::ResetSimulation(req) => {
                let result = self.reset_scope(req.scope, view);
                ServiceResponse::ResetSimulation(ResetSimulationResponse { result })
            }
            ServiceRequest::StepSimulation(req) => match self.step(req.steps, view) {
                Ok(Some(target)) => {
                    self.pending.push_back(PendingStep {
                        ticket,
                        episode: view.episode,
                        target,
                        starved: 0,
                    });
                    return;
                }
                Ok(None) => {
                    ServiceResponse::StepSimulation(StepSimulationResponse { result: R::ok() })
                }
                Err(why) => ServiceResponse::StepSimulation(StepSimulationResponse {
                    result: why.result(R::RESULT_OPERATION_FAILED),
                }),
            },
        };
        self.actions.push_back(Action::Reply { ticket, response });
    }

    /// Once a frame, with the session after this frame's steps: answers the `StepSimulation` calls whose steps have run,
    /// and fails those that never will (a reset, an ERROR, steps the clock dropped).
    pub fn tick(&mut self, view: &SessionView) {
        self.forget_stale_stop(view);
        let mut waiting = VecDeque::with_capacity(self.pending.len());
        while let Some(mut p) = self.pending.pop_front() {
            let starving = view.state == SessionState::Paused
                && view.pending_steps == 0
                && view.steps < p.target;
            p.starved = if starving { p.starved + 1 } else { 0 };
            let outcome = if view.episode > p.episode {
                Err(Refusal::ResetBeforeSteps)
            } else if view.episode < p.episode {
                // The reset handed out before these steps has not been applied yet.
                Ok(false)
            } else if view.state == SessionState::Error {
                Err(Refusal::ErrorBeforeSteps(
                    view.error.clone().unwrap_or_default(),
                ))
            } else if view.steps >= p.target {
                Ok(true)
            } else if p.starved > 1 {
                // Paused with nothing queued, short of the target: those steps will never run.
                Err(Refusal::StepsDropped)
            } else {
                Ok(false)
            };
            let result = match outcome {
                Ok(false) => {
                    waiting.push_back(p);
                    continue;
                }
                Ok(true) => R::ok(),
                Err(why) => why.result(R::RESULT_OPERATION_FAILED),
            };
            self.reply_step(p.ticket, result);
        }
        self.pending = waiting;
    }

    fn reply_step(&mut self, ticket: T, result: R) {
        let response = ServiceResponse::StepSimulation(StepSimulationResponse { result });
        self.actions.push_back(Action::Reply { ticket, response });
    }

    fn forget_stale_stop(&mut self, view: &SessionView) {
        if !self.is_stopped(view) {
            self.stopped = None;
        }
    }

    fn command(&mut self, command: SessionCommand, view: &mut SessionView) {
        view.apply(command);
        self.actions.push_back(Action::Session(command));
    }

    /// The full reset: world, clock and the arm's targets (the session sets them to the home
    /// commands), the ROS command forgotten, and the steps still owed failed now, since they
    /// will never run in this episode.
    fn reset(&mut self, view: &mut SessionView) {
        for p in std::mem::take(&mut self.pending) {
            self.reply_step(
                p.ticket,
                Refusal::ResetBeforeSteps.result(R::RESULT_OPERATION_FAILED),
            );
        }
        self.command(SessionCommand::Reset, view);
        self.actions.push_back(Action::ForgetControl);
    }

    fn set_state(&mut self, target: u8, view: &mut SessionView) -> R {
        match target {
            S::STATE_STOPPED => {
                if self.is_stopped(view) {
                    return Refusal::AlreadyInState("stopped").result(Set::ALREADY_IN_TARGET_STATE);
                }
                // The standard's STOPPED: paused and reset with scope ALL. It is also the way
                // out of ERROR.
                self.reset(view);
                self.command(SessionCommand::Pause, view);
                self.stopped = Some(view.episode);
                R::ok()
            }
            S::STATE_PLAYING => match view.state {
                SessionState::Error => in_error(view).result(Set::STATE_TRANSITION_ERROR),
                SessionState::Running => {
                    Refusal::AlreadyInState("playing").result(Set::ALREADY_IN_TARGET_STATE)
                }
                // IDLE reads PLAYING too, but only RUNNING applies the controller's targets:
                // starting is what a caller asking to play wants.
                SessionState::Idle | SessionState::Paused => {
                    self.stopped = None;
                    self.command(SessionCommand::Start, view);
                    R::ok()
                }
            },
            S::STATE_PAUSED => match view.state {
                SessionState::Error => in_error(view).result(Set::STATE_TRANSITION_ERROR),
                // SimulationState.msg: a stopped simulation "can also be paused, which means
                // starting simulation in a paused state immediately". It is paused already;
                // only what it reads changes.
                SessionState::Paused if self.stopped.is_some() => {
                    self.stopped = None;
                    R::ok()
                }
                SessionState::Paused => {
                    Refusal::AlreadyInState("paused").result(Set::ALREADY_IN_TARGET_STATE)
                }
                SessionState::Idle | SessionState::Running => {
                    self.command(SessionCommand::Pause, view);
                    R::ok()
                }
            },
            S::STATE_QUITTING => Refusal::NoQuit.result(R::RESULT_FEATURE_UNSUPPORTED),
            other => Refusal::IncorrectTransition(other).result(Set::INCORRECT_TRANSITION),
        }
    }

    fn reset_scope(&mut self, scope: u8, view: &mut SessionView) -> R {
        const BOTH: u8 = ResetSimulationRequest::SCOPE_TIME | ResetSimulationRequest::SCOPE_STATE;
        if scope != ResetSimulationRequest::SCOPE_DEFAULT && scope & BOTH != BOTH {
            return Refusal::ResetScope(scope).result(R::RESULT_FEATURE_UNSUPPORTED);
        }
        // armsim's reset ends in IDLE; the service keeps the state it found. A paused (or
        // stopped) simulation stays paused, so that "pause, reset, step N" runs exactly N steps
        // from time zero; a playing one that applied control plays on, as a reset in Gazebo
        // does (a reset from anywhere else leaves it IDLE until a START, as for every client).
        let was_paused = view.state == SessionState::Paused;
        let was_running = view.state == SessionState::Running;
        let was_stopped = self.is_stopped(view);
        self.reset(view);
        if was_paused {
            self.command(SessionCommand::Pause, view);
        } else if was_running {
            self.command(SessionCommand::Start, view);
        }
        self.stopped = was_stopped.then_some(view.episode);
        R::ok()
    }

    /// `Ok(Some(target))`: the steps are queued and the reply waits for the clock to reach
    /// `target`; `Ok(None)`: nothing to do (zero steps), reply OK now.
    fn step(&mut self, steps: u64, view: &mut SessionView) -> Result<Option<u64>, Refusal> {
        match view.state {
            SessionState::Error => return Err(in_error(view)),
            SessionState::Idle | SessionState::Running => return Err(Refusal::NotPaused),
            SessionState::Paused => {}
        }
        if steps == 0 {
            return Ok(None);
        }
        if steps > MAX_STEPS {
            return Err(Refusal::TooManySteps(steps));
        }
        if u64::from(view.pending_steps) + steps > MAX_STEPS {
            return Err(Refusal::QueueFull {
                queued: view.pending_steps,
                asked: steps,
            });
        }
        // Steps already queued (another caller's) run first.
        let target = view.steps + u64::from(view.pending_steps) + steps;
        self.stopped = None;
        let n = u32::try_from(steps).expect("at most MAX_STEPS");
        self.command(SessionCommand::Step(n), view);
        Ok(Some(target))
    }
}

#[cfg(test)]
mod tests;
