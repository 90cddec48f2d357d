//! The typed revA scene config (what a validated `scene_config.json` becomes) and its JSON writer.

use std::path::PathBuf;

use glam::{Mat3, Quat, Vec3};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::camera::spec::{CameraMount, CameraSpec};
use crate::robot::model::{Pose, Shape};

// ---------------------------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------------------------

/// A validated revA scene configuration. JSON field names are revA's.
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
    /// Absent for an arm without a gripper (Menagerie's UR5e): nothing closes then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gripper: Option<GripperConfig>,
}

/// `extensions.armsim.robot`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RobotExt {
    /// `package_paths`: `{"NAME": "DIR"}`, DIR relative to the scene file. `--package-path`
    /// entries come first.
    pub package_paths: Vec<(String, PathBuf)>,
    /// `tool`: `{"frame": "site or link", "offset_m": [x, y, z], "axis": [x, y, z]}`, the point
    /// teleop IK drives and, optionally, the direction out of the tool (both in `frame`), which
    /// teleop points down; without it, the robot file's own point (see the loaders) and the
    /// axis `robot::kinematics::tool_axis` derives.
    pub tool: Option<ToolConfig>,
    /// `gripper_positions`: `{"open": q, "closed": q}`, where the gripper actuator's joint opens
    /// and closes (rad or m), for a jaw the usual convention gets wrong (the SO-101's opens
    /// towards its upper limit). Without it, see `scene::gripper_open_position`.
    pub gripper_positions: Option<GripperPositions>,
    /// `collide_geoms`: `["name", …]`, MJCF geoms that collide with the table and the cubes
    /// whatever their `contype`/`conaffinity` (see `LoadOptions::collide_geoms`).
    pub collide_geoms: Vec<String>,
    /// `self_collision`: whether the robot's links touch each other by MuJoCo's rule
    /// (`robot::self_collision`); absent means on, `false` turns it off.
    pub self_collision: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GripperPositions {
    pub open: f32,
    pub closed: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolConfig {
    pub frame: String,
    pub offset_m: [f32; 3],
    /// A non-zero direction in `frame` (any length).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axis: Option<[f32; 3]>,
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
    /// `extensions.armsim.robot`: where a robot file's `package://` names point, and its tool
    /// point.
    pub robot: RobotExt,
    /// `extensions.armsim.cameras`: the scene's simulated cameras, in file order (see
    /// `Scene::cameras` for these and the robot file's own).
    pub cameras: Vec<CameraSpec>,
    /// `extensions.armsim.lerobot.robot`: the LeRobot robot type whose schema a LeRobot
    /// dataset follows (`so101_follower`, `so100_follower`; the recorder checks the name and
    /// the fit); `None`: the file's joints as they are, in radians. `--lerobot-robot` wins.
    pub lerobot_robot: Option<String>,
    /// `extensions.armsim.randomize`: each episode's start drawn from a seed (`scene::variation`).
    pub randomize: Option<Randomize>,
    /// `extensions.armsim` as read, typed keys included; unknown keys survive a write-back.
    pub raw: Map<String, Value>,
}

impl ArmsimExtensions {
    const TYPED: [&'static str; 10] = [
        "lerobot",
        "randomize",
        "robot",
        "cameras",
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
            robot: RobotExt::default(),
            cameras: Vec::new(),
            lerobot_robot: None,
            randomize: None,
            raw: Map::new(),
        }
    }
}

/// Seeds are whole numbers below 2^53, so JSON, Python and a pandas column hold them exactly.
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// `extensions.armsim.randomize`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Randomize {
    /// Episode `k`'s start is drawn from a seed derived from this one and `k` (resets since the
    /// app started): the same seed gives the same episodes. `--randomize-seed` wins.
    pub seed: u64,
    /// Every episode starts from this seed's draw (`--episode-seed`): one recorded episode's
    /// start again, from the `armsim/episode_seed` of its row in the episodes parquet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<ObjectRandomize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arm: Option<ArmRandomize>,
}

/// `randomize.objects`: every object of the scene is placed anew at each episode's start.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectRandomize {
    /// Where the objects' centres go, on the table top; each rests on the table, no two closer
    /// than `min_gap_m`.
    pub region: Region,
    /// A turn about the vertical, drawn in `[lo, hi]` radians, on top of the file's orientation;
    /// absent: the file's orientation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yaw_rad: Option<[f32; 2]>,
    /// The smallest gap between two objects' footprints (the circles around them), metres.
    pub min_gap_m: f32,
    /// The object's mass (its `mass_kg`, or what its size weighs at the default density) times
    /// a factor drawn in `[lo, hi]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mass_scale: Option<[f32; 2]>,
    /// Every edge (a sphere's radius) times one factor drawn in `[lo, hi]`. Without `mass_kg`
    /// the mass follows the volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_scale: Option<[f32; 2]>,
    /// The object's friction coefficient, drawn in `[lo, hi]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub friction: Option<[f32; 2]>,
}

/// An axis-aligned rectangle on the table top (world x, y).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Region {
    pub center_xy_m: [f32; 2],
    pub half_size_m: [f32; 2],
}

impl ObjectRandomize {
    pub const DEFAULT_MIN_GAP_M: f32 = 0.01;
}

/// `randomize.arm`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ArmRandomize {
    /// Each arm joint (not the gripper) starts at its `home_q` plus an offset drawn in
    /// `[-home_q_jitter, home_q_jitter]` (rad, or m for a sliding joint), kept within its limits.
    pub home_q_jitter: f32,
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
    /// Extra solver iterations (Rapier substeps) for the arm's links and whatever touches them
    /// (`RigidBody::additional_solver_iterations`). Each substep recomputes the arm's multibody
    /// mass matrix, most of a step's cost (`armsim bench quality` shows what it buys).
    /// Always written back: the shipped scenes name it, and a change of its default (it has
    /// changed once) must not change what a written-back scene means.
    pub arm_extra_iterations: usize,
    /// How the arm's joints are simulated (`arm_joints`): one reduced-coordinate multibody, or a
    /// rigid body per link held by impulse joints with motors. Written back only when it is not
    /// the default.
    #[serde(skip_serializing_if = "is_default_arm_joints")]
    pub arm_joints: ArmJoints,
    /// Projected Gauss-Seidel passes over the constraints within each substep (Rapier's
    /// `num_internal_pgs_iterations`, 1 unless set): stiffer contacts and joints without
    /// another substep, so without recomputing the multibody's mass matrix. Always written
    /// back, as `arm_extra_iterations`.
    pub pgs_iterations: usize,
    /// Natural frequency of Rapier's contact springs in Hz (`contact_hz`; Rapier's 30 unless
    /// set): stiffer contacts keep thin fingertip pads from sinking into what they squeeze.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_hz: Option<f32>,
    /// Whether the arm may sleep once it rests (`arm_sleeps`, on unless set): its commands
    /// unchanged and its joints still for half a second. A sleeping arm costs nothing a step
    /// and wakes on a new command, a contact, a teleport or a placement. Written back only
    /// when off.
    #[serde(skip_serializing_if = "is_true")]
    pub arm_sleeps: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// The arm's representation in Rapier (`extensions.armsim.physics.arm_joints`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArmJoints {
    /// A Rapier multibody: exact joints, passive damping per joint; each substep rebuilds its
    /// dense mass matrix, which grows with links × DoF².
    #[default]
    Multibody,
    /// One rigid body per link and one impulse joint with a motor per joint: the joints are
    /// constraints the solver satisfies with everything else, at a cost per joint instead of
    /// per mass matrix. Long chains converge slowly: the arm sags and lags.
    Impulse,
    /// The arm a multibody, the leaf links with an actuated joint (a gripper's fingers) on
    /// impulse joints: a smaller mass matrix, and the fingers' contacts are plain rigid-body
    /// contacts.
    Hybrid,
}

impl ArmJoints {
    pub fn name(self) -> &'static str {
        match self {
            ArmJoints::Multibody => "multibody",
            ArmJoints::Impulse => "impulse",
            ArmJoints::Hybrid => "hybrid",
        }
    }

    /// Parses `multibody`, `impulse` or `hybrid`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "multibody" => Some(ArmJoints::Multibody),
            "impulse" => Some(ArmJoints::Impulse),
            "hybrid" => Some(ArmJoints::Hybrid),
            _ => None,
        }
    }
}

fn is_default_arm_joints(a: &ArmJoints) -> bool {
    *a == PhysicsExt::default().arm_joints
}

/// What a scene without a `physics` block (or without some of its keys) gets: the shipped
/// scenes' settings (`assets/scenes/*.json`), chosen by `armsim bench quality` and the grasp
/// tests: one substep with 12 PGS passes grips tighter than 2 substeps × 3 passes at about
/// 70 % of the cost (each substep rebuilds the multibody's mass matrix; a PGS pass reuses it),
/// and 12 is what the SO-101's weak jaw needs to lift its cube in `tests/real_grasp.rs`
/// (8 passes let it slip). The old fallback, 8 substeps + 4 for the arm, made Rapier run 12 substeps for a whole
/// scene with a multibody in it: five to six times the shipped scenes' cost for no grasp that
/// needed it.
impl Default for PhysicsExt {
    fn default() -> Self {
        Self {
            friction: 0.8,
            restitution: 0.0,
            solver_iterations: 1,
            arm_extra_iterations: 0,
            arm_joints: ArmJoints::Multibody,
            pgs_iterations: 12,
            contact_hz: None,
            arm_sleeps: true,
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
        if self.robot != RobotExt::default() {
            m.serialize_entry("robot", &RobotExtJson(&self.robot))?;
        }
        if !self.cameras.is_empty() {
            let cameras: Vec<_> = self.cameras.iter().map(CameraJson).collect();
            m.serialize_entry("cameras", &cameras)?;
        }
        // `lerobot` as read, its typed `robot` from the field.
        let mut lerobot = match self.raw.get("lerobot") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        match &self.lerobot_robot {
            Some(robot) => lerobot.insert("robot".into(), Value::from(robot.as_str())),
            None => lerobot.remove("robot"),
        };
        if !lerobot.is_empty() {
            m.serialize_entry("lerobot", &lerobot)?;
        }
        if let Some(randomize) = &self.randomize {
            m.serialize_entry("randomize", randomize)?;
        }
        m.end()
    }
}

/// `extensions.armsim.robot` as the scene file writes it: `package_paths` as a `{"NAME": "DIR"}`
/// object, and only the keys that are set.
struct RobotExtJson<'a>(&'a RobotExt);

impl Serialize for RobotExtJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        if !r.package_paths.is_empty() {
            let paths: Map<String, Value> = r
                .package_paths
                .iter()
                .map(|(name, dir)| (name.clone(), Value::from(dir.to_string_lossy())))
                .collect();
            m.serialize_entry("package_paths", &paths)?;
        }
        if let Some(tool) = &r.tool {
            m.serialize_entry("tool", tool)?;
        }
        if let Some(grip) = &r.gripper_positions {
            m.serialize_entry("gripper_positions", grip)?;
        }
        if !r.collide_geoms.is_empty() {
            m.serialize_entry("collide_geoms", &r.collide_geoms)?;
        }
        if let Some(on) = r.self_collision {
            m.serialize_entry("self_collision", &on)?;
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
pub(super) fn collapse_scalar_arrays(pretty: &str) -> String {
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

/// A camera as the scene writes it: the typed fields in the JSON shape `parse_camera` reads.
struct CameraJson<'a>(&'a CameraSpec);

impl Serialize for CameraJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Fixed {
            pos_m: [f32; 3],
            look_at_m: [f32; 3],
        }
        #[derive(Serialize)]
        struct Attach<'a> {
            frame: &'a str,
            pos_m: [f32; 3],
            quat_xyzw: [f32; 4],
        }
        let camera = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &camera.name)?;
        match &camera.mount {
            CameraMount::Fixed { pos_m, look_at_m } => m.serialize_entry(
                "pose",
                &Fixed {
                    pos_m: *pos_m,
                    look_at_m: *look_at_m,
                },
            )?,
            CameraMount::Attached {
                frame,
                pos_m,
                quat_xyzw,
            } => m.serialize_entry(
                "attach",
                &Attach {
                    frame,
                    pos_m: *pos_m,
                    quat_xyzw: *quat_xyzw,
                },
            )?,
            // A robot file's camera: never part of a scene's own list.
            CameraMount::Link { .. } => {}
        }
        m.serialize_entry("fov_deg", &camera.fov_deg)?;
        m.serialize_entry("width", &camera.width)?;
        m.serialize_entry("height", &camera.height)?;
        m.serialize_entry("rate_hz", &camera.rate_hz)?;
        if camera.depth {
            m.serialize_entry("depth", &true)?;
        }
        m.end()
    }
}
