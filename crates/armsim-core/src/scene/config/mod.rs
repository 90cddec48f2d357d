//! revA `scene_config.json`: the typed scene, a validator that reports every problem with its JSON path,
//! and loading of the robot the scene names.
//!
//! Parsing walks a `serde_json::Value` with small path-aware helpers instead of `#[derive(Deserialize)]`: serde stops
//! at the first error and cannot say where it was, while someone fixing a scene file wants the whole list at once.
//! Types still derive `Serialize` so a scene can be written back (`SceneConfig::to_json_pretty`).
//!
//! Conventions: world frame Z up, metres, radians; poses are `{"pos_m": [x,y,z], "quat_xyzw": [x,y,z,w]}`. Fields
//! outside an `extensions` object are closed: an unknown one is an error. Any JSON object may carry `extensions`;
//! the top level's and each object's are kept verbatim, the others are accepted and dropped.
//!
//! The error types are here; the files, each building only on those listed before it:
//! `types.rs` (the typed config and its JSON writer), `gripper.rs` (the gripper's joints),
//! `checker.rs` (the path-aware walking helpers), `sources.rs` (the `git clone` that brings a
//! missing robot file), `checks.rs` (loading the robot file and the cross-field checks),
//! `cameras.rs` (`extensions.armsim.cameras`), `randomize.rs` (reads `extensions.armsim.randomize`),
//! `parse.rs` (section by section); the loaded
//! [`Scene`] and the entry points are here.

mod cameras;
mod checker;
mod checks;
mod gripper;
mod parse;
mod randomize;
mod sources;
mod types;

pub use gripper::gripper_open_position;
pub use parse::{DEFAULT_D_CUTOFF, SCHEMA_VERSION};
pub use types::*;

use std::path::{Path, PathBuf};

use glam::Vec3;
use serde_json::Value;

use checker::Checker;
use gripper::gripper_joint_set;
use parse::parse_root;

use crate::camera::spec::CameraSpec;
use crate::robot::LoadOptions;
use crate::robot::model::RobotModel;

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
    /// Index of the joint the gripper actuator drives (validated to exist at load); `None`
    /// for a robot without a gripper.
    pub fn gripper_joint(&self) -> Option<usize> {
        let gripper = self.config.robot.gripper.as_ref()?;
        self.robot.actuator_joint(&gripper.actuator_name)
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

    /// Every camera of the scene: `extensions.armsim.cameras` in file order, then the robot
    /// file's own (MJCF `<camera>`s) but those a scene camera of the same name replaces.
    pub fn cameras(&self) -> Vec<CameraSpec> {
        let own = &self.config.extensions.armsim.cameras;
        let robot = self
            .robot
            .cameras
            .iter()
            .filter(|r| !own.iter().any(|c| c.name == r.name));
        own.iter().chain(robot).cloned().collect()
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
                Some(m) => q.get(m.leader).map(|&lead| m.follow(lead)),
                None => joints.get(j).map(gripper_open_position),
            };
            if let (Some(slot), Some(value)) = (q.get_mut(j), value) {
                *slot = value;
            }
        }
        q
    }
}

/// Reads, validates and loads the scene at `path`, robot included.
pub fn load_scene(path: &Path) -> Result<Scene, SceneErrors> {
    load_scene_with(path, &LoadOptions::default())
}

/// [`load_scene`] with where `package://` names point (`--package-path`), ahead of the scene's
/// own `extensions.armsim.robot.package_paths`.
pub fn load_scene_with(path: &Path, options: &LoadOptions) -> Result<Scene, SceneErrors> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        SceneErrors::single(
            "$",
            format!("cannot read scene file {}: {e}", path.display()),
        )
    })?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let mut scene = parse_scene_with(&text, base_dir, options)?;
    scene.path = path.to_path_buf();
    Ok(scene)
}

/// Validates scene JSON and loads its robot; relative robot paths resolve against `base_dir` first.
pub fn parse_scene(json: &str, base_dir: &Path) -> Result<Scene, SceneErrors> {
    parse_scene_with(json, base_dir, &LoadOptions::default())
}

/// [`parse_scene`] with [`LoadOptions`] for the robot file.
pub fn parse_scene_with(
    json: &str,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<Scene, SceneErrors> {
    let root: Value = serde_json::from_str(json)
        .map_err(|e| SceneErrors::single("$", format!("invalid JSON: {e}")))?;
    let mut c = Checker::default();
    let parsed = parse_root(&mut c, &root, base_dir, options);
    match parsed {
        Some((config, mut robot, robot_path)) if c.errors.is_empty() => {
            let mut notes: Vec<String> = c.notes.iter().map(ToString::to_string).collect();
            notes.extend(
                robot
                    .notes
                    .iter()
                    .map(|n| format!("robot {}: {n}", robot_path.display())),
            );
            // The scene's tool point wins over the file's (checked to exist above).
            if let Some(tool) = &config.extensions.armsim.robot.tool
                && let Some((link, pose)) = robot.frame(&tool.frame)
            {
                robot.ee_link = link;
                robot.ee_offset = pose.transform_point(Vec3::from_array(tool.offset_m));
                robot.ee_axis = tool.axis.map(|a| pose.rotation * Vec3::from_array(a));
            }
            // Computed at load; the scene may turn it off.
            if config.extensions.armsim.robot.self_collision == Some(false) {
                robot.self_collision = Default::default();
            }
            // Checked above against the gripper joint's limits.
            if let Some(grip) = config.extensions.armsim.robot.gripper_positions
                && let Some(gripper) = &config.robot.gripper
                && let Some(j) = robot.actuator_joint(&gripper.actuator_name)
            {
                robot.joints[j].grip = Some((grip.open, grip.closed));
            }
            Ok(Scene {
                config,
                robot,
                path: base_dir.to_path_buf(),
                robot_path,
                notes,
            })
        }
        _ if c.errors.is_empty() => Err(SceneErrors::single(
            "$",
            "scene could not be built (internal: no specific error was recorded)",
        )),
        _ => Err(SceneErrors(c.errors)),
    }
}

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
    /// One error at `path`.
    pub fn single(path: &str, message: impl Into<String>) -> Self {
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

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cameras;
