//! MetaSim's states and actions on armsim's world: a tensor-like snapshot (objects and robots by
//! name, `root_state` = pos(3) + quat(4, w first) + lin_vel(3) + ang_vel(3), joints in
//! alphabetical order as MetaSim orders vector actions), its dict view, setting either back
//! (positions, orientations, joint positions **and velocities**), and actions by name (partial)
//! or by vector. Bevy-free: it reads and writes `SimWorld` and joint command vectors, so the
//! protocols, the recorder, replay and tests all share one path.

mod recorded;

pub use recorded::{action_of, commands_of, demo_extra};

use std::collections::BTreeMap;

use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

use crate::camera::{CameraSpec, CameraState, link_poses};
use crate::robot::{Pose, RobotModel};
use crate::sim::{JointCommand, SimModel, SimView, SimViewMut};
use crate::trajectory::{BodyState, JointValues, StateFrame};

/// pos(3), quat(4, w x y z), lin_vel(3), ang_vel(3).
pub type RootState = [f32; 13];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectState {
    pub root_state: RootState,
    /// Only for articulated objects (none in armsim's scenes yet).
    #[serde(default)]
    pub body_names: Option<Vec<String>>,
    #[serde(default)]
    pub body_state: Option<Vec<RootState>>,
    #[serde(default)]
    pub joint_pos: Option<Vec<f32>>,
    #[serde(default)]
    pub joint_vel: Option<Vec<f32>>,
}

/// A robot; every per-joint vector is in `joint_names` order, which is alphabetical.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RobotState {
    pub root_state: RootState,
    pub body_names: Vec<String>,
    pub body_state: Vec<RootState>,
    pub joint_names: Vec<String>,
    pub joint_pos: Vec<f32>,
    pub joint_vel: Vec<f32>,
    /// Position target of position-controlled joints; the measured position of the others.
    pub joint_pos_target: Vec<f32>,
    /// Velocity target (or a position target's velocity feed-forward); 0 for effort control.
    pub joint_vel_target: Vec<f32>,
    /// Torque (or force) of effort-controlled joints; 0 for the others.
    pub joint_effort_target: Vec<f32>,
}

/// The whole world (one environment) with objects of type `O` and robots of type `R`, by name:
/// MetaSim's two views, [`TensorState`] and [`DictEnvState`], differ only in those.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvState<O, R> {
    pub objects: BTreeMap<String, O>,
    pub robots: BTreeMap<String, R>,
    /// MetaSim's `CameraState` of every scene camera, by name ([`camera_states`]): empty from
    /// [`snapshot`] alone (a `SimView` does not know the scene's cameras); filled by
    /// `armsim_sim::state::snapshot_app` and the Python `Sim.state()`.
    #[serde(default)]
    pub cameras: BTreeMap<String, CameraEntry>,
    /// Referee and session information.
    #[serde(default)]
    pub extras: BTreeMap<String, serde_json::Value>,
}

// By hand: the derive would ask `O: Default` and `R: Default`, which the maps do not need.
impl<O, R> Default for EnvState<O, R> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
            robots: BTreeMap::new(),
            cameras: BTreeMap::new(),
            extras: BTreeMap::new(),
        }
    }
}

/// The whole world, as MetaSim's `TensorState` (one environment).
pub type TensorState = EnvState<ObjectState, RobotState>;

/// One object in the dict view, and a robot's root in it; `rot` is w x y z.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DictObjectState {
    pub pos: [f32; 3],
    pub rot: [f32; 4],
    #[serde(default)]
    pub vel: Option<[f32; 3]>,
    #[serde(default)]
    pub ang_vel: Option<[f32; 3]>,
}

/// One robot in the dict view; joint maps are keyed by name (a partial map sets only those).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DictRobotState {
    /// The root's `pos`, `rot`, `vel` and `ang_vel`, at the top level of the robot's entry as
    /// in MetaSim's dict.
    #[serde(flatten)]
    pub root: DictObjectState,
    #[serde(default)]
    pub dof_pos: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_vel: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_pos_target: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_vel_target: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_torque: Option<BTreeMap<String, f32>>,
}

/// MetaSim's `DictEnvState`.
pub type DictEnvState = EnvState<DictObjectState, DictRobotState>;

impl DictObjectState {
    /// The dict form of a root state, velocities included.
    fn from_root(r: &RootState) -> Self {
        Self {
            pos: [r[0], r[1], r[2]],
            rot: [r[3], r[4], r[5], r[6]],
            vel: Some([r[7], r[8], r[9]]),
            ang_vel: Some([r[10], r[11], r[12]]),
        }
    }

    /// Writes the pose into `r`, and the velocities this entry gives (the others stay).
    fn write_root(&self, r: &mut RootState) {
        r[0..3].copy_from_slice(&self.pos);
        r[3..7].copy_from_slice(&self.rot);
        if let Some(v) = self.vel {
            r[7..10].copy_from_slice(&v);
        }
        if let Some(w) = self.ang_vel {
            r[10..13].copy_from_slice(&w);
        }
    }
}

/// One camera in a state (MetaSim's `CameraState`): where it is (`pos`, `quat_world` **w x y
/// z** of the camera frame +X forward, +Z up), how it projects (`intrinsics`, row by row) and
/// its image size, at the state's step; plus, where a renderer has given one, the newest image
/// (`rgb`: `height` rows of `width * 3` bytes, the top row first; `depth`: metres, `height`
/// rows of `width`) and the step and sim time it shows (`image_step`, `image_sim_time`; the
/// image is that older state's, not necessarily this one's). The pixels are not serialized:
/// JSON (and the dict Python gets) carries the pose, the intrinsics and the image's stamp;
/// `has_rgb` / `has_depth` say whether the pixels were there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraEntry {
    #[serde(default)]
    pub pos: [f32; 3],
    #[serde(default)]
    pub quat_world: [f32; 4],
    #[serde(default)]
    pub intrinsics: [[f32; 3]; 3],
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_sim_time: Option<f64>,
    #[serde(default)]
    pub has_rgb: bool,
    #[serde(default)]
    pub has_depth: bool,
    #[serde(skip)]
    pub rgb: Option<std::sync::Arc<[u8]>>,
    #[serde(skip)]
    pub depth: Option<std::sync::Arc<[f32]>>,
}

impl CameraEntry {
    /// Camera `spec` at its world pose `pose` (+X forward, +Z up), without an image.
    pub fn new(spec: &CameraSpec, pose: &Pose) -> Self {
        let s = CameraState::new(spec, pose);
        Self {
            pos: s.pos,
            quat_world: s.quat_world,
            intrinsics: s.intrinsics,
            width: spec.width,
            height: spec.height,
            ..Self::default()
        }
    }

    /// The pose and intrinsics as the camera model's [`CameraState`].
    pub fn camera_state(&self) -> CameraState {
        CameraState {
            pos: self.pos,
            quat_world: self.quat_world,
            intrinsics: self.intrinsics,
        }
    }
}

/// Every camera of `cameras` (a scene's, `Scene::cameras`) where the world has it now, by
/// name, without images. A camera whose mount the robot lacks (none in a scene that loaded) is
/// left out.
pub fn camera_states(cameras: &[CameraSpec], world: &SimView<'_>) -> BTreeMap<String, CameraEntry> {
    let links = link_poses(world);
    cameras
        .iter()
        .filter_map(|spec| {
            let pose = spec.placement(&world.robot)?.world_pose(&links)?;
            Some((spec.name.clone(), CameraEntry::new(spec, &pose)))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    #[error("unknown object {name:?}; the scene's objects are {known:?}")]
    UnknownObject { name: String, known: Vec<String> },
    #[error("unknown robot {name:?}; the scene's robot is {known:?}")]
    UnknownRobot { name: String, known: String },
    #[error("robot {robot}: unknown joint {joint:?}; joints are {known:?}")]
    UnknownJoint {
        robot: String,
        joint: String,
        known: Vec<String>,
    },
    #[error("robot {robot}: {field} has {got} values, expected {expected} (joints {order:?})")]
    Length {
        robot: String,
        field: &'static str,
        expected: usize,
        got: usize,
        order: Vec<String>,
    },
    #[error("{what} is not finite")]
    NotFinite { what: String },
    /// The world refused the object's pose or velocities (outside the world, too fast, …).
    #[error("object {name:?}: {reason}")]
    Placement { name: String, reason: String },
}

/// Robot joint indices in alphabetical order of their names (MetaSim's vector order).
pub fn alphabetical_joints(robot: &RobotModel) -> Vec<usize> {
    let mut order: Vec<usize> = (0..robot.joints.len()).collect();
    order.sort_by(|&a, &b| robot.joints[a].name.cmp(&robot.joints[b].name));
    order
}

fn root_of(pose: Pose, lin: Vec3, ang: Vec3) -> RootState {
    let (p, q) = (pose.translation, pose.rotation);
    [
        p.x, p.y, p.z, q.w, q.x, q.y, q.z, lin.x, lin.y, lin.z, ang.x, ang.y, ang.z,
    ]
}

fn pose_of(root: &RootState) -> (Pose, Vec3, Vec3) {
    let pos = Vec3::new(root[0], root[1], root[2]);
    let rot = Quat::from_xyzw(root[4], root[5], root[6], root[3]);
    (
        Pose::new(pos, rot),
        Vec3::new(root[7], root[8], root[9]),
        Vec3::new(root[10], root[11], root[12]),
    )
}

/// The targets a joint command stands for: (position, velocity, effort).
fn targets_of(cmd: JointCommand, q: f32) -> (f32, f32, f32) {
    match cmd {
        JointCommand::Position { target, velocity } => (target, velocity, 0.0),
        JointCommand::Velocity { target } => (q, target, 0.0),
        JointCommand::Effort { torque } => (q, 0.0, torque),
    }
}

/// The robot's measured joint positions and velocities in model order: the part of the
/// snapshot command adapters need on every step, without building the rest.
pub fn joint_state(world: &SimView<'_>) -> (Vec<f32>, Vec<f32>) {
    (world.joint_positions(), world.joint_velocities())
}

/// The world now. Robot links are the bodies (`body_names` = link names in model order).
pub fn snapshot(world: &SimView<'_>) -> TensorState {
    let mut objects = BTreeMap::new();
    for o in &world.objects {
        let (lin, ang) = world.body_velocity(o.body);
        objects.insert(
            o.name.clone(),
            ObjectState {
                root_state: root_of(world.body_pose(o.body), lin, ang),
                body_names: None,
                body_state: None,
                joint_pos: None,
                joint_vel: None,
            },
        );
    }
    let robot = &world.robot;
    let order = alphabetical_joints(robot);
    let q = world.joint_positions();
    let qd = world.joint_velocities();
    let commands = world.commands();
    let targets: Vec<(f32, f32, f32)> = order
        .iter()
        .map(|&j| targets_of(commands[j], q[j]))
        .collect();
    let body_state: Vec<RootState> = world
        .link_bodies
        .iter()
        .map(|&b| {
            let (lin, ang) = world.body_velocity(b);
            root_of(world.body_pose(b), lin, ang)
        })
        .collect();
    let mut robots = BTreeMap::new();
    robots.insert(
        robot.name.clone(),
        RobotState {
            root_state: body_state
                .first()
                .copied()
                .unwrap_or_else(|| root_of(world.base_pose, Vec3::ZERO, Vec3::ZERO)),
            body_names: robot.links.iter().map(|l| l.name.clone()).collect(),
            body_state,
            joint_names: order
                .iter()
                .map(|&j| robot.joints[j].name.clone())
                .collect(),
            joint_pos: order.iter().map(|&j| q[j]).collect(),
            joint_vel: order.iter().map(|&j| qd[j]).collect(),
            joint_pos_target: targets.iter().map(|t| t.0).collect(),
            joint_vel_target: targets.iter().map(|t| t.1).collect(),
            joint_effort_target: targets.iter().map(|t| t.2).collect(),
        },
    );
    TensorState {
        objects,
        robots,
        cameras: BTreeMap::new(),
        extras: BTreeMap::new(),
    }
}

impl RobotState {
    /// A per-joint vector of this state (alphabetical) in the robot model's joint order, the
    /// order the wire protocols use.
    pub fn model_order(&self, values: &[f32], robot: &RobotModel) -> Vec<f32> {
        let mut out = vec![0.0; robot.joints.len()];
        for (k, name) in self.joint_names.iter().enumerate() {
            if let (Some(j), Some(&v)) = (robot.joint_index(name), values.get(k)) {
                out[j] = v;
            }
        }
        out
    }

    /// Pose of link `index` (model order) in the world.
    pub fn link_pose(&self, index: usize) -> Option<Pose> {
        self.body_state.get(index).map(|r| pose_of(r).0)
    }

    /// The end-effector point of `robot` in the world.
    pub fn ee_position(&self, robot: &RobotModel) -> Vec3 {
        self.link_pose(robot.ee_link)
            .map_or(Vec3::ZERO, |p| p.transform_point(robot.ee_offset))
    }
}

impl ObjectState {
    /// Position, orientation, linear and angular velocity.
    pub fn pose(&self) -> (Pose, Vec3, Vec3) {
        pose_of(&self.root_state)
    }
}

impl TensorState {
    /// The dict view, keyed by names.
    pub fn to_dict(&self) -> DictEnvState {
        let objects = self
            .objects
            .iter()
            .map(|(name, o)| (name.clone(), DictObjectState::from_root(&o.root_state)))
            .collect();
        let robots = self
            .robots
            .iter()
            .map(|(name, rs)| {
                let map = |v: &[f32]| -> Option<BTreeMap<String, f32>> {
                    Some(
                        rs.joint_names
                            .iter()
                            .cloned()
                            .zip(v.iter().copied())
                            .collect(),
                    )
                };
                (
                    name.clone(),
                    DictRobotState {
                        root: DictObjectState::from_root(&rs.root_state),
                        dof_pos: map(&rs.joint_pos),
                        dof_vel: map(&rs.joint_vel),
                        dof_pos_target: map(&rs.joint_pos_target),
                        dof_vel_target: map(&rs.joint_vel_target),
                        dof_torque: map(&rs.joint_effort_target),
                    },
                )
            })
            .collect();
        DictEnvState {
            objects,
            robots,
            cameras: self.cameras.clone(),
            extras: self.extras.clone(),
        }
    }

    /// The frame a trajectory records: every object's and the robot's `pos`, `rot` (w first),
    /// velocities, and the robot's `dof_pos`/`dof_vel` by joint name.
    pub fn to_frame(&self) -> StateFrame {
        let f64s = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| f64::from(x)).collect() };
        let body = |r: &RootState| {
            let v = f64s(r);
            let mut b = BodyState::new([v[0], v[1], v[2]], [v[3], v[4], v[5], v[6]]);
            b.vel = Some([v[7], v[8], v[9]]);
            b.ang_vel = Some([v[10], v[11], v[12]]);
            b
        };
        let mut frame = StateFrame::default();
        for (name, o) in &self.objects {
            frame.set(name, body(&o.root_state));
        }
        for (name, rs) in &self.robots {
            let mut b = body(&rs.root_state);
            let joints = |v: &[f32]| -> JointValues {
                rs.joint_names
                    .iter()
                    .cloned()
                    .zip(v.iter().map(|&x| f64::from(x)))
                    .collect()
            };
            b.dof_pos = Some(joints(&rs.joint_pos));
            b.dof_vel = Some(joints(&rs.joint_vel));
            frame.set(name, b);
        }
        frame
    }
}

fn check_finite(what: &str, values: &[f32]) -> Result<(), StateError> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(StateError::NotFinite {
            what: what.to_string(),
        })
    }
}

fn object_index(world: &SimModel, name: &str) -> Result<usize, StateError> {
    world
        .object_index(name)
        .ok_or_else(|| StateError::UnknownObject {
            name: name.to_string(),
            known: world.objects.iter().map(|o| o.name.clone()).collect(),
        })
}

fn check_robot(world: &SimModel, name: &str) -> Result<(), StateError> {
    if name == world.robot.name {
        Ok(())
    } else {
        Err(StateError::UnknownRobot {
            name: name.to_string(),
            known: world.robot.name.clone(),
        })
    }
}

/// Sets the world from a tensor state: object poses and velocities, the robot's joint
/// positions and velocities (the robot's base is fixed, so its root is not moved). Objects and
/// robots absent from `state` keep theirs. Everything is checked before anything changes.
pub fn set_state(world: &mut SimViewMut<'_>, state: &TensorState) -> Result<(), StateError> {
    let mut places = Vec::new();
    for (name, o) in &state.objects {
        check_finite(name, &o.root_state)?;
        places.push((object_index(world, name)?, pose_of(&o.root_state)));
    }
    let mut joints = None;
    for (name, rs) in &state.robots {
        check_robot(world, name)?;
        let order = alphabetical_joints(&world.robot);
        let names: Vec<String> = order
            .iter()
            .map(|&j| world.robot.joints[j].name.clone())
            .collect();
        for (field, v) in [("joint_pos", &rs.joint_pos), ("joint_vel", &rs.joint_vel)] {
            if v.len() != order.len() {
                return Err(StateError::Length {
                    robot: name.clone(),
                    field,
                    expected: order.len(),
                    got: v.len(),
                    order: names,
                });
            }
            check_finite(&format!("{name}.{field}"), v)?;
        }
        let mut q = vec![0.0; order.len()];
        let mut qd = vec![0.0; order.len()];
        for (k, &j) in order.iter().enumerate() {
            q[j] = rs.joint_pos[k];
            qd[j] = rs.joint_vel[k];
        }
        joints = Some((q, qd));
    }
    for (index, (pose, lin, ang)) in places {
        world
            .place_object(index, pose, lin, ang)
            .map_err(|e| StateError::Placement {
                name: world.objects[index].name.clone(),
                reason: e.to_string(),
            })?;
    }
    if let Some((q, qd)) = joints {
        world.set_joint_state(&q, &qd);
    }
    Ok(())
}

/// Sets the world from the dict view. Joint maps may be partial: joints not named keep their
/// position and velocity. Velocities absent from an object keep its current ones.
pub fn set_state_dict(world: &mut SimViewMut<'_>, state: &DictEnvState) -> Result<(), StateError> {
    let mut tensor = snapshot(&world.view());
    for (name, o) in &state.objects {
        object_index(world, name)?;
        if let Some(t) = tensor.objects.get_mut(name) {
            o.write_root(&mut t.root_state);
        }
    }
    for (name, d) in &state.robots {
        check_robot(world, name)?;
        let Some(rs) = tensor.robots.get_mut(name) else {
            continue;
        };
        for (map, target) in [
            (&d.dof_pos, &mut rs.joint_pos),
            (&d.dof_vel, &mut rs.joint_vel),
        ] {
            for (joint, &v) in map.iter().flatten() {
                let k = rs
                    .joint_names
                    .iter()
                    .position(|n| n == joint)
                    .ok_or_else(|| StateError::UnknownJoint {
                        robot: name.clone(),
                        joint: joint.clone(),
                        known: rs.joint_names.clone(),
                    })?;
                target[k] = v;
            }
        }
    }
    // Only what the dict named is set; the rest was read from the world just now.
    tensor.objects.retain(|n, _| state.objects.contains_key(n));
    tensor.robots.retain(|n, _| state.robots.contains_key(n));
    set_state(world, &tensor)
}

/// Sets the world from a recorded trajectory frame (replay by state): object poses (and
/// velocities when recorded), the robot's joints by name.
pub fn set_frame(world: &mut SimViewMut<'_>, frame: &StateFrame) -> Result<(), StateError> {
    let mut dict = DictEnvState::default();
    let f32s = |v: &[f64]| -> Vec<f32> { v.iter().map(|&x| x as f32).collect() };
    for (name, b) in &frame.0 {
        let pos = f32s(&b.pos);
        let rot = f32s(&b.rot);
        let (pos, rot) = ([pos[0], pos[1], pos[2]], [rot[0], rot[1], rot[2], rot[3]]);
        let vel = b.vel.map(|v| [v[0] as f32, v[1] as f32, v[2] as f32]);
        let ang_vel = b.ang_vel.map(|v| [v[0] as f32, v[1] as f32, v[2] as f32]);
        let root = DictObjectState {
            pos,
            rot,
            vel,
            ang_vel,
        };
        if *name == world.robot.name {
            let map = |j: &Option<JointValues>| {
                j.as_ref()
                    .map(|j| j.iter().map(|(n, v)| (n.to_string(), v as f32)).collect())
            };
            dict.robots.insert(
                name.clone(),
                DictRobotState {
                    root,
                    dof_pos: map(&b.dof_pos),
                    dof_vel: map(&b.dof_vel),
                    ..Default::default()
                },
            );
        } else {
            dict.objects.insert(name.clone(), root);
        }
    }
    set_state_dict(world, &dict)
}

/// What kind of target an action sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Position,
    Velocity,
    Effort,
}

/// One robot's action by joint name; unspecified joints keep their current command.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedAction {
    #[serde(default)]
    pub dof_pos_target: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_vel_target: Option<BTreeMap<String, f32>>,
    #[serde(default)]
    pub dof_effort_target: Option<BTreeMap<String, f32>>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error("unknown robot {given:?}; the scene's robot is {known:?}")]
    UnknownRobot { given: String, known: String },
    #[error("robot {robot}: unknown joint {joint:?}; joints are {known:?}")]
    UnknownJoint {
        robot: String,
        joint: String,
        known: Vec<String>,
    },
    #[error(
        "robot {robot}: a vector action needs {expected} values in the order {order:?}, got {got}"
    )]
    Length {
        robot: String,
        expected: usize,
        got: usize,
        order: Vec<String>,
    },
    #[error("robot {robot}: the target for {joint} is not finite")]
    NotFinite { robot: String, joint: String },
}

fn command_for(kind: TargetKind, value: f32) -> JointCommand {
    match kind {
        TargetKind::Position => JointCommand::Position {
            target: value,
            velocity: 0.0,
        },
        TargetKind::Velocity => JointCommand::Velocity { target: value },
        TargetKind::Effort => JointCommand::Effort { torque: value },
    }
}

/// Applies actions by robot name and joint name to `commands` (robot joint order). Everything is
/// checked first: an unknown robot or joint, or a non-finite value, changes nothing.
pub fn apply_actions(
    robot: &RobotModel,
    commands: &mut [JointCommand],
    actions: &BTreeMap<String, NamedAction>,
) -> Result<(), ActionError> {
    let mut updates = Vec::new();
    for (name, action) in actions {
        if *name != robot.name {
            return Err(ActionError::UnknownRobot {
                given: name.clone(),
                known: robot.name.clone(),
            });
        }
        for (kind, map) in [
            (TargetKind::Position, &action.dof_pos_target),
            (TargetKind::Velocity, &action.dof_vel_target),
            (TargetKind::Effort, &action.dof_effort_target),
        ] {
            for (joint, &value) in map.iter().flatten() {
                let j = robot
                    .joint_index(joint)
                    .ok_or_else(|| ActionError::UnknownJoint {
                        robot: name.clone(),
                        joint: joint.clone(),
                        known: alphabetical_joints(robot)
                            .iter()
                            .map(|&j| robot.joints[j].name.clone())
                            .collect(),
                    })?;
                if !value.is_finite() {
                    return Err(ActionError::NotFinite {
                        robot: name.clone(),
                        joint: joint.clone(),
                    });
                }
                updates.push((j, command_for(kind, value)));
            }
        }
    }
    for (j, cmd) in updates {
        if let Some(slot) = commands.get_mut(j) {
            *slot = cmd;
        }
    }
    Ok(())
}

/// Applies a vector action in alphabetical joint order (MetaSim's order) to every joint.
pub fn apply_vector(
    robot: &RobotModel,
    commands: &mut [JointCommand],
    kind: TargetKind,
    values: &[f32],
) -> Result<(), ActionError> {
    let order = alphabetical_joints(robot);
    let names = || -> Vec<String> {
        order
            .iter()
            .map(|&j| robot.joints[j].name.clone())
            .collect()
    };
    if values.len() != order.len() {
        return Err(ActionError::Length {
            robot: robot.name.clone(),
            expected: order.len(),
            got: values.len(),
            order: names(),
        });
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return Err(ActionError::NotFinite {
            robot: robot.name.clone(),
            joint: robot.joints[order[k]].name.clone(),
        });
    }
    for (k, &j) in order.iter().enumerate() {
        if let Some(slot) = commands.get_mut(j) {
            *slot = command_for(kind, values[k]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
