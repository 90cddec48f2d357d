//! `armsim --ros2`'s `simulation_interfaces` services end to end, called as a Fast DDS
//! `ros2 service call` calls them (ros2-client's Enhanced mapping), from a peer in the test's
//! private network namespace (`common::netns`): features, state, pause, step, play and reset,
//! each checked against what the topics then show.

mod common;
#[path = "ros2/peer.rs"]
mod peer;
#[path = "ros2/support.rs"]
mod support;

use armsim::protocol::ros2::msgs::{
    Clock, Duration as RosDuration, Header, JointTrajectory, JointTrajectoryPoint, Time,
};
use armsim::protocol::ros2::sim_interfaces::{
    GetSimulationStateRequest, GetSimulationStateResponse, GetSimulatorFeaturesRequest,
    GetSimulatorFeaturesResponse, ResetSimulationRequest, ResetSimulationResponse,
    SetSimulationStateRequest, SetSimulationStateResponse, SimResult, SimulationState,
    SimulatorFeatures, StepSimulationRequest, StepSimulationResponse,
};
use common::netns;
use peer::{Peer, Pub, Service, nanos, secs};
use ros2_client::QosProfile;
use support::*;

struct Clients {
    features: Service<GetSimulatorFeaturesRequest, GetSimulatorFeaturesResponse>,
    get: Service<GetSimulationStateRequest, GetSimulationStateResponse>,
    set: Service<SetSimulationStateRequest, SetSimulationStateResponse>,
    step: Service<StepSimulationRequest, StepSimulationResponse>,
    reset: Service<ResetSimulationRequest, ResetSimulationResponse>,
}

fn clients(peer: &mut Peer) -> Clients {
    Clients {
        features: peer.client("get_simulator_features", "GetSimulatorFeatures"),
        get: peer.client("get_simulation_state", "GetSimulationState"),
        set: peer.client("set_simulation_state", "SetSimulationState"),
        step: peer.client("step_simulation", "StepSimulation"),
        reset: peer.client("reset_simulation", "ResetSimulation"),
    }
}

fn state(peer: &mut Peer, c: &Clients) -> u8 {
    let r = peer.call(&c.get, GetSimulationStateRequest::default());
    assert_eq!(r.result.result, SimResult::RESULT_OK, "{r:?}");
    r.state.state
}

fn set(peer: &mut Peer, c: &Clients, to: u8) -> SimResult {
    let req = SetSimulationStateRequest {
        state: SimulationState { state: to },
    };
    peer.call(&c.set, req).result
}

fn at(t: Time, plus_ns: i64) -> Time {
    let ns = nanos(t) + plus_ns;
    Time {
        sec: (ns / 1_000_000_000) as i32,
        nanosec: (ns % 1_000_000_000) as u32,
    }
}

#[test]
fn services_pause_step_play_and_reset() {
    if !netns::isolated("services_pause_step_play_and_reset") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "services");
    let states = joint_states(&mut peer);
    let clock = peer.subscribe::<Clock>("/clock", CLOCK, reliable(10));
    let traj: Pub<JointTrajectory> = peer.publisher(
        "joint_trajectory",
        JOINT_TRAJECTORY,
        QosProfile::publisher_default(),
    );
    let c = clients(&mut peer);
    // A frame every step, so that the clock after a step is exactly the step's end.
    let _sim = start("services", &["--ros2-rate", "240"]);
    let home = latest(&mut peer, &states).position;

    let features = peer.call(&c.features, GetSimulatorFeaturesRequest::default());
    for f in [
        SimulatorFeatures::SIMULATION_RESET,
        SimulatorFeatures::SIMULATION_STATE_GETTING,
        SimulatorFeatures::SIMULATION_STATE_SETTING,
        SimulatorFeatures::SIMULATION_STATE_PAUSE,
        SimulatorFeatures::STEP_SIMULATION_SINGLE,
        SimulatorFeatures::STEP_SIMULATION_MULTIPLE,
    ] {
        assert!(features.features.features.contains(&f), "{f}: {features:?}");
    }

    // Playing from the start; stepping then is refused with the standard's code.
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PLAYING);
    let r = peer.call(&c.step, StepSimulationRequest { steps: 24 });
    assert_eq!(r.result.result, SimResult::RESULT_OPERATION_FAILED, "{r:?}");

    // Paused: the state says so and the clock stops.
    let playing = latest(&mut peer, &states).header.stamp;
    assert!(set(&mut peer, &c, SimulationState::STATE_PAUSED).is_ok());
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PAUSED);
    let paused_at = peer
        .drain(&states)
        .iter()
        .map(|s| s.header.stamp)
        .fold(playing, Time::max);
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PAUSED);
    let since: Vec<Time> = peer.drain(&states).iter().map(|s| s.header.stamp).collect();
    assert!(
        since.iter().all(|t| *t <= paused_at),
        "paused at {paused_at:?}, then {since:?}"
    );

    // 24 steps = exactly 0.1 s of sim time, then paused again.
    let r = peer.call(&c.step, StepSimulationRequest { steps: 24 });
    assert!(r.result.is_ok(), "{r:?}");
    let end = at(paused_at, 100_000_000);
    peer.next_where(&states, "the joint state at the step's end", |s| {
        assert!(
            s.header.stamp <= end,
            "24 steps from {paused_at:?} went to {:?}",
            s.header.stamp
        );
        s.header.stamp == end
    });
    peer.next_where(&clock, "/clock at the step's end", |c| {
        assert!(c.clock <= end, "{c:?} past {end:?}");
        c.clock == end
    });
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PAUSED);

    // Play, start a slow trajectory, and reset while it runs.
    assert!(set(&mut peer, &c, SimulationState::STATE_PLAYING).is_ok());
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PLAYING);
    let mut far = home.clone();
    far[0] += 0.4;
    let msg = JointTrajectory {
        header: Header::default(),
        joint_names: robot.joints.clone(),
        points: vec![JointTrajectoryPoint {
            positions: far,
            time_from_start: RosDuration { sec: 4, nanosec: 0 },
            ..Default::default()
        }],
    };
    peer.wait_matched(&traj);
    // Sent again on each joint state until it acts (a best-effort sample may be lost before
    // armsim has matched our writer); each copy starts it again from where the arm is.
    let moving = peer.wait("the trajectory to move joint 0", |_| {
        let mut got = None;
        while let Some(s) = states.try_take() {
            if s.position[0] - home[0] > 0.05 {
                got = Some(s);
            }
        }
        if got.is_none() {
            traj.inner.publish(msg.clone()).unwrap();
        }
        got
    });
    let before = moving.header.stamp;
    // The clock's reader keeps the last ten samples: on a loaded machine the reset can come
    // within ten steps of `moving`, and a sample stamped before it, still kept, would pass for
    // the restart below. armsim publishes a batch's clock samples before its joint states, so
    // once `moving` is in, every clock sample stamped before it is too, and this drain takes it.
    peer.drain(&clock);
    let r = peer.call(
        &c.reset,
        ResetSimulationRequest {
            scope: ResetSimulationRequest::SCOPE_DEFAULT,
        },
    );
    assert!(r.result.is_ok(), "{r:?}");

    // The clock starts again near 0, and the arm is at home and stays there: the trajectory
    // in flight was dropped with the reset.
    let restarted = peer.next_where(&clock, "/clock to go back", |c| c.clock < before);
    assert!(secs(restarted.clock) < 0.5, "{restarted:?}");
    let fresh = peer.next_where(&states, "a joint state after the reset", |s| {
        s.header.stamp < before
    });
    assert_near_all(&fresh.position, &home, 0.02, "just after the reset");
    let later = at(fresh.header.stamp, 1_000_000_000);
    let settled = peer.next_where(&states, "a second after the reset", |s| {
        s.header.stamp >= later
    });
    assert_near_all(&settled.position, &home, 0.02, "a second after the reset");
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PLAYING);

    // STOPPED: paused at the start of a fresh episode (the clock at 0), and said so.
    assert!(set(&mut peer, &c, SimulationState::STATE_STOPPED).is_ok());
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_STOPPED);
    peer.next_where(&clock, "/clock at 0 after STOPPED", |c| {
        c.clock == Time::default()
    });
    let again = set(&mut peer, &c, SimulationState::STATE_STOPPED);
    assert_eq!(
        again.result,
        SetSimulationStateResponse::ALREADY_IN_TARGET_STATE,
        "{again:?}"
    );
    // A peer may not quit the simulator (DDS has no authentication).
    let quit = set(&mut peer, &c, SimulationState::STATE_QUITTING);
    assert_eq!(
        quit.result,
        SimResult::RESULT_FEATURE_UNSUPPORTED,
        "{quit:?}"
    );
    assert!(set(&mut peer, &c, SimulationState::STATE_PLAYING).is_ok());
    assert_eq!(state(&mut peer, &c), SimulationState::STATE_PLAYING);
    peer.next_where(&clock, "/clock to run again", |c| c.clock > Time::default());
}
