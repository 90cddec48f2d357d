//! Damped-least-squares IK: a tool position, or a position plus a tool axis (5 rows), within
//! joint limits, mimic followers kept on their leader.

use super::*;

/// Settings of [`solve_ik_position`] and [`solve_ik_position_axis`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkOptions {
    pub max_iters: usize,
    /// Stop when the end effector is this close to the target (m) and, with an axis target, the
    /// weighted axis error (`weight` · angle) is this small too.
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
    /// Angle between the tool axis and the desired direction at `q` (rad); always 0 from
    /// [`solve_ik_position`], which has no axis to align.
    pub axis_error_rad: f32,
    pub converged: bool,
    pub iterations: usize,
}

/// A tool axis to align while reaching a position (see [`solve_ik_position_axis`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxisTarget {
    /// The axis in the end-effector link's frame, usually [`tool_axis`]; any non-zero length.
    pub local_axis: Vec3,
    /// Where that axis should point, in the base frame; any non-zero length.
    pub direction: Vec3,
    /// Metres of position error that one radian of axis error is worth (m/rad, ≥ 0). It decides
    /// the compromise when both cannot be met, and turns [`IkOptions::tolerance`] into an
    /// angle: 0.1 m/rad with the default 0.1 mm tolerance asks for 1 mrad. 0 ignores the axis.
    pub weight: f32,
}

/// The end-effector link's axis that points out of the tool, in that link's frame: the scene's
/// (`tool.axis`, [`RobotModel::ee_axis`]) where it gives one; otherwise from the link origin
/// towards the end-effector point, or where that point is the origin itself (URDF tool links),
/// the direction in which the link's origin leads on from its parent; +Z if both are zero. For
/// arm6 this is +Z of `wrist_3_link` (the `ee` site sits 0.107 m along it), for gripper4 +Z of
/// `ee`. That assumes a tool built along its axis, as both grippers are; the SO-101's tool point
/// sits 14 mm off its jaw's axis (−Z of `gripper`), 8° off the derived one.
pub fn tool_axis(model: &RobotModel) -> Vec3 {
    if let Some(axis) = model.ee_axis.and_then(Vec3::try_normalize) {
        return axis;
    }
    let link = &model.links[model.ee_link];
    let from_parent = link.origin.rotation.inverse() * link.origin.translation;
    model
        .ee_offset
        .try_normalize()
        .or_else(|| link.parent.and_then(|_| from_parent.try_normalize()))
        .unwrap_or(Vec3::Z)
}

/// How far (rad) a hinge's axis may lie off the tool axis for the axis task to count it as a
/// wrist roll: well past the SO-101's 8° (its tool point sits 14 mm off its roll axis), well
/// short of a joint built across the tool.
pub const ROLL_AXIS_MAX_ANGLE_RAD: f32 = 0.35;

/// The end-effector link's own hinge when it turns the tool about (nearly) `local_axis`: a
/// wrist roll. It spins the tool about its axis and does not point it anywhere, so the axis
/// rows leave it out: where the tool sits a few degrees off the roll axis (the SO-101's), an
/// axis target the other joints cannot meet would otherwise wind the roll to a limit, 157°
/// round, to tilt the tool by those few degrees, and the gripper would turn over on its way to
/// a point.
fn wrist_roll(model: &RobotModel, local_axis: Vec3) -> Option<usize> {
    let j = model.links[model.ee_link].joint?;
    let joint = &model.joints[j];
    let axis = joint.axis.try_normalize()?;
    let along = local_axis.try_normalize()?.dot(axis).abs();
    (joint.kind == JointKind::Revolute && along >= ROLL_AXIS_MAX_ANGLE_RAD.cos()).then_some(j)
}

/// Moves the joints listed in `joints` (others stay at `q_init`; followers track their leaders)
/// so that the end effector reaches `target` (base frame).
///
/// Levenberg–Marquardt-style damped least squares: dq = Jᵀ(JJᵀ + λ²I)⁻¹e with the 3×3 system
/// solved directly, λ shrunk after a step that reduces the error and grown after one that does
/// not. Each step is clamped to the joint limits, and joints pinned at a limit that the step
/// pushes further are dropped from that step so the others take up the motion. An unreachable
/// target ends with `converged = false` at the closest point found, `error_m` the residual.
/// A non-finite target or `q_init` gives `converged = false` and an infinite `error_m`, with
/// `q` the (clamped) start and any non-finite entry of it replaced by zero clamped to limits.
pub fn solve_ik_position(
    model: &RobotModel,
    q_init: &[f32],
    target: Vec3,
    joints: &[usize],
    opts: &IkOptions,
) -> IkResult {
    solve_dls(model, q_init, target, None, joints, opts)
}

/// [`solve_ik_position`] that also turns the tool axis (`axis.local_axis` in the end-effector
/// link) towards `axis.direction`: five constraints, leaving the rotation about the axis free,
/// so a 6-joint arm keeps its gripper pointing down while following a position.
///
/// The two extra rows are the axis error t × d (as a rotation vector of the error angle) and the
/// joints' angular velocities, projected on two unit vectors perpendicular to the current axis
/// t, both scaled by `axis.weight`; the damping, limit handling and stopping rules are those of
/// [`solve_ik_position`], with the error measured as √(e_pos² + (weight · angle)²). When both
/// cannot be met (an unreachable target) the result trades one for the other by `weight`. A
/// non-finite target, `q_init` or axis, a zero axis or a negative weight gives
/// `converged = false` and infinite errors, with `q` as [`solve_ik_position`] describes.
/// Warm-started from the previous tick's `q`, a follow at teleoperation speeds takes a few
/// iterations.
// Its parameter list is `solve_ik_position_first`'s (a duplicate pair to the tool): two public
// entry points to one problem, whose shared work is already one function (`solve_dls`).
pub fn solve_ik_position_axis(
    model: &RobotModel,
    q_init: &[f32],
    target: Vec3,
    axis: &AxisTarget,
    joints: &[usize],
    opts: &IkOptions,
) -> IkResult {
    solve_dls(model, q_init, target, Some(axis), joints, opts)
}

/// [`solve_ik_position_axis`] with the position first: where both cannot be met, the tool
/// point reaches `target` (if any joint vector within the limits puts it there) and the tool
/// axis turns towards `axis.direction` only as far as that allows. This is what teleoperation
/// needs: a 5-joint arm such as the SO-101 cannot point its gripper straight down at most
/// points above the table, and the weighted compromise of [`solve_ik_position_axis`] stops the
/// tool 1–5 cm short of them.
///
/// The weighted solve runs first; where it leaves the tool point further than
/// `opts.tolerance` from the target, a position-only solve carries on from where it ended (the
/// smallest change from the best compromise, so the axis stays as close as it got), and, if
/// that does not reach it either, another from `q_init` (a compromise can end with joints
/// against their limits, from where the position step stalls). The closest of these is
/// returned, so beyond reach too the tool point gets as close as it can; `converged` says the
/// position was reached, and `axis_error_rad` is the angle left at the returned `q`.
// Same parameters as `solve_ik_position_axis`, on purpose: see there.
pub fn solve_ik_position_first(
    model: &RobotModel,
    q_init: &[f32],
    target: Vec3,
    axis: &AxisTarget,
    joints: &[usize],
    opts: &IkOptions,
) -> IkResult {
    let mut both = solve_dls(model, q_init, target, Some(axis), joints, opts);
    if both.error_m <= opts.tolerance || !both.error_m.is_finite() {
        both.converged = both.error_m <= opts.tolerance;
        return both;
    }
    let mut best = solve_dls(model, &both.q, target, None, joints, opts);
    if !best.converged {
        let reseeded = solve_dls(model, q_init, target, None, joints, opts);
        if reseeded.error_m < best.error_m {
            best = reseeded;
        }
    }
    if best.error_m >= both.error_m {
        return both;
    }
    let task = AxisTask::new(axis).expect("checked by the first solve");
    let poses = forward_kinematics(model, &best.q);
    best.axis_error_rad = Residual::new(model, &poses, target, Some(&task)).angle;
    best.iterations += both.iterations;
    best
}

/// Rows of the largest task: three of position, two of tool axis.
pub(super) const MAX_ROWS: usize = 5;

/// An [`AxisTarget`] with unit vectors, checked.
#[derive(Clone, Copy)]
struct AxisTask {
    local: Vec3,
    direction: Vec3,
    weight: f32,
}

impl AxisTask {
    fn new(axis: &AxisTarget) -> Option<Self> {
        let weight = (axis.weight.is_finite() && axis.weight >= 0.0).then_some(axis.weight)?;
        Some(Self {
            local: axis.local_axis.try_normalize()?,
            direction: axis.direction.try_normalize()?,
            weight,
        })
    }
}

/// Where the end effector is against its goal for one set of link poses.
struct Residual {
    ee: Vec3,
    /// `target - ee`.
    position: Vec3,
    /// The tool axis in the base frame (unit); unused without an axis task.
    tool: Vec3,
    /// Angle from `tool` to the desired direction (rad); 0 without an axis task.
    angle: f32,
}

impl Residual {
    fn new(model: &RobotModel, poses: &[Pose], target: Vec3, axis: Option<&AxisTask>) -> Self {
        let pose = &poses[model.ee_link];
        let ee = pose.transform_point(model.ee_offset);
        let (tool, angle) = match axis {
            Some(a) => {
                let tool = (pose.rotation * a.local).normalize();
                // atan2 stays accurate near 0 and π, where acos of the dot product does not.
                let angle = tool
                    .cross(a.direction)
                    .length()
                    .atan2(tool.dot(a.direction));
                (tool, angle)
            }
            None => (Vec3::Z, 0.0),
        };
        Self {
            ee,
            position: target - ee,
            tool,
            angle,
        }
    }

    /// The one number the damping adaptation compares: metres, the angle weighted.
    fn cost(&self, axis: Option<&AxisTask>) -> f32 {
        let weighted = axis.map_or(0.0, |a| a.weight * self.angle);
        (self.position.length_squared() + weighted * weighted).sqrt()
    }

    fn within(&self, tolerance: f32, axis: Option<&AxisTask>) -> bool {
        self.position.length() <= tolerance
            && axis.is_none_or(|a| a.weight * self.angle <= tolerance)
    }
}

impl JacobianAt<'_> {
    /// Angular velocity of the end-effector link per unit of joint `j`, ignoring mimics: the
    /// world axis of a hinge on the path to the end effector, nothing for a slide or a joint off
    /// the path.
    pub(super) fn angular_column(&self, j: usize) -> Vec3 {
        let joint = &self.model.joints[j];
        match joint.kind {
            JointKind::Revolute if self.on_path[joint.link] => {
                self.poses[joint.link].rotation * joint.axis
            }
            _ => Vec3::ZERO,
        }
    }

    /// [`Self::angular_column`] for commanding joint `j`, including the joints that mimic it.
    pub(super) fn angular_column_with_followers(&self, j: usize) -> Vec3 {
        self.with_followers(j, |k| self.angular_column(k))
    }
}

/// The solver behind [`solve_ik_position`] (`axis` = `None`, three rows) and
/// [`solve_ik_position_axis`] (five rows).
pub(super) fn solve_dls(
    model: &RobotModel,
    q_init: &[f32],
    target: Vec3,
    axis: Option<&AxisTarget>,
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
    let q_finite = q.iter().all(|v| v.is_finite());
    for (j, v) in q.iter_mut().enumerate() {
        // A NaN in the output would reach the motors; zero is the one neutral value to offer.
        if !v.is_finite() {
            *v = clamp_to_limits(model, j, 0.0);
        }
    }
    for &j in &movable {
        q[j] = clamp_to_limits(model, j, q[j]);
        sync_followers(model, &mut q, j);
    }
    let task = axis.and_then(AxisTask::new);
    let axis_valid = axis.is_none() || task.is_some();
    if !target.is_finite() || !q_finite || !axis_valid {
        return IkResult {
            q,
            error_m: f32::INFINITY,
            axis_error_rad: if axis.is_some() { f32::INFINITY } else { 0.0 },
            converged: false,
            iterations: 0,
        };
    }
    let task = task.as_ref();
    let rows = if task.is_some() { MAX_ROWS } else { 3 };

    let on_path = ee_path(model);
    let roll = task.and_then(|a| wrist_roll(model, a.local));
    let min_damping = (opts.damping * 1e-3).max(1e-6);
    let max_damping = 10.0;
    let mut lambda = opts.damping.max(min_damping);
    let mut columns = vec![[0.0f32; MAX_ROWS]; movable.len()];
    let mut active = vec![true; movable.len()];
    let mut dq = vec![0.0; movable.len()];
    let mut poses = Vec::with_capacity(model.links.len());
    let mut trial = q.clone();
    let mut trial_poses = Vec::with_capacity(model.links.len());

    fk_into(model, &q, &mut poses);
    let mut res = Residual::new(model, &poses, target, task);
    let mut cost = res.cost(task);
    let mut slow_steps = 0;
    let mut iterations = 0;
    while iterations < opts.max_iters && !res.within(opts.tolerance, task) {
        iterations += 1;
        let mut e = [0.0f32; MAX_ROWS];
        e[..3].copy_from_slice(&res.position.to_array());
        // Two directions across the tool axis: turning about the axis itself changes nothing.
        let (u, v) = res.tool.any_orthonormal_pair();
        let at = JacobianAt {
            model,
            poses: &poses,
            on_path: &on_path,
            q: &q,
        };
        for (c, &j) in columns.iter_mut().zip(&movable) {
            let p = at.column_with_followers(res.ee, j);
            c[..3].copy_from_slice(&p.to_array());
            if let Some(a) = task {
                // A wrist roll only spins the tool: no share in pointing it (`wrist_roll`).
                let w = if roll == Some(j) {
                    Vec3::ZERO
                } else {
                    at.angular_column_with_followers(j)
                };
                c[3] = a.weight * u.dot(w);
                c[4] = a.weight * v.dot(w);
            }
        }
        if let Some(a) = task {
            // The error as a rotation vector that carries the axis onto the goal. Within a
            // milliradian of opposite, t × d is rounding noise rather than a direction.
            let cross = res.tool.cross(a.direction);
            let turn_axis = if res.tool.dot(a.direction) < 0.0 && cross.length() < 1e-3 {
                flip_axis(u, v, &columns, res.position)
            } else {
                cross.normalize_or_zero()
            };
            let turn = turn_axis * res.angle;
            e[3] = a.weight * u.dot(turn);
            e[4] = a.weight * v.dot(turn);
        }
        active.iter_mut().for_each(|a| *a = true);
        // Re-solve without joints that would be pushed through a limit; two passes catch the
        // usual case of one or two joints pinned.
        let mut solved = true;
        for _ in 0..3 {
            let mut a = [[0.0f32; MAX_ROWS]; MAX_ROWS];
            for (r, row) in a.iter_mut().enumerate().take(rows) {
                row[r] = lambda * lambda;
            }
            for (c, _) in columns.iter().zip(&active).filter(|(_, act)| **act) {
                for (r, row) in a.iter_mut().enumerate().take(rows) {
                    for (s, x) in row.iter_mut().enumerate().take(rows) {
                        *x += c[r] * c[s];
                    }
                }
            }
            let Some(y) = solve_linear(a, e, rows) else {
                solved = false;
                break;
            };
            let mut pinned = false;
            for (k, &j) in movable.iter().enumerate() {
                dq[k] = if active[k] {
                    columns[k].iter().zip(&y).map(|(c, y)| c * y).sum()
                } else {
                    0.0
                };
                if active[k] && pushes_through_limit(model, j, q[j], dq[k]) {
                    active[k] = false;
                    pinned = true;
                }
            }
            if !pinned {
                break;
            }
        }

        let mut improved = false;
        if solved {
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
            let trial_res = Residual::new(model, &trial_poses, target, task);
            let trial_cost = trial_res.cost(task);
            if trial_cost < cost {
                improved = true;
                // Near an unreachable target progress creeps along; stop once it is negligible.
                slow_steps = if cost - trial_cost < 1e-7 {
                    slow_steps + 1
                } else {
                    0
                };
                std::mem::swap(&mut q, &mut trial);
                std::mem::swap(&mut poses, &mut trial_poses);
                res = trial_res;
                cost = trial_cost;
                lambda = (lambda * 0.5).max(min_damping);
                if slow_steps >= 5 {
                    break;
                }
            }
        }
        if !improved {
            lambda *= 4.0;
            if lambda > max_damping {
                break;
            }
        }
    }
    IkResult {
        q,
        error_m: res.position.length(),
        axis_error_rad: res.angle,
        converged: res.within(opts.tolerance, task),
        iterations,
    }
}

/// The axis to turn a tool about when it points exactly away from its goal, where t × d gives
/// none (an arm at rest straight up asked to point its gripper down). Any axis across the tool
/// (`u`, `v`) would do in theory, but a poor one ends against a joint limit: prefer the turn the
/// position step makes anyway (the angular rows of the Jacobian-transpose step for
/// `position_error`), else the direction across the tool that the joints turn it most readily.
pub(super) fn flip_axis(
    u: Vec3,
    v: Vec3,
    columns: &[[f32; MAX_ROWS]],
    position_error: Vec3,
) -> Vec3 {
    let (mut a, mut b) = (0.0f32, 0.0f32);
    let (mut uu, mut uv, mut vv) = (0.0f32, 0.0f32, 0.0f32);
    for c in columns {
        let push = Vec3::from_slice(&c[..3]).dot(position_error);
        a += c[3] * push;
        b += c[4] * push;
        uu += c[3] * c[3];
        uv += c[3] * c[4];
        vv += c[4] * c[4];
    }
    (u * a + v * b).try_normalize().unwrap_or_else(|| {
        // Principal direction of the joints' angular authority in the (u, v) plane.
        let phi = 0.5 * (2.0 * uv).atan2(uu - vv);
        u * phi.cos() + v * phi.sin()
    })
}

/// Solves the leading `n`×`n` block of `a x = b` by Gaussian elimination with partial pivoting
/// (the damped normal equations are at most 5×5, too small for a linear-algebra crate). `None`
/// when a pivot vanishes or the solution is not finite; the solver then treats the step as
/// failed and raises the damping.
pub(super) fn solve_linear(
    mut a: [[f32; MAX_ROWS]; MAX_ROWS],
    mut b: [f32; MAX_ROWS],
    n: usize,
) -> Option<[f32; MAX_ROWS]> {
    for col in 0..n {
        let pivot = (col..n).max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))?;
        if a[pivot][col].abs() < f32::MIN_POSITIVE || !a[pivot][col].is_finite() {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (done, below) = a.split_at_mut(col + 1);
        let pivot_row = &done[col];
        for (r, row) in below.iter_mut().take(n - col - 1).enumerate() {
            let f = row[col] / pivot_row[col];
            for c in col..n {
                row[c] -= f * pivot_row[c];
            }
            b[col + 1 + r] -= f * b[col];
        }
    }
    let mut x = [0.0f32; MAX_ROWS];
    for r in (0..n).rev() {
        let rest: f32 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - rest) / a[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

pub(super) fn clamp_to_limits(model: &RobotModel, j: usize, v: f32) -> f32 {
    match model.joints[j].limits {
        Some((lo, hi)) => v.clamp(lo, hi),
        None => v,
    }
}

pub(super) fn pushes_through_limit(model: &RobotModel, j: usize, v: f32, dq: f32) -> bool {
    const EPS: f32 = 1e-6;
    match model.joints[j].limits {
        Some((lo, hi)) => (v <= lo + EPS && dq < 0.0) || (v >= hi - EPS && dq > 0.0),
        None => false,
    }
}

pub(super) fn sync_followers(model: &RobotModel, q: &mut [f32], leader: usize) {
    for m in model.followers(leader) {
        q[m.joint] = m.follow(q[leader]);
    }
}
