//! Unit tests of the agents machine: inits and claims (with the claim grace), the init timeout,
//! sync-mode accounting and the silent-agent drop, with no sockets, no Bevy and a hand-driven
//! clock.

use super::*;
use crate::protocol::sexp::parse_all;
use crate::session::rig::{self, Side};

/// The S-expressions of one message.
fn exprs(text: &str) -> Vec<Sexp> {
    parse_all(text.as_bytes())
        .collect::<Result<_, _>>()
        .expect("S-expressions")
}

const SYNC_TIMEOUT: Duration = Duration::from_secs(5);
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
const GRACE: Duration = Duration::from_secs(1);

/// The agents machine in the shared rig (see [`rig`]).
type Rig = rig::Rig<Agents>;

impl Rig {
    fn new(sync: bool) -> Self {
        let m = Agents::new(AgentsConfig {
            robot: "arm6".into(),
            sync,
            sync_timeout: SYNC_TIMEOUT,
            init_timeout: INIT_TIMEOUT,
            claim_grace: GRACE,
            max_inbox: 4,
        });
        Self::of(m, Side::Agent)
    }

    /// Handles a batch of inputs (then the end of the batch) and returns the actions.
    fn batch(&mut self, inputs: Vec<AgentInput>) -> Vec<AgentAction> {
        self.call(|m, ctx| {
            inputs.into_iter().for_each(|input| m.handle(input, ctx));
            m.end_batch(ctx);
        });
        std::iter::from_fn(|| self.m.poll()).collect()
    }

    fn open(&mut self, conn: u64) -> Vec<AgentAction> {
        let peer = SocketAddr::from(([127, 0, 0, 1], 50000 + conn as u16));
        self.batch(vec![AgentInput::Conn(ConnEvent::Opened {
            conn,
            peer,
            with: (),
        })])
    }

    fn send(&mut self, conn: u64, text: &str) -> Vec<AgentAction> {
        self.batch(vec![msg(conn, text)])
    }
}

fn msg(conn: u64, text: &str) -> AgentInput {
    AgentInput::Conn(ConnEvent::Message {
        conn,
        exprs: exprs(text),
    })
}

/// The connection's end of stream.
fn eof(conn: u64) -> AgentInput {
    AgentInput::Conn(ConnEvent::Closed {
        conn,
        reason: "eof".into(),
    })
}

fn refused(actions: &[AgentAction], conn: u64) -> Option<String> {
    actions.iter().find_map(|a| match a {
        AgentAction::Refuse { conn: c, reason } if *c == conn => Some(reason.clone()),
        _ => None,
    })
}

fn claimed(actions: &[AgentAction]) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        AgentAction::Claimed { conn, .. } => Some(*conn),
        _ => None,
    })
}

#[test]
fn check_init_names_the_robot_team_and_number() {
    let ok = exprs("(init arm6 teamA 1)");
    assert_eq!(
        check_init(&ok, "arm6"),
        Ok(("teamA".to_string(), "1".to_string()))
    );
    for bad in ["(init gripper4 teamA 1)", "(init arm6 teamA)", "(syn)"] {
        assert!(check_init(&exprs(bad), "arm6").is_err(), "{bad}");
    }
    assert!(check_init(&[], "arm6").is_err());
}

#[test]
fn an_init_claims_the_arm_and_starts_an_idle_session() {
    let mut r = Rig::new(false);
    r.open(1);
    let a = r.send(1, "(init arm6 teamA 7)");
    assert_eq!(claimed(&a), Some(1));
    assert_eq!(r.m.active(), Some(1));
    assert_eq!(r.state, SessionState::Running);
    assert_eq!(r.owner_key(), Some((Side::Agent, 1)));
    assert_eq!(
        r.m.conn(1).unwrap().role,
        AgentRole::Controller {
            team: "teamA".into(),
            number: "7".into()
        }
    );
    // A pause from the panel stays a pause.
    let mut r = Rig::new(false);
    r.state = SessionState::Paused;
    r.open(1);
    r.send(1, "(init arm6 teamA 7)");
    assert_eq!(r.state, SessionState::Paused);
}

#[test]
fn a_bad_init_is_refused_and_logged() {
    let mut r = Rig::new(false);
    r.open(1);
    let a = r.send(1, "(hello)");
    assert!(refused(&a, 1).unwrap().contains("(init"));
    assert!(a.iter().any(|a| matches!(
        a,
        AgentAction::Log {
            code: "REFUSED",
            ..
        }
    )));
    assert_eq!(r.m.active(), None);
    assert!(r.arm.is_free());
}

#[test]
fn a_second_init_waits_for_the_grace_then_is_refused() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    r.open(2);
    let a = r.send(2, "(init arm6 b 2)");
    assert!(refused(&a, 2).is_none(), "parked within the grace");
    r.now += GRACE / 2;
    assert!(refused(&r.batch(vec![]), 2).is_none());
    r.now += GRACE;
    let a = r.batch(vec![]);
    let reason = refused(&a, 2).expect("refused after the grace");
    assert!(reason.contains("already controlled by agent"), "{reason}");
    assert_eq!(r.m.active(), Some(1));
}

#[test]
fn an_init_in_the_same_batch_as_the_owners_close_takes_the_arm() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    r.open(2);
    let a = r.batch(vec![msg(2, "(init arm6 b 2)"), eof(1)]);
    assert!(
        a.iter()
            .any(|a| matches!(a, AgentAction::Dropped { conn: 1 }))
    );
    assert!(
        a.iter()
            .any(|a| matches!(a, AgentAction::Closed { conn: 1, .. }))
    );
    assert_eq!(claimed(&a), Some(2));
    assert_eq!(r.m.active(), Some(2));
}

#[test]
fn a_parked_init_takes_the_arm_once_its_owner_is_gone() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    r.open(2);
    r.send(2, "(init arm6 b 2)");
    // Sent while its init waits: queued behind it, applied once it controls.
    r.send(2, "(j1 0 0 1 0 0)");
    r.now += GRACE / 2;
    let a = r.batch(vec![eof(1)]);
    assert_eq!(claimed(&a), Some(2));
    assert_eq!(r.m.conn(2).unwrap().queued(), 1);
    assert_eq!(r.m.take_batch().len(), 1);
}

#[test]
fn a_silent_connection_is_closed_after_the_init_timeout_once() {
    let mut r = Rig::new(false);
    r.open(1);
    r.now += INIT_TIMEOUT - Duration::from_millis(1);
    assert!(refused(&r.batch(vec![]), 1).is_none());
    r.now += Duration::from_millis(1);
    assert!(refused(&r.batch(vec![]), 1).is_some());
    assert!(refused(&r.batch(vec![]), 1).is_none());
}

#[test]
fn effectors_out_of_running_are_warned_once_per_stretch() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    r.state = SessionState::Paused;
    let warns = |a: &[AgentAction]| {
        a.iter()
            .filter(|a| matches!(a, AgentAction::Warn { .. }))
            .count()
    };
    assert_eq!(warns(&r.send(1, "(j1 0 0 1 0 0)")), 1);
    assert_eq!(warns(&r.send(1, "(j1 0 0 1 0 0)")), 0);
    // `(syn)` alone is not an effector.
    r.state = SessionState::Idle;
    assert_eq!(warns(&r.send(1, "(syn)")), 0);
    assert_eq!(warns(&r.send(1, "(j1 0 0 1 0 0)")), 1);
}

#[test]
fn real_time_drops_the_oldest_message_past_the_queue_limit() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    for i in 0..6 {
        r.send(1, &format!("(j1 {i} 0 1 0 0)"));
    }
    assert_eq!(r.m.conn(1).unwrap().queued(), 4);
    let batch = r.m.take_batch();
    assert_eq!(batch.len(), 4);
    assert_eq!(batch[0], exprs("(j1 2 0 1 0 0)"));
    assert_eq!(r.m.conn(1).unwrap().queued(), 0);
}

#[test]
fn sync_mode_takes_one_message_per_perception_and_gates_on_it() {
    let mut r = Rig::new(true);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    // The bridge sends the first perception on the claim.
    r.m.perception_sent(r.now);
    let ready = |a: &[AgentAction]| {
        a.iter()
            .any(|a| matches!(a, AgentAction::Ready { conn: 1 }))
    };
    assert!(!ready(&r.batch(vec![AgentInput::GatePoll])));
    r.send(1, "(syn)");
    assert!(ready(&r.batch(vec![AgentInput::GatePoll])));
    // A session change sent an extra perception: two answers are owed.
    r.m.perception_sent(r.now);
    assert_eq!(r.m.conn(1).unwrap().owed(), 2);
    assert!(!ready(&r.batch(vec![AgentInput::GatePoll])));
    r.send(1, "(syn)");
    assert!(ready(&r.batch(vec![AgentInput::GatePoll])));
    assert_eq!(r.m.take_batch().len(), 2);
    assert_eq!(r.m.conn(1).unwrap().owed(), 0);
}

#[test]
fn sync_mode_drops_an_agent_silent_past_the_timeout_and_frees_the_arm() {
    let mut r = Rig::new(true);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    r.m.perception_sent(r.now);
    r.now += SYNC_TIMEOUT;
    let a = r.batch(vec![AgentInput::GatePoll]);
    assert!(refused(&a, 1).unwrap().contains("no message for 5.0 s"));
    assert!(
        a.iter()
            .any(|a| matches!(a, AgentAction::Dropped { conn: 1 }))
    );
    assert_eq!(r.m.active(), None);
    assert!(r.arm.is_free());
    assert_eq!(r.m.conn(1).unwrap().role, AgentRole::Pending);
}

#[test]
fn sync_mode_drops_an_agent_far_ahead_of_the_cycle() {
    let mut r = Rig::new(true);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    for _ in 0..4 {
        assert!(refused(&r.send(1, "(syn)"), 1).is_none());
    }
    assert!(refused(&r.send(1, "(syn)"), 1).is_some());
}

#[test]
fn a_revoke_drops_the_active_agent_once() {
    let mut r = Rig::new(false);
    r.open(1);
    r.send(1, "(init arm6 a 1)");
    assert!(r.revoke_noticed());
    let a = r.batch(vec![AgentInput::Revoked]);
    assert!(refused(&a, 1).unwrap().contains("revoked"));
    assert!(a.iter().any(|a| matches!(
        a,
        AgentAction::Log {
            code: "REVOKED",
            ..
        }
    )));
    assert_eq!(r.m.active(), None);
    assert!(r.batch(vec![AgentInput::Revoked]).is_empty());
}

#[test]
fn inputs_for_unknown_connections_do_nothing() {
    let mut r = Rig::new(true);
    let a = r.batch(vec![
        msg(9, "(init arm6 a 1)"),
        eof(9),
        AgentInput::GatePoll,
    ]);
    assert!(a.is_empty(), "{a:?}");
    assert!(r.m.take_batch().is_empty());
}
