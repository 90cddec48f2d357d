//! Tests of `/joint_trajectory` validation (each refusal, at the right point) and sampling:
//! knots hit exactly, the start from the current pose, past and future stamps, the hold after
//! the end, Hermite tangents, plus properties over arbitrary messages.

use proptest::prelude::*;

use super::*;
use crate::protocol::ros2::command::MAX_NAMES;
use crate::protocol::ros2::msgs::{Header, JointTrajectoryPoint};

const JOINTS: &[&str] = &["a", "b", "c"];
const CURRENT: &[f64] = &[10.0, 20.0, 30.0];

/// Seconds as a `Duration`; tests use binary fractions, so the conversion is exact.
fn dur(seconds: f64) -> Duration {
    let sec = seconds.floor();
    Duration {
        sec: sec as i32,
        nanosec: ((seconds - sec) * 1e9).round() as u32,
    }
}

fn point(seconds: f64, positions: &[f64], velocities: &[f64]) -> JointTrajectoryPoint {
    JointTrajectoryPoint {
        positions: positions.to_vec(),
        velocities: velocities.to_vec(),
        time_from_start: dur(seconds),
        ..JointTrajectoryPoint::default()
    }
}

fn msg(names: &[&str], points: Vec<JointTrajectoryPoint>) -> JointTrajectory {
    JointTrajectory {
        header: Header::default(),
        joint_names: names.iter().map(|s| s.to_string()).collect(),
        points,
    }
}

fn stamped(mut m: JointTrajectory, sec: i32, nanosec: u32) -> JointTrajectory {
    m.header.stamp = Time { sec, nanosec };
    m
}

fn new(m: &JointTrajectory, now: f64) -> Result<Trajectory, TrajectoryError> {
    Trajectory::new(m, JOINTS, now, CURRENT)
}

/// The positions of a sample, in trajectory joint order.
fn positions(samples: &[(usize, f64, f64)]) -> Vec<f64> {
    samples.iter().map(|s| s.1).collect()
}

fn velocities(samples: &[(usize, f64, f64)]) -> Vec<f64> {
    samples.iter().map(|s| s.2).collect()
}

// --- validation ---------------------------------------------------------------------------

#[test]
fn unknown_duplicate_and_missing_joint_names_are_refused() {
    let p = || vec![point(1.0, &[0.0, 0.0], &[])];
    assert!(matches!(
        new(&msg(&["a", "z"], p()), 0.0),
        Err(TrajectoryError::Name(JointNameError::Unknown { name, .. })) if name == "z"
    ));
    assert_eq!(
        new(&msg(&["b", "b"], p()), 0.0),
        Err(TrajectoryError::Name(JointNameError::Duplicate("b".into())))
    );
    assert_eq!(
        new(&msg(&[], vec![point(1.0, &[], &[])]), 0.0),
        Err(TrajectoryError::NoJoints)
    );
    let many: Vec<String> = (0..=MAX_NAMES).map(|i| format!("j{i}")).collect();
    let m = JointTrajectory {
        joint_names: many,
        ..JointTrajectory::default()
    };
    assert!(matches!(
        new(&m, 0.0),
        Err(TrajectoryError::Name(JointNameError::TooMany { got, .. })) if got == MAX_NAMES + 1
    ));
}

#[test]
fn no_points_and_too_many_points_are_refused() {
    assert_eq!(
        new(&msg(&["a"], vec![]), 0.0),
        Err(TrajectoryError::NoPoints)
    );
    // The count is refused before any point is looked at (these points are all invalid).
    let points = vec![JointTrajectoryPoint::default(); MAX_POINTS + 1];
    assert_eq!(
        new(&msg(&["a"], points), 0.0),
        Err(TrajectoryError::TooManyPoints {
            got: MAX_POINTS + 1,
            max: MAX_POINTS
        })
    );
}

#[test]
fn wrong_lengths_name_the_point() {
    let ok = |t| point(t, &[1.0, 2.0], &[]);
    let m = msg(&["a", "b"], vec![ok(1.0), point(2.0, &[1.0], &[]), ok(3.0)]);
    assert_eq!(
        new(&m, 0.0),
        Err(TrajectoryError::WrongLength {
            point: 1,
            field: "positions",
            names: 2,
            got: 1
        })
    );
    let m = msg(&["a", "b"], vec![ok(1.0), ok(2.0), point(3.0, &[], &[])]);
    assert!(matches!(
        new(&m, 0.0),
        Err(TrajectoryError::WrongLength {
            point: 2,
            field: "positions",
            got: 0,
            ..
        })
    ));
    let m = msg(&["a", "b"], vec![point(1.0, &[1.0, 2.0], &[0.0, 0.0, 0.0])]);
    let err = new(&m, 0.0).unwrap_err();
    assert!(matches!(
        err,
        TrajectoryError::WrongLength {
            point: 0,
            field: "velocities",
            got: 3,
            ..
        }
    ));
    assert!(err.to_string().contains("may also be empty"), "{err}");
}

#[test]
fn non_finite_and_huge_values_name_the_point_and_joint() {
    let m = msg(
        &["a", "b"],
        vec![
            point(1.0, &[0.0, 0.0], &[]),
            point(2.0, &[0.0, f64::NAN], &[]),
        ],
    );
    assert!(matches!(
        new(&m, 0.0),
        Err(TrajectoryError::NotFinite { point: 1, field: "positions", ref joint, value })
            if joint == "b" && value.is_nan()
    ));
    let m = msg(&["a"], vec![point(1.0, &[0.0], &[f64::INFINITY])]);
    assert!(matches!(
        new(&m, 0.0),
        Err(TrajectoryError::NotFinite {
            point: 0,
            field: "velocities",
            ..
        })
    ));
    let m = msg(&["c"], vec![point(1.0, &[-1e10], &[])]);
    assert!(matches!(
        new(&m, 0.0),
        Err(TrajectoryError::OutOfRange { point: 0, field: "positions", ref joint, .. })
            if joint == "c"
    ));
}

#[test]
fn times_going_backwards_or_repeating_are_refused() {
    for (second, k) in [(1.0, 1), (0.5, 1)] {
        let m = msg(
            &["a"],
            vec![
                point(1.0, &[0.0], &[]),
                point(second, &[1.0], &[]),
                point(3.0, &[2.0], &[]),
            ],
        );
        let err = new(&m, 0.0).unwrap_err();
        assert_eq!(
            err,
            TrajectoryError::TimesGoBackwards {
                point: k,
                previous: 1.0,
                time: second
            }
        );
        assert!(err.to_string().starts_with("times go backwards at point 1"));
    }
    // One nanosecond apart is strictly increasing; the first point may be at 0.
    let m = msg(
        &["a"],
        vec![
            point(0.0, &[0.0], &[]),
            JointTrajectoryPoint {
                positions: vec![1.0],
                time_from_start: Duration { sec: 0, nanosec: 1 },
                ..JointTrajectoryPoint::default()
            },
        ],
    );
    assert!(new(&m, 0.0).is_ok());
}

#[test]
fn bad_durations_and_stamps_are_refused() {
    let at = |sec, nanosec| JointTrajectoryPoint {
        positions: vec![0.0],
        time_from_start: Duration { sec, nanosec },
        ..JointTrajectoryPoint::default()
    };
    assert_eq!(
        new(&msg(&["a"], vec![at(1, 1_000_000_000)]), 0.0),
        Err(TrajectoryError::BadDuration {
            point: 0,
            sec: 1,
            nanosec: 1_000_000_000
        })
    );
    assert!(matches!(
        new(&msg(&["a"], vec![at(0, 0), at(-1, 500)]), 0.0),
        Err(TrajectoryError::BadDuration {
            point: 1,
            sec: -1,
            ..
        })
    ));
    let ok = msg(&["a"], vec![point(1.0, &[0.0], &[])]);
    assert!(matches!(
        new(&stamped(ok.clone(), 1, 1_000_000_000), 0.0),
        Err(TrajectoryError::BadStamp { .. })
    ));
    assert!(matches!(
        new(&stamped(ok, -3, 0), 0.0),
        Err(TrajectoryError::BadStamp { sec: -3, .. })
    ));
}

#[test]
fn wall_clock_stamps_and_finished_trajectories_are_refused() {
    let m = msg(&["a"], vec![point(1.0, &[0.0], &[])]);
    // A 2026 wall-clock stamp against a sim that has run 12 s.
    let err = new(&stamped(m.clone(), 1_790_000_000, 0), 12.0).unwrap_err();
    assert!(matches!(
        err,
        TrajectoryError::StampFarAhead { now: 12.0, .. }
    ));
    assert!(err.to_string().contains("use_sim_time"), "{err}");
    // Stamped at 5 s, last point at 6 s, arriving at 8 s: all of it is over.
    assert_eq!(
        new(&stamped(m.clone(), 5, 0), 8.0),
        Err(TrajectoryError::EndsInPast { end: 6.0, now: 8.0 })
    );
    // Ending exactly now is accepted: the last point is the target at once.
    let t = new(&stamped(m, 5, 0), 6.0).unwrap();
    assert_eq!(t.sample(6.0), vec![(0, 0.0, 0.0)]);
}

#[test]
fn accelerations_and_effort_are_ignored() {
    let m = msg(
        &["a"],
        vec![JointTrajectoryPoint {
            positions: vec![1.0],
            accelerations: vec![f64::NAN, 2.0, 3.0],
            effort: vec![f64::INFINITY],
            time_from_start: dur(1.0),
            ..JointTrajectoryPoint::default()
        }],
    );
    assert!(new(&m, 0.0).is_ok());
}

#[test]
fn current_of_the_wrong_length_is_an_error_not_a_panic() {
    let m = msg(&["c"], vec![point(1.0, &[0.0], &[])]);
    assert_eq!(
        Trajectory::new(&m, JOINTS, 0.0, &[1.0]),
        Err(TrajectoryError::CurrentLength {
            expected: 3,
            got: 1
        })
    );
}

// --- sampling -----------------------------------------------------------------------------

#[test]
fn partial_joints_in_message_order() {
    let m = msg(&["c", "a"], vec![point(1.0, &[3.0, 1.0], &[])]);
    let t = new(&m, 0.0).unwrap();
    assert_eq!(t.joints(), &[2, 0]);
    assert_eq!(t.sample(5.0), vec![(2, 3.0, 0.0), (0, 1.0, 0.0)]);
}

#[test]
fn starts_from_current_and_reaches_point_zero_linearly() {
    let m = msg(&["a", "b"], vec![point(2.0, &[14.0, 20.0], &[])]);
    let t = new(&m, 3.0).unwrap();
    assert_eq!(t.start_time(), 3.0);
    assert_eq!(t.end_time(), 5.0);
    // At arrival: exactly where the joints are.
    assert_eq!(positions(&t.sample(3.0)), vec![10.0, 20.0]);
    // Halfway, with the slope as the velocity.
    assert_eq!(t.sample(4.0), vec![(0, 12.0, 2.0), (1, 20.0, 0.0)]);
    assert_eq!(t.sample(5.0), vec![(0, 14.0, 0.0), (1, 20.0, 0.0)]);
    // Before arrival (a caller bug) and at a NaN time: hold, never interpolate backwards.
    assert_eq!(t.sample(1.0), vec![(0, 10.0, 0.0), (1, 20.0, 0.0)]);
    assert_eq!(positions(&t.sample(f64::NAN)), vec![10.0, 20.0]);
}

#[test]
fn point_zero_at_time_zero_is_the_target_at_once() {
    let m = msg(
        &["b"],
        vec![point(0.0, &[-1.0], &[]), point(1.0, &[1.0], &[])],
    );
    let t = new(&m, 7.5).unwrap();
    assert_eq!(t.sample(7.5), vec![(1, -1.0, 2.0)]);
}

#[test]
fn linear_knots_are_hit_exactly_and_the_end_is_held() {
    let m = msg(
        &["a", "c"],
        vec![
            point(0.25, &[0.1, 0.7], &[]),
            point(0.75, &[0.3, -0.2], &[]),
            point(2.0, &[-0.9, 0.4], &[]),
        ],
    );
    let t = new(&m, 1.0 / 3.0).unwrap();
    for (k, p) in m.points.iter().enumerate() {
        assert_eq!(positions(&t.sample(t.knots[k])), p.positions, "knot {k}");
    }
    for later in [0.0, 1e-9, 1.0, 1e6] {
        assert_eq!(
            t.sample(t.end_time() + later),
            vec![(0, -0.9, 0.0), (2, 0.4, 0.0)]
        );
    }
    // Inside a segment the velocity is that segment's slope.
    let mid = (t.knots[1] + t.knots[2]) / 2.0;
    let v = velocities(&t.sample(mid));
    assert!((v[0] - (-1.2 / 1.25)).abs() < 1e-12, "{v:?}");
}

#[test]
fn hermite_passes_through_knots_with_their_velocities() {
    let m = msg(
        &["a", "b"],
        vec![
            point(1.0, &[0.0, 1.0], &[0.5, -0.25]),
            point(2.5, &[1.0, 0.0], &[0.0, 2.0]),
            point(3.0, &[0.5, 0.5], &[-1.0, 0.125]),
        ],
    );
    let t = new(&m, 0.0).unwrap();
    // The last knot is held with velocity 0, so check the interior knots' velocities.
    for k in 0..2 {
        let s = t.sample(t.knots[k]);
        assert_eq!(positions(&s), m.points[k].positions, "knot {k}");
        assert_eq!(velocities(&s), m.points[k].velocities, "knot {k}");
    }
    // Approaching knot 1 from the left: position and velocity converge to its values.
    let s = t.sample(t.knots[1] - 1e-9);
    for (i, &(_, p, v)) in s.iter().enumerate() {
        assert!((p - m.points[1].positions[i]).abs() < 1e-8, "{s:?}");
        assert!((v - m.points[1].velocities[i]).abs() < 1e-6, "{s:?}");
    }
    // Not linear: with zero end velocities a cubic is at the chord midpoint but moves
    // 1.5 times the chord slope there.
    let m = msg(
        &["a"],
        vec![point(1.0, &[0.0], &[0.0]), point(3.0, &[2.0], &[0.0])],
    );
    let t = new(&m, 0.0).unwrap();
    assert_eq!(t.sample(2.0), vec![(0, 1.0, 1.5)]);
}

#[test]
fn hermite_needs_velocities_on_both_ends() {
    let m = msg(
        &["a"],
        vec![point(1.0, &[0.0], &[0.0]), point(3.0, &[2.0], &[])],
    );
    let t = new(&m, 0.0).unwrap();
    // Linear: the chord midpoint with the chord slope.
    assert_eq!(t.sample(2.0), vec![(0, 1.0, 1.0)]);
}

#[test]
fn a_future_stamp_holds_the_current_pose_until_it() {
    let m = stamped(msg(&["a"], vec![point(1.0, &[12.0], &[])]), 10, 500_000_000);
    let t = new(&m, 4.0).unwrap();
    assert_eq!(t.start_time(), 10.5);
    assert_eq!(t.sample(4.0), vec![(0, 10.0, 0.0)]);
    assert_eq!(t.sample(10.25), vec![(0, 10.0, 0.0)]);
    assert_eq!(t.sample(10.5), vec![(0, 10.0, 2.0)]);
    assert_eq!(t.sample(11.0), vec![(0, 11.0, 2.0)]);
    assert_eq!(t.sample(11.5), vec![(0, 12.0, 0.0)]);
}

#[test]
fn a_past_stamp_skips_the_elapsed_time() {
    // Stamped 1.5 s before arrival: at arrival it is halfway between the points at 1 s and
    // 2 s, and the current pose is not visited.
    let points = vec![point(1.0, &[1.0], &[]), point(2.0, &[2.0], &[])];
    let m = stamped(msg(&["a"], points.clone()), 8, 500_000_000);
    let t = new(&m, 10.0).unwrap();
    assert_eq!(t.end_time(), 10.5);
    assert_eq!(t.sample(10.0), vec![(0, 1.5, 1.0)]);
    // Stamped 0.5 s before: the first point is still 0.5 s ahead, reached on time from the
    // current pose (10.0 -> 1.0 in 0.5 s).
    let m = stamped(msg(&["a"], points), 9, 500_000_000);
    let t = new(&m, 10.0).unwrap();
    assert_eq!(t.start_time(), 10.0);
    assert_eq!(t.sample(10.0), vec![(0, 10.0, -18.0)]);
    assert_eq!(t.sample(10.5), vec![(0, 1.0, 1.0)]);
}

#[test]
fn same_input_same_samples() {
    let m = msg(
        &["a", "b", "c"],
        vec![
            point(0.5, &[0.0, 1.0, 2.0], &[0.1, 0.2, 0.3]),
            point(1.0, &[1.0, 0.0, -2.0], &[0.0, 0.0, 0.0]),
        ],
    );
    let (x, y) = (new(&m, 2.0).unwrap(), new(&m, 2.0).unwrap());
    assert_eq!(x, y);
    for i in 0..100 {
        let t = 2.0 + i as f64 / 64.0;
        assert_eq!(x.sample(t), y.sample(t));
    }
}

// --- properties ---------------------------------------------------------------------------

/// Strictly increasing times (ns) from positive gaps.
fn gaps() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(1u32..2_000_000_000, 1..6)
}

fn times(gaps: &[u32], first_at_zero: bool) -> Vec<Duration> {
    let mut ns: u64 = if first_at_zero { 0 } else { gaps[0] as u64 };
    let mut out = Vec::new();
    for (i, g) in gaps.iter().enumerate() {
        if i > 0 {
            ns += *g as u64;
        }
        out.push(Duration {
            sec: (ns / 1_000_000_000) as i32,
            nanosec: (ns % 1_000_000_000) as u32,
        });
    }
    out
}

fn build(durations: &[Duration], positions: &[f64], velocities: Option<&[f64]>) -> JointTrajectory {
    JointTrajectory {
        header: Header::default(),
        joint_names: vec!["b".into()],
        points: durations
            .iter()
            .enumerate()
            .map(|(k, &d)| JointTrajectoryPoint {
                positions: vec![positions[k]],
                velocities: velocities.map(|v| vec![v[k]]).unwrap_or_default(),
                time_from_start: d,
                ..JointTrajectoryPoint::default()
            })
            .collect(),
    }
}

fn any_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -5.0..5.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(2e9),
        1 => Just(-MAX_MAGNITUDE),
    ]
}

fn any_point() -> impl Strategy<Value = JointTrajectoryPoint> {
    (
        prop::collection::vec(any_value(), 0..4),
        prop::collection::vec(any_value(), 0..4),
        prop::collection::vec(any_value(), 0..2),
        prop_oneof![-2i32..4, Just(i32::MAX), Just(i32::MIN)],
        prop_oneof![0u32..1_000_000_000, Just(1_000_000_000), Just(u32::MAX)],
    )
        .prop_map(|(positions, velocities, accelerations, sec, nanosec)| {
            JointTrajectoryPoint {
                positions,
                velocities,
                accelerations,
                effort: vec![],
                time_from_start: Duration { sec, nanosec },
            }
        })
}

proptest! {
    /// Linear segments (no velocities) never leave the hull of their two knots, and the move
    /// from the current pose never leaves the hull of the current pose and point 0.
    #[test]
    fn linear_samples_stay_within_neighbouring_knots(
        gaps in gaps(),
        first_at_zero in any::<bool>(),
        positions in prop::collection::vec(-1e9..1e9f64, 6),
        now in 0.0..1e6f64,
        fractions in prop::collection::vec(0.0..1.0f64, 8),
    ) {
        let durations = times(&gaps, first_at_zero);
        let m = build(&durations, &positions, None);
        let t = new(&m, now).unwrap();
        let mut bounds = vec![(t.start_time(), CURRENT[1])];
        bounds.extend(t.knots.iter().zip(&positions).map(|(&k, &p)| (k, p)));
        for w in bounds.windows(2) {
            let ((t0, p0), (t1, p1)) = (w[0], w[1]);
            for f in &fractions {
                let at = t0 + (t1 - t0) * f;
                let s = t.sample(at);
                prop_assert_eq!(s.len(), 1);
                let (j, p, v) = s[0];
                prop_assert_eq!(j, 1);
                prop_assert!(p >= p0.min(p1) && p <= p0.max(p1), "{} at {} not in [{}, {}]", p, at, p0, p1);
                prop_assert!(v.is_finite());
            }
        }
    }

    /// With velocities on every point, each interior knot is hit exactly, position and
    /// velocity; the last is held.
    #[test]
    fn hermite_knots_are_exact(
        gaps in gaps(),
        positions in prop::collection::vec(-10.0..10.0f64, 6),
        velocities in prop::collection::vec(-10.0..10.0f64, 6),
        now in 0.0..1e3f64,
    ) {
        let durations = times(&gaps, false);
        let m = build(&durations, &positions, Some(&velocities));
        let t = new(&m, now).unwrap();
        let last = t.knots.len() - 1;
        for k in 0..=last {
            let (_, p, v) = t.sample(t.knots[k])[0];
            prop_assert_eq!(p, positions[k]);
            prop_assert_eq!(v, if k == last { 0.0 } else { velocities[k] });
        }
    }

    /// Arbitrary messages never panic; when accepted, every sample is finite and covers the
    /// trajectory's joints.
    #[test]
    fn arbitrary_trajectories_never_panic(
        names in prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", ""]), 0..4),
        points in prop::collection::vec(any_point(), 0..5),
        stamp_sec in prop_oneof![Just(0i32), -1i32..20, Just(i32::MAX)],
        stamp_nanosec in prop_oneof![Just(0u32), 0u32..1_000_000_000, Just(u32::MAX)],
        now in prop_oneof![Just(0.0), 0.0..30.0f64],
        at in prop::collection::vec(-5.0..60.0f64, 4),
    ) {
        let m = stamped(msg(&names, points), stamp_sec, stamp_nanosec);
        if let Ok(t) = new(&m, now) {
            prop_assert!(t.end_time().is_finite() && t.end_time() >= now);
            for x in at.iter().copied().chain([now, t.start_time(), t.end_time()]) {
                let s = t.sample(x);
                prop_assert_eq!(s.len(), t.joints().len());
                for (i, &(j, p, v)) in s.iter().enumerate() {
                    prop_assert_eq!(j, t.joints()[i]);
                    prop_assert!(p.is_finite() && v.is_finite(), "{:?} at {}", s, x);
                }
            }
        }
    }
}
