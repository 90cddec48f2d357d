//! URDF → [`RobotModel`]: the ROS robot format, read with urdf-rs and checked with roxmltree.
//!
//! Conventions and rules:
//! - `revolute`, `continuous` and `prismatic` joints become actuated joints **in file order**
//!   (protocols index joints that way); `fixed` joints rigidly attach their child
//!   (`Link::joint = None`); `floating`, `planar` and `spherical` are rejected.
//! - Links are reordered parents-first with the root at index 0, otherwise keeping file order,
//!   so a joint may be listed before the joint of its parent link.
//! - Geometry: box, sphere, cylinder (along Z, full `length`), capsule (along Z, `length` is
//!   the cylindrical part, caps excluded) and `<mesh filename scale>` (STL, OBJ, COLLADA, the
//!   extension in any case; see [`mesh`](super::mesh)). `scale` is three numbers, or one for all
//!   three axes (urdf-rs reads only the first form: a single number is written out before it
//!   parses). Collision meshes collide as the convex hulls of their parts, built once at load;
//!   each file is read once however many geoms use it.
//! - Mesh paths need the robot file's path ([`parse_urdf_file`]; [`parse_urdf`] refuses
//!   meshes). `package://NAME/rest` resolves to, in order: `DIR/rest` for an explicit
//!   `NAME=DIR` of [`LoadOptions::package_paths`]; then, walking up from the URDF's folder, a
//!   folder named NAME (or whose `package.xml` names it), and `NAME/rest` under each folder on
//!   the way. `file://` and absolute paths are taken as they are, anything else is relative to
//!   the URDF's folder. A mesh not found is an error listing every path tried.
//! - Visual colour: the visual's inline `<color>`, else the robot-level `<material>` of that
//!   name, else grey for primitives and white for meshes (the renderer multiplies the geom
//!   colour into the colours a COLLADA/OBJ file gives its parts, so white shows them unchanged).
//!   Collisions get no friction/density: the simulator's defaults apply.
//! - Inertial: mass, the inertial origin's xyz as centre of mass and the diagonal `ixx iyy izz`
//!   as principal moments (off-diagonal terms and the inertial rpy are ignored). A zero mass means
//!   "no inertial". A link without one that a `fixed` joint attaches (a frame such as
//!   `panda_link8` or a tool point) is **fused** into its parent: its geoms move into the
//!   nearest kept ancestor with their poses composed, its children re-parent there with their
//!   origins composed, it leaves `links` and becomes a [`Site`](super::Site) of that ancestor
//!   (so [`RobotModel::frame`] still finds it), and a note lists the fused links. The root is
//!   never fused. A moving link without one keeps it `None` (the simulator derives its mass
//!   from its collision shapes) and a note names it.
//! - Limits: `effort` → max effort, `velocity` → max velocity, `lower/upper` → limits
//!   (`continuous` → unlimited); `<dynamics damping>` → damping. URDF has no gains, so every joint
//!   gets [`default_gains`](super::default_gains).
//! - `<mimic joint multiplier offset>` → [`Mimic`].
//! - Actuators: URDF has none, but a ROS `<transmission>` naming a joint and a
//!   `Position/Velocity/EffortJointInterface` hardware interface sets the joint's actuator kind
//!   (effort → motor), named after the transmission's `<actuator>`. In a file with no
//!   transmission at all, every joint that is not a `<mimic>` follower is a position actuator
//!   named after the joint; otherwise joints without a transmission have no actuator.
//! - End effector: the first link named `tool`, `ee`, `ee_link` or `tcp` (in that priority);
//!   otherwise the last link in parents-first order (the tip of a serial chain), both chosen
//!   before fusing. A fused end-effector link becomes its kept ancestor, with the fused link's
//!   origin in it as `ee_offset`; otherwise the offset is zero.
//!
//! Files: this one reads the document and builds joints and links; `geometry.rs` shapes, meshes
//! and colours; `fuse.rs` the fusing of massless fixed links.

mod fuse;
mod geometry;

use std::collections::HashMap;
use std::path::Path;

use glam::Vec3;

use crate::geometry::Pose;
use crate::robot::defaults::{default_gains, default_motor_limits};
use crate::robot::error::RobotError;
use crate::robot::inertia::{MUJOCO_DENSITY, effective_inertia};
use crate::robot::kinematics::gravity_compensation;
use crate::robot::mesh::LoadOptions;
use crate::robot::mesh_shapes::finish_meshes;
use crate::robot::model::{
    Actuator, ActuatorKind, Geom, Inertial, Joint, JointKind, Link, Mimic, RobotModel,
};
use crate::robot::self_collision::{self, Rule};
use crate::robot::validate::{topological_order, validate};
use crate::robot::xml::parse_xml;
use geometry::{DEFAULT_RGBA, MESH_RGBA, Meshes, expand_uniform_scales, pose, vec3, visual_rgba};

/// Link names that mark the end effector, highest priority first.
const EE_LINK_NAMES: [&str; 4] = ["tool", "ee", "ee_link", "tcp"];

/// Parses URDF text into a validated [`RobotModel`]. Nothing is read from disk, so a mesh
/// geometry is an error: use [`parse_urdf_file`].
pub fn parse_urdf(xml: &str) -> Result<RobotModel, RobotError> {
    parse_urdf_file(xml, None, &LoadOptions::default())
}

/// Parses the URDF text of the file at `path` (`None`: no file, meshes refused), reading the
/// meshes it names, resolved against the file's folder and `options` (see the module doc).
pub fn parse_urdf_file(
    xml: &str,
    path: Option<&Path>,
    options: &LoadOptions,
) -> Result<RobotModel, RobotError> {
    // roxmltree first: it reports syntax errors with a line, which urdf-rs does not, and it sees
    // what urdf-rs drops (missing <limit>, transmissions, element lines).
    let doc = parse_xml(xml, "robot")?;
    let root = doc.root_element();
    let raw = RawInfo::collect(&doc, root)?;
    let expanded = expand_uniform_scales(xml, &doc);
    let robot = urdf_rs::read_from_string(expanded.as_deref().unwrap_or(xml))
        .map_err(|e| RobotError::Urdf(e.to_string()))?;
    build(&robot, &raw, Meshes::new(path, options))
}

/// What we read straight from the XML because urdf-rs does not keep it.
struct RawInfo {
    link_lines: HashMap<String, u32>,
    joint_lines: HashMap<String, u32>,
    joints_with_limit: Vec<String>,
    transmissions: Vec<Transmission>,
}

struct Transmission {
    name: String,
    joint: String,
    actuator: Option<String>,
    kind: ActuatorKind,
}

impl RawInfo {
    fn collect(doc: &roxmltree::Document, root: roxmltree::Node) -> Result<Self, RobotError> {
        let line = |n: roxmltree::Node| doc.text_pos_at(n.range().start).row;
        let mut info = RawInfo {
            link_lines: HashMap::new(),
            joint_lines: HashMap::new(),
            joints_with_limit: Vec::new(),
            transmissions: Vec::new(),
        };
        for node in root.children().filter(|n| n.is_element()) {
            let name = node.attribute("name").unwrap_or_default().to_string();
            match node.tag_name().name() {
                "link" => {
                    info.link_lines.entry(name).or_insert(line(node));
                }
                "joint" => {
                    if node.children().any(|c| c.has_tag_name("limit")) {
                        info.joints_with_limit.push(name.clone());
                    }
                    info.joint_lines.entry(name).or_insert(line(node));
                }
                "transmission" => info
                    .transmissions
                    .push(parse_transmission(node, line(node))?),
                _ => {}
            }
        }
        Ok(info)
    }
}

fn parse_transmission(node: roxmltree::Node, line: u32) -> Result<Transmission, RobotError> {
    let name = node.attribute("name").unwrap_or_default().to_string();
    let joint_node = node
        .children()
        .find(|c| c.has_tag_name("joint"))
        .ok_or_else(|| RobotError::Unsupported {
            what: format!("transmission `{name}` without a <joint>"),
            line: Some(line),
        })?;
    let joint = joint_node
        .attribute("name")
        .ok_or_else(|| RobotError::MissingAttribute {
            element: "joint".into(),
            attribute: "name".into(),
            line: Some(line),
        })?
        .to_string();
    let actuator_node = node.children().find(|c| c.has_tag_name("actuator"));
    let actuator = actuator_node
        .and_then(|a| a.attribute("name"))
        .map(str::to_string);
    // ROS allows the interface under <joint> (current) or under <actuator> (old style).
    let interface = joint_node
        .children()
        .chain(actuator_node.into_iter().flat_map(|a| a.children()))
        .find(|c| c.has_tag_name("hardwareInterface"))
        .and_then(|c| c.text())
        .map(str::trim)
        .unwrap_or_default();
    let short = interface.rsplit('/').next().unwrap_or_default();
    let kind = match short {
        "PositionJointInterface" => ActuatorKind::Position,
        "VelocityJointInterface" => ActuatorKind::Velocity,
        "EffortJointInterface" => ActuatorKind::Motor,
        _ => {
            return Err(RobotError::Unsupported {
                what: format!(
                    "hardware interface `{interface}` in transmission `{name}` (use \
                     Position/Velocity/EffortJointInterface)"
                ),
                line: Some(line),
            });
        }
    };
    Ok(Transmission {
        name,
        joint,
        actuator,
        kind,
    })
}

fn build(
    robot: &urdf_rs::Robot,
    raw: &RawInfo,
    mut meshes: Meshes,
) -> Result<RobotModel, RobotError> {
    if robot.links.is_empty() {
        return Err(RobotError::NoLinks);
    }
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, link) in robot.links.iter().enumerate() {
        if by_name.insert(link.name.as_str(), i).is_some() {
            return Err(RobotError::DuplicateName {
                kind: "link",
                name: link.name.clone(),
            });
        }
    }
    let mut seen_joints = std::collections::HashSet::new();
    for joint in &robot.joints {
        if !seen_joints.insert(joint.name.as_str()) {
            return Err(RobotError::DuplicateName {
                kind: "joint",
                name: joint.name.clone(),
            });
        }
    }
    let joint_line = |name: &str| raw.joint_lines.get(name).copied();
    let link_ref = |name: &str, joint: &str| {
        by_name
            .get(name)
            .copied()
            .ok_or_else(|| RobotError::UnknownReference {
                kind: "link",
                name: name.to_string(),
                referrer: format!("joint `{joint}`"),
            })
    };

    // Parent and connecting URDF joint of each link, in file order.
    let mut parent_of: Vec<Option<usize>> = vec![None; robot.links.len()];
    let mut joint_of: Vec<Option<usize>> = vec![None; robot.links.len()];
    for (ji, joint) in robot.joints.iter().enumerate() {
        let parent = link_ref(&joint.parent.link, &joint.name)?;
        let child = link_ref(&joint.child.link, &joint.name)?;
        if let Some(other) = joint_of[child] {
            return Err(RobotError::InvalidTree(format!(
                "link `{}` is the child of both joint `{}` and joint `{}`",
                joint.child.link, robot.joints[other].name, joint.name
            )));
        }
        if parent == child {
            return Err(RobotError::InvalidTree(format!(
                "joint `{}` connects link `{}` to itself",
                joint.name, joint.child.link
            )));
        }
        parent_of[child] = Some(parent);
        joint_of[child] = Some(ji);
    }
    let names: Vec<String> = robot.links.iter().map(|l| l.name.clone()).collect();
    let order = topological_order(&names, &parent_of)?;
    let mut new_index = vec![0; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }

    // Actuated joints in file order.
    let mut joints = Vec::new();
    let mut joint_index: HashMap<&str, usize> = HashMap::new();
    let mut link_joint: Vec<Option<usize>> = vec![None; order.len()];
    for joint in &robot.joints {
        let kind = match joint.joint_type {
            urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => JointKind::Revolute,
            urdf_rs::JointType::Prismatic => JointKind::Prismatic,
            urdf_rs::JointType::Fixed => continue,
            ref other => {
                return Err(RobotError::Unsupported {
                    what: format!(
                        "joint type `{}` on joint `{}` (only revolute, continuous, prismatic and \
                         fixed)",
                        format!("{other:?}").to_ascii_lowercase(),
                        joint.name
                    ),
                    line: joint_line(&joint.name),
                });
            }
        };
        let limits = if joint.joint_type == urdf_rs::JointType::Continuous {
            None
        } else if raw.joints_with_limit.iter().any(|n| n == &joint.name) {
            Some((joint.limit.lower as f32, joint.limit.upper as f32))
        } else {
            return Err(RobotError::Invalid {
                context: format!("joint `{}`", joint.name),
                reason: "revolute and prismatic joints need a <limit> element".into(),
            });
        };
        let (max_effort, max_velocity) = if joint.joint_type == urdf_rs::JointType::Continuous
            && !raw.joints_with_limit.iter().any(|n| n == &joint.name)
        {
            default_motor_limits(kind)
        } else {
            (joint.limit.effort as f32, joint.limit.velocity as f32)
        };
        let axis = vec3(&joint.axis.xyz);
        if !(axis.is_finite() && axis.length() > 1e-9) {
            return Err(RobotError::Invalid {
                context: format!("joint `{}`", joint.name),
                reason: "axis must be a non-zero vector".into(),
            });
        }
        let child = new_index[by_name[joint.child.link.as_str()]];
        let (kp, kd) = default_gains(kind);
        joint_index.insert(joint.name.as_str(), joints.len());
        link_joint[child] = Some(joints.len());
        joints.push(Joint {
            name: joint.name.clone(),
            kind,
            link: child,
            axis: axis.normalize(),
            anchor: Vec3::ZERO,
            limits,
            max_effort,
            max_velocity,
            damping: joint.dynamics.as_ref().map_or(0.0, |d| d.damping as f32),
            armature: 0.0,
            frictionloss: 0.0,
            servo: None,
            grip: None,
            kp,
            kd,
            actuator: None,
        });
    }

    let mut mimics = Vec::new();
    for joint in &robot.joints {
        let Some(m) = &joint.mimic else { continue };
        let Some(&follower) = joint_index.get(joint.name.as_str()) else {
            return Err(RobotError::InvalidMimic {
                joint: joint.name.clone(),
                reason: "only movable joints can mimic".into(),
            });
        };
        let leader =
            *joint_index
                .get(m.joint.as_str())
                .ok_or_else(|| RobotError::UnknownJoint {
                    joint: m.joint.clone(),
                    referrer: format!("the mimic of joint `{}`", joint.name),
                })?;
        mimics.push(Mimic::linear(
            follower,
            leader,
            m.multiplier.unwrap_or(1.0) as f32,
            m.offset.unwrap_or(0.0) as f32,
        ));
    }

    for t in &raw.transmissions {
        let j = *joint_index
            .get(t.joint.as_str())
            .ok_or_else(|| RobotError::UnknownJoint {
                joint: t.joint.clone(),
                referrer: format!("transmission `{}`", t.name),
            })?;
        if joints[j].actuator.is_some() {
            return Err(RobotError::Unsupported {
                what: format!(
                    "a second transmission (`{}`) on joint `{}`",
                    t.name, t.joint
                ),
                line: None,
            });
        }
        joints[j].actuator = Some(Actuator {
            name: t.actuator.clone().unwrap_or_else(|| t.name.clone()),
            kind: t.kind,
        });
    }
    // Most descriptions ship no transmissions (ros2_control lives elsewhere): then each joint
    // that follows no other is its own position actuator, named after the joint, so a scene
    // names the gripper by its joint (`panda_finger_joint1`).
    if raw.transmissions.is_empty() {
        for (j, joint) in joints.iter_mut().enumerate() {
            if !mimics.iter().any(|m: &Mimic| m.joint == j) {
                joint.actuator = Some(Actuator {
                    name: joint.name.clone(),
                    kind: ActuatorKind::Position,
                });
            }
        }
    }

    let materials: HashMap<&str, &urdf_rs::Material> = robot
        .materials
        .iter()
        .map(|m| (m.name.as_str(), m))
        .collect();
    let mut links = Vec::with_capacity(order.len());
    for (new, &old) in order.iter().enumerate() {
        let src = &robot.links[old];
        let line = raw.link_lines.get(&src.name).copied();
        let origin = match joint_of[old] {
            Some(ji) => pose(&robot.joints[ji].origin),
            None => Pose::IDENTITY,
        };
        let mut collisions = Vec::new();
        for c in &src.collision {
            collisions.push(Geom {
                name: c.name.clone(),
                shape: meshes.shape(&c.geometry, &src.name, line)?,
                pose: pose(&c.origin),
                rgba: DEFAULT_RGBA,
                friction: None,
                density: None,
                contype: 1,
                conaffinity: 1,
            });
        }
        let mut visuals = Vec::new();
        for v in &src.visual {
            let fallback = match v.geometry {
                urdf_rs::Geometry::Mesh { .. } => MESH_RGBA,
                _ => DEFAULT_RGBA,
            };
            visuals.push(Geom {
                name: v.name.clone(),
                shape: meshes.shape(&v.geometry, &src.name, line)?,
                pose: pose(&v.origin),
                rgba: visual_rgba(v.material.as_ref(), &materials, &src.name)?.unwrap_or(fallback),
                friction: None,
                density: None,
                contype: 1,
                conaffinity: 1,
            });
        }
        let i = &src.inertial;
        let inertial = (i.mass.value != 0.0).then(|| Inertial {
            mass: i.mass.value as f32,
            com: vec3(&i.origin.xyz),
            principal_inertia: Vec3::new(
                i.inertia.ixx as f32,
                i.inertia.iyy as f32,
                i.inertia.izz as f32,
            ),
        });
        links.push(Link {
            name: src.name.clone(),
            parent: parent_of[old].map(|p| new_index[p]),
            origin,
            joint: link_joint[new],
            inertial,
            collisions,
            visuals,
        });
    }

    // The end effector is chosen on the file's tree, then follows its link if that is fused.
    let ee = EE_LINK_NAMES
        .iter()
        .find_map(|n| links.iter().position(|l| l.name == *n))
        .unwrap_or(links.len() - 1);
    let mut notes = Vec::new();
    let fused = fuse::fuse_massless(links, &mut joints, ee, &mut notes);
    let meshes = finish_meshes(&fused.links, meshes.table, &mut notes);
    let mut model = RobotModel {
        name: robot.name.clone(),
        links: fused.links,
        joints,
        mimics,
        tendons: Vec::new(),
        ee_link: fused.ee_link,
        ee_offset: fused.ee_offset,
        ee_axis: None,
        sites: fused.sites,
        meshes,
        home: None,
        cameras: Vec::new(),
        notes,
        self_collision: Default::default(),
    };
    stiffen_against_weight(&mut model);
    validate(&model)?;
    // What MuJoCo gives a URDF: every geom on bit 1, no exclusions; adjacent links never touch.
    model.self_collision = self_collision::compute(&model, Rule::Urdf, &[]);
    Ok(model)
}

/// Sag the default PD may show under the robot's own weight, at most (radians or metres).
const HOLD_SAG: f32 = 1e-3;
/// Stiffest default gain (1/s²): 200 rad/s. The motor is an implicit (soft-constraint) spring, so
/// a 240 Hz step keeps it stable; the SO-100's jaw needs more than 100 rad/s to hold.
const MAX_KP: f32 = 40_000.0;

/// URDF gives no gains, and the default PD's stiffness (50 rad/s) lets a light link on a long
/// lever (the SO-101's jaw) sag by several mrad. Each joint's gain is raised, never lowered, to
/// hold the worst gravity load of its subtree (gravity along any base axis, at q = 0) within
/// [`HOLD_SAG`], up to [`MAX_KP`], critically damped.
fn stiffen_against_weight(model: &mut RobotModel) {
    let density = MUJOCO_DENSITY;
    let loads: Vec<Vec<f32>> = [Vec3::X, Vec3::Y, Vec3::Z]
        .into_iter()
        .map(|axis| gravity_compensation(model, &[], axis * 9.81, density))
        .collect();
    for j in 0..model.joints.len() {
        let load = loads.iter().map(|l| l[j].abs()).fold(0.0, f32::max);
        let inertia = effective_inertia(model, j);
        if !(inertia > 1e-9 && load.is_finite()) {
            continue;
        }
        let joint = &mut model.joints[j];
        let needed = (load / (inertia * HOLD_SAG)).min(MAX_KP);
        if needed > joint.kp {
            joint.kp = needed;
            joint.kd = 2.0 * needed.sqrt();
        }
    }
}

#[cfg(test)]
mod tests;
