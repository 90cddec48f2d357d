//! The session in the ECS: the one global state (IDLE | RUNNING | PAUSED | ERROR) shared by the
//! panel, the keyboard and every protocol, carried out on the world and the clock as the core's
//! authority ([`armsim_core::session::transition`]) says, the posture the arm holds when control
//! stops (`pause_behavior`), the physics guard that raises ERROR, and the alert log.

use bevy::prelude::*;

use crate::scene::PauseBehavior;
use crate::sim::{
    EpisodeStartNow, JointCommand, JointTargets, Sim, SimClock, SimMut, SimRef, SimScene, SimStep,
    SimSystems, SimView, log_start, world_for,
};

pub use armsim_core::session::{
    SessionCommand, SessionEvent, SessionState, Transition, transition,
};

/// A [`SessionCommand`] on its way to `SessionSystems`, from any source (panel, keys,
/// protocols). The command and its rules are the core's; this is its ECS message.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionRequest(pub SessionCommand);

/// A [`SessionEvent`] announced after the session changed, so every protocol can tell its
/// clients: the core's event as an ECS message.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionNotice(pub SessionEvent);

/// The global session: state and the posture the arm holds while nobody controls it.
#[derive(Resource, Debug, Clone)]
pub struct Session {
    state: SessionState,
    pub pause_behavior: PauseBehavior,
    /// Commands applied while not RUNNING (latched when control stopped).
    hold: Vec<JointCommand>,
    /// Why the session is in ERROR, for the panel and the logs.
    pub error: Option<String>,
    /// The current ERROR has been announced (event and alert log).
    error_announced: bool,
}

impl Session {
    pub fn new(pause_behavior: PauseBehavior, hold: Vec<JointCommand>) -> Self {
        Self {
            state: SessionState::Idle,
            pause_behavior,
            hold,
            error: None,
            error_announced: false,
        }
    }

    pub fn state(&self) -> SessionState {
        self.state
    }

    /// Commands the arm follows while control is not applied.
    pub fn hold_commands(&self) -> &[JointCommand] {
        &self.hold
    }

    /// Latches the hold posture from the arm's current state.
    pub fn latch_hold(&mut self, world: &SimView<'_>) {
        self.hold = self.hold_posture(world);
    }

    /// What the arm does when control stops, following `pause_behavior`: `hold` keeps the
    /// current joint positions, `damp` brings the joints to rest.
    pub fn hold_posture(&self, world: &SimView<'_>) -> Vec<JointCommand> {
        match self.pause_behavior {
            PauseBehavior::Hold => world
                .joint_positions()
                .into_iter()
                .map(|q| JointCommand::Position {
                    target: q,
                    velocity: 0.0,
                })
                .collect(),
            PauseBehavior::Damp => {
                vec![JointCommand::Velocity { target: 0.0 }; world.joint_count()]
            }
        }
    }
}

/// What happened, for the panel's alerts log: limits, timeouts, connections, referee events,
/// session changes, each with the sim time it happened at.
#[derive(Resource, Debug, Default)]
pub struct AlertLog {
    entries: std::collections::VecDeque<LogEntry>,
}

#[derive(Clone, Debug)]
pub struct LogEntry {
    pub sim_time: f64,
    /// "teleop", "agent", "lockstep", "monitor", "referee", "session".
    pub source: &'static str,
    pub code: String,
    pub text: String,
}

impl AlertLog {
    const CAPACITY: usize = 200;

    pub fn push(
        &mut self,
        sim_time: f64,
        source: &'static str,
        code: &str,
        text: impl Into<String>,
    ) {
        if self.entries.len() == Self::CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back(LogEntry {
            sim_time,
            source,
            code: code.to_string(),
            text: text.into(),
        });
    }

    /// Newest first.
    pub fn recent(&self) -> impl Iterator<Item = &LogEntry> {
        self.entries.iter().rev()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The system set (in `First`) that applies `SessionCommand`s. Sources that connect and start
/// a session in the same frame run before it, so the command takes effect before any step.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionSystems;

/// Adds the session on top of the sim's plugin (which it needs: the hold posture starts as the
/// world's initial commands). The sim never looks at the session: the session applies control
/// in `SimSystems::Apply`, checks the state after `SimSystems::Physics`, and tells the clock
/// when it is paused or in error (`SimClock::set_paused`, `set_error_stop`).
pub(crate) fn plugin(app: &mut App) {
    let hold = app.world().resource::<Sim>().0.commands().to_vec();
    let pause_behavior = app
        .world()
        .resource::<SimScene>()
        .0
        .config
        .control
        .pause_behavior;
    app.insert_resource(Session::new(pause_behavior, hold))
        .init_resource::<AlertLog>()
        .add_message::<SessionRequest>()
        .add_message::<SessionNotice>()
        .add_systems(First, handle_session_commands.in_set(SessionSystems))
        .add_systems(
            SimStep,
            (
                apply_control.in_set(SimSystems::Apply),
                check_state
                    .after(SimSystems::Physics)
                    .before(SimSystems::Referee),
            ),
        );
}

/// Tells the clock what the session means for stepping. Called wherever the state changes, so
/// the clock is never a frame behind.
fn sync_clock(session: &Session, clock: &mut SimClock) {
    clock.set_paused(session.state == SessionState::Paused);
    clock.set_error_stop(session.state == SessionState::Error);
}

/// Pushes the controller's targets (RUNNING) or the hold posture (otherwise) into the motors.
fn apply_control(targets: Res<JointTargets>, session: Res<Session>, mut sim: ResMut<Sim>) {
    let running = session.state() == SessionState::Running;
    let commands = match running {
        true => &targets.commands,
        false => session.hold_commands(),
    };
    for (i, &cmd) in commands.iter().enumerate() {
        // The hold posture aims at nothing beyond its own targets.
        let aim = running.then(|| targets.aim(i)).flatten();
        // Inputs are validated where they enter; a refusal here only means a shorter vector.
        let _ = sim.0.set_command_aiming(i, cmd, aim);
    }
}

/// The physics guard, right after the Rapier step: a non-finite state puts the session in
/// ERROR, and the clock's error stop ends the frame after this step.
fn check_state(sim: SimRef, mut clock: ResMut<SimClock>, mut session: ResMut<Session>) {
    if session.state() == SessionState::Error {
        return;
    }
    let sim = sim.view();
    // Any body, not only the arm: a cube gone NaN would otherwise hang in every later frame.
    let why = if !sim.joint_positions().iter().all(|q| q.is_finite()) {
        Some("physics produced a non-finite joint state".to_string())
    } else {
        sim.non_finite_body()
            .map(|body| format!("physics produced a non-finite state for {body}"))
    };
    if let Some(why) = why {
        fail(&mut session, &sim, why);
        sync_clock(&session, &mut clock);
    }
}

#[allow(clippy::too_many_arguments)] // a Bevy system: one argument per resource it touches
fn handle_session_commands(
    mut commands: MessageReader<SessionRequest>,
    mut events: MessageWriter<SessionNotice>,
    mut session: ResMut<Session>,
    mut sim: SimMut,
    mut clock: ResMut<SimClock>,
    mut targets: ResMut<JointTargets>,
    scene: Res<SimScene>,
    mut drawn: ResMut<EpisodeStartNow>,
    mut log: ResMut<AlertLog>,
) {
    // An ERROR raised inside a step (the physics guard) is announced here like any change of
    // state: every protocol and the panel's alert log hear of it, with the reason.
    if session.state == SessionState::Error {
        if !session.error_announced {
            session.error_announced = true;
            let why = session.error.clone().unwrap_or_default();
            log.push(clock.sim_time, "session", "ERROR", why);
            events.write(SessionNotice(SessionEvent::Errored));
        }
    } else {
        session.error_announced = false;
    }
    for &SessionRequest(command) in commands.read() {
        let t = transition(session.state, command);
        if t.latch_hold {
            session.latch_hold(&sim.view());
        }
        clock.request_steps(t.steps);
        session.state = t.to;
        if t.reset {
            clock.reset();
            // The next episode's start: the file's, or its `randomize` draw.
            let (world, start) = world_for(&scene.0, clock.episode);
            sim.install(world);
            if let Some(start) = &start {
                log_start(start);
            }
            drawn.0 = start;
            session.hold = sim.model().commands().to_vec();
            // Targets from before the reset must not drive the reloaded arm on START.
            targets.commands.clone_from(&session.hold);
            session.error = None;
            info!("session reset: scene restored, state IDLE");
            log.push(0.0, "session", "RESET_DONE", "scene restored, state IDLE");
            events.write(SessionNotice(SessionEvent::ResetDone));
            continue;
        }
        if t.changed() {
            let (from, to) = (t.from.as_str(), t.to.as_str());
            info!("session {from} -> {to}");
            log.push(clock.sim_time, "session", to, format!("{from} -> {to}"));
            events.write(SessionNotice(match t.to {
                SessionState::Running => SessionEvent::Started,
                SessionState::Paused => SessionEvent::Paused,
                SessionState::Error => SessionEvent::Errored,
                SessionState::Idle => SessionEvent::ResetDone,
            }));
        }
    }
    sync_clock(&session, &mut clock);
}

/// Puts the session in ERROR (from the physics guard or a protocol), latching the hold posture.
/// The clock's error stop follows at the guard or at the next `SessionSystems` run.
pub fn fail(session: &mut Session, world: &SimView<'_>, why: String) {
    error!("session error: {why}");
    session.latch_hold(world);
    session.state = SessionState::Error;
    session.error = Some(why);
    session.error_announced = false;
}
