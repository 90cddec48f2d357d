//! The scene's checks that need more than one field: finding and loading the robot file, then
//! the home pose, the gripper and its positions, the table and the goal zone and the randomized
//! region against it.

use std::path::{Path, PathBuf};

use super::checker::{Checker, idx, key};
use super::gripper::gripper_joint_set;
use super::types::{ArmsimExtensions, GripperPositions, ObjectConfig, PoseConfig};
use crate::robot::model::RobotModel;
use crate::robot::{LoadOptions, load_robot_with};

/// How far an object or the robot base may dip below the table top before it is an error (rounding in hand-written
/// files, not a real penetration).
pub(super) const TABLE_TOL_M: f32 = 1e-3;
/// Slack on joint limits for `home_q`, so that values written with a few decimals (e.g. -1.5708) pass.
const JOINT_LIMIT_TOL: f32 = 1e-4;

/// The `robot` section field by field, so that cross-checks can use whatever parts are valid.
#[derive(Default)]
pub(super) struct RobotParts {
    pub(super) mjcf_path: Option<String>,
    pub(super) base_pose: Option<PoseConfig>,
    pub(super) home_q: Option<Vec<f32>>,
    pub(super) actuator_name: Option<String>,
}

/// `~/rest` → `$HOME/rest`, so scenes can point where users keep their robot files.
pub(super) fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// Finds the robot file (scene directory first, then the current directory) and loads it.
pub(super) fn load_robot_file(
    c: &mut Checker,
    mjcf_path: &str,
    base_dir: &Path,
    options: &LoadOptions,
) -> Option<(RobotModel, PathBuf)> {
    const P: &str = "$.robot.mjcf_path";
    let expanded = expand_home(Path::new(mjcf_path));
    let rel = expanded.as_path();
    // A bundled scene's robot comes from the bundled files, never from the disk.
    if let Some(loaded) = super::super::assets::robot_at(&base_dir.join(rel)) {
        return match loaded {
            Ok(model) => Some((model, base_dir.join(rel))),
            Err(e) => {
                c.err(P, format!("cannot load robot {mjcf_path}: {e}"));
                None
            }
        };
    }
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
        let hint = super::sources::clone_hint(mjcf_path, base_dir)
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        c.err(
            P,
            format!(
                "robot file \"{mjcf_path}\" not found (tried: {}){hint}",
                tried.join(", ")
            ),
        );
        return None;
    };
    match load_robot_with(found, options) {
        Ok(model) => Some((model, found.clone())),
        Err(e) => {
            c.err(P, format!("cannot load robot {}: {e}", found.display()));
            None
        }
    }
}

pub(super) fn check_robot(c: &mut Checker, robot: &RobotModel, parts: &RobotParts) {
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

pub(super) fn check_above_table(c: &mut Checker, o: &ObjectConfig, p: &str, top: f32) {
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

pub(super) fn check_goal_zone(c: &mut Checker, armsim: &ArmsimExtensions) {
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

/// `extensions.armsim.robot.gripper_positions` needs a gripper, and both positions inside its
/// joint's limits.
pub(super) fn check_gripper_positions(
    c: &mut Checker,
    model: &RobotModel,
    actuator: Option<&str>,
    grip: GripperPositions,
) {
    let p = "$.extensions.armsim.robot.gripper_positions";
    let Some(name) = actuator else {
        c.err(
            p,
            "the scene has no robot.gripper for these positions to apply to",
        );
        return;
    };
    // An unknown actuator is reported at robot.gripper.actuator_name already.
    let Some(joint) = model.actuator_joint(name).map(|j| &model.joints[j]) else {
        return;
    };
    if grip.open == grip.closed {
        c.err(p, format!("open and closed are both {}", grip.open));
    }
    if let Some((lo, hi)) = joint.limits {
        for (k, q) in [("open", grip.open), ("closed", grip.closed)] {
            if !(lo..=hi).contains(&q) {
                c.err(
                    key(p, k),
                    format!(
                        "{q} is outside joint \"{}\"'s range [{lo}, {hi}]",
                        joint.name
                    ),
                );
            }
        }
    }
}

/// The region must lie on the table top, and a scene with nothing to vary says so.
pub(super) fn check_randomize(c: &mut Checker, armsim: &ArmsimExtensions, objects: usize) {
    let Some(r) = &armsim.randomize else {
        return;
    };
    let p = "$.extensions.armsim.randomize";
    if r.objects.is_none() && r.arm.is_none() {
        c.err(p, "nothing to vary: give `objects`, `arm` or both");
    }
    let Some(o) = &r.objects else {
        return;
    };
    if objects == 0 {
        c.err(
            key(p, "objects"),
            "the scene has no objects to place (its `objects` list is empty)",
        );
    }
    for axis in 0..2 {
        let table_half = armsim.table_size_m[axis] / 2.0;
        let offset = (o.region.center_xy_m[axis] - armsim.table_center_xy_m[axis]).abs();
        if offset + o.region.half_size_m[axis] > table_half + TABLE_TOL_M {
            c.err(
                key(&key(p, "objects"), "region"),
                format!(
                    "the region extends past the table edge along {} (table half size \
                     {table_half} m, centred at {} m)",
                    ["x", "y"][axis],
                    armsim.table_center_xy_m[axis]
                ),
            );
            return;
        }
    }
}
