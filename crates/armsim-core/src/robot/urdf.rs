//! URDF → [`RobotModel`]: the ROS robot format, read with urdf-rs and checked with roxmltree.
//!
//! Conventions and rules:
//! - `revolute`, `continuous` and `prismatic` joints become actuated joints **in file order**
//!   (protocols index joints that way); `fixed` joints rigidly attach their child
//!   (`Link::joint = None`); `floating`, `planar` and `spherical` are rejected.
//! - Links are reordered parents-first with the root at index 0, otherwise keeping file order,
//!   so a joint may be listed before the joint of its parent link.
//! - Geometry: box, sphere, cylinder (along Z, full `length`) and capsule (along Z, `length` is
//!   the cylindrical part, caps excluded). Meshes are rejected, naming the link.
//! - Visual colour: the visual's inline `<color>`, else the robot-level `<material>` of that
//!   name, else grey. Collisions get no friction/density: the simulator's defaults apply.
//! - Inertial: mass, the inertial origin's xyz as centre of mass and the diagonal `ixx iyy izz`
//!   as principal moments (off-diagonal terms and the inertial rpy are ignored). A zero mass means
//!   "no inertial": the simulator derives mass from the collision shapes.
//! - Limits: `effort` → max effort, `velocity` → max velocity, `lower/upper` → limits
//!   (`continuous` → unlimited); `<dynamics damping>` → damping. URDF has no gains, so every joint
//!   gets [`default_gains`](super::default_gains).
//! - `<mimic joint multiplier offset>` → [`Mimic`].
//! - Actuators: URDF has none, but a ROS `<transmission>` naming a joint and a
//!   `Position/Velocity/EffortJointInterface` hardware interface sets the joint's actuator kind
//!   (effort → motor), named after the transmission's `<actuator>`. Joints without a
//!   transmission have no actuator.
//! - End effector: the first link named `tool`, `ee`, `ee_link` or `tcp` (in that priority);
//!   otherwise the last link in parents-first order (the tip of a serial chain). The offset is
//!   always zero: add a fixed `ee` link to place the point elsewhere.

use std::collections::HashMap;

use glam::{EulerRot, Quat, Vec3};

use super::{
    Actuator, ActuatorKind, Geom, Inertial, Joint, JointKind, Link, Mimic, Pose, RobotError,
    RobotModel, Shape, default_gains, topological_order, validate,
};

/// Link names that mark the end effector, highest priority first.
const EE_LINK_NAMES: [&str; 4] = ["tool", "ee", "ee_link", "tcp"];
const DEFAULT_RGBA: [f32; 4] = [0.7, 0.7, 0.7, 1.0];

/// Parses URDF text into a validated [`RobotModel`].
pub fn parse_urdf(xml: &str) -> Result<RobotModel, RobotError> {
    // roxmltree first: it reports syntax errors with a line, which urdf-rs does not, and it sees
    // what urdf-rs drops (missing <limit>, transmissions, element lines).
    let doc = roxmltree::Document::parse(xml).map_err(|e| {
        let pos = e.pos();
        RobotError::Xml {
            line: pos.row,
            column: pos.col,
            message: e.to_string(),
        }
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "robot" {
        return Err(RobotError::WrongRoot {
            expected: "robot",
            found: root.tag_name().name().to_string(),
        });
    }
    let raw = RawInfo::collect(&doc, root)?;
    let robot = urdf_rs::read_from_string(xml).map_err(|e| RobotError::Urdf(e.to_string()))?;
    build(&robot, &raw)
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

fn build(robot: &urdf_rs::Robot, raw: &RawInfo) -> Result<RobotModel, RobotError> {
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
            super::default_motor_limits(kind)
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
        mimics.push(Mimic {
            joint: follower,
            leader,
            multiplier: m.multiplier.unwrap_or(1.0) as f32,
            offset: m.offset.unwrap_or(0.0) as f32,
        });
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
                shape: shape(&c.geometry, &src.name, line)?,
                pose: pose(&c.origin),
                rgba: DEFAULT_RGBA,
                friction: None,
                density: None,
            });
        }
        let mut visuals = Vec::new();
        for v in &src.visual {
            visuals.push(Geom {
                name: v.name.clone(),
                shape: shape(&v.geometry, &src.name, line)?,
                pose: pose(&v.origin),
                rgba: visual_rgba(v.material.as_ref(), &materials, &src.name)?,
                friction: None,
                density: None,
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

    let ee_link = EE_LINK_NAMES
        .iter()
        .find_map(|n| links.iter().position(|l| l.name == *n))
        .unwrap_or(links.len() - 1);
    let model = RobotModel {
        name: robot.name.clone(),
        links,
        joints,
        mimics,
        ee_link,
        ee_offset: Vec3::ZERO,
    };
    validate(&model)?;
    Ok(model)
}

fn vec3(v: &urdf_rs::Vec3) -> Vec3 {
    Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// URDF rpy is fixed-axis roll about X, then pitch about Y, then yaw about Z: R = Rz·Ry·Rx.
fn pose(p: &urdf_rs::Pose) -> Pose {
    let rpy = vec3(&p.rpy);
    Pose::new(
        vec3(&p.xyz),
        Quat::from_euler(EulerRot::ZYX, rpy.z, rpy.y, rpy.x).normalize(),
    )
}

fn shape(g: &urdf_rs::Geometry, link: &str, line: Option<u32>) -> Result<Shape, RobotError> {
    Ok(match g {
        urdf_rs::Geometry::Box { size } => Shape::Box {
            half_extents: vec3(size) * 0.5,
        },
        urdf_rs::Geometry::Sphere { radius } => Shape::Sphere {
            radius: *radius as f32,
        },
        urdf_rs::Geometry::Cylinder { radius, length } => Shape::Cylinder {
            radius: *radius as f32,
            half_length: *length as f32 * 0.5,
        },
        urdf_rs::Geometry::Capsule { radius, length } => Shape::Capsule {
            radius: *radius as f32,
            half_length: *length as f32 * 0.5,
        },
        urdf_rs::Geometry::Mesh { filename, .. } => {
            return Err(RobotError::Unsupported {
                what: format!(
                    "mesh geometry `{filename}` on link `{link}` (only box, sphere, cylinder \
                     and capsule)"
                ),
                line,
            });
        }
    })
}

fn visual_rgba(
    material: Option<&urdf_rs::Material>,
    materials: &HashMap<&str, &urdf_rs::Material>,
    link: &str,
) -> Result<[f32; 4], RobotError> {
    let Some(m) = material else {
        return Ok(DEFAULT_RGBA);
    };
    let color = match (&m.color, m.name.as_str()) {
        (Some(c), _) => Some(c),
        (None, "") => None,
        (None, name) => {
            let named = materials
                .get(name)
                .ok_or_else(|| RobotError::UnknownReference {
                    kind: "material",
                    name: name.to_string(),
                    referrer: format!("a visual of link `{link}`"),
                })?;
            named.color.as_ref()
        }
    };
    Ok(color.map_or(DEFAULT_RGBA, |c| c.rgba.0.map(|v| v as f32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRIPPER4: &str = include_str!("../../../../assets/robots/gripper4.urdf");

    /// A two-link robot with one hinge; `joint_extra` goes inside the joint element and `extra`
    /// at robot level.
    fn one_joint(joint_extra: &str, extra: &str) -> String {
        format!(
            r#"<robot name="t">
                 <link name="base"/>
                 <link name="arm"/>
                 <joint name="j" type="revolute">
                   <parent link="base"/><child link="arm"/>
                   <axis xyz="0 0 1"/>
                   {joint_extra}
                 </joint>
                 {extra}
               </robot>"#
        )
    }

    const LIMIT: &str = r#"<limit lower="-1" upper="1" effort="10" velocity="2"/>"#;

    #[test]
    fn gripper4_joints_in_spec_003_order() {
        let m = parse_urdf(GRIPPER4).expect("gripper4 loads");
        assert_eq!(m.name, "gripper4");
        let names: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "base_swivel",
                "arm_hinge_1",
                "arm_hinge_2",
                "wrist_hinge",
                "finger_0_1",
                "finger_1_1",
                "finger_2_1",
                "finger_0_2",
                "finger_1_2",
                "finger_2_2",
            ]
        );
        for j in &m.joints {
            assert_eq!(j.kind, JointKind::Revolute);
            let (lo, hi) = j.limits.expect("every gripper4 joint is limited");
            assert!(lo >= -std::f32::consts::PI && hi <= std::f32::consts::PI);
            assert_eq!(
                j.actuator.as_ref().map(|a| a.kind),
                Some(ActuatorKind::Velocity)
            );
        }
        // Parents first, root first.
        assert_eq!(m.links[0].name, "base_link");
        for (i, l) in m.links.iter().enumerate().skip(1) {
            assert!(l.parent.unwrap() < i);
        }
        assert_eq!(m.links[m.ee_link].name, "ee");
        // Every moving link has mass.
        for l in &m.links[1..] {
            if l.name != "ee" {
                assert!(l.inertial.is_some(), "{} has no inertial", l.name);
            }
        }
    }

    #[test]
    fn gripper4_reach_fits_a_table() {
        let m = parse_urdf(GRIPPER4).unwrap();
        let tip = super::super::kinematics::ee_position(&m, &[0.0; 10]);
        assert!(tip.z > 0.5 && tip.z < 0.8, "{tip}");
    }

    #[test]
    fn joints_keep_file_order_when_children_come_first() {
        let xml = r#"<robot name="t">
            <link name="c"/><link name="b"/><link name="a"/>
            <joint name="second" type="continuous">
              <parent link="b"/><child link="c"/><origin xyz="0 0 1"/>
            </joint>
            <joint name="first" type="prismatic">
              <parent link="a"/><child link="b"/><axis xyz="0 0 2"/>
              <limit lower="0" upper="0.5" effort="5" velocity="1"/>
              <dynamics damping="0.3"/>
            </joint>
          </robot>"#;
        let m = parse_urdf(xml).unwrap();
        let links: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(links, ["a", "b", "c"]);
        assert_eq!(m.joints[0].name, "second");
        assert_eq!(m.joints[0].link, 2);
        assert_eq!(m.joints[0].limits, None);
        assert_eq!(m.joints[1].kind, JointKind::Prismatic);
        assert_eq!(m.joints[1].axis, Vec3::Z);
        assert_eq!(m.joints[1].damping, 0.3);
        assert_eq!(m.joints[1].max_effort, 5.0);
        assert_eq!(m.links[1].joint, Some(1));
        assert_eq!(m.links[2].origin.translation, Vec3::Z);
        // No tool/ee link: the last link is the end effector.
        assert_eq!(m.ee_link, 2);
    }

    #[test]
    fn geometry_materials_inertial_and_fixed_joints() {
        let xml = r#"<robot name="t">
            <material name="red"><color rgba="1 0 0 1"/></material>
            <link name="base">
              <inertial><origin xyz="0 0 0.1"/><mass value="2"/>
                <inertia ixx="0.1" ixy="0.5" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial>
              <visual><geometry><cylinder radius="0.1" length="0.4"/></geometry>
                <material name="red"/></visual>
              <visual><geometry><sphere radius="0.2"/></geometry>
                <material name="blue"><color rgba="0 0 1 0.5"/></material></visual>
              <collision><origin xyz="1 0 0" rpy="0 0 1.5707963"/>
                <geometry><box size="0.2 0.4 0.6"/></geometry></collision>
              <collision><geometry><capsule radius="0.05" length="0.3"/></geometry></collision>
            </link>
            <link name="tool"/>
            <joint name="fix" type="fixed"><parent link="base"/><child link="tool"/>
              <origin xyz="0 0 0.5"/></joint>
          </robot>"#;
        let m = parse_urdf(xml).unwrap();
        assert!(m.joints.is_empty());
        assert_eq!(m.links[1].joint, None);
        assert_eq!(m.links[1].origin.translation, Vec3::new(0.0, 0.0, 0.5));
        assert_eq!(m.ee_link, 1);
        let base = &m.links[0];
        assert_eq!(
            base.visuals[0].shape,
            Shape::Cylinder {
                radius: 0.1,
                half_length: 0.2
            }
        );
        assert_eq!(base.visuals[0].rgba, [1.0, 0.0, 0.0, 1.0]);
        assert_eq!(base.visuals[1].rgba, [0.0, 0.0, 1.0, 0.5]);
        assert_eq!(
            base.collisions[0].shape,
            Shape::Box {
                half_extents: Vec3::new(0.1, 0.2, 0.3)
            }
        );
        let p = base.collisions[0].pose.transform_point(Vec3::X);
        assert!((p - Vec3::new(1.0, 1.0, 0.0)).length() < 1e-5, "{p}");
        assert_eq!(
            base.collisions[1].shape,
            Shape::Capsule {
                radius: 0.05,
                half_length: 0.15
            }
        );
        let i = base.inertial.unwrap();
        assert_eq!(i.mass, 2.0);
        assert_eq!(i.com, Vec3::new(0.0, 0.0, 0.1));
        assert_eq!(i.principal_inertia, Vec3::new(0.1, 0.2, 0.3));
    }

    #[test]
    fn mimic_and_transmission() {
        let xml = r#"<robot name="t">
            <link name="base"/><link name="a"/><link name="b"/>
            <joint name="lead" type="prismatic"><parent link="base"/><child link="a"/>
              <limit lower="0" upper="0.04" effort="10" velocity="1"/></joint>
            <joint name="follow" type="prismatic"><parent link="base"/><child link="b"/>
              <limit lower="0" upper="0.04" effort="10" velocity="1"/>
              <mimic joint="lead" multiplier="-1" offset="0.01"/></joint>
            <transmission name="t1">
              <joint name="lead"><hardwareInterface>hardware_interface/PositionJointInterface</hardwareInterface></joint>
              <actuator name="grip_motor"/>
            </transmission>
          </robot>"#;
        let m = parse_urdf(xml).unwrap();
        assert_eq!(
            m.mimics,
            vec![Mimic {
                joint: 1,
                leader: 0,
                multiplier: -1.0,
                offset: 0.01
            }]
        );
        assert_eq!(m.actuator_joint("grip_motor"), Some(0));
        assert_eq!(
            m.joints[0].actuator.as_ref().unwrap().kind,
            ActuatorKind::Position
        );
        assert_eq!(
            (m.joints[0].kp, m.joints[0].kd),
            (crate::robot::DEFAULT_KP, crate::robot::DEFAULT_KD)
        );
    }

    #[test]
    fn error_xml_syntax_has_line() {
        let e = parse_urdf("<robot name=\"t\">\n<link name=\"a\">\n</robot>").unwrap_err();
        assert!(matches!(e, RobotError::Xml { line: 3, .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("XML syntax error at line 3"),
            "{e}"
        );
    }

    #[test]
    fn error_wrong_root() {
        let e = parse_urdf("<mujoco/>").unwrap_err();
        assert_eq!(
            e.to_string(),
            "expected a <robot> root element, found <mujoco>"
        );
    }

    #[test]
    fn error_no_links() {
        let e = parse_urdf(r#"<robot name="t"/>"#).unwrap_err();
        assert!(matches!(e, RobotError::NoLinks), "{e:?}");
    }

    #[test]
    fn error_mesh_names_link() {
        let xml = r#"<robot name="t"><link name="shell"><visual><geometry>
            <mesh filename="package://x/shell.stl"/></geometry></visual></link></robot>"#;
        let e = parse_urdf(xml).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("mesh geometry") && msg.contains("link `shell`"),
            "{msg}"
        );
        assert!(msg.starts_with("line 1: "), "{msg}");
    }

    #[test]
    fn error_limits_reversed() {
        let e = parse_urdf(&one_joint(
            r#"<limit lower="1" upper="-1" effort="1" velocity="1"/>"#,
            "",
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "joint `j`: lower limit 1 is greater than upper limit -1"
        );
    }

    #[test]
    fn error_missing_limit() {
        let e = parse_urdf(&one_joint("", "")).unwrap_err();
        assert!(e.to_string().contains("need a <limit>"), "{e}");
    }

    #[test]
    fn error_unknown_mimic_leader() {
        let e =
            parse_urdf(&one_joint(&format!(r#"{LIMIT}<mimic joint="nope"/>"#), "")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the mimic of joint `j` references unknown joint `nope`"
        );
    }

    #[test]
    fn error_unknown_transmission_joint() {
        let e = parse_urdf(&one_joint(
            LIMIT,
            r#"<transmission name="tr"><joint name="ghost">
                 <hardwareInterface>VelocityJointInterface</hardwareInterface></joint>
               </transmission>"#,
        ))
        .unwrap_err();
        assert!(matches!(e, RobotError::UnknownJoint { .. }));
        assert!(e.to_string().contains("transmission `tr`"), "{e}");
    }

    #[test]
    fn error_duplicate_link() {
        let e = parse_urdf(&one_joint(LIMIT, r#"<link name="arm"/>"#)).unwrap_err();
        assert_eq!(e.to_string(), "duplicate link name `arm`");
    }

    #[test]
    fn error_duplicate_joint() {
        let e = parse_urdf(&one_joint(
            LIMIT,
            r#"<link name="c"/><joint name="j" type="continuous">
                 <parent link="arm"/><child link="c"/></joint>"#,
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "duplicate joint name `j`");
    }

    #[test]
    fn error_unknown_link_and_bad_tree() {
        let e = parse_urdf(&one_joint(
            LIMIT,
            r#"<joint name="k" type="fixed"><parent link="arm"/><child link="nowhere"/></joint>"#,
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "joint `k` references unknown link `nowhere`");

        let e = parse_urdf(&one_joint(LIMIT, r#"<link name="island"/>"#)).unwrap_err();
        assert!(matches!(e, RobotError::InvalidTree(_)), "{e:?}");
        assert!(e.to_string().contains("2 root links (base, island)"), "{e}");
    }

    #[test]
    fn error_unsupported_joint_type() {
        let xml = r#"<robot name="t"><link name="a"/><link name="b"/>
            <joint name="float" type="floating"><parent link="a"/><child link="b"/></joint>
          </robot>"#;
        let e = parse_urdf(xml).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 2: unsupported joint type `floating` on joint `float` (only revolute, \
             continuous, prismatic and fixed)"
        );
    }

    #[test]
    fn error_unknown_material() {
        let xml = r#"<robot name="t"><link name="a"><visual><geometry><sphere radius="1"/>
            </geometry><material name="chrome"/></visual></link></robot>"#;
        let e = parse_urdf(xml).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a visual of link `a` references unknown material `chrome`"
        );
    }

    #[test]
    fn error_malformed_number_from_urdf_rs() {
        let e = parse_urdf(&one_joint(
            r#"<limit lower="x" upper="1" effort="1" velocity="1"/>"#,
            "",
        ))
        .unwrap_err();
        assert!(matches!(e, RobotError::Urdf(_)), "{e:?}");
    }

    #[test]
    fn error_zero_axis_and_nonpositive_effort() {
        let e = parse_urdf(
            &one_joint(LIMIT, "").replace(r#"<axis xyz="0 0 1"/>"#, r#"<axis xyz="0 0 0"/>"#),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "joint `j`: axis must be a non-zero vector");

        let e = parse_urdf(&one_joint(
            r#"<limit lower="-1" upper="1" effort="0" velocity="1"/>"#,
            "",
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "joint `j`: max_effort must be positive, got 0"
        );
    }

    #[test]
    fn error_mimic_of_itself_and_chain() {
        let e = parse_urdf(&one_joint(&format!(r#"{LIMIT}<mimic joint="j"/>"#), "")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid mimic of joint `j`: a joint cannot follow itself"
        );

        let xml = r#"<robot name="t">
            <link name="base"/><link name="a"/><link name="b"/><link name="c"/>
            <joint name="ja" type="continuous"><parent link="base"/><child link="a"/></joint>
            <joint name="jb" type="continuous"><parent link="a"/><child link="b"/>
              <mimic joint="ja"/></joint>
            <joint name="jc" type="continuous"><parent link="b"/><child link="c"/>
              <mimic joint="jb"/></joint>
          </robot>"#;
        let e = parse_urdf(xml).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid mimic of joint `jc`: its leader `jb` itself follows another joint (chains \
             are not supported)"
        );
    }
}
