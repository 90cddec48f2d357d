//! Unit tests of the URDF loader: links, joints, mimics, limits and the shipped gripper4.

use super::*;

const GRIPPER4: &str = include_str!("../../../../../assets/robots/gripper4.urdf");

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
    let e = parse_urdf(&one_joint(&format!(r#"{LIMIT}<mimic joint="nope"/>"#), "")).unwrap_err();
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
