//! Robot descriptions: the shared [`RobotModel`], its URDF and MJCF loaders, kinematics and IK.
//!
//! Everything here is Bevy-free so loaders and kinematics can be unit-tested and reused by the
//! physics builder, the protocols and the tools alike. Both loaders funnel through [`validate`]
//! so that a model that loads is one every consumer can rely on (tree order, limits, mimics).

pub mod hull;
pub mod kinematics;
pub mod mesh;
pub mod mjcf;
pub mod model;
pub mod self_collision;
pub mod urdf;

pub use mesh::{LoadOptions, MeshAsset};
pub use model::*;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use glam::Vec3;

/// Default position gains of the PD motors, acceleration-based (1/s², 1/s): a 50 rad/s natural
/// frequency, critically damped. Being acceleration-based they suit hinges and slides alike and
/// do not need retuning when link masses change.
pub const DEFAULT_KP: f32 = 2500.0;
pub const DEFAULT_KD: f32 = 100.0;

/// Motor force/torque limit when a file gives none (N·m for hinges, N for slides).
pub const DEFAULT_MAX_TORQUE: f32 = 100.0;
pub const DEFAULT_MAX_FORCE: f32 = 100.0;
/// Joint speed limit when a file gives none (MJCF has no velocity limits at all).
pub const DEFAULT_MAX_ANGULAR_VELOCITY: f32 = std::f32::consts::PI;
pub const DEFAULT_MAX_LINEAR_VELOCITY: f32 = 0.5;

/// Default `(kp, kd)` for a joint of `kind`.
pub fn default_gains(_kind: JointKind) -> (f32, f32) {
    (DEFAULT_KP, DEFAULT_KD)
}

/// Default `(max_effort, max_velocity)` for a joint of `kind`.
pub fn default_motor_limits(kind: JointKind) -> (f32, f32) {
    match kind {
        JointKind::Revolute => (DEFAULT_MAX_TORQUE, DEFAULT_MAX_ANGULAR_VELOCITY),
        JointKind::Prismatic => (DEFAULT_MAX_FORCE, DEFAULT_MAX_LINEAR_VELOCITY),
    }
}

/// Parses `xml` whatever its root element, with syntax errors at their line and column.
fn parse_xml_any(xml: &str) -> Result<roxmltree::Document<'_>, RobotError> {
    roxmltree::Document::parse(xml).map_err(|e| {
        let pos = e.pos();
        RobotError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })
}

/// Parses `xml` and checks that its root element is `<expected>`: the first step of both
/// loaders, with syntax errors reported at their line and column.
fn parse_xml<'x>(
    xml: &'x str,
    expected: &'static str,
) -> Result<roxmltree::Document<'x>, RobotError> {
    let doc = parse_xml_any(xml)?;
    let found = doc.root_element().tag_name().name();
    if found != expected {
        return Err(RobotError::WrongRoot {
            expected,
            found: found.to_string(),
        });
    }
    Ok(doc)
}

/// Loads a robot file, choosing the format by extension: `.urdf` is URDF, `.xml` and `.mjcf`
/// are MJCF. Mesh paths resolve against the file's folder (see [`load_robot_with`]).
pub fn load_robot(path: &Path) -> Result<RobotModel, RobotError> {
    load_robot_with(path, &LoadOptions::default())
}

/// [`load_robot`] with `package://` locations ([`LoadOptions`]); meshes are read and the hulls
/// of collision meshes built here, once.
pub fn load_robot_with(path: &Path, options: &LoadOptions) -> Result<RobotModel, RobotError> {
    let format = format_of(path)?;
    let text = std::fs::read_to_string(path).map_err(|source| RobotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    match format {
        Format::Urdf => urdf::parse_urdf_file(&text, Some(path), options),
        // Joint-less bodies move with their parents: fused for simulation (`mjcf::fuse`).
        Format::Mjcf => mjcf::parse_mjcf_file(&text, Some(path), options).map(mjcf::fuse_jointless),
    }
}

/// Parses a robot file's `text`, choosing the format by `path`'s extension (as [`load_robot`]).
/// Nothing is read from disk, so a file with meshes or `<include>`s is refused: use
/// [`load_robot_with`].
pub fn parse_robot(path: &Path, text: &str) -> Result<RobotModel, RobotError> {
    match format_of(path)? {
        Format::Urdf => urdf::parse_urdf(text),
        Format::Mjcf => mjcf::parse_mjcf(text),
    }
}

enum Format {
    Urdf,
    Mjcf,
}

fn format_of(path: &Path) -> Result<Format, RobotError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("urdf") => Ok(Format::Urdf),
        Some("xml" | "mjcf") => Ok(Format::Mjcf),
        _ => Err(RobotError::UnknownFormat {
            path: path.to_path_buf(),
        }),
    }
}

/// Builds the convex hulls of every mesh a collision geom uses, and returns the meshes shared.
/// A part without a hull (flat, or fewer than four points) does not collide, and a note says so.
pub(crate) fn finish_meshes(
    links: &[Link],
    mut table: mesh::MeshTable,
    notes: &mut Vec<String>,
) -> Vec<std::sync::Arc<MeshAsset>> {
    // Per asset, the largest scale a colliding geom gives it (None: no geom collides with it):
    // the hull tolerance is 1 mm in the world, so in the file's units it shrinks with scale.
    let mut colliding: Vec<Option<f32>> = vec![None; table.assets.len()];
    for geom in links.iter().flat_map(|l| &l.collisions) {
        if let Shape::Mesh { mesh, scale, .. } = geom.shape
            && let Some(c) = colliding.get_mut(mesh)
        {
            let s = scale.abs().max_element().max(1e-6);
            *c = Some(c.map_or(s, |c| c.max(s)));
        }
    }
    // Hulls of different files are independent: build them on every core.
    let mut work: Vec<(&mut MeshAsset, mesh::HullLimits)> = table
        .assets
        .iter_mut()
        .zip(colliding)
        .enumerate()
        .filter_map(|(i, (a, c))| {
            let limits = mesh::HullLimits {
                tolerance: hull::HULL_TOLERANCE_M / c?,
                max_vertices: table.max_hull_vertices.get(&i).copied(),
            };
            Some((a, limits))
        })
        .collect();
    let flat = mesh::on_every_core(&mut work, |(a, limits)| {
        let flat = a.build_hulls_within(*limits);
        let scale = hull::HULL_TOLERANCE_M / limits.tolerance;
        let (mut full, mut kept, mut error) = (0, 0, 0.0f32);
        for h in a.parts.iter().filter_map(|p| p.hull.as_ref()) {
            full += h.full_vertices;
            kept += h.points.len();
            error = error.max(h.error * scale);
        }
        let simplified = (kept < full).then(|| {
            format!(
                "{}: convex hulls simplified from {full} to {kept} vertices, at most {:.2} mm from the full hulls{}",
                a.path.display(),
                error * 1000.0,
                limits
                    .max_vertices
                    .map_or(String::new(), |m| format!(" (maxhullvert {m})"))
            )
        });
        (flat, a.parts.len(), a.path.clone(), simplified)
    });
    for (flat, parts, path, simplified) in flat {
        notes.extend(simplified);
        if flat > 0 {
            notes.push(format!(
                "{flat} of {parts} parts of {} have no volume and do not collide",
                path.display()
            ));
        }
    }
    table.assets.into_iter().map(std::sync::Arc::new).collect()
}

/// The mesh shape for asset `mesh` of `table` at per-axis `scale`.
pub(crate) fn mesh_shape(asset: &MeshAsset, mesh: usize, scale: Vec3) -> Shape {
    let (lo, hi) = asset.bounds();
    Shape::Mesh {
        mesh,
        scale,
        half_extents: ((hi - lo) * scale.abs() * 0.5).max(Vec3::splat(1e-4)),
    }
}

/// Everything that can go wrong turning a robot file into a [`RobotModel`].
#[derive(Debug, thiserror::Error)]
pub enum RobotError {
    #[error("cannot read robot file `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unsupported robot file `{}`: the extension must be .urdf, .xml or .mjcf", path.display())]
    UnknownFormat { path: PathBuf },
    #[error("XML syntax error at line {line}, column {column}: {message}")]
    Xml {
        line: u32,
        column: u32,
        message: String,
    },
    /// A structural URDF error reported by urdf-rs (missing element, bad number); it gives no line.
    #[error("malformed URDF: {0}")]
    Urdf(String),
    #[error("expected a <{expected}> root element, found <{found}>")]
    WrongRoot {
        expected: &'static str,
        found: String,
    },
    #[error("{}missing required attribute `{attribute}` on <{element}>", At(*.line))]
    MissingAttribute {
        element: String,
        attribute: String,
        line: Option<u32>,
    },
    #[error("{}invalid value `{value}` for `{attribute}` on <{element}>: {reason}", At(*.line))]
    InvalidValue {
        element: String,
        attribute: String,
        value: String,
        reason: String,
        line: Option<u32>,
    },
    #[error("{}unsupported {what}", At(*.line))]
    Unsupported { what: String, line: Option<u32> },
    #[error("joint `{joint}`: lower limit {lower} is greater than upper limit {upper}")]
    InvalidLimits {
        joint: String,
        lower: f32,
        upper: f32,
    },
    #[error("{referrer} references unknown joint `{joint}`")]
    UnknownJoint { joint: String, referrer: String },
    #[error("{referrer} references unknown {kind} `{name}`")]
    UnknownReference {
        kind: &'static str,
        name: String,
        referrer: String,
    },
    #[error("the robot has no links")]
    NoLinks,
    #[error("duplicate {kind} name `{name}`")]
    DuplicateName { kind: &'static str, name: String },
    #[error("invalid kinematic tree: {0}")]
    InvalidTree(String),
    #[error("invalid mimic of joint `{joint}`: {reason}")]
    InvalidMimic { joint: String, reason: String },
    #[error("cannot read mesh `{}`: {message}", path.display())]
    Mesh { path: PathBuf, message: String },
    #[error("mesh `{uri}` not found{hint}; tried: {}", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    MeshNotFound {
        uri: String,
        tried: Vec<PathBuf>,
        hint: String,
    },
    /// A semantically wrong number that passed parsing: negative mass, zero axis, NaN...
    #[error("{context}: {reason}")]
    Invalid { context: String, reason: String },
}

/// Renders an optional line number as a message prefix.
struct At(Option<u32>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

fn invalid(context: impl Into<String>, reason: impl Into<String>) -> RobotError {
    RobotError::Invalid {
        context: context.into(),
        reason: reason.into(),
    }
}

/// Checks the invariants every consumer of a [`RobotModel`] relies on. Both loaders call it last,
/// so a hand-built model can be checked the same way.
pub fn validate(model: &RobotModel) -> Result<(), RobotError> {
    if model.links.is_empty() {
        return Err(RobotError::NoLinks);
    }
    unique(model.links.iter().map(|l| l.name.as_str()), "link")?;
    unique(model.joints.iter().map(|j| j.name.as_str()), "joint")?;
    unique(
        model
            .joints
            .iter()
            .filter_map(|j| j.actuator.as_ref().map(|a| a.name.as_str())),
        "actuator",
    )?;

    for (i, link) in model.links.iter().enumerate() {
        let ctx = || format!("link `{}`", link.name);
        match (i, link.parent) {
            (0, None) => {}
            (0, Some(_)) => {
                return Err(RobotError::InvalidTree(format!(
                    "root link `{}` has a parent",
                    link.name
                )));
            }
            (_, None) => {
                return Err(RobotError::InvalidTree(format!(
                    "link `{}` is a second root (not connected to `{}`)",
                    link.name, model.links[0].name
                )));
            }
            (_, Some(p)) if p >= i => {
                return Err(RobotError::InvalidTree(format!(
                    "link `{}` comes before its parent",
                    link.name
                )));
            }
            _ => {}
        }
        if i == 0 && link.joint.is_some() {
            return Err(RobotError::InvalidTree(format!(
                "root link `{}` cannot have a joint",
                link.name
            )));
        }
        check_pose(&link.origin, &ctx)?;
        if let Some(j) = link.joint {
            match model.joints.get(j) {
                Some(joint) if joint.link == i => {}
                _ => {
                    return Err(RobotError::InvalidTree(format!(
                        "link `{}` and its joint disagree",
                        link.name
                    )));
                }
            }
        }
        if let Some(inertial) = &link.inertial {
            if !(inertial.mass.is_finite() && inertial.mass > 0.0) {
                return Err(invalid(
                    ctx(),
                    format!("mass must be positive, got {}", inertial.mass),
                ));
            }
            let ok = inertial.com.is_finite()
                && inertial.principal_inertia.is_finite()
                && inertial.principal_inertia.min_element() >= 0.0;
            if !ok {
                return Err(invalid(ctx(), "inertia must be finite and non-negative"));
            }
        }
        for geom in link.collisions.iter().chain(&link.visuals) {
            check_geom(geom, &ctx)?;
            if let Shape::Mesh { mesh, .. } = geom.shape
                && mesh >= model.meshes.len()
            {
                return Err(invalid(ctx(), format!("mesh index {mesh} out of range")));
            }
        }
    }

    for (j, joint) in model.joints.iter().enumerate() {
        let ctx = || format!("joint `{}`", joint.name);
        if model.links.get(joint.link).and_then(|l| l.joint) != Some(j) {
            return Err(RobotError::InvalidTree(format!(
                "joint `{}` and its link disagree",
                joint.name
            )));
        }
        if !(joint.axis.is_finite() && (joint.axis.length() - 1.0).abs() < 1e-3) {
            return Err(invalid(ctx(), "axis must be a unit vector"));
        }
        if !joint.anchor.is_finite() {
            return Err(invalid(ctx(), "anchor must be finite"));
        }
        if let Some((lower, upper)) = joint.limits {
            if !(lower.is_finite() && upper.is_finite()) {
                return Err(invalid(ctx(), "limits must be finite"));
            }
            if lower > upper {
                return Err(RobotError::InvalidLimits {
                    joint: joint.name.clone(),
                    lower,
                    upper,
                });
            }
        }
        for (what, v) in [
            ("max_effort", joint.max_effort),
            ("max_velocity", joint.max_velocity),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(ctx(), format!("{what} must be positive, got {v}")));
            }
        }
        for (what, v) in [
            ("damping", joint.damping),
            ("frictionloss", joint.frictionloss),
            ("kp", joint.kp),
            ("kd", joint.kd),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(
                    ctx(),
                    format!("{what} must be non-negative, got {v}"),
                ));
            }
        }
    }

    for joint in &model.joints {
        if let Some(s) = joint.servo
            && !(s.kp.is_finite()
                && s.kp > 0.0
                && s.kv.is_finite()
                && s.kv >= 0.0
                && s.max_force > 0.0)
        {
            return Err(invalid(
                format!("joint `{}`", joint.name),
                format!("servo gains must be kp > 0, kv ≥ 0 and a positive force range, got {s:?}"),
            ));
        }
    }

    let mut followers = HashSet::new();
    for m in &model.mimics {
        let (Some(joint), Some(leader)) = (model.joints.get(m.joint), model.joints.get(m.leader))
        else {
            return Err(RobotError::InvalidTree(
                "mimic joint index out of range".into(),
            ));
        };
        let err = |reason: &str| RobotError::InvalidMimic {
            joint: joint.name.clone(),
            reason: reason.into(),
        };
        if m.joint == m.leader {
            return Err(err("a joint cannot follow itself"));
        }
        if !(m.multiplier.is_finite() && m.offset.is_finite()) {
            return Err(err("multiplier and offset must be finite"));
        }
        if !followers.insert(m.joint) {
            return Err(err("it follows more than one leader"));
        }
        if model.mimics.iter().any(|o| o.joint == m.leader) {
            return Err(err(&format!(
                "its leader `{}` itself follows another joint (chains are not supported)",
                leader.name
            )));
        }
    }

    if model.ee_link >= model.links.len() {
        return Err(RobotError::InvalidTree(
            "end-effector link index out of range".into(),
        ));
    }
    if !model.ee_offset.is_finite() {
        return Err(invalid("end effector", "offset must be finite"));
    }
    Ok(())
}

fn unique<'a>(names: impl Iterator<Item = &'a str>, kind: &'static str) -> Result<(), RobotError> {
    let mut seen = HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(RobotError::DuplicateName {
                kind,
                name: name.to_string(),
            });
        }
    }
    Ok(())
}

fn check_pose(pose: &Pose, ctx: &dyn Fn() -> String) -> Result<(), RobotError> {
    if pose.translation.is_finite() && pose.rotation.is_finite() && pose.rotation.is_normalized() {
        Ok(())
    } else {
        Err(invalid(ctx(), "pose must be finite with a unit rotation"))
    }
}

fn check_geom(geom: &Geom, ctx: &dyn Fn() -> String) -> Result<(), RobotError> {
    check_pose(&geom.pose, ctx)?;
    let positive = |v: f32| v.is_finite() && v > 0.0;
    let ok = match geom.shape {
        Shape::Box { half_extents } => half_extents.to_array().into_iter().all(positive),
        Shape::Sphere { radius } => positive(radius),
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => positive(radius) && half_length.is_finite() && half_length >= 0.0,
        Shape::Mesh {
            scale,
            half_extents,
            ..
        } => {
            scale.is_finite()
                && scale.abs().min_element() > 0.0
                && half_extents.to_array().into_iter().all(positive)
        }
    };
    if !ok {
        return Err(invalid(ctx(), "geometry sizes must be positive"));
    }
    if geom.friction.is_some_and(|f| !(f.is_finite() && f >= 0.0)) {
        return Err(invalid(ctx(), "friction must be non-negative"));
    }
    if geom.density.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
        return Err(invalid(ctx(), "density must be non-negative"));
    }
    if !geom.rgba.iter().all(|c| c.is_finite()) {
        return Err(invalid(ctx(), "rgba must be finite"));
    }
    Ok(())
}

/// Orders links parents-first with the root at index 0, keeping file order wherever the tree
/// allows, and remaps parents and joints to the new indices. `parents[i]` is link `i`'s parent
/// in the input order. Fails if there is not exactly one root or the links form a cycle.
pub(crate) fn topological_order(
    names: &[String],
    parents: &[Option<usize>],
) -> Result<Vec<usize>, RobotError> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let n = parents.len();
    if n == 0 {
        return Err(RobotError::NoLinks);
    }
    let roots: Vec<usize> = (0..n).filter(|&i| parents[i].is_none()).collect();
    if roots.len() != 1 {
        let names: Vec<&str> = roots.iter().map(|&i| names[i].as_str()).collect();
        return Err(RobotError::InvalidTree(if names.is_empty() {
            "no root link (the links form a cycle)".to_string()
        } else {
            format!(
                "{} root links ({}); exactly one link must have no parent",
                names.len(),
                names.join(", ")
            )
        }));
    }
    let mut children = vec![Vec::new(); n];
    for (i, p) in parents.iter().enumerate() {
        if let Some(p) = *p {
            children[p].push(i);
        }
    }
    // Smallest file index first keeps the output as close to the file as the tree allows.
    let mut ready = BinaryHeap::from([Reverse(roots[0])]);
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        ready.extend(children[i].iter().map(|&c| Reverse(c)));
    }
    if order.len() != n {
        let placed: HashSet<usize> = order.iter().copied().collect();
        let stuck: Vec<&str> = (0..n)
            .filter(|i| !placed.contains(i))
            .map(|i| names[i].as_str())
            .collect();
        return Err(RobotError::InvalidTree(format!(
            "links in a cycle: {}",
            stuck.join(", ")
        )));
    }
    Ok(order)
}

/// Principal inertia of a solid shape of mass `mass` about its centre, in the shape's frame.
/// Capsules are approximated by a cylinder of the capsule's full length, which is plenty for gain
/// scaling and default masses.
pub fn shape_inertia(shape: &Shape, mass: f32) -> Vec3 {
    match *shape {
        Shape::Box { half_extents: h }
        | Shape::Mesh {
            half_extents: h, ..
        } => {
            let s = h * 2.0;
            Vec3::new(
                s.y * s.y + s.z * s.z,
                s.x * s.x + s.z * s.z,
                s.x * s.x + s.y * s.y,
            ) * (mass / 12.0)
        }
        Shape::Sphere { radius } => Vec3::splat(0.4 * mass * radius * radius),
        Shape::Cylinder {
            radius,
            half_length,
        } => cylinder_inertia(mass, radius, 2.0 * half_length),
        Shape::Capsule {
            radius,
            half_length,
        } => cylinder_inertia(mass, radius, 2.0 * (half_length + radius)),
    }
}

fn cylinder_inertia(mass: f32, radius: f32, length: f32) -> Vec3 {
    let side = mass * (3.0 * radius * radius + length * length) / 12.0;
    Vec3::new(side, side, 0.5 * mass * radius * radius)
}

/// Volume of a shape in m³.
pub fn shape_volume(shape: &Shape) -> f32 {
    use std::f32::consts::PI;
    match *shape {
        Shape::Box { half_extents: h } => 8.0 * h.x * h.y * h.z,
        // A mesh's volume is not computed: half its bounding box is a fair guess for robot parts.
        Shape::Mesh {
            half_extents: h, ..
        } => 4.0 * h.x * h.y * h.z,
        Shape::Sphere { radius } => 4.0 / 3.0 * PI * radius.powi(3),
        Shape::Cylinder {
            radius,
            half_length,
        } => PI * radius * radius * 2.0 * half_length,
        Shape::Capsule {
            radius,
            half_length,
        } => PI * radius * radius * (2.0 * half_length + 4.0 / 3.0 * radius),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_robot_picks_loader_by_extension() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/robots");
        let arm = load_robot(&root.join("arm6.xml")).expect("arm6 loads");
        assert_eq!(arm.name, "arm6");
        let g = load_robot(&root.join("gripper4.urdf")).expect("gripper4 loads");
        assert_eq!(g.name, "gripper4");
    }

    #[test]
    fn load_robot_rejects_unknown_extension_and_missing_file() {
        let e = load_robot(Path::new("robot.sdf")).unwrap_err();
        assert!(matches!(e, RobotError::UnknownFormat { .. }));
        assert!(e.to_string().contains("robot.sdf"), "{e}");

        let e = load_robot(Path::new("/nonexistent/dir/arm.urdf")).unwrap_err();
        assert!(matches!(e, RobotError::Io { .. }));
        assert!(e.to_string().contains("/nonexistent/dir/arm.urdf"), "{e}");
    }

    #[test]
    fn topological_order_keeps_file_order_and_rejects_bad_trees() {
        let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        // c's parent is d, which comes later in the file.
        let order = topological_order(&names, &[None, Some(0), Some(3), Some(0)]).unwrap();
        assert_eq!(order, vec![0, 1, 3, 2]);

        let e = topological_order(&names, &[None, None, Some(0), Some(0)]).unwrap_err();
        assert!(e.to_string().contains("2 root links (a, b)"), "{e}");

        let e = topological_order(&names, &[None, Some(2), Some(1), Some(0)]).unwrap_err();
        assert!(e.to_string().contains("links in a cycle: b, c"), "{e}");
    }

    #[test]
    fn validate_reports_no_links() {
        let model = RobotModel {
            name: "empty".into(),
            links: vec![],
            joints: vec![],
            mimics: vec![],
            ee_link: 0,
            ee_offset: Vec3::ZERO,
            sites: vec![],
            meshes: vec![],
            home: None,
            cameras: vec![],
            notes: vec![],
            self_collision: Default::default(),
        };
        let e = validate(&model).unwrap_err();
        assert!(matches!(e, RobotError::NoLinks));
        assert_eq!(e.to_string(), "the robot has no links");
    }

    #[test]
    fn shape_volumes_and_inertia() {
        let b = Shape::Box {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        assert!((shape_volume(&b) - 1.0).abs() < 1e-6);
        assert!(
            (shape_inertia(&b, 6.0) - Vec3::splat(1.0))
                .abs()
                .max_element()
                < 1e-6
        );
        let s = Shape::Sphere { radius: 1.0 };
        assert!((shape_inertia(&s, 1.0).x - 0.4).abs() < 1e-6);
    }
}
