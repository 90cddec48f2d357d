//! What the ROS 2 end-to-end tests share (`ros2.rs`, `ros2_services.rs`): the message type
//! names, the reader QoS, what the default scene's robot is, starting armsim with `--ros2`,
//! and joint-state and command helpers over a [`Peer`].

#![allow(dead_code)]

use armsim::protocol::ros2::msgs::{Float64MultiArray, JointState, Time};
use ros2_client::QosProfile;
use ros2_client::qos::History;

use crate::common;
use crate::common::child::Armsim;
use crate::peer::{Peer, Pub, Sub, nanos};

pub const JOINT_STATE: (&str, &str) = ("sensor_msgs", "JointState");
pub const CLOCK: (&str, &str) = ("rosgraph_msgs", "Clock");
pub const TF: (&str, &str) = ("tf2_msgs", "TFMessage");
pub const FLOAT64_MULTI_ARRAY: (&str, &str) = ("std_msgs", "Float64MultiArray");
pub const JOINT_TRAJECTORY: (&str, &str) = ("trajectory_msgs", "JointTrajectory");

/// A reliable, volatile reader keeping `depth` samples: what RViz and robot_state_publisher
/// ask for.
pub fn reliable(depth: usize) -> QosProfile {
    QosProfile::publisher_default().history(History::KeepLast { depth })
}

/// What a test needs to know of the default scene's robot.
pub struct Robot {
    pub joints: Vec<String>,
    /// `(parent, child)` of each link a joint moves.
    pub moving: Vec<(String, String)>,
    pub root: String,
    pub objects: Vec<String>,
}

pub fn robot() -> Robot {
    let scene = common::default_scene();
    let model = &scene.robot;
    Robot {
        joints: model.joints.iter().map(|j| j.name.clone()).collect(),
        moving: model
            .links
            .iter()
            .filter(|l| l.joint.is_some())
            .map(|l| {
                let parent = l.parent.expect("a moving link has a parent");
                (model.links[parent].name.clone(), l.name.clone())
            })
            .collect(),
        root: model.links[0].name.clone(),
        objects: scene
            .config
            .objects
            .iter()
            .map(|o| o.name.clone())
            .collect(),
    }
}

/// armsim with `--ros2` and `args`, named after the test (its scratch folder).
pub fn start(test: &str, args: &[&str]) -> Sim {
    let mut all = vec!["--ros2"];
    all.extend_from_slice(args);
    Sim(Armsim::start(&format!("ros2-{test}"), &all))
}

/// An armsim child that shows its whole log when the test fails.
pub struct Sim(pub Armsim);

impl std::ops::Deref for Sim {
    type Target = Armsim;
    fn deref(&self) -> &Armsim {
        &self.0
    }
}

impl std::ops::DerefMut for Sim {
    fn deref_mut(&mut self) -> &mut Armsim {
        &mut self.0
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("armsim's log:\n{}", self.0.stop_and_read_log().join("\n"));
        }
    }
}

/// A joint_states reader.
pub fn joint_states(peer: &mut Peer) -> Sub<JointState> {
    peer.subscribe("joint_states", JOINT_STATE, reliable(100))
}

/// The newest joint state once one has arrived (the arm as it is now, within a frame).
pub fn latest(peer: &mut Peer, sub: &Sub<JointState>) -> JointState {
    let mut last = peer.next(sub);
    last = peer.drain(sub).pop().unwrap_or(last);
    last
}

/// A joint state stamped after `after` (sim time), skipping what was in flight.
pub fn state_after(peer: &mut Peer, sub: &Sub<JointState>, after: Time) -> JointState {
    peer.next_where(sub, "a joint state after the action", |s| {
        s.header.stamp > after
    })
}

/// The forward controller's command writer (reliable, as `ros2 topic pub` writes).
pub fn forward(peer: &mut Peer) -> Pub<Float64MultiArray> {
    peer.publisher(
        "forward_position_controller/commands",
        FLOAT64_MULTI_ARRAY,
        QosProfile::publisher_default(),
    )
}

pub fn array(data: Vec<f64>) -> Float64MultiArray {
    Float64MultiArray {
        data,
        ..Default::default()
    }
}

/// Publishes `target` (every joint, robot order) on each joint state until joint `j` is within
/// `tol` of it; returns that state. Re-sending is harmless (the newest command wins) and covers
/// a best-effort sample lost on the way.
pub fn drive_to(
    peer: &mut Peer,
    cmd: &Pub<Float64MultiArray>,
    states: &Sub<JointState>,
    target: &[f64],
    j: usize,
    tol: f64,
) -> JointState {
    peer.wait_matched(cmd);
    let what = format!("joint {j} to reach {:.3}", target[j]);
    peer.wait(&what, |_| {
        let mut reached = None;
        while let Some(s) = states.try_take() {
            if (s.position[j] - target[j]).abs() < tol {
                reached = Some(s);
                break;
            }
        }
        if reached.is_none() {
            cmd.inner
                .publish(array(target.to_vec()))
                .expect("the command is written");
        }
        reached
    })
}

pub fn assert_near_all(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() < tol,
            "{what}: joint {i} at {g}, expected {w}"
        );
    }
}

/// Whether `t` is a whole number of physics steps from the episode start, as a sim-time stamp
/// is (`floor(steps * 1e9 / 240)` ns), and not a wall-clock reading.
pub fn on_a_step(t: Time) -> bool {
    let ns = nanos(t) as i128;
    let steps = (ns * 240 + 500_000_000) / 1_000_000_000;
    steps * 1_000_000_000 / 240 == ns
}

/// Does `send` until armsim logs a line (after line `from`) holding every one of `what`, and
/// returns it. A command is best effort, and armsim's reader drops a sample from a writer it has
/// not matched yet (our side may match first), so a command that must arrive is repeated
/// (every half second; armsim logs bad input at most once a second per topic).
pub fn until_logged(
    sim: &mut Armsim,
    from: usize,
    what: &[&str],
    mut send: impl FnMut(),
) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        send();
        let wait = std::time::Duration::from_millis(500);
        if let Some(line) = sim.line_after_within(from, what, wait) {
            return line;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no log line with {what:?} after line {from}; the log:\n{}",
            sim.log.join("\n")
        );
    }
}
