//! Fuzzes the ROS 2 CDR decoder on the message types armsim subscribes to: arbitrary bytes
//! behind either byte order's encapsulation header (or none), decoded as each inbound type, and
//! whatever decodes must encode and decode again to the same bytes. Decoded commands then go
//! through the validators the bridge runs (`command`, `trajectory`), which must never panic and
//! whose accepted trajectories must sample to finite targets.
#![no_main]

use libfuzzer_sys::fuzz_target;

use armsim_core::protocol::ros2::cdr;
use armsim_core::protocol::ros2::command::{forward_positions, joint_command};
use armsim_core::protocol::ros2::msgs::{
    Float64MultiArray, JointState, JointTrajectory, StdString,
};
use armsim_core::protocol::ros2::trajectory::Trajectory;

/// A robot's joint names. Random names rarely match it, so each message is also validated
/// against its own names (see `own_joints`), which gets past the name checks to the rest.
const JOINTS: &[&str] = &["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex"];
/// Sim time at arrival, off the 240 Hz grid on purpose.
const NOW: f64 = 12.345;

/// A macro rather than a generic fn, so the fuzz crate needs no serde dependency of its own.
macro_rules! check {
    ($ty:ty, $payload:expr) => {
        if let Ok(value) = cdr::decode::<$ty>($payload) {
            let bytes = cdr::encode(&value);
            let again: $ty = cdr::decode(&bytes).expect("our own bytes decode");
            assert_eq!(cdr::encode(&again), bytes);
        }
    };
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the header, so most inputs reach the body rather than the
    // encapsulation check.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mut payload = match head % 3 {
        0 => vec![0, 1, 0, 0],
        1 => vec![0, 0, 0, 0],
        _ => Vec::new(),
    };
    payload.extend_from_slice(rest);
    check!(JointState, &payload);
    check!(Float64MultiArray, &payload);
    check!(JointTrajectory, &payload);
    check!(StdString, &payload);

    if let Ok(msg) = cdr::decode::<JointState>(&payload) {
        let own = own_joints(&msg.name);
        for joints in [JOINTS, &own[..]] {
            if let Ok(goals) = joint_command(&msg, joints) {
                assert_eq!(goals.len(), msg.name.len());
            }
        }
    }
    if let Ok(msg) = cdr::decode::<Float64MultiArray>(&payload) {
        for count in [JOINTS.len(), msg.data.len()] {
            if let Ok(positions) = forward_positions(&msg, count) {
                assert!(positions.iter().all(|p| p.is_finite()));
            }
        }
    }
    if let Ok(msg) = cdr::decode::<JointTrajectory>(&payload) {
        let own = own_joints(&msg.joint_names);
        for joints in [JOINTS, &own[..]] {
            let current: Vec<f64> = (0..joints.len()).map(|i| i as f64 * 0.25).collect();
            let Ok(trajectory) = Trajectory::new(&msg, joints, NOW, &current) else {
                continue;
            };
            let (start, end) = (trajectory.start_time(), trajectory.end_time());
            for t in [NOW, start, (start + end) / 2.0, end, end + 1.0] {
                let samples = trajectory.sample(t);
                assert_eq!(samples.len(), trajectory.joints().len());
                assert!(
                    samples.iter().all(|s| s.1.is_finite() && s.2.is_finite()),
                    "{samples:?} at {t}"
                );
            }
        }
    }
});

/// The message's own names, each once, in order: a robot with exactly these joints.
fn own_joints(names: &[String]) -> Vec<&str> {
    let mut joints: Vec<&str> = Vec::new();
    // Bounded like the validators, so a message of many names costs no quadratic search here.
    for name in names.iter().take(256) {
        if !joints.contains(&name.as_str()) {
            joints.push(name);
        }
    }
    joints
}
