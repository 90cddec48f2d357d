//! Unit tests of the URDF loader: links, joints, mimics, limits and the shipped gripper4.

use super::*;
use crate::robot::test_support::{assert_joint_names, mimic};

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

/// The error loading [`one_joint`]`(joint_extra, extra)` fails with.
fn one_joint_error(joint_extra: &str, extra: &str) -> RobotError {
    parse_urdf(&one_joint(joint_extra, extra)).unwrap_err()
}

const LIMIT: &str = r#"<limit lower="-1" upper="1" effort="10" velocity="2"/>"#;

#[test]
fn gripper4_joints_in_spec_003_order() {
    let m = parse_urdf(GRIPPER4).expect("gripper4 loads");
    assert_joint_names(
        &m,
        "gripper4",
        &[
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
        ],
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
    // The massless `ee` link is fused into the palm: the tool point sits 0.12 m along its +Z.
    assert_eq!(m.links.len(), 11);
    assert!(m.link_index("ee").is_none());
    assert_eq!(m.links[m.ee_link].name, "palm");
    assert_eq!(m.ee_offset, Vec3::new(0.0, 0.0, 0.12));
    let (link, pose) = m.frame("ee").expect("the fused link is a site");
    assert_eq!((link, pose.translation), (m.ee_link, m.ee_offset));
    assert!(
        m.notes.iter().any(|n| n.contains("ee→palm")),
        "{:?}",
        m.notes
    );
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
    // The massless fixed `tool` is fused into `base` and stays the end effector, as a point.
    assert_eq!(m.links.len(), 1);
    assert_eq!(m.ee_link, 0);
    assert_eq!(m.ee_offset, Vec3::new(0.0, 0.0, 0.5));
    assert_eq!(m.frame("tool").unwrap().1.translation, m.ee_offset);
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
    assert_eq!(m.mimics, [mimic(1, 0, -1.0, 0.01)]);
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
        msg.contains("mesh geometry") && msg.contains("link `shell`") && msg.contains("file path"),
        "{msg}"
    );
    assert!(msg.starts_with("line 1: "), "{msg}");
}

#[test]
fn error_limits_reversed() {
    let e = one_joint_error(
        r#"<limit lower="1" upper="-1" effort="1" velocity="1"/>"#,
        "",
    );
    assert_eq!(
        e.to_string(),
        "joint `j`: lower limit 1 is greater than upper limit -1"
    );
}

#[test]
fn error_missing_limit() {
    let e = one_joint_error("", "");
    assert!(e.to_string().contains("need a <limit>"), "{e}");
}

#[test]
fn error_unknown_mimic_leader() {
    let e = one_joint_error(&format!(r#"{LIMIT}<mimic joint="nope"/>"#), "");
    assert_eq!(
        e.to_string(),
        "the mimic of joint `j` references unknown joint `nope`"
    );
}

#[test]
fn error_unknown_transmission_joint() {
    let e = one_joint_error(
        LIMIT,
        r#"<transmission name="tr"><joint name="ghost">
                 <hardwareInterface>VelocityJointInterface</hardwareInterface></joint>
               </transmission>"#,
    );
    assert!(matches!(e, RobotError::UnknownJoint { .. }));
    assert!(e.to_string().contains("transmission `tr`"), "{e}");
}

#[test]
fn error_duplicate_link() {
    let e = one_joint_error(LIMIT, r#"<link name="arm"/>"#);
    assert_eq!(e.to_string(), "duplicate link name `arm`");
}

#[test]
fn error_duplicate_joint() {
    let e = one_joint_error(
        LIMIT,
        r#"<link name="c"/><joint name="j" type="continuous">
                 <parent link="arm"/><child link="c"/></joint>"#,
    );
    assert_eq!(e.to_string(), "duplicate joint name `j`");
}

#[test]
fn error_unknown_link_and_bad_tree() {
    let e = one_joint_error(
        LIMIT,
        r#"<joint name="k" type="fixed"><parent link="arm"/><child link="nowhere"/></joint>"#,
    );
    assert_eq!(e.to_string(), "joint `k` references unknown link `nowhere`");

    let e = one_joint_error(LIMIT, r#"<link name="island"/>"#);
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
    let e = one_joint_error(
        r#"<limit lower="x" upper="1" effort="1" velocity="1"/>"#,
        "",
    );
    assert!(matches!(e, RobotError::Urdf(_)), "{e:?}");
}

#[test]
fn error_zero_axis_and_nonpositive_effort() {
    let e = parse_urdf(
        &one_joint(LIMIT, "").replace(r#"<axis xyz="0 0 1"/>"#, r#"<axis xyz="0 0 0"/>"#),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "joint `j`: axis must be a non-zero vector");

    let e = one_joint_error(
        r#"<limit lower="-1" upper="1" effort="0" velocity="1"/>"#,
        "",
    );
    assert_eq!(
        e.to_string(),
        "joint `j`: max_effort must be positive, got 0"
    );
}

#[test]
fn error_mimic_of_itself_and_chain() {
    let e = one_joint_error(&format!(r#"{LIMIT}<mimic joint="j"/>"#), "");
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

// ---- Files: meshes, package paths, scale, fusing ----

use std::path::{Path, PathBuf};

use crate::robot::kinematics::ee_position;
use crate::robot::{LoadOptions, Shape, load_robot_with};

/// A tetrahedron spanning the unit cube's corner, ASCII STL.
const TETRA_STL: &str = "solid t
facet normal 0 0 -1
outer loop
vertex 0 0 0
vertex 0 1 0
vertex 1 0 0
endloop
endfacet
facet normal 0 -1 0
outer loop
vertex 0 0 0
vertex 1 0 0
vertex 0 0 1
endloop
endfacet
facet normal -1 0 0
outer loop
vertex 0 0 0
vertex 0 0 1
vertex 0 1 0
endloop
endfacet
facet normal 1 1 1
outer loop
vertex 1 0 0
vertex 0 1 0
vertex 0 0 1
endloop
endfacet
endsolid t
";

/// A scratch folder of its own for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("armsim-urdf-{}-{name}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Writes `text` at `rel`, creating folders, and returns the full path.
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A one-link robot whose link shows and collides with the mesh at `uri`.
fn mesh_robot(uri: &str, scale: &str) -> String {
    format!(
        r#"<robot name="m">
             <link name="shell">
               <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
               <visual><geometry><mesh filename="{uri}" {scale}/></geometry></visual>
               <collision><geometry><mesh filename="{uri}" {scale}/></geometry></collision>
             </link>
           </robot>"#
    )
}

fn mesh_of(g: &Geom) -> (usize, Vec3, Vec3) {
    match g.shape {
        Shape::Mesh {
            mesh,
            scale,
            half_extents,
        } => (mesh, scale, half_extents),
        other => panic!("not a mesh: {other:?}"),
    }
}

fn near(a: Vec3, b: Vec3) -> bool {
    (a - b).abs().max_element() < 1e-5
}

#[test]
fn package_uri_resolves_by_walking_up_to_the_package_folder() {
    let s = Scratch::new("walk");
    s.write("share/my_pkg/meshes/Part.STL", TETRA_STL);
    let urdf = s.write(
        "share/my_pkg/urdf/r.urdf",
        &mesh_robot("package://my_pkg/meshes/Part.STL", ""),
    );
    let m = load_robot_with(&urdf, &LoadOptions::default()).unwrap();
    let link = &m.links[0];
    // Visual and collision name one file: it is read once.
    assert_eq!(m.meshes.len(), 1, "{:?}", m.meshes);
    let (mesh, scale, half) = mesh_of(&link.visuals[0]);
    assert_eq!((mesh, scale), (0, Vec3::ONE));
    assert!(near(half, Vec3::splat(0.5)), "{half}");
    assert_eq!(mesh_of(&link.collisions[0]).0, 0);
    let asset = &m.meshes[0];
    assert!(asset.path.ends_with("share/my_pkg/meshes/Part.STL"));
    // STL repeats each facet's vertices.
    assert_eq!(asset.counts(), (12, 4));
    // A collision mesh gets its hull at load.
    assert!(asset.parts.iter().all(|p| p.hull.is_some()), "{asset:?}");
    // No colour in the file: white, so the mesh's own part colours show.
    assert_eq!(link.visuals[0].rgba, [1.0; 4]);
}

#[test]
fn package_uri_resolves_through_an_explicit_package_path() {
    let s = Scratch::new("map");
    let elsewhere = s.0.join("vendor/meshes_here");
    s.write("vendor/meshes_here/part.stl", TETRA_STL);
    let urdf = s.write(
        "robot/r.urdf",
        &mesh_robot("package://far_pkg/part.stl", ""),
    );
    let e = load_robot_with(&urdf, &LoadOptions::default()).unwrap_err();
    assert!(matches!(e, RobotError::MeshNotFound { .. }), "{e:?}");
    assert!(e.to_string().contains("--package-path far_pkg=DIR"), "{e}");

    let options = LoadOptions {
        package_paths: vec![("far_pkg".into(), elsewhere.clone())],
        ..Default::default()
    };
    let m = load_robot_with(&urdf, &options).unwrap();
    assert_eq!(
        m.meshes[0].path,
        elsewhere.join("part.stl").canonicalize().unwrap()
    );
}

#[test]
fn missing_mesh_reports_every_path_tried_and_the_link() {
    let s = Scratch::new("missing");
    let pkg_map = s.0.join("mapped");
    let urdf = s.write(
        "pkg/urdf/r.urdf",
        &mesh_robot("package://pkg/meshes/gone.stl", ""),
    );
    let options = LoadOptions {
        package_paths: vec![("pkg".into(), pkg_map.clone())],
        ..Default::default()
    };
    let e = load_robot_with(&urdf, &options).unwrap_err();
    let RobotError::MeshNotFound { tried, .. } = &e else {
        panic!("{e:?}");
    };
    let msg = e.to_string();
    assert!(
        msg.contains("package://pkg/meshes/gone.stl") && msg.contains("link `shell`"),
        "{msg}"
    );
    // The explicit map first, then the folder named like the package on the way up.
    assert_eq!(tried[0], pkg_map.join("meshes/gone.stl"));
    assert!(
        tried.contains(&s.0.join("pkg/meshes/gone.stl")),
        "{tried:?}"
    );
    for p in tried {
        assert!(msg.contains(&p.display().to_string()), "{msg}");
    }

    // A relative path: the one candidate, next to the URDF.
    std::fs::write(&urdf, mesh_robot("meshes/gone.STL", "")).unwrap();
    let e = load_robot_with(&urdf, &LoadOptions::default()).unwrap_err();
    let want = s.0.join("pkg/urdf/meshes/gone.STL");
    assert!(e.to_string().contains(&want.display().to_string()), "{e}");
}

#[test]
fn mesh_scale_of_one_or_three_numbers() {
    let s = Scratch::new("scale");
    s.write(
        "r/m.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n",
    );
    for (attr, want) in [
        (r#"scale="0.001""#, Vec3::splat(0.001)),
        (r#"scale=" 2 ""#, Vec3::splat(2.0)),
        (r#"scale="1 2 3""#, Vec3::new(1.0, 2.0, 3.0)),
        ("", Vec3::ONE),
    ] {
        let urdf = s.write("r/r.urdf", &mesh_robot("m.obj", attr));
        let m = load_robot_with(&urdf, &LoadOptions::default()).unwrap();
        for g in m.links[0].visuals.iter().chain(&m.links[0].collisions) {
            let (_, scale, half) = mesh_of(g);
            assert_eq!(scale, want, "{attr}");
            assert!(near(half, want * 0.5), "{attr}: {half}");
        }
    }
    // Two numbers are neither form.
    let urdf = s.write("r/r.urdf", &mesh_robot("m.obj", r#"scale="1 2""#));
    let e = load_robot_with(&urdf, &LoadOptions::default()).unwrap_err();
    assert!(matches!(e, RobotError::Urdf(_)), "{e:?}");
}

#[test]
fn mesh_visual_colour_from_the_file_wins() {
    let s = Scratch::new("colour");
    s.write("m.stl", TETRA_STL);
    let urdf = s.write(
        "r.urdf",
        r#"<robot name="c"><link name="a">
             <visual><geometry><mesh filename="m.stl"/></geometry>
               <material name="red"><color rgba="1 0 0 1"/></material></visual>
             <visual><geometry><box size="1 1 1"/></geometry></visual>
           </link></robot>"#,
    );
    let m = load_robot_with(&urdf, &LoadOptions::default()).unwrap();
    assert_eq!(m.links[0].visuals[0].rgba, [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(m.links[0].visuals[1].rgba, DEFAULT_RGBA);
    // A visual-only mesh builds no hull.
    assert!(m.meshes[0].parts.iter().all(|p| p.hull.is_none()));
}

const INERTIAL: &str = r#"<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>"#;

#[test]
fn massless_fixed_links_fuse_into_their_parent_with_composed_poses() {
    let xml = format!(
        r#"<robot name="f">
             <link name="base">{INERTIAL}</link>
             <link name="mount">
               <collision><origin xyz="1 0 0"/><geometry><box size="0.1 0.2 0.3"/></geometry></collision>
             </link>
             <link name="plate">
               <inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>
               <visual><origin xyz="0 0 0.1"/><geometry><sphere radius="0.05"/></geometry></visual>
             </link>
             <link name="arm">{INERTIAL}</link>
             <link name="weight">{INERTIAL}</link>
             <link name="spinner"/>
             <joint name="j_mount" type="fixed"><parent link="base"/><child link="mount"/>
               <origin xyz="0 0 1" rpy="0 0 1.5707963267948966"/></joint>
             <joint name="j_plate" type="fixed"><parent link="mount"/><child link="plate"/>
               <origin xyz="0 0 0.5"/></joint>
             <joint name="hinge" type="revolute"><parent link="plate"/><child link="arm"/>
               <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>{LIMIT}</joint>
             <joint name="j_weight" type="fixed"><parent link="arm"/><child link="weight"/>
               <origin xyz="0 0 0.3"/></joint>
             <joint name="spin" type="continuous"><parent link="weight"/><child link="spinner"/></joint>
           </robot>"#
    );
    let m = parse_urdf(&xml).unwrap();
    let names: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
    // `weight` has mass: a fixed link with mass stays a body.
    assert_eq!(names, ["base", "arm", "weight", "spinner"]);
    let joints: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(joints, ["hinge", "spin"]);
    assert_eq!((m.joints[0].link, m.joints[1].link), (1, 3));
    assert_eq!((m.links[1].joint, m.links[3].joint), (Some(0), Some(1)));
    assert_eq!(m.links[1].parent, Some(0));
    assert_eq!(m.links[2].parent, Some(1));

    let base = &m.links[0];
    // mount's box: 1 m along mount's X, which is base's Y, 1 m up.
    assert_eq!(base.collisions.len(), 1);
    assert!(near(
        base.collisions[0].pose.translation,
        Vec3::new(0.0, 1.0, 1.0)
    ));
    let x = base.collisions[0].pose.rotation * Vec3::X;
    assert!(near(x, Vec3::Y), "{x}");
    // plate's sphere: two levels down, 1.5 m + 0.1 m up.
    assert_eq!(base.visuals.len(), 1);
    assert!(near(
        base.visuals[0].pose.translation,
        Vec3::new(0.0, 0.0, 1.6)
    ));
    // arm hangs on base now: plate's frame then 0.2 m along plate's X (base's Y).
    let arm = m.links[1].origin;
    assert!(near(arm.translation, Vec3::new(0.0, 0.2, 1.5)), "{arm:?}");
    assert!(near(arm.rotation * Vec3::X, Vec3::Y));
    // The hinge still turns about the arm's own Y, so the kinematics is unchanged.
    assert_eq!(m.joints[0].axis, Vec3::Y);
    assert_eq!(m.link_index("mount"), None);
    let (l, p) = m.frame("plate").unwrap();
    assert_eq!(l, 0);
    assert!(near(p.translation, Vec3::new(0.0, 0.0, 1.5)));

    assert!(
        m.notes
            .iter()
            .any(|n| n == "fused massless links into their parents: mount→base, plate→base"),
        "{:?}",
        m.notes
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("without <inertial>") && n.ends_with(": spinner")),
        "{:?}",
        m.notes
    );
    // No tool/ee name: the last link of the file's tree, `spinner`, kept.
    assert_eq!(m.ee_link, 3);
    assert_eq!(m.ee_offset, Vec3::ZERO);
}

#[test]
fn end_effector_follows_a_fused_tool_link() {
    let xml = format!(
        r#"<robot name="e">
             <link name="base"/>
             <link name="arm">{INERTIAL}</link>
             <link name="flange"/>
             <link name="tool"/>
             <link name="finger">{INERTIAL}</link>
             <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
               <origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>{LIMIT}</joint>
             <joint name="j_flange" type="fixed"><parent link="arm"/><child link="flange"/>
               <origin xyz="0 0 0.4" rpy="0 1.5707963267948966 0"/></joint>
             <joint name="j_tool" type="fixed"><parent link="flange"/><child link="tool"/>
               <origin xyz="-0.05 0 0"/></joint>
             <joint name="slide" type="prismatic"><parent link="arm"/><child link="finger"/>
               <axis xyz="1 0 0"/><limit lower="0" upper="0.1" effort="1" velocity="1"/></joint>
           </robot>"#
    );
    let m = parse_urdf(&xml).unwrap();
    // The root without an inertial stays (it is fixed anyway).
    let names: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["base", "arm", "finger"]);
    // `tool` by name, through two fused levels: pitched 90°, flange's X is the arm's -Z, so
    // -0.05 m along it is 0.05 m further out: 0.45 m along the arm.
    assert_eq!(m.links[m.ee_link].name, "arm");
    assert!(
        near(m.ee_offset, Vec3::new(0.0, 0.0, 0.45)),
        "{}",
        m.ee_offset
    );
    let q = [0.3, 0.0];
    let ee = ee_position(&m, &q);
    let arm = crate::robot::kinematics::forward_kinematics(&m, &q)[1];
    assert!(near(ee, arm.transform_point(Vec3::new(0.0, 0.0, 0.45))));
    assert_eq!(m.frame("tool").unwrap().0, 1);
}

#[test]
fn mesh_paths_without_a_file_fail_and_bundled_robots_have_none() {
    let e = parse_urdf(&mesh_robot("m.stl", "")).unwrap_err();
    assert!(e.to_string().contains("file path"), "{e}");
    let m = parse_urdf_file(
        GRIPPER4,
        Some(Path::new("/nowhere/gripper4.urdf")),
        &LoadOptions::default(),
    )
    .unwrap();
    assert!(m.meshes.is_empty());
}
