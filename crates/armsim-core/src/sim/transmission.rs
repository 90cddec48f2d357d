//! Forces that join joints, as MuJoCo applies them: a fixed tendon's position actuator (the
//! Panda's fingers: one force on the tendon's length, shared out by its coefficients) and a
//! joint equality's soft constraint (the Panda's two fingers kept level).
//!
//! Each is linear in the joints' positions and velocities. Rapier integrates one spring and one
//! damping per degree of freedom implicitly, so each joint takes its own terms implicitly and
//! the other joints' as they were at the start of the step (a Jacobi split of the coupled
//! terms: on the Panda's fingers the implicit part is at least as stiff as the explicit one, and
//! `h²·k/m` stays below 0.2, where the split is stable with a wide margin).

use crate::robot::{Mimic, RobotModel, TendonServo};
use crate::sim::command::JointCommand;

/// A force on one joint over the next step, linear in its own position `q` and velocity `v`:
/// `f = constant − stiffness·q − damping·v`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct JointForce {
    pub stiffness: f32,
    pub damping: f32,
    pub constant: f32,
}

impl JointForce {
    fn add(&mut self, other: JointForce) {
        self.stiffness += other.stiffness;
        self.damping += other.damping;
        self.constant += other.constant;
    }

    /// The force at `q`, `v`.
    #[cfg(test)]
    fn at(&self, q: f32, v: f32) -> f32 {
        self.constant - self.stiffness * q - self.damping * v
    }
}

/// What the transmissions do to one joint this step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Transmitted {
    /// Added to whatever else drives the joint.
    pub force: JointForce,
    /// The joint's own command is not applied: a tendon or a constraint moves it (a tendon's
    /// joints while its leader has a position command; an equality's follower always, as it has
    /// no actuator in the file).
    pub replaces_command: bool,
}

/// Whether the robot has anything this module simulates (so a robot without skips the work).
pub(super) fn any(robot: &RobotModel) -> bool {
    !robot.tendons.is_empty() || robot.mimics.iter().any(|m| m.coupling.is_some())
}

/// The transmissions' forces on every joint at positions `q`, velocities `v`, under `commands`
/// (robot joint order); `None` for a joint none acts on.
pub(super) fn forces(
    robot: &RobotModel,
    q: &[f32],
    v: &[f32],
    commands: &[JointCommand],
) -> Vec<Option<Transmitted>> {
    let mut out: Vec<Option<Transmitted>> = vec![None; robot.joints.len()];
    let mut add = |j: usize, force: JointForce, replaces: bool| {
        let slot = out[j].get_or_insert_with(Transmitted::default);
        slot.force.add(force);
        slot.replaces_command |= replaces;
    };
    for tendon in &robot.tendons {
        let Some(&JointCommand::Position { target, velocity }) = commands.get(tendon.leader) else {
            continue;
        };
        for (j, force) in tendon_forces(robot, tendon, q, v, target, velocity) {
            add(j, force, true);
        }
    }
    for m in &robot.mimics {
        let Some(c) = m.coupling else { continue };
        let (follower, leader) = coupling_forces(m, c.stiffness, c.damping, q, v);
        add(m.joint, follower, true);
        add(m.leader, leader, false);
    }
    out
}

/// Where a tendon joint is with the tendon's leader at `x`: the leader itself, or where its
/// mimic puts a follower.
fn joint_at(robot: &RobotModel, tendon: &TendonServo, j: usize, x: f32) -> (f32, f32) {
    if j == tendon.leader {
        return (x, 1.0);
    }
    robot
        .mimics
        .iter()
        .find(|m| m.joint == j && m.leader == tendon.leader)
        .map_or((x, 1.0), |m| (m.follow(x), m.slope(x)))
}

/// The tendon's servo with its leader told `target` (at `velocity`): `F = clamp(kp·(L* − L) +
/// kv·(L̇* − L̇), ±max)` on the tendon, `coef·F` on each of its joints.
fn tendon_forces(
    robot: &RobotModel,
    tendon: &TendonServo,
    q: &[f32],
    v: &[f32],
    target: f32,
    velocity: f32,
) -> Vec<(usize, JointForce)> {
    let (mut goal, mut goal_rate) = (0.0, 0.0);
    let (mut length, mut rate) = (0.0, 0.0);
    for &(j, coef) in &tendon.joints {
        let (at, slope) = joint_at(robot, tendon, j, target);
        goal += coef * at;
        goal_rate += coef * slope * velocity;
        length += coef * q[j];
        rate += coef * v[j];
    }
    // MuJoCo clamps ctrl to its range; the length it asks for is clamped here.
    if let Some((lo, hi)) = tendon.length_range {
        goal = goal.clamp(lo, hi);
    }
    let s = tendon.servo;
    let force = s.kp * (goal - length) + s.kv * (goal_rate - rate);
    tendon
        .joints
        .iter()
        .map(|&(j, c)| {
            let f = if force.abs() <= s.max_force {
                // c·F with this joint's own terms implicit: the rest of F at its value now.
                JointForce {
                    stiffness: c * c * s.kp,
                    damping: c * c * s.kv,
                    constant: c * force + c * c * (s.kp * q[j] + s.kv * v[j]),
                }
            } else {
                JointForce {
                    constant: c * force.clamp(-s.max_force, s.max_force),
                    ..JointForce::default()
                }
            };
            (j, f)
        })
        .collect()
}

/// A joint equality's spring-damper on `r = q_f − poly(q_l)`: `−k·r − b·ṙ` on the follower and
/// `slope·(k·r + b·ṙ)` on the leader (the constraint does no net work), each joint's own terms
/// implicit. Returns (follower, leader).
fn coupling_forces(m: &Mimic, k: f32, b: f32, q: &[f32], v: &[f32]) -> (JointForce, JointForce) {
    let (x, xv) = (q[m.leader], v[m.leader]);
    let (qf, vf) = (q[m.joint], v[m.joint]);
    let slope = m.slope(x);
    let r = qf - m.follow(x);
    let rv = vf - slope * xv;
    let pull = k * r + b * rv;
    let follower = JointForce {
        stiffness: k,
        damping: b,
        constant: -pull + k * qf + b * vf,
    };
    let s2 = slope * slope;
    let leader = JointForce {
        stiffness: s2 * k,
        damping: s2 * b,
        constant: slope * pull + s2 * (k * x + b * xv),
    };
    (follower, leader)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::{Coupling, Servo};

    fn panda_tendon() -> TendonServo {
        TendonServo {
            name: "actuator8".into(),
            leader: 0,
            joints: vec![(0, 0.5), (1, 0.5)],
            servo: Servo {
                kp: 100.0,
                kv: 10.0,
                max_force: 100.0,
            },
            length_range: Some((0.0, 0.04)),
        }
    }

    #[test]
    fn a_closed_tendon_on_a_5_cm_cube_squeezes_with_the_files_force() {
        let robot = {
            let mut r = crate::robot::test_support::bare_model("t", Vec::new());
            r.joints = Vec::new();
            r.mimics = vec![Mimic::linear(1, 0, 1.0, 0.0)];
            r.tendons = vec![panda_tendon()];
            r
        };
        // Each finger stopped at 0.025 by the cube, the command closed (0), at rest:
        // F = 100·(0 − 0.025) = −2.5 N on the tendon, −1.25 N on each finger.
        let q = [0.025, 0.025];
        let f = tendon_forces(&robot, &robot.tendons[0], &q, &[0.0; 2], 0.0, 0.0);
        for (j, force) in f {
            assert!((force.at(q[j], 0.0) + 1.25).abs() < 1e-6, "{force:?}");
        }
        // A target below the ctrl range is the closed command, not a harder squeeze.
        let below = tendon_forces(&robot, &robot.tendons[0], &q, &[0.0; 2], -1.0, 0.0);
        assert!((below[0].1.at(q[0], 0.0) + 1.25).abs() < 1e-6);
    }

    #[test]
    fn a_tendon_force_past_its_range_is_clamped() {
        let mut tendon = panda_tendon();
        tendon.servo.max_force = 1.0;
        let robot = crate::robot::test_support::bare_model("t", Vec::new());
        let f = tendon_forces(&robot, &tendon, &[0.04, 0.04], &[0.0; 2], 0.0, 0.0);
        for (_, force) in f {
            assert_eq!(force.stiffness, 0.0);
            assert!((force.constant + 0.5).abs() < 1e-6);
        }
    }

    #[test]
    fn a_coupling_pulls_the_follower_to_its_polynomial_and_does_no_work() {
        let mut m = Mimic::linear(1, 0, 2.0, 0.1);
        m.higher = [0.5, 0.0, 0.0];
        let coupling = Coupling {
            stiffness: 50.0,
            damping: 2.0,
        };
        m.coupling = Some(coupling);
        let (q, v) = ([0.2, 0.3], [0.1, -0.4]);
        let (f, l) = coupling_forces(&m, coupling.stiffness, coupling.damping, &q, &v);
        let r = q[1] - (0.1 + 2.0 * 0.2 + 0.5 * 0.04);
        let slope = 2.0 + 2.0 * 0.5 * 0.2;
        let rv = v[1] - slope * v[0];
        let pull = 50.0 * r + 2.0 * rv;
        assert!((f.at(q[1], v[1]) + pull).abs() < 1e-5);
        // Power: f_f·v_f + f_l·v_l = −pull·(v_f − slope·v_l) = −pull·ṙ, the damper's only.
        let power = f.at(q[1], v[1]) * v[1] + l.at(q[0], v[0]) * v[0];
        assert!((power + pull * rv).abs() < 1e-5, "{power}");
    }
}
