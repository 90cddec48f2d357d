//! Parsing of `scene_config.json` section by section into the typed config, each field through the
//! `Checker`, so one pass reports every problem.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::SceneError;
use super::cameras::{check_camera_frames, parse_cameras};
use super::checker::{Checker, Obj, idx, key};
use super::checks::{
    RobotParts, TABLE_TOL_M, check_above_table, check_goal_zone, check_gripper_positions,
    check_randomize, check_robot, expand_home, load_robot_file,
};
use super::randomize::parse_randomize;
use super::types::*;
use crate::robot::LoadOptions;
use crate::robot::model::RobotModel;

/// The only `schema_version` this build understands.
pub const SCHEMA_VERSION: &str = "1.0.0-revA";
/// `control.filter.params.d_cutoff` (Hz) when a scene leaves it out.
pub const DEFAULT_D_CUTOFF: f32 = 1.0;
/// Tolerance for `t_sim_from_vp_anchor` being rigid (orthonormality, determinant, last row).
const RIGID_TOL: f64 = 1e-4;

// ---------------------------------------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------------------------------------

pub(super) const TOP_FIELDS: [&str; 9] = [
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

pub(super) fn parse_root(
    c: &mut Checker,
    root: &Value,
    base_dir: &Path,
    options: &LoadOptions,
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
    let mut load_options = options.clone();
    if let Some(ext) = &extensions {
        for (name, dir) in &ext.armsim.robot.package_paths {
            load_options
                .package_paths
                .push((name.clone(), base_dir.join(expand_home(dir))));
        }
        load_options
            .collide_geoms
            .extend(ext.armsim.robot.collide_geoms.iter().cloned());
    }
    let loaded = robot
        .mjcf_path
        .as_deref()
        .and_then(|mjcf| load_robot_file(c, mjcf, base_dir, &load_options));
    if let Some((model, _)) = &loaded {
        check_robot(c, model, &robot);
        if let Some(tool) = extensions
            .as_ref()
            .and_then(|e| e.armsim.robot.tool.as_ref())
            && model.frame(&tool.frame).is_none()
        {
            c.err(
                "$.extensions.armsim.robot.tool.frame",
                format!(
                    "robot \"{}\" has no site or link named \"{}\"",
                    model.name, tool.frame
                ),
            );
        }
        for (i, name) in load_options.collide_geoms.iter().enumerate() {
            let found = model
                .links
                .iter()
                .flat_map(|l| &l.collisions)
                .any(|g| g.name.as_deref() == Some(name));
            if !found {
                c.err(
                    format!("$.extensions.armsim.robot.collide_geoms[{i}]"),
                    format!("robot \"{}\" has no geom named \"{name}\"", model.name),
                );
            }
        }
        if let Some(grip) = extensions
            .as_ref()
            .and_then(|e| e.armsim.robot.gripper_positions)
        {
            check_gripper_positions(c, model, robot.actuator_name.as_deref(), grip);
        }
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
        if let Some(objects) = &objects {
            check_randomize(c, &ext.armsim, objects.len());
        }
        if let Some((model, _)) = &loaded {
            check_camera_frames(c, model, &ext.armsim.cameras);
        }
    }

    let robot_config = RobotConfig {
        mjcf_path: robot.mjcf_path?,
        base_pose: robot.base_pose?,
        home_q: robot.home_q?,
        gripper: robot
            .actuator_name
            .map(|actuator_name| GripperConfig { actuator_name }),
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

pub(super) fn parse_networking(c: &mut Checker, v: &Value, p: &str) -> Option<Networking> {
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

pub(super) fn parse_frames(c: &mut Checker, v: &Value, p: &str) -> Option<Frames> {
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
pub(super) fn parse_rigid_matrix(c: &mut Checker, v: &Value, p: &str) -> Option<[[f64; 4]; 4]> {
    let rows = c.array(v, p)?;
    let mut t = [[0.0; 4]; 4];
    let mut ok = true;
    // revA says "4x4 row-major matrix", which TeleSpace's own scene writes flat: 16 numbers, row by row. Both
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
pub(super) fn check_rigid(c: &mut Checker, t: [[f64; 4]; 4], p: &str) -> Option<[[f64; 4]; 4]> {
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

pub(super) fn parse_robot(c: &mut Checker, v: &Value, p: &str) -> Option<RobotParts> {
    let m = c.object(v, p, &["mjcf_path", "base_pose", "home_q", "gripper"])?;
    let mjcf_path = c.req(m, p, "mjcf_path", Checker::string);
    let mjcf_path = c.non_empty(mjcf_path, &key(p, "mjcf_path"));
    let base_pose = c.req(m, p, "base_pose", Checker::pose);
    let home_q = c.req(m, p, "home_q", Checker::f32_vec);
    let actuator_name = c.opt(m, p, "gripper", |c, v, p| {
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

pub(super) fn parse_table(c: &mut Checker, v: &Value, p: &str) -> Option<TableConfig> {
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
pub(super) fn parse_objects(
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

    c.unique_names(items, &objects, |o| o.name.as_str(), p, "object");
    if let Some(top) = top {
        for (i, o) in objects.iter().enumerate() {
            if let Some(o) = o {
                check_above_table(c, o, &idx(p, i), top);
            }
        }
    }
    objects.into_iter().collect()
}

pub(super) fn parse_object(c: &mut Checker, v: &Value, p: &str) -> Option<ObjectConfig> {
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

pub(super) fn parse_object_extensions(
    c: &mut Checker,
    v: &Value,
    p: &str,
) -> Option<ObjectExtensions> {
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

pub(super) fn parse_control(c: &mut Checker, v: &Value, p: &str) -> Option<ControlConfig> {
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

pub(super) fn parse_limits(c: &mut Checker, v: &Value, p: &str) -> Option<Limits> {
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

pub(super) fn parse_filter(c: &mut Checker, v: &Value, p: &str) -> Option<FilterConfig> {
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

pub(super) fn parse_heartbeat(c: &mut Checker, v: &Value, p: &str) -> Option<Heartbeat> {
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

pub(super) fn parse_extensions(c: &mut Checker, v: &Value, p: &str) -> Option<Extensions> {
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
pub(super) fn parse_armsim(c: &mut Checker, v: &Value, p: &str) -> Option<ArmsimExtensions> {
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
        let iterations = count_in(c, m, p, "solver_iterations", 1..=1000);
        let extra = count_in(c, m, p, "arm_extra_iterations", 0..=1000);
        let arm_joints = c.opt(m, p, "arm_joints", Checker::string).and_then(|s| {
            ArmJoints::parse(&s).or_else(|| {
                c.err(
                    key(p, "arm_joints"),
                    format!("expected \"multibody\", \"impulse\" or \"hybrid\", found \"{s}\""),
                );
                None
            })
        });
        let pgs = count_in(c, m, p, "pgs_iterations", 1..=100);
        let contact_hz = c.opt(m, p, "contact_hz", Checker::f32v);
        let contact_hz = c.check(
            contact_hz,
            &key(p, "contact_hz"),
            |x| (1.0..=240.0).contains(&x),
            "must be in 1..=240 Hz",
        );
        let arm_sleeps = c.opt(m, p, "arm_sleeps", Checker::boolean);
        Some(PhysicsExt {
            friction: friction.unwrap_or(d.friction),
            restitution: restitution.unwrap_or(d.restitution),
            solver_iterations: iterations.unwrap_or(d.solver_iterations),
            arm_extra_iterations: extra.unwrap_or(d.arm_extra_iterations),
            arm_joints: arm_joints.unwrap_or(d.arm_joints),
            pgs_iterations: pgs.unwrap_or(d.pgs_iterations),
            contact_hz,
            arm_sleeps: arm_sleeps.unwrap_or(d.arm_sleeps),
        })
    });

    let robot = c.opt(m, p, "robot", parse_robot_ext);
    let cameras = c.opt(m, p, "cameras", parse_cameras);
    let lerobot_robot = c
        .opt(m, p, "lerobot", |c, v, p| {
            let m = c.loose_object(v, p)?;
            Some(c.opt(m, p, "robot", Checker::string))
        })
        .flatten();
    let randomize = c.opt(m, p, "randomize", parse_randomize);

    (c.errors.len() == before).then(|| ArmsimExtensions {
        table_size_m: size.unwrap_or(defaults.table_size_m),
        table_center_xy_m: center.unwrap_or(defaults.table_center_xy_m),
        goal_zone,
        episode_time_limit_s: limit,
        physics: physics.unwrap_or_default(),
        controller_grace_s: grace.unwrap_or(defaults.controller_grace_s),
        robot: robot.unwrap_or_default(),
        cameras: cameras.unwrap_or_default(),
        lerobot_robot,
        randomize,
        raw: m.clone(),
    })
}

/// `extensions.armsim.robot`: `package_paths` (`{"NAME": "DIR"}`) and `tool` (`{"frame",
/// "offset_m"}`). Folders stay as written; the loader resolves them against the scene's folder.
pub(super) fn parse_robot_ext(c: &mut Checker, v: &Value, p: &str) -> Option<RobotExt> {
    let m = c.loose_object(v, p)?;
    let mut ext = RobotExt::default();
    if let Some(paths) = m.get("package_paths") {
        let pp = key(p, "package_paths");
        let paths = c.loose_object(paths, &pp)?;
        for (name, dir) in paths {
            let dir = c.string(dir, &key(&pp, name))?;
            ext.package_paths.push((name.clone(), PathBuf::from(dir)));
        }
    }
    ext.tool = c.opt(m, p, "tool", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let frame = c.req(m, p, "frame", Checker::string);
        let frame = c.non_empty(frame, &key(p, "frame"));
        let offset = c.opt(m, p, "offset_m", Checker::f32_array::<3>);
        let axis = c.opt(m, p, "axis", Checker::f32_array::<3>);
        if let Some(a) = axis
            && a.iter().map(|v| v * v).sum::<f32>() < 1e-12
        {
            c.err(key(p, "axis"), "must be a non-zero direction");
        }
        Some(ToolConfig {
            frame: frame?,
            offset_m: offset.unwrap_or([0.0; 3]),
            axis,
        })
    });
    if let Some(names) = m.get("collide_geoms") {
        let pp = key(p, "collide_geoms");
        match names.as_array() {
            Some(names) => {
                for (i, name) in names.iter().enumerate() {
                    let name = c.string(name, &format!("{pp}[{i}]"));
                    ext.collide_geoms
                        .extend(c.non_empty(name, &format!("{pp}[{i}]")));
                }
            }
            None => c.err(pp, "must be an array of geom names"),
        }
    }
    ext.self_collision = c.opt(m, p, "self_collision", Checker::boolean);
    ext.gripper_positions = c.opt(m, p, "gripper_positions", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let open = c.req(m, p, "open", Checker::f32v);
        let closed = c.req(m, p, "closed", Checker::f32v);
        Some(GripperPositions {
            open: open?,
            closed: closed?,
        })
    });
    Some(ext)
}

/// The optional count `k` of `m`, which must lie in `range` (the physics iteration keys).
fn count_in(
    c: &mut Checker,
    m: &Obj,
    p: &str,
    k: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Option<usize> {
    let n = c.opt(m, p, k, Checker::u64v)?;
    if range.contains(&n) {
        usize::try_from(n).ok()
    } else {
        let (lo, hi) = range.into_inner();
        c.err(key(p, k), format!("must be in {lo}..={hi}, found {n}"));
        None
    }
}
