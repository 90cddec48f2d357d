//! Forward kinematics, the end-effector Jacobian and damped-least-squares position IK.
//!
//! Pure functions on [`RobotModel`], all in the robot base frame (the root link's frame), so the
//! physics builder, the teleop workspace clamps and the tests share one definition of where the
//! arm is. Joint vectors are in `model.joints` order; a vector shorter than the joint list is
//! completed by [`complete_q`] (mimic followers follow their leader, anything else is zero), so a
//! 6-entry `home_q` works for an arm whose gripper adds two more joints.

use glam::{Mat3, Quat, Vec3};

use super::{JointKind, Link, Pose, RobotModel, shape_volume};

/// Fills `q` up to one entry per joint: given entries are kept as they are; a missing entry is
/// `multiplier · q_leader + offset` for a mimic follower and zero otherwise.
pub fn complete_q(model: &RobotModel, q: &[f32]) -> Vec<f32> {
    let n = model.joints.len();
    let mut full: Vec<f32> = (0..n).map(|j| q.get(j).copied().unwrap_or(0.0)).collect();
    for m in &model.mimics {
        if m.joint >= q.len() && m.leader < n {
            full[m.joint] = m.multiplier * full[m.leader] + m.offset;
        }
    }
    full
}

/// The motion a joint at position `value` adds on top of its link's `origin`.
fn joint_motion(model: &RobotModel, j: usize, value: f32) -> Pose {
    let joint = &model.joints[j];
    match joint.kind {
        JointKind::Revolute => {
            // Rotation about the axis through `anchor`: the anchor stays put.
            let rotation = Quat::from_axis_angle(joint.axis, value);
            Pose::new(joint.anchor - rotation * joint.anchor, rotation)
        }
        JointKind::Prismatic => Pose::new(joint.axis * value, Quat::IDENTITY),
    }
}

/// Every link's pose in the base frame for joint positions `q` (see [`complete_q`]).
pub fn forward_kinematics(model: &RobotModel, q: &[f32]) -> Vec<Pose> {
    let q = complete_q(model, q);
    let mut poses = Vec::with_capacity(model.links.len());
    fk_into(model, &q, &mut poses);
    poses
}

/// FK with a full-length `q` into a reused buffer (the IK loop calls this many times).
fn fk_into(model: &RobotModel, q: &[f32], poses: &mut Vec<Pose>) {
    poses.clear();
    for link in &model.links {
        let mut pose = match link.parent {
            Some(p) => poses[p].mul(&link.origin),
            None => Pose::IDENTITY,
        };
        if let Some(j) = link.joint {
            pose = pose.mul(&joint_motion(model, j, q[j]));
        }
        poses.push(pose);
    }
}

/// The end-effector point (`ee_offset` in `ee_link`) in the base frame.
pub fn ee_position(model: &RobotModel, q: &[f32]) -> Vec3 {
    forward_kinematics(model, q)[model.ee_link].transform_point(model.ee_offset)
}

/// Which links lie on the path from the root to the end-effector link: only their joints move
/// the end effector.
fn ee_path(model: &RobotModel) -> Vec<bool> {
    let mut on_path = vec![false; model.links.len()];
    let mut link = Some(model.ee_link);
    while let Some(l) = link {
        on_path[l] = true;
        link = model.links[l].parent;
    }
    on_path
}

/// d(ee)/d(q_j) for one joint, ignoring mimics.
fn column(model: &RobotModel, poses: &[Pose], on_path: &[bool], ee: Vec3, j: usize) -> Vec3 {
    let joint = &model.joints[j];
    if !on_path[joint.link] {
        return Vec3::ZERO;
    }
    // The link pose already includes the joint's motion, which leaves axis and anchor in place.
    let pose = &poses[joint.link];
    let axis = pose.rotation * joint.axis;
    match joint.kind {
        JointKind::Revolute => axis.cross(ee - pose.transform_point(joint.anchor)),
        JointKind::Prismatic => axis,
    }
}

/// Column of the position Jacobian for commanding joint `j`, including the joints that mimic it.
fn column_with_followers(
    model: &RobotModel,
    poses: &[Pose],
    on_path: &[bool],
    ee: Vec3,
    j: usize,
) -> Vec3 {
    model
        .followers(j)
        .fold(column(model, poses, on_path, ee, j), |c, m| {
            c + m.multiplier * column(model, poses, on_path, ee, m.joint)
        })
}

/// Position Jacobian of the end effector (base frame, metres per joint unit) with respect to each
/// joint in `joints`, one column per entry. Mimic followers move with their leader. Indices out
/// of range give a zero column.
pub fn ee_jacobian(model: &RobotModel, q: &[f32], joints: &[usize]) -> Vec<Vec3> {
    let poses = forward_kinematics(model, q);
    let on_path = ee_path(model);
    let ee = poses[model.ee_link].transform_point(model.ee_offset);
    joints
        .iter()
        .map(|&j| {
            if j < model.joints.len() {
                column_with_followers(model, &poses, &on_path, ee, j)
            } else {
                Vec3::ZERO
            }
        })
        .collect()
}

/// Mass and centre of mass (link frame) of a link: its explicit inertial, else its collision
/// geoms at their density (`default_density` where a geom has none). `None` for a massless link.
pub fn link_mass(link: &Link, default_density: f32) -> Option<(f32, Vec3)> {
    if let Some(i) = &link.inertial {
        return Some((i.mass, i.com));
    }
    let (mass, moment) = link.collisions.iter().fold((0.0, Vec3::ZERO), |(m, s), g| {
        let gm = g.density.unwrap_or(default_density) * shape_volume(&g.shape);
        (m + gm, s + g.pose.translation * gm)
    });
    (mass > 0.0).then(|| (mass, moment / mass))
}

/// Joint torques (N·m) and forces (N) that hold the robot still at `q` against `gravity` (m/s²,
/// expressed in the base frame): the feed-forward a PD motor needs so it does not sag. Links
/// without an inertial count their collision geoms at `default_density`. Each joint is treated on
/// its own, mimic followers included, since each has its own motor.
pub fn gravity_compensation(
    model: &RobotModel,
    q: &[f32],
    gravity: Vec3,
    default_density: f32,
) -> Vec<f32> {
    let poses = forward_kinematics(model, q);
    // Mass and world-frame centre of every link, then subtree sums (children come after
    // parents, so one backward pass accumulates them).
    let mut mass = vec![0.0f32; model.links.len()];
    let mut moment = vec![Vec3::ZERO; model.links.len()];
    for (i, link) in model.links.iter().enumerate() {
        if let Some((m, com)) = link_mass(link, default_density) {
            mass[i] = m;
            moment[i] = poses[i].transform_point(com) * m;
        }
    }
    for i in (1..model.links.len()).rev() {
        if let Some(p) = model.links[i].parent {
            let (m, s) = (mass[i], moment[i]);
            mass[p] += m;
            moment[p] += s;
        }
    }
    model
        .joints
        .iter()
        .map(|joint| {
            let l = joint.link;
            let pose = &poses[l];
            let axis = pose.rotation * joint.axis;
            let force = gravity * mass[l];
            // Generalised gravity force: the work gravity does per unit of joint motion; the
            // motor must supply its opposite.
            let generalised = match joint.kind {
                JointKind::Revolute => {
                    let anchor = pose.transform_point(joint.anchor);
                    axis.dot((moment[l] - anchor * mass[l]).cross(gravity))
                }
                JointKind::Prismatic => axis.dot(force),
            };
            -generalised
        })
        .collect()
}

/// Settings of [`solve_ik_position`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkOptions {
    pub max_iters: usize,
    /// Stop when the end effector is this close to the target (m).
    pub tolerance: f32,
    /// Initial damping λ (m) of the damped least squares; adapted while iterating.
    pub damping: f32,
    /// Largest change of any joint in one iteration (rad or m), which keeps steps in the region
    /// where the linearisation holds.
    pub max_step: f32,
}

impl Default for IkOptions {
    fn default() -> Self {
        Self {
            max_iters: 200,
            tolerance: 1e-4,
            damping: 0.01,
            max_step: 0.25,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct IkResult {
    /// Full joint vector (one entry per model joint), within limits.
    pub q: Vec<f32>,
    /// Distance from the end effector to the target at `q` (m).
    pub error_m: f32,
    pub converged: bool,
    pub iterations: usize,
}

/// Moves the joints listed in `joints` (others stay at `q_init`; followers track their leaders)
/// so that the end effector reaches `target` (base frame).
///
/// Levenberg–Marquardt-style damped least squares: dq = Jᵀ(JJᵀ + λ²I)⁻¹e with the 3×3 system
/// solved directly, λ shrunk after a step that reduces the error and grown after one that does
/// not. Each step is clamped to the joint limits, and joints pinned at a limit that the step
/// pushes further are dropped from that step so the others take up the motion. An unreachable
/// target ends with `converged = false` at the closest point found, `error_m` the residual.
pub fn solve_ik_position(
    model: &RobotModel,
    q_init: &[f32],
    target: Vec3,
    joints: &[usize],
    opts: &IkOptions,
) -> IkResult {
    let mut movable: Vec<usize> = joints
        .iter()
        .copied()
        .filter(|&j| j < model.joints.len())
        .collect();
    movable.sort_unstable();
    movable.dedup();

    let mut q = complete_q(model, q_init);
    for &j in &movable {
        q[j] = clamp_to_limits(model, j, q[j]);
        sync_followers(model, &mut q, j);
    }
    let mut poses = Vec::with_capacity(model.links.len());
    let ee_of = |poses: &[Pose]| poses[model.ee_link].transform_point(model.ee_offset);
    if !target.is_finite() {
        fk_into(model, &q, &mut poses);
        return IkResult {
            error_m: f32::INFINITY,
            q,
            converged: false,
            iterations: 0,
        };
    }

    let on_path = ee_path(model);
    let min_damping = (opts.damping * 1e-3).max(1e-6);
    let max_damping = 10.0;
    let mut lambda = opts.damping.max(min_damping);
    let mut columns = vec![Vec3::ZERO; movable.len()];
    let mut active = vec![true; movable.len()];
    let mut dq = vec![0.0; movable.len()];
    let mut trial = q.clone();
    let mut trial_poses = Vec::with_capacity(model.links.len());

    fk_into(model, &q, &mut poses);
    let mut ee = ee_of(&poses);
    let mut err = (target - ee).length();
    let mut slow_steps = 0;
    let mut iterations = 0;
    while iterations < opts.max_iters && err > opts.tolerance {
        iterations += 1;
        let e = target - ee;
        for (c, &j) in columns.iter_mut().zip(&movable) {
            *c = column_with_followers(model, &poses, &on_path, ee, j);
        }
        active.iter_mut().for_each(|a| *a = true);
        // Re-solve without joints that would be pushed through a limit; two passes catch the
        // usual case of one or two joints pinned.
        for _ in 0..3 {
            let mut a = Mat3::from_diagonal(Vec3::splat(lambda * lambda));
            for (c, _) in columns.iter().zip(&active).filter(|(_, act)| **act) {
                a += outer(*c, *c);
            }
            let y = a.inverse() * e;
            let mut pinned = false;
            for (k, &j) in movable.iter().enumerate() {
                dq[k] = if active[k] { columns[k].dot(y) } else { 0.0 };
                if active[k] && pushes_through_limit(model, j, q[j], dq[k]) {
                    active[k] = false;
                    pinned = true;
                }
            }
            if !pinned {
                break;
            }
        }
        let largest = dq.iter().fold(0.0f32, |m, d| m.max(d.abs()));
        let scale = if largest > opts.max_step {
            opts.max_step / largest
        } else {
            1.0
        };

        trial.copy_from_slice(&q);
        for (k, &j) in movable.iter().enumerate() {
            trial[j] = clamp_to_limits(model, j, q[j] + dq[k] * scale);
            sync_followers(model, &mut trial, j);
        }
        fk_into(model, &trial, &mut trial_poses);
        let trial_ee = ee_of(&trial_poses);
        let trial_err = (target - trial_ee).length();
        if trial_err < err {
            // Near an unreachable target progress creeps along; stop once it is negligible.
            slow_steps = if err - trial_err < 1e-7 {
                slow_steps + 1
            } else {
                0
            };
            std::mem::swap(&mut q, &mut trial);
            std::mem::swap(&mut poses, &mut trial_poses);
            ee = trial_ee;
            err = trial_err;
            lambda = (lambda * 0.5).max(min_damping);
            if slow_steps >= 5 {
                break;
            }
        } else {
            lambda *= 4.0;
            if lambda > max_damping {
                break;
            }
        }
    }
    IkResult {
        q,
        error_m: err,
        converged: err <= opts.tolerance,
        iterations,
    }
}

fn outer(a: Vec3, b: Vec3) -> Mat3 {
    Mat3::from_cols(a * b.x, a * b.y, a * b.z)
}

fn clamp_to_limits(model: &RobotModel, j: usize, v: f32) -> f32 {
    match model.joints[j].limits {
        Some((lo, hi)) => v.clamp(lo, hi),
        None => v,
    }
}

fn pushes_through_limit(model: &RobotModel, j: usize, v: f32, dq: f32) -> bool {
    const EPS: f32 = 1e-6;
    match model.joints[j].limits {
        Some((lo, hi)) => (v <= lo + EPS && dq < 0.0) || (v >= hi - EPS && dq > 0.0),
        None => false,
    }
}

fn sync_followers(model: &RobotModel, q: &mut [f32], leader: usize) {
    for m in model.followers(leader) {
        q[m.joint] = m.multiplier * q[leader] + m.offset;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::{Inertial, Joint, Mimic, mjcf::parse_mjcf};
    use std::f32::consts::{FRAC_PI_2, PI};

    const ARM6: &str = include_str!("../../assets/robots/arm6.xml");

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
            ee_link: 2,
            ee_offset: Vec3::X,
        }
    }

    fn arm6() -> RobotModel {
        parse_mjcf(ARM6).expect("arm6 loads")
    }

    fn close(a: Vec3, b: Vec3) -> bool {
        (a - b).length() < 1e-5
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
        m.mimics.push(Mimic {
            joint: 1,
            leader: 0,
            multiplier: 2.0,
            offset: 0.1,
        });
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
        for j in 0..q.len() {
            let mut qp = q;
            let mut qm = q;
            qp[j] += h;
            qm[j] -= h;
            let grad = (potential(&qp) - potential(&qm)) / (2.0 * h);
            assert!(
                (grad - tau[j]).abs() < 0.05,
                "joint {j}: {grad} vs {}",
                tau[j]
            );
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
        for j in 0..6 {
            let mut qp = q.to_vec();
            let mut qm = q.to_vec();
            qp[j] += h;
            qm[j] -= h;
            let fd = (ee_position(&m, &qp) - ee_position(&m, &qm)) / (2.0 * h);
            assert!(
                (fd - jac[j]).length() < 1e-3,
                "joint {j}: {fd} vs {}",
                jac[j]
            );
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
}
