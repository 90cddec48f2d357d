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
//!
//! Files: this one reads the document, compiler options, defaults and assets; `body.rs` the body
//! tree (bodies, joints, geoms, inertials); `actuators.rs` the actuators and equalities.

mod actuators;
mod body;

use std::collections::HashMap;

use glam::{Mat3, Quat, Vec3};
use roxmltree::{Document, Node};

use super::{
    Actuator, ActuatorKind, Geom, Inertial, Joint, JointKind, Link, Mimic, Pose, RobotError,
    RobotModel, Shape, default_gains, default_motor_limits, kinematics, shape_inertia,
    shape_volume, validate,
};

use actuators::{ActuatorSpec, JointExtra, apply_actuators};

const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];
/// MuJoCo's default geom density (water), used only to estimate inertia for gain scaling.
const MUJOCO_DENSITY: f32 = 1000.0;

/// Parses MJCF text into a validated [`RobotModel`].
pub fn parse_mjcf(xml: &str) -> Result<RobotModel, RobotError> {
    let doc = super::parse_xml(xml, "mujoco")?;
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
}

#[cfg(test)]
mod tests;
