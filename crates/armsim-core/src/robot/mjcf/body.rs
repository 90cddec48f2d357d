//! The MJCF body tree: bodies and their poses (every orientation form), joints, geoms and
//! inertials, each read with its class defaults into links and joints.

use glam::{Mat3, Quat, Vec3};
use roxmltree::Node;

use super::parser::{El, JointExtra, Parser};
use crate::camera::axes::armsim_from_gl;
use crate::camera::spec::{
    CameraMount, CameraSpec, MAX_SIZE as MAX_CAMERA_SIZE, MJCF_DEFAULT_FOVY_DEG,
};
use crate::geometry::Pose;
use crate::robot::defaults::{default_gains, default_motor_limits};
use crate::robot::error::RobotError;
use crate::robot::inertia::shape_volume;
use crate::robot::model::{Geom, Inertial, Joint, JointKind, Link, Shape, Site};

/// Colour of a geom the file gives none for (MuJoCo's grey).
const DEFAULT_RGBA: [f32; 4] = [0.5, 0.5, 0.5, 1.0];

impl<'a, 'input> Parser<'a, 'input> {
    /// Angles in the file's unit → radians.
    pub(super) fn angle(&self, v: f32) -> f32 {
        if self.degrees { v.to_radians() } else { v }
    }

    /// The element's orientation (MuJoCo allows exactly one of the five forms). The element's
    /// own form wins; without one, its class default's (geoms and sites of Menagerie files carry
    /// `quat` in defaults).
    pub(super) fn orientation(&self, el: &El) -> Result<Quat, RobotError> {
        let forms = ["quat", "euler", "axisangle", "xyaxes", "zaxis"];
        let own: Vec<&str> = forms.into_iter().filter(|f| el.own(f).is_some()).collect();
        let given: Vec<&str> = if own.is_empty() {
            forms
                .into_iter()
                .filter(|f| el.defaults.contains_key(*f))
                .collect()
        } else {
            own
        };
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
                let v = el.floats("quat", 4, 4)?.unwrap_or_default();
                let q = Quat::from_xyzw(v[1], v[2], v[3], v[0]);
                if q.length() < 1e-9 {
                    return Err(el.invalid(
                        "quat",
                        el.get("quat").unwrap_or(""),
                        "zero quaternion",
                    ));
                }
                q.normalize()
            }
            Some("euler") => {
                let v = el.floats("euler", 3, 3)?.unwrap_or_default();
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
                let v = el.floats("axisangle", 4, 4)?.unwrap_or_default();
                let axis = Vec3::new(v[0], v[1], v[2]);
                if axis.length() < 1e-9 {
                    let raw = el.get("axisangle").unwrap_or("");
                    return Err(el.invalid("axisangle", raw, "zero axis"));
                }
                Quat::from_axis_angle(axis.normalize(), self.angle(v[3]))
            }
            Some("xyaxes") => {
                let v = el.floats("xyaxes", 6, 6)?.unwrap_or_default();
                let x = Vec3::new(v[0], v[1], v[2]).normalize_or_zero();
                let y = Vec3::new(v[3], v[4], v[5]);
                let y = (y - x * x.dot(y)).normalize_or_zero();
                let z = x.cross(y);
                if z.length() < 0.5 {
                    let raw = el.get("xyaxes").unwrap_or("");
                    return Err(el.invalid("xyaxes", raw, "axes are parallel or zero"));
                }
                Quat::from_mat3(&Mat3::from_cols(x, y, z)).normalize()
            }
            Some(_) => {
                let z = el.vec3("zaxis")?.unwrap_or(Vec3::Z);
                if z.length() < 1e-9 {
                    let raw = el.get("zaxis").unwrap_or("");
                    return Err(el.invalid("zaxis", raw, "zero axis"));
                }
                Quat::from_rotation_arc(Vec3::Z, z.normalize())
            }
        };
        Ok(q)
    }

    /// Position and orientation, from the element or its class defaults (bodies have none).
    pub(super) fn pose(&self, el: &El) -> Result<Pose, RobotError> {
        Ok(Pose::new(
            el.vec3("pos")?.unwrap_or(Vec3::ZERO),
            self.orientation(el)?,
        ))
    }

    pub(super) fn body(
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
                    if let Some(site) = cel.own("name") {
                        let pose = self.pose(&cel)?;
                        self.sites.push(Site {
                            name: site.to_string(),
                            link: index,
                            pose,
                        });
                    }
                }
                "body" => {}
                "camera" => {
                    let cel = self.el(child, &class)?;
                    let pose = self.pose(&cel)?;
                    self.camera(&cel, index, pose)?;
                }
                "light" => {
                    self.ignored.insert(format!("<{tag}>"));
                }
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

    /// A `<camera>` riding on link `link` at `pose` (MuJoCo's frame: looking along −Z, +Y up).
    /// `fovy` is in degrees whatever the compiler's angle unit, as in MuJoCo; `resolution`
    /// gives the image size when it is more than MuJoCo's default of one pixel.
    pub(super) fn camera(&mut self, el: &El, link: usize, pose: Pose) -> Result<(), RobotError> {
        let name = match el.own("name") {
            Some(n) => n.to_string(),
            None => {
                let body = &self.links[link].name;
                let n = self
                    .cameras
                    .iter()
                    .filter(|c| matches!(c.mount, CameraMount::Link { link: l, .. } if l == link))
                    .count();
                format!("{body}_cam{n}")
            }
        };
        if self.cameras.iter().any(|c| c.name == name) {
            self.notes.push(format!(
                "line {}: a second camera named `{name}` is left out",
                el.line
            ));
            return Ok(());
        }
        let fovy = el.f32("fovy")?.unwrap_or(MJCF_DEFAULT_FOVY_DEG);
        if !(fovy > 0.0 && fovy < 180.0) {
            let raw = el.get("fovy").unwrap_or("");
            return Err(el.invalid("fovy", raw, "must lie between 0 and 180 degrees"));
        }
        let mut spec = CameraSpec::new(
            name,
            CameraMount::Link {
                link,
                pose: Pose::new(pose.translation, armsim_from_gl(pose.rotation)),
            },
        );
        spec.fov_deg = fovy;
        if let Some((w, h)) = el.pair("resolution")?
            && w >= 2.0
            && h >= 2.0
        {
            let max = MAX_CAMERA_SIZE as f32;
            spec.width = w.min(max) as u32;
            spec.height = h.min(max) as u32;
        }
        if let Some(mode) = el.get("mode").filter(|m| *m != "fixed") {
            self.notes.push(format!(
                "camera `{}`: mode \"{mode}\" is simulated as \"fixed\"",
                spec.name
            ));
        }
        if el.get("sensorsize").is_some() || el.get("focal").is_some() {
            self.notes.push(format!(
                "camera `{}`: sensorsize/focal ignored, fovy {fovy}° used",
                spec.name
            ));
        }
        self.cameras.push(spec);
        Ok(())
    }

    pub(super) fn joint(&mut self, el: &El, link: usize) -> Result<(), RobotError> {
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
            armature: el.f32("armature")?.unwrap_or(0.0).max(0.0),
            frictionloss: el.f32("frictionloss")?.unwrap_or(0.0).max(0.0),
            servo: None,
            grip: None,
            kp,
            kd,
            actuator: None,
        });
        Ok(())
    }

    pub(super) fn geom(&mut self, el: &El, link: usize) -> Result<(), RobotError> {
        // A geom naming a mesh is a mesh unless it says otherwise.
        let ty = el.get("type").unwrap_or(if el.get("mesh").is_some() {
            "mesh"
        } else {
            "sphere"
        });
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
            "mesh" if fromto.is_none() => {
                let name = el
                    .get("mesh")
                    .ok_or_else(|| el.missing("mesh"))?
                    .to_string();
                self.mesh(&name, el)?
            }
            "box" | "sphere" | "mesh" => {
                return Err(
                    el.unsupported(format!("fromto on a {ty} geom (only capsule and cylinder)"))
                );
            }
            other => {
                return Err(el.unsupported(format!(
                    "geom type `{other}` (only box, sphere, capsule, cylinder and mesh)"
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
        // Sliding friction only: Rapier's contacts have no torsional or rolling friction.
        // `condim` 1 is MuJoCo's frictionless contact; 4 and 6 add what Rapier lacks.
        let mut friction = el.floats("friction", 1, 3)?.map(|v| v[0]);
        match el.f32("condim")?.map(|c| c as i32) {
            None | Some(3) => {}
            Some(1) => friction = Some(0.0),
            Some(4) | Some(6) => {
                self.ignored
                    .insert("torsional and rolling friction (`condim` 4 and 6)".into());
            }
            Some(other) => {
                return Err(el.invalid(
                    "condim",
                    &other.to_string(),
                    "MuJoCo's contact dimensions are 1, 3, 4 or 6",
                ));
            }
        }
        let mut density = el.f32("density")?;
        if let Some(mass) = el.f32("mass")? {
            density = Some(mass / shape_volume(&shape));
        }
        // MuJoCo's contact filter against the world's geoms (the table and the objects, which
        // have contype = conaffinity = 1): a geom touches them when `contype & 1` or
        // `conaffinity & 1`. Visual classes (0/0) and pads parked on another bit do not collide.
        let bits = |name: &str| -> Result<u32, RobotError> {
            Ok(el.f32(name)?.map_or(1, |v| v.max(0.0) as u32))
        };
        let named = |name: &str| self.options.collide_geoms.iter().any(|g| g == name);
        let (mut contype, mut conaffinity) = (bits("contype")?, bits("conaffinity")?);
        let collides = (contype | conaffinity) & 1 != 0 || el.own("name").is_some_and(named);
        // A geom the scene switches on is moved to bit 1, as the SO-101 environment's option
        // does: it also meets the arm's other bit-1 geoms (`self_collision`).
        if el.own("name").is_some_and(named) {
            (contype, conaffinity) = (1, 1);
        }
        let geom = Geom {
            name: el.own("name").map(str::to_string),
            shape,
            pose,
            rgba,
            friction,
            density,
            contype,
            conaffinity,
        };
        let drawn = el.f32("group")?.unwrap_or(0.0) < 3.0;
        let l = &mut self.links[link];
        if collides {
            l.collisions.push(geom.clone());
        }
        // Like MuJoCo's viewer, groups 3 and up (Menagerie's collision classes) are not drawn.
        if drawn {
            l.visuals.push(geom);
        }
        Ok(())
    }

    pub(super) fn inertial(&self, el: &El) -> Result<Inertial, RobotError> {
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
}
