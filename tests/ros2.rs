//! `armsim --ros2` end to end, as a ROS 2 node sees it: a real headless armsim child and a
//! ros2-client peer in the test process, both inside a private network namespace per test
//! (`common::netns`; DDS multicasts, and no test may send a packet off this machine). Topics,
//! tf, QoS matching, commands and their refusals, the domain flag and the exposure line here;
//! the `simulation_interfaces` services in `ros2_services.rs`.
//!
//! Every wait is on an event (a sample, a match, a log line) under a generous deadline;
//! nothing sleeps, and nothing asserts on wall time.

mod common;
#[path = "ros2/peer.rs"]
mod peer;
#[path = "ros2/support.rs"]
mod support;

use armsim::protocol::ros2::msgs::{
    Clock, Duration as RosDuration, Header, JointState, JointTrajectory, JointTrajectoryPoint,
    StdString, TFMessage, Time,
};
use armsim::protocol::ros2::sim_interfaces::{
    GetSimulationStateRequest, GetSimulationStateResponse, SimulationState,
};
use common::netns;
use peer::{Peer, Pub, Service, nanos, secs};
use ros2_client::QosProfile;
use ros2_client::qos::Durability;
use support::*;

#[test]
fn joint_states_carry_the_robots_joints_in_sim_time() {
    if !netns::isolated("joint_states_carry_the_robots_joints_in_sim_time") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "joint_states");
    let sub = joint_states(&mut peer);
    let _sim = start("joint-states", &[]);

    let samples: Vec<JointState> = (0..30).map(|_| peer.next(&sub)).collect();
    let first = samples[0].header.stamp;
    // Sim time since the start (the reader matched a second or so in), not the Unix epoch.
    assert!(secs(first) < 20.0, "first stamp {first:?} is not sim time");
    for s in &samples {
        assert_eq!(s.name, robot.joints, "joint names in robot order");
        assert_eq!(s.position.len(), s.name.len());
        assert!(
            s.velocity.is_empty() || s.velocity.len() == s.name.len(),
            "{s:?}"
        );
        assert!(s.position.iter().all(|p| p.is_finite()), "{s:?}");
        assert!(on_a_step(s.header.stamp), "{:?} is between steps", s.header);
    }
    // 100 Hz of sim time on a 240 Hz step: frame k goes out at the first step s with
    // s * 100 >= k * 240 (steps 0, 3, 5, 8, 10, 12, ...), so stamps are 2 or 3 steps apart.
    // The DDS thread publishes only the newest frame when it falls behind (a loaded machine),
    // so a gap may span several frames; every stamp is still on the schedule, and most gaps are
    // one frame.
    let steps: Vec<i64> = samples
        .iter()
        .map(|s| (nanos(s.header.stamp) * 240 + 500_000_000) / 1_000_000_000)
        .collect();
    for &s in &steps {
        assert!(
            s == 0 || (s * 100) / 240 > ((s - 1) * 100) / 240,
            "step {s} is not on the 100 Hz schedule: {steps:?}"
        );
    }
    let mut gaps: Vec<i64> = steps.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| g > 0), "stamps go back: {steps:?}");
    gaps.sort();
    assert!(
        gaps[gaps.len() / 2] <= 3,
        "most frames are more than 3 steps apart: {steps:?}"
    );
}

#[test]
fn clock_is_reliable_and_matches_best_effort_readers() {
    if !netns::isolated("clock_is_reliable_and_matches_best_effort_readers") {
        return;
    }
    let mut peer = Peer::new(0, "clock");
    // rclcpp's time source: best effort, keep last 1; and a reliable one.
    let best_effort = peer.subscribe::<Clock>("/clock", CLOCK, QosProfile::subscription_default());
    let reliable_sub = peer.subscribe::<Clock>("/clock", CLOCK, reliable(10));
    let _sim = start("clock", &[]);

    for sub in [&best_effort, &reliable_sub] {
        let mut last = peer.next(sub).clock;
        for _ in 0..10 {
            let now = peer.next(sub).clock;
            assert!(now > last, "{} went from {last:?} to {now:?}", sub.topic);
            assert!(on_a_step(now), "{now:?}");
            last = now;
        }
    }
}

#[test]
fn tf_static_reaches_a_late_subscriber() {
    if !netns::isolated("tf_static_reaches_a_late_subscriber") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "tf_static");
    let states = joint_states(&mut peer);
    let _sim = start("tf-static", &[]);
    // armsim is up and publishing before the latched reader exists.
    peer.next(&states);
    let latched = reliable(1).durability(Durability::TransientLocal);
    let sub = peer.subscribe::<TFMessage>("/tf_static", TF, latched);
    let msg = peer.next(&sub);
    let base = msg
        .transforms
        .iter()
        .find(|t| t.header.frame_id == "world" && t.child_frame_id == robot.root)
        .unwrap_or_else(|| panic!("no world -> {} in {msg:?}", robot.root));
    // The default scene's base pose: 1 m up, not rotated.
    let t = base.transform.translation;
    assert!(
        t.x.abs() < 1e-6 && t.y.abs() < 1e-6 && (t.z - 1.0).abs() < 1e-6,
        "{base:?}"
    );
    let moving: Vec<&String> = robot.moving.iter().map(|(_, c)| c).collect();
    for t in &msg.transforms {
        assert!(
            !moving.contains(&&t.child_frame_id),
            "{} moves, so it belongs on /tf, not /tf_static",
            t.child_frame_id
        );
    }
}

#[test]
fn tf_has_every_moving_link_and_each_cube() {
    if !netns::isolated("tf_has_every_moving_link_and_each_cube") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "tf");
    let sub = peer.subscribe::<TFMessage>("/tf", TF, reliable(100));
    let _sim = start("tf", &[]);

    let mut want: Vec<(String, String)> = robot.moving.clone();
    want.extend(
        robot
            .objects
            .iter()
            .map(|o| ("world".to_owned(), o.clone())),
    );
    want.sort();
    for _ in 0..5 {
        let msg = peer.next(&sub);
        let mut got: Vec<(String, String)> = msg
            .transforms
            .iter()
            .map(|t| (t.header.frame_id.clone(), t.child_frame_id.clone()))
            .collect();
        got.sort();
        assert_eq!(got, want, "parent -> child frames of one /tf message");
        let stamp = msg.transforms[0].header.stamp;
        for t in &msg.transforms {
            assert_eq!(t.header.stamp, stamp, "one stamp per message");
            let q = t.transform.rotation;
            let norm = (q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w).sqrt();
            assert!((norm - 1.0).abs() < 1e-3, "{t:?}");
        }
        assert!(on_a_step(stamp), "{stamp:?}");
    }
}

#[test]
fn forward_commands_move_the_arm() {
    if !netns::isolated("forward_commands_move_the_arm") {
        return;
    }
    let mut peer = Peer::new(0, "forward");
    let states = joint_states(&mut peer);
    let cmd = forward(&mut peer);
    let _sim = start("forward", &[]);

    let home = latest(&mut peer, &states).position;
    let mut target = home.clone();
    target[0] += 0.2;
    let reached = drive_to(&mut peer, &cmd, &states, &target, 0, 0.02);
    // The other joints were told to stay where they were.
    for (i, (p, h)) in reached.position.iter().zip(&home).enumerate().skip(1) {
        assert!((p - h).abs() < 0.05, "joint {i} moved from {h} to {p}");
    }
}

/// One bad input: its topic and how to send it.
enum Bad {
    Forward(Vec<f64>),
    ByName(JointState),
    Trajectory(JointTrajectory),
}

impl Bad {
    fn topic(&self) -> &'static str {
        match self {
            Bad::Forward(_) => "forward_position_controller/commands",
            Bad::ByName(_) => "joint_command",
            Bad::Trajectory(_) => "joint_trajectory",
        }
    }
}

/// Sends each of `cases` (distinct topics: armsim logs bad input at most once a second per
/// topic) to a fresh armsim; each must log a warning naming ros2 and its topic, and leave the
/// arm where it was.
fn refused(round: &str, cases: Vec<(&str, Bad)>) {
    let mut peer = Peer::new(0, "bad");
    let states = joint_states(&mut peer);
    let fwd = forward(&mut peer);
    let by_name: Pub<JointState> = peer.publisher(
        "joint_command",
        JOINT_STATE,
        QosProfile::publisher_default(),
    );
    let traj: Pub<JointTrajectory> = peer.publisher(
        "joint_trajectory",
        JOINT_TRAJECTORY,
        QosProfile::publisher_default(),
    );
    let mut sim = start(&format!("bad-{round}"), &[]);
    let home = latest(&mut peer, &states).position;
    for topic in [&fwd.topic, &by_name.topic, &traj.topic] {
        let topic = topic.clone();
        peer.wait_reader_matched(&topic);
    }
    let mut last_stamp = Time::default();
    for (what, bad) in cases {
        let mark = sim.log.len();
        let topic = bad.topic();
        let line = until_logged(&mut sim, mark, &["WARN", "ros2:", topic], || match &bad {
            Bad::Forward(data) => fwd.inner.publish(array(data.clone())).unwrap(),
            Bad::ByName(msg) => by_name.inner.publish(msg.clone()).unwrap(),
            Bad::Trajectory(msg) => traj.inner.publish(msg.clone()).unwrap(),
        });
        println!("{what}: {line}");
        last_stamp = latest(&mut peer, &states).header.stamp;
    }
    // A state stamped a full second of sim time after the last bad command: nothing moved.
    let later = Time {
        sec: last_stamp.sec + 1,
        ..last_stamp
    };
    let after = state_after(&mut peer, &states, later);
    assert_near_all(&after.position, &home, 0.02, "after bad commands");
}

/// Bad input: a warning each (naming ros2 and the topic), and nothing moves.
#[test]
fn bad_commands_move_nothing_and_log_once() {
    if !netns::isolated("bad_commands_move_nothing_and_log_once") {
        return;
    }
    let robot = robot();
    let n = robot.joints.len();
    // Home is about the scene's home_q; the values only need to be valid but for the one fault.
    let moved: Vec<f64> = (0..n).map(|i| if i == 0 { 0.3 } else { 0.0 }).collect();
    let point = |t: f64, positions: Vec<f64>| JointTrajectoryPoint {
        positions,
        time_from_start: RosDuration {
            sec: t as i32,
            nanosec: (t.fract() * 1e9).round() as u32,
        },
        ..Default::default()
    };
    let trajectory = |names: Vec<String>, points| JointTrajectory {
        header: Header::default(),
        joint_names: names,
        points,
    };
    let mut nan = moved.clone();
    nan[1] = f64::NAN;
    let by_name = |name: &str, q: f64| JointState {
        name: vec![name.to_owned()],
        position: vec![q],
        ..Default::default()
    };

    refused(
        "a",
        vec![
            ("wrong length", Bad::Forward(moved[..n - 1].to_vec())),
            (
                "unknown joint name",
                Bad::ByName(by_name("no_such_joint", 0.3)),
            ),
            (
                "trajectory going backwards",
                Bad::Trajectory(trajectory(
                    robot.joints.clone(),
                    vec![point(1.0, moved.clone()), point(0.5, moved.clone())],
                )),
            ),
        ],
    );
    refused(
        "b",
        vec![
            ("NaN", Bad::Forward(nan.clone())),
            (
                "NaN by name",
                Bad::ByName(by_name(&robot.joints[0], f64::NAN)),
            ),
            (
                "trajectory with an unknown joint",
                Bad::Trajectory(trajectory(
                    vec!["no_such_joint".to_owned()],
                    vec![point(1.0, vec![0.3])],
                )),
            ),
        ],
    );
}

#[test]
fn trajectory_is_followed_in_sim_time() {
    if !netns::isolated("trajectory_is_followed_in_sim_time") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "trajectory");
    let states = joint_states(&mut peer);
    let traj: Pub<JointTrajectory> = peer.publisher(
        "joint_trajectory",
        JOINT_TRAJECTORY,
        QosProfile::publisher_default(),
    );
    let _sim = start("trajectory", &[]);

    let now = latest(&mut peer, &states);
    let home = now.position.clone();
    let at = |dq: f64, t: f64| {
        let mut positions = home.clone();
        positions[0] += dq;
        JointTrajectoryPoint {
            positions,
            time_from_start: RosDuration {
                sec: t as i32,
                nanosec: (t.fract() * 1e9).round() as u32,
            },
            ..Default::default()
        }
    };
    // Starts 0.3 s of sim time from now, by its stamp: re-sending the same message (a best-effort
    // sample may be lost before armsim has matched our writer) does not move its start.
    let start_ns = nanos(now.header.stamp) + 300_000_000;
    let start_at = Time {
        sec: (start_ns / 1_000_000_000) as i32,
        nanosec: (start_ns % 1_000_000_000) as u32,
    };
    let msg = JointTrajectory {
        header: Header {
            stamp: start_at,
            frame_id: String::new(),
        },
        joint_names: robot.joints.clone(),
        points: vec![at(0.1, 0.5), at(0.2, 1.0)],
    };
    peer.wait_matched(&traj);
    let goal = home[0] + 0.2;
    let reached = peer.wait("joint 0 at the trajectory's end", |_| {
        let mut got = None;
        let mut before_start = false;
        while let Some(s) = states.try_take() {
            before_start = s.header.stamp < start_at;
            if (s.position[0] - goal).abs() < 0.02 {
                got.get_or_insert(s);
            }
        }
        if before_start {
            traj.inner.publish(msg.clone()).unwrap();
        }
        got
    });
    // Followed over a second of sim time from its start, not jumped to: within 0.02 rad of the
    // end only near its last point.
    let took = secs(reached.header.stamp) - secs(start_at);
    println!("joint 0 reached the trajectory's end {took:.3} s of sim time after its start");
    assert!(
        took > 0.8,
        "joint 0 reached the end {took:.3} s of sim time after the trajectory's start"
    );
}

#[test]
fn the_domain_flag_moves_armsim_to_its_domain() {
    if !netns::isolated("the_domain_flag_moves_armsim_to_its_domain") {
        return;
    }
    let mut on_42 = Peer::new(42, "domain42");
    let mut on_0 = Peer::new(0, "domain0");
    let sub_42 = joint_states(&mut on_42);
    let sub_0 = joint_states(&mut on_0);
    let _sim = start("domain", &["--ros2-domain", "42"]);
    for _ in 0..50 {
        on_42.next(&sub_42);
    }
    // A second of samples on 42 by now; domain 0 never even discovered armsim.
    assert!(on_0.drain(&sub_0).is_empty(), "domain 0 got joint states");
    assert!(
        on_0.participants.len() <= 1,
        "domain 0 discovered {:?}",
        on_0.participants
    );
}

const OPEN: &str = "OPEN TO THE NETWORK WITHOUT AUTHENTICATION";

/// Plain `--ros2` keeps discovery on this host and says nothing loud; `--ros2-discovery
/// subnet` logs the loud line, naming ros2. Here, not in exposure.rs: subnet mode multicasts
/// on every interface, and only this namespace has nothing but `lo`.
#[test]
fn only_subnet_discovery_logs_the_open_line() {
    if !netns::isolated("only_subnet_discovery_logs_the_open_line") {
        return;
    }
    let mut peer = Peer::new(0, "exposure");
    let states = joint_states(&mut peer);
    let fwd = forward(&mut peer);

    let mut plain = start("exposure-plain", &[]);
    peer.next(&states);
    // A bad command's warning comes after every start-up line: the log is read that far.
    peer.wait_matched(&fwd);
    let mark = plain.log.len();
    until_logged(&mut plain, mark, &["WARN", "ros2:"], || {
        fwd.inner.publish(array(vec![f64::NAN])).unwrap()
    });
    let loud: Vec<&String> = plain.log.iter().filter(|l| l.contains(OPEN)).collect();
    assert!(loud.is_empty(), "{loud:?}");
    drop(plain);

    let mut subnet = start("exposure-subnet", &["--ros2-discovery", "subnet"]);
    let line = subnet.wait_for(OPEN);
    assert!(line.contains("ros2"), "{line}");
    // And it still serves this host.
    peer.next(&states);
}

/// One controller at a time: a second peer's commands are refused (a warning) while the first
/// holds the arm, and taken once the first's command writer is gone.
#[test]
fn second_peer_watches_while_first_controls() {
    if !netns::isolated("second_peer_watches_while_first_controls") {
        return;
    }
    let mut first = Peer::new(0, "first");
    let mut second = Peer::new(0, "second");
    let states = joint_states(&mut first);
    let cmd_first = forward(&mut first);
    let cmd_second = forward(&mut second);
    let mut sim = start("two-peers", &[]);

    let home = latest(&mut first, &states).position;
    let mut mine = home.clone();
    mine[0] += 0.2;
    drive_to(&mut first, &cmd_first, &states, &mine, 0, 0.02);

    let mut theirs = home.clone();
    theirs[0] -= 0.2;
    second.wait_matched(&cmd_second);
    let mark = sim.log.len();
    let refusal = ["WARN", "ros2:", "forward_position_controller"];
    let line = until_logged(&mut sim, mark, &refusal, || {
        cmd_second.inner.publish(array(theirs.clone())).unwrap()
    });
    println!("refused: {line}");
    let now = latest(&mut first, &states);
    let later = Time {
        sec: now.header.stamp.sec + 1,
        ..now.header.stamp
    };
    let held = state_after(&mut first, &states, later);
    assert!(
        (held.position[0] - mine[0]).abs() < 0.02,
        "the second peer moved the arm: joint 0 at {}",
        held.position[0]
    );

    // The first stops commanding (its writer goes): the second may take over.
    drop(cmd_first);
    let taken = {
        let what = "the second peer to move the arm";
        second.wait_matched(&cmd_second);
        first.wait(what, |_| {
            let mut got = None;
            while let Some(s) = states.try_take() {
                if (s.position[0] - theirs[0]).abs() < 0.02 {
                    got = Some(s);
                }
            }
            if got.is_none() {
                cmd_second.inner.publish(array(theirs.clone())).unwrap();
            }
            got
        })
    };
    assert!((taken.position[0] - theirs[0]).abs() < 0.02);
}

/// `joint_command` by name: one joint moves, the others keep their targets.
#[test]
fn joint_command_by_name_moves_that_joint() {
    if !netns::isolated("joint_command_by_name_moves_that_joint") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "by_name");
    let states = joint_states(&mut peer);
    let cmd: Pub<JointState> = peer.publisher(
        "joint_command",
        JOINT_STATE,
        QosProfile::publisher_default(),
    );
    let _sim = start("by-name", &[]);

    let home = latest(&mut peer, &states).position;
    let goal = home[0] - 0.2;
    let msg = JointState {
        name: vec![robot.joints[0].clone()],
        position: vec![goal],
        ..Default::default()
    };
    peer.wait_matched(&cmd);
    let reached = peer.wait("joint 0 to follow joint_command", |_| {
        let mut got = None;
        while let Some(s) = states.try_take() {
            if (s.position[0] - goal).abs() < 0.02 {
                got = Some(s);
            }
        }
        if got.is_none() {
            cmd.inner.publish(msg.clone()).unwrap();
        }
        got
    });
    for (i, (p, h)) in reached.position.iter().zip(&home).enumerate().skip(1) {
        assert!((p - h).abs() < 0.05, "joint {i} moved from {h} to {p}");
    }
}

/// A URDF robot's description is published latched: a late subscriber gets the file's text.
#[test]
fn robot_description_reaches_a_late_subscriber() {
    if !netns::isolated("robot_description_reaches_a_late_subscriber") {
        return;
    }
    let scene_path = common::asset("assets/scenes/gripper4.json");
    let scene = armsim::scene::load_scene(&scene_path).expect("gripper4 loads");
    assert!(
        scene.robot_path.extension().is_some_and(|e| e == "urdf"),
        "gripper4's robot is a URDF: {}",
        scene.robot_path.display()
    );
    let urdf = std::fs::read_to_string(&scene.robot_path).expect("the URDF reads");
    let mut peer = Peer::new(0, "description");
    let states = joint_states(&mut peer);
    let _sim = start(
        "description",
        &["--scene", scene_path.to_str().expect("a UTF-8 path")],
    );
    peer.next(&states);
    let latched = reliable(1).durability(Durability::TransientLocal);
    let sub = peer.subscribe::<StdString>("robot_description", ("std_msgs", "String"), latched);
    let got = peer.next(&sub);
    assert_eq!(got.data, urdf);
}

/// `--ros2-namespace /lab`: joint_states and the services move under /lab; /clock stays global.
#[test]
fn the_namespace_flag_moves_relative_names() {
    if !netns::isolated("the_namespace_flag_moves_relative_names") {
        return;
    }
    let robot = robot();
    let mut peer = Peer::new(0, "namespace");
    let in_lab = peer.subscribe::<JointState>("lab/joint_states", JOINT_STATE, reliable(100));
    let at_root = joint_states(&mut peer);
    let clock = peer.subscribe::<Clock>("/clock", CLOCK, reliable(10));
    let get: Service<GetSimulationStateRequest, GetSimulationStateResponse> =
        peer.client("lab/get_simulation_state", "GetSimulationState");
    let _sim = start("namespace", &["--ros2-namespace", "/lab"]);

    for _ in 0..20 {
        assert_eq!(peer.next(&in_lab).name, robot.joints);
    }
    peer.next(&clock);
    let r = peer.call(&get, GetSimulationStateRequest::default());
    assert_eq!(r.state.state, SimulationState::STATE_PLAYING, "{r:?}");
    assert!(
        peer.drain(&at_root).is_empty(),
        "joint_states outside the namespace"
    );
}
