//! Unit tests of the `simulation_interfaces` machine: every service, every refusal and its
//! result code, STOPPED, the deferred `StepSimulation` replies and what ends them, with no DDS
//! and a hand-made view of the session.

use super::*;
use crate::protocol::ros2::sim_interfaces::{
    GetSimulationStateRequest, GetSimulatorFeaturesRequest, SetSimulationStateRequest,
    StepSimulationRequest,
};

type Machine = Services<u32>;

const OK: u8 = R::RESULT_OK;
const FAILED: u8 = R::RESULT_OPERATION_FAILED;
const UNSUPPORTED: u8 = R::RESULT_FEATURE_UNSUPPORTED;

fn view(state: SessionState) -> SessionView {
    SessionView {
        state,
        error: (state == SessionState::Error).then(|| "physics went NaN".to_string()),
        steps: 100,
        episode: 3,
        pending_steps: 0,
    }
}

fn drain(m: &mut Machine) -> Vec<Action<u32>> {
    std::iter::from_fn(|| m.poll()).collect()
}

fn call(
    m: &mut Machine,
    ticket: u32,
    req: ServiceRequest,
    v: &mut SessionView,
) -> Vec<Action<u32>> {
    m.handle(ticket, req, v);
    drain(m)
}

fn get_state(m: &mut Machine, v: &mut SessionView) -> GetSimulationStateResponse {
    match replies(&call(
        m,
        0,
        ServiceRequest::GetSimulationState(GetSimulationStateRequest::default()),
        v,
    ))[..]
    {
        [(0, ServiceResponse::GetSimulationState(ref r))] => r.clone(),
        ref other => panic!("one state reply, got {other:?}"),
    }
}

fn set(state: u8) -> ServiceRequest {
    ServiceRequest::SetSimulationState(SetSimulationStateRequest { state: S { state } })
}

fn reset(scope: u8) -> ServiceRequest {
    ServiceRequest::ResetSimulation(ResetSimulationRequest { scope })
}

fn step(steps: u64) -> ServiceRequest {
    ServiceRequest::StepSimulation(StepSimulationRequest { steps })
}

fn replies(actions: &[Action<u32>]) -> Vec<(u32, ServiceResponse)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Reply { ticket, response } => Some((*ticket, response.clone())),
            _ => None,
        })
        .collect()
}

/// The session commands and ForgetControl, in order.
fn effects(actions: &[Action<u32>]) -> Vec<Action<u32>> {
    actions
        .iter()
        .filter(|a| !matches!(a, Action::Reply { .. }))
        .cloned()
        .collect()
}

/// The one reply's result code and message.
fn result(actions: &[Action<u32>]) -> (u8, String) {
    match &replies(actions)[..] {
        [(_, r)] => {
            let r = r.result().expect("a result");
            (r.result, r.error_message.clone())
        }
        other => panic!("one reply, got {other:?}"),
    }
}

const RESET_EFFECTS: [Action<u32>; 2] = [
    Action::Session(SessionCommand::Reset),
    Action::ForgetControl,
];

#[test]
fn features_list_what_armsim_does() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Idle);
    let req = ServiceRequest::GetSimulatorFeatures(GetSimulatorFeaturesRequest::default());
    let actions = call(&mut m, 7, req, &mut v);
    let [(7, ServiceResponse::GetSimulatorFeatures(r))] = &replies(&actions)[..] else {
        panic!("one features reply: {actions:?}");
    };
    assert_eq!(r.features.features, vec![20, 24, 25, 26, 31, 32]);
    assert!(r.features.spawn_formats.is_empty());
    assert!(r.features.custom_info.starts_with("armsim "));
    assert!(effects(&actions).is_empty());
}

#[test]
fn state_reads_playing_paused_and_error_as_paused() {
    let mut m = Machine::new();
    for (state, want) in [
        (SessionState::Idle, S::STATE_PLAYING),
        (SessionState::Running, S::STATE_PLAYING),
        (SessionState::Paused, S::STATE_PAUSED),
        (SessionState::Error, S::STATE_PAUSED),
    ] {
        let r = get_state(&mut m, &mut view(state));
        assert_eq!(r.state.state, want, "{state:?}");
        assert_eq!(r.result.result, OK);
        let msg = if state == SessionState::Error {
            "physics went NaN"
        } else {
            ""
        };
        assert_eq!(r.result.error_message, msg);
    }
}

#[test]
fn play_starts_from_idle_and_paused() {
    for state in [SessionState::Idle, SessionState::Paused] {
        let mut m = Machine::new();
        let mut v = view(state);
        let actions = call(&mut m, 1, set(S::STATE_PLAYING), &mut v);
        assert_eq!(result(&actions).0, OK);
        assert_eq!(effects(&actions), [Action::Session(SessionCommand::Start)]);
        assert_eq!(v.state, SessionState::Running, "predicted");
    }
}

#[test]
fn play_while_running_is_already_there_and_in_error_fails() {
    let mut m = Machine::new();
    let actions = call(
        &mut m,
        1,
        set(S::STATE_PLAYING),
        &mut view(SessionState::Running),
    );
    assert_eq!(result(&actions).0, Set::ALREADY_IN_TARGET_STATE);
    assert!(effects(&actions).is_empty());
    let actions = call(
        &mut m,
        2,
        set(S::STATE_PLAYING),
        &mut view(SessionState::Error),
    );
    let (code, msg) = result(&actions);
    assert_eq!(code, Set::STATE_TRANSITION_ERROR);
    assert!(
        msg.contains("physics went NaN") && msg.contains("reset"),
        "{msg}"
    );
    assert!(effects(&actions).is_empty());
}

#[test]
fn pause_from_playing_and_refusals() {
    for state in [SessionState::Idle, SessionState::Running] {
        let mut m = Machine::new();
        let mut v = view(state);
        let actions = call(&mut m, 1, set(S::STATE_PAUSED), &mut v);
        assert_eq!(result(&actions).0, OK);
        assert_eq!(effects(&actions), [Action::Session(SessionCommand::Pause)]);
        assert_eq!(v.state, SessionState::Paused);
    }
    let mut m = Machine::new();
    let actions = call(
        &mut m,
        1,
        set(S::STATE_PAUSED),
        &mut view(SessionState::Paused),
    );
    assert_eq!(result(&actions).0, Set::ALREADY_IN_TARGET_STATE);
    assert!(effects(&actions).is_empty());
    let actions = call(
        &mut m,
        2,
        set(S::STATE_PAUSED),
        &mut view(SessionState::Error),
    );
    assert_eq!(result(&actions).0, Set::STATE_TRANSITION_ERROR);
    assert!(effects(&actions).is_empty());
}

#[test]
fn stop_is_reset_then_pause_and_reads_stopped() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    let actions = call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    assert_eq!(result(&actions).0, OK);
    let mut want = RESET_EFFECTS.to_vec();
    want.push(Action::Session(SessionCommand::Pause));
    assert_eq!(effects(&actions), want);
    assert_eq!((v.state, v.episode, v.steps), (SessionState::Paused, 4, 0));
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_STOPPED);
    // Stopping again changes nothing.
    let actions = call(&mut m, 2, set(S::STATE_STOPPED), &mut v);
    assert_eq!(result(&actions).0, Set::ALREADY_IN_TARGET_STATE);
    assert!(effects(&actions).is_empty());
}

#[test]
fn stop_is_the_way_out_of_error() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Error);
    let actions = call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    assert_eq!(result(&actions).0, OK);
    assert_eq!(v.error, None);
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_STOPPED);
}

#[test]
fn pausing_a_stopped_simulation_only_changes_what_it_reads() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    let actions = call(&mut m, 2, set(S::STATE_PAUSED), &mut v);
    assert_eq!(result(&actions).0, OK);
    assert!(effects(&actions).is_empty());
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_PAUSED);
}

#[test]
fn stopped_ends_when_time_moves_or_the_state_changes() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    // Another protocol steps the paused world once.
    let moved = SessionView {
        steps: 1,
        ..v.clone()
    };
    m.tick(&moved);
    let mut back = SessionView { steps: 0, ..moved };
    assert_eq!(get_state(&mut m, &mut back).state.state, S::STATE_PAUSED);

    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    let actions = call(&mut m, 2, set(S::STATE_PLAYING), &mut v);
    assert_eq!(effects(&actions), [Action::Session(SessionCommand::Start)]);
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_PLAYING);
}

#[test]
fn quitting_is_unsupported_and_world_states_are_incorrect() {
    let mut m = Machine::new();
    let actions = call(
        &mut m,
        1,
        set(S::STATE_QUITTING),
        &mut view(SessionState::Running),
    );
    let (code, msg) = result(&actions);
    assert_eq!(code, UNSUPPORTED);
    assert!(msg.contains("quit"), "{msg}");
    assert!(effects(&actions).is_empty());
    for state in [S::STATE_NO_WORLD, S::STATE_LOADING_WORLD, 6, 255] {
        let actions = call(&mut m, 2, set(state), &mut view(SessionState::Paused));
        assert_eq!(
            result(&actions).0,
            Set::INCORRECT_TRANSITION,
            "state {state}"
        );
        assert!(effects(&actions).is_empty());
    }
}

#[test]
fn reset_takes_the_scopes_with_time_and_state() {
    for scope in [0, 3, 7, 255] {
        let mut m = Machine::new();
        let mut v = view(SessionState::Running);
        let actions = call(&mut m, 1, reset(scope), &mut v);
        assert_eq!(result(&actions).0, OK, "scope {scope}");
        // The session's reset puts the arm's targets back to home; the ROS command that drove
        // it before is forgotten, so home is what the arm follows. A playing simulation plays
        // on after the service's reset (a reset alone leaves armsim IDLE).
        let mut want = RESET_EFFECTS.to_vec();
        want.push(Action::Session(SessionCommand::Start));
        assert_eq!(effects(&actions), want);
        assert_eq!((v.state, v.episode, v.steps), (SessionState::Running, 4, 0));
    }
    // From IDLE (nobody started it), the reset leaves it IDLE.
    let mut m = Machine::new();
    let mut v = view(SessionState::Idle);
    let actions = call(&mut m, 1, reset(0), &mut v);
    assert_eq!(effects(&actions), RESET_EFFECTS);
    assert_eq!(v.state, SessionState::Idle);
}

#[test]
fn reset_refuses_partial_scopes() {
    for scope in [1, 2, 4, 5, 6, 8] {
        let mut m = Machine::new();
        let mut v = view(SessionState::Running);
        let actions = call(&mut m, 1, reset(scope), &mut v);
        let (code, msg) = result(&actions);
        assert_eq!(code, UNSUPPORTED, "scope {scope}");
        assert!(msg.contains("SCOPE_ALL"), "{msg}");
        assert!(effects(&actions).is_empty());
        assert_eq!(v, view(SessionState::Running));
    }
}

#[test]
fn reset_keeps_a_paused_simulation_paused_and_clears_an_error() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    let actions = call(&mut m, 1, reset(255), &mut v);
    let mut want = RESET_EFFECTS.to_vec();
    want.push(Action::Session(SessionCommand::Pause));
    assert_eq!(effects(&actions), want);
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_PAUSED);

    let mut v = view(SessionState::Error);
    let actions = call(&mut m, 2, reset(0), &mut v);
    assert_eq!(result(&actions).0, OK);
    assert_eq!(effects(&actions), RESET_EFFECTS);
    assert_eq!((v.state, v.error.clone()), (SessionState::Idle, None));
}

#[test]
fn reset_of_a_stopped_simulation_stays_stopped() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    call(&mut m, 2, reset(0), &mut v);
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_STOPPED);
}

#[test]
fn step_while_playing_fails_as_the_standard_says() {
    for state in [SessionState::Idle, SessionState::Running] {
        let mut m = Machine::new();
        let actions = call(&mut m, 1, step(5), &mut view(state));
        let (code, msg) = result(&actions);
        assert_eq!(code, FAILED, "{state:?}");
        assert!(msg.contains("not paused"), "{msg}");
        assert!(effects(&actions).is_empty());
        assert_eq!(m.pending_steps(), 0);
    }
}

#[test]
fn step_in_error_fails() {
    let mut m = Machine::new();
    let actions = call(&mut m, 1, step(1), &mut view(SessionState::Error));
    let (code, msg) = result(&actions);
    assert_eq!(code, FAILED);
    assert!(msg.contains("ERROR"), "{msg}");
    assert!(effects(&actions).is_empty());
}

#[test]
fn zero_steps_answer_at_once() {
    let mut m = Machine::new();
    let actions = call(&mut m, 1, step(0), &mut view(SessionState::Paused));
    assert_eq!(result(&actions).0, OK);
    assert!(effects(&actions).is_empty());
}

#[test]
fn too_many_steps_and_a_full_queue_fail() {
    let mut m = Machine::new();
    let actions = call(
        &mut m,
        1,
        step(MAX_STEPS + 1),
        &mut view(SessionState::Paused),
    );
    let (code, msg) = result(&actions);
    assert_eq!(code, FAILED);
    assert!(msg.contains("at most 100000"), "{msg}");
    let mut v = view(SessionState::Paused);
    v.pending_steps = 99_999;
    let actions = call(&mut m, 2, step(2), &mut v);
    let (code, msg) = result(&actions);
    assert_eq!(code, FAILED);
    assert!(msg.contains("99999 steps are already queued"), "{msg}");
    assert!(effects(&actions).is_empty());
    // Exactly up to the limit is fine.
    let actions = call(&mut m, 3, step(1), &mut v);
    assert_eq!(
        effects(&actions),
        [Action::Session(SessionCommand::Step(1))]
    );
}

#[test]
fn step_replies_once_its_steps_have_run() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    let actions = call(&mut m, 9, step(5), &mut v);
    assert!(replies(&actions).is_empty(), "deferred");
    assert_eq!(
        effects(&actions),
        [Action::Session(SessionCommand::Step(5))]
    );
    assert_eq!(v.pending_steps, 5);
    assert_eq!(m.pending_steps(), 1);
    // Four of five ran.
    m.tick(&SessionView {
        steps: 104,
        pending_steps: 1,
        ..view(SessionState::Paused)
    });
    assert!(drain(&mut m).is_empty());
    m.tick(&SessionView {
        steps: 105,
        ..view(SessionState::Paused)
    });
    let actions = drain(&mut m);
    assert_eq!(
        replies(&actions),
        [(
            9,
            ServiceResponse::StepSimulation(StepSimulationResponse { result: R::ok() })
        )]
    );
    assert_eq!(m.pending_steps(), 0);
}

#[test]
fn steps_already_queued_run_first() {
    let mut m = Machine::new();
    let mut v = SessionView {
        pending_steps: 10,
        ..view(SessionState::Paused)
    };
    call(&mut m, 1, step(5), &mut v);
    // A second call in the same batch queues behind the first.
    call(&mut m, 2, step(1), &mut v);
    assert_eq!(v.pending_steps, 16);
    m.tick(&SessionView {
        steps: 114,
        pending_steps: 2,
        ..view(SessionState::Paused)
    });
    assert!(drain(&mut m).is_empty());
    m.tick(&SessionView {
        steps: 115,
        pending_steps: 1,
        ..view(SessionState::Paused)
    });
    assert_eq!(
        replies(&drain(&mut m))
            .iter()
            .map(|r| r.0)
            .collect::<Vec<_>>(),
        [1]
    );
    m.tick(&SessionView {
        steps: 116,
        ..view(SessionState::Paused)
    });
    assert_eq!(
        replies(&drain(&mut m))
            .iter()
            .map(|r| r.0)
            .collect::<Vec<_>>(),
        [2]
    );
}

#[test]
fn pause_then_step_in_one_batch_steps() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    let a = call(&mut m, 1, set(S::STATE_PAUSED), &mut v);
    assert_eq!(result(&a).0, OK);
    let b = call(&mut m, 2, step(3), &mut v);
    assert!(replies(&b).is_empty(), "deferred, not refused");
    assert_eq!(effects(&b), [Action::Session(SessionCommand::Step(3))]);
}

#[test]
fn a_reset_request_fails_the_steps_still_owed_first() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, step(50), &mut v);
    let actions = call(&mut m, 2, reset(255), &mut v);
    let r = replies(&actions);
    assert_eq!(r.len(), 2);
    let (ticket, step_reply) = &r[0];
    assert_eq!(*ticket, 1);
    let step_result = step_reply.result().expect("a result");
    assert_eq!(step_result.result, FAILED);
    assert!(step_result.error_message.contains("reset"));
    assert_eq!(r[1].0, 2);
    assert_eq!(r[1].1.result().map(|r| r.result), Some(OK));
    assert_eq!(m.pending_steps(), 0);
}

#[test]
fn a_reset_from_elsewhere_fails_the_steps() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, step(50), &mut v);
    m.tick(&SessionView {
        episode: 4,
        steps: 0,
        ..view(SessionState::Idle)
    });
    let (code, msg) = result(&drain(&mut m));
    assert_eq!(code, FAILED);
    assert!(msg.contains("reset"), "{msg}");
}

#[test]
fn an_error_fails_the_steps() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, step(50), &mut v);
    m.tick(&SessionView {
        steps: 120,
        pending_steps: 30,
        ..view(SessionState::Error)
    });
    let (code, msg) = result(&drain(&mut m));
    assert_eq!(code, FAILED);
    assert!(msg.contains("physics went NaN"), "{msg}");
}

#[test]
fn dropped_steps_fail_after_one_frame_of_grace() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, step(5), &mut v);
    // Paused, nothing queued, target not reached: a bridge one frame late looks like this once.
    let starved = view(SessionState::Paused);
    m.tick(&starved);
    assert!(drain(&mut m).is_empty());
    m.tick(&starved);
    let (code, msg) = result(&drain(&mut m));
    assert_eq!(code, FAILED);
    assert!(msg.contains("dropped"), "{msg}");
}

#[test]
fn steps_wait_for_a_reset_not_yet_applied() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Paused);
    call(&mut m, 1, reset(0), &mut v);
    call(&mut m, 2, step(2), &mut v);
    // The bridge ticks before `SessionSystems` applied the reset: the old episode.
    m.tick(&view(SessionState::Paused));
    m.tick(&view(SessionState::Paused));
    assert!(drain(&mut m).is_empty());
    m.tick(&SessionView {
        episode: 4,
        steps: 2,
        ..view(SessionState::Paused)
    });
    assert_eq!(result(&drain(&mut m)).0, OK);
}

#[test]
fn a_step_ends_stopped() {
    let mut m = Machine::new();
    let mut v = view(SessionState::Running);
    call(&mut m, 1, set(S::STATE_STOPPED), &mut v);
    call(&mut m, 2, step(1), &mut v);
    assert_eq!(get_state(&mut m, &mut v).state.state, S::STATE_PAUSED);
}
