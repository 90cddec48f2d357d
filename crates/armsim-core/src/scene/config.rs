//! revA `scene_config.json` (spec 004): the typed scene, a validator that reports every problem with its JSON path,
//! and loading of the robot the scene names.
//!
//! Parsing walks a `serde_json::Value` with small path-aware helpers instead of `#[derive(Deserialize)]`: serde stops
//! at the first error and cannot say where it was, while someone fixing a scene file wants the whole list at once.
//! Types still derive `Serialize` so a scene can be written back (`SceneConfig::to_json_pretty`).
//!
//! Conventions: world frame Z up, metres, radians; poses are `{"pos_m": [x,y,z], "quat_xyzw": [x,y,z,w]}`. Fields
//! outside an `extensions` object are closed: an unknown one is an error. Any JSON object may carry `extensions`;
//! the top level's and each object's are kept verbatim, the others are accepted and dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::{Mat3, Quat, Vec3};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::robot::load_robot;
use crate::robot::model::{Joint, JointKind, Pose, RobotModel, Shape};

/// The only `schema_version` this build understands.
pub const SCHEMA_VERSION: &str = "1.0.0-revA";

/// A quaternion whose norm is this close to 1 is normalised silently; farther off it is an error, since it more
/// likely means a wrong component order or a typo than rounding.
const QUAT_NORM_TOL: f64 = 1e-3;
/// Tolerance for `t_sim_from_vp_anchor` being rigid (orthonormality, determinant, last row).
const RIGID_TOL: f64 = 1e-4;
/// How far an object or the robot base may dip below the table top before it is an error (rounding in hand-written
/// files, not a real penetration).
const TABLE_TOL_M: f32 = 1e-3;
/// `control.filter.params.d_cutoff` (Hz) when a scene leaves it out.
pub const DEFAULT_D_CUTOFF: f32 = 1.0;
/// Slack on joint limits for `home_q`, so that values written with a few decimals (e.g. -1.5708) pass.
const JOINT_LIMIT_TOL: f32 = 1e-4;

// ---------------------------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------------------------

/// A validated revA scene configuration. JSON field names are the spec's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SceneConfig {
    pub schema_version: String,
    /// Matched against `ui_cmd.CONNECT.requested_scene_config_id`.
    pub scene_id: String,
    pub networking: Networking,
    pub frames: Frames,
    pub robot: RobotConfig,
    pub table: TableConfig,
    pub objects: Vec<ObjectConfig>,
    pub control: ControlConfig,
    pub heartbeat: Heartbeat,
    pub extensions: Extensions,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Networking {
    pub ws_host: String,
    /// 0 is accepted and means "let the OS choose" (tests bind port 0 and read the real port back).
    pub ws_port: u16,
    /// Starts with '/'.
    pub ws_path: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frames {
    pub vp_operator_anchor: VpAnchor,
}

/// Where the Vision Pro operator anchor (`frame_id = "vp_operator_anchor"` in control frames) sits in the world.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VpAnchor {
    /// Row-major 4×4 rigid transform taking anchor-frame points to world points.
    pub t_sim_from_vp_anchor: [[f64; 4]; 4],
}

impl VpAnchor {
    /// Maps a point given in the operator-anchor frame into the world frame.
    pub fn to_sim(&self, p: [f64; 3]) -> [f64; 3] {
        let m = &self.t_sim_from_vp_anchor;
        let row = |r: usize| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3];
        [row(0), row(1), row(2)]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PoseConfig {
    pub pos_m: [f32; 3],
    /// Unit quaternion, x y z w (normalised on load).
    pub quat_xyzw: [f32; 4],
}

impl PoseConfig {
    pub fn translation(&self) -> Vec3 {
        Vec3::from_array(self.pos_m)
    }

    pub fn rotation(&self) -> Quat {
        Quat::from_array(self.quat_xyzw)
    }

    pub fn to_pose(&self) -> Pose {
        Pose::new(self.translation(), self.rotation())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RobotConfig {
    /// As written in the file: relative to the scene file's directory (or else the current directory). revA calls
    /// it `mjcf_path`, but URDF files are accepted too (the loader picks by extension).
    pub mjcf_path: String,
    pub base_pose: PoseConfig,
    /// Either one value per arm joint (every joint but the gripper actuator's joint and its mimic followers) or
    /// one per joint; see `Scene::home_q_full`.
    pub home_q: Vec<f32>,
    pub gripper: GripperConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GripperConfig {
    /// An actuator of the robot model (`RobotModel::actuator_joint`).
    pub actuator_name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableConfig {
    /// Height of the table's top face above the floor (z = 0).
    pub top_height_m: f32,
    /// revA tables are static; `false` is carried through for the spawner to decide.
    pub fixed: bool,
}

/// A free rigid body resting in the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectConfig {
    pub name: String,
    /// JSON `type` and `size_m` together.
    pub shape: ObjectShape,
    pub pose: PoseConfig,
    pub extensions: ObjectExtensions,
}

/// JSON `"type": "box"` with `size_m: [x, y, z]` (full edge lengths), or `"type": "sphere"` with `size_m: [r]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ObjectShape {
    Box { size_m: [f32; 3] },
    Sphere { radius_m: f32 },
}

impl ObjectShape {
    /// The shape in the robot model's vocabulary, which the physics builder already understands.
    pub fn to_shape(&self) -> Shape {
        match *self {
            ObjectShape::Box { size_m } => Shape::Box {
                half_extents: Vec3::from_array(size_m) * 0.5,
            },
            ObjectShape::Sphere { radius_m } => Shape::Sphere { radius: radius_m },
        }
    }

    /// Distance from the centre down to the lowest point when the shape is rotated by `rotation`.
    pub fn depth_below_center(&self, rotation: Quat) -> f32 {
        match *self {
            ObjectShape::Box { size_m } => {
                let r = Mat3::from_quat(rotation);
                (0..3).map(|i| r.col(i).z.abs() * size_m[i] * 0.5).sum()
            }
            ObjectShape::Sphere { radius_m } => radius_m,
        }
    }
}

/// `objects[].extensions`: the typed keys armsim reads, plus the whole object as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectExtensions {
    /// Linear RGBA, each in 0..=1.
    pub rgba: Option<[f32; 4]>,
    pub mass_kg: Option<f32>,
    pub friction: Option<f32>,
    /// The extensions object as read, typed keys included. On write the typed fields win over it.
    pub raw: Map<String, Value>,
}

impl ObjectExtensions {
    const TYPED: [&'static str; 3] = ["rgba", "mass_kg", "friction"];

    fn is_empty(&self) -> bool {
        self.raw.is_empty()
            && self.rgba.is_none()
            && self.mass_kg.is_none()
            && self.friction.is_none()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ControlConfig {
    pub limits: Limits,
    pub filter: FilterConfig,
    pub pause_behavior: PauseBehavior,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Limits {
    /// End-effector targets are clamped into this box (world frame).
    pub workspace_aabb_m: Aabb,
    pub max_ee_speed_mps: f32,
    pub max_joint_speed_rad_s: f32,
    /// Minimum height of the end effector above the table top.
    pub table_clearance_m: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Aabb {
    pub min: [f32; 3],
    pub max: [f32; 3],
}

impl Aabb {
    pub fn contains(&self, p: Vec3) -> bool {
        p.cmpge(Vec3::from_array(self.min)).all() && p.cmple(Vec3::from_array(self.max)).all()
    }

    pub fn clamp(&self, p: Vec3) -> Vec3 {
        p.clamp(Vec3::from_array(self.min), Vec3::from_array(self.max))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FilterConfig {
    #[serde(rename = "type")]
    pub kind: FilterKind,
    pub params: OneEuroParams,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FilterKind {
    #[serde(rename = "one_euro")]
    OneEuro,
}

/// 1€ filter parameters (Casiez et al. 2012). `beta` may be 0 (a plain adaptive-free low-pass); the cutoffs are > 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OneEuroParams {
    pub min_cutoff: f32,
    pub beta: f32,
    pub d_cutoff: f32,
}

/// What the arm does when control stops (pause, heartbeat loss, controller gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PauseBehavior {
    /// Hold the current joint positions.
    Hold,
    /// Let the joints go limp under damping only.
    Damp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Heartbeat {
    pub period_ms: u64,
    /// Always greater than `period_ms`.
    pub timeout_ms: u64,
}

/// The top-level `extensions` object, kept verbatim, with armsim's own keys (`extensions.armsim`) typed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extensions {
    /// Everything under `extensions` as read (including `armsim`). On write `armsim` comes from the typed field.
    pub raw: Map<String, Value>,
    pub armsim: ArmsimExtensions,
}

/// `extensions.armsim`: what revA does not describe but the simulator needs. Every key is optional.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmsimExtensions {
    /// Table top size along world x and y (metres).
    pub table_size_m: [f32; 2],
    /// Table top centre in world x, y.
    pub table_center_xy_m: [f32; 2],
    /// Where cubes must be placed for the pick-and-place rule book.
    pub goal_zone: Option<GoalZone>,
    pub episode_time_limit_s: Option<f32>,
    pub physics: PhysicsExt,
    /// Seconds a teleop controller may stay in NET_TIMEOUT before it is demoted (and an
    /// observer promoted); default 10.
    pub controller_grace_s: f32,
    /// `extensions.armsim` as read, typed keys included; unknown keys survive a write-back.
    pub raw: Map<String, Value>,
}

impl ArmsimExtensions {
    const TYPED: [&'static str; 6] = [
        "table_size_m",
        "table_center_xy_m",
        "goal_zone",
        "episode_time_limit_s",
        "physics",
        "controller_grace_s",
    ];

    /// Default of `controller_grace_s`.
    pub const DEFAULT_CONTROLLER_GRACE_S: f32 = 10.0;
}

impl Default for ArmsimExtensions {
    fn default() -> Self {
        Self {
            table_size_m: [1.2, 0.8],
            table_center_xy_m: [0.35, 0.0],
            goal_zone: None,
            episode_time_limit_s: None,
            physics: PhysicsExt::default(),
            controller_grace_s: Self::DEFAULT_CONTROLLER_GRACE_S,
            raw: Map::new(),
        }
    }
}

/// An axis-aligned rectangle on the table top.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GoalZone {
    pub center_xy_m: [f32; 2],
    pub half_size_m: [f32; 2],
}

impl GoalZone {
    pub fn contains_xy(&self, x: f32, y: f32) -> bool {
        (x - self.center_xy_m[0]).abs() <= self.half_size_m[0]
            && (y - self.center_xy_m[1]).abs() <= self.half_size_m[1]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PhysicsExt {
    /// Default friction coefficient for the table and objects without their own.
    pub friction: f32,
    /// Restitution of the table and objects (0 = no bounce), 0..=1.
    pub restitution: f32,
    /// Rapier solver iterations per step; more makes grasps stiffer at some cost.
    pub solver_iterations: usize,
}

impl Default for PhysicsExt {
    fn default() -> Self {
        Self {
            friction: 0.8,
            restitution: 0.0,
            solver_iterations: 8,
        }
    }
}

// Hand-written Serialize impls: the JSON shape of these differs from the Rust shape (type and size_m as one enum, typed keys
// overlaid on a verbatim map), and going through `Value` would print f32 values widened to f64 (0.05 → 0.0500000007).

impl Serialize for ObjectConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &self.name)?;
        match self.shape {
            ObjectShape::Box { size_m } => {
                m.serialize_entry("type", "box")?;
                m.serialize_entry("size_m", &size_m)?;
            }
            ObjectShape::Sphere { radius_m } => {
                m.serialize_entry("type", "sphere")?;
                m.serialize_entry("size_m", &[radius_m])?;
            }
        }
        m.serialize_entry("pose", &self.pose)?;
        if !self.extensions.is_empty() {
            m.serialize_entry("extensions", &self.extensions)?;
        }
        m.end()
    }
}

impl Serialize for ObjectExtensions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in &self.raw {
            if !Self::TYPED.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        if let Some(rgba) = &self.rgba {
            m.serialize_entry("rgba", rgba)?;
        }
        if let Some(mass) = &self.mass_kg {
            m.serialize_entry("mass_kg", mass)?;
        }
        if let Some(friction) = &self.friction {
            m.serialize_entry("friction", friction)?;
        }
        m.end()
    }
}

impl Serialize for Extensions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in &self.raw {
            if k != "armsim" {
                m.serialize_entry(k, v)?;
            }
        }
        // Don't invent an `armsim` block for a scene that had none and uses only the defaults.
        if self.raw.contains_key("armsim") || self.armsim != ArmsimExtensions::default() {
            m.serialize_entry("armsim", &self.armsim)?;
        }
        m.end()
    }
}

impl Serialize for ArmsimExtensions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (k, v) in &self.raw {
            if !Self::TYPED.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.serialize_entry("table_size_m", &self.table_size_m)?;
        m.serialize_entry("table_center_xy_m", &self.table_center_xy_m)?;
        if let Some(goal) = &self.goal_zone {
            m.serialize_entry("goal_zone", goal)?;
        }
        if let Some(limit) = &self.episode_time_limit_s {
            m.serialize_entry("episode_time_limit_s", limit)?;
        }
        m.serialize_entry("physics", &self.physics)?;
        if self.controller_grace_s != Self::DEFAULT_CONTROLLER_GRACE_S {
            m.serialize_entry("controller_grace_s", &self.controller_grace_s)?;
        }
        m.end()
    }
}

impl SceneConfig {
    /// The configuration as pretty-printed revA JSON; `parse_scene` reads it back to an equal value.
    pub fn to_json_pretty(&self) -> String {
        // These types hold only strings, finite numbers and string-keyed maps, which serde_json always serialises.
        let pretty = serde_json::to_string_pretty(self).unwrap_or_default();
        collapse_scalar_arrays(&pretty)
    }
}

/// Puts arrays holding no strings, objects or arrays (`pos_m`, matrix rows, `rgba`) on one line, as a person
/// would write them; serde_json's pretty printer gives every number its own line.
fn collapse_scalar_arrays(pretty: &str) -> String {
    let mut out = String::with_capacity(pretty.len());
    let mut rest = pretty;
    let mut in_string = false;
    while let Some(c) = rest.chars().next() {
        let mut len = c.len_utf8();
        if in_string {
            if c == '\\' {
                // Keep the escaped character with its backslash so an escaped quote does not end the string.
                len += rest[1..].chars().next().map_or(0, char::len_utf8);
            } else if c == '"' {
                in_string = false;
            }
            out.push_str(&rest[..len]);
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '[' {
            let end = rest.find(']');
            match end.filter(|&e| !rest[1..e].contains(['[', '{', '"'])) {
                Some(e) => {
                    let items: Vec<&str> = rest[1..e].split(',').map(str::trim).collect();
                    out.push('[');
                    out.push_str(&items.join(", "));
                    out.push(']');
                    len = e + 1;
                }
                None => out.push(c),
            }
        } else {
            out.push(c);
        }
        rest = &rest[len..];
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------------

/// One problem in a scene file, located by a JSON path such as `$.objects[2].pose.pos_m`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SceneError {
    pub path: String,
    pub message: String,
}

/// Every problem found in a scene file, section by section, cross-field checks (robot, table) last.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", one_per_line(.0))]
pub struct SceneErrors(pub Vec<SceneError>);

fn one_per_line(errors: &[SceneError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl SceneErrors {
    fn single(path: &str, message: impl Into<String>) -> Self {
        SceneErrors(vec![SceneError {
            path: path.to_owned(),
            message: message.into(),
        }])
    }

    /// The first error at exactly `path`, if any.
    pub fn at(&self, path: &str) -> Option<&SceneError> {
        self.0.iter().find(|e| e.path == path)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Loaded scene
// ---------------------------------------------------------------------------------------------------------------

/// A validated scene with its robot loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    pub config: SceneConfig,
    pub robot: RobotModel,
    /// The scene file; for `parse_scene`, the base directory the JSON was resolved against.
    pub path: PathBuf,
    /// The robot file `robot.mjcf_path` resolved to.
    pub robot_path: PathBuf,
    /// Defaults the loader filled in, as `path: what was assumed`. Parsing logs nothing (it may run before logging
    /// is set up); the app logs these once at start-up.
    pub notes: Vec<String>,
}

impl Scene {
    /// Index of the joint the gripper actuator drives (validated to exist at load).
    pub fn gripper_joint(&self) -> Option<usize> {
        self.robot
            .actuator_joint(&self.config.robot.gripper.actuator_name)
    }

    /// The gripper actuator's joint and all its (transitive) mimic followers, leader first.
    pub fn gripper_joints(&self) -> Vec<usize> {
        self.gripper_joint()
            .map(|leader| gripper_joint_set(&self.robot, leader))
            .unwrap_or_default()
    }

    /// Every joint that is not part of the gripper, in model order: what a short `home_q` covers.
    pub fn arm_joints(&self) -> Vec<usize> {
        let gripper = self.gripper_joints();
        (0..self.robot.joints.len())
            .filter(|j| !gripper.contains(j))
            .collect()
    }

    /// The home configuration for every joint, in `robot.joints` order.
    ///
    /// A full-length `home_q` is returned as is. A short one (arm joints only) is spread over the arm joints, the
    /// gripper actuator's joint is put at its open position (`gripper_open_position`), and its mimic followers at
    /// `multiplier * q_leader + offset`.
    pub fn home_q_full(&self) -> Vec<f32> {
        let joints = &self.robot.joints;
        let home = &self.config.robot.home_q;
        if home.len() == joints.len() {
            return home.clone();
        }
        let mut q = vec![0.0; joints.len()];
        for (&j, &v) in self.arm_joints().iter().zip(home) {
            q[j] = v;
        }
        // `gripper_joint_set` lists leaders before their followers, so each follower sees its leader's final value.
        // Indices are checked because `Scene`'s fields are public and may be edited after validation.
        for j in self.gripper_joints() {
            let value = match self.robot.mimics.iter().find(|m| m.joint == j) {
                Some(m) => q.get(m.leader).map(|&lead| m.multiplier * lead + m.offset),
                None => joints.get(j).map(gripper_open_position),
            };
            if let (Some(slot), Some(value)) = (q.get_mut(j), value) {
                *slot = value;
            }
        }
        q
    }
}

/// The position of a gripper joint that opens the jaws.
///
/// Convention (the robot files follow it): a slide finger opens towards its upper limit; a hinged finger is open
/// at 0 (straight), clamped into its limits. An unlimited joint opens at 0.
pub fn gripper_open_position(joint: &Joint) -> f32 {
    match (joint.kind, joint.limits) {
        (JointKind::Prismatic, Some((_, hi))) => hi,
        (JointKind::Revolute, Some((lo, hi))) => 0.0_f32.clamp(lo.min(hi), hi.max(lo)),
        (_, None) => 0.0,
    }
}

/// `leader` and every joint that follows it through mimic relations, breadth first (leaders before followers).
fn gripper_joint_set(robot: &RobotModel, leader: usize) -> Vec<usize> {
    let mut set = vec![leader];
    let mut i = 0;
    while i < set.len() {
        let current = set[i];
        for m in robot.followers(current) {
            // A cycle in a malformed model must not loop forever.
            if !set.contains(&m.joint) {
                set.push(m.joint);
            }
        }
        i += 1;
    }
    set
}

/// Reads, validates and loads the scene at `path`, robot included.
pub fn load_scene(path: &Path) -> Result<Scene, SceneErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        SceneErrors::single(
            "$",
            format!("cannot read scene file {}: {e}", path.display()),
        )
    })?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let mut scene = parse_scene(&text, base_dir)?;
    scene.path = path.to_path_buf();
    Ok(scene)
}

/// Validates scene JSON and loads its robot; relative robot paths resolve against `base_dir` first.
pub fn parse_scene(json: &str, base_dir: &Path) -> Result<Scene, SceneErrors> {
    let root: Value = serde_json::from_str(json)
        .map_err(|e| SceneErrors::single("$", format!("invalid JSON: {e}")))?;
    let mut c = Checker::default();
    let parsed = parse_root(&mut c, &root, base_dir);
    match parsed {
        Some((config, robot, robot_path)) if c.errors.is_empty() => Ok(Scene {
            config,
            robot,
            path: base_dir.to_path_buf(),
            robot_path,
            notes: c.notes.iter().map(ToString::to_string).collect(),
        }),
        _ if c.errors.is_empty() => Err(SceneErrors::single(
            "$",
            "scene could not be built (internal: no specific error was recorded)",
        )),
        _ => Err(SceneErrors(c.errors)),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Path-aware walking helpers
// ---------------------------------------------------------------------------------------------------------------

/// Collects errors while the walkers go; every walker returns `None` after recording why.
#[derive(Default)]
struct Checker {
    errors: Vec<SceneError>,
    /// Things accepted with a default worth telling the user about (not errors).
    notes: Vec<SceneError>,
}

fn key(path: &str, k: &str) -> String {
    format!("{path}.{k}")
}

fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

type Obj = Map<String, Value>;

impl Checker {
    fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(SceneError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// `v` as an object whose keys are `fields` or `extensions` (which must itself be an object).
    fn object<'v>(&mut self, v: &'v Value, path: &str, fields: &[&str]) -> Option<&'v Obj> {
        let Some(m) = v.as_object() else {
            self.err(path, format!("expected an object, found {}", kind(v)));
            return None;
        };
        for (k, val) in m {
            if k == "extensions" {
                if !val.is_object() {
                    self.err(
                        key(path, k),
                        format!("expected an object, found {}", kind(val)),
                    );
                }
            } else if !fields.contains(&k.as_str()) {
                self.err(
                    key(path, k),
                    format!(
                        "unknown field `{k}` (expected one of: {}; additions belong under `extensions`)",
                        fields.join(", ")
                    ),
                );
            }
        }
        Some(m)
    }

    /// `v` as an object whose unknown keys are ignored: for typed areas inside an `extensions` object.
    fn loose_object<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Obj> {
        let m = v.as_object();
        if m.is_none() {
            self.err(path, format!("expected an object, found {}", kind(v)));
        }
        m
    }

    /// A required field of `m`, parsed by `parse` at its own path.
    fn req<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &str,
        k: &str,
        parse: impl FnOnce(&mut Self, &'v Value, &str) -> Option<T>,
    ) -> Option<T> {
        let p = key(path, k);
        match m.get(k) {
            Some(v) => parse(self, v, &p),
            None => {
                self.err(p, "missing required field");
                None
            }
        }
    }

    /// An optional field: `None` when absent or invalid (invalid is recorded).
    fn opt<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &str,
        k: &str,
        parse: impl FnOnce(&mut Self, &'v Value, &str) -> Option<T>,
    ) -> Option<T> {
        let p = key(path, k);
        m.get(k).and_then(|v| parse(self, v, &p))
    }

    fn f64v(&mut self, v: &Value, path: &str) -> Option<f64> {
        match v.as_f64() {
            Some(x) if x.is_finite() => Some(x),
            Some(x) => {
                self.err(path, format!("must be a finite number, found {x}"));
                None
            }
            None => {
                self.err(path, format!("expected a number, found {}", kind(v)));
                None
            }
        }
    }

    fn f32v(&mut self, v: &Value, path: &str) -> Option<f32> {
        let x = self.f64v(v, path)?;
        let y = x as f32;
        if y.is_finite() {
            Some(y)
        } else {
            self.err(
                path,
                format!("must be a finite number, found {x} (out of 32-bit float range)"),
            );
            None
        }
    }

    fn u64v(&mut self, v: &Value, path: &str) -> Option<u64> {
        let n = v.as_u64();
        if n.is_none() {
            self.err(
                path,
                format!("expected a non-negative integer, found {}", compact(v)),
            );
        }
        n
    }

    fn string(&mut self, v: &Value, path: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.err(path, format!("expected a string, found {}", kind(v)));
                None
            }
        }
    }

    fn boolean(&mut self, v: &Value, path: &str) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.err(path, format!("expected true or false, found {}", kind(v)));
        }
        b
    }

    fn array<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        let a = v.as_array();
        if a.is_none() {
            self.err(path, format!("expected an array, found {}", kind(v)));
        }
        a
    }

    /// An array of numbers of any length; every bad element is reported.
    fn f32_vec(&mut self, v: &Value, path: &str) -> Option<Vec<f32>> {
        let a = self.array(v, path)?;
        let items: Vec<Option<f32>> = a
            .iter()
            .enumerate()
            .map(|(i, x)| self.f32v(x, &idx(path, i)))
            .collect();
        items.into_iter().collect()
    }

    fn f32_array<const N: usize>(&mut self, v: &Value, path: &str) -> Option<[f32; N]> {
        let items = self.f32_vec(v, path);
        let len = v.as_array().map_or(0, Vec::len);
        if v.is_array() && len != N {
            self.err(path, format!("expected {N} numbers, found {len}"));
            return None;
        }
        items?.try_into().ok()
    }

    fn positive(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x > 0.0, "must be > 0")
    }

    fn non_negative(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x >= 0.0, "must be >= 0")
    }

    fn check(
        &mut self,
        x: Option<f32>,
        path: &str,
        ok: impl Fn(f32) -> bool,
        what: &str,
    ) -> Option<f32> {
        let x = x?;
        if ok(x) {
            Some(x)
        } else {
            self.err(path, format!("{what}, found {x}"));
            None
        }
    }

    fn non_empty(&mut self, s: Option<String>, path: &str) -> Option<String> {
        let s = s?;
        if s.is_empty() {
            self.err(path, "must not be empty");
            None
        } else {
            Some(s)
        }
    }

    fn pose(&mut self, v: &Value, path: &str) -> Option<PoseConfig> {
        let m = self.object(v, path, &["pos_m", "quat_xyzw"])?;
        let pos_m = self.req(m, path, "pos_m", Checker::f32_array::<3>);
        let quat = self.req(m, path, "quat_xyzw", Checker::f32_array::<4>);
        let quat_xyzw = quat.and_then(|q| self.unit_quat(q, &key(path, "quat_xyzw")));
        Some(PoseConfig {
            pos_m: pos_m?,
            quat_xyzw: quat_xyzw?,
        })
    }

    fn unit_quat(&mut self, q: [f32; 4], path: &str) -> Option<[f32; 4]> {
        let norm = q.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        if (norm - 1.0).abs() > QUAT_NORM_TOL {
            self.err(
                path,
                format!(
                    "quaternion {q:?} has norm {norm:.6}; expected a unit quaternion (x, y, z, w) within {QUAT_NORM_TOL}"
                ),
            );
            return None;
        }
        // Leave exact-enough values alone so that writing a scene back and reading it again is lossless.
        if (norm - 1.0).abs() <= 1e-7 {
            return Some(q);
        }
        Some(q.map(|x| (f64::from(x) / norm) as f32))
    }
}

/// A short rendering of a JSON value for messages.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------------------------

const TOP_FIELDS: [&str; 9] = [
    "schema_version",
    "scene_id",
    "networking",
    "frames",
    "robot",
    "table",
    "objects",
    "control",
    "heartbeat",
];

/// The `robot` section field by field, so that cross-checks can use whatever parts are valid.
#[derive(Default)]
struct RobotParts {
    mjcf_path: Option<String>,
    base_pose: Option<PoseConfig>,
    home_q: Option<Vec<f32>>,
    actuator_name: Option<String>,
}

fn parse_root(
    c: &mut Checker,
    root: &Value,
    base_dir: &Path,
) -> Option<(SceneConfig, RobotModel, PathBuf)> {
    let m = c.object(root, "$", &TOP_FIELDS)?;
    let p = "$";

    let schema_version = c.req(m, p, "schema_version", Checker::string);
    let schema_version = schema_version.and_then(|s| {
        if s == SCHEMA_VERSION {
            Some(s)
        } else {
            c.err(
                "$.schema_version",
                format!("unsupported schema version: expected \"{SCHEMA_VERSION}\", found \"{s}\""),
            );
            None
        }
    });
    let scene_id = c.req(m, p, "scene_id", Checker::string);
    let scene_id = c.non_empty(scene_id, "$.scene_id");
    let networking = c.req(m, p, "networking", parse_networking);
    let frames = c.req(m, p, "frames", parse_frames);
    let robot = c.req(m, p, "robot", parse_robot).unwrap_or_default();
    let table = c.req(m, p, "table", parse_table);
    let top = table.as_ref().map(|t| t.top_height_m);
    let objects = c.req(m, p, "objects", |c, v, p| parse_objects(c, v, p, top));
    let control = c.req(m, p, "control", parse_control);
    let heartbeat = c.req(m, p, "heartbeat", parse_heartbeat);
    let extensions = match m.get("extensions") {
        Some(v) => parse_extensions(c, v, "$.extensions"),
        None => Some(Extensions::default()),
    };

    // Cross-field checks, each run with whatever parts parsed.
    let loaded = robot
        .mjcf_path
        .as_deref()
        .and_then(|mjcf| load_robot_file(c, mjcf, base_dir));
    if let Some((model, _)) = &loaded {
        check_robot(c, model, &robot);
    }
    if let (Some(top), Some(base)) = (top, &robot.base_pose) {
        let z = base.pos_m[2];
        if z < top - TABLE_TOL_M {
            c.err(
                "$.robot.base_pose.pos_m",
                format!("robot base at z = {z} m is below the table top at {top} m"),
            );
        }
    }
    if let Some(ext) = &extensions {
        check_goal_zone(c, &ext.armsim);
    }

    let robot_config = RobotConfig {
        mjcf_path: robot.mjcf_path?,
        base_pose: robot.base_pose?,
        home_q: robot.home_q?,
        gripper: GripperConfig {
            actuator_name: robot.actuator_name?,
        },
    };
    let (model, robot_path) = loaded?;
    let config = SceneConfig {
        schema_version: schema_version?,
        scene_id: scene_id?,
        networking: networking?,
        frames: frames?,
        robot: robot_config,
        table: table?,
        objects: objects?,
        control: control?,
        heartbeat: heartbeat?,
        extensions: extensions?,
    };
    Some((config, model, robot_path))
}

fn parse_networking(c: &mut Checker, v: &Value, p: &str) -> Option<Networking> {
    let m = c.object(v, p, &["ws_host", "ws_port", "ws_path"])?;
    let ws_host = c.req(m, p, "ws_host", Checker::string);
    let ws_host = c.non_empty(ws_host, &key(p, "ws_host"));
    let ws_port = c
        .req(m, p, "ws_port", Checker::u64v)
        .and_then(|n| match u16::try_from(n) {
            Ok(port) => Some(port),
            Err(_) => {
                c.err(
                    key(p, "ws_port"),
                    format!("port {n} is out of range (0..=65535)"),
                );
                None
            }
        });
    let ws_path = c.req(m, p, "ws_path", Checker::string).and_then(|s| {
        if s.starts_with('/') {
            Some(s)
        } else {
            c.err(
                key(p, "ws_path"),
                format!("must start with '/', found \"{s}\""),
            );
            None
        }
    });
    Some(Networking {
        ws_host: ws_host?,
        ws_port: ws_port?,
        ws_path: ws_path?,
    })
}

fn parse_frames(c: &mut Checker, v: &Value, p: &str) -> Option<Frames> {
    let m = c.object(v, p, &["vp_operator_anchor"])?;
    let anchor = c.req(m, p, "vp_operator_anchor", |c, v, p| {
        let m = c.object(v, p, &["t_sim_from_vp_anchor"])?;
        let t = c.req(m, p, "t_sim_from_vp_anchor", parse_rigid_matrix)?;
        Some(VpAnchor {
            t_sim_from_vp_anchor: t,
        })
    });
    Some(Frames {
        vp_operator_anchor: anchor?,
    })
}

/// A row-major 4×4 homogeneous matrix that must be a proper rigid transform.
fn parse_rigid_matrix(c: &mut Checker, v: &Value, p: &str) -> Option<[[f64; 4]; 4]> {
    let rows = c.array(v, p)?;
    let mut t = [[0.0; 4]; 4];
    let mut ok = true;
    // The spec says "4x4 row-major matrix", which TeleSpace's own scene writes flat: 16 numbers, row by row. Both
    // forms mean the same matrix; the nested one is what armsim writes back.
    if rows.len() == 16 && rows.iter().all(|x| !x.is_array()) {
        for (i, x) in rows.iter().enumerate() {
            match c.f64v(x, &idx(p, i)) {
                Some(x) => t[i / 4][i % 4] = x,
                None => ok = false,
            }
        }
        return if ok { check_rigid(c, t, p) } else { None };
    }
    if rows.len() != 4 {
        c.err(
            p,
            format!(
                "expected 4 rows of 4 numbers, or 16 numbers row by row; found {} entries",
                rows.len()
            ),
        );
        return None;
    }
    for (r, row_v) in rows.iter().enumerate() {
        let rp = idx(p, r);
        let Some(row) = c.array(row_v, &rp) else {
            ok = false;
            continue;
        };
        if row.len() != 4 {
            c.err(&rp, format!("expected 4 numbers, found {}", row.len()));
            ok = false;
            continue;
        }
        for (col, x) in row.iter().enumerate() {
            match c.f64v(x, &idx(&rp, col)) {
                Some(x) => t[r][col] = x,
                None => ok = false,
            }
        }
    }
    if !ok {
        return None;
    }
    check_rigid(c, t, p)
}

/// `t` if it is a rigid transform; otherwise the reasons are recorded at `p`.
fn check_rigid(c: &mut Checker, t: [[f64; 4]; 4], p: &str) -> Option<[[f64; 4]; 4]> {
    let before = c.errors.len();
    let last = t[3];
    if last
        .iter()
        .zip([0.0, 0.0, 0.0, 1.0])
        .any(|(a, b)| (a - b).abs() > RIGID_TOL)
    {
        c.err(
            p,
            format!("not a rigid transform: the last row must be [0, 0, 0, 1], found {last:?}"),
        );
    }
    // R Rᵀ = I and det R = +1: a rotation, not a scale, shear or mirror.
    let mut worst: f64 = 0.0;
    for i in 0..3 {
        for j in 0..3 {
            let dot: f64 = (0..3).map(|k| t[i][k] * t[j][k]).sum();
            let expected = if i == j { 1.0 } else { 0.0 };
            worst = worst.max((dot - expected).abs());
        }
    }
    if worst > RIGID_TOL {
        c.err(
            p,
            format!(
                "not a rigid transform: the rotation part is not orthonormal (max |R·Rᵀ − I| = {worst:.6})"
            ),
        );
    }
    let det = t[0][0] * (t[1][1] * t[2][2] - t[1][2] * t[2][1])
        - t[0][1] * (t[1][0] * t[2][2] - t[1][2] * t[2][0])
        + t[0][2] * (t[1][0] * t[2][1] - t[1][1] * t[2][0]);
    // Only worth saying when the part is orthonormal: then det = -1 means a mirror. Otherwise it repeats the above.
    if worst <= RIGID_TOL && (det - 1.0).abs() > RIGID_TOL {
        c.err(
            p,
            format!(
                "not a rigid transform: the rotation part has determinant {det:.6}, expected +1 (a mirror?)"
            ),
        );
    }
    (c.errors.len() == before).then_some(t)
}

fn parse_robot(c: &mut Checker, v: &Value, p: &str) -> Option<RobotParts> {
    let m = c.object(v, p, &["mjcf_path", "base_pose", "home_q", "gripper"])?;
    let mjcf_path = c.req(m, p, "mjcf_path", Checker::string);
    let mjcf_path = c.non_empty(mjcf_path, &key(p, "mjcf_path"));
    let base_pose = c.req(m, p, "base_pose", Checker::pose);
    let home_q = c.req(m, p, "home_q", Checker::f32_vec);
    let actuator_name = c.req(m, p, "gripper", |c, v, p| {
        let m = c.object(v, p, &["actuator_name"])?;
        let name = c.req(m, p, "actuator_name", Checker::string);
        c.non_empty(name, &key(p, "actuator_name"))
    });
    Some(RobotParts {
        mjcf_path,
        base_pose,
        home_q,
        actuator_name,
    })
}

fn parse_table(c: &mut Checker, v: &Value, p: &str) -> Option<TableConfig> {
    let m = c.object(v, p, &["top_height_m", "fixed"])?;
    let top = c.req(m, p, "top_height_m", Checker::f32v);
    let top = c.positive(top, &key(p, "top_height_m"));
    let fixed = c.req(m, p, "fixed", Checker::boolean);
    Some(TableConfig {
        top_height_m: top?,
        fixed: fixed?,
    })
}

/// `top` is the table top height, when it parsed, for the resting check.
fn parse_objects(
    c: &mut Checker,
    v: &Value,
    p: &str,
    top: Option<f32>,
) -> Option<Vec<ObjectConfig>> {
    let items = c.array(v, p)?;
    let objects: Vec<Option<ObjectConfig>> = items
        .iter()
        .enumerate()
        .map(|(i, o)| parse_object(c, o, &idx(p, i)))
        .collect();

    let mut first_seen: HashMap<&str, usize> = HashMap::new();
    for (i, o) in objects.iter().enumerate() {
        // A broken object still has a usable name for this check if its `name` field parsed.
        let name = match o {
            Some(o) => Some(o.name.as_str()),
            None => items[i].get("name").and_then(Value::as_str),
        };
        let Some(name) = name else { continue };
        if let Some(&first) = first_seen.get(name) {
            c.err(
                key(&idx(p, i), "name"),
                format!(
                    "duplicate object name \"{name}\" (first used by {})",
                    idx(p, first)
                ),
            );
        } else {
            first_seen.insert(name, i);
        }
    }
    if let Some(top) = top {
        for (i, o) in objects.iter().enumerate() {
            if let Some(o) = o {
                check_above_table(c, o, &idx(p, i), top);
            }
        }
    }
    objects.into_iter().collect()
}

fn parse_object(c: &mut Checker, v: &Value, p: &str) -> Option<ObjectConfig> {
    let m = c.object(v, p, &["name", "type", "size_m", "pose"])?;
    let name = c.req(m, p, "name", Checker::string);
    let name = c.non_empty(name, &key(p, "name"));
    let shape = c
        .req(m, p, "type", Checker::string)
        .and_then(|t| match t.as_str() {
            "box" => c.req(m, p, "size_m", |c, v, p| {
                let size = c.f32_array::<3>(v, p)?;
                let positive = (0..3)
                    .map(|i| c.positive(Some(size[i]), &idx(p, i)))
                    .filter(Option::is_some)
                    .count();
                (positive == 3).then_some(ObjectShape::Box { size_m: size })
            }),
            "sphere" => c.req(m, p, "size_m", |c, v, p| {
                let [r] = c.f32_array::<1>(v, p)?;
                let r = c.positive(Some(r), &idx(p, 0))?;
                Some(ObjectShape::Sphere { radius_m: r })
            }),
            other => {
                c.err(
                    key(p, "type"),
                    format!("unsupported object type \"{other}\" (expected \"box\" or \"sphere\")"),
                );
                None
            }
        });
    let pose = c.req(m, p, "pose", Checker::pose);
    let extensions = match m.get("extensions") {
        Some(v) => parse_object_extensions(c, v, &key(p, "extensions")),
        None => Some(ObjectExtensions::default()),
    };
    Some(ObjectConfig {
        name: name?,
        shape: shape?,
        pose: pose?,
        extensions: extensions?,
    })
}

fn parse_object_extensions(c: &mut Checker, v: &Value, p: &str) -> Option<ObjectExtensions> {
    // Non-objects were already reported by `Checker::object` on the parent.
    let m = v.as_object()?;
    let rgba = c.opt(m, p, "rgba", |c, v, p| {
        let rgba = c.f32_array::<4>(v, p)?;
        let in_range = (0..4)
            .filter(|&i| {
                c.check(
                    Some(rgba[i]),
                    &idx(p, i),
                    |x| (0.0..=1.0).contains(&x),
                    "must be in 0..=1",
                )
                .is_some()
            })
            .count();
        (in_range == 4).then_some(rgba)
    });
    let mass_kg = c.opt(m, p, "mass_kg", Checker::f32v);
    let mass_kg = c.positive(mass_kg, &key(p, "mass_kg"));
    let friction = c.opt(m, p, "friction", Checker::f32v);
    let friction = c.non_negative(friction, &key(p, "friction"));
    let failed = (m.contains_key("rgba") && rgba.is_none())
        || (m.contains_key("mass_kg") && mass_kg.is_none())
        || (m.contains_key("friction") && friction.is_none());
    (!failed).then(|| ObjectExtensions {
        rgba,
        mass_kg,
        friction,
        raw: m.clone(),
    })
}

fn parse_control(c: &mut Checker, v: &Value, p: &str) -> Option<ControlConfig> {
    let m = c.object(v, p, &["limits", "filter", "pause_behavior"])?;
    let limits = c.req(m, p, "limits", parse_limits);
    let filter = c.req(m, p, "filter", parse_filter);
    let pause_behavior = c
        .req(m, p, "pause_behavior", Checker::string)
        .and_then(|s| match s.as_str() {
            "hold" => Some(PauseBehavior::Hold),
            "damp" => Some(PauseBehavior::Damp),
            other => {
                c.err(
                    key(p, "pause_behavior"),
                    format!("expected \"hold\" or \"damp\", found \"{other}\""),
                );
                None
            }
        });
    Some(ControlConfig {
        limits: limits?,
        filter: filter?,
        pause_behavior: pause_behavior?,
    })
}

fn parse_limits(c: &mut Checker, v: &Value, p: &str) -> Option<Limits> {
    let m = c.object(
        v,
        p,
        &[
            "workspace_aabb_m",
            "max_ee_speed_mps",
            "max_joint_speed_rad_s",
            "table_clearance_m",
        ],
    )?;
    let aabb = c.req(m, p, "workspace_aabb_m", |c, v, p| {
        let m = c.object(v, p, &["min", "max"])?;
        let min = c.req(m, p, "min", Checker::f32_array::<3>)?;
        let max = c.req(m, p, "max", Checker::f32_array::<3>)?;
        let mut ok = true;
        for (axis, name) in ["x", "y", "z"].iter().enumerate() {
            if min[axis] >= max[axis] {
                c.err(
                    p,
                    format!(
                        "min.{name} ({}) must be less than max.{name} ({})",
                        min[axis], max[axis]
                    ),
                );
                ok = false;
            }
        }
        ok.then_some(Aabb { min, max })
    });
    let ee = c.req(m, p, "max_ee_speed_mps", Checker::f32v);
    let ee = c.positive(ee, &key(p, "max_ee_speed_mps"));
    let joint = c.req(m, p, "max_joint_speed_rad_s", Checker::f32v);
    let joint = c.positive(joint, &key(p, "max_joint_speed_rad_s"));
    let clearance = c.req(m, p, "table_clearance_m", Checker::f32v);
    let clearance = c.non_negative(clearance, &key(p, "table_clearance_m"));
    Some(Limits {
        workspace_aabb_m: aabb?,
        max_ee_speed_mps: ee?,
        max_joint_speed_rad_s: joint?,
        table_clearance_m: clearance?,
    })
}

fn parse_filter(c: &mut Checker, v: &Value, p: &str) -> Option<FilterConfig> {
    let m = c.object(v, p, &["type", "params"])?;
    let kind = c
        .req(m, p, "type", Checker::string)
        .and_then(|s| match s.as_str() {
            "one_euro" => Some(FilterKind::OneEuro),
            other => {
                c.err(
                    key(p, "type"),
                    format!("unsupported filter type \"{other}\" (expected \"one_euro\")"),
                );
                None
            }
        });
    let params = c.req(m, p, "params", |c, v, p| {
        let m = c.object(v, p, &["min_cutoff", "beta", "d_cutoff"])?;
        let min_cutoff = c.req(m, p, "min_cutoff", Checker::f32v);
        let min_cutoff = c.positive(min_cutoff, &key(p, "min_cutoff"));
        let beta = c.req(m, p, "beta", Checker::f32v);
        let beta = c.non_negative(beta, &key(p, "beta"));
        // TeleSpace's own scene leaves `d_cutoff` out; 1.0 Hz is the 1€ filter authors' recommended value.
        let d_cutoff = if m.contains_key("d_cutoff") {
            let d_cutoff = c.req(m, p, "d_cutoff", Checker::f32v);
            c.positive(d_cutoff, &key(p, "d_cutoff"))
        } else {
            c.notes.push(SceneError {
                path: key(p, "d_cutoff"),
                message: format!("missing; using the 1€ filter's usual {DEFAULT_D_CUTOFF}"),
            });
            Some(DEFAULT_D_CUTOFF)
        };
        Some(OneEuroParams {
            min_cutoff: min_cutoff?,
            beta: beta?,
            d_cutoff: d_cutoff?,
        })
    });
    Some(FilterConfig {
        kind: kind?,
        params: params?,
    })
}

fn parse_heartbeat(c: &mut Checker, v: &Value, p: &str) -> Option<Heartbeat> {
    let m = c.object(v, p, &["period_ms", "timeout_ms"])?;
    let period = c.req(m, p, "period_ms", Checker::u64v).and_then(|n| {
        if n == 0 {
            c.err(key(p, "period_ms"), "must be > 0, found 0");
            None
        } else {
            Some(n)
        }
    });
    let timeout = c.req(m, p, "timeout_ms", Checker::u64v);
    if let (Some(period), Some(timeout)) = (period, timeout)
        && timeout <= period
    {
        c.err(
            key(p, "timeout_ms"),
            format!("must be greater than period_ms ({period}), found {timeout}"),
        );
        return None;
    }
    Some(Heartbeat {
        period_ms: period?,
        timeout_ms: timeout?,
    })
}

fn parse_extensions(c: &mut Checker, v: &Value, p: &str) -> Option<Extensions> {
    // A non-object was already reported by `Checker::object` on the top level.
    let m = v.as_object()?;
    let armsim = match m.get("armsim") {
        Some(v) => parse_armsim(c, v, &key(p, "armsim"))?,
        None => ArmsimExtensions::default(),
    };
    Some(Extensions {
        raw: m.clone(),
        armsim,
    })
}

/// `extensions.armsim`: typed keys are checked, unknown keys (here and in its sub-objects) are kept or ignored,
/// never errors, because it is still an extensions area.
fn parse_armsim(c: &mut Checker, v: &Value, p: &str) -> Option<ArmsimExtensions> {
    let m = c.loose_object(v, p)?;
    let defaults = ArmsimExtensions::default();
    let before = c.errors.len();

    let size = c.opt(m, p, "table_size_m", Checker::f32_array::<2>);
    if let Some(size) = size {
        for (i, &s) in size.iter().enumerate() {
            c.positive(Some(s), &idx(&key(p, "table_size_m"), i));
        }
    }
    let center = c.opt(m, p, "table_center_xy_m", Checker::f32_array::<2>);
    let goal_zone = c.opt(m, p, "goal_zone", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let center = c.req(m, p, "center_xy_m", Checker::f32_array::<2>);
        let half = c.req(m, p, "half_size_m", Checker::f32_array::<2>);
        if let Some(half) = half {
            for (i, &h) in half.iter().enumerate() {
                c.positive(Some(h), &idx(&key(p, "half_size_m"), i));
            }
        }
        Some(GoalZone {
            center_xy_m: center?,
            half_size_m: half?,
        })
    });
    let limit = c.opt(m, p, "episode_time_limit_s", Checker::f32v);
    let limit = c.positive(limit, &key(p, "episode_time_limit_s"));
    let grace = c.opt(m, p, "controller_grace_s", Checker::f32v);
    let grace = c.check(
        grace,
        &key(p, "controller_grace_s"),
        |x| (0.0..=3600.0).contains(&x),
        "must be in 0..=3600 seconds",
    );
    let physics = c.opt(m, p, "physics", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let d = PhysicsExt::default();
        let friction = c.opt(m, p, "friction", Checker::f32v);
        let friction = c.non_negative(friction, &key(p, "friction"));
        let restitution = c.opt(m, p, "restitution", Checker::f32v);
        let restitution = c.check(
            restitution,
            &key(p, "restitution"),
            |x| (0.0..=1.0).contains(&x),
            "must be in 0..=1",
        );
        let iterations = c.opt(m, p, "solver_iterations", Checker::u64v);
        let iterations = iterations.and_then(|n| {
            if (1..=1000).contains(&n) {
                usize::try_from(n).ok()
            } else {
                c.err(
                    key(p, "solver_iterations"),
                    format!("must be in 1..=1000, found {n}"),
                );
                None
            }
        });
        Some(PhysicsExt {
            friction: friction.unwrap_or(d.friction),
            restitution: restitution.unwrap_or(d.restitution),
            solver_iterations: iterations.unwrap_or(d.solver_iterations),
        })
    });

    (c.errors.len() == before).then(|| ArmsimExtensions {
        table_size_m: size.unwrap_or(defaults.table_size_m),
        table_center_xy_m: center.unwrap_or(defaults.table_center_xy_m),
        goal_zone,
        episode_time_limit_s: limit,
        physics: physics.unwrap_or_default(),
        controller_grace_s: grace.unwrap_or(defaults.controller_grace_s),
        raw: m.clone(),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Cross-field checks
// ---------------------------------------------------------------------------------------------------------------

/// Finds the robot file (scene directory first, then the current directory) and loads it.
fn load_robot_file(
    c: &mut Checker,
    mjcf_path: &str,
    base_dir: &Path,
) -> Option<(RobotModel, PathBuf)> {
    const P: &str = "$.robot.mjcf_path";
    let rel = Path::new(mjcf_path);
    let candidates: Vec<PathBuf> = if rel.is_absolute() {
        vec![rel.to_path_buf()]
    } else {
        let cwd = std::env::current_dir()
            .map(|d| d.join(rel))
            .unwrap_or_else(|_| rel.to_path_buf());
        vec![base_dir.join(rel), cwd]
    };
    let Some(found) = candidates.iter().find(|p| p.is_file()) else {
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        c.err(
            P,
            format!(
                "robot file \"{mjcf_path}\" not found (tried: {})",
                tried.join(", ")
            ),
        );
        return None;
    };
    match load_robot(found) {
        Ok(model) => Some((model, found.clone())),
        Err(e) => {
            c.err(P, format!("cannot load robot {}: {e}", found.display()));
            None
        }
    }
}

fn check_robot(c: &mut Checker, robot: &RobotModel, parts: &RobotParts) {
    let n = robot.joints.len();
    let leader = parts.actuator_name.as_deref().and_then(|name| {
        let leader = robot.actuator_joint(name);
        if leader.is_none() {
            let names: Vec<&str> = robot
                .joints
                .iter()
                .filter_map(|j| j.actuator.as_ref().map(|a| a.name.as_str()))
                .collect();
            c.err(
                "$.robot.gripper.actuator_name",
                format!(
                    "robot \"{}\" has no actuator named \"{name}\" (actuators: {})",
                    robot.name,
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
            );
        }
        leader
    });
    let Some(home_q) = &parts.home_q else { return };

    let arm: Option<Vec<usize>> = leader.map(|l| {
        let gripper = gripper_joint_set(robot, l);
        (0..n).filter(|j| !gripper.contains(j)).collect()
    });
    let joints: Vec<usize> = if home_q.len() == n {
        (0..n).collect()
    } else if let Some(arm) = arm.filter(|a| a.len() == home_q.len()) {
        arm
    } else {
        let arm_count = match leader {
            Some(l) => format!(
                "{} (arm joints only) or ",
                n - gripper_joint_set(robot, l).len()
            ),
            None => String::new(),
        };
        c.err(
            "$.robot.home_q",
            format!(
                "has {} values; robot \"{}\" needs {arm_count}{n} (every joint)",
                home_q.len(),
                robot.name
            ),
        );
        return;
    };
    for (i, (&q, &j)) in home_q.iter().zip(&joints).enumerate() {
        let joint = &robot.joints[j];
        if let Some((lo, hi)) = joint.limits
            && (q < lo - JOINT_LIMIT_TOL || q > hi + JOINT_LIMIT_TOL)
        {
            c.err(
                idx("$.robot.home_q", i),
                format!(
                    "{q} is outside the limits [{lo}, {hi}] of joint \"{}\"",
                    joint.name
                ),
            );
        }
    }
}

fn check_above_table(c: &mut Checker, o: &ObjectConfig, p: &str, top: f32) {
    let bottom = o.pose.pos_m[2] - o.shape.depth_below_center(o.pose.rotation());
    if bottom < top - TABLE_TOL_M {
        c.err(
            key(&key(p, "pose"), "pos_m"),
            format!(
                "object \"{}\" reaches down to z = {bottom:.4} m, below the table top at {top} m",
                o.name
            ),
        );
    }
}

fn check_goal_zone(c: &mut Checker, armsim: &ArmsimExtensions) {
    let Some(goal) = &armsim.goal_zone else {
        return;
    };
    for axis in 0..2 {
        let table_half = armsim.table_size_m[axis] * 0.5;
        let offset = (goal.center_xy_m[axis] - armsim.table_center_xy_m[axis]).abs();
        if offset + goal.half_size_m[axis] > table_half + TABLE_TOL_M {
            c.err(
                "$.extensions.armsim.goal_zone",
                format!(
                    "the goal zone extends past the table edge along {} (table half size {table_half} m)",
                    ["x", "y"][axis]
                ),
            );
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenes_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes")
    }

    fn default_value() -> Value {
        let text = std::fs::read_to_string(scenes_dir().join("default_scene.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn parse_value(v: &Value) -> Result<Scene, SceneErrors> {
        parse_scene(&v.to_string(), &scenes_dir())
    }

    /// The default scene with `mutate` applied, which must fail.
    fn errors_for(mutate: impl FnOnce(&mut Value)) -> SceneErrors {
        let mut v = default_value();
        mutate(&mut v);
        match parse_value(&v) {
            Ok(_) => panic!("scene unexpectedly valid"),
            Err(e) => e,
        }
    }

    #[track_caller]
    fn assert_has(errors: &SceneErrors, path: &str, needle: &str) {
        assert!(
            errors
                .0
                .iter()
                .any(|e| e.path == path && e.message.contains(needle)),
            "expected an error at {path} containing {needle:?}; got:\n{errors}"
        );
    }

    fn default_scene() -> Scene {
        load_scene(&scenes_dir().join("default_scene.json")).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn default_scene_loads() {
        let scene = default_scene();
        let c = &scene.config;
        assert_eq!(c.schema_version, SCHEMA_VERSION);
        assert_eq!(c.scene_id, "default_scene");
        assert_eq!(c.networking.ws_port, 8765);
        assert_eq!(c.networking.ws_path, "/ws");
        assert_eq!(c.table.top_height_m, 1.0);
        assert_eq!(c.objects.len(), 3);
        assert_eq!(c.control.pause_behavior, PauseBehavior::Hold);
        assert_eq!(c.extensions.armsim.episode_time_limit_s, Some(120.0));
        assert!(c.extensions.armsim.goal_zone.is_some());
        assert_eq!(c.objects[0].extensions.rgba.map(|c| c[0] > 0.5), Some(true));
        assert_eq!(scene.path, scenes_dir().join("default_scene.json"));
        assert!(scene.robot_path.is_file());

        let gripper = scene.gripper_joint().expect("gripper actuator");
        let full = scene.home_q_full();
        assert_eq!(full.len(), scene.robot.joints.len());
        assert_eq!(scene.arm_joints().len(), c.robot.home_q.len());
        for (&j, &q) in scene.arm_joints().iter().zip(&c.robot.home_q) {
            assert_eq!(full[j], q);
        }
        assert_eq!(
            full[gripper],
            gripper_open_position(&scene.robot.joints[gripper])
        );
    }

    #[test]
    fn gripper4_scene_loads() {
        let scene =
            load_scene(&scenes_dir().join("gripper4.json")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scene.config.scene_id, "gripper4");
        assert_eq!(scene.robot.joints.len(), 10);
        assert_eq!(scene.home_q_full().len(), 10);
    }

    #[test]
    fn write_back_round_trips() {
        let scene = default_scene();
        let text = scene.config.to_json_pretty();
        let again = parse_scene(&text, &scenes_dir()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again.config, scene.config);
        assert!(text.contains("\"type\": \"box\""), "{text}");
        assert!(text.contains("0.05"), "{text}");
        assert!(
            !text.contains("0.0500000"),
            "f32 values must print short: {text}"
        );
    }

    #[test]
    fn extensions_are_free_and_kept() {
        let mut v = default_value();
        v["extensions"]["vendor"] = json!({"anything": [1, 2, 3]});
        v["extensions"]["armsim"]["future_knob"] = json!(true);
        v["objects"][0]["extensions"]["label"] = json!("heavy");
        v["networking"]["extensions"] = json!({"note": "ignored"});
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        let text = scene.config.to_json_pretty();
        assert!(text.contains("\"vendor\""), "{text}");
        assert!(text.contains("\"future_knob\""), "{text}");
        assert!(text.contains("\"label\""), "{text}");
    }

    #[test]
    fn pretty_output_keeps_number_arrays_on_one_line() {
        let text = default_scene().config.to_json_pretty();
        assert!(text.contains("\"pos_m\": [0.5, -0.12, 1.025]"), "{text}");
        assert!(text.contains("[1.0, 0.0, 0.0, 0.0],"), "{text}");

        let tricky =
            "{\n  \"s\": \"a[1,\\\"\\n 2]\",\n  \"n\": [\n    [\n      1\n    ],\n    []\n  ]\n}";
        let collapsed = collapse_scalar_arrays(tricky);
        assert!(collapsed.contains("\"a[1,\\\"\\n 2]\""), "{collapsed}");
        assert!(collapsed.contains("[1],"), "{collapsed}");
        let a: Value = serde_json::from_str(tricky).unwrap();
        let b: Value = serde_json::from_str(&collapsed).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn armsim_defaults_apply_when_absent() {
        let mut v = default_value();
        v.as_object_mut().unwrap().remove("extensions");
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scene.config.extensions.armsim, ArmsimExtensions::default());
        assert!(!scene.config.to_json_pretty().contains("armsim"));
    }

    #[test]
    fn sphere_objects_are_accepted() {
        let mut v = default_value();
        v["objects"][0]["type"] = json!("sphere");
        v["objects"][0]["size_m"] = json!([0.025]);
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        let o = &scene.config.objects[0];
        assert_eq!(o.shape, ObjectShape::Sphere { radius_m: 0.025 });
        assert_eq!(o.shape.to_shape(), Shape::Sphere { radius: 0.025 });
        let again = parse_scene(&scene.config.to_json_pretty(), &scenes_dir()).unwrap();
        assert_eq!(again.config, scene.config);
    }

    #[test]
    fn json_syntax_error_has_line_and_column() {
        let e = parse_scene(
            "{\n  \"schema_version\": \"1.0.0-revA\",\n  oops\n}",
            &scenes_dir(),
        )
        .unwrap_err();
        assert_has(&e, "$", "line 3 column");
    }

    #[test]
    fn unreadable_file_is_reported_at_root() {
        let e = load_scene(&scenes_dir().join("no_such_scene.json")).unwrap_err();
        assert_has(&e, "$", "cannot read scene file");
    }

    #[test]
    fn wrong_schema_version() {
        let e = errors_for(|v| v["schema_version"] = json!("0.9.0"));
        assert_has(
            &e,
            "$.schema_version",
            "expected \"1.0.0-revA\", found \"0.9.0\"",
        );
    }

    #[test]
    fn missing_required_field() {
        let e = errors_for(|v| {
            v["robot"].as_object_mut().unwrap().remove("home_q");
        });
        assert_has(&e, "$.robot.home_q", "missing required field");
    }

    #[test]
    fn wrong_type() {
        let e = errors_for(|v| v["table"]["top_height_m"] = json!("high"));
        assert_has(
            &e,
            "$.table.top_height_m",
            "expected a number, found a string",
        );
        let e = errors_for(|v| v["objects"] = json!({}));
        assert_has(&e, "$.objects", "expected an array, found an object");
    }

    #[test]
    fn unknown_fields_outside_extensions() {
        let e = errors_for(|v| {
            v["colour"] = json!("red");
            v["objects"][1]["pose"]["scale"] = json!(2);
        });
        assert_has(&e, "$.colour", "unknown field `colour`");
        assert_has(&e, "$.objects[1].pose.scale", "unknown field `scale`");
    }

    #[test]
    fn non_finite_numbers() {
        let e = errors_for(|v| v["objects"][2]["pose"]["pos_m"][0] = json!(1e39));
        assert_has(&e, "$.objects[2].pose.pos_m[0]", "finite");
    }

    #[test]
    fn ws_port_range() {
        let e = errors_for(|v| v["networking"]["ws_port"] = json!(70000));
        assert_has(&e, "$.networking.ws_port", "out of range");
        let e = errors_for(|v| v["networking"]["ws_port"] = json!(-1));
        assert_has(&e, "$.networking.ws_port", "non-negative integer");
    }

    #[test]
    fn ws_path_starts_with_slash() {
        let e = errors_for(|v| v["networking"]["ws_path"] = json!("ws"));
        assert_has(&e, "$.networking.ws_path", "must start with '/'");
    }

    #[test]
    fn quaternions_are_normalised_or_rejected() {
        let mut v = default_value();
        v["robot"]["base_pose"]["quat_xyzw"] = json!([0.0, 0.0, 0.0, 1.0005]);
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scene.config.robot.base_pose.quat_xyzw, [0.0, 0.0, 0.0, 1.0]);

        let e = errors_for(|v| v["objects"][0]["pose"]["quat_xyzw"] = json!([0.0, 0.0, 0.0, 2.0]));
        assert_has(&e, "$.objects[0].pose.quat_xyzw", "unit quaternion");
    }

    #[test]
    fn anchor_transform_must_be_rigid() {
        const P: &str = "$.frames.vp_operator_anchor.t_sim_from_vp_anchor";
        let set = |m: Value| {
            move |v: &mut Value| v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] = m
        };
        let scaled = json!([[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]);
        assert_has(&errors_for(set(scaled)), P, "not orthonormal");
        let mirrored = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, -1, 0], [0, 0, 0, 1]]);
        assert_has(&errors_for(set(mirrored)), P, "determinant");
        let projective = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]);
        assert_has(&errors_for(set(projective)), P, "last row");
        let short = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]);
        assert_has(&errors_for(set(short)), P, "expected 4 rows");
        let flat_short = json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_has(&errors_for(set(flat_short)), P, "or 16 numbers");
        let flat_scaled = json!([2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        assert_has(&errors_for(set(flat_scaled)), P, "not orthonormal");
        let flat_text = json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, "x", 0, 0, 0, 1]);
        assert_has(
            &errors_for(set(flat_text)),
            &format!("{P}[11]"),
            "expected a number",
        );

        // A proper rotation about z with a translation is fine.
        let mut v = default_value();
        v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] = json!([
            [0, -1, 0, 0.4],
            [1, 0, 0, 0.0],
            [0, 0, 1, 1.0],
            [0, 0, 0, 1]
        ]);
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        let p = scene
            .config
            .frames
            .vp_operator_anchor
            .to_sim([1.0, 0.0, 0.0]);
        assert_eq!(p, [0.4, 1.0, 1.0]);

        // TeleSpace writes the same matrix flat, row by row.
        v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] =
            json!([0, -1, 0, 0.4, 1, 0, 0, 0.0, 0, 0, 1, 1.0, 0, 0, 0, 1]);
        let flat = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(flat.config.frames, scene.config.frames);
    }

    #[test]
    fn table_height_positive() {
        let e = errors_for(|v| v["table"]["top_height_m"] = json!(0.0));
        assert_has(&e, "$.table.top_height_m", "must be > 0");
    }

    #[test]
    fn object_sizes_positive() {
        let e = errors_for(|v| v["objects"][0]["size_m"] = json!([0.05, 0.0, 0.05]));
        assert_has(&e, "$.objects[0].size_m[1]", "must be > 0");
        let e = errors_for(|v| v["objects"][0]["size_m"] = json!([0.05, 0.05]));
        assert_has(&e, "$.objects[0].size_m", "expected 3 numbers, found 2");
    }

    #[test]
    fn duplicate_object_names() {
        let e = errors_for(|v| v["objects"][2]["name"] = json!("cube_red"));
        assert_has(
            &e,
            "$.objects[2].name",
            "duplicate object name \"cube_red\"",
        );
    }

    #[test]
    fn object_below_table() {
        let e = errors_for(|v| v["objects"][1]["pose"]["pos_m"][2] = json!(1.02));
        assert_has(&e, "$.objects[1].pose.pos_m", "below the table top");
        // A cube resting on an edge reaches lower than one resting on a face.
        let e = errors_for(|v| {
            v["objects"][1]["pose"]["quat_xyzw"] = json!([0.38268343, 0.0, 0.0, 0.92387953]);
        });
        assert_has(&e, "$.objects[1].pose.pos_m", "below the table top");
    }

    #[test]
    fn workspace_min_below_max() {
        let e = errors_for(|v| v["control"]["limits"]["workspace_aabb_m"]["min"][2] = json!(1.6));
        assert_has(
            &e,
            "$.control.limits.workspace_aabb_m",
            "min.z (1.6) must be less than max.z (1.6)",
        );
    }

    #[test]
    fn speed_limits_positive() {
        let e = errors_for(|v| {
            v["control"]["limits"]["max_ee_speed_mps"] = json!(0);
            v["control"]["limits"]["max_joint_speed_rad_s"] = json!(-1.5);
        });
        assert_has(&e, "$.control.limits.max_ee_speed_mps", "must be > 0");
        assert_has(&e, "$.control.limits.max_joint_speed_rad_s", "must be > 0");
    }

    #[test]
    fn heartbeat_timeout_exceeds_period() {
        let e = errors_for(|v| v["heartbeat"]["timeout_ms"] = json!(1000));
        assert_has(
            &e,
            "$.heartbeat.timeout_ms",
            "must be greater than period_ms (1000)",
        );
        let e = errors_for(|v| v["heartbeat"]["period_ms"] = json!(0));
        assert_has(&e, "$.heartbeat.period_ms", "must be > 0");
    }

    #[test]
    fn filter_must_be_one_euro_with_positive_params() {
        let e = errors_for(|v| {
            v["control"]["filter"]["type"] = json!("kalman");
            v["control"]["filter"]["params"]["min_cutoff"] = json!(0.0);
        });
        assert_has(
            &e,
            "$.control.filter.type",
            "unsupported filter type \"kalman\"",
        );
        assert_has(&e, "$.control.filter.params.min_cutoff", "must be > 0");
    }

    #[test]
    fn a_missing_d_cutoff_defaults_with_a_note() {
        let mut v = default_value();
        let params = v["control"]["filter"]["params"].as_object_mut().unwrap();
        params.remove("d_cutoff");
        let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            scene.config.control.filter.params.d_cutoff,
            DEFAULT_D_CUTOFF
        );
        assert_eq!(scene.notes.len(), 1, "{:?}", scene.notes);
        assert!(
            scene.notes[0].starts_with("$.control.filter.params.d_cutoff: missing"),
            "{:?}",
            scene.notes
        );
        assert!(
            default_scene().notes.is_empty(),
            "a complete scene has no notes"
        );
        // Present but wrong is still an error.
        let e = errors_for(|v| v["control"]["filter"]["params"]["d_cutoff"] = json!(0.0));
        assert_has(&e, "$.control.filter.params.d_cutoff", "must be > 0");
    }

    #[test]
    fn pause_behavior_is_hold_or_damp() {
        let e = errors_for(|v| v["control"]["pause_behavior"] = json!("freeze"));
        assert_has(
            &e,
            "$.control.pause_behavior",
            "expected \"hold\" or \"damp\"",
        );
    }

    #[test]
    fn missing_robot_file_lists_paths_tried() {
        let e = errors_for(|v| v["robot"]["mjcf_path"] = json!("../robots/nope.xml"));
        assert_has(&e, "$.robot.mjcf_path", "not found (tried: ");
        let err = e.at("$.robot.mjcf_path").unwrap();
        assert!(err.message.contains("scenes"), "{err}");
    }

    #[test]
    fn unloadable_robot_file() {
        // The scene file itself exists but is no robot description.
        let e = errors_for(|v| v["robot"]["mjcf_path"] = json!("default_scene.json"));
        assert_has(&e, "$.robot.mjcf_path", "cannot load robot");
    }

    #[test]
    fn home_q_length_matches_robot() {
        let e = errors_for(|v| v["robot"]["home_q"] = json!([0.0, 0.0]));
        assert_has(&e, "$.robot.home_q", "has 2 values");
        assert_has(&e, "$.robot.home_q", "(arm joints only)");
    }

    #[test]
    fn home_q_full_length_is_accepted_verbatim() {
        let scene = default_scene();
        let full = scene.home_q_full();
        let mut v = default_value();
        v["robot"]["home_q"] = json!(full);
        let again = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.home_q_full(), full);
    }

    #[test]
    fn home_q_within_joint_limits() {
        let scene = default_scene();
        let arm = scene.arm_joints();
        let (slot, hi) = arm
            .iter()
            .enumerate()
            .find_map(|(i, &j)| scene.robot.joints[j].limits.map(|(_, hi)| (i, hi)))
            .expect("the default robot has a limited arm joint");
        let e = errors_for(|v| v["robot"]["home_q"][slot] = json!(hi + 0.5));
        assert_has(&e, &format!("$.robot.home_q[{slot}]"), "outside the limits");
    }

    #[test]
    fn gripper_actuator_must_exist() {
        let e = errors_for(|v| v["robot"]["gripper"]["actuator_name"] = json!("no_such_actuator"));
        assert_has(
            &e,
            "$.robot.gripper.actuator_name",
            "no actuator named \"no_such_actuator\"",
        );
    }

    #[test]
    fn robot_base_below_table() {
        let e = errors_for(|v| v["robot"]["base_pose"]["pos_m"][2] = json!(0.5));
        assert_has(&e, "$.robot.base_pose.pos_m", "below the table top");
    }

    #[test]
    fn goal_zone_inside_table() {
        let e = errors_for(|v| {
            v["extensions"]["armsim"]["goal_zone"]["center_xy_m"] = json!([0.45, 0.38])
        });
        assert_has(
            &e,
            "$.extensions.armsim.goal_zone",
            "past the table edge along y",
        );
    }

    #[test]
    fn every_error_is_reported() {
        let e = errors_for(|v| {
            v["schema_version"] = json!("2.0");
            v["networking"]["ws_port"] = json!("8765");
            v["objects"][1]["size_m"][0] = json!(-0.05);
        });
        assert_eq!(e.0.len(), 3, "{e}");
        assert_has(&e, "$.schema_version", "expected \"1.0.0-revA\"");
        assert_has(&e, "$.networking.ws_port", "non-negative integer");
        assert_has(&e, "$.objects[1].size_m[0]", "must be > 0");
        let text = e.to_string();
        assert_eq!(text.lines().count(), 3);
        assert!(text.lines().all(|l| l.starts_with("$.")), "{text}");
    }
}
