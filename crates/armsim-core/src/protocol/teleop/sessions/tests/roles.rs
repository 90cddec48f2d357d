//! Unit tests of the roles a client asks for (`extensions.role`, `REQUEST_CONTROL`,
//! `RELEASE_CONTROL`) and of what a session that has not sent its own START is told (IDLE,
//! whatever happened before).

use super::*;

/// The `extensions.role` of the ALERT with `code` sent to `conn`.
fn alert_role(actions: &[Action], conn: u64, code: &str) -> Option<String> {
    actions.iter().find_map(|a| match a {
        Action::Send { conn: c, event }
            if *c == conn
                && event.event == "ALERT"
                && event.extensions["alert"]["code"] == code =>
        {
            Some(event.extensions["role"].as_str()?.to_string())
        }
        _ => None,
    })
}

/// The message of the ALERT with `code` sent to `conn`.
fn alert_message(actions: &[Action], conn: u64, code: &str) -> String {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Send { conn: c, event }
                if *c == conn
                    && event.event == "ALERT"
                    && event.extensions["alert"]["code"] == code =>
            {
                event.extensions["alert"]["message"]
                    .as_str()
                    .map(str::to_string)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {code} for {conn} in {actions:?}"))
}

#[test]
fn a_session_that_only_watches_never_holds_the_arm() {
    let mut r = Rig::new();
    let a = r.connect_as(1, Some(RoleRequest::Observer));
    assert_eq!(r.role(1), SessionRole::Observer);
    assert!(r.m.conn(1).unwrap().watch_only);
    assert_eq!(r.owner_key(), None, "a watcher took the arm");
    assert!(!a.iter().any(|a| matches!(a, Action::NewController)));
    // A native client after it still gets the free arm, as the first session would.
    r.connect(2);
    assert_eq!(r.role(2), SessionRole::Controller);
    // When that controller leaves, the watcher is not handed the arm.
    let a = r.handle(Input::Closed {
        conn: 2,
        reason: "eof".into(),
    });
    assert!(sent(&a, 1).is_empty(), "{a:?}");
    assert_eq!(r.m.controller(), None);
    assert_eq!(r.owner_key(), None);
    r.handle(Input::Tick);
    assert_eq!(r.role(1), SessionRole::Observer);
}

#[test]
fn asking_for_control_takes_a_free_arm_and_a_busy_one_is_named() {
    let mut r = Rig::new();
    r.connect_as(1, Some(RoleRequest::Observer));
    r.connect_as(2, Some(RoleRequest::Observer));
    let a = r.command(1, UiCommand::RequestControl);
    assert_eq!(
        alert_role(&a, 1, "CONTROL_TAKEN").as_deref(),
        Some("controller")
    );
    assert!(a.iter().any(|a| matches!(a, Action::NewController)));
    assert_eq!(r.m.controller(), Some(1));
    assert_eq!(r.owner_key(), Some((Side::Teleop, 1)));
    assert!(
        !r.m.conn(1).unwrap().started,
        "it moves the arm after its START"
    );
    // The other one is told who has it, keeps observing, and nothing else changes.
    let a = r.command(2, UiCommand::RequestControl);
    assert_eq!(
        alert_role(&a, 2, "CONTROL_BUSY").as_deref(),
        Some("observer")
    );
    assert!(alert_message(&a, 2, "CONTROL_BUSY").contains("127.0.0.1:40001"));
    assert!(
        !a.iter()
            .any(|a| matches!(a, Action::NewController | Action::Hold))
    );
    assert_eq!(r.m.controller(), Some(1));
    // Asking again is answered too.
    let a = r.command(1, UiCommand::RequestControl);
    assert_eq!(
        alert_role(&a, 1, "CONTROL_TAKEN").as_deref(),
        Some("controller")
    );
    // Releasing it: the arm holds and is free. The refused one still only watches (a refused
    // request changes nothing): not promoted, it asks again.
    let a = r.command(1, UiCommand::ReleaseControl);
    assert_eq!(
        alert_role(&a, 1, "CONTROL_RELEASED").as_deref(),
        Some("observer")
    );
    assert!(a.iter().any(|a| matches!(a, Action::Hold)));
    assert!(sent(&a, 2).is_empty(), "{a:?}");
    assert_eq!(r.m.controller(), None);
    assert_eq!(r.owner_key(), None);
    assert_eq!(r.role(1), SessionRole::Observer);
    assert!(r.m.conn(1).unwrap().watch_only);
    let a = r.command(2, UiCommand::RequestControl);
    assert_eq!(
        alert_role(&a, 2, "CONTROL_TAKEN").as_deref(),
        Some("controller")
    );
    // A native observer (no request) that is connected when a controller releases the arm is
    // promoted, as when a controller leaves.
    r.connect(3);
    let a = r.command(2, UiCommand::ReleaseControl);
    assert_eq!(alert_role(&a, 3, "PROMOTED").as_deref(), Some("controller"));
    assert_eq!(r.m.controller(), Some(3));
}

#[test]
fn connect_may_ask_for_control_and_is_told_when_the_arm_is_busy() {
    let mut r = Rig::new();
    r.connect_as(1, Some(RoleRequest::Controller));
    assert_eq!(r.role(1), SessionRole::Controller);
    let a = r.connect_as(2, Some(RoleRequest::Controller));
    assert_eq!(r.role(2), SessionRole::Observer);
    let events = sent(&a, 2);
    assert_eq!(events[0].0, "CONNECTED");
    assert_eq!(events[1], ("ALERT", "IDLE", Some("CONTROL_BUSY".into())));
    assert!(!r.m.conn(2).unwrap().watch_only, "it wants the arm");
    // An agent holds the arm: a teleop request is refused and names it.
    let mut r = Rig::new();
    assert!(r.arm.claim((Side::Agent, 9), "teamA 1").is_some());
    r.connect(1);
    assert_eq!(r.role(1), SessionRole::Observer);
    let a = r.command(1, UiCommand::RequestControl);
    assert!(alert_message(&a, 1, "CONTROL_BUSY").contains("agent teamA 1"));
    assert_eq!(r.owner_key(), Some((Side::Agent, 9)));
}

#[test]
fn start_asking_for_control_takes_the_arm_then_starts() {
    let mut r = Rig::new();
    r.connect_as(1, Some(RoleRequest::Observer));
    let a = r.command_as(1, UiCommand::Start, Some(RoleRequest::Controller));
    assert_eq!(
        alert_role(&a, 1, "CONTROL_TAKEN").as_deref(),
        Some("controller")
    );
    assert!(
        a.iter()
            .any(|a| matches!(a, Action::Session(SessionCommand::Start)))
    );
    assert_eq!(r.state, SessionState::Running);
    let a = r.handle(Input::Control {
        conn: 1,
        seq: 1,
        frame: frame(),
    });
    assert_eq!(applied(&a), 1);
    // A START asking to observe gives the arm up first: refused as an observer's.
    let a = r.command_as(1, UiCommand::Start, Some(RoleRequest::Observer));
    assert_eq!(
        sent(&a, 1).last().unwrap().2.as_deref(),
        Some("NOT_CONTROLLER")
    );
    assert_eq!(r.m.controller(), None);
}

#[test]
fn a_revoked_session_cannot_take_the_arm_back_by_asking() {
    let mut r = Rig::new();
    r.connect(1);
    assert!(r.revoke_noticed());
    let a = r.handle(Input::Revoked);
    assert_eq!(alert_role(&a, 1, "REVOKED").as_deref(), Some("observer"));
    let a = r.command(1, UiCommand::RequestControl);
    assert_eq!(alert_role(&a, 1, "REVOKED").as_deref(), Some("observer"));
    assert_eq!(r.owner_key(), None);
}

/// As reported with revA clients: a controller STARTs while an observer is
/// connected, its socket closes while RUNNING, and a new session is then told RUNNING in its
/// CONNECTED and DISCONNECTED. Every session without its own START must be told IDLE.
#[test]
fn a_session_without_its_own_start_is_told_idle_whatever_happened_before() {
    let mut r = Rig::new();
    r.connect(1);
    r.connect(2);
    r.command(1, UiCommand::Start);
    assert_eq!(r.state, SessionState::Running);
    // The observer has no START of its own: IDLE, before and after the controller leaves.
    assert_eq!(view(r.m.conn(2).unwrap(), r.state), SessionState::Idle);
    assert_eq!(view(r.m.conn(1).unwrap(), r.state), SessionState::Running);
    r.handle(Input::Closed {
        conn: 1,
        reason: "eof".into(),
    });
    assert_eq!(r.m.controller(), Some(2), "the observer is promoted");
    assert_eq!(view(r.m.conn(2).unwrap(), r.state), SessionState::Idle);
    // A new session while the simulation runs on: IDLE in CONNECTED and DISCONNECTED.
    let a = r.connect(3);
    assert_eq!(sent(&a, 3), [("CONNECTED", "IDLE", None)]);
    assert_eq!(view(r.m.conn(3).unwrap(), r.state), SessionState::Idle);
    let a = r.command(3, UiCommand::Disconnect);
    assert_eq!(sent(&a, 3), [("DISCONNECTED", "IDLE", None)]);
    // The same while paused.
    r.state = SessionState::Paused;
    let a = r.connect(4);
    assert_eq!(sent(&a, 4), [("CONNECTED", "IDLE", None)]);
    // A controller that pauses before its own START is answered, and stays IDLE.
    r.state = SessionState::Running;
    let a = r.command(2, UiCommand::Pause);
    assert_eq!(sent(&a, 2), [("PAUSED", "IDLE", None)]);
    assert_eq!(r.state, SessionState::Paused);
    // After its START it sees the simulation as it is.
    r.command(2, UiCommand::Start);
    assert_eq!(view(r.m.conn(2).unwrap(), r.state), SessionState::Running);
}
