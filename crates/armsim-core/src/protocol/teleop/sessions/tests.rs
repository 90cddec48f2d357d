//! Unit tests of the teleop sessions machine: roles, START, the batch's predicted state, the
//! heartbeat watchdog and the hand-over, with no sockets, no Bevy and a hand-driven clock. The
//! roles clients ask for and what a session that has not started is told are in `roles.rs`.

use super::*;
use crate::session::rig::{self, Side};

const HB: Duration = Duration::from_millis(500);
const GRACE: Duration = Duration::from_secs(2);

/// The sessions machine in the shared rig (see [`rig`]): the arm it claims,
/// and a clock.
type Rig = rig::Rig<Sessions>;

impl Rig {
    fn new() -> Self {
        let mut ext = Map::new();
        ext.insert("scene_id".into(), json!("s"));
        let m = Sessions::new(SessionsConfig {
            heartbeat_timeout: HB,
            controller_grace: GRACE,
            connected_ext: ext,
        });
        Self::of(m, Side::Teleop)
    }

    /// Handles `input` and returns the actions it asked for.
    fn handle(&mut self, input: Input) -> Vec<Action> {
        self.call(|m, ctx| {
            m.handle(input, ctx);
            m.end_batch(ctx);
        });
        std::iter::from_fn(|| self.m.poll()).collect()
    }

    fn connect(&mut self, conn: u64) -> Vec<Action> {
        self.connect_as(conn, None)
    }

    /// CONNECT asking for `role` (`extensions.role`).
    fn connect_as(&mut self, conn: u64, role: Option<RoleRequest>) -> Vec<Action> {
        let peer = SocketAddr::from(([127, 0, 0, 1], 40000 + conn as u16));
        self.handle(Input::Opened { conn, peer });
        self.handle(Input::SessionOpened {
            conn,
            session_id: format!("s{conn}"),
            role,
        })
    }

    fn command(&mut self, conn: u64, command: UiCommand) -> Vec<Action> {
        self.command_as(conn, command, None)
    }

    /// A command asking for `role` (`extensions.role`).
    fn command_as(
        &mut self,
        conn: u64,
        command: UiCommand,
        role: Option<RoleRequest>,
    ) -> Vec<Action> {
        self.handle(Input::Command {
            conn,
            command,
            role,
        })
    }

    fn role(&self, conn: u64) -> SessionRole {
        self.m.conn(conn).expect("a connection").role
    }
}

fn frame() -> ControlFrame {
    serde_json::from_value(json!({
        "frame_id": "vp_operator_anchor",
        "left_target_pos_m": [0.3, 0.0, 0.3],
        "left_grip": {"mode": "binary", "value": 0},
        "clutch_enabled": true
    }))
    .expect("a control frame")
}

/// The events sent to `conn`: (event name, sim_state, alert code if any).
fn sent(actions: &[Action], conn: u64) -> Vec<(&'static str, &'static str, Option<String>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { conn: c, event } if *c == conn => Some((
                event.event,
                event.sim_state,
                event
                    .extensions
                    .get("alert")
                    .and_then(|a| a.get("code"))
                    .and_then(|c| c.as_str())
                    .map(str::to_string),
            )),
            _ => None,
        })
        .collect()
}

fn applied(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Apply { .. }))
        .count()
}

#[test]
fn first_session_controls_and_the_next_observes() {
    let mut r = Rig::new();
    let a = r.connect(1);
    assert_eq!(r.role(1), SessionRole::Controller);
    assert_eq!(r.m.controller(), Some(1));
    assert!(matches!(a[0], Action::NewController));
    let connected = a.iter().find_map(|a| match a {
        Action::Send { event, .. } if event.event == "CONNECTED" => Some(event.clone()),
        _ => None,
    });
    let connected = connected.expect("CONNECTED");
    assert_eq!(connected.extensions["role"], "controller");
    assert_eq!(connected.extensions["scene_id"], "s");
    assert_eq!(connected.session_id, "s1");
    r.connect(2);
    assert_eq!(r.role(2), SessionRole::Observer);
    assert_eq!(r.owner_key(), Some((Side::Teleop, 1)));
}

#[test]
fn frames_apply_only_after_this_sessions_start_and_in_order_within_a_batch() {
    let mut r = Rig::new();
    r.connect(1);
    // The panel runs the simulation: the controller without START still sees IDLE.
    r.state = SessionState::Running;
    assert_eq!(r.m.controlling(), None);
    let a = r.handle(Input::Control {
        conn: 1,
        seq: 1,
        frame: frame(),
    });
    assert_eq!(applied(&a), 0);
    assert_eq!(
        sent(&a, 1),
        [("ALERT", "IDLE", Some("CONTROL_IGNORED".into()))]
    );
    // START from IDLE: a session command, and the frame right after it applies.
    r.state = SessionState::Idle;
    let a = r.command(1, UiCommand::Start);
    assert!(matches!(a[..], [Action::Session(SessionCommand::Start)]));
    assert_eq!(r.state, SessionState::Running);
    let a = r.handle(Input::Control {
        conn: 1,
        seq: 2,
        frame: frame(),
    });
    assert_eq!(applied(&a), 1);
    assert_eq!(r.m.controlling(), Some(1));
    // PAUSE: the next frame in the same batch is refused.
    r.command(1, UiCommand::Pause);
    assert_eq!(r.state, SessionState::Paused);
    let a = r.handle(Input::Control {
        conn: 1,
        seq: 3,
        frame: frame(),
    });
    assert_eq!(applied(&a), 0);
}

#[test]
fn ignored_frames_are_explained_once_a_second() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    let mut alerts = 0;
    for i in 0..10 {
        let a = r.handle(Input::Control {
            conn: 2,
            seq: i,
            frame: frame(),
        });
        alerts += sent(&a, 2).len();
        r.now += Duration::from_millis(150);
    }
    assert_eq!(alerts, 2, "one alert per second of frames");
}

#[test]
fn observers_cannot_command_and_an_unchanged_command_is_answered() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    let a = r.command(2, UiCommand::Start);
    assert_eq!(
        sent(&a, 2),
        [("ALERT", "IDLE", Some("NOT_CONTROLLER".into()))]
    );
    assert!(!a.iter().any(|a| matches!(a, Action::Session(_))));
    // Paused (by the panel) after this controller's START: its PAUSE is answered at once.
    r.command(1, UiCommand::Start);
    r.state = SessionState::Paused;
    let a = r.command(1, UiCommand::Pause);
    assert_eq!(sent(&a, 1), [("PAUSED", "PAUSED", None)]);
    r.state = SessionState::Error;
    let a = r.command(1, UiCommand::Start);
    assert_eq!(sent(&a, 1), [("ALERT", "ERROR", Some("SIM_ERROR".into()))]);
}

#[test]
fn a_reset_from_elsewhere_ends_every_start_but_our_own_is_counted_once() {
    let mut r = Rig::new();
    r.connect(1);
    r.command(1, UiCommand::Start);
    assert!(r.m.conn(1).unwrap().started);
    // Our RESET already cleared START; a START after it in the same batch stands.
    r.command(1, UiCommand::Reset);
    assert!(!r.m.conn(1).unwrap().started);
    r.command(1, UiCommand::Start);
    r.state = SessionState::Running;
    r.handle(Input::Session(SessionEvent::ResetDone));
    assert!(r.m.conn(1).unwrap().started, "our own reset's RESET_DONE");
    // A reset from the panel: START is needed again.
    let a = r.handle(Input::Session(SessionEvent::ResetDone));
    assert!(!r.m.conn(1).unwrap().started);
    assert!(a.iter().any(|a| matches!(a, Action::ForgetControl)));
}

#[test]
fn started_and_paused_reach_only_sessions_that_sent_their_own_start() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    r.state = SessionState::Running;
    let a = r.handle(Input::Session(SessionEvent::Started));
    assert!(sent(&a, 1).is_empty(), "controller without START");
    assert!(
        sent(&a, 2).is_empty(),
        "an observer has no START of its own"
    );
    r.command(1, UiCommand::Start);
    let a = r.handle(Input::Session(SessionEvent::Started));
    assert_eq!(sent(&a, 1), [("STARTED", "RUNNING", None)]);
    r.state = SessionState::Paused;
    let a = r.handle(Input::Session(SessionEvent::Paused));
    assert_eq!(sent(&a, 1), [("PAUSED", "PAUSED", None)]);
    assert!(sent(&a, 2).is_empty());
    // A reset and an error reach everyone.
    r.state = SessionState::Error;
    let a = r.handle(Input::Session(SessionEvent::Errored));
    assert_eq!(sent(&a, 2), [("ERROR", "ERROR", None)]);
}

#[test]
fn a_leaving_controller_hands_the_arm_to_the_longest_connected_observer() {
    let mut r = Rig::new();
    r.connect(1);
    r.now += Duration::from_millis(10);
    r.connect(3);
    r.now += Duration::from_millis(10);
    r.connect(2);
    let a = r.handle(Input::Closed {
        conn: 1,
        reason: "eof".into(),
    });
    assert!(a.iter().any(|a| matches!(a, Action::Hold)));
    assert!(
        a.iter()
            .any(|a| matches!(a, Action::Closed { conn: 1, .. }))
    );
    assert_eq!(r.m.controller(), Some(3));
    assert_eq!(sent(&a, 3), [("ALERT", "IDLE", Some("PROMOTED".into()))]);
    assert_eq!(r.owner_key(), Some((Side::Teleop, 3)));
    assert!(r.m.conn(1).is_none());
}

#[test]
fn no_promotion_when_another_protocol_took_the_arm_or_after_a_revoke() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    // Between the DISCONNECT and the end of the batch an agent takes the arm.
    let disconnect = Input::Command {
        conn: 1,
        command: UiCommand::Disconnect,
        role: None,
    };
    r.call(|m, ctx| m.handle(disconnect, ctx));
    assert!(r.arm.claim((Side::Agent, 9), "agent").is_some());
    r.handle(Input::Tick);
    assert_eq!(r.m.controller(), None);
    assert_eq!(r.role(2), SessionRole::Observer);

    // A revoke demotes and promotes nobody, now or later.
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    assert!(r.revoke_noticed());
    let a = r.handle(Input::Revoked);
    assert_eq!(sent(&a, 1), [("ALERT", "IDLE", Some("REVOKED".into()))]);
    r.handle(Input::Tick);
    assert_eq!(r.m.controller(), None);
    assert_eq!(r.role(1), SessionRole::Observer);
    assert_eq!(r.role(2), SessionRole::Observer);
}

#[test]
fn heartbeat_loss_holds_then_demotes_after_the_grace_and_promotes() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    r.now += HB / 2;
    r.handle(Input::Heartbeat { conn: 2 });
    r.now += HB / 2 + Duration::from_millis(1);
    let a = r.handle(Input::Tick);
    assert!(r.m.net_timeout());
    assert!(
        a.iter()
            .any(|a| matches!(a, Action::Disengage { hold: true }))
    );
    assert_eq!(sent(&a, 1), [("ALERT", "IDLE", Some("NET_TIMEOUT".into()))]);
    assert!(sent(&a, 2).is_empty(), "the observer's heartbeat is live");
    // Not again on the next tick.
    assert!(sent(&r.handle(Input::Tick), 1).is_empty());
    r.handle(Input::Heartbeat { conn: 2 });
    r.now += GRACE;
    r.handle(Input::Heartbeat { conn: 2 });
    let a = r.handle(Input::Tick);
    assert_eq!(sent(&a, 1), [("ALERT", "IDLE", Some("DEMOTED".into()))]);
    assert_eq!(r.m.controller(), Some(2));
    assert_eq!(r.role(1), SessionRole::Observer);
}

#[test]
fn heartbeats_back_restore_the_session() {
    let mut r = Rig::new();
    r.connect(1);
    r.now += HB + Duration::from_millis(1);
    r.handle(Input::Tick);
    assert!(r.m.net_timeout());
    let a = r.handle(Input::Heartbeat { conn: 1 });
    assert!(!r.m.net_timeout());
    assert_eq!(
        sent(&a, 1),
        [("ALERT", "IDLE", Some("NET_RESTORED".into()))]
    );
}

#[test]
fn refusals_are_logged_at_first_then_one_in_a_hundred() {
    let mut r = Rig::new();
    r.connect(1);
    let mut logged = 0;
    for _ in 0..200 {
        let a = r.handle(Input::Refused {
            conn: 1,
            code: "BAD_JSON",
            message: "x".into(),
        });
        logged += a
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    Action::Log {
                        code: "BAD_JSON",
                        ..
                    }
                )
            })
            .count();
    }
    assert_eq!(logged, 5 + 2);
}

#[test]
fn inputs_for_unknown_connections_do_nothing() {
    let mut r = Rig::new();
    for input in [
        Input::SessionOpened {
            conn: 7,
            session_id: "x".into(),
            role: Some(RoleRequest::Controller),
        },
        Input::Command {
            conn: 7,
            command: UiCommand::Start,
            role: None,
        },
        Input::Command {
            conn: 7,
            command: UiCommand::RequestControl,
            role: None,
        },
        Input::Control {
            conn: 7,
            seq: 1,
            frame: frame(),
        },
        Input::Heartbeat { conn: 7 },
        Input::Revoked,
    ] {
        let a = r.handle(input);
        assert!(a.is_empty(), "{a:?}");
    }
    assert_eq!(r.owner_key(), None);
}

#[test]
fn a_session_sees_idle_until_its_own_start() {
    let mut r = Rig::new();
    r.connect(1);
    let c = r.m.conn(1).unwrap();
    assert_eq!(view(c, SessionState::Running), SessionState::Idle);
    assert_eq!(view(c, SessionState::Paused), SessionState::Idle);
    assert_eq!(view(c, SessionState::Error), SessionState::Error);
    r.command(1, UiCommand::Start);
    let c = r.m.conn(1).unwrap();
    assert_eq!(view(c, SessionState::Running), SessionState::Running);
    assert_eq!(view(c, SessionState::Paused), SessionState::Paused);
}

mod roles;
