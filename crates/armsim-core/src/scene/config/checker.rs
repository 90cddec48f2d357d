//! The validator's path-aware walking helpers (`Checker`: every problem recorded with its JSON
//! path) and the cross-field checks that need the robot (home pose, gripper and its positions,
//! table, goal zone).

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Path-aware walking helpers
// ---------------------------------------------------------------------------------------------------------------

/// Collects errors while the walkers go; every walker returns `None` after recording why.
#[derive(Default)]
pub(super) struct Checker {
    pub(super) errors: Vec<SceneError>,
    /// Things accepted with a default worth telling the user about (not errors).
    pub(super) notes: Vec<SceneError>,
}

pub(super) fn key(path: &str, k: &str) -> String {
    format!("{path}.{k}")
}

pub(super) fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) type Obj = Map<String, Value>;

impl Checker {
    pub(super) fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(SceneError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// `v` as an object whose keys are `fields` or `extensions` (which must itself be an object).
    pub(super) fn object<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        fields: &[&str],
    ) -> Option<&'v Obj> {
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
    pub(super) fn loose_object<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Obj> {
        let m = v.as_object();
        if m.is_none() {
            self.err(path, format!("expected an object, found {}", kind(v)));
        }
        m
    }

    /// A required field of `m`, parsed by `parse` at its own path.
    pub(super) fn req<'v, T>(
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
    pub(super) fn opt<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &str,
        k: &str,
        parse: impl FnOnce(&mut Self, &'v Value, &str) -> Option<T>,
    ) -> Option<T> {
        let p = key(path, k);
        m.get(k).and_then(|v| parse(self, v, &p))
    }

    pub(super) fn f64v(&mut self, v: &Value, path: &str) -> Option<f64> {
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

    pub(super) fn f32v(&mut self, v: &Value, path: &str) -> Option<f32> {
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

    pub(super) fn u64v(&mut self, v: &Value, path: &str) -> Option<u64> {
        let n = v.as_u64();
        if n.is_none() {
            self.err(
                path,
                format!("expected a non-negative integer, found {}", compact(v)),
            );
        }
        n
    }

    pub(super) fn string(&mut self, v: &Value, path: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.err(path, format!("expected a string, found {}", kind(v)));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, v: &Value, path: &str) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.err(path, format!("expected true or false, found {}", kind(v)));
        }
        b
    }

    pub(super) fn array<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        let a = v.as_array();
        if a.is_none() {
            self.err(path, format!("expected an array, found {}", kind(v)));
        }
        a
    }

    /// An array of numbers of any length; every bad element is reported.
    pub(super) fn f32_vec(&mut self, v: &Value, path: &str) -> Option<Vec<f32>> {
        let a = self.array(v, path)?;
        let items: Vec<Option<f32>> = a
            .iter()
            .enumerate()
            .map(|(i, x)| self.f32v(x, &idx(path, i)))
            .collect();
        items.into_iter().collect()
    }

    pub(super) fn f32_array<const N: usize>(&mut self, v: &Value, path: &str) -> Option<[f32; N]> {
        let items = self.f32_vec(v, path);
        let len = v.as_array().map_or(0, Vec::len);
        if v.is_array() && len != N {
            self.err(path, format!("expected {N} numbers, found {len}"));
            return None;
        }
        items?.try_into().ok()
    }

    pub(super) fn positive(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x > 0.0, "must be > 0")
    }

    pub(super) fn non_negative(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x >= 0.0, "must be >= 0")
    }

    pub(super) fn check(
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

    pub(super) fn non_empty(&mut self, s: Option<String>, path: &str) -> Option<String> {
        let s = s?;
        if s.is_empty() {
            self.err(path, "must not be empty");
            None
        } else {
            Some(s)
        }
    }

    pub(super) fn pose(&mut self, v: &Value, path: &str) -> Option<PoseConfig> {
        let m = self.object(v, path, &["pos_m", "quat_xyzw"])?;
        let pos_m = self.req(m, path, "pos_m", Checker::f32_array::<3>);
        let quat = self.req(m, path, "quat_xyzw", Checker::f32_array::<4>);
        let quat_xyzw = quat.and_then(|q| self.unit_quat(q, &key(path, "quat_xyzw")));
        Some(PoseConfig {
            pos_m: pos_m?,
            quat_xyzw: quat_xyzw?,
        })
    }

    pub(super) fn unit_quat(&mut self, q: [f32; 4], path: &str) -> Option<[f32; 4]> {
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
pub(super) fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Cross-field checks
// ---------------------------------------------------------------------------------------------------------------

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
    if let Some(loaded) = super::super::bundled::robot_at(&base_dir.join(rel)) {
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
