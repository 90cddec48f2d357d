//! Tests of the `/joint_command` and `/forward_position_controller/commands` validators: every
//! refusal names what was wrong, and an accepted message yields exactly the named joints.

use proptest::prelude::*;

use super::*;

const JOINTS: &[&str] = &["shoulder", "elbow", "wrist", "gripper"];

fn state(names: &[&str], position: &[f64], velocity: &[f64], effort: &[f64]) -> JointState {
    JointState {
        name: names.iter().map(|s| s.to_string()).collect(),
        position: position.to_vec(),
        velocity: velocity.to_vec(),
        effort: effort.to_vec(),
        ..JointState::default()
    }
}

#[test]
fn positions_by_name_map_to_robot_indices() {
    let msg = state(&["wrist", "shoulder"], &[0.5, -1.0], &[], &[]);
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap(),
        vec![
            (2, JointGoal::Position(0.5)),
            (0, JointGoal::Position(-1.0))
        ]
    );
}

#[test]
fn first_non_empty_array_wins() {
    // Position beats velocity and effort.
    let msg = state(&["elbow"], &[0.1], &[0.2], &[0.3]);
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap(),
        vec![(1, JointGoal::Position(0.1))]
    );
    // Velocity beats effort when position is empty.
    let msg = state(&["elbow"], &[], &[0.2], &[0.3]);
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap(),
        vec![(1, JointGoal::Velocity(0.2))]
    );
    // Effort alone.
    let msg = state(&["elbow", "gripper"], &[], &[], &[0.3, -2.0]);
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap(),
        vec![(1, JointGoal::Effort(0.3)), (3, JointGoal::Effort(-2.0))]
    );
}

#[test]
fn only_named_joints_are_returned() {
    let msg = state(&["gripper"], &[0.02], &[], &[]);
    let goals = joint_command(&msg, JOINTS).unwrap();
    assert_eq!(goals, vec![(3, JointGoal::Position(0.02))]);
}

#[test]
fn unknown_joint_is_refused_and_named() {
    let msg = state(&["elbow", "knee"], &[0.0, 0.0], &[], &[]);
    let err = joint_command(&msg, JOINTS).unwrap_err();
    assert_eq!(
        err,
        CommandError::Name(JointNameError::Unknown {
            name: "knee".into(),
            known: "shoulder, elbow, wrist, gripper".into(),
        })
    );
    let text = err.to_string();
    assert!(
        text.contains("\"knee\"") && text.contains("shoulder, elbow"),
        "{text}"
    );
}

#[test]
fn duplicate_joint_is_refused() {
    let msg = state(&["elbow", "wrist", "elbow"], &[0.0, 0.0, 0.0], &[], &[]);
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap_err(),
        CommandError::Name(JointNameError::Duplicate("elbow".into()))
    );
}

#[test]
fn too_many_names_are_refused_before_lookup() {
    // All unknown: the count is what must be reported, not the first unknown name.
    let names: Vec<String> = (0..=MAX_NAMES).map(|i| format!("j{i}")).collect();
    let msg = JointState {
        name: names,
        ..JointState::default()
    };
    assert_eq!(
        joint_command(&msg, JOINTS).unwrap_err(),
        CommandError::Name(JointNameError::TooMany {
            got: MAX_NAMES + 1,
            max: MAX_NAMES
        })
    );
}

#[test]
fn empty_and_valueless_commands_are_refused() {
    assert_eq!(
        joint_command(&JointState::default(), JOINTS).unwrap_err(),
        CommandError::Empty
    );
    assert_eq!(
        joint_command(&state(&["elbow"], &[], &[], &[]), JOINTS).unwrap_err(),
        CommandError::NoValues
    );
}

#[test]
fn wrong_lengths_are_refused_in_any_array() {
    let names = ["shoulder", "elbow"];
    for (field, msg) in [
        ("position", state(&names, &[0.0], &[], &[])),
        ("position", state(&names, &[0.0, 0.0, 0.0], &[], &[])),
        // A short velocity is wrong even though position (which would win) is fine.
        ("velocity", state(&names, &[0.0, 0.0], &[1.0], &[])),
        ("effort", state(&names, &[], &[], &[1.0, 2.0, 3.0])),
    ] {
        let got = match field {
            "position" => msg.position.len(),
            "velocity" => msg.velocity.len(),
            _ => msg.effort.len(),
        };
        assert_eq!(
            joint_command(&msg, JOINTS).unwrap_err(),
            CommandError::WrongLength {
                field,
                names: 2,
                got
            },
            "{field}"
        );
    }
    // Values with no names at all: the names are what is missing.
    assert_eq!(
        joint_command(&state(&[], &[1.0], &[], &[]), JOINTS).unwrap_err(),
        CommandError::Empty
    );
}

#[test]
fn non_finite_values_are_refused_anywhere() {
    let names = ["shoulder", "elbow"];
    let cases = [
        (
            "position",
            "elbow",
            state(&names, &[0.0, f64::NAN], &[], &[]),
        ),
        (
            "position",
            "shoulder",
            state(&names, &[f64::INFINITY, 0.0], &[], &[]),
        ),
        // In the losing velocity array too: a NaN anywhere is a broken sender.
        (
            "velocity",
            "elbow",
            state(&names, &[0.0, 0.0], &[0.0, f64::NEG_INFINITY], &[]),
        ),
        (
            "effort",
            "shoulder",
            state(&names, &[], &[], &[f64::NAN, 1.0]),
        ),
    ];
    for (field, joint, msg) in cases {
        match joint_command(&msg, JOINTS).unwrap_err() {
            CommandError::NotFinite {
                joint: j,
                field: f,
                value,
            } => {
                assert_eq!((j.as_str(), f), (joint, field));
                assert!(!value.is_finite());
            }
            other => panic!("{field} {joint}: {other:?}"),
        }
    }
}

#[test]
fn long_names_are_cut_in_errors() {
    let long = "x".repeat(10_000);
    let msg = state(&[&long], &[0.0], &[], &[]);
    let text = joint_command(&msg, JOINTS).unwrap_err().to_string();
    assert!(text.len() < 300, "{} bytes", text.len());
    assert!(text.contains('…'));
}

#[test]
fn forward_positions_in_robot_order() {
    let msg = Float64MultiArray {
        data: vec![0.1, 0.2, 0.3, 0.4],
        ..Float64MultiArray::default()
    };
    assert_eq!(
        forward_positions(&msg, JOINTS.len()).unwrap(),
        vec![0.1, 0.2, 0.3, 0.4]
    );
}

#[test]
fn forward_positions_wrong_count_is_refused() {
    for len in [0, 3, 5] {
        let msg = Float64MultiArray {
            data: vec![0.0; len],
            ..Float64MultiArray::default()
        };
        assert_eq!(
            forward_positions(&msg, 4).unwrap_err(),
            CommandError::WrongCount {
                expected: 4,
                got: len
            }
        );
    }
}

#[test]
fn forward_positions_non_finite_is_refused() {
    let msg = Float64MultiArray {
        data: vec![0.0, 0.0, f64::NAN, f64::INFINITY],
        ..Float64MultiArray::default()
    };
    match forward_positions(&msg, 4).unwrap_err() {
        CommandError::NotFiniteData { index, value } => {
            assert_eq!(index, 2);
            assert!(value.is_nan());
        }
        other => panic!("{other:?}"),
    }
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -10.0..10.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
    ]
}

proptest! {
    /// Arbitrary names and arrays never panic; when accepted, every goal is finite, one per
    /// name, at that name's robot index.
    #[test]
    fn arbitrary_joint_commands_never_panic(
        name in prop::collection::vec(
            prop_oneof![
                prop::sample::select(JOINTS.to_vec()).prop_map(String::from),
                "[a-z]{0,6}",
            ],
            0..6,
        ),
        position in prop::collection::vec(value(), 0..6),
        velocity in prop::collection::vec(value(), 0..6),
        effort in prop::collection::vec(value(), 0..6),
    ) {
        let msg = JointState { name, position, velocity, effort, ..JointState::default() };
        if let Ok(goals) = joint_command(&msg, JOINTS) {
            prop_assert_eq!(goals.len(), msg.name.len());
            for ((index, goal), name) in goals.iter().zip(&msg.name) {
                prop_assert_eq!(JOINTS[*index], name.as_str());
                let (JointGoal::Position(v) | JointGoal::Velocity(v) | JointGoal::Effort(v)) = *goal;
                prop_assert!(v.is_finite());
            }
        }
    }

    #[test]
    fn arbitrary_forward_commands_never_panic(
        data in prop::collection::vec(value(), 0..6),
        joint_count in 0usize..6,
    ) {
        let msg = Float64MultiArray { data, ..Float64MultiArray::default() };
        if let Ok(positions) = forward_positions(&msg, joint_count) {
            prop_assert_eq!(positions.len(), joint_count);
            prop_assert!(positions.iter().all(|p| p.is_finite()));
        }
    }
}
