//! The robot model every loader produces and every consumer reads: links, joints, shapes, actuators.
//!
//! Bevy-free on purpose: loaders, kinematics and the physics builder share it, and it is cheap to
//! unit-test. Frames follow URDF: a link's frame sits at its parent joint; `origin` is the pose of
//! that frame in the parent link's frame at joint position zero.

use std::sync::Arc;

use glam::Vec3;

use super::mesh::MeshAsset;
use super::self_collision_table::SelfCollision;
use crate::camera::spec::CameraSpec;
/// Re-exported where the model's users have always found it (`robot::model::Pose`).
pub use crate::geometry::Pose;

/// Primitive collision/visual shapes. Capsules and cylinders are aligned with the local Z axis
/// (MJCF and URDF convention); `half_length` excludes the capsule's caps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Box {
        half_extents: Vec3,
    },
    Sphere {
        radius: f32,
    },
    Capsule {
        radius: f32,
        half_length: f32,
    },
    Cylinder {
        radius: f32,
        half_length: f32,
    },
    /// `RobotModel::meshes[mesh]`, its vertices scaled per axis. It collides as the convex hull
    /// of each of its parts (MuJoCo's rule); `half_extents` is half the scaled mesh's bounding
    /// box, which volume and inertia estimates use.
    Mesh {
        mesh: usize,
        scale: Vec3,
        half_extents: Vec3,
    },
}

/// One shape attached to a link, posed in the link frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Geom {
    pub name: Option<String>,
    pub shape: Shape,
    pub pose: Pose,
    /// Linear RGBA in 0..=1.
    pub rgba: [f32; 4],
    /// Sliding friction coefficient; `None` uses the simulator's default.
    pub friction: Option<f32>,
    /// Density in kg/m³ used when the link has no explicit inertial.
    pub density: Option<f32>,
    /// MJCF `contype`/`conaffinity` bits (1 and 1 for URDF): which of the robot's own geoms this
    /// one may touch ([`super::self_collision`]).
    pub contype: u32,
    pub conaffinity: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inertial {
    pub mass: f32,
    /// Centre of mass in the link frame.
    pub com: Vec3,
    /// Principal moments of inertia (kg·m²) about the centre of mass, in the link frame axes.
    pub principal_inertia: Vec3,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub name: String,
    /// Index of the parent link in `RobotModel::links`; `None` only for the root (base) link.
    pub parent: Option<usize>,
    /// Pose of this link's frame in the parent link's frame at joint position zero.
    pub origin: Pose,
    /// The actuated joint connecting this link to its parent (index into `RobotModel::joints`);
    /// `None` means rigidly fixed to the parent (or the root).
    pub joint: Option<usize>,
    pub inertial: Option<Inertial>,
    pub collisions: Vec<Geom>,
    pub visuals: Vec<Geom>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointKind {
    /// Rotation about `axis`, radians.
    Revolute,
    /// Translation along `axis`, metres.
    Prismatic,
}

/// How a joint is driven when nobody commands it otherwise (from the MJCF actuator or defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActuatorKind {
    Position,
    Velocity,
    Motor,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Actuator {
    pub name: String,
    pub kind: ActuatorKind,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Joint {
    pub name: String,
    pub kind: JointKind,
    /// The child link this joint moves (index into `RobotModel::links`).
    pub link: usize,
    /// Unit axis in the child link frame.
    pub axis: Vec3,
    /// Point the axis passes through, in the child link frame (zero for URDF).
    pub anchor: Vec3,
    /// Position limits `(lower, upper)`; `None` = unlimited (continuous).
    pub limits: Option<(f32, f32)>,
    /// Largest force/torque the joint's motor may apply (N or N·m).
    pub max_effort: f32,
    /// Largest joint speed (rad/s or m/s).
    pub max_velocity: f32,
    /// Passive viscous damping (N·m·s/rad).
    pub damping: f32,
    /// Reflected rotor inertia added to the joint's own inertia (kg·m² or kg; MJCF `armature`, 0
    /// for URDF). The multibody simulates it, and the motor gains are scaled by it.
    pub armature: f32,
    /// Dry friction (N·m or N; MJCF `frictionloss`, 0 for URDF): the joint resists motion with
    /// up to this much force, as MuJoCo's frictionloss constraint does.
    pub frictionloss: f32,
    /// The file's own position servo in force units (an MJCF position actuator with a `kp` on
    /// the joint), simulated as MuJoCo simulates it; `None`: `kp`/`kd` drive the joint.
    pub servo: Option<Servo>,
    /// `(open, closed)` positions when this joint is the gripper's and the scene says where its
    /// jaws open (`extensions.armsim.robot.gripper_positions`); `None` = the usual convention
    /// (`scene::gripper_open_position`).
    pub grip: Option<(f32, f32)>,
    /// Position-control gains used by the simulator's PD motor (acceleration-based: 1/s², 1/s).
    pub kp: f32,
    pub kd: f32,
    pub actuator: Option<Actuator>,
}

/// A position actuator as MuJoCo defines it: the force `kp·(target − q) + kv·(target_velocity −
/// q̇)` clamped to ±`max_force`, on the joint's passive damping, armature and frictionloss.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Servo {
    /// N·m/rad (hinge) or N/m (slide).
    pub kp: f32,
    /// N·m·s/rad or N·s/m (MJCF `kv`, or `-biasprm[2]`).
    pub kv: f32,
    /// N·m or N; infinite when the file sets no force range.
    pub max_force: f32,
}

/// A joint that follows another one: `q = offset + multiplier·x + c₂x² + c₃x³ + c₄x⁴` with `x` the
/// leader's position (URDF `<mimic>`, linear; MJCF `<equality><joint>`, its `polycoef`). Used by
/// the gripper so one command closes every finger.
#[derive(Clone, Debug, PartialEq)]
pub struct Mimic {
    pub joint: usize,
    pub leader: usize,
    pub multiplier: f32,
    pub offset: f32,
    /// `polycoef`'s c₂, c₃, c₄ (zero for a URDF mimic).
    pub higher: [f32; 3],
    /// How the physics keeps the follower there. `Some`: a constraint between the two joints
    /// (MuJoCo's joint equality), and the follower has no motor of its own; `None` (URDF): the
    /// follower gets a copy of its leader's motor, aimed at the leader's target.
    pub coupling: Option<Coupling>,
}

impl Mimic {
    /// A linear follower, as URDF's `<mimic>` has it (no constraint).
    pub fn linear(joint: usize, leader: usize, multiplier: f32, offset: f32) -> Self {
        Self {
            joint,
            leader,
            multiplier,
            offset,
            higher: [0.0; 3],
            coupling: None,
        }
    }

    /// The follower's position for the leader at `x`.
    pub fn follow(&self, x: f32) -> f32 {
        let [c2, c3, c4] = self.higher;
        self.offset + x * (self.multiplier + x * (c2 + x * (c3 + x * c4)))
    }

    /// d(follower)/d(leader) at `x`.
    pub fn slope(&self, x: f32) -> f32 {
        let [c2, c3, c4] = self.higher;
        self.multiplier + x * (2.0 * c2 + x * (3.0 * c3 + x * 4.0 * c4))
    }
}

/// A joint equality's constraint as a spring-damper on its residual `r = q_follower −
/// follow(q_leader)`, in force units: MuJoCo's soft constraint (`solref`, `solimp`) as the MJCF
/// loader works it out (`mjcf::actuators::apply_couplings`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coupling {
    pub stiffness: f32,
    pub damping: f32,
}

/// An actuator on a fixed tendon (MJCF `general` or `position` with `tendon=`), as MuJoCo applies
/// it: the tendon's length is `L = Σ coef·q` over its joints, its force `clamp(kp·(L* − L) −
/// kv·L̇, ±max_force)`, and each joint gets `coef` times that force. The command of `leader` (the
/// joint the tendon's other joints follow) sets `L*`: the tendon's length with the leader at its
/// target and the followers where their mimic puts them.
#[derive(Clone, Debug, PartialEq)]
pub struct TendonServo {
    pub name: String,
    pub leader: usize,
    /// `(joint, coefficient)`.
    pub joints: Vec<(usize, f32)>,
    /// On the tendon's length: N/m, N·s/m, N (or the rotational units of its joints).
    pub servo: Servo,
    /// The lengths the actuator's `ctrlrange` can ask for (`ctrl·gain/kp`), if it is limited: a
    /// target outside is clamped, as MuJoCo clamps `ctrl`.
    pub length_range: Option<(f32, f32)>,
}

/// A named frame fixed to a link (MJCF `<site>`, or a massless URDF link fused into its parent).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub name: String,
    pub link: usize,
    /// Pose in the link's frame.
    pub pose: Pose,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RobotModel {
    /// Robot name (MJCF `<mujoco model=..>`, URDF `<robot name=..>`); used by the agent protocol.
    pub name: String,
    /// Parents come before children; `links[0]` is the root, fixed to the robot's base pose.
    pub links: Vec<Link>,
    /// Actuated joints in the robot's canonical order (file order; protocols use this order).
    pub joints: Vec<Joint>,
    pub mimics: Vec<Mimic>,
    /// Actuators on fixed tendons (the Panda's fingers), simulated with the file's force.
    pub tendons: Vec<TendonServo>,
    /// Link carrying the end-effector point, and the point in that link's frame.
    pub ee_link: usize,
    pub ee_offset: Vec3,
    /// The direction out of the tool in `ee_link`'s frame, where the scene gives it
    /// (`extensions.armsim.robot.tool.axis`); `None` derives it from the offset
    /// ([`crate::robot::kinematics::tool_axis`]).
    pub ee_axis: Option<Vec3>,
    /// Named frames fixed to links: MJCF `<site>`s, URDF links fused into their parent. The
    /// scene's tool point (`extensions.armsim.robot.tool`) may name one.
    pub sites: Vec<Site>,
    /// Mesh files the geoms use (`Shape::Mesh::mesh` indexes here), shared, not copied, when the
    /// model is cloned.
    pub meshes: Vec<Arc<MeshAsset>>,
    /// The file's own home pose, one value per joint (MJCF `<keyframe>`'s first key), if any.
    pub home: Option<Vec<f32>>,
    /// The file's own cameras (MJCF `<camera>`s), each riding on its link
    /// (`CameraMount::Link`).
    pub cameras: Vec<CameraSpec>,
    /// What the loader read but does not simulate (one line each), for the log.
    pub notes: Vec<String>,
    /// Which links may touch each other, computed at load (MuJoCo's rule); the default is off.
    pub self_collision: SelfCollision,
}

impl RobotModel {
    pub fn joint_index(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    pub fn link_index(&self, name: &str) -> Option<usize> {
        self.links.iter().position(|l| l.name == name)
    }

    /// The joint driven by the actuator called `name`, if any.
    pub fn actuator_joint(&self, name: &str) -> Option<usize> {
        self.joints
            .iter()
            .position(|j| j.actuator.as_ref().is_some_and(|a| a.name == name))
    }

    /// The frame called `name`: a site, else a link (its origin). `(link, pose in that link)`.
    pub fn frame(&self, name: &str) -> Option<(usize, Pose)> {
        if let Some(site) = self.sites.iter().find(|s| s.name == name) {
            return Some((site.link, site.pose));
        }
        self.link_index(name).map(|l| (l, Pose::IDENTITY))
    }

    /// Joints that follow `leader` (directly), with their mimic relation.
    pub fn followers(&self, leader: usize) -> impl Iterator<Item = &Mimic> {
        self.mimics.iter().filter(move |m| m.leader == leader)
    }
}
