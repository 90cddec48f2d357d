//! Unit tests of forward kinematics, Jacobians, IK and gravity compensation.

use super::*;
use crate::robot::mjcf::parse_mjcf;
use crate::robot::model::{Inertial, Joint, Mimic};
use glam::Vec2;
use std::f32::consts::{FRAC_PI_2, PI};

const ARM6: &str = include_str!("../../../../../assets/robots/arm6.xml");

fn link(name: &str, parent: Option<usize>, origin: Vec3, joint: Option<usize>) -> Link {
    Link {
        name: name.into(),
        parent,
        origin: Pose::new(origin, Quat::IDENTITY),
        joint,
        inertial: None,
        collisions: vec![],
        visuals: vec![],
    }
}

fn joint(name: &str, kind: JointKind, link: usize, axis: Vec3, anchor: Vec3) -> Joint {
    Joint {
        name: name.into(),
        kind,
        link,
        axis,
        anchor,
        limits: None,
        max_effort: 1.0,
        max_velocity: 1.0,
        armature: 0.0,
        frictionloss: 0.0,
        servo: None,
        grip: None,
        damping: 0.0,
        kp: 1.0,
        kd: 1.0,
        actuator: None,
    }
}

/// Planar 2-link arm in XY: unit links, hinges about Z at the base and at x = 1, the end
/// effector at the tip of link 2.
fn two_link() -> RobotModel {
    RobotModel {
        name: "two".into(),
        links: vec![
            link("base", None, Vec3::ZERO, None),
            link("l1", Some(0), Vec3::ZERO, Some(0)),
            link("l2", Some(1), Vec3::X, Some(1)),
        ],
        joints: vec![
            joint("j1", JointKind::Revolute, 1, Vec3::Z, Vec3::ZERO),
            joint("j2", JointKind::Revolute, 2, Vec3::Z, Vec3::ZERO),
        ],
        mimics: vec![],
        tendons: Vec::new(),
        ee_link: 2,
        ee_offset: Vec3::X,
        ee_axis: None,
        sites: vec![],
        meshes: vec![],
        home: None,
        cameras: vec![],
        notes: vec![],
        self_collision: Default::default(),
    }
}

fn arm6() -> RobotModel {
    parse_mjcf(ARM6).expect("arm6 loads")
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).length() < 1e-5
}

/// Makes joint 1 follow joint 0: q1 = `multiplier` · q0 + `offset`.
fn second_mimics_first(m: &mut RobotModel, multiplier: f32, offset: f32) {
    m.mimics.push(Mimic::linear(1, 0, multiplier, offset));
}

/// `q` with joint `j` moved by +`h` and by -`h`: the two points of a central difference.
fn nudged(q: &[f32], j: usize, h: f32) -> (Vec<f32>, Vec<f32>) {
    let mut qp = q.to_vec();
    let mut qm = q.to_vec();
    qp[j] += h;
    qm[j] -= h;
    (qp, qm)
}

#[test]
fn fk_two_link_by_hand() {
    let m = two_link();
    assert!(close(
        ee_position(&m, &[0.0, 0.0]),
        Vec3::new(2.0, 0.0, 0.0)
    ));
    // Link 1 up the Y axis, link 2 folded back along -X: tip at (-1, 1).
    let poses = forward_kinematics(&m, &[FRAC_PI_2, FRAC_PI_2]);
    assert!(close(poses[2].translation, Vec3::new(0.0, 1.0, 0.0)));
    assert!(close(
        ee_position(&m, &[FRAC_PI_2, FRAC_PI_2]),
        Vec3::new(-1.0, 1.0, 0.0)
    ));
    let (s, c) = (0.3f32.sin(), 0.3f32.cos());
    let (s2, c2) = (0.8f32.sin(), 0.8f32.cos());
    let expect = Vec3::new(c + c2, s + s2, 0.0);
    assert!(close(ee_position(&m, &[0.3, 0.5]), expect));
}

#[test]
fn fk_anchor_prismatic_and_mimic() {
    let mut m = two_link();
    // Hinge 2 about an axis through the middle of link 2 instead of its start.
    m.joints[1].anchor = Vec3::new(0.5, 0.0, 0.0);
    let tip = ee_position(&m, &[0.0, PI]);
    assert!(close(tip, Vec3::new(1.0, 0.0, 0.0)), "{tip}");
    // Joint 2 a slide along X that mimics joint 1 times 2.
    m.joints[1] = joint("s", JointKind::Prismatic, 2, Vec3::X, Vec3::ZERO);
    second_mimics_first(&mut m, 2.0, 0.1);
    let tip = ee_position(&m, &[0.0]);
    assert!(close(tip, Vec3::new(2.1, 0.0, 0.0)), "{tip}");
    // Explicit values win over the mimic.
    assert!(close(
        ee_position(&m, &[0.0, 0.5]),
        Vec3::new(2.5, 0.0, 0.0)
    ));
    assert_eq!(complete_q(&m, &[0.25]), vec![0.25, 0.6]);
}

#[test]
fn gravity_compensation_is_the_potential_energy_gradient() {
    let m = arm6();
    let g = Vec3::new(0.0, 0.0, -9.81);
    let potential = |q: &[f32]| -> f32 {
        let poses = forward_kinematics(&m, q);
        m.links
            .iter()
            .zip(&poses)
            .filter_map(|(l, p)| link_mass(l, 1000.0).map(|(mass, c)| (mass, p, c)))
            .map(|(mass, p, c)| -mass * g.dot(p.transform_point(c)))
            .sum()
    };
    let q = [0.3, 0.6, 1.2, 1.0, -0.4, 0.7, 0.02, 0.02];
    let tau = gravity_compensation(&m, &q, g, 1000.0);
    let h = 1e-3;
    for (j, want) in tau[..q.len()].iter().enumerate() {
        let (qp, qm) = nudged(&q, j, h);
        let grad = (potential(&qp) - potential(&qm)) / (2.0 * h);
        assert!((grad - want).abs() < 0.05, "joint {j}: {grad} vs {want}");
    }
    // Straight up, nothing but the (horizontal) fingers needs holding.
    let tau = gravity_compensation(&m, &[], g, 1000.0);
    assert!(tau.iter().all(|t| t.abs() < 1e-3), "{tau:?}");

    // A 2 kg point one metre out on a hinge about Y needs 2 g N·m.
    let mut two = two_link();
    two.joints[0].axis = Vec3::Y;
    two.links[1].inertial = Some(Inertial {
        mass: 2.0,
        com: Vec3::X,
        principal_inertia: Vec3::ZERO,
    });
    let tau = gravity_compensation(&two, &[0.0, 0.0], g, 0.0);
    assert!((tau[0] + 2.0 * 9.81).abs() < 1e-4, "{tau:?}");
}

#[test]
fn jacobian_matches_finite_differences() {
    let m = arm6();
    let q = [0.3, 0.5, 1.2, 1.0, -0.4, 0.7];
    let all: Vec<usize> = (0..m.joints.len()).collect();
    let jac = ee_jacobian(&m, &q, &all);
    let h = 1e-3;
    for (j, &want) in jac[..6].iter().enumerate() {
        let (qp, qm) = nudged(&q, j, h);
        let fd = (ee_position(&m, &qp) - ee_position(&m, &qm)) / (2.0 * h);
        assert!((fd - want).length() < 1e-3, "joint {j}: {fd} vs {want}");
    }
    // The fingers do not move the tool centre point.
    assert_eq!(jac[6], Vec3::ZERO);
}

#[test]
fn ik_two_link_reaches_and_respects_limits() {
    let mut m = two_link();
    let target = Vec3::new(1.2, 0.7, 0.0);
    let r = solve_ik_position(&m, &[0.1, 0.1], target, &[0, 1], &IkOptions::default());
    assert!(r.converged, "{r:?}");
    assert!((ee_position(&m, &r.q) - target).length() < 1e-3);

    // With the elbow limited to bend one way the solver finds that branch.
    m.joints[1].limits = Some((0.0, 2.5));
    let r = solve_ik_position(&m, &[0.0, 0.0], target, &[0, 1], &IkOptions::default());
    assert!(r.converged, "{r:?}");
    assert!(r.q[1] >= 0.0 && r.q[1] <= 2.5);
}

#[test]
fn ik_arm6_reaches_table_targets_within_a_millimetre() {
    let m = arm6();
    let arm: Vec<usize> = (0..6).collect();
    let home = [0.0, 0.6, 1.4, 1.1, 0.0, 0.0];
    let targets = [
        Vec3::new(0.5, 0.0, 0.025),
        Vec3::new(0.45, 0.0, 0.25),
        Vec3::new(0.3, 0.3, 0.1),
        Vec3::new(-0.2, 0.5, 0.3),
        Vec3::new(0.6, -0.2, 0.4),
        Vec3::new(0.2, 0.0, 0.6),
        Vec3::new(0.0, -0.4, 0.05),
    ];
    for t in targets {
        let r = solve_ik_position(&m, &home, t, &arm, &IkOptions::default());
        assert!(r.converged, "target {t}: {r:?}");
        let reached = ee_position(&m, &r.q);
        assert!(
            (reached - t).length() < 1e-3,
            "target {t}: reached {reached}"
        );
        for (j, joint) in m.joints.iter().enumerate() {
            if let Some((lo, hi)) = joint.limits {
                assert!(r.q[j] >= lo && r.q[j] <= hi, "{} out of limits", joint.name);
            }
        }
    }
}

/// The configurations the scenes use: the gripper pointing straight down over the table.
#[test]
fn arm6_home_and_grasp_configurations_point_down() {
    let m = arm6();
    let cases = [
        (
            [0.0, 0.5451, 0.9369, 1.6596, 0.0, 0.0],
            Vec3::new(0.45, 0.0, 0.25),
        ),
        (
            [0.0, 0.8706, 1.1857, 1.0853, 0.0, 0.0],
            Vec3::new(0.5, 0.0, 0.025),
        ),
    ];
    for (q, target) in cases {
        let poses = forward_kinematics(&m, &q);
        let ee = poses[m.ee_link].transform_point(m.ee_offset);
        assert!((ee - target).length() < 1e-3, "{q:?}: {ee}");
        let tool = poses[m.ee_link].rotation * Vec3::Z;
        assert!(tool.dot(-Vec3::Z) > 0.9999, "{q:?}: tool axis {tool}");
        // Finger tips stay above the table.
        for j in [6, 7] {
            let tip = poses[m.joints[j].link].transform_point(Vec3::new(0.0, 0.0, 0.06));
            assert!(tip.z > 0.005, "{q:?}: finger tip at {tip}");
        }
    }
}

#[test]
fn ik_unreachable_target_reports_residual() {
    let m = arm6();
    let arm: Vec<usize> = (0..6).collect();
    let home = [0.0, 0.6, 1.4, 1.1, 0.0, 0.0];
    let target = Vec3::new(2.0, 0.0, 0.3);
    let r = solve_ik_position(&m, &home, target, &arm, &IkOptions::default());
    assert!(!r.converged);
    let reached = ee_position(&m, &r.q);
    assert!((r.error_m - (reached - target).length()).abs() < 1e-4);
    // Stretched towards it: the residual is the distance beyond the reach.
    assert!(r.error_m > 1.0 && r.error_m < 1.25, "{r:?}");

    // Only the pan may move: the height cannot change, so the residual stays.
    let r = solve_ik_position(
        &m,
        &home,
        Vec3::new(0.0, 0.45, 0.6),
        &[0],
        &IkOptions::default(),
    );
    assert!(!r.converged);
    assert!(r.error_m > 0.3, "{r:?}");
    assert_eq!(&r.q[1..6], &home[1..6]);
}

#[test]
fn ik_rejects_nonfinite_target_without_panicking() {
    let m = arm6();
    let r = solve_ik_position(&m, &[], Vec3::NAN, &[0, 1, 2], &IkOptions::default());
    assert!(!r.converged);
    assert_eq!(r.q.len(), m.joints.len());
    let r = solve_ik_position(&m, &[], Vec3::X, &[99], &IkOptions::default());
    assert!(!r.converged);
}

const GRIPPER4: &str = include_str!("../../../../../assets/robots/gripper4.urdf");

/// The default scene's home pose (arm joints only): the gripper 0.25 m over the table,
/// pointing straight down.
const HOME: [f32; 6] = [0.0, 0.5451, 0.9369, 1.6596, 0.0, 0.0];
const ARM: [usize; 6] = [0, 1, 2, 3, 4, 5];

/// Gripper straight down, as teleoperation asks of arm6: the tool axis is +Z of
/// `wrist_3_link` (the `ee` site sits 0.107 m along it) and down is -Z of the base frame.
fn gripper_down(m: &RobotModel) -> AxisTarget {
    AxisTarget {
        local_axis: tool_axis(m),
        direction: Vec3::NEG_Z,
        weight: 0.1,
    }
}

/// Angle between the tool axis at `q` and `direction`, measured independently of the solver.
fn axis_angle(m: &RobotModel, q: &[f32], local: Vec3, direction: Vec3) -> f32 {
    let t = forward_kinematics(m, q)[m.ee_link].rotation * local;
    t.cross(direction).length().atan2(t.dot(direction))
}

fn assert_within_limits(m: &RobotModel, q: &[f32]) {
    assert_eq!(q.len(), m.joints.len());
    for (v, joint) in q.iter().zip(&m.joints) {
        assert!(v.is_finite(), "{} is {v}", joint.name);
        if let Some((lo, hi)) = joint.limits {
            assert!(*v >= lo && *v <= hi, "{} = {v} out of limits", joint.name);
        }
    }
}

#[test]
fn tool_axis_points_out_of_the_gripper() {
    let m = arm6();
    assert_eq!(tool_axis(&m), Vec3::Z);
    let poses = forward_kinematics(&m, &HOME);
    let flange = poses[m.ee_link].translation;
    let ee = ee_position(&m, &HOME);
    let out = poses[m.ee_link].rotation * tool_axis(&m);
    assert!(out.dot(Vec3::NEG_Z) > 0.9999, "home tool axis {out}");
    assert!((ee - flange).normalize().dot(out) > 0.9999);

    // gripper4's massless `ee` link is fused into the palm: the tool point is 0.12 m out along
    // the palm's +Z, which at q = 0 (arm straight up) points up.
    let g = crate::robot::urdf::parse_urdf(GRIPPER4).expect("gripper4 loads");
    assert_eq!(g.links[g.ee_link].name, "palm");
    assert_eq!(g.ee_offset, Vec3::new(0.0, 0.0, 0.12));
    assert_eq!(tool_axis(&g), Vec3::Z);
    let up = forward_kinematics(&g, &[])[g.ee_link].rotation * tool_axis(&g);
    assert!(up.dot(Vec3::Z) > 0.9999, "{up}");
}

#[test]
fn angular_columns_match_finite_differences_and_follow_mimics() {
    let m = arm6();
    let q = [0.3, 0.5, 1.2, 1.0, -0.4, 0.7, 0.01, 0.01];
    let on_path = ee_path(&m);
    let poses = forward_kinematics(&m, &q);
    let h = 1e-3;
    for j in 0..m.joints.len() {
        let (qp, qm) = nudged(&q, j, h);
        let rp = forward_kinematics(&m, &qp)[m.ee_link].rotation;
        let rm = forward_kinematics(&m, &qm)[m.ee_link].rotation;
        let fd = (rp * rm.inverse()).to_scaled_axis() / (2.0 * h);
        let at = JacobianAt {
            model: &m,
            poses: &poses,
            on_path: &on_path,
            q: &q,
        };
        let col = at.angular_column_with_followers(j);
        assert!((fd - col).length() < 1e-2, "joint {j}: {fd} vs {col}");
    }

    // A follower turning with its leader doubles the leader's angular velocity.
    let mut two = two_link();
    second_mimics_first(&mut two, 1.0, 0.0);
    let poses = forward_kinematics(&two, &[0.2]);
    let col = JacobianAt {
        model: &two,
        poses: &poses,
        on_path: &ee_path(&two),
        q: &[0.2],
    }
    .angular_column_with_followers(0);
    assert!(close(col, 2.0 * Vec3::Z), "{col}");
}

#[test]
fn solve_linear_pivots_and_refuses_singular_systems() {
    let mut a = [[0.0f32; MAX_ROWS]; MAX_ROWS];
    // Zero on the first diagonal entry: only a row swap gets past it.
    a[0][..3].copy_from_slice(&[0.0, 2.0, 1.0]);
    a[1][..3].copy_from_slice(&[1.0, 1.0, 0.0]);
    a[2][..3].copy_from_slice(&[3.0, 0.0, 1.0]);
    let x_true = [1.0, -2.0, 0.5];
    let mut b = [0.0f32; MAX_ROWS];
    for r in 0..3 {
        b[r] = (0..3).map(|c| a[r][c] * x_true[c]).sum();
    }
    let x = solve_linear(a, b, 3).expect("regular system");
    for r in 0..3 {
        assert!((x[r] - x_true[r]).abs() < 1e-5, "{x:?}");
    }
    a[2] = a[1];
    assert_eq!(solve_linear(a, b, 3), None);
}

#[test]
fn ik_axis_arm6_keeps_the_gripper_down_over_the_table() {
    let m = arm6();
    let down = gripper_down(&m);
    // Pointing down, the wrist_1 axis sits 0.217 m above the tool centre point and must be
    // within 0.33 + 0.28 m of the shoulder_lift axis at base z = 0.16; beyond that no
    // solution points straight down and the solver settles on a compromise.
    let wrist_reach = |t: Vec3| Vec2::new(t.truncate().length(), t.z + 0.217 - 0.16).length();
    let (mut reached, mut out_of_reach) = (0, 0);
    for x in [0.35, 0.45, 0.55, 0.65] {
        for y in [-0.25, 0.0, 0.25] {
            for z in [0.02, 0.16, 0.30] {
                let t = Vec3::new(x, y, z);
                let r = solve_ik_position_axis(&m, &HOME, t, &down, &ARM, &IkOptions::default());
                assert_within_limits(&m, &r.q);
                let error = (ee_position(&m, &r.q) - t).length();
                let angle = axis_angle(&m, &r.q, down.local_axis, down.direction);
                assert!((r.error_m - error).abs() < 1e-5, "{t}: {r:?}");
                assert!((r.axis_error_rad - angle).abs() < 1e-3, "{t}: {r:?}");
                let reach = wrist_reach(t);
                if reach < 0.6 {
                    assert!(r.converged, "{t}: {r:?}");
                    assert!(error < 1e-3, "{t}: {error} m off");
                    assert!(angle < 0.01, "{t}: axis {angle} rad off");
                    reached += 1;
                } else if reach > 0.62 {
                    assert!(!r.converged, "{t}: {r:?}");
                    out_of_reach += 1;
                }
            }
        }
    }
    assert!(
        reached >= 15 && out_of_reach >= 10,
        "{reached} {out_of_reach}"
    );
}

#[test]
fn ik_axis_tracks_a_moving_target_warm_started() {
    let m = arm6();
    let down = gripper_down(&m);
    let opts = IkOptions::default();
    // A circle 0.1 m in radius, tilted so the height changes too, once round in 240 ticks
    // (one second at 240 Hz: up to 0.63 m/s).
    let centre = Vec3::new(0.45, 0.0, 0.12);
    let point = |i: usize| {
        let a = i as f32 / 240.0 * std::f32::consts::TAU;
        centre + Vec3::new(0.1 * a.cos(), 0.1 * a.sin(), 0.05 * a.sin())
    };
    let start = solve_ik_position_axis(&m, &HOME, point(0), &down, &ARM, &opts);
    assert!(start.converged, "{start:?}");
    let mut q = start.q.clone();
    let mut max_iterations = 0;
    for i in 1..=240 {
        let t = point(i);
        let r = solve_ik_position_axis(&m, &q, t, &down, &ARM, &opts);
        assert!(r.converged, "tick {i}: {r:?}");
        assert!(r.iterations <= 3, "tick {i}: {} iterations", r.iterations);
        max_iterations = max_iterations.max(r.iterations);
        let jump =
            r.q.iter()
                .zip(&q)
                .fold(0.0f32, |d, (a, b)| d.max((a - b).abs()));
        assert!(jump < 0.05, "tick {i}: a joint moved {jump} rad");
        assert!(axis_angle(&m, &r.q, down.local_axis, down.direction) < 0.01);
        q = r.q;
    }
    assert!(max_iterations >= 1);
    // Back where it started, in the same configuration: nothing drifted, the free rotation
    // about the tool (wrist_3) included.
    let drift = q
        .iter()
        .zip(&start.q)
        .fold(0.0f32, |d, (a, b)| d.max((a - b).abs()));
    assert!(drift < 1e-2, "drifted {drift} rad: {q:?} vs {:?}", start.q);
    assert!(q[5].abs() < 1e-3, "wrist_3 wandered to {}", q[5]);
}

#[test]
fn ik_axis_turns_a_gripper_that_points_the_opposite_way() {
    let m = arm6();
    // At q = 0 the arm and its tool point straight up: asked for down, the error is exactly
    // π and t × d vanishes, yet the solver must still turn the tool over.
    // A hair of sideways tilt (wrist_2) makes t × d point along a turn the arm cannot
    // finish within its limits; it must be treated as the same case.
    let down = gripper_down(&m);
    let t = ee_position(&m, &HOME);
    for start in [vec![], vec![0.0, 0.0, 0.0, 0.0, 1e-5, 0.0]] {
        let r = solve_ik_position_axis(&m, &start, t, &down, &ARM, &IkOptions::default());
        assert!(r.converged, "from {start:?}: {r:?}");
        assert!((ee_position(&m, &r.q) - t).length() < 1e-3);
        assert!(axis_angle(&m, &r.q, down.local_axis, down.direction) < 0.01);
    }
}

#[test]
fn ik_axis_with_zero_weight_is_position_ik() {
    let m = arm6();
    let free = AxisTarget {
        weight: 0.0,
        ..gripper_down(&m)
    };
    let t = Vec3::new(0.3, 0.3, 0.1);
    let opts = IkOptions::default();
    let a = solve_ik_position_axis(&m, &HOME, t, &free, &ARM, &opts);
    let p = solve_ik_position(&m, &HOME, t, &ARM, &opts);
    assert!(a.converged && p.converged);
    assert_eq!(p.axis_error_rad, 0.0);
    assert_eq!(a.iterations, p.iterations);
    for (x, y) in a.q.iter().zip(&p.q) {
        assert!((x - y).abs() < 1e-5, "{:?} vs {:?}", a.q, p.q);
    }
}

#[test]
fn ik_axis_unreachable_target_stays_finite_and_within_limits() {
    let m = arm6();
    let down = gripper_down(&m);
    let target = Vec3::new(2.0, 0.0, 0.3);
    let r = solve_ik_position_axis(&m, &HOME, target, &down, &ARM, &IkOptions::default());
    assert!(!r.converged, "{r:?}");
    assert_within_limits(&m, &r.q);
    assert!(
        r.error_m.is_finite() && r.axis_error_rad.is_finite(),
        "{r:?}"
    );
    // It still leans as far towards the target as the compromise with the axis allows.
    assert!(r.error_m > 1.0 && r.error_m < 1.4, "{r:?}");
    assert!(r.iterations <= IkOptions::default().max_iters);
}

#[test]
fn ik_axis_rejects_nonfinite_and_degenerate_input() {
    let m = arm6();
    let down = gripper_down(&m);
    let opts = IkOptions::default();
    let bad_axes = [
        AxisTarget {
            direction: Vec3::new(f32::NAN, 0.0, -1.0),
            ..down
        },
        AxisTarget {
            direction: Vec3::new(0.0, 0.0, f32::INFINITY),
            ..down
        },
        AxisTarget {
            local_axis: Vec3::ZERO,
            ..down
        },
        AxisTarget {
            weight: -0.1,
            ..down
        },
        AxisTarget {
            weight: f32::NAN,
            ..down
        },
    ];
    let t = Vec3::new(0.45, 0.0, 0.2);
    let mut cases: Vec<(Vec<f32>, Vec3, AxisTarget)> =
        bad_axes.iter().map(|a| (HOME.to_vec(), t, *a)).collect();
    cases.push((HOME.to_vec(), Vec3::NAN, down));
    cases.push((HOME.to_vec(), Vec3::new(0.4, f32::INFINITY, 0.1), down));
    let mut nan_q = HOME.to_vec();
    nan_q[2] = f32::NAN;
    cases.push((nan_q, t, down));
    for (q, target, axis) in &cases {
        let r = solve_ik_position_axis(&m, q, *target, axis, &ARM, &opts);
        assert!(!r.converged, "{target} {axis:?}: {r:?}");
        assert_eq!(r.error_m, f32::INFINITY);
        assert_eq!(r.axis_error_rad, f32::INFINITY);
        assert_within_limits(&m, &r.q);
    }
    // The valid entries of the start come back as they were.
    let r = solve_ik_position_axis(&m, &HOME, Vec3::NAN, &down, &ARM, &opts);
    assert_eq!(&r.q[..6], &HOME);
}

/// Where the tool point and the tool axis cannot both be met, the teleop IK reaches
/// the point and leaves the axis as close as that allows; the weighted solve stops short.
#[test]
fn position_first_reaches_what_the_weighted_compromise_stops_short_of() {
    let m = arm6();
    let axis = gripper_down(&m);
    // 0.6 m out and 0.3 m up: within reach, beyond it with the gripper straight down.
    let target = Vec3::new(0.6, 0.0, 0.3);
    let opts = IkOptions::default();
    let weighted = solve_ik_position_axis(&m, &HOME, target, &axis, &ARM, &opts);
    assert!(weighted.error_m > 0.005, "{weighted:?}");
    let first = solve_ik_position_first(&m, &HOME, target, &axis, &ARM, &opts);
    assert!(
        first.converged && first.error_m <= opts.tolerance,
        "{first:?}"
    );
    assert!((ee_position(&m, &first.q) - target).length() <= opts.tolerance * 1.01);
    assert_within_limits(&m, &first.q);
    let angle = axis_angle(&m, &first.q, axis.local_axis, axis.direction);
    assert!((first.axis_error_rad - angle).abs() < 1e-4, "{first:?}");
    // The axis still counts: no further from down than where a position-only solve ends.
    let plain = solve_ik_position(&m, &HOME, target, &ARM, &opts);
    let plain_angle = axis_angle(&m, &plain.q, axis.local_axis, axis.direction);
    assert!(angle <= plain_angle + 1e-3, "{angle} vs {plain_angle}");
    // Where both can be met, it is the weighted solve.
    let easy = Vec3::new(0.45, 0.0, 0.25);
    let both = solve_ik_position_first(&m, &HOME, easy, &axis, &ARM, &opts);
    assert_eq!(
        both,
        solve_ik_position_axis(&m, &HOME, easy, &axis, &ARM, &opts)
    );
}
