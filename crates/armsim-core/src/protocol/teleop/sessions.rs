//! The teleop sessions as a pure state machine (quinn-proto style): the app's ECS bridge feeds
//! it what the connection threads and the session report ([`Input`], through
//! [`Sessions::handle`]) and applies what it asks for ([`Action`], from [`Sessions::poll`]). It
//! owns who controls and who observes, each session's START, the heartbeat watchdog and the
//! hand-over of the controller role; it has no sockets, no Bevy and no clock of its own (`now`
//! comes in with each call), so it is unit-tested on its own.
//!
//! Each session has its own started / not-started state on top of the global session: a
//! controller's frames apply only once it has sent START (since its CONNECT, its promotion or the
//! last reset), and a session that has not sent its own START (every observer, a controller
//! before its START) is told IDLE, in CONNECTED, its state frames and events and DISCONNECTED,
//! even where the global session runs or pauses for the panel, another protocol or a previous
//! controller ([`view`]). A client asks for a role with `extensions.role` on CONNECT or any later
//! `ui_cmd`, or with `REQUEST_CONTROL` / `RELEASE_CONTROL` (`handover.rs`): a session that asked
//! to observe never holds the arm. The controller role passes to the longest-connected observer
//! that did not ask to only watch whenever the arm is free after a teleop controller left (gone,
//! released it, or demoted after a heartbeat loss plus a grace period); a panel Revoke promotes
//! nobody.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::envelope::{ControlFrame, RoleRequest, SimEventPayload, UiCommand};
use crate::protocol::dataset::DatasetControl;
use crate::session::{SessionCommand, SessionEvent, SessionState, transition};

/// A session's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionRole {
    Controller,
    Observer,
}

impl SessionRole {
    /// The wire spelling (`extensions.role`).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionRole::Controller => "controller",
            SessionRole::Observer => "observer",
        }
    }
}

/// One WebSocket connection as the machine sees it.
#[derive(Clone, Debug)]
pub struct SessionConn {
    pub peer: SocketAddr,
    /// Set between CONNECT and DISCONNECT.
    pub session_id: Option<String>,
    pub role: SessionRole,
    /// This session has sent START since its CONNECT, its promotion or the last reset: only
    /// then do its control frames apply.
    pub started: bool,
    last_heartbeat: Instant,
    /// When the heartbeat lapsed (the grace period of a controller runs from here).
    timed_out_at: Option<Instant>,
    /// When its session began (CONNECT): the longest-connected observer is promoted first.
    session_since: Instant,
    /// Control was revoked from it in the panel: it is not handed control again.
    no_promote: bool,
    /// It asked to observe (`extensions.role: "observer"`, `RELEASE_CONTROL`): never promoted,
    /// until it asks for control.
    pub watch_only: bool,
    /// Rate limit of "control ignored" alerts.
    last_ignored_alert: Option<Instant>,
    /// Messages refused so far (the log shows only some).
    refused: u64,
}

impl SessionConn {
    /// Whether its heartbeat has lapsed.
    pub fn timed_out(&self) -> bool {
        self.timed_out_at.is_some()
    }
}

/// What happened, for the machine.
#[derive(Clone, Debug)]
pub enum Input {
    /// A socket finished its WebSocket handshake.
    Opened {
        conn: u64,
        peer: SocketAddr,
    },
    /// CONNECT accepted by the connection thread (scene matched), with the role it asked for.
    SessionOpened {
        conn: u64,
        session_id: String,
        role: Option<RoleRequest>,
    },
    /// A UI command other than CONNECT, session already checked, with the role it asked for.
    Command {
        conn: u64,
        command: UiCommand,
        role: Option<RoleRequest>,
    },
    Control {
        conn: u64,
        seq: u64,
        frame: ControlFrame,
    },
    Heartbeat {
        conn: u64,
    },
    /// A message the thread refused (and already answered).
    Refused {
        conn: u64,
        code: &'static str,
        message: String,
    },
    Closed {
        conn: u64,
        reason: String,
    },
    /// The panel revoked this protocol's control of the arm.
    Revoked,
    /// The global session changed (whoever caused it).
    Session(SessionEvent),
    /// Once a frame: the heartbeat watchdog.
    Tick,
}

/// What the machine asks the bridge to do.
#[derive(Clone, Debug)]
pub enum Action {
    /// Queue a `sim_event` for `conn` (its `sim_state` as that session sees it); the bridge adds
    /// the clock's `(episode, step)` stamp.
    Send { conn: u64, event: SimEventPayload },
    /// The session is over (after DISCONNECTED); the socket stays open.
    EndSession(u64),
    /// A command for the global session.
    Session(SessionCommand),
    /// The controller's frame enters the control slot.
    Apply { seq: u64, frame: ControlFrame },
    /// A new controller, or none: no frame of the previous one is followed.
    NewController,
    /// The arm follows `pause_behavior` (the controller left or stopped).
    Hold,
    /// Following restarts from where the arm is (`hold`: the heartbeat lapsed, hold still).
    Disengage { hold: bool },
    /// After a reset: the last frame is forgotten.
    ForgetControl,
    /// A session opened: announce it in the registry (CONNECTED).
    Announce { conn: u64, text: String },
    /// The connection is gone: close its registry entry and its link.
    Closed { conn: u64, reason: String },
    /// For the alert log (and the log).
    Log { code: &'static str, text: String },
    /// For the log only.
    Note(String),
    /// The controller asks the LeRobot recorder for `control`; the bridge answers the session
    /// (`control.event()`, or an ALERT when nothing records).
    Dataset { conn: u64, control: DatasetControl },
}

/// What one call needs from outside (the authority's context of every connection machine).
pub use crate::session::Ctx;

/// Settings of the machine.
#[derive(Clone, Debug)]
pub struct SessionsConfig {
    pub heartbeat_timeout: Duration,
    /// How long a controller may stay in NET_TIMEOUT before it is demoted.
    pub controller_grace: Duration,
    /// What CONNECTED carries besides `role` and `controller` (scene id, joint names, rates).
    pub connected_ext: Map<String, Value>,
}

/// Every teleop connection's role and session state.
#[derive(Debug)]
pub struct Sessions {
    config: SessionsConfig,
    conns: BTreeMap<u64, SessionConn>,
    controller: Option<u64>,
    /// RESETs asked for here whose RESET_DONE has not come back yet: those already cleared
    /// every session's `started`.
    own_resets: u32,
    /// A teleop controller left: the next observer takes over, unless another protocol's client
    /// takes the arm first.
    promote_pending: bool,
    actions: VecDeque<Action>,
}

/// The global state as one session sees it: a session that has not sent its own START (every
/// observer, a controller before its START) is IDLE while the simulation runs or pauses, as revA
/// starts every session IDLE; an ERROR is everyone's (only a RESET ends it). The simulation's own
/// state goes to every session too, in the state frames' `extensions.global_sim_state`.
pub fn view(conn: &SessionConn, global: SessionState) -> SessionState {
    seen_state(conn.started, global)
}

/// What a session that has (`started`) or has not sent its own START sees of `global`.
pub fn seen_state(started: bool, global: SessionState) -> SessionState {
    match global {
        SessionState::Running | SessionState::Paused if !started => SessionState::Idle,
        _ => global,
    }
}

/// `extensions.alert` of an ALERT event.
pub fn alert_ext(code: &str, message: &str) -> Map<String, Value> {
    let mut ext = Map::new();
    ext.insert("alert".into(), json!({ "code": code, "message": message }));
    ext
}

impl Sessions {
    /// No connections yet.
    pub fn new(config: SessionsConfig) -> Self {
        Self {
            config,
            conns: BTreeMap::new(),
            controller: None,
            own_resets: 0,
            promote_pending: false,
            actions: VecDeque::new(),
        }
    }

    /// The next thing to do, in the order asked.
    pub fn poll(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The connection that controls the arm.
    pub fn controller(&self) -> Option<u64> {
        self.controller
    }

    /// The controller, if its frames apply now (it sent START and its heartbeat is live).
    pub fn controlling(&self) -> Option<u64> {
        self.controller.filter(|c| {
            self.conns
                .get(c)
                .is_some_and(|c| c.started && !c.timed_out())
        })
    }

    /// Whether the controller's heartbeat has lapsed.
    pub fn net_timeout(&self) -> bool {
        self.controller
            .and_then(|c| self.conns.get(&c))
            .is_some_and(SessionConn::timed_out)
    }

    /// One connection's state.
    pub fn conn(&self, conn: u64) -> Option<&SessionConn> {
        self.conns.get(&conn)
    }

    /// Every connection, session or not.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &SessionConn)> {
        self.conns.iter().map(|(id, c)| (*id, c))
    }

    /// Connections with a session open.
    pub fn sessions(&self) -> impl Iterator<Item = (u64, &SessionConn)> {
        self.iter().filter(|(_, c)| c.session_id.is_some())
    }

    /// Sends `event` to `conn` as that session sees `state`.
    pub fn event(
        &mut self,
        conn: u64,
        event: &'static str,
        state: SessionState,
        extensions: Map<String, Value>,
    ) {
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        self.actions.push_back(Action::Send {
            conn,
            event: SimEventPayload {
                event,
                sim_state: view(c, state).as_str(),
                session_id: c.session_id.clone().unwrap_or_default(),
                extensions,
            },
        });
    }

    /// An ALERT for one session.
    pub fn alert(&mut self, conn: u64, state: SessionState, code: &str, message: &str) {
        self.event(conn, "ALERT", state, alert_ext(code, message));
    }

    /// `event` to every session.
    pub fn broadcast(
        &mut self,
        event: &'static str,
        state: SessionState,
        ext: &Map<String, Value>,
    ) {
        let ids: Vec<u64> = self.sessions().map(|(id, _)| id).collect();
        for id in ids {
            self.event(id, event, state, ext.clone());
        }
    }

    /// Takes in one input.
    pub fn handle(&mut self, input: Input, ctx: &mut Ctx<'_>) {
        match input {
            Input::Opened { conn, peer } => {
                self.conns.insert(
                    conn,
                    SessionConn {
                        peer,
                        session_id: None,
                        role: SessionRole::Observer,
                        started: false,
                        last_heartbeat: ctx.now,
                        timed_out_at: None,
                        session_since: ctx.now,
                        no_promote: false,
                        watch_only: false,
                        last_ignored_alert: None,
                        refused: 0,
                    },
                );
            }
            Input::SessionOpened {
                conn,
                session_id,
                role,
            } => self.session_opened(conn, session_id, role, ctx),
            Input::Command {
                conn,
                command,
                role,
            } => self.command(conn, command, role, ctx),
            Input::Control { conn, seq, frame } => self.control(conn, seq, frame, ctx),
            Input::Heartbeat { conn } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                c.last_heartbeat = ctx.now;
                if c.timed_out_at.take().is_some() {
                    let note = format!(
                        "heartbeats from {} are back; control resumes when the clutch is engaged again",
                        c.peer
                    );
                    self.actions.push_back(Action::Note(note));
                    self.alert(
                        conn,
                        ctx.state,
                        "NET_RESTORED",
                        "heartbeats are back; release and engage the clutch to resume control",
                    );
                }
            }
            Input::Refused {
                conn,
                code,
                message,
            } => {
                // The client got its alert; the log gets the first few and then one in a hundred.
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.refused += 1;
                    if c.refused <= 5 || c.refused % 100 == 0 {
                        let text = format!("{}: {message}", c.peer);
                        self.actions.push_back(Action::Log { code, text });
                    }
                }
            }
            Input::Closed { conn, reason } => {
                self.end_session(conn, ctx);
                self.conns.remove(&conn);
                self.actions.push_back(Action::Closed { conn, reason });
            }
            Input::Revoked => self.revoked(ctx),
            Input::Session(event) => self.session_event(event, ctx.state),
            Input::Tick => self.watchdog(ctx),
        }
    }

    /// After a batch of inputs: an observer takes over a controller that left, if the arm is
    /// still free.
    pub fn end_batch(&mut self, ctx: &mut Ctx<'_>) {
        self.promote_observer(ctx);
    }

    fn session_opened(
        &mut self,
        conn: u64,
        session_id: String,
        request: Option<RoleRequest>,
        ctx: &mut Ctx<'_>,
    ) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let label = format!("{} (session {session_id})", c.peer);
        // Without a request the first session controls (revA clients know no roles).
        let wants_arm = request != Some(RoleRequest::Observer);
        c.role = if wants_arm && self.controller.is_none() && ctx.arm.claim(conn, &label).is_some()
        {
            self.controller = Some(conn);
            SessionRole::Controller
        } else {
            SessionRole::Observer
        };
        c.session_id = Some(session_id);
        c.last_heartbeat = ctx.now;
        c.session_since = ctx.now;
        c.timed_out_at = None;
        // A new session starts not started (revA: CONNECTED comes with IDLE), whatever the
        // previous controller left running.
        c.started = false;
        c.no_promote = false;
        c.watch_only = request == Some(RoleRequest::Observer);
        let (peer, role) = (c.peer, c.role);
        if self.controller == Some(conn) {
            self.actions.push_back(Action::NewController);
        }
        self.actions.push_back(Action::Announce {
            conn,
            text: format!("{peer} as {}", role.as_str()),
        });
        let mut ext = Map::new();
        ext.insert("role".into(), json!(role.as_str()));
        ext.insert("controller".into(), json!(ctx.arm.describe()));
        ext.extend(self.config.connected_ext.clone());
        self.event(conn, "CONNECTED", ctx.state, ext);
        if request == Some(RoleRequest::Controller) && role == SessionRole::Observer {
            let message = format!("the arm is held by {}; you observe", ctx.arm.describe());
            self.role_alert(
                conn,
                ctx.state,
                "CONTROL_BUSY",
                &message,
                SessionRole::Observer,
            );
        }
    }

    fn command(
        &mut self,
        conn: u64,
        command: UiCommand,
        request: Option<RoleRequest>,
        ctx: &mut Ctx<'_>,
    ) {
        if !self.conns.contains_key(&conn) {
            return;
        }
        // The role asked for first, so a START that asks for control starts as the controller.
        match (command, request) {
            (UiCommand::RequestControl, _) => {
                return self.request_role(conn, RoleRequest::Controller, ctx);
            }
            (UiCommand::ReleaseControl, _) => {
                return self.request_role(conn, RoleRequest::Observer, ctx);
            }
            (UiCommand::Connect | UiCommand::Disconnect, _) | (_, None) => {}
            (_, Some(role)) => self.request_role(conn, role, ctx),
        }
        let Some(c) = self.conns.get(&conn) else {
            return;
        };
        let state = ctx.state;
        if command == UiCommand::Disconnect {
            let peer = c.peer;
            self.event(conn, "DISCONNECTED", state, Map::new());
            self.actions.push_back(Action::EndSession(conn));
            self.actions
                .push_back(Action::Note(format!("{peer} ended its session")));
            self.end_session(conn, ctx);
            return;
        }
        if c.role != SessionRole::Controller {
            let message = format!(
                "observers cannot {command:?}; the arm is controlled by {}",
                ctx.arm.describe()
            );
            self.alert(conn, state, "NOT_CONTROLLER", &message);
            return;
        }
        if let Some(control) = command.dataset_control() {
            self.actions.push_back(Action::Dataset { conn, control });
            return;
        }
        // A command that changes nothing still gets its answer, so a client never waits.
        let (wanted, event) = match command {
            UiCommand::Start => (SessionCommand::Start, "STARTED"),
            UiCommand::Pause => (SessionCommand::Pause, "PAUSED"),
            UiCommand::Reset => (SessionCommand::Reset, "RESET_DONE"),
            UiCommand::Connect
            | UiCommand::Disconnect
            | UiCommand::RequestControl
            | UiCommand::ReleaseControl
            | UiCommand::LerobotEndEpisode
            | UiCommand::LerobotRerecord
            | UiCommand::LerobotStop => return,
        };
        let started = c.started;
        if command == UiCommand::Start && state == SessionState::Error {
            self.alert(
                conn,
                state,
                "SIM_ERROR",
                "the simulation is in ERROR; RESET first",
            );
            return;
        }
        match command {
            UiCommand::Start => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.started = true;
                }
            }
            UiCommand::Reset => {
                // RESET_DONE -> IDLE: every session needs START again. Done here, not when
                // RESET_DONE comes back, so a START later in this batch stands.
                self.own_resets += 1;
                self.conns.values_mut().for_each(|c| c.started = false);
            }
            _ => {}
        }
        let unchanged = matches!(
            (command, state),
            (UiCommand::Start, SessionState::Running) | (UiCommand::Pause, SessionState::Paused)
        );
        if unchanged {
            self.event(conn, event, state, Map::new());
        } else {
            self.actions.push_back(Action::Session(wanted));
            // It takes effect in `SessionSystems`, after this batch; the authority says what
            // it will do, so one connection's messages act in order: a control frame right
            // after START is applied, one right after PAUSE or RESET is not.
            ctx.state = transition(state, wanted).to;
            // PAUSED reaches only started sessions (`session_event`): a controller that pauses
            // before its own START is answered here (and told IDLE, as it has not started).
            if command == UiCommand::Pause && !started {
                self.event(conn, event, ctx.state, Map::new());
            }
        }
    }

    fn control(&mut self, conn: u64, seq: u64, frame: ControlFrame, ctx: &mut Ctx<'_>) {
        let state = ctx.state;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let refusal = if c.role != SessionRole::Controller {
            Some((
                "NOT_CONTROLLER",
                "observers cannot send control frames".to_string(),
            ))
        } else if !c.started {
            Some((
                "CONTROL_IGNORED",
                "control frames apply only after this session sends START".to_string(),
            ))
        } else if state != SessionState::Running {
            Some((
                "CONTROL_IGNORED",
                format!(
                    "control frames apply only in RUNNING (now {})",
                    state.as_str()
                ),
            ))
        } else {
            None
        };
        match refusal {
            None => self.actions.push_back(Action::Apply { seq, frame }),
            Some((code, message)) => {
                // Once a second is enough to tell a 60 Hz stream why it is ignored.
                let due = c
                    .last_ignored_alert
                    .is_none_or(|t| ctx.now.saturating_duration_since(t) >= Duration::from_secs(1));
                if due {
                    c.last_ignored_alert = Some(ctx.now);
                    self.alert(conn, state, code, &message);
                }
            }
        }
    }

    /// Tells every session about a change of the global session, whoever caused it.
    fn session_event(&mut self, event: SessionEvent, state: SessionState) {
        let name = match event {
            SessionEvent::Started => "STARTED",
            SessionEvent::Paused => "PAUSED",
            SessionEvent::ResetDone => "RESET_DONE",
            SessionEvent::Errored => "ERROR",
        };
        // Following restarts from where the arm is after any change of state.
        self.actions.push_back(Action::Disengage { hold: false });
        if event == SessionEvent::ResetDone {
            self.actions.push_back(Action::ForgetControl);
            // A reset from elsewhere (panel, monitor) also ends every session's START; this
            // machine's own RESETs did that when they were sent.
            if self.own_resets > 0 {
                self.own_resets -= 1;
            } else {
                self.conns.values_mut().for_each(|c| c.started = false);
            }
        }
        let ids: Vec<u64> = self
            .sessions()
            // A session that has not sent START (every observer, a controller before its START)
            // stays IDLE whoever starts or pauses the simulation: not its STARTED or PAUSED.
            .filter(|(_, c)| {
                c.started || !matches!(event, SessionEvent::Started | SessionEvent::Paused)
            })
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            self.event(id, name, state, Map::new());
        }
    }
}

mod handover;
#[cfg(test)]
mod tests;
