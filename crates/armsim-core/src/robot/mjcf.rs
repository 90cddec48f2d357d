//! MJCF (MuJoCo XML) subset → [`RobotModel`], because scene files name `robot.mjcf_path`.
//!
//! Supported, with MuJoCo's meaning unless noted:
//! - `<mujoco model>`; `<compiler angle="degree|radian" eulerseq autolimits>` (angles default to
//!   **degrees**, as in MuJoCo: `euler`, `axisangle` and hinge `range` are converted).
//! - `<default>` with nested classes (`class`, `childclass`) for every attribute except `name`,
//!   `class`, `pos`, orientations and `fromto`, which are read from the element itself only.
//! - `<asset><material name rgba>` for geom colours.
//! - `<worldbody>`: exactly one top-level `<body>`, the robot's root. Its pose is ignored (the
//!   scene places the robot) and it may not have a joint. Top-level geoms, sites, lights and
//!   cameras (a floor, say) are ignored. A body's `pos` + `quat|euler|axisangle|xyaxes|zaxis` is
//!   its link `origin`; a body without a joint is fixed to its parent. At most one
//!   `<joint type="hinge|slide">` per body; its `pos` is the joint `anchor` in the body frame.
//!   `free`/`ball` joints and `<freejoint>` are rejected. Joint `stiffness`, `ref` and
//!   `frictionloss` are ignored.
//! - `<geom type="box|sphere|capsule|cylinder" size pos orientation fromto rgba material friction
//!   density mass contype conaffinity>`: box size = half extents, capsule/cylinder size = radius,
//!   half-length (or radius + `fromto`). Geoms with `contype="0" conaffinity="0"` are visual only;
//!   the rest both collide and show. `mass` becomes a density.
//! - `<inertial pos mass diaginertia|fullinertia orientation>`: the diagonal in the body's axes is
//!   kept (a rotated or full tensor loses its off-diagonal terms, as URDF's loader does).
//! - `<site name="ee">`: the end effector (its body and position). Without it, the last body in
//!   document order is used with a zero offset.
//! - `<actuator>`: `<position joint kp kv forcerange>`, `<velocity joint kv ctrlrange
//!   forcerange>`, `<motor joint gear ctrlrange forcerange>`, at most one per joint. Unnamed
//!   actuators take their joint's name.
//! - `<equality><joint joint1 joint2 polycoef="c0 c1">` → `joint1 = c0 + c1·joint2` ([`Mimic`]).
//!   A follower without an actuator of its own gets its leader's gains and limits (effort unless
//!   it has an `actuatorfrcrange`, velocity scaled by |c1|): it is driven through the leader.
//!
//! Gains: our motors are acceleration-based (1/s², 1/s) while MuJoCo's `kp`/`kv` are forces per
//! unit error. A given `kp`/`kv` is therefore divided by the joint's effective inertia at q = 0
//! (mass or moment of inertia of the subtree it moves, plus `armature`), so a MuJoCo-tuned gain
//! gives the same stiffness here around the zero pose. A position actuator without `kv` is made
//! critically damped (kd = 2√kp); without `kp` (and for motors and joints without actuators) the
//! defaults [`DEFAULT_KP`](super::DEFAULT_KP)/[`DEFAULT_KD`](super::DEFAULT_KD) apply.
//! Effort limit: `forcerange`, else motor `gear × ctrlrange`, else joint `actuatorfrcrange`, else
//! the default. Velocity limit: a velocity actuator's `ctrlrange`, else the default (MJCF has no
//! joint speed limits).

use std::collections::HashMap;

use glam::{Mat3, Quat, Vec3};
use roxmltree::{Document, Node};

use super::{
    Actuator, ActuatorKind, Geom, Inertial, Joint, JointKind, Link, Mimic, Pose, RobotError,
    RobotModel, Shape, default_gains, default_motor_limits, kinematics, shape_inertia,
    shape_volume, validate,
};

const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];
/// MuJoCo's default geom density (water), used only to estimate inertia for gain scaling.
const MUJOCO_DENSITY: f32 = 1000.0;

/// Parses MJCF text into a validated [`RobotModel`].
pub fn parse_mjcf(xml: &str) -> Result<RobotModel, RobotError> {
    let doc = Document::parse(xml).map_err(|e| {
        let pos = e.pos();
        RobotError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "mujoco" {
        return Err(RobotError::WrongRoot {
            expected: "mujoco",
            found: root.tag_name().name().to_string(),
        });
    }
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
        ee: None,
        unnamed: 0,
    };
    p.classes.insert("main".into(), Defaults::default());
    p.parse(root)
}

/// Default attribute values of one class: element tag → attribute → value.
#[derive(Clone, Default, Debug)]
struct Defaults(HashMap<String, HashMap<String, String>>);

struct Parser<'a, 'input> {
    doc: &'a Document<'input>,
    degrees: bool,
    eulerseq: [u8; 3],
    autolimits: bool,
    classes: HashMap<String, Defaults>,
    materials: HashMap<String, [f32; 4]>,
    links: Vec<Link>,
    joints: Vec<Joint>,
    /// Per joint, what MJCF says that the model does not keep.
    extra: Vec<JointExtra>,
    ee: Option<(usize, Vec3)>,
    unnamed: usize,
}

/// One element with its class defaults resolved.
struct El<'a, 'input> {
    node: Node<'a, 'input>,
    defaults: HashMap<String, String>,
    line: u32,
}

impl<'a, 'input> El<'a, 'input> {
    fn tag(&self) -> &str {
        self.node.tag_name().name()
    }

    fn own(&self, name: &str) -> Option<&'a str> {
        self.node.attribute(name)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.node
            .attribute(name)
            .or_else(|| self.defaults.get(name).map(String::as_str))
    }

    fn invalid(&self, attribute: &str, value: &str, reason: impl Into<String>) -> RobotError {
        RobotError::InvalidValue {
            element: self.tag().to_string(),
            attribute: attribute.to_string(),
            value: value.to_string(),
            reason: reason.into(),
            line: Some(self.line),
        }
    }

    fn missing(&self, attribute: &str) -> RobotError {
        RobotError::MissingAttribute {
            element: self.tag().to_string(),
            attribute: attribute.to_string(),
            line: Some(self.line),
        }
    }

    fn unsupported(&self, what: impl Into<String>) -> RobotError {
        RobotError::Unsupported {
            what: what.into(),
            line: Some(self.line),
        }
    }

    fn parse_floats(&self, name: &str, value: &str) -> Result<Vec<f32>, RobotError> {
        value
            .split_whitespace()
            .map(|s| match s.parse::<f32>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(self.invalid(name, value, format!("`{s}` is not a finite number"))),
            })
            .collect()
    }

    /// Between `min` and `max` numbers from the attribute (own or default).
    fn floats(&self, name: &str, min: usize, max: usize) -> Result<Option<Vec<f32>>, RobotError> {
        self.floats_from(name, self.get(name), min, max)
    }

    fn own_floats(
        &self,
        name: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<Vec<f32>>, RobotError> {
        self.floats_from(name, self.own(name), min, max)
    }

    fn floats_from(
        &self,
        name: &str,
        value: Option<&str>,
        min: usize,
        max: usize,
    ) -> Result<Option<Vec<f32>>, RobotError> {
        let Some(value) = value else { return Ok(None) };
        let v = self.parse_floats(name, value)?;
        if v.len() < min || v.len() > max {
            let want = if min == max {
                format!("expected {min} numbers")
            } else {
                format!("expected {min} to {max} numbers")
            };
            return Err(self.invalid(name, value, want));
        }
        Ok(Some(v))
    }

    fn f32(&self, name: &str) -> Result<Option<f32>, RobotError> {
        Ok(self.floats(name, 1, 1)?.map(|v| v[0]))
    }

    fn vec3(&self, name: &str) -> Result<Option<Vec3>, RobotError> {
        Ok(self.floats(name, 3, 3)?.map(|v| Vec3::from_slice(&v)))
    }

    fn own_vec3(&self, name: &str) -> Result<Option<Vec3>, RobotError> {
        Ok(self.own_floats(name, 3, 3)?.map(|v| Vec3::from_slice(&v)))
    }

    fn pair(&self, name: &str) -> Result<Option<(f32, f32)>, RobotError> {
        Ok(self.floats(name, 2, 2)?.map(|v| (v[0], v[1])))
    }

    /// `true`, `false` or `auto` (→ `None`).
    fn tristate(&self, name: &str) -> Result<Option<bool>, RobotError> {
        match self.get(name) {
            None | Some("auto") => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(v) => Err(self.invalid(name, v, "expected true, false or auto")),
        }
    }
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
                        what: "<include> (put the whole model in one file)".into(),
                        line: Some(self.line(node)),
                    });
                }
                _ => {}
            }
        }

        let mut robot_body = None;
        for wb in root.children().filter(|n| n.has_tag_name("worldbody")) {
            for node in wb.children().filter(Node::is_element) {
                match node.tag_name().name() {
                    "body" if robot_body.is_none() => robot_body = Some(node),
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
                    _ => {}
                }
            }
        }
        let Some(robot_body) = robot_body else {
            return Err(RobotError::NoLinks);
        };
        self.body(robot_body, None, "main")?;

        let mut actuated: Vec<Option<ActuatorSpec>> = vec![None; self.joints.len()];
        let mut mimics = Vec::new();
        for node in root.children().filter(Node::is_element) {
            match node.tag_name().name() {
                "actuator" => self.actuators(node, &mut actuated)?,
                "equality" => self.equalities(node, &mut mimics)?,
                _ => {}
            }
        }

        let (ee_link, ee_offset) = self.ee.unwrap_or((self.links.len() - 1, Vec3::ZERO));
        let mut model = RobotModel {
            name,
            links: std::mem::take(&mut self.links),
            joints: std::mem::take(&mut self.joints),
            mimics,
            ee_link,
            ee_offset,
        };
        apply_actuators(&mut model, &actuated, &self.extra);
        validate(&model)?;
        Ok(model)
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

    /// Angles in the file's unit → radians.
    fn angle(&self, v: f32) -> f32 {
        if self.degrees { v.to_radians() } else { v }
    }

    /// The element's own orientation (MuJoCo allows exactly one of the five forms).
    fn orientation(&self, el: &El) -> Result<Quat, RobotError> {
        let forms = ["quat", "euler", "axisangle", "xyaxes", "zaxis"];
        let given: Vec<&str> = forms.into_iter().filter(|f| el.own(f).is_some()).collect();
        if given.len() > 1 {
            return Err(el.unsupported(format!(
                "more than one orientation ({}) on <{}>",
                given.join(", "),
                el.tag()
            )));
        }
        let q = match given.first().copied() {
            None => Quat::IDENTITY,
            Some("quat") => {
                let v = el.own_floats("quat", 4, 4)?.unwrap_or_default();
                let q = Quat::from_xyzw(v[1], v[2], v[3], v[0]);
                if q.length() < 1e-9 {
                    return Err(el.invalid(
                        "quat",
                        el.own("quat").unwrap_or(""),
                        "zero quaternion",
                    ));
                }
                q.normalize()
            }
            Some("euler") => {
                let v = el.own_floats("euler", 3, 3)?.unwrap_or_default();
                // MuJoCo: a lowercase axis rotates with the frame (post-multiply), an uppercase
                // one is fixed in the parent (pre-multiply).
                let mut q = Quat::IDENTITY;
                for (i, &c) in self.eulerseq.iter().enumerate() {
                    let axis = match c.to_ascii_lowercase() {
                        b'x' => Vec3::X,
                        b'y' => Vec3::Y,
                        _ => Vec3::Z,
                    };
                    let r = Quat::from_axis_angle(axis, self.angle(v[i]));
                    q = if c.is_ascii_lowercase() { q * r } else { r * q };
                }
                q
            }
            Some("axisangle") => {
                let v = el.own_floats("axisangle", 4, 4)?.unwrap_or_default();
                let axis = Vec3::new(v[0], v[1], v[2]);
                if axis.length() < 1e-9 {
                    let raw = el.own("axisangle").unwrap_or("");
                    return Err(el.invalid("axisangle", raw, "zero axis"));
                }
                Quat::from_axis_angle(axis.normalize(), self.angle(v[3]))
            }
            Some("xyaxes") => {
                let v = el.own_floats("xyaxes", 6, 6)?.unwrap_or_default();
                let x = Vec3::new(v[0], v[1], v[2]).normalize_or_zero();
                let y = Vec3::new(v[3], v[4], v[5]);
                let y = (y - x * x.dot(y)).normalize_or_zero();
                let z = x.cross(y);
                if z.length() < 0.5 {
                    let raw = el.own("xyaxes").unwrap_or("");
                    return Err(el.invalid("xyaxes", raw, "axes are parallel or zero"));
                }
                Quat::from_mat3(&Mat3::from_cols(x, y, z)).normalize()
            }
            Some(_) => {
                let z = el.own_vec3("zaxis")?.unwrap_or(Vec3::Z);
                if z.length() < 1e-9 {
                    let raw = el.own("zaxis").unwrap_or("");
                    return Err(el.invalid("zaxis", raw, "zero axis"));
                }
                Quat::from_rotation_arc(Vec3::Z, z.normalize())
            }
        };
        Ok(q)
    }

    fn pose(&self, el: &El) -> Result<Pose, RobotError> {
        Ok(Pose::new(
            el.own_vec3("pos")?.unwrap_or(Vec3::ZERO),
            self.orientation(el)?,
        ))
    }

    fn body(
        &mut self,
        node: Node<'a, 'input>,
        parent: Option<usize>,
        class: &str,
    ) -> Result<(), RobotError> {
        let class = node.attribute("childclass").unwrap_or(class).to_string();
        let el = self.el(node, &class)?;
        let index = self.links.len();
        let name = match el.own("name") {
            Some(n) => n.to_string(),
            None => {
                self.unnamed += 1;
                format!("body_{}", self.unnamed)
            }
        };
        // The scene places the robot, so the root's own pose in the world is dropped.
        let origin = if parent.is_some() {
            self.pose(&el)?
        } else {
            Pose::IDENTITY
        };
        self.links.push(Link {
            name: name.clone(),
            parent,
            origin,
            joint: None,
            inertial: None,
            collisions: Vec::new(),
            visuals: Vec::new(),
        });

        let mut joint_seen = false;
        for child in node.children().filter(Node::is_element) {
            let tag = child.tag_name().name();
            match tag {
                "joint" | "freejoint" => {
                    let cel = self.el(child, &class)?;
                    if tag == "freejoint" {
                        return Err(cel.unsupported(format!(
                            "<freejoint> in body `{name}` (the robot base is fixed)"
                        )));
                    }
                    if parent.is_none() {
                        return Err(cel.unsupported(format!(
                            "a joint on the root body `{name}` (the first body is the fixed \
                             base; wrap it in a jointless base body)"
                        )));
                    }
                    if joint_seen {
                        return Err(cel.unsupported(format!(
                            "a second joint in body `{name}` (one joint per body)"
                        )));
                    }
                    joint_seen = true;
                    self.joint(&cel, index)?;
                }
                "geom" => {
                    let cel = self.el(child, &class)?;
                    self.geom(&cel, index)?;
                }
                "inertial" => {
                    let cel = self.el(child, &class)?;
                    self.links[index].inertial = Some(self.inertial(&cel)?);
                }
                "site" => {
                    let cel = self.el(child, &class)?;
                    if cel.own("name") == Some("ee") {
                        self.ee = Some((index, cel.own_vec3("pos")?.unwrap_or(Vec3::ZERO)));
                    }
                }
                "body" => {}
                "frame" | "replicate" | "attach" | "composite" | "flexcomp" | "plugin" => {
                    return Err(RobotError::Unsupported {
                        what: format!("<{tag}> in body `{name}`"),
                        line: Some(self.line(child)),
                    });
                }
                _ => {}
            }
        }
        for child in node.children().filter(|n| n.has_tag_name("body")) {
            self.body(child, Some(index), &class)?;
        }
        Ok(())
    }

    fn joint(&mut self, el: &El, link: usize) -> Result<(), RobotError> {
        let kind = match el.get("type").unwrap_or("hinge") {
            "hinge" => JointKind::Revolute,
            "slide" => JointKind::Prismatic,
            other => {
                return Err(el.unsupported(format!("joint type `{other}` (only hinge and slide)")));
            }
        };
        let name = match el.own("name") {
            Some(n) => n.to_string(),
            None => format!("{}_joint", self.links[link].name),
        };
        let axis = el.vec3("axis")?.unwrap_or(Vec3::Z);
        if axis.length() < 1e-9 {
            return Err(el.invalid("axis", el.get("axis").unwrap_or(""), "zero axis"));
        }
        let range = el.pair("range")?;
        let limited = match el.tristate("limited")? {
            Some(l) => l,
            None if self.autolimits => range.is_some(),
            None => false,
        };
        let limits = if limited {
            let (lo, hi) = range.ok_or_else(|| el.missing("range"))?;
            Some(match kind {
                JointKind::Revolute => (self.angle(lo), self.angle(hi)),
                JointKind::Prismatic => (lo, hi),
            })
        } else {
            None
        };
        let (mut max_effort, max_velocity) = default_motor_limits(kind);
        let frcrange = el.pair("actuatorfrcrange")?;
        if let Some((lo, hi)) = frcrange {
            max_effort = lo.abs().max(hi.abs());
        }
        let (kp, kd) = default_gains(kind);
        let j = self.joints.len();
        self.links[link].joint = Some(j);
        self.extra.push(JointExtra {
            armature: el.f32("armature")?.unwrap_or(0.0).max(0.0),
            explicit_effort: frcrange.is_some(),
        });
        self.joints.push(Joint {
            name,
            kind,
            link,
            axis: axis.normalize(),
            anchor: el.vec3("pos")?.unwrap_or(Vec3::ZERO),
            limits,
            max_effort,
            max_velocity,
            damping: el.f32("damping")?.unwrap_or(0.0),
            kp,
            kd,
            actuator: None,
        });
        Ok(())
    }

    fn geom(&mut self, el: &El, link: usize) -> Result<(), RobotError> {
        let ty = el.get("type").unwrap_or("sphere");
        let size = el.floats("size", 1, 3)?;
        let size_at = |i: usize| -> Result<f32, RobotError> {
            match &size {
                Some(s) if s.len() > i => Ok(s[i]),
                Some(_) => Err(el.invalid(
                    "size",
                    el.get("size").unwrap_or(""),
                    format!("a {ty} needs {} numbers", i + 1),
                )),
                None => Err(el.missing("size")),
            }
        };
        let fromto = el.own_floats("fromto", 6, 6)?;
        let mut pose = self.pose(el)?;
        let shape = match ty {
            "box" if fromto.is_none() => Shape::Box {
                half_extents: Vec3::new(size_at(0)?, size_at(1)?, size_at(2)?),
            },
            "sphere" if fromto.is_none() => Shape::Sphere {
                radius: size_at(0)?,
            },
            "capsule" | "cylinder" => {
                let radius = size_at(0)?;
                let half_length = match &fromto {
                    Some(v) => {
                        let a = Vec3::new(v[0], v[1], v[2]);
                        let b = Vec3::new(v[3], v[4], v[5]);
                        let d = b - a;
                        if d.length() < 1e-9 {
                            let raw = el.own("fromto").unwrap_or("");
                            return Err(el.invalid("fromto", raw, "the two points coincide"));
                        }
                        pose = Pose::new(
                            (a + b) * 0.5,
                            Quat::from_rotation_arc(Vec3::Z, d.normalize()),
                        );
                        d.length() * 0.5
                    }
                    None => size_at(1)?,
                };
                if ty == "capsule" {
                    Shape::Capsule {
                        radius,
                        half_length,
                    }
                } else {
                    Shape::Cylinder {
                        radius,
                        half_length,
                    }
                }
            }
            "box" | "sphere" => {
                return Err(
                    el.unsupported(format!("fromto on a {ty} geom (only capsule and cylinder)"))
                );
            }
            other => {
                return Err(el.unsupported(format!(
                    "geom type `{other}` (only box, sphere, capsule and cylinder)"
                )));
            }
        };
        // Explicit rgba beats the material, which beats a class default rgba.
        let rgba = if let Some(v) = el.own_floats("rgba", 4, 4)? {
            [v[0], v[1], v[2], v[3]]
        } else if let Some(m) = el.get("material") {
            *self
                .materials
                .get(m)
                .ok_or_else(|| RobotError::UnknownReference {
                    kind: "material",
                    name: m.to_string(),
                    referrer: format!("line {}: <geom>", el.line),
                })?
        } else if let Some(v) = el.floats("rgba", 4, 4)? {
            [v[0], v[1], v[2], v[3]]
        } else {
            DEFAULT_RGBA
        };
        let friction = el.floats("friction", 1, 3)?.map(|v| v[0]);
        let mut density = el.f32("density")?;
        if let Some(mass) = el.f32("mass")? {
            density = Some(mass / shape_volume(&shape));
        }
        let geom = Geom {
            name: el.own("name").map(str::to_string),
            shape,
            pose,
            rgba,
            friction,
            density,
        };
        let contype = el.f32("contype")?.unwrap_or(1.0);
        let conaffinity = el.f32("conaffinity")?.unwrap_or(1.0);
        let l = &mut self.links[link];
        if contype != 0.0 || conaffinity != 0.0 {
            l.collisions.push(geom.clone());
        }
        l.visuals.push(geom);
        Ok(())
    }

    fn inertial(&self, el: &El) -> Result<Inertial, RobotError> {
        let mass = el.f32("mass")?.ok_or_else(|| el.missing("mass"))?;
        let diag = match (el.vec3("diaginertia")?, el.floats("fullinertia", 6, 6)?) {
            (Some(d), _) => d,
            (None, Some(f)) => Vec3::new(f[0], f[1], f[2]),
            (None, None) => return Err(el.missing("diaginertia")),
        };
        let rot = Mat3::from_quat(self.orientation(el)?);
        // Diagonal of R·diag·Rᵀ: the moments about the body axes.
        let full = rot * Mat3::from_diagonal(diag) * rot.transpose();
        Ok(Inertial {
            mass,
            com: el.own_vec3("pos")?.unwrap_or(Vec3::ZERO),
            principal_inertia: Vec3::new(full.x_axis.x, full.y_axis.y, full.z_axis.z),
        })
    }

    fn joint_ref(&self, el: &El, attribute: &str, referrer: &str) -> Result<usize, RobotError> {
        let name = el.own(attribute).ok_or_else(|| el.missing(attribute))?;
        self.joints
            .iter()
            .position(|j| j.name == name)
            .ok_or_else(|| RobotError::UnknownJoint {
                joint: name.to_string(),
                referrer: referrer.to_string(),
            })
    }

    fn actuators(
        &self,
        node: Node<'a, 'input>,
        actuated: &mut [Option<ActuatorSpec>],
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            let kind = match el.tag() {
                "position" => ActuatorKind::Position,
                "velocity" => ActuatorKind::Velocity,
                "motor" => ActuatorKind::Motor,
                other => {
                    return Err(el.unsupported(format!(
                        "actuator <{other}> (only position, velocity and motor)"
                    )));
                }
            };
            if el.own("joint").is_none() {
                for t in ["tendon", "site", "body", "jointinparent", "cranksite"] {
                    if el.own(t).is_some() {
                        return Err(
                            el.unsupported(format!("actuator transmission `{t}` (only joint)"))
                        );
                    }
                }
            }
            let referrer = match el.own("name") {
                Some(n) => format!("actuator `{n}`"),
                None => format!("line {}: <{}>", el.line, el.tag()),
            };
            let j = self.joint_ref(&el, "joint", &referrer)?;
            if let Some(prev) = &actuated[j] {
                return Err(el.unsupported(format!(
                    "a second actuator on joint `{}` (already driven by `{}`)",
                    self.joints[j].name, prev.name
                )));
            }
            let forcerange = match el.tristate("forcelimited")? {
                Some(false) => None,
                _ => el.pair("forcerange")?,
            };
            let ctrlrange = match el.tristate("ctrllimited")? {
                Some(false) => None,
                _ => el.pair("ctrlrange")?,
            };
            let gear = el.floats("gear", 1, 6)?.map_or(1.0, |g| g[0]);
            let max_abs = |(lo, hi): (f32, f32)| lo.abs().max(hi.abs());
            let max_effort = forcerange.map(max_abs).or(match kind {
                ActuatorKind::Motor => ctrlrange.map(|r| max_abs(r) * gear.abs()),
                _ => None,
            });
            let max_velocity = match kind {
                ActuatorKind::Velocity => ctrlrange.map(max_abs),
                _ => None,
            };
            actuated[j] = Some(ActuatorSpec {
                name: el
                    .own("name")
                    .map_or_else(|| self.joints[j].name.clone(), str::to_string),
                kind,
                kp: match kind {
                    ActuatorKind::Position => el.f32("kp")?,
                    _ => None,
                },
                kv: match kind {
                    ActuatorKind::Motor => None,
                    _ => el.f32("kv")?,
                },
                max_effort,
                max_velocity,
            });
        }
        Ok(())
    }

    fn equalities(
        &self,
        node: Node<'a, 'input>,
        mimics: &mut Vec<Mimic>,
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            if el.tag() != "joint" {
                return Err(el.unsupported(format!("equality <{}> (only joint)", el.tag())));
            }
            if el.tristate("active")? == Some(false) {
                continue;
            }
            let referrer = match el.own("name") {
                Some(n) => format!("equality `{n}`"),
                None => format!("line {}: <equality><joint>", el.line),
            };
            let joint = self.joint_ref(&el, "joint1", &referrer)?;
            if el.own("joint2").is_none() {
                return Err(el.unsupported(
                    "a joint equality without joint2 (locking a joint to a constant)",
                ));
            }
            let leader = self.joint_ref(&el, "joint2", &referrer)?;
            // Like MuJoCo, a short polycoef keeps the defaults (0 1 0 0 0) for the rest.
            let mut c = [0.0, 1.0, 0.0, 0.0, 0.0];
            if let Some(given) = el.floats("polycoef", 1, 5)? {
                c[..given.len()].copy_from_slice(&given);
            }
            if c.iter().skip(2).any(|&v| v != 0.0) {
                let raw = el.get("polycoef").unwrap_or("");
                return Err(el.invalid(
                    "polycoef",
                    raw,
                    "only linear couplings (c0 + c1·joint2) are supported",
                ));
            }
            mimics.push(Mimic {
                joint,
                leader,
                offset: c[0],
                multiplier: c[1],
            });
        }
        Ok(())
    }
}

struct JointExtra {
    /// Added to the effective inertia for gain scaling.
    armature: f32,
    /// `actuatorfrcrange` was given.
    explicit_effort: bool,
}

#[derive(Clone, Debug)]
struct ActuatorSpec {
    name: String,
    kind: ActuatorKind,
    kp: Option<f32>,
    kv: Option<f32>,
    max_effort: Option<f32>,
    max_velocity: Option<f32>,
}

fn apply_actuators(
    model: &mut RobotModel,
    actuated: &[Option<ActuatorSpec>],
    extra: &[JointExtra],
) {
    for (j, spec) in actuated.iter().enumerate() {
        let Some(spec) = spec else { continue };
        let inertia = effective_inertia(model, j) + extra[j].armature;
        let scale = |force_gain: f32| (inertia > 1e-9).then(|| force_gain / inertia);
        let joint = &mut model.joints[j];
        if let Some(kp) = spec.kp.and_then(scale) {
            joint.kp = kp;
            joint.kd = 2.0 * kp.sqrt();
        }
        if let Some(kd) = spec.kv.and_then(scale) {
            joint.kd = kd;
        }
        if let Some(e) = spec.max_effort {
            joint.max_effort = e;
        }
        if let Some(v) = spec.max_velocity {
            joint.max_velocity = v;
        }
        joint.actuator = Some(Actuator {
            name: spec.name.clone(),
            kind: spec.kind,
        });
    }
    // A follower without an actuator of its own is driven through its leader's, so it gets the
    // leader's motor: otherwise the two jaws of a gripper close at different speeds and forces
    // and shove the object sideways.
    for m in model.mimics.clone() {
        if m.joint == m.leader || actuated[m.joint].is_some() {
            continue;
        }
        let leader = model.joints[m.leader].clone();
        let follower = &mut model.joints[m.joint];
        follower.kp = leader.kp;
        follower.kd = leader.kd;
        follower.max_velocity = leader.max_velocity * m.multiplier.abs().max(1e-3);
        if !extra[m.joint].explicit_effort {
            follower.max_effort = leader.max_effort;
        }
    }
}

/// Mass (slide) or moment of inertia about the axis (hinge) of everything joint `j` moves, at
/// q = 0. Links without an inertial count their collision geoms at their density (MuJoCo's
/// default when unset).
fn effective_inertia(model: &RobotModel, j: usize) -> f32 {
    let joint = &model.joints[j];
    let poses = kinematics::forward_kinematics(model, &[]);
    let axis = poses[joint.link].rotation * joint.axis;
    let anchor = poses[joint.link].transform_point(joint.anchor);
    let mut in_subtree = vec![false; model.links.len()];
    let mut total = 0.0;
    for (i, link) in model.links.iter().enumerate() {
        in_subtree[i] = i == joint.link || link.parent.is_some_and(|p| in_subtree[p]);
        if !in_subtree[i] {
            continue;
        }
        let pose = poses[i];
        // (mass, centre in base frame, principal moments, their axes in base frame)
        let mut parts: Vec<(f32, Vec3, Vec3, Quat)> = Vec::new();
        match &link.inertial {
            Some(inertial) => parts.push((
                inertial.mass,
                pose.transform_point(inertial.com),
                inertial.principal_inertia,
                pose.rotation,
            )),
            None => {
                for g in &link.collisions {
                    let mass = g.density.unwrap_or(MUJOCO_DENSITY) * shape_volume(&g.shape);
                    let frame = pose.mul(&g.pose);
                    parts.push((
                        mass,
                        frame.translation,
                        shape_inertia(&g.shape, mass),
                        frame.rotation,
                    ));
                }
            }
        }
        for (mass, centre, moments, rot) in parts {
            total += match joint.kind {
                JointKind::Prismatic => mass,
                JointKind::Revolute => {
                    let r = centre - anchor;
                    let perp = r - axis * r.dot(axis);
                    let local = rot.inverse() * axis;
                    mass * perp.length_squared() + (moments * local * local).element_sum()
                }
            };
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::{FRAC_PI_2, PI};

    const ARM6: &str = include_str!("../../../../assets/robots/arm6.xml");

    fn approx(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    /// A base body with one child body holding `joint`, plus `extra` at top level.
    fn one_joint(joint: &str, extra: &str) -> String {
        format!(
            r#"<mujoco model="t">
                 <worldbody>
                   <body name="base">
                     <body name="arm" pos="0 0 1">
                       {joint}
                       <geom type="sphere" size="0.1"/>
                     </body>
                   </body>
                 </worldbody>
                 {extra}
               </mujoco>"#
        )
    }

    #[test]
    fn arm6_loads_with_eight_joints() {
        let m = parse_mjcf(ARM6).expect("arm6 loads");
        assert_eq!(m.name, "arm6");
        let names: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "shoulder_pan",
                "shoulder_lift",
                "elbow",
                "wrist_1",
                "wrist_2",
                "wrist_3",
                "finger_left",
                "finger_right",
            ]
        );
        for j in &m.joints[..6] {
            assert_eq!(j.kind, JointKind::Revolute);
            assert!(j.limits.is_some());
            assert_eq!(j.actuator.as_ref().unwrap().kind, ActuatorKind::Position);
            assert_eq!(
                (j.kp, j.kd),
                (super::super::DEFAULT_KP, super::super::DEFAULT_KD)
            );
        }
        let left = &m.joints[6];
        assert_eq!(left.kind, JointKind::Prismatic);
        assert_eq!(left.limits, Some((0.0, 0.04)));
        assert_eq!(m.actuator_joint("gripper_close"), Some(6));
        assert!(left.kp > 1000.0, "finger kp {}", left.kp);
        let right = &m.joints[7];
        assert!(right.actuator.is_none());
        assert_eq!(
            (right.kp, right.kd, right.max_effort, right.max_velocity),
            (left.kp, left.kd, left.max_effort, left.max_velocity),
            "the mimicking finger moves like the driven one"
        );
        assert_eq!(
            m.mimics,
            vec![Mimic {
                joint: 7,
                leader: 6,
                multiplier: 1.0,
                offset: 0.0
            }]
        );
        assert_eq!(m.links[m.ee_link].name, "wrist_3_link");
        // Finger pads grip.
        let pad = &m.links[m.joints[6].link].collisions[0];
        assert_eq!(pad.friction, Some(1.5));
        // Every moving link has an explicit inertial with realistic mass.
        for l in &m.links {
            let mass = l.inertial.expect("explicit inertial").mass;
            assert!((0.05..=5.0).contains(&mass), "{}: {mass}", l.name);
        }
    }

    #[test]
    fn arm6_jaws_open_wider_than_a_cube() {
        let m = parse_mjcf(ARM6).unwrap();
        let q_open = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04, 0.04];
        let poses = kinematics::forward_kinematics(&m, &q_open);
        let inner = |j: usize, sign: f32| {
            let link = &m.links[m.joints[j].link];
            let g = &link.collisions[0];
            let Shape::Box { half_extents } = g.shape else {
                panic!("finger pad is a box")
            };
            let face = g.pose.translation - sign * Vec3::Y * half_extents.y;
            poses[m.joints[j].link].transform_point(face)
        };
        let gap = inner(6, 1.0).y - inner(7, -1.0).y;
        assert!(gap > 0.075, "open gap {gap}");
        let q_closed = [0.0; 8];
        let poses = kinematics::forward_kinematics(&m, &q_closed);
        let l = poses[m.joints[6].link].translation.y;
        let r = poses[m.joints[7].link].translation.y;
        assert!((l - r).abs() < 0.01, "closed fingers meet: {l} {r}");
    }

    #[test]
    fn degrees_are_the_default_and_radians_switch() {
        let joint = r#"<joint name="j" type="hinge" axis="0 1 0" range="-90 45"/>"#;
        let m = parse_mjcf(&one_joint(joint, "")).unwrap();
        let (lo, hi) = m.joints[0].limits.unwrap();
        assert!(approx(lo, -FRAC_PI_2) && approx(hi, PI / 4.0));

        let m = parse_mjcf(&one_joint(joint, r#"<compiler angle="radian"/>"#)).unwrap();
        assert_eq!(m.joints[0].limits, Some((-90.0, 45.0)));

        // Slides are never converted.
        let slide = r#"<joint name="s" type="slide" range="0 0.5"/>"#;
        let m = parse_mjcf(&one_joint(slide, "")).unwrap();
        assert_eq!(m.joints[0].limits, Some((0.0, 0.5)));
    }

    #[test]
    fn euler_and_quat_orientations() {
        let xml = r#"<mujoco><worldbody><body name="b">
              <body name="e" euler="0 0 90"/>
              <body name="q" quat="0.7071068 0 0 0.7071068"/>
              <body name="a" axisangle="0 0 1 90"/>
              <body name="seq" euler="90 90 0"/>
            </body></worldbody></mujoco>"#;
        let m = parse_mjcf(xml).unwrap();
        for l in &m.links[1..4] {
            let x = l.origin.rotation * Vec3::X;
            assert!((x - Vec3::Y).length() < 1e-5, "{}: {x}", l.name);
        }
        // Intrinsic x then y: R = Rx(90)·Ry(90).
        let expect = Quat::from_rotation_x(FRAC_PI_2) * Quat::from_rotation_y(FRAC_PI_2);
        assert!(m.links[4].origin.rotation.abs_diff_eq(expect, 1e-5));
    }

    #[test]
    fn fromto_capsule_and_defaults() {
        let xml = r#"<mujoco model="t">
            <compiler angle="radian"/>
            <default>
              <joint damping="0.7" axis="0 1 0"/>
              <geom rgba="0 1 0 1" friction="0.9 0.1 0.1"/>
              <default class="pad"><geom friction="2"/></default>
            </default>
            <worldbody><body name="base">
              <body name="arm" pos="0 0 0.1">
                <joint name="j" range="-1 1" pos="0 0 -0.05"/>
                <geom type="capsule" size="0.02" fromto="0 0 0 0.2 0 0"/>
                <geom class="pad" type="box" size="0.01 0.02 0.03" contype="0" conaffinity="0"/>
              </body>
            </body></worldbody>
          </mujoco>"#;
        let m = parse_mjcf(xml).unwrap();
        let j = &m.joints[0];
        assert_eq!(j.axis, Vec3::Y);
        assert_eq!(j.damping, 0.7);
        assert_eq!(j.anchor, Vec3::new(0.0, 0.0, -0.05));
        assert_eq!(j.limits, Some((-1.0, 1.0)));
        let arm = &m.links[1];
        assert_eq!(arm.collisions.len(), 1, "the pad is visual only");
        assert_eq!(arm.visuals.len(), 2);
        let cap = &arm.collisions[0];
        assert_eq!(
            cap.shape,
            Shape::Capsule {
                radius: 0.02,
                half_length: 0.1
            }
        );
        assert!((cap.pose.translation - Vec3::new(0.1, 0.0, 0.0)).length() < 1e-6);
        assert!((cap.pose.rotation * Vec3::Z - Vec3::X).length() < 1e-6);
        assert_eq!(cap.rgba, [0.0, 1.0, 0.0, 1.0]);
        assert_eq!(cap.friction, Some(0.9));
        assert_eq!(arm.visuals[1].friction, Some(2.0));
        assert_eq!(arm.visuals[1].rgba, [0.0, 1.0, 0.0, 1.0]);
        // No ee site: the last body.
        assert_eq!(m.ee_link, 1);
        assert_eq!(m.ee_offset, Vec3::ZERO);
    }

    #[test]
    fn actuators_gains_and_equality() {
        let xml = r#"<mujoco model="t"><compiler angle="radian"/>
            <worldbody><body name="base">
              <body name="a"><joint name="lead" type="slide" axis="0 1 0" range="0 0.04"/>
                <inertial pos="0 0 0" mass="0.5" diaginertia="1e-4 1e-4 1e-4"/>
                <site name="ee" pos="0 0 0.1"/></body>
              <body name="b"><joint name="follow" type="slide" range="0 0.04"/>
                <inertial pos="0 0 0" mass="0.5" diaginertia="1e-4 1e-4 1e-4"/></body>
              <body name="c"><joint name="spin" axis="1 0 0"/>
                <geom type="sphere" size="0.1" pos="0 1 0" mass="2"/></body>
            </body></worldbody>
            <actuator>
              <position name="grip" joint="lead" kp="100" forcerange="-20 20"/>
              <velocity joint="follow" kv="5" ctrlrange="-0.3 0.2"/>
              <motor name="m" joint="spin" gear="10" ctrlrange="-2 1"/>
            </actuator>
            <equality><joint joint1="follow" joint2="lead" polycoef="0.01 -1 0 0 0"/></equality>
          </mujoco>"#;
        let m = parse_mjcf(xml).unwrap();
        let lead = &m.joints[0];
        assert_eq!(lead.actuator.as_ref().unwrap().name, "grip");
        assert!(
            approx(lead.kp, 200.0),
            "kp = 100 N/m / 0.5 kg, got {}",
            lead.kp
        );
        assert!(approx(lead.kd, 2.0 * 200f32.sqrt()));
        assert_eq!(lead.max_effort, 20.0);
        let follow = &m.joints[1];
        assert_eq!(follow.actuator.as_ref().unwrap().name, "follow");
        assert_eq!(
            follow.actuator.as_ref().unwrap().kind,
            ActuatorKind::Velocity
        );
        assert!(approx(follow.kd, 10.0));
        assert_eq!(follow.max_velocity, 0.3);
        let spin = &m.joints[2];
        assert_eq!(spin.limits, None);
        assert_eq!(spin.max_effort, 20.0);
        assert_eq!(spin.actuator.as_ref().unwrap().kind, ActuatorKind::Motor);
        assert_eq!(
            m.mimics,
            vec![Mimic {
                joint: 1,
                leader: 0,
                multiplier: -1.0,
                offset: 0.01
            }]
        );
        assert_eq!(m.ee_link, 1);
        assert_eq!(m.ee_offset, Vec3::new(0.0, 0.0, 0.1));
        // mass="2" on the sphere became a density.
        let g = &m.links[3].collisions[0];
        assert!((g.density.unwrap() * shape_volume(&g.shape) - 2.0).abs() < 1e-4);
    }

    #[test]
    fn error_xml_syntax_has_line() {
        let e = parse_mjcf("<mujoco>\n<worldbody>\n</mujoco>").unwrap_err();
        assert!(matches!(e, RobotError::Xml { line: 3, .. }), "{e:?}");
    }

    #[test]
    fn error_wrong_root_and_no_links() {
        let e = parse_mjcf("<robot/>").unwrap_err();
        assert_eq!(
            e.to_string(),
            "expected a <mujoco> root element, found <robot>"
        );
        let e = parse_mjcf("<mujoco><worldbody/></mujoco>").unwrap_err();
        assert!(matches!(e, RobotError::NoLinks));
    }

    #[test]
    fn error_unsupported_joint_types() {
        let e = parse_mjcf(&one_joint(r#"<joint name="b" type="ball"/>"#, "")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 5: unsupported joint type `ball` (only hinge and slide)"
        );
        let e = parse_mjcf(&one_joint("<freejoint/>", "")).unwrap_err();
        assert!(e.to_string().contains("<freejoint> in body `arm`"), "{e}");
        let e = parse_mjcf(&one_joint(r#"<joint name="a"/><joint name="b"/>"#, "")).unwrap_err();
        assert!(e.to_string().contains("second joint in body `arm`"), "{e}");
    }

    #[test]
    fn error_root_joint_and_second_robot() {
        let xml =
            r#"<mujoco><worldbody><body name="r"><joint name="j"/></body></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert!(e.to_string().contains("joint on the root body `r`"), "{e}");
        let xml = r#"<mujoco><worldbody><body name="r"/><body name="s"/></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert!(e.to_string().contains("second top-level body `s`"), "{e}");
    }

    #[test]
    fn error_unsupported_geoms() {
        let xml = r#"<mujoco><worldbody><body name="r">
            <geom type="mesh" mesh="m"/></body></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: unsupported geom type `mesh` (only box, sphere, capsule and cylinder)"
        );
        let xml = r#"<mujoco><worldbody><body name="r">
            <geom type="box" size="1 1 1" fromto="0 0 0 1 0 0"/></body></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert!(e.to_string().contains("fromto on a box geom"), "{e}");
    }

    #[test]
    fn error_bad_values() {
        let e = parse_mjcf(&one_joint(r#"<joint name="j" axis="0 1"/>"#, "")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 5: invalid value `0 1` for `axis` on <joint>: expected 3 numbers"
        );
        let e = parse_mjcf(&one_joint(r#"<joint name="j" damping="lots"/>"#, "")).unwrap_err();
        assert!(
            e.to_string().contains("`lots` is not a finite number"),
            "{e}"
        );
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<compiler angle="gradian"/>"#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("expected degree or radian"), "{e}");
        let e = parse_mjcf(&one_joint(r#"<joint name="j" limited="true"/>"#, "")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 5: missing required attribute `range` on <joint>"
        );
    }

    #[test]
    fn error_limits_reversed() {
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j" type="slide" range="1 -1"/>"#,
            "",
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "joint `j`: lower limit 1 is greater than upper limit -1"
        );
    }

    #[test]
    fn error_unknown_joints_in_actuator_and_equality() {
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<actuator><position name="p" joint="nope"/></actuator>"#,
        ))
        .unwrap_err();
        assert!(matches!(e, RobotError::UnknownJoint { .. }));
        assert_eq!(
            e.to_string(),
            "actuator `p` references unknown joint `nope`"
        );

        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<equality><joint joint1="j" joint2="ghost"/></equality>"#,
        ))
        .unwrap_err();
        assert!(
            e.to_string().ends_with("references unknown joint `ghost`"),
            "{e}"
        );
    }

    #[test]
    fn error_unsupported_actuators_and_equalities() {
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<actuator><general joint="j"/></actuator>"#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("actuator <general>"), "{e}");
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<actuator><motor joint="j"/><position joint="j"/></actuator>"#,
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("second actuator on joint `j`"),
            "{e}"
        );
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<equality><weld body1="arm"/></equality>"#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("equality <weld>"), "{e}");
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<equality><joint joint1="j" joint2="j" polycoef="0 1 0.5"/></equality>"#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("only linear couplings"), "{e}");
    }

    #[test]
    fn error_duplicate_names_and_unknown_class() {
        let xml = r#"<mujoco><worldbody><body name="r">
            <body name="a"/><body name="a"/></body></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert_eq!(e.to_string(), "duplicate link name `a`");
        let xml = r#"<mujoco><worldbody><body name="r">
            <geom class="nope" size="1"/></body></worldbody></mujoco>"#;
        let e = parse_mjcf(xml).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: <geom> references unknown default class `nope`"
        );
    }

    #[test]
    fn short_polycoef_keeps_mujoco_defaults() {
        let xml = r#"<mujoco><worldbody><body name="r">
              <body name="a"><joint name="a" type="slide"/></body>
              <body name="b"><joint name="b" type="slide"/></body>
            </body></worldbody>
            <equality><joint joint1="b" joint2="a" polycoef="0.02"/></equality></mujoco>"#;
        let m = parse_mjcf(xml).unwrap();
        assert_eq!(m.mimics[0].offset, 0.02);
        assert_eq!(m.mimics[0].multiplier, 1.0);
    }

    #[test]
    fn error_self_mimic() {
        let e = parse_mjcf(&one_joint(
            r#"<joint name="j"/>"#,
            r#"<equality><joint joint1="j" joint2="j"/></equality>"#,
        ))
        .unwrap_err();
        assert!(matches!(e, RobotError::InvalidMimic { .. }), "{e:?}");
    }
}
