//! The bridge's rules without DDS or Bevy: control of the arm among ROS peers and the other
//! protocols, goals into joint commands, and the pieces of `add`.

use std::net::SocketAddr;
use std::path::Path;

use armsim_core::protocol::ros2::command::JointGoal;
use armsim_core::protocol::ros2::msgs::{Duration, JointTrajectory, JointTrajectoryPoint};
use armsim_core::protocol::ros2::sim_interfaces::{
    GetSimulationStateRequest, ResetSimulationRequest, ServiceRequest, SimResult,
    StepSimulationRequest,
};
use armsim_core::protocol::ros2::trajectory::Trajectory;

use super::control::{Control, Goal, Target, Verdict, joint_command, key, label};
use super::schedule::Schedule;
use super::{SessionView, frame_pacing, refused, robot_description, session_view};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::scene::bundled::relative as bundled_rel;
use crate::session::{AlertLog, Session, SessionCommand, SessionState};
use crate::sim::{JointCommand, SimClock};
use armsim_core::session::Claimed;

/// A command that took the arm: START on claim.
const CLAIMED: Option<Claimed> = Some(Claimed {
    then: SessionCommand::StartOnClaim,
});

const A: [u8; 12] = [1, 0x0f, 0, 0, 0xaa, 0, 0, 1, 0, 0, 0, 1];
const B: [u8; 12] = [1, 0x10, 0, 0, 0xbb, 0, 0, 2, 0, 0, 0, 1];

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn joints(goals: &[(usize, f64)]) -> Goal {
    Goal::Joints(
        goals
            .iter()
            .map(|&(j, p)| (j, JointGoal::Position(p)))
            .collect(),
    )
}

struct Rig {
    control: Control,
    conns: Connections,
    log: AlertLog,
}

impl Rig {
    fn new() -> Self {
        let mut rig = Self {
            control: Control::default(),
            conns: Connections::default(),
            log: AlertLog::default(),
        };
        rig.up(A, "eProsima Fast DDS", 7000);
        rig.up(B, "Eclipse Cyclone DDS", 7001);
        rig
    }

    fn up(&mut self, prefix: [u8; 12], vendor: &str, port: u16) {
        self.control.peer_up(
            prefix,
            vendor,
            addr(port),
            &mut self.conns,
            &mut self.log,
            0.0,
        );
    }

    fn command(&mut self, prefix: [u8; 12], goal: Goal) -> Verdict {
        self.control
            .command(prefix, "joint_command", goal, 0, &mut self.conns)
    }

    fn id_of(&self, port: u16) -> u64 {
        self.conns
            .of(Protocol::Ros2)
            .find(|(_, c)| c.peer == addr(port))
            .map(|(id, _)| id)
            .expect("in the registry")
    }
}

#[test]
fn peers_join_as_named_observers_and_the_first_valid_command_claims() {
    let mut rig = Rig::new();
    let a = rig.id_of(7000);
    let entry = rig.conns.get(key(a)).unwrap();
    assert_eq!(entry.role, Role::Observer);
    assert_eq!(
        entry.name.as_deref(),
        Some("eProsima Fast DDS aa00000100000001")
    );
    assert_eq!(rig.conns.owner(), None);

    assert_eq!(
        rig.command(A, joints(&[(0, 0.5)])),
        Verdict::Accepted { claimed: CLAIMED }
    );
    assert_eq!(rig.conns.owner_key(), Some(key(a)));
    assert_eq!(rig.conns.get(key(a)).unwrap().role, Role::Controller);
    // The owner's next command replaces its goal without a new claim.
    assert_eq!(
        rig.command(A, joints(&[(0, 0.6)])),
        Verdict::Accepted { claimed: None }
    );
    // Another peer watches.
    assert_eq!(rig.command(B, joints(&[(0, 0.7)])), Verdict::Refused);
    assert_eq!(rig.control.goal(), Some(&joints(&[(0, 0.6)])));
    assert_eq!(rig.conns.get(key(a)).unwrap().msgs_in(), 2);
}

#[test]
fn a_client_of_another_protocol_keeps_the_arm() {
    let mut rig = Rig::new();
    let lockstep = ConnKey::new(Protocol::Lockstep, 1);
    rig.conns.open(
        lockstep,
        addr(9),
        Role::Controller,
        std::sync::Arc::new(Counters::default()),
        true,
    );
    assert!(rig.conns.claim(lockstep, "127.0.0.1:9").is_some());
    assert_eq!(rig.command(A, joints(&[(0, 0.5)])), Verdict::Refused);
    assert_eq!(rig.control.owner(), None);
    assert_eq!(rig.control.goal(), None);
    assert_eq!(rig.conns.owner_key(), Some(lockstep));
}

#[test]
fn the_owner_lost_or_without_command_writers_frees_the_arm() {
    let mut rig = Rig::new();
    rig.command(A, joints(&[(0, 0.5)]));
    // Another writer of A's is left: still the owner.
    assert!(!rig.control.writer_lost(A, 1, &mut rig.conns));
    // A writer of B's going says nothing about A.
    assert!(!rig.control.writer_lost(B, 0, &mut rig.conns));
    assert!(rig.control.writer_lost(A, 0, &mut rig.conns));
    assert_eq!(rig.conns.owner(), None);
    assert_eq!(rig.control.goal(), None);
    let a = rig.id_of(7000);
    assert_eq!(rig.conns.get(key(a)).unwrap().role, Role::Observer);

    // B takes it, then its participant is lost: gone from the registry, the arm free.
    assert_eq!(
        rig.command(B, joints(&[(1, 0.1)])),
        Verdict::Accepted { claimed: CLAIMED }
    );
    let b = rig.id_of(7001);
    assert!(rig.control.peer_down(B, &mut rig.conns, &mut rig.log, 1.0));
    assert!(rig.conns.get(key(b)).is_none());
    assert_eq!(rig.conns.owner(), None);
    // A peer that did not hold the arm leaves without touching it.
    rig.command(A, joints(&[(0, 0.5)]));
    rig.up(B, "Eclipse Cyclone DDS", 7001);
    assert!(!rig.control.peer_down(B, &mut rig.conns, &mut rig.log, 2.0));
    assert_eq!(rig.conns.owner_key(), Some(key(a)));
}

#[test]
fn a_revoke_demotes_the_owner_which_may_claim_again() {
    let mut rig = Rig::new();
    rig.command(A, joints(&[(0, 0.5)]));
    rig.conns.revoke();
    assert!(rig.conns.panel_requests(Protocol::Ros2).revoked.is_some());
    assert!(rig.control.revoked(&mut rig.conns));
    assert_eq!(rig.control.goal(), None);
    assert_eq!(rig.control.targets(&rig.conns, 0, 1.0), vec![]);
    let a = rig.id_of(7000);
    assert_eq!(rig.conns.get(key(a)).unwrap().role, Role::Observer);
    // Nothing more to revoke.
    assert!(!rig.control.revoked(&mut rig.conns));
    assert_eq!(
        rig.command(A, joints(&[(0, 0.5)])),
        Verdict::Accepted { claimed: CLAIMED }
    );
}

#[test]
fn a_kicked_peer_is_ignored_until_it_is_rediscovered() {
    let mut rig = Rig::new();
    rig.command(A, joints(&[(0, 0.5)]));
    let a = rig.id_of(7000);
    assert!(rig.control.kick(&[a], &mut rig.conns, &mut rig.log, 1.0));
    assert!(rig.conns.get(key(a)).is_none());
    assert_eq!(rig.conns.owner(), None);
    assert!(rig.control.is_kicked(&A));
    assert_eq!(rig.command(A, joints(&[(0, 0.5)])), Verdict::Ignored);
    assert_eq!(rig.conns.owner(), None);
    // Lost and found again: a peer like any other.
    assert!(!rig.control.peer_down(A, &mut rig.conns, &mut rig.log, 2.0));
    rig.up(A, "eProsima Fast DDS", 7000);
    assert!(!rig.control.is_kicked(&A));
    assert_eq!(
        rig.command(A, joints(&[(0, 0.5)])),
        Verdict::Accepted { claimed: CLAIMED }
    );
    // Kicking an id that is not ours' (or gone) does nothing.
    assert!(!rig.control.kick(&[999], &mut rig.conns, &mut rig.log, 3.0));
}

#[test]
fn data_before_discovery_opens_an_entry_that_discovery_completes() {
    let mut rig = Rig::new();
    let c = [9; 12];
    assert_eq!(
        rig.command(c, joints(&[(0, 0.5)])),
        Verdict::Accepted { claimed: CLAIMED }
    );
    let (id, entry) = rig
        .conns
        .of(Protocol::Ros2)
        .find(|(_, e)| e.name.as_deref() == Some("DDS participant 0909090909090909"))
        .expect("opened on its first command");
    assert_eq!(entry.peer.port(), 0);
    rig.up(c, "RustDDS", 7002);
    let entry = rig.conns.get(key(id)).unwrap();
    assert_eq!(entry.peer, addr(7002));
    assert_eq!(entry.name.as_deref(), Some("RustDDS 0909090909090909"));
    assert_eq!(entry.role, Role::Controller);
    assert_eq!(rig.conns.of(Protocol::Ros2).count(), 3);
}

#[test]
fn a_joint_command_is_set_once_and_a_reset_voids_it() {
    let mut rig = Rig::new();
    rig.command(A, joints(&[(2, 0.25)]));
    let expected = vec![(
        2,
        Target::Position {
            position: 0.25,
            velocity: 0.0,
        },
    )];
    assert_eq!(rig.control.targets(&rig.conns, 0, 0.1), expected);
    assert_eq!(rig.control.targets(&rig.conns, 0, 0.2), vec![]);
    // Given in episode 0, seen in episode 1 (someone reset): dropped, never applied.
    rig.command(A, joints(&[(2, 0.5)]));
    assert_eq!(rig.control.targets(&rig.conns, 1, 0.0), vec![]);
    assert_eq!(rig.control.goal(), None);
}

#[test]
fn a_trajectory_is_sampled_every_step_until_its_last_point() {
    let mut rig = Rig::new();
    let msg = JointTrajectory {
        joint_names: vec!["b".into()],
        points: vec![JointTrajectoryPoint {
            positions: vec![1.0],
            time_from_start: Duration { sec: 1, nanosec: 0 },
            ..Default::default()
        }],
        ..Default::default()
    };
    let trajectory = Trajectory::new(&msg, &["a", "b"], 0.0, &[0.0, 0.0]).unwrap();
    rig.command(A, Goal::Trajectory(trajectory));
    let at = |rig: &mut Rig, t| rig.control.targets(&rig.conns, 0, t);
    let [(j, Target::Position { position, velocity })] = at(&mut rig, 0.5)[..] else {
        panic!("one position target");
    };
    assert_eq!(j, 1);
    assert!((position - 0.5).abs() < 1e-12, "{position}");
    assert!((velocity - 1.0).abs() < 1e-12, "{velocity}");
    assert_eq!(at(&mut rig, 0.75).len(), 1, "sampled again the next step");
    assert_eq!(
        at(&mut rig, 1.0),
        vec![(
            1,
            Target::Position {
                position: 1.0,
                velocity: 0.0
            }
        )]
    );
    assert_eq!(
        at(&mut rig, 1.1),
        vec![],
        "ended: the last point stays the target"
    );
}

#[test]
fn goals_become_joint_commands_within_the_joint_limits() {
    let limits = Some((-1.0, 2.0));
    let position = |p| Target::Position {
        position: p,
        velocity: 0.5,
    };
    assert_eq!(
        joint_command(position(3.0), limits),
        JointCommand::Position {
            target: 2.0,
            velocity: 0.5
        }
    );
    assert_eq!(
        joint_command(position(-3.0), limits),
        JointCommand::Position {
            target: -1.0,
            velocity: 0.5
        }
    );
    assert_eq!(
        joint_command(position(3.0), None),
        JointCommand::Position {
            target: 3.0,
            velocity: 0.5
        }
    );
    assert_eq!(
        joint_command(JointGoal::Velocity(-4.0).into(), limits),
        JointCommand::Velocity { target: -4.0 }
    );
    assert_eq!(
        joint_command(JointGoal::Effort(7.0).into(), limits),
        JointCommand::Effort { torque: 7.0 }
    );
}

#[test]
fn labels_show_the_vendor_and_the_distinguishing_part_of_the_prefix() {
    assert_eq!(
        label("Eclipse Cyclone DDS", &A),
        "Eclipse Cyclone DDS aa00000100000001"
    );
}

#[test]
fn bundled_robot_paths_resolve_to_their_asset() {
    let bundled = Path::new(crate::scene::bundled::BUNDLED_ROOT)
        .join("scenes")
        .join("..")
        .join("robots/gripper4.urdf");
    assert_eq!(
        bundled_rel(&bundled).as_deref(),
        Some("robots/gripper4.urdf")
    );
    assert!(crate::scene::bundled::file("robots/gripper4.urdf").is_some());
    assert_eq!(bundled_rel(Path::new("/tmp/robots/x.urdf")), None);
}

#[test]
fn robot_description_is_the_urdf_text_of_a_urdf_robot_only() {
    let scene = |name| crate::scene::load_bundled_scene(name).unwrap().unwrap();
    let urdf = robot_description(&scene("gripper4")).expect("gripper4 is a URDF robot");
    assert!(urdf.contains("<robot"), "{urdf:.80}");
    assert_eq!(
        robot_description(&scene("default_scene")),
        None,
        "arm6 is MJCF"
    );
}

#[test]
fn a_kicked_peer_may_read_the_state_but_not_change_it() {
    let read = ServiceRequest::GetSimulationState(GetSimulationStateRequest::default());
    assert_eq!(refused(&read), None);
    for request in [
        ServiceRequest::ResetSimulation(ResetSimulationRequest::default()),
        ServiceRequest::StepSimulation(StepSimulationRequest::default()),
    ] {
        let response = refused(&request).expect("refused");
        assert_eq!(response.service(), request.service());
        assert_eq!(
            response.result().map(|r| r.result),
            Some(SimResult::RESULT_OPERATION_FAILED)
        );
    }
}

#[test]
fn the_view_reads_the_session_and_the_clock() {
    let session = Session::new(crate::scene::PauseBehavior::Hold, Vec::new());
    let mut clock = SimClock::default();
    clock.steps = 42;
    clock.episode = 2;
    clock.request_steps(7);
    let v = session_view(&session, &clock);
    assert_eq!(
        v,
        SessionView {
            state: SessionState::Idle,
            error: None,
            steps: 42,
            episode: 2,
            pending_steps: 7,
        }
    );
}

/// Frame pacing is offered while every connection is a ROS 2 peer, and says whether one of them
/// controls the arm: at 100 Hz, after step 0's frame the next (frame 1) is at step 3, and the
/// watched batch of three frames that holds it (frames 0 to 2) ends at step 5.
#[test]
fn frame_pacing_follows_the_schedule_and_who_is_connected() {
    let mut schedule = Schedule::new(100);
    assert!(schedule.due(0, 0));
    let mut conns = Connections::default();
    let peer = ConnKey::new(Protocol::Ros2, 1);
    conns.open(
        peer,
        addr(7400),
        Role::Observer,
        std::sync::Arc::new(Counters::default()),
        false,
    );
    let watched = frame_pacing(&schedule, 3, &conns);
    assert_eq!((watched.next_frame_step, watched.watched_wake_step), (3, 5));
    assert!(watched.sole_clients && !watched.controlled);
    assert!(conns.claim(peer, "a ROS 2 controller").is_some());
    assert!(frame_pacing(&schedule, 3, &conns).controlled);
    conns.open(
        ConnKey::new(Protocol::Agent, 1),
        addr(7401),
        Role::Observer,
        std::sync::Arc::new(Counters::default()),
        false,
    );
    assert!(!frame_pacing(&schedule, 3, &conns).sole_clients);
}
