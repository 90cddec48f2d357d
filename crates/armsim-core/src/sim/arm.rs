//! The robot in Rapier, in either of the two representations a scene may choose
//! (`extensions.armsim.physics.arm_joints`):
//!
//! - **multibody**: the links form one reduced-coordinate multibody; joint coordinates are exact
//!   and passive damping acts per degree of freedom. Each solver substep rebuilds the multibody's
//!   dense mass matrix (links × DoF² work), which is most of a step's cost.
//! - **impulse**: every link is a free rigid body and every joint an impulse joint with a motor,
//!   solved with the contacts. Joint coordinates are read from the relative pose of the two
//!   bodies; the cost is per joint. Passive damping acts on joints without a motor (effort
//!   commands), where it is the motor: a force-based one with zero stiffness.
//!
//! Both build the same bodies and colliders at the same poses and drive the same motor gains, so
//! everything above this module (commands, state snapshots, the renderer) sees no difference.

use glam::{Quat, Vec3};
use rapier3d::prelude::{
    CoefficientCombineRule, GenericJoint, GenericJointBuilder, Group, ImpulseJointHandle,
    InteractionGroups, InteractionTestMode, JointAxesMask, JointAxis, MassProperties, MotorModel,
    MultibodyJointHandle, PhysicsWorld, RigidBodyBuilder, RigidBodyHandle,
};

use crate::robot::{Joint, JointKind, Pose, RobotModel, kinematics};
use crate::scene::ArmJoints;

use super::colliders::colliders_for;
// Re-exported for `world`, which takes it with the arm's other items.
use super::sets::{Sets, SetsMut};
use super::to_rapier;

// The joint drives (`Arm::drive`): a child module, so it reads the arm's handles and damping.
#[path = "actuator.rs"]
mod actuator;

/// Acceleration-based gain (1/s) with which a velocity command is tracked.
const VELOCITY_GAIN: f32 = 200.0;
/// Default friction of the finger pads when the robot does not say.
const DEFAULT_FRICTION: f32 = 1.0;
/// Density of links whose file gives neither mass nor density (aluminium-ish, hollow).
const DEFAULT_LINK_DENSITY: f32 = 1000.0;
/// The collision group of the arm's colliders when self-collision is off: they meet everything
/// but each other. With it on, each geom's groups come from `RobotModel::self_collision`.
const ARM_GROUP: Group = Group::GROUP_32;

/// One actuated joint's handle in Rapier: in the multibody, or an impulse joint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointHandle {
    Multibody(MultibodyJointHandle),
    Impulse(ImpulseJointHandle),
}

/// One joint's frames: `frame1` in the parent link's frame, `frame2` in the child's; they
/// coincide at joint position zero.
#[derive(Clone, Copy, Debug)]
struct Frames {
    parent: usize,
    child: usize,
    frame1: Pose,
    frame2: Pose,
}

/// The robot's joints in Rapier: how to drive them and how to read them back.
#[derive(Clone, Debug)]
pub(super) struct Arm {
    /// Per actuated joint, robot joint order.
    handles: Vec<JointHandle>,
    /// Per actuated joint, robot joint order.
    frames: Vec<Frames>,
    /// Passive damping per actuated joint (the model's, or zero once switched off).
    damping: Vec<f32>,
    /// Per actuated joint, the links it moves (its child and everything below).
    subtrees: Vec<Vec<usize>>,
    /// Per link: whether it hangs on an impulse joint (placed by us on a teleport).
    on_impulse: Vec<bool>,
    /// The joint positions and velocities last set by a teleport, until the next step: an
    /// impulse joint reads them back as set, where its bodies' poses carry f32 rounding of
    /// world coordinates (about 1e-7 m), so a state written and read back is the same state.
    teleported: Option<(Vec<f32>, Vec<f32>)>,
    /// The solver's substep (s): the implicit spring of a servo adds `stiffness · substep` of
    /// damping, which its drive takes back out.
    substep_dt: f32,
}

impl Arm {
    /// Builds the robot's links at their home pose and joins them with `kind` joints. Returns
    /// one rigid body per robot link, in `robot.links` order.
    pub(super) fn spawn(
        physics: &mut PhysicsWorld,
        robot: &RobotModel,
        base_pose: &Pose,
        home_q: &[f32],
        extra_iterations: usize,
        kind: ArmJoints,
    ) -> (Vec<RigidBodyHandle>, Arm) {
        let link_bodies = spawn_links(physics, robot, base_pose, home_q, extra_iterations);
        let mut frames = vec![None; robot.joints.len()];
        let mut handles = vec![None; robot.joints.len()];
        let mut on_impulse = vec![false; robot.links.len()];
        for (i, link) in robot.links.iter().enumerate() {
            let Some(parent) = link.parent else { continue };
            let joint = link.joint.map(|j| (j, &robot.joints[j]));
            let (axis, anchor) = joint.map_or((Vec3::X, Vec3::ZERO), |(_, j)| (j.axis, j.anchor));
            // The joint frame's X axis is the model's joint axis; frame 1 (in the parent) and
            // frame 2 (in the child) coincide at joint position zero, putting the child at `origin`.
            let basis = Quat::from_rotation_arc(Vec3::X, axis.normalize_or(Vec3::X));
            let frame2 = Pose::new(anchor, basis);
            let frame1 = link.origin.mul(&frame2);
            let (b1, b2) = (link_bodies[parent], link_bodies[i]);
            // The hybrid's impulse joints: actuated joints of leaf links (a gripper's fingers).
            // A fixed leaf (a massless tool frame) stays in the multibody.
            let leaf = !robot.links.iter().any(|l| l.parent == Some(i));
            let impulse = match kind {
                ArmJoints::Multibody => false,
                ArmJoints::Impulse => true,
                ArmJoints::Hybrid => leaf && joint.is_some(),
            };
            // Rapier 0.35.0 reserves six jacobian rows for an impulse joint on a multibody
            // link, but a free axis with both a motor and a limit emits a seventh, over the
            // next joint's (fixed in 0.35.2, which needs glam 0.33 where Bevy 0.19 has 0.32).
            // Such a joint's limit goes into a second joint between the same frames that locks
            // nothing else: one row.
            let on_multibody = impulse && kind == ArmJoints::Hybrid;
            let data = joint_data(joint.map(|(_, j)| j), &frame1, &frame2, !on_multibody);
            if on_multibody
                && let Some((_, joint)) = joint
                && let Some((lo, hi)) = joint.limits
            {
                let limit = GenericJointBuilder::new(JointAxesMask::empty())
                    .local_frame1(to_rapier(&frame1))
                    .local_frame2(to_rapier(&frame2))
                    .contacts_enabled(true)
                    .limits(motor_axis(joint.kind), [lo, hi]);
                physics.impulse_joints.insert(b1, b2, limit, true);
            }
            on_impulse[i] = impulse;
            let handle = if impulse {
                Some(JointHandle::Impulse(
                    physics.impulse_joints.insert(b1, b2, data, true),
                ))
            } else {
                physics
                    .multibody_joints
                    .insert(b1, b2, data, true)
                    .map(JointHandle::Multibody)
            };
            if let Some((j, _)) = joint {
                handles[j] = handle;
                frames[j] = Some(Frames {
                    parent,
                    child: i,
                    frame1,
                    frame2,
                });
            }
        }
        let expect = "every actuated joint connects a link to its parent";
        let mut arm = Arm {
            handles: handles.into_iter().map(|h| h.expect(expect)).collect(),
            on_impulse,
            teleported: None,
            substep_dt: physics.integration_parameters.dt
                / (physics.integration_parameters.num_solver_iterations + extra_iterations).max(1)
                    as f32,
            frames: frames.into_iter().map(|f| f.expect(expect)).collect(),
            damping: robot.joints.iter().map(|j| j.damping).collect(),
            subtrees: robot
                .joints
                .iter()
                .map(|j| {
                    let mut below = vec![j.link];
                    for (i, link) in robot.links.iter().enumerate() {
                        if link.parent.is_some_and(|p| below.contains(&p)) && !below.contains(&i) {
                            below.push(i);
                        }
                    }
                    below
                })
                .collect(),
        };
        if let Some((mb, _)) = arm
            .multibody_handles()
            .first()
            .and_then(|&h| physics.multibody_joints.get_mut(h))
        {
            // Rapier tests a multibody's own links against each other only when this is on;
            // the collision groups then decide which pairs touch (`self_collision`: MuJoCo's
            // rule), and with self-collision off nothing of the arm meets itself.
            mb.set_self_contacts_enabled(robot.self_collision.enabled());
        }
        arm.write_damping(&mut SetsMut::of(physics));
        arm.write_armature(&mut SetsMut::of(physics), robot);
        arm.set_state(
            &mut SetsMut::of(physics),
            robot,
            &link_bodies,
            base_pose,
            home_q,
            None,
        );
        (link_bodies, arm)
    }

    /// The inertia joint `j` moves: the mass of its subtree (prismatic) or the subtree's moment
    /// of inertia about the joint axis (revolute), at the current configuration.
    fn subtree_inertia(
        &self,
        physics: Sets<'_>,
        bodies: &[RigidBodyHandle],
        j: usize,
        kind: JointKind,
    ) -> f32 {
        let f = &self.frames[j];
        let frame = body_pose(physics, bodies[f.parent]).mul(&f.frame1);
        let (axis, at) = (frame.rotation * Vec3::X, frame.translation);
        let mut total = 0.0;
        for &link in &self.subtrees[j] {
            let rb = &physics.bodies[bodies[link]];
            let m = rb.mass();
            total += match kind {
                JointKind::Prismatic => m,
                JointKind::Revolute => {
                    let local = &rb.mass_properties().local_mprops;
                    let frame = rb.rotation() * local.principal_inertia_local_frame;
                    let principal = local.principal_inertia();
                    let own: f32 = (0..3)
                        .map(|k| principal[k] * axis.dot(frame * Vec3::AXES[k]).powi(2))
                        .sum();
                    own + m * (rb.center_of_mass() - at).cross(axis).length_squared()
                }
            };
        }
        total.max(1e-6)
    }

    /// Joint positions (rad or m) in robot joint order.
    // Its parameter list is `velocities`' (a duplicate pair to the tool): the two readers take
    // the same three things from `SimView`, and what they read of each joint differs.
    pub(super) fn positions(
        &self,
        physics: Sets<'_>,
        robot: &RobotModel,
        bodies: &[RigidBodyHandle],
    ) -> Vec<f32> {
        (0..self.handles.len())
            .map(|j| self.position(physics, robot, bodies, j))
            .collect()
    }

    fn position(
        &self,
        physics: Sets<'_>,
        robot: &RobotModel,
        bodies: &[RigidBodyHandle],
        j: usize,
    ) -> f32 {
        let kind = robot.joints[j].kind;
        match self.handles[j] {
            JointHandle::Multibody(h) => physics
                .multibody_joints
                .get(h)
                .and_then(|(mb, id)| mb.link(id))
                .map_or(0.0, |l| l.joint.coords()[coord_index(kind)]),
            JointHandle::Impulse(_) if self.teleported.is_some() => {
                self.teleported.as_ref().map_or(0.0, |(q, _)| q[j])
            }
            JointHandle::Impulse(_) => {
                let f = &self.frames[j];
                let one = body_pose(physics, bodies[f.parent]).mul(&f.frame1);
                let two = body_pose(physics, bodies[f.child]).mul(&f.frame2);
                let rel = one.inverse().mul(&two);
                match kind {
                    // The rotation about frame 1's X axis (the other two are held at zero),
                    // in (-π, π].
                    JointKind::Revolute => wrap_angle(2.0 * rel.rotation.x.atan2(rel.rotation.w)),
                    JointKind::Prismatic => rel.translation.x,
                }
            }
        }
    }

    /// Joint velocities (rad/s or m/s) in robot joint order.
    // Same parameters as `positions`, on purpose: see there.
    pub(super) fn velocities(
        &self,
        physics: Sets<'_>,
        robot: &RobotModel,
        bodies: &[RigidBodyHandle],
    ) -> Vec<f32> {
        (0..self.handles.len())
            .map(|j| match self.handles[j] {
                JointHandle::Multibody(h) => physics
                    .multibody_joints
                    .get(h)
                    .and_then(|(mb, id)| mb.link(id).map(|l| mb.joint_velocity(l)))
                    .and_then(|v| v.iter().next().copied())
                    .unwrap_or(0.0),
                JointHandle::Impulse(_) => match &self.teleported {
                    Some((_, qd)) => qd[j],
                    None => {
                        impulse_velocity(physics, bodies, &self.frames[j], robot.joints[j].kind)
                    }
                },
            })
            .collect()
    }

    fn multibody_handles(&self) -> Vec<MultibodyJointHandle> {
        self.handles
            .iter()
            .filter_map(|h| match *h {
                JointHandle::Multibody(h) => Some(h),
                JointHandle::Impulse(_) => None,
            })
            .collect()
    }

    /// Teleports the robot to joint positions `q` with velocities `qd` (or at rest).
    pub(super) fn set_state(
        &mut self,
        physics: &mut SetsMut<'_>,
        robot: &RobotModel,
        bodies: &[RigidBodyHandle],
        base_pose: &Pose,
        q: &[f32],
        qd: Option<&[f32]>,
    ) {
        let current = self.positions(physics.as_ref(), robot, bodies);
        let q: Vec<f32> = (0..robot.joints.len())
            .map(|j| q.get(j).copied().unwrap_or(current[j]))
            .collect();
        self.teleported = None;
        // The multibody part moves its own links (and clears their rigid-body velocities, which
        // follow from the generalized ones at the next step).
        let multibody: Vec<(usize, MultibodyJointHandle)> = self
            .handles
            .iter()
            .enumerate()
            .filter_map(|(j, h)| match *h {
                JointHandle::Multibody(h) => Some((j, h)),
                JointHandle::Impulse(_) => None,
            })
            .collect();
        set_multibody_state(physics, robot, bodies, &multibody, &q, qd);
        // Links on impulse joints are placed by forward kinematics and given the velocities the
        // joint rates imply.
        let on_impulse = &self.on_impulse;
        if !on_impulse.contains(&true) {
            return;
        }
        let poses = kinematics::forward_kinematics(robot, &q);
        let world: Vec<Pose> = poses.iter().map(|p| base_pose.mul(p)).collect();
        for (i, &h) in bodies.iter().enumerate() {
            if on_impulse[i]
                && let Some(rb) = physics.bodies.get_mut(h)
            {
                rb.set_position(to_rapier(&world[i]), true);
            }
        }
        // Every link's velocity follows from the joint rates, multibody links too: an impulse
        // joint's rate is read from the two bodies it joins.
        self.set_velocities(physics, robot, bodies, &world, qd);
        let qd = (0..robot.joints.len())
            .map(|j| qd.and_then(|qd| qd.get(j)).copied().unwrap_or(0.0))
            .collect();
        self.teleported = Some((q, qd));
    }

    /// Link velocities of the impulse representation from joint velocities `qd`, outward from
    /// the base: each child moves with its parent plus its own joint's motion.
    fn set_velocities(
        &self,
        physics: &mut SetsMut<'_>,
        robot: &RobotModel,
        bodies: &[RigidBodyHandle],
        world: &[Pose],
        qd: Option<&[f32]>,
    ) {
        // (angular velocity, velocity of the link frame's origin) per link.
        let mut vel = vec![(Vec3::ZERO, Vec3::ZERO); robot.links.len()];
        for (i, link) in robot.links.iter().enumerate() {
            let Some(parent) = link.parent else { continue };
            let (w_p, v_p) = vel[parent];
            let origin = world[i].translation;
            let mut w = w_p;
            let mut v = v_p + w_p.cross(origin - world[parent].translation);
            if let Some(j) = link.joint {
                let rate = qd.and_then(|qd| qd.get(j)).copied().unwrap_or(0.0);
                let f = &self.frames[j];
                let frame = world[i].mul(&f.frame2);
                let axis = frame.rotation * Vec3::X;
                match robot.joints[j].kind {
                    JointKind::Revolute => {
                        w += axis * rate;
                        v += (axis * rate).cross(origin - frame.translation);
                    }
                    JointKind::Prismatic => v += axis * rate,
                }
            }
            vel[i] = (w, v);
        }
        for (i, &h) in bodies.iter().enumerate() {
            if let Some(rb) = physics.bodies.get_mut(h)
                && rb.is_dynamic()
            {
                let (w, v) = vel[i];
                // Rapier's linear velocity is the centre of mass's.
                let com = rb.center_of_mass();
                rb.set_linvel(v + w.cross(com - world[i].translation), true);
                rb.set_angvel(w, true);
            }
        }
    }

    /// The physics moved the bodies: joint positions are read from them again.
    /// Joint `j`'s handle and the links it joins (parent, child), robot joint order.
    pub(super) fn joint(&self, j: usize) -> (JointHandle, usize, usize) {
        let f = &self.frames[j];
        (self.handles[j], f.parent, f.child)
    }

    pub(super) fn stepped(&mut self) {
        self.teleported = None;
    }

    /// Switches the joints' passive damping off (the free-swing energy benchmark) or back to the
    /// model's values.
    pub(super) fn set_damping(&mut self, physics: &mut SetsMut<'_>, robot: &RobotModel, on: bool) {
        self.damping = robot
            .joints
            .iter()
            .map(|j| if on { j.damping } else { 0.0 })
            .collect();
        self.write_damping(physics);
    }

    /// Writes each multibody joint's `armature` (reflected rotor inertia, MuJoCo's) into the
    /// multibody, whose acceleration-based motors then scale their gains by it too: a position
    /// actuator tuned in MuJoCo squeezes with the stiffness it has there.
    fn write_armature(&self, physics: &mut SetsMut<'_>, robot: &RobotModel) {
        for (h, joint) in self.handles.iter().zip(&robot.joints) {
            let JointHandle::Multibody(h) = *h else {
                continue;
            };
            if let Some((mb, link_id)) = physics.multibody_joints.get_mut(h)
                && let Some(dof) = mb.link(link_id).map(|l| l.assembly_id())
            {
                mb.armature_mut()[dof] = joint.armature;
            }
        }
    }

    /// Writes the passive damping of multibody joints into the multibody (impulse joints apply
    /// it in `drive`).
    fn write_damping(&self, physics: &mut SetsMut<'_>) {
        for (j, h) in self.handles.iter().enumerate() {
            let JointHandle::Multibody(h) = *h else {
                continue;
            };
            if let Some((mb, link_id)) = physics.multibody_joints.get_mut(h)
                && let Some(dof) = mb.link(link_id).map(|l| l.assembly_id())
            {
                mb.damping_mut()[dof] = self.damping[j];
            }
        }
    }
}

/// The rate of an impulse joint: the two bodies' relative motion along or about its axis.
fn impulse_velocity(
    physics: Sets<'_>,
    bodies: &[RigidBodyHandle],
    f: &Frames,
    kind: JointKind,
) -> f32 {
    let parent = &physics.bodies[bodies[f.parent]];
    let child = &physics.bodies[bodies[f.child]];
    let frame = body_pose(physics, bodies[f.parent]).mul(&f.frame1);
    let axis = frame.rotation * Vec3::X;
    match kind {
        JointKind::Revolute => (child.angvel() - parent.angvel()).dot(axis),
        JointKind::Prismatic => {
            let at = frame.translation;
            (child.velocity_at_point(at) - parent.velocity_at_point(at)).dot(axis)
        }
    }
}

/// Angles from the relative rotation lie in (-2π, 2π]; bring them to (-π, π].
fn wrap_angle(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    if a > PI {
        a - TAU
    } else if a <= -PI {
        a + TAU
    } else {
        a
    }
}

fn body_pose(physics: Sets<'_>, h: RigidBodyHandle) -> Pose {
    let p = physics.bodies[h].position();
    Pose::new(p.translation, p.rotation)
}

/// The Rapier joint for one robot joint (`None`: a fixed link).
fn joint_data(joint: Option<&Joint>, frame1: &Pose, frame2: &Pose, limits: bool) -> GenericJoint {
    let mask = match joint.map(|j| j.kind) {
        Some(JointKind::Revolute) => JointAxesMask::LOCKED_REVOLUTE_AXES,
        Some(JointKind::Prismatic) => JointAxesMask::LOCKED_PRISMATIC_AXES,
        None => JointAxesMask::LOCKED_FIXED_AXES,
    };
    let mut builder = GenericJointBuilder::new(mask)
        .local_frame1(to_rapier(frame1))
        .local_frame2(to_rapier(frame2))
        // The collision groups decide whether a parent and its child touch (MuJoCo lets a
        // child of the world's weld group hit it); a joint that disabled contacts would veto.
        .contacts_enabled(true);
    if let Some(joint) = joint {
        let axis = motor_axis(joint.kind);
        builder = builder.motor_model(axis, MotorModel::AccelerationBased);
        if let Some((lo, hi)) = joint.limits.filter(|_| limits) {
            builder = builder.limits(axis, [lo, hi]);
        }
    }
    builder.build()
}

/// The links as rigid bodies at the pose of `home_q`, with their colliders and inertia.
fn spawn_links(
    physics: &mut PhysicsWorld,
    robot: &RobotModel,
    base_pose: &Pose,
    home_q: &[f32],
    extra_iterations: usize,
) -> Vec<RigidBodyHandle> {
    // Bodies start at their home pose so the broad phase never sees the arm folded into itself.
    let link_poses = kinematics::forward_kinematics(robot, home_q);
    let arm_only =
        InteractionGroups::new(ARM_GROUP, Group::ALL ^ ARM_GROUP, InteractionTestMode::And);
    let mut link_bodies = Vec::with_capacity(robot.links.len());
    for (i, link) in robot.links.iter().enumerate() {
        let world_pose = base_pose.mul(&link_poses[i]);
        let builder = if link.parent.is_none() {
            RigidBodyBuilder::fixed()
        } else {
            RigidBodyBuilder::dynamic()
                .additional_solver_iterations(extra_iterations)
                .can_sleep(false)
        };
        let body = physics.bodies.insert(builder.pose(to_rapier(&world_pose)));
        for (k, geom) in link.collisions.iter().enumerate() {
            // Self-collision's bits for this geom, else the arm never meets itself.
            let groups = robot.self_collision.groups.get(i).and_then(|g| g.get(k));
            let groups = groups.map_or(arm_only, |&(m, f)| {
                let (m, f) = (Group::from_bits_retain(m), Group::from_bits_retain(f));
                InteractionGroups::new(m, f, InteractionTestMode::And)
            });
            for c in colliders_for(&geom.shape, &geom.pose, &robot.meshes) {
                let mut c = c
                    .friction(geom.friction.unwrap_or(DEFAULT_FRICTION))
                    // MuJoCo's rule for two geoms' sliding friction: the larger one.
                    .friction_combine_rule(CoefficientCombineRule::Max)
                    .collision_groups(groups);
                c = if link.inertial.is_some() {
                    // The link's explicit inertial wins; colliders contribute no mass.
                    c.density(0.0)
                } else {
                    c.density(geom.density.unwrap_or(DEFAULT_LINK_DENSITY))
                };
                physics
                    .colliders
                    .insert_with_parent(c, body, &mut physics.bodies);
            }
        }
        if let Some(inertial) = link.inertial
            && link.parent.is_some()
        {
            let mp = MassProperties::new(
                inertial.com,
                inertial.mass.max(1e-3),
                inertial.principal_inertia.max(Vec3::splat(1e-6)),
            );
            if let Some(rb) = physics.bodies.get_mut(body) {
                rb.set_additional_mass_properties(mp, false);
            }
        }
        link_bodies.push(body);
    }
    link_bodies
}

/// Moves the multibody to joint positions `q` (and velocities `qd`, or zero) and writes the
/// resulting link poses back to the rigid bodies.
fn set_multibody_state(
    physics: &mut SetsMut<'_>,
    robot: &RobotModel,
    link_bodies: &[RigidBodyHandle],
    joint_handles: &[(usize, MultibodyJointHandle)],
    q: &[f32],
    qd: Option<&[f32]>,
) {
    let Some(&(_, first)) = joint_handles.first() else {
        return;
    };
    let Some((mb, _)) = physics.multibody_joints.get_mut(first) else {
        return;
    };
    let mut disp = vec![0.0; mb.ndofs()];
    let mut vel = vec![0.0; mb.ndofs()];
    for &(j, h) in joint_handles {
        let Some(link) = physics
            .multibody_joints
            .get(h)
            .and_then(|(mb, id)| mb.link(id))
        else {
            continue;
        };
        let dof = link.assembly_id();
        let current = link.joint.coords()[coord_index(robot.joints[j].kind)];
        if let Some(&target) = q.get(j) {
            disp[dof] = target - current;
        }
        vel[dof] = qd.and_then(|v| v.get(j)).copied().unwrap_or(0.0);
    }
    let Some((mb, _)) = physics.multibody_joints.get_mut(first) else {
        return;
    };
    mb.apply_displacements(&disp);
    mb.generalized_velocity_mut()
        .iter_mut()
        .zip(&vel)
        .for_each(|(v, &t)| *v = t);
    mb.forward_kinematics(physics.bodies, true);
    mb.update_rigid_bodies(physics.bodies, true);
    // Rigid-body velocities follow from the generalized ones at the next step; clear stale ones
    // so a state hash taken right after a teleport sees a consistent world.
    for &h in link_bodies {
        if physics.multibody_joints.rigid_body_link(h).is_some()
            && let Some(rb) = physics.bodies.get_mut(h)
        {
            rb.set_linvel(Vec3::ZERO, true);
            rb.set_angvel(Vec3::ZERO, true);
        }
    }
}

fn motor_axis(kind: JointKind) -> JointAxis {
    match kind {
        JointKind::Revolute => JointAxis::AngX,
        JointKind::Prismatic => JointAxis::LinX,
    }
}

/// Index of a joint's free coordinate in Rapier's spatial coordinate vector.
fn coord_index(kind: JointKind) -> usize {
    match kind {
        JointKind::Revolute => 3,
        JointKind::Prismatic => 0,
    }
}
