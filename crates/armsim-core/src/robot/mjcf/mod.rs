//! MJCF (MuJoCo XML) subset → [`RobotModel`], because scene files name `robot.mjcf_path`.
//!
//! Supported, with MuJoCo's meaning unless noted:
//! - `<mujoco model>`; `<compiler angle="degree|radian" eulerseq autolimits>` (angles default to
//!   **degrees**, as in MuJoCo: `euler`, `axisangle` and hinge `range` are converted).
//! - `<default>` with nested classes (`class`, `childclass`) for every attribute except `name`,
//!   `class`, `pos`, orientations and `fromto`, which are read from the element itself only.
//! - `<asset><material name rgba>` for geom colours.
//! - `<worldbody>`: exactly one top-level `<body>`, the robot's root. Its pose is ignored (the
//!   scene places the robot) and it may not have a joint. Top-level geoms, sites and lights (a
//!   floor, say) are ignored. A body's `pos` + `quat|euler|axisangle|xyaxes|zaxis` is
//!   its link `origin`; a body without a joint is fixed to its parent. At most one
//!   `<joint type="hinge|slide">` per body; its `pos` is the joint `anchor` in the body frame.
//!   `free`/`ball` joints and `<freejoint>` are rejected. Joint `damping`, `armature` and
//!   `frictionloss` are kept; `stiffness` and `ref` are ignored.
//! - `<geom type="box|sphere|capsule|cylinder" size pos orientation fromto rgba material friction
//!   density mass contype conaffinity>`: box size = half extents, capsule/cylinder size = radius,
//!   half-length (or radius + `fromto`). Geoms with `contype="0" conaffinity="0"` are visual only;
//!   the rest both collide and show. `mass` becomes a density. `contype`/`conaffinity` and
//!   `<contact><exclude body1 body2>` decide which of the robot's own links touch
//!   ([`super::self_collision`]).
//! - `<inertial pos mass diaginertia|fullinertia orientation>`: the diagonal in the body's axes is
//!   kept (a rotated or full tensor loses its off-diagonal terms, as URDF's loader does).
//! - `<camera name pos orientation fovy resolution>` in a body, or at the top level (kept
//!   where it is relative to the root body): a camera riding on that link
//!   ([`RobotModel::cameras`]); unnamed ones are `<body>_camN`. `fovy` is in degrees (default
//!   45), `resolution` is the image size when above 1×1 (else 256×256). Tracking `mode`s are
//!   simulated as `fixed`, and `focal`/`sensorsize` are not read (each noted).
//! - `<site name="ee">`: the end effector (its body and position). Without it, the last body in
//!   document order is used with a zero offset.
//! - `<actuator>`: `<position joint kp kv forcerange>`, `<velocity joint kv ctrlrange
//!   forcerange>`, `<motor joint gear ctrlrange forcerange>`, at most one per joint. Unnamed
//!   actuators take their joint's name.
//! - `<equality><joint joint1 joint2 polycoef="c0 c1">` → `joint1 = c0 + c1·joint2` ([`Mimic`]).
//!   A follower without an actuator of its own gets its leader's gains and limits (effort unless
//!   it has an `actuatorfrcrange`, velocity scaled by |c1|): it is driven through the leader.
//!
//! Gains: a position actuator with a `kp` on a joint keeps the file's force gains and force
//! range as a [`Servo`](super::Servo), which the simulation applies as MuJoCo does
//! (`sim::actuator`). The other motors are acceleration-based (1/s², 1/s) while MuJoCo's
//! `kp`/`kv` are forces per unit error. A given `kp`/`kv` is therefore divided by the joint's effective inertia at q = 0
//! (mass or moment of inertia of the subtree it moves, plus `armature`), so a MuJoCo-tuned gain
//! gives the same stiffness here around the zero pose. A position actuator without `kv` is made
//! critically damped (kd = 2√kp); without `kp` (and for motors and joints without actuators) the
//! defaults [`DEFAULT_KP`](super::DEFAULT_KP)/[`DEFAULT_KD`](super::DEFAULT_KD) apply.
//! Effort limit: `forcerange`, else motor `gear × ctrlrange`, else joint `actuatorfrcrange`, else
//! the default. Velocity limit: a velocity actuator's `ctrlrange`, else the default (MJCF has no
//! joint speed limits).
//!
//! Files: `parser.rs` the parser's state and one element with its class defaults, which the
//! others build on; this one reads the document, compiler options, defaults and assets;
//! `body.rs` the body tree (bodies, joints, geoms, inertials); `actuators.rs` the actuators and
//! equalities; `include.rs` `<include>`; `fuse.rs` the fusing of joint-less bodies.

mod actuators;
mod body;
mod fuse;
mod include;
mod parser;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use glam::Vec3;
use roxmltree::Node;

use crate::robot::error::RobotError;
use crate::robot::mesh::{LoadOptions, MeshTable, resolve_mesh_path};
use crate::robot::mesh_shapes::{finish_meshes, mesh_shape};
use crate::robot::model::{RobotModel, Shape};
use crate::robot::self_collision::{self, Rule};
use crate::robot::validate::validate;
use crate::robot::xml::parse_xml;
use actuators::{ActuatorSpec, apply_actuators, apply_couplings};
pub(crate) use fuse::fuse_jointless;
use parser::{Defaults, El, Parser};

/// Sites that mark a tool point in robot files, in the order they are looked for.
const TOOL_SITES: [&str; 6] = [
    "ee",
    "gripperframe",
    "pinch_site",
    "link_tcp",
    "tcp",
    "attachment_site",
];

/// Parses MJCF text into a validated [`RobotModel`]. Nothing is read from disk: a model with
/// meshes or `<include>`s needs [`parse_mjcf_file`].
pub fn parse_mjcf(xml: &str) -> Result<RobotModel, RobotError> {
    parse_mjcf_file(xml, None, &LoadOptions::default())
}

/// Parses the MJCF text of the file at `path`: `<include>`s, `meshdir`/`assetdir` and mesh
/// files resolve against the file's folder, as MuJoCo does.
pub fn parse_mjcf_file(
    xml: &str,
    path: Option<&Path>,
    options: &LoadOptions,
) -> Result<RobotModel, RobotError> {
    let dir = path.and_then(Path::parent).map(Path::to_path_buf);
    let expanded;
    let xml = match &dir {
        Some(dir) => {
            expanded = include::expand(xml, dir, 0)?;
            expanded.as_str()
        }
        None => xml,
    };
    let doc = parse_xml(xml, "mujoco")?;
    let root = doc.root_element();
    let mut p = Parser {
        doc: &doc,
        degrees: true,
        eulerseq: *b"xyz",
        autolimits: true,
        classes: HashMap::new(),
        materials: HashMap::new(),
        links: Vec::new(),
        joints: Vec::new(),
        extra: Vec::new(),
        unnamed: 0,
        dir,
        meshdir: None,
        options,
        mesh_files: HashMap::new(),
        hull_caps: HashMap::new(),
        meshes: MeshTable::default(),
        sites: Vec::new(),
        cameras: Vec::new(),
        tendons: HashMap::new(),
        tendon_servos: Vec::new(),
        couplings: Vec::new(),
        ignored: BTreeSet::new(),
        notes: Vec::new(),
        excludes: Vec::new(),
    };
    p.classes.insert("main".into(), Defaults::default());
    p.parse(root)
}

impl<'a, 'input> Parser<'a, 'input> {
    fn line(&self, node: Node) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    /// Wraps `node` with the defaults of `class` (its own `class` attribute wins).
    fn el(&self, node: Node<'a, 'input>, class: &str) -> Result<El<'a, 'input>, RobotError> {
        let line = self.line(node);
        let class = node.attribute("class").unwrap_or(class);
        let defaults = self
            .classes
            .get(class)
            .ok_or_else(|| RobotError::UnknownReference {
                kind: "default class",
                name: class.to_string(),
                referrer: format!("line {line}: <{}>", node.tag_name().name()),
            })?;
        Ok(El {
            node,
            defaults: defaults
                .0
                .get(node.tag_name().name())
                .cloned()
                .unwrap_or_default(),
            line,
        })
    }

    fn parse(&mut self, root: Node<'a, 'input>) -> Result<RobotModel, RobotError> {
        let name = root.attribute("model").unwrap_or("mjcf").to_string();
        // Compiler settings and defaults change how everything else reads, so they go first.
        for node in root.children().filter(Node::is_element) {
            match node.tag_name().name() {
                "compiler" => self.compiler(node)?,
                "default" => self.defaults(node, "main")?,
                "asset" => self.assets(node)?,
                "include" => {
                    return Err(RobotError::Unsupported {
                        what: "<include> in MJCF text without a file (load the file itself)".into(),
                        line: Some(self.line(node)),
                    });
                }
                // Read below, in their own passes.
                "keyframe" | "contact" | "tendon" | "equality" | "actuator" | "worldbody" => {}
                // `<option>`, `<visual>`, `<sensor>`, `<statistic>`, …: read, not simulated.
                other => {
                    self.ignored.insert(format!("<{other}>"));
                }
            }
        }

        let mut robot_body = None;
        let mut world_cameras = Vec::new();
        for wb in root.children().filter(|n| n.has_tag_name("worldbody")) {
            for node in wb.children().filter(Node::is_element) {
                match node.tag_name().name() {
                    "body" if robot_body.is_none() => robot_body = Some(node),
                    "camera" => world_cameras.push(node),
                    "body" => {
                        return Err(RobotError::Unsupported {
                            what: format!(
                                "a second top-level body `{}` (only one robot per file)",
                                node.attribute("name").unwrap_or("?")
                            ),
                            line: Some(self.line(node)),
                        });
                    }
                    "frame" | "replicate" | "attach" | "composite" | "flexcomp" => {
                        return Err(RobotError::Unsupported {
                            what: format!("<{}> in <worldbody>", node.tag_name().name()),
                            line: Some(self.line(node)),
                        });
                    }
                    other => {
                        self.ignored.insert(format!("<{other}> in <worldbody>"));
                    }
                }
            }
        }
        let Some(robot_body) = robot_body else {
            return Err(RobotError::NoLinks);
        };
        self.preload_meshes();
        self.body(robot_body, None, "main")?;
        // A camera of the file's world keeps its place relative to the robot's root, which the
        // scene puts at its base pose.
        let root_pose = self.pose(&self.el(robot_body, "main")?)?;
        for node in world_cameras {
            let el = self.el(node, "main")?;
            let pose = root_pose.inverse().mul(&self.pose(&el)?);
            self.camera(&el, 0, pose)?;
        }

        let mut actuated: Vec<Option<ActuatorSpec>> = vec![None; self.joints.len()];
        let mut mimics = Vec::new();
        // Tendons before actuators (an actuator may drive one), equalities before actuators
        // (a tendon's actuator drives the joint the others follow).
        for tag in ["tendon", "equality", "actuator", "contact", "keyframe"] {
            for node in root.children().filter(|n| n.has_tag_name(tag)) {
                match tag {
                    "tendon" => self.tendons(node)?,
                    "equality" => self.equalities(node, &mut mimics)?,
                    "actuator" => self.actuators(node, &mut actuated, &mut mimics)?,
                    "contact" => self.contacts(node)?,
                    _ => {}
                }
            }
        }
        let home = self.keyframe(root)?;

        let (ee_link, ee_offset) = self.default_tool();
        let links = std::mem::take(&mut self.links);
        let mut notes = std::mem::take(&mut self.notes);
        let meshes = finish_meshes(&links, std::mem::take(&mut self.meshes), &mut notes);
        if !self.ignored.is_empty() {
            let list: Vec<&str> = self.ignored.iter().map(String::as_str).collect();
            notes.push(format!("ignored (not simulated): {}", list.join(", ")));
        }
        let mut model = RobotModel {
            name,
            links,
            joints: std::mem::take(&mut self.joints),
            mimics,
            tendons: std::mem::take(&mut self.tendon_servos),
            ee_link,
            ee_offset,
            ee_axis: None,
            sites: std::mem::take(&mut self.sites),
            meshes,
            home,
            cameras: std::mem::take(&mut self.cameras),
            notes,
            self_collision: Default::default(),
        };
        apply_actuators(&mut model, &actuated, &self.extra);
        apply_couplings(&mut model, &self.couplings);
        validate(&model)?;
        model.self_collision = self_collision::compute(&model, Rule::Mjcf, &self.excludes);
        Ok(model)
    }

    /// The tool point when the file has no `ee` site: a site that robot files use for it
    /// (`gripperframe` on the SO-101, `pinch_site` on the Gen3, `link_tcp` on the xArm7,
    /// `attachment_site` on arms without a hand), else the Panda's `hand` body 0.1034 m along
    /// its Z (Franka's flange-to-fingertip distance), else the last body.
    fn default_tool(&self) -> (usize, Vec3) {
        for name in TOOL_SITES {
            if let Some(site) = self.sites.iter().find(|s| s.name == name) {
                return (site.link, site.pose.translation);
            }
        }
        if let Some(hand) = self.links.iter().position(|l| l.name == "hand") {
            return (hand, Vec3::new(0.0, 0.0, 0.1034));
        }
        (self.links.len() - 1, Vec3::ZERO)
    }

    fn compiler(&mut self, node: Node<'a, 'input>) -> Result<(), RobotError> {
        let el = self.el(node, "main")?;
        if let Some(a) = el.own("angle") {
            self.degrees = match a {
                "degree" => true,
                "radian" => false,
                _ => return Err(el.invalid("angle", a, "expected degree or radian")),
            };
        }
        if let Some(seq) = el.own("eulerseq") {
            let ok = seq.len() == 3 && seq.bytes().all(|c| b"xyzXYZ".contains(&c));
            if !ok {
                return Err(el.invalid("eulerseq", seq, "expected three of x, y, z, X, Y, Z"));
            }
            self.eulerseq.copy_from_slice(seq.as_bytes());
        }
        // `meshdir` wins over `assetdir` for meshes, as in MuJoCo; both are relative to the file.
        if let Some(d) = el.own("meshdir").or_else(|| el.own("assetdir")) {
            self.meshdir = Some(PathBuf::from(d));
        }
        if let Some(v) = el.own("autolimits") {
            self.autolimits = match v {
                "true" => true,
                "false" => false,
                _ => return Err(el.invalid("autolimits", v, "expected true or false")),
            };
        }
        Ok(())
    }

    /// Reads a `<default>` element whose parent class is `parent`, recursively.
    fn defaults(&mut self, node: Node<'a, 'input>, parent: &str) -> Result<(), RobotError> {
        let class = node.attribute("class").unwrap_or("main").to_string();
        let mut d = if class == "main" {
            self.classes.get("main").cloned().unwrap_or_default()
        } else {
            self.classes.get(parent).cloned().unwrap_or_default()
        };
        for child in node.children().filter(Node::is_element) {
            if child.has_tag_name("default") {
                continue;
            }
            let attrs = d.0.entry(child.tag_name().name().to_string()).or_default();
            for a in child.attributes() {
                attrs.insert(a.name().to_string(), a.value().to_string());
            }
        }
        self.classes.insert(class.clone(), d);
        for child in node.children().filter(|n| n.has_tag_name("default")) {
            self.defaults(child, &class)?;
        }
        Ok(())
    }

    fn assets(&mut self, node: Node<'a, 'input>) -> Result<(), RobotError> {
        for m in node.children().filter(|n| n.has_tag_name("mesh")) {
            let el = self.el(m, "main")?;
            let file = el.own("file").ok_or_else(|| el.missing("file"))?;
            // MuJoCo names an unnamed mesh after its file's stem.
            let name = match el.own("name") {
                Some(n) => n.to_string(),
                None => Path::new(file)
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or(file)
                    .to_string(),
            };
            let scale = el.vec3("scale")?.unwrap_or(Vec3::ONE);
            // MuJoCo: -1 (the default) leaves the hull whole; otherwise at least 4 vertices.
            if let Some(v) = el.get("maxhullvert") {
                match v.trim().parse::<i64>() {
                    Ok(-1) => {}
                    Ok(n) if n >= 4 => {
                        self.hull_caps.insert(name.clone(), n as usize);
                    }
                    _ => return Err(el.invalid("maxhullvert", v, "expected -1 or at least 4")),
                }
            }
            self.mesh_files.insert(name, (file.to_string(), scale));
        }
        for t in node
            .children()
            .filter(|n| n.is_element() && !n.has_tag_name("mesh") && !n.has_tag_name("material"))
        {
            self.ignored
                .insert(format!("<asset><{}>", t.tag_name().name()));
        }
        for m in node.children().filter(|n| n.has_tag_name("material")) {
            let el = self.el(m, "main")?;
            let name = el.own("name").ok_or_else(|| el.missing("name"))?;
            let rgba = match el.floats("rgba", 4, 4)? {
                Some(v) => [v[0], v[1], v[2], v[3]],
                None => [1.0; 4],
            };
            self.materials.insert(name.to_string(), rgba);
        }
        Ok(())
    }

    /// Reads every mesh file the assets name, in parallel, before the bodies use them.
    fn preload_meshes(&mut self) {
        let Some(dir) = &self.dir else { return };
        let base = match &self.meshdir {
            Some(m) => dir.join(m),
            None => dir.clone(),
        };
        let paths: Vec<PathBuf> = self
            .mesh_files
            .values()
            .filter_map(|(file, _)| resolve_mesh_path(file, &base, None, self.options).ok())
            .collect();
        self.meshes.preload(&paths);
    }

    /// The mesh asset called `name`, read (once per file) from where the file says.
    fn mesh(&mut self, name: &str, el: &El) -> Result<Shape, RobotError> {
        let (file, scale) =
            self.mesh_files
                .get(name)
                .cloned()
                .ok_or_else(|| RobotError::UnknownReference {
                    kind: "mesh",
                    name: name.to_string(),
                    referrer: format!("line {}: <geom>", el.line),
                })?;
        let Some(dir) = &self.dir else {
            return Err(el.unsupported(format!(
                "mesh `{name}` in MJCF text without a file (load the file so `{file}` can be found)"
            )));
        };
        let base = match &self.meshdir {
            Some(m) => dir.join(m),
            None => dir.clone(),
        };
        let path = resolve_mesh_path(&file, &base, None, self.options)?;
        let index = self.meshes.get_or_load(&path)?;
        if let Some(&cap) = self.hull_caps.get(name) {
            self.meshes.cap_hull(index, cap);
        }
        Ok(mesh_shape(&self.meshes.assets[index], index, scale))
    }

    /// `<contact><exclude body1 body2>`: link pairs that never touch (`self_collision`). A
    /// body merged into another link is found by the site that keeps its name.
    fn contacts(&mut self, node: Node<'a, 'input>) -> Result<(), RobotError> {
        for c in node.children().filter(Node::is_element) {
            if !c.has_tag_name("exclude") {
                self.ignored
                    .insert(format!("<contact><{}>", c.tag_name().name()));
                continue;
            }
            let el = self.el(c, "main")?;
            let link = |attribute: &str| -> Result<usize, RobotError> {
                let body = el.own(attribute).ok_or_else(|| el.missing(attribute))?;
                self.links
                    .iter()
                    .position(|l| l.name == body)
                    .or_else(|| self.sites.iter().find(|s| s.name == body).map(|s| s.link))
                    .ok_or_else(|| RobotError::UnknownReference {
                        kind: "body",
                        name: body.to_string(),
                        referrer: format!("line {}: <exclude>", el.line),
                    })
            };
            let pair = (link("body1")?, link("body2")?);
            self.excludes.push(pair);
        }
        Ok(())
    }

    /// The first `<keyframe><key qpos>`: the file's home pose, one value per joint.
    fn keyframe(&mut self, root: Node<'a, 'input>) -> Result<Option<Vec<f32>>, RobotError> {
        let Some(key) = root
            .children()
            .filter(|n| n.has_tag_name("keyframe"))
            .flat_map(|k| k.children())
            .find(|n| n.has_tag_name("key"))
        else {
            return Ok(None);
        };
        let el = self.el(key, "main")?;
        let Some(qpos) = el.floats("qpos", 1, usize::MAX)? else {
            return Ok(None);
        };
        if qpos.len() != self.joints.len() {
            self.notes.push(format!(
                "keyframe `{}` has {} qpos values for {} joints: not used as the home pose",
                el.own("name").unwrap_or("0"),
                qpos.len(),
                self.joints.len()
            ));
            return Ok(None);
        }
        Ok(Some(qpos))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hulls;
