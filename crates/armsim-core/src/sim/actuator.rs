//! How a joint's command becomes forces in Rapier: the file's position servo as MuJoCo simulates
//! it, or armsim's own acceleration-based motor for robots whose file gives no gains.
//!
//! **A servo from the file** ([`Servo`]: an MJCF position actuator with `kp`) is MuJoCo's
//! spring-damper: `f = clamp(kp·(q* − q) + kv·(q̇* − q̇), ±forcerange)`, on a joint with its
//! damping, armature and frictionloss. On a multibody joint it is built from the multibody's
//! own implicit terms, which Rapier integrates with the mass matrix (backward Euler, per
//! substep):
//! - the position term is the joint's spring (`stiffness kp`, rest `q*`), re-evaluated every
//!   substep;
//! - `kv` and the passive damping are the degree of freedom's damping, implicit in the velocity
//!   as MuJoCo's `implicitfast` has them. The spring's backward Euler adds `kp·h` of damping
//!   (`h` the substep), which MuJoCo's explicit position term does not have: it is taken back
//!   out of the damping;
//! - when the force would pass its range it is clamped for the step: a constant ±forcerange
//!   (a soft spring whose rest lies far away), with only the passive damping implicit (MuJoCo
//!   drops a clamped actuator's velocity derivative too);
//! - frictionloss is the joint's motor: a velocity constraint towards zero whose force is
//!   bounded by frictionloss. It is MuJoCo's frictionloss constraint (dry friction solved with
//!   the contacts): it holds a joint still against less than that force and brakes it by at
//!   most that force, never reversing it.
//!
//! Rapier's own force-based motor is not used for this: on a multibody link (rapier3d 0.35
//! `unit_joint_motor_constraint`) its constraint keeps `1/lhs` without the softness term, so a
//! soft motor's PGS iteration diverges once the joint's inertia exceeds `dt²·kp + dt·kv` (the
//! SO-101's servos by a factor of ~400), and its acceleration-based motor ignores its softness
//! there: it is a rigid velocity target `q̇* − kp/(h·kp + kd)·(q − q*)`, which is what made the
//! SO-101's weak servos rise without overshoot and hold without sag. Measured on one hinge
//! (I = 0.03 kg·m², kp 17.8 N·m/rad, target 0.5 rad, 240 Hz, two substeps, no gravity): the
//! force-based motor reaches NaN within three steps, the acceleration-based one (kp/I) puts the
//! joint on its target in one step, and the implicit spring with `kp·h` taken back out peaks at
//! 1.000 rad at 0.129 s, the undamped spring's exact answer (0.962 rad with it left in).
//!
//! **Without a servo** (arm6, URDF robots, tendon and velocity actuators) the joint's motor is
//! that rigid, bounded velocity target with the model's acceleration gains `kp`/`kd`, as before.

use rapier3d::prelude::{MotorModel, Multibody, RigidBodyHandle};

use super::{Arm, JointHandle, VELOCITY_GAIN, coord_index, motor_axis};
use crate::rate::SIM_DT;
use crate::robot::{Joint, Servo};
use crate::sim::command::JointCommand;
use crate::sim::sets::SetsMut;
use crate::sim::transmission::JointForce;

/// How close (rad or m) to a limit a joint keeps its limit row even at rest.
const LIMIT_MARGIN: f32 = 1e-3;

/// A clamped servo's force comes from a spring this much softer than the servo, whose rest lies
/// `max_force / stiffness` away: its pull changes by `stiffness · Δq` over a step, 1 % of the
/// servo's (a constant force for the step within about 0.1 %).
const CLAMPED_STIFFNESS: f32 = 0.01;

/// What the multibody's implicit terms get for one degree of freedom over the next step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ImplicitDrive {
    /// Spring stiffness and rest position.
    pub stiffness: f32,
    pub rest: f32,
    /// Damping of the degree of freedom (may be below zero: the spring's own backward-Euler
    /// damping `stiffness·h` is added on top, and the sum is what acts).
    pub damping: f32,
}

/// The spring (stiffness, rest) whose force at joint position `q` is `pull − stiffness·q`. A
/// force with no stiffness at all becomes a spring of `1 %` of the force per unit, resting 100
/// units away (constant over a step within a hundredth of a percent per millimetre moved).
fn spring_of(pull: f32, stiffness: f32, q: f32) -> (f32, f32) {
    if stiffness > 0.0 {
        return (stiffness, pull / stiffness);
    }
    let soft = (0.01 * pull.abs()).max(1e-9);
    (soft, q + pull / soft)
}

impl ImplicitDrive {
    /// This drive plus `extra` (a tendon's or a constraint's force, `sim::transmission`) at
    /// joint position `q`: the two springs and dampings summed, over substeps of `h`.
    fn with(self, extra: JointForce, q: f32, h: f32) -> ImplicitDrive {
        // Both as f = k·(rest − q) − d_total·v, with `damping` = d_total − k·h.
        let pull = self.stiffness * self.rest + extra.constant;
        let total = self.stiffness + extra.stiffness;
        let (stiffness, rest) = spring_of(pull, total, q);
        ImplicitDrive {
            stiffness,
            rest,
            // The soft spring's own k·h (zero when the springs are stiff already).
            damping: self.damping + extra.damping - extra.stiffness * h - (stiffness - total) * h,
        }
    }
}

/// MuJoCo's position servo at joint position `q`, velocity `v`, over substeps of `h` seconds, with
/// the joint's passive `damping`: the spring and damping whose implicit force is
/// `clamp(kp·(target − q) + kv·(velocity − v)) − damping·v`.
pub(super) fn servo_drive(
    servo: Servo,
    target: f32,
    velocity: f32,
    q: f32,
    v: f32,
    damping: f32,
    h: f32,
) -> ImplicitDrive {
    let force = servo.kp * (target - q) + servo.kv * (velocity - v);
    if force.abs() <= servo.max_force {
        ImplicitDrive {
            stiffness: servo.kp,
            rest: target + servo.kv * velocity / servo.kp,
            damping: damping + servo.kv - servo.kp * h,
        }
    } else {
        let stiffness = CLAMPED_STIFFNESS * servo.kp;
        ImplicitDrive {
            stiffness,
            rest: q + force.clamp(-servo.max_force, servo.max_force) / stiffness,
            damping: damping - stiffness * h,
        }
    }
}

impl Arm {
    /// Drives joint `j` (at position `q`) as `cmd` says: the file's servo if it has one, else
    /// the model's acceleration gains, within its effort bound, plus `extra` (a tendon's or a
    /// constraint's force). Efforts themselves are applied as body forces by the world.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::sim) fn drive(
        &self,
        physics: &mut SetsMut<'_>,
        bodies: &[RigidBodyHandle],
        j: usize,
        joint: &Joint,
        q: f32,
        cmd: JointCommand,
        extra: Option<JointForce>,
    ) {
        match self.handles[j] {
            JointHandle::Multibody(h) => {
                let Some((mb, id)) = physics.multibody_joints.get_mut(h) else {
                    return;
                };
                self.drive_multibody(mb, id, j, joint, q, cmd, extra);
            }
            JointHandle::Impulse(h) => {
                // An impulse joint's acceleration-based motor would scale by the inertia of the
                // two bodies it joins only; the joint moves its whole subtree, so the gains are
                // scaled here by the subtree's inertia about the axis (what the multibody's
                // joint space sees) and the motor is force-based. Passive damping joins the
                // motor's damping: kd·I·(v* − v) − d·v = (kd·I + d)·(kd·I·v*/(kd·I + d) − v).
                // An impulse joint cannot carry a rotor's inertia; its gains still count it, so
                // they are the force gains the file asks for. A servo's gains are force gains
                // already (its frictionloss needs the motor slot, which the servo holds here).
                let d = self.damping[j];
                let (target, velocity, stiffness, gain, max_force) = match (cmd, joint.servo) {
                    (JointCommand::Position { target, velocity }, Some(s)) => {
                        (target, velocity, s.kp, s.kv, s.max_force.min(f32::MAX))
                    }
                    (JointCommand::Position { target, velocity }, None) => {
                        let inertia = self.subtree_inertia(physics.as_ref(), bodies, j, joint.kind)
                            + joint.armature;
                        (
                            target,
                            velocity,
                            joint.kp * inertia,
                            joint.kd * inertia,
                            joint.max_effort,
                        )
                    }
                    (JointCommand::Velocity { target }, _) => {
                        let inertia = self.subtree_inertia(physics.as_ref(), bodies, j, joint.kind)
                            + joint.armature;
                        (q, target, 0.0, VELOCITY_GAIN * inertia, joint.max_effort)
                    }
                    // No motor: the passive damping alone, unbounded.
                    (JointCommand::Effort { .. }, _) => (q, 0.0, 0.0, 0.0, f32::MAX),
                };
                let (target, velocity, stiffness, damping, max_force) = match extra {
                    None => {
                        let damping = gain + d;
                        let velocity = if damping > 0.0 {
                            velocity * gain / damping
                        } else {
                            0.0
                        };
                        (target, velocity, stiffness, damping, max_force)
                    }
                    // A tendon's or a constraint's force joins the motor's as one force-based
                    // motor: the motor's own bound first (past it, the motor is a constant
                    // force), then f = S·(t − q) + G·(w − v) − d·v + (c − k·q − e·v). The
                    // transmissions bound their own forces.
                    Some(e) => {
                        let v = super::impulse_velocity(
                            physics.as_ref(),
                            bodies,
                            &self.frames[j],
                            joint.kind,
                        );
                        let own = stiffness * (target - q) + gain * (velocity - v);
                        let (s, g, c) = if own.abs() > max_force {
                            (0.0, 0.0, own.clamp(-max_force, max_force))
                        } else {
                            (stiffness, gain, 0.0)
                        };
                        let (k, rest) = spring_of(s * target + c + e.constant, s + e.stiffness, q);
                        let damping = g + d + e.damping;
                        let push = if damping > 0.0 {
                            g * velocity / damping
                        } else {
                            0.0
                        };
                        (rest, push, k, damping, f32::MAX)
                    }
                };
                let Some(ij) = physics.impulse_joints.get_mut(h, false) else {
                    return;
                };
                let axis = motor_axis(joint.kind);
                ij.data.set_motor_model(axis, MotorModel::ForceBased);
                ij.data
                    .set_motor(axis, target, velocity, stiffness, damping);
                let bounded = damping > 0.0 || stiffness > 0.0;
                ij.data
                    .set_motor_max_force(axis, if bounded { max_force } else { 0.0 });
            }
        }
    }

    /// One multibody joint: its spring, its degree of freedom's damping and its motor.
    #[allow(clippy::too_many_arguments)]
    fn drive_multibody(
        &self,
        mb: &mut Multibody,
        id: usize,
        j: usize,
        joint: &Joint,
        q: f32,
        cmd: JointCommand,
        extra: Option<JointForce>,
    ) {
        let Some(dof) = mb.link(id).map(|l| l.assembly_id()) else {
            return;
        };
        let v = mb.generalized_velocity()[dof];
        let passive = self.damping[j];
        let implicit = match (cmd, joint.servo) {
            (JointCommand::Position { target, velocity }, Some(servo)) => {
                servo_drive(servo, target, velocity, q, v, passive, self.substep_dt)
            }
            _ => ImplicitDrive {
                stiffness: 0.0,
                rest: 0.0,
                damping: passive,
            },
        };
        let implicit = match extra {
            Some(e) => implicit.with(e, q, self.substep_dt),
            None => implicit,
        };
        mb.damping_mut()[dof] = implicit.damping;
        let Some(link) = mb.link_mut(id) else {
            return;
        };
        link.joint
            .set_spring(coord_index(joint.kind), implicit.stiffness, implicit.rest);
        let data = &mut link.joint.data;
        let axis = motor_axis(joint.kind);
        // The motor's velocity target, which Rapier clamps to what reaches a limit in a step.
        let motor_velocity = match (cmd, joint.servo) {
            // The motor is the joint's dry friction: a rigid velocity target of zero with its
            // force bounded by frictionloss. Without frictionloss its force bounds are zero and
            // it could never push: no motor, so Rapier builds no row for it.
            (JointCommand::Position { .. }, Some(_)) | (JointCommand::Effort { .. }, _) => {
                if joint.frictionloss > 0.0 {
                    data.set_motor(axis, q, 0.0, 0.0, 0.0);
                    data.set_motor_max_force(axis, joint.frictionloss);
                } else {
                    data.motor_axes.remove(axis.into());
                }
                0.0
            }
            // The multibody's acceleration-based motor: a rigid velocity target
            // `velocity − kp/(h·kp + kd)·(q − target)` bounded by the effort limit.
            (JointCommand::Position { target, velocity }, None) => {
                data.set_motor(axis, target, velocity, joint.kp, joint.kd);
                data.set_motor_max_force(axis, joint.max_effort);
                velocity
            }
            (JointCommand::Velocity { target }, _) => {
                data.set_motor(axis, q, target, 0.0, VELOCITY_GAIN);
                data.set_motor_max_force(axis, joint.max_effort);
                target
            }
        };
        // Rapier's limit row pushes only once q is past the limit (its force bounds are zero
        // inside the range), but it is built, solved against the mass matrix and iterated
        // every step all the same. So it is kept only where the joint could reach a limit
        // within this step (twice what its velocity and the motor's target cover, and a
        // margin): everywhere else leaving it out changes nothing but the cost.
        if let Some((lo, hi)) = joint.limits {
            let reach = 2.0 * (v.abs() + motor_velocity.abs()) * SIM_DT as f32 + LIMIT_MARGIN;
            if q - lo > reach && hi - q > reach {
                data.limit_axes.remove(axis.into());
            } else {
                data.set_limits(axis, [lo, hi]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SO101: Servo = Servo {
        kp: 17.8,
        kv: 0.0,
        max_force: 3.35,
    };

    #[test]
    fn an_unclamped_servo_is_its_spring_with_kv_and_damping_implicit() {
        let h = 1.0 / 480.0;
        let d = servo_drive(SO101, 0.5, 0.0, 0.45, 0.3, 0.6, h);
        assert_eq!((d.stiffness, d.rest), (17.8, 0.5));
        // The spring's backward Euler adds kp·h of damping; the sum is the joint's 0.6.
        assert!((d.damping + d.stiffness * h - 0.6).abs() < 1e-6);
    }

    #[test]
    fn a_clamped_servo_pulls_with_its_force_range_and_no_kv() {
        let h = 1.0 / 480.0;
        let servo = Servo { kv: 2.0, ..SO101 };
        // 17.8 · 0.5 = 8.9 N·m asked, 3.35 given.
        let d = servo_drive(servo, 0.5, 0.0, 0.0, 0.0, 0.6, h);
        assert!((d.stiffness * (d.rest - 0.0) - 3.35).abs() < 1e-4);
        assert!((d.damping + d.stiffness * h - 0.6).abs() < 1e-6);
    }

    /// (limit row, motor row) of robot joint `j` as Rapier will build them next step.
    fn rows(world: &crate::sim::SimWorld, j: usize) -> (bool, bool) {
        let JointHandle::Multibody(h) = world.model.arm().handles[j] else {
            panic!("joint {j} is not on the multibody");
        };
        let (mb, id) = world.physics.multibody_joints.get(h).unwrap();
        let data = &mb.link(id).unwrap().joint.data;
        let axis = motor_axis(world.model.robot.joints[j].kind).into();
        (
            data.limit_axes.contains(axis),
            data.motor_axes.contains(axis),
        )
    }

    #[test]
    fn rows_that_cannot_push_are_left_out_and_limits_still_hold() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/scenes/default_scene.json");
        let scene = crate::scene::load_scene(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut world = crate::sim::SimWorld::new(&scene);
        world.step();
        let robot = &world.model.robot;
        // At home every arm joint is well inside its range: no limit row; its servo pushes.
        for j in scene.arm_joints() {
            assert!(robot.joints[j].limits.is_some());
            assert_eq!(rows(&world, j), (false, true), "{}", robot.joints[j].name);
        }
        // arm6's fingers are driven by the grip tendon and have no dry friction: no motor.
        for j in scene.gripper_joints() {
            assert_eq!(robot.joints[j].frictionloss, 0.0);
            assert!(!rows(&world, j).1, "{}", robot.joints[j].name);
        }
        // Driven past its upper limit, the wrist's roll gets its limit row back and stops there.
        let roll = robot.joint_index("wrist_3").unwrap();
        let (_, hi) = robot.joints[roll].limits.unwrap();
        let cmd = JointCommand::Position {
            target: hi + 0.5,
            velocity: 0.0,
        };
        world.model.set_command(roll, cmd).unwrap();
        let mut worst = f32::MIN;
        for _ in 0..960 {
            world.step();
            worst = worst.max(world.view().joint_positions()[roll]);
        }
        let end = world.view().joint_positions()[roll];
        assert!(rows(&world, roll).0, "at the limit, the row is built");
        // Rapier's limit acts once the joint is past it, so the arriving joint overshoots by
        // about a step's travel (47 mrad here, the same with the row built every step), then
        // comes back to the limit.
        assert!(
            worst < hi + 0.05,
            "the joint went {:.4} rad past its limit",
            worst - hi
        );
        assert!(
            (end - hi).abs() < 0.005,
            "the joint rests {:.4} rad off its limit",
            end - hi
        );
    }
}
