//! The physics of one scene with no Bevy in it: a Rapier world holding the table, the free
//! objects and the robot with joint motors (a multibody, impulse joints or both: `super::arm`),
//! plus the per-joint commands.
//!
//! Keeping this Bevy-free is what lets the benchmark compare the ECS step path with bare Rapier
//! on exactly the same world, and lets reset rebuild the world bit-for-bit from the scene.

use std::hash::Hasher;

use glam::{Quat, Vec3, Vec4};
use rapier3d::prelude::{
    CoefficientCombineRule, ColliderBuilder, ColliderHandle, PhysicsWorld, RigidBodyBuilder,
    RigidBodyHandle,
};

use crate::robot::{JointKind, Pose, RobotModel, Shape};
use crate::scene::{ObjectConfig, Scene};

use super::arm::{Arm, JointHandle};
use super::colliders::collider_for;
use super::command::{CommandError, JointCommand, set_checked};
use super::rest::ArmRest;
use super::sets::{Sets, SetsMut};
use super::to_rapier;
use super::transmission;

pub use crate::rate::{SIM_DT, SIM_HZ};

/// A free object of the scene, as built in Rapier.
#[derive(Clone, Debug)]
pub struct ObjectBody {
    pub name: String,
    pub body: RigidBodyHandle,
    pub shape: Shape,
    pub rgba: [f32; 4],
    /// Where the scene puts it; the referee puts a fallen object back here.
    pub initial: Pose,
    /// Half its largest extent (a 5 cm cube: 0.025 m).
    pub half_extent: f32,
}

/// What a rigid body in the world stands for; used by the renderer and the state snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyRole {
    Table,
    Object(usize),
    Link(usize),
}

/// One actuated joint as built in Rapier: its handle and the links it joins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActuatedJoint {
    /// Robot joint order.
    pub index: usize,
    pub handle: JointHandle,
    /// The links (robot link order) on either side.
    pub parent_link: usize,
    pub child_link: usize,
}

/// Numbers every world built in this process, so that whoever mirrors a world elsewhere (the
/// ECS's entities) can tell a rebuilt world from the one it mirrored.
static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A world of its own: its Rapier sets in a `PhysicsWorld` beside its [`SimModel`]. The app
/// keeps the model in a resource and gives the sets to bevy_rapier3d's context
/// (`armsim_sim::sim::physics`); [`SimWorld::step`] steps them with Rapier's own pipeline (the
/// benchmark's bare baseline). Read and move it through [`SimWorld::view`] and
/// [`SimWorld::view_mut`], as the app does through its context.
pub struct SimWorld {
    pub physics: PhysicsWorld,
    pub model: SimModel,
}

/// Everything of a world but its Rapier sets: the robot and how its joints were built, the
/// handles of its links, objects and table, and the joints' commands.
#[derive(Clone, Debug)]
pub struct SimModel {
    instance: u64,
    pub robot: RobotModel,
    /// Pose of the robot's root link in the world.
    pub base_pose: Pose,
    /// One rigid body per robot link, in `robot.links` order.
    pub link_bodies: Vec<RigidBodyHandle>,
    /// The robot's joints (a multibody or impulse joints, as the scene says).
    arm: Arm,
    pub objects: Vec<ObjectBody>,
    pub table: RigidBodyHandle,
    pub table_top_z: f32,
    /// Table top extents (x, y) and centre in the world.
    pub table_size: [f32; 2],
    pub table_center: [f32; 2],
    commands: Vec<JointCommand>,
    /// Per joint, the position its velocity or effort command aims at where the command's
    /// source has one (an agent's PD effector target, a lockstep client's integrated
    /// velocities): what recordings take as the joint's action. Not physics: the motors only
    /// see `commands`.
    aims: Vec<Option<f32>>,
    /// Whether the last `apply_commands` put effort forces on the links, which the next must
    /// clear (Rapier keeps user forces until reset).
    efforts_applied: bool,
    /// Whether the arm rests and may sleep, and what wakes it (`rest`).
    rest: ArmRest,
}

/// A world to read: its model and its sets, wherever they are kept.
#[derive(Clone, Copy)]
pub struct SimView<'a> {
    pub model: &'a SimModel,
    pub physics: Sets<'a>,
}

/// A world to write: joint motors, teleports, forces.
pub struct SimViewMut<'a> {
    pub model: &'a mut SimModel,
    pub physics: SetsMut<'a>,
}

impl std::ops::Deref for SimWorld {
    type Target = SimModel;
    fn deref(&self) -> &SimModel {
        &self.model
    }
}

impl std::ops::DerefMut for SimWorld {
    fn deref_mut(&mut self) -> &mut SimModel {
        &mut self.model
    }
}

impl std::ops::Deref for SimView<'_> {
    type Target = SimModel;
    fn deref(&self) -> &SimModel {
        self.model
    }
}

impl std::ops::Deref for SimViewMut<'_> {
    type Target = SimModel;
    fn deref(&self) -> &SimModel {
        self.model
    }
}

impl std::ops::DerefMut for SimViewMut<'_> {
    fn deref_mut(&mut self) -> &mut SimModel {
        self.model
    }
}

impl SimWorld {
    /// Builds the world of `scene` in its initial state: robot at `home_q`, objects at their poses.
    pub fn new(scene: &Scene) -> Self {
        let cfg = &scene.config;
        let ext = &cfg.extensions.armsim;
        let mut physics = PhysicsWorld {
            gravity: Vec3::new(0.0, 0.0, -9.81),
            ..Default::default()
        };
        physics.integration_parameters.dt = SIM_DT as f32;
        physics.integration_parameters.num_solver_iterations = ext.physics.solver_iterations.max(1);
        physics.integration_parameters.num_internal_pgs_iterations =
            ext.physics.pgs_iterations.max(1);
        // Rapier's default 2 cm contact prediction lets one jaw stop short of a 5 cm cube and the
        // grasp closes lopsided; 2 mm keeps both pads on the cube.
        physics
            .integration_parameters
            .normalized_prediction_distance = 0.002;
        // `contact_hz` is the contacts' natural frequency; those with a fixed body (the table)
        // are twice as stiff, as Rapier's own defaults are (30 and 60 Hz), at most the step rate.
        if let Some(hz) = ext.physics.contact_hz {
            let params = &mut physics.integration_parameters;
            params.contact_softness.natural_frequency = hz;
            params.static_contact_softness.natural_frequency = (2.0 * hz).min(SIM_HZ as f32);
        }

        let table_top_z = cfg.table.top_height_m;
        let table_size = ext.table_size_m;
        let table_center = ext.table_center_xy_m;
        // The table is one static box whose top face is the scene's table height.
        let table_half = Vec3::new(table_size[0] / 2.0, table_size[1] / 2.0, table_top_z / 2.0);
        let table = physics
            .bodies
            .insert(RigidBodyBuilder::fixed().translation(Vec3::new(
                table_center[0],
                table_center[1],
                table_top_z / 2.0,
            )));
        physics.colliders.insert_with_parent(
            ColliderBuilder::cuboid(table_half.x, table_half.y, table_half.z)
                .friction(ext.physics.friction)
                .friction_combine_rule(CoefficientCombineRule::Max),
            table,
            &mut physics.bodies,
        );

        let objects = cfg
            .objects
            .iter()
            .map(|o| spawn_object(&mut physics, o, ext.physics.friction))
            .collect();

        let base_pose = Pose::new(
            Vec3::from(cfg.robot.base_pose.pos_m),
            Quat::from_array(cfg.robot.base_pose.quat_xyzw).normalize(),
        );
        let robot = scene.robot.clone();
        let home_q = scene.home_q_full();
        let (link_bodies, arm) = Arm::spawn(
            &mut physics,
            &robot,
            &base_pose,
            &home_q,
            ext.physics.arm_extra_iterations,
            ext.physics.arm_joints,
        );

        let commands = home_q
            .iter()
            .map(|&q| JointCommand::Position {
                target: q,
                velocity: 0.0,
            })
            .collect::<Vec<_>>();
        let aims = vec![None; commands.len()];
        let model = SimModel {
            instance: INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            robot,
            base_pose,
            link_bodies,
            arm,
            objects,
            table,
            table_top_z,
            table_size,
            table_center,
            commands,
            aims,
            efforts_applied: false,
            rest: ArmRest::new(ext.physics.arm_sleeps),
        };
        let mut world = Self { physics, model };
        world.view_mut().apply_commands();
        world
    }

    /// The world to read.
    pub fn view(&self) -> SimView<'_> {
        SimView {
            model: &self.model,
            physics: Sets::of(&self.physics),
        }
    }

    /// The world to write.
    pub fn view_mut(&mut self) -> SimViewMut<'_> {
        SimViewMut {
            model: &mut self.model,
            physics: SetsMut::of(&mut self.physics),
        }
    }

    /// One physics step of `SIM_DT` with the current commands, by Rapier's own pipeline: what
    /// the app does through bevy_rapier3d (`prepare_step`, its step unless everything sleeps,
    /// `finish_step`), bit for bit. The benchmarks' bare baseline.
    pub fn step(&mut self) {
        self.view_mut().prepare_step();
        // Nothing awake: Rapier's step would change nothing (the app skips it alike).
        if !Sets::of(&self.physics).all_asleep() {
            self.physics.step();
        }
        self.view_mut().finish_step();
    }
}

impl SimModel {
    /// The arm's joints in Rapier, for tests of what Rapier builds from them.
    #[cfg(test)]
    pub(super) fn arm(&self) -> &Arm {
        &self.arm
    }

    /// Whether the arm sleeps (see `rest`): it rested, and Rapier put it to sleep with
    /// whatever it touches. Its joint velocities read zero until something wakes it.
    pub fn arm_asleep(&self) -> bool {
        self.rest.asleep()
    }

    pub fn joint_count(&self) -> usize {
        self.robot.joints.len()
    }

    pub fn commands(&self) -> &[JointCommand] {
        &self.commands
    }

    /// Sets the command of joint `index` (robot joint order). Non-finite values are refused so a
    /// bad input can never reach the solver.
    pub fn set_command(&mut self, index: usize, cmd: JointCommand) -> Result<(), CommandError> {
        self.set_command_aiming(index, cmd, None)
    }

    /// As [`Self::set_command`], with the position the command aims at (see [`Self::aim`]);
    /// `None`, or a non-finite aim, says it aims at nothing but itself.
    pub fn set_command_aiming(
        &mut self,
        index: usize,
        cmd: JointCommand,
        aim: Option<f32>,
    ) -> Result<(), CommandError> {
        let before = self.commands.get(index).copied();
        set_checked(&mut self.commands, index, cmd)?;
        if before != Some(cmd) {
            self.rest.disturb();
        }
        if let Some(slot) = self.aims.get_mut(index) {
            *slot = aim.filter(|a| a.is_finite());
        }
        Ok(())
    }

    /// The position joint `index` is told to reach, if its command names one: a position
    /// command's target, or the aim its source gave a velocity or effort command.
    pub fn aim(&self, index: usize) -> Option<f32> {
        match self.commands.get(index)? {
            JointCommand::Position { target, .. } => Some(*target),
            _ => self.aims.get(index).copied().flatten(),
        }
    }

    /// This world's number in the process: a world built anew (a reset) has another one.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The robot's actuated joints as built in Rapier, robot joint order.
    pub fn actuated_joints(&self) -> Vec<ActuatedJoint> {
        (0..self.robot.joints.len())
            .map(|index| {
                let (handle, parent_link, child_link) = self.arm.joint(index);
                ActuatedJoint {
                    index,
                    handle,
                    parent_link,
                    child_link,
                }
            })
            .collect()
    }

    /// The table top's footprint in the world: (min x y, max x y).
    pub fn table_bounds(&self) -> ([f32; 2], [f32; 2]) {
        let (c, s) = (self.table_center, self.table_size);
        (
            [c[0] - s[0] / 2.0, c[1] - s[1] / 2.0],
            [c[0] + s[0] / 2.0, c[1] + s[1] / 2.0],
        )
    }

    /// The index of the object called `name`.
    pub fn object_index(&self, name: &str) -> Option<usize> {
        self.objects.iter().position(|o| o.name == name)
    }

    /// What rigid body `handle` stands for, if it is one of this world's.
    pub fn role_of(&self, handle: RigidBodyHandle) -> Option<BodyRole> {
        self.bodies()
            .find_map(|(role, h)| (h == handle).then_some(role))
    }

    /// Every body's role, in a stable order (table, objects, links).
    pub fn bodies(&self) -> impl Iterator<Item = (BodyRole, RigidBodyHandle)> + '_ {
        std::iter::once((BodyRole::Table, self.table))
            .chain(
                self.objects
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (BodyRole::Object(i), o.body)),
            )
            .chain(
                self.link_bodies
                    .iter()
                    .enumerate()
                    .map(|(i, &h)| (BodyRole::Link(i), h)),
            )
    }
}

impl SimViewMut<'_> {
    /// The same world, to read.
    pub fn view(&self) -> SimView<'_> {
        SimView {
            model: self.model,
            physics: self.physics.as_ref(),
        }
    }

    /// Before a step: wakes a disturbed arm, and pushes the commands into the joint motors
    /// and, for effort commands, the link torques (not while the arm sleeps on: its motors
    /// hold what they had).
    pub fn prepare_step(&mut self) {
        let m = &mut *self.model;
        if !m.rest.before_step(&mut self.physics, &m.link_bodies) {
            self.apply_commands();
        }
    }

    /// After a step: what the robot's joints keep between steps is brought up to date, and a
    /// resting arm is let sleep (see `rest`).
    pub fn finish_step(&mut self) {
        let m = &mut *self.model;
        m.arm.stepped();
        let (arm, robot, commands) = (&m.arm, &m.robot, &m.commands);
        m.rest
            .after_step(&mut self.physics, &m.link_bodies, |physics| {
                // A command that asks for motion keeps the arm from resting, however slow.
                if commands.iter().any(|c| c.asks_for_motion()) {
                    return f32::INFINITY;
                }
                arm.velocities(physics, robot, &m.link_bodies)
                    .into_iter()
                    .fold(0.0, |top, v| top.max(v.abs()))
            });
    }

    /// Pushes the commands into the joint motors and, for effort commands, the link torques.
    fn apply_commands(&mut self) {
        let q = self.view().joint_positions();
        // Tendons and joint equalities (`transmission`): forces that join joints.
        let joined = if transmission::any(&self.model.robot) {
            let v = self.view().joint_velocities();
            transmission::forces(&self.model.robot, &q, &v, &self.model.commands)
        } else {
            Vec::new()
        };
        let (m, physics) = (&mut *self.model, &mut self.physics);
        for (i, &cmd) in m.commands.iter().enumerate() {
            let joint = &m.robot.joints[i];
            let t = joined.get(i).copied().flatten();
            // A joint a tendon or a constraint moves has no motor of its own.
            let cmd = match t {
                Some(t) if t.replaces_command => JointCommand::Effort { torque: 0.0 },
                _ => cmd,
            };
            let extra = t.map(|t| t.force);
            m.arm
                .drive(physics, &m.link_bodies, i, joint, q[i], cmd, extra);
        }
        // Efforts are external forces on the two links around the joint; Rapier keeps user
        // forces until reset, so they are rebuilt every step. Only when some were applied:
        // `get_mut` marks a body modified, and a modified body makes Rapier bump its island
        // epoch and rebuild the solver's body and joint layout, a cost a plain position
        // command never needs.
        if m.efforts_applied {
            for &h in &m.link_bodies {
                if let Some(rb) = physics.bodies.get_mut(h) {
                    rb.reset_forces(false);
                    rb.reset_torques(false);
                }
            }
        }
        m.efforts_applied = false;
        for (i, cmd) in m.commands.iter().enumerate() {
            let JointCommand::Effort { torque } = *cmd else {
                continue;
            };
            if joined
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|t| t.replaces_command)
            {
                continue;
            }
            let joint = &m.robot.joints[i];
            let child = m.link_bodies[joint.link];
            let Some(parent_link) = m.robot.links[joint.link].parent else {
                continue;
            };
            let parent = m.link_bodies[parent_link];
            let tau = torque.clamp(-joint.max_effort, joint.max_effort);
            let axis_world = physics.bodies[child].rotation() * joint.axis;
            let wrench = axis_world * tau;
            m.efforts_applied = true;
            for (h, sign) in [(child, 1.0), (parent, -1.0)] {
                if let Some(rb) = physics.bodies.get_mut(h) {
                    match joint.kind {
                        JointKind::Revolute => rb.add_torque(wrench * sign, true),
                        JointKind::Prismatic => rb.add_force(wrench * sign, true),
                    }
                }
            }
        }
    }

    /// Teleports the robot to joint positions `q` with velocities `qd` (robot joint order).
    pub fn set_joint_state(&mut self, q: &[f32], qd: &[f32]) {
        let m = &mut *self.model;
        m.rest.disturb();
        m.arm.set_state(
            &mut self.physics,
            &m.robot,
            &m.link_bodies,
            &m.base_pose,
            q,
            Some(qd),
        );
    }

    /// Switches the joints' passive damping off (`false`) or back to the model's (`true`); the
    /// quality benchmark's free swing measures energy without it.
    pub fn set_passive_damping(&mut self, on: bool) {
        let m = &mut *self.model;
        m.rest.disturb();
        m.arm.set_damping(&mut self.physics, &m.robot, on);
    }

    /// Teleports object `index` to `pose` with the given velocities (a monitor's `(cube …)`, the
    /// referee putting a fallen cube back). Refuses non-finite values.
    pub fn place_object(
        &mut self,
        index: usize,
        pose: Pose,
        lin_vel: Vec3,
        ang_vel: Vec3,
    ) -> Result<(), PlaceError> {
        let Some(body) = self.objects.get(index).map(|o| o.body) else {
            return Err(PlaceError::NoSuchObject(index));
        };
        if !(pose.translation.is_finite()
            && pose.rotation.is_finite()
            && lin_vel.is_finite()
            && ang_vel.is_finite())
        {
            return Err(PlaceError::NotFinite);
        }
        if pose.translation.abs().max_element() > WORLD_HALF_EXTENT {
            return Err(PlaceError::OutOfWorld(pose.translation));
        }
        if lin_vel.length() > MAX_PLACE_LIN_VEL || ang_vel.length() > MAX_PLACE_ANG_VEL {
            return Err(PlaceError::TooFast);
        }
        let rot = unit_quat(pose.rotation).ok_or(PlaceError::BadRotation)?;
        // The object may land on the arm, or leave a hand it rested in.
        self.model.rest.disturb();
        let rb = &mut self.physics.bodies[body];
        rb.set_position(to_rapier(&Pose::new(pose.translation, rot)), true);
        rb.set_linvel(lin_vel, true);
        rb.set_angvel(ang_vel, true);
        rb.reset_forces(true);
        rb.reset_torques(true);
        Ok(())
    }

    /// Puts object `index` back where the scene placed it, at rest.
    pub fn reset_object(&mut self, index: usize) -> Result<(), PlaceError> {
        let initial = self
            .objects
            .get(index)
            .map(|o| o.initial)
            .ok_or(PlaceError::NoSuchObject(index))?;
        self.place_object(index, initial, Vec3::ZERO, Vec3::ZERO)
    }
}

impl<'a> SimView<'a> {
    /// Joint positions (rad or m) in robot joint order.
    pub fn joint_positions(&self) -> Vec<f32> {
        self.arm
            .positions(self.physics, &self.robot, &self.link_bodies)
    }

    /// What recordings take as each joint's action (robot joint order): the position the
    /// joint is told to reach ([`SimModel::aim`]), or where it is when its command names none
    /// (a bare velocity or torque).
    pub fn action_positions(&self) -> Vec<f32> {
        let q = self.joint_positions();
        q.iter()
            .enumerate()
            .map(|(j, &q)| self.aim(j).unwrap_or(q))
            .collect()
    }

    /// Joint velocities (rad/s or m/s) in robot joint order.
    pub fn joint_velocities(&self) -> Vec<f32> {
        self.arm
            .velocities(self.physics, &self.robot, &self.link_bodies)
    }

    pub fn body_pose(&self, handle: RigidBodyHandle) -> Pose {
        let p = self.physics.bodies[handle].position();
        Pose::new(p.translation, p.rotation)
    }

    /// Linear and angular velocity of a rigid body (world frame).
    pub fn body_velocity(&self, handle: RigidBodyHandle) -> (Vec3, Vec3) {
        let rb = &self.physics.bodies[handle];
        (rb.linvel(), rb.angvel())
    }

    /// The first body (table, object or link) whose pose or velocity is not finite, by name.
    pub fn non_finite_body(&self) -> Option<String> {
        self.bodies().find_map(|(role, handle)| {
            let rb = &self.physics.bodies[handle];
            let p = rb.position();
            let finite = p.translation.is_finite()
                && p.rotation.is_finite()
                && rb.linvel().is_finite()
                && rb.angvel().is_finite();
            (!finite).then(|| match role {
                BodyRole::Table => "the table".to_string(),
                BodyRole::Object(i) => format!("object {}", self.objects[i].name),
                BodyRole::Link(i) => format!("link {}", self.robot.links[i].name),
            })
        })
    }

    /// The end-effector point in the world frame.
    pub fn ee_position(&self) -> Vec3 {
        self.body_pose(self.link_bodies[self.robot.ee_link])
            .transform_point(self.robot.ee_offset)
    }

    /// A hash over every body's pose and velocity and every joint's coordinate and velocity, bit
    /// for bit: equal hashes mean equal physical state.
    pub fn state_hash(&self) -> u64 {
        let mut h = Fnv64::default();
        for (_, handle) in self.bodies() {
            let rb = &self.physics.bodies[handle];
            let p = rb.position();
            for v in p.translation.to_array() {
                h.write_u32(v.to_bits());
            }
            for v in p.rotation.to_array() {
                h.write_u32(v.to_bits());
            }
            for v in rb
                .linvel()
                .to_array()
                .into_iter()
                .chain(rb.angvel().to_array())
            {
                h.write_u32(v.to_bits());
            }
        }
        for v in self
            .joint_positions()
            .into_iter()
            .chain(self.joint_velocities())
        {
            h.write_u32(v.to_bits());
        }
        h.finish()
    }

    /// The collider handles of one body (for contact queries in tests and the referee).
    pub fn colliders_of(&self, body: RigidBodyHandle) -> &[ColliderHandle] {
        self.physics.bodies[body].colliders()
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlaceError {
    #[error("no object with index {0}")]
    NoSuchObject(usize),
    #[error("pose and velocities must be finite")]
    NotFinite,
    #[error("position {0} is outside the world (each coordinate within ±{WORLD_HALF_EXTENT} m)")]
    OutOfWorld(Vec3),
    #[error("velocities must stay within {MAX_PLACE_LIN_VEL} m/s and {MAX_PLACE_ANG_VEL} rad/s")]
    TooFast,
    #[error("the orientation must be a non-zero quaternion")]
    BadRotation,
}

/// Where anything may be placed from outside: each world coordinate within this many metres.
pub const WORLD_HALF_EXTENT: f32 = 50.0;
/// The fastest an object may be thrown by a placement (m/s, rad/s).
pub const MAX_PLACE_LIN_VEL: f32 = 100.0;
pub const MAX_PLACE_ANG_VEL: f32 = 1000.0;

/// `q` as a unit quaternion, or `None` if it has no direction (zero, or not finite). A unit
/// quaternion is returned bit for bit (exact replay); others are scaled by their largest
/// component first, so huge finite components normalise instead of overflowing to NaN.
pub fn unit_quat(q: Quat) -> Option<Quat> {
    if !q.is_finite() {
        return None;
    }
    if (q.length_squared() - 1.0).abs() < 1e-6 {
        return Some(q);
    }
    let largest = Vec4::from(q).abs().max_element();
    if largest == 0.0 {
        return None;
    }
    // The largest component is now ±1, so the length is at least 1: no underflow to zero.
    let scaled = Quat::from_vec4(Vec4::from(q) / largest);
    Some(scaled / scaled.length())
}

fn spawn_object(physics: &mut PhysicsWorld, o: &ObjectConfig, friction: f32) -> ObjectBody {
    let shape = o.shape.to_shape();
    let pose = Pose::new(
        Vec3::from(o.pose.pos_m),
        Quat::from_array(o.pose.quat_xyzw).normalize(),
    );
    let body = physics.bodies.insert(
        RigidBodyBuilder::dynamic()
            .pose(to_rapier(&pose))
            .ccd_enabled(true),
    );
    let mut collider = collider_for(&shape, &Pose::IDENTITY)
        .friction(o.extensions.friction.unwrap_or(friction))
        .friction_combine_rule(CoefficientCombineRule::Max);
    collider = match o.extensions.mass_kg {
        Some(m) => collider.mass(m),
        None => collider.density(crate::scene::variation::DEFAULT_OBJECT_DENSITY),
    };
    physics
        .colliders
        .insert_with_parent(collider, body, &mut physics.bodies);
    // The largest half size. `robot::validate` matches the same arms of `Shape` (a `duplicates`
    // pair) to check each size, where this takes the largest: alike in form only.
    let half_extent = match shape {
        Shape::Box { half_extents } | Shape::Mesh { half_extents, .. } => {
            half_extents.max_element()
        }
        Shape::Sphere { radius } => radius,
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => radius.max(half_length),
    };
    ObjectBody {
        name: o.name.clone(),
        body,
        shape,
        rgba: o.extensions.rgba.unwrap_or([0.8, 0.8, 0.8, 1.0]),
        initial: pose,
        half_extent,
    }
}

/// FNV-1a, written out so the state hash is the same on every build and platform.
struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv64 {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
