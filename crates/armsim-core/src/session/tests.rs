//! The authority on its own: every state against every command, and the arm's ownership through
//! claims, losses, revokes and kicks. No socket, no app, no clock.

use super::*;
use SessionCommand::*;
use SessionState::*;

const STATES: [SessionState; 4] = [Idle, Running, Paused, Error];

fn to(state: SessionState, command: SessionCommand) -> SessionState {
    transition(state, command).to
}

#[test]
fn start_runs_every_state_but_error() {
    assert_eq!(to(Idle, Start), Running);
    assert_eq!(to(Paused, Start), Running);
    assert_eq!(to(Running, Start), Running);
    assert_eq!(to(Error, Start), Error);
}

#[test]
fn start_on_claim_starts_only_an_idle_session() {
    assert_eq!(to(Idle, StartOnClaim), Running);
    // The panel's pause wins over a client's arrival; an error needs a reset.
    assert_eq!(to(Paused, StartOnClaim), Paused);
    assert_eq!(to(Error, StartOnClaim), Error);
    assert_eq!(to(Running, StartOnClaim), Running);
}

#[test]
fn pause_latches_the_hold_only_when_the_arm_was_controlled() {
    let t = transition(Running, Pause);
    assert_eq!((t.to, t.latch_hold), (Paused, true));
    let t = transition(Idle, Pause);
    assert_eq!((t.to, t.latch_hold), (Paused, false));
    for s in [Paused, Error] {
        let t = transition(s, Pause);
        assert_eq!((t.to, t.latch_hold, t.changed()), (s, false, false));
    }
}

#[test]
fn toggle_pauses_a_running_session_and_starts_the_others() {
    assert_eq!(to(Running, TogglePause), Paused);
    assert!(transition(Running, TogglePause).latch_hold);
    assert_eq!(to(Paused, TogglePause), Running);
    assert_eq!(to(Idle, TogglePause), Running);
    assert_eq!(to(Error, TogglePause), Error);
}

#[test]
fn steps_run_only_from_a_paused_session() {
    for s in [Idle, Running, Paused] {
        let t = transition(s, Step(3));
        assert_eq!((t.to, t.steps), (Paused, 3), "from {s:?}");
        assert_eq!(t.latch_hold, s == Running);
    }
    let t = transition(Error, Step(3));
    assert_eq!((t.to, t.steps), (Error, 0));
}

#[test]
fn reset_restores_every_state_to_idle() {
    for s in STATES {
        let t = transition(s, Reset);
        assert_eq!(
            (t.to, t.reset, t.steps, t.latch_hold),
            (Idle, true, 0, false)
        );
    }
    // Only a reset has the reset effect, and only a reset leaves ERROR.
    for s in STATES {
        for c in [Start, StartOnClaim, Pause, Step(1), TogglePause] {
            let t = transition(s, c);
            assert!(!t.reset, "{s:?} {c:?}");
            assert_eq!(s == Error, t.to == Error, "{s:?} {c:?}");
        }
    }
}

#[test]
fn a_claim_is_first_come_and_starts_the_session() {
    let mut arm = ArmOwner::<u32>::default();
    assert!(arm.is_free());
    let claimed = arm.claim(1, "a").expect("free arm");
    assert_eq!(claimed.then, StartOnClaim);
    assert_eq!(to(Idle, claimed.then), Running);
    assert_eq!(arm.claim(2, "b"), None);
    assert_eq!(arm.claim(1, "a"), None, "one claim per owner");
    assert_eq!(arm.owner(), Some((1, "a")));
    assert_eq!(arm.release(2), None, "only the owner releases");
    assert_eq!(arm.release(1), Some(Released));
    assert!(arm.is_free());
    assert!(arm.claim(2, "b").is_some());
}

#[test]
fn a_revoke_is_noticed_once_by_the_owners_side() {
    let mut arm = ArmOwner::<(char, u32)>::default();
    assert_eq!(arm.revoke(), None, "nothing to revoke");
    arm.claim(('t', 1), "headset").unwrap();
    assert_eq!(arm.revoke(), Some((('t', 1), "headset".to_string())));
    assert!(arm.is_free());
    assert_eq!(arm.take_revoked(|k| k.0 == 'a'), None, "not the agents'");
    assert_eq!(arm.take_revoked(|k| k.0 == 't'), Some(('t', 1)));
    assert_eq!(arm.take_revoked(|k| k.0 == 't'), None, "once");
}

#[test]
fn kicks_are_drained_by_their_side_once_and_lapse_when_the_connection_closes() {
    let mut arm = ArmOwner::<(char, u32)>::default();
    arm.kick(('t', 1));
    arm.kick(('t', 1));
    arm.kick(('a', 1));
    arm.kick(('t', 2));
    assert_eq!(arm.take_kicks(|k| k.0 == 't'), vec![('t', 1), ('t', 2)]);
    assert!(arm.take_kicks(|k| k.0 == 't').is_empty());
    arm.claim(('a', 1), "agent").unwrap();
    assert_eq!(
        arm.forget(('a', 1)),
        Some(Released),
        "a closed owner is lost"
    );
    assert!(arm.take_kicks(|k| k.0 == 'a').is_empty(), "the kick lapsed");
    assert!(arm.is_free());
}

#[test]
fn a_revoked_connection_that_closes_is_not_noticed_later() {
    let mut arm = ArmOwner::<u32>::default();
    arm.claim(1, "a").unwrap();
    arm.revoke();
    assert_eq!(arm.forget(1), None, "it no longer had the arm");
    // A later owner on the same side is not demoted by the stale revoke.
    arm.claim(2, "b").unwrap();
    assert_eq!(arm.take_revoked(|_| true), None);
    assert_eq!(arm.owner(), Some((2, "b")));
}
