//! Unit tests of the MJCF-subset loader: the body tree, joints, geoms, actuators and equalities,
//! and the shipped arm6.

use std::f32::consts::{FRAC_PI_2, PI};

use glam::Quat;

use super::*;
use crate::robot::defaults::{DEFAULT_KD, DEFAULT_KP};
use crate::robot::inertia::{effective_inertia, shape_volume};
use crate::robot::kinematics;
use crate::robot::model::{ActuatorKind, JointKind};
use crate::robot::test_support::{assert_joint_names, mimic};

const ARM6: &str = include_str!("../../../../../assets/robots/arm6.xml");

fn approx(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

/// Within 1e-5 of `b`, relative.
fn near(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * b.abs().max(1.0)
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

/// The error loading [`one_joint`]`(joint, extra)` fails with.
fn one_joint_error(joint: &str, extra: &str) -> RobotError {
    parse_mjcf(&one_joint(joint, extra)).unwrap_err()
}

#[test]
fn arm6_loads_with_eight_joints() {
    let m = parse_mjcf(ARM6).expect("arm6 loads");
    assert_joint_names(
        &m,
        "arm6",
        &[
            "shoulder_pan",
            "shoulder_lift",
            "elbow",
            "wrist_1",
            "wrist_2",
            "wrist_3",
            "finger_left",
            "finger_right",
        ],
    );
    for j in &m.joints[..6] {
        assert_eq!(j.kind, JointKind::Revolute);
        assert!(j.limits.is_some());
        assert_eq!(j.actuator.as_ref().unwrap().kind, ActuatorKind::Position);
        assert_eq!((j.kp, j.kd), (DEFAULT_KP, DEFAULT_KD));
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
    let mut want = mimic(7, 6, 1.0, 0.0);
    want.coupling = m.mimics[0].coupling;
    assert!(
        want.coupling.is_some(),
        "the fingers are tied by MuJoCo's constraint"
    );
    assert_eq!(m.mimics, [want]);
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
    // The equality is MuJoCo's soft constraint: solref 0.02 1 (k = 2500/s², b = 100/s) and
    // solimp's dmin 0.9 on the pair's 0.25 kg give 9·0.25·(2500, 100). The damping is past
    // what a 240 Hz step keeps stable on a 0.5 kg joint (1·0.5·240), and a note says so.
    let coupling = m.mimics[0]
        .coupling
        .expect("a joint equality is a constraint");
    assert!(near(coupling.stiffness, 5625.0), "{coupling:?}");
    assert!(near(coupling.damping, 120.0), "{coupling:?}");
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("1.0× softer and 1.9× less damped")),
        "{:?}",
        m.notes
    );
    let mut want = mimic(1, 0, -1.0, 0.01);
    want.coupling = Some(coupling);
    assert_eq!(m.mimics, [want]);
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
    let e = one_joint_error(r#"<joint name="b" type="ball"/>"#, "");
    assert_eq!(
        e.to_string(),
        "line 5: unsupported joint type `ball` (only hinge and slide)"
    );
    let e = one_joint_error("<freejoint/>", "");
    assert!(e.to_string().contains("<freejoint> in body `arm`"), "{e}");
    let e = one_joint_error(r#"<joint name="a"/><joint name="b"/>"#, "");
    assert!(e.to_string().contains("second joint in body `arm`"), "{e}");
}

#[test]
fn error_root_joint_and_second_robot() {
    let xml = r#"<mujoco><worldbody><body name="r"><joint name="j"/></body></worldbody></mujoco>"#;
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
    assert_eq!(e.to_string(), "line 2: <geom> references unknown mesh `m`");
    // A mesh needs a file to be found from: text alone says so.
    let xml = r#"<mujoco><asset><mesh file="m.stl"/></asset><worldbody><body name="r">
            <geom mesh="m"/></body></worldbody></mujoco>"#;
    let e = parse_mjcf(xml).unwrap_err();
    assert!(e.to_string().contains("without a file"), "{e}");
    let xml = r#"<mujoco><worldbody><body name="r">
            <geom type="hfield" size="1"/></body></worldbody></mujoco>"#;
    let e = parse_mjcf(xml).unwrap_err();
    assert!(e.to_string().contains("geom type `hfield`"), "{e}");
    let xml = r#"<mujoco><worldbody><body name="r">
            <geom type="box" size="1 1 1" fromto="0 0 0 1 0 0"/></body></worldbody></mujoco>"#;
    let e = parse_mjcf(xml).unwrap_err();
    assert!(e.to_string().contains("fromto on a box geom"), "{e}");
}

#[test]
fn error_bad_values() {
    let e = one_joint_error(r#"<joint name="j" axis="0 1"/>"#, "");
    assert_eq!(
        e.to_string(),
        "line 5: invalid value `0 1` for `axis` on <joint>: expected 3 numbers"
    );
    let e = one_joint_error(r#"<joint name="j" damping="lots"/>"#, "");
    assert!(
        e.to_string().contains("`lots` is not a finite number"),
        "{e}"
    );
    let e = one_joint_error(r#"<joint name="j"/>"#, r#"<compiler angle="gradian"/>"#);
    assert!(e.to_string().contains("expected degree or radian"), "{e}");
    let e = one_joint_error(r#"<joint name="j" limited="true"/>"#, "");
    assert_eq!(
        e.to_string(),
        "line 5: missing required attribute `range` on <joint>"
    );
}

#[test]
fn error_limits_reversed() {
    let e = one_joint_error(r#"<joint name="j" type="slide" range="1 -1"/>"#, "");
    assert_eq!(
        e.to_string(),
        "joint `j`: lower limit 1 is greater than upper limit -1"
    );
}

#[test]
fn error_unknown_joints_in_actuator_and_equality() {
    let e = one_joint_error(
        r#"<joint name="j"/>"#,
        r#"<actuator><position name="p" joint="nope"/></actuator>"#,
    );
    assert!(matches!(e, RobotError::UnknownJoint { .. }));
    assert_eq!(
        e.to_string(),
        "actuator `p` references unknown joint `nope`"
    );

    let e = one_joint_error(
        r#"<joint name="j"/>"#,
        r#"<equality><joint joint1="j" joint2="ghost"/></equality>"#,
    );
    assert!(
        e.to_string().ends_with("references unknown joint `ghost`"),
        "{e}"
    );
}

#[test]
fn error_unsupported_actuators_and_equalities() {
    // (what the file adds to a one-hinge robot, what the error says)
    let refused = [
        (
            r#"<actuator><muscle joint="j"/></actuator>"#,
            "actuator <muscle>",
        ),
        (
            r#"<actuator><general joint="j" biastype="user"/></actuator>"#,
            "biastype `user`",
        ),
        (
            r#"<actuator><motor joint="j"/><position joint="j"/></actuator>"#,
            "second actuator on joint `j`",
        ),
        (
            r#"<equality><tendon tendon1="t"/></equality>"#,
            "equality <tendon>",
        ),
        (
            r#"<equality><joint joint1="j" joint2="j" solref="0.02 -1"/></equality>"#,
            "expected two positive values",
        ),
        (
            r#"<equality><joint joint1="j" joint2="j" solimp="1 0.99"/></equality>"#,
            "dmin",
        ),
    ];
    for (extra, want) in refused {
        let e = one_joint_error(r#"<joint name="j"/>"#, extra);
        assert!(e.to_string().contains(want), "{e}");
    }
    // A loop-closing equality loads with a warning in the notes.
    let m = parse_mjcf(&one_joint(
        r#"<joint name="j"/>"#,
        r#"<equality><connect name="loop" body1="arm" body2="base" anchor="0 0 0"/></equality>"#,
    ))
    .unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("WARNING") && n.contains("`loop`")),
        "{:?}",
        m.notes
    );
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
    let e = one_joint_error(
        r#"<joint name="j"/>"#,
        r#"<equality><joint joint1="j" joint2="j"/></equality>"#,
    );
    assert!(matches!(e, RobotError::InvalidMimic { .. }), "{e:?}");
}

#[test]
fn general_affine_actuators_and_class_defaults_with_poses() {
    let xml = r#"<mujoco><compiler angle="radian"/>
        <default><default class="c">
            <general biastype="affine" forcerange="-9 9"/>
            <geom type="box" size="0.1 0.2 0.3" pos="1 2 3" quat="1 1 0 0" contype="0" conaffinity="0"/>
        </default></default>
        <worldbody><body name="r">
          <body name="a" euler="0 0 1.5707963"><joint name="a"/><geom class="c"/>
            <inertial mass="1" diaginertia="0.1 0.1 0.1"/>
            <geom class="c" pos="0 0 0" euler="0 0 0"/></body>
        </body></worldbody>
        <actuator><general class="c" name="servo" joint="a" gainprm="40" biasprm="0 -40 -4"/></actuator>
        <keyframe><key name="home" qpos="0.25"/></keyframe></mujoco>"#;
    let m = parse_mjcf(xml).unwrap();
    let a = &m.joints[0];
    assert_eq!(a.actuator.as_ref().unwrap().kind, ActuatorKind::Position);
    assert_eq!(a.max_effort, 9.0);
    // kv/kp = 4/40 survives the scaling by inertia.
    assert!((a.kd / a.kp - 0.1).abs() < 1e-5, "{} {}", a.kp, a.kd);
    // euler in radians; the un-normalised class quat, normalised; pos from the class.
    let q = m.links[1].origin.rotation;
    assert!((q * glam::Vec3::X - glam::Vec3::Y).length() < 1e-5);
    let g = &m.links[1].visuals[0];
    assert_eq!(g.pose.translation, glam::Vec3::new(1.0, 2.0, 3.0));
    assert!((g.pose.rotation * glam::Vec3::Y - glam::Vec3::Z).length() < 1e-5);
    // The geom's own pos and orientation win over the class's.
    let own = &m.links[1].visuals[1];
    assert_eq!(own.pose.translation, glam::Vec3::ZERO);
    assert!((own.pose.rotation.w - 1.0).abs() < 1e-6);
    // contype = conaffinity = 0: drawn, not collided.
    assert!(m.links[1].collisions.is_empty());
    assert_eq!(m.home, Some(vec![0.25]));
}

#[test]
fn armature_is_kept_and_parked_geoms_collide_when_named() {
    let xml = r#"<mujoco>
        <default><default class="servo"><joint armature="0.028"/></default></default>
        <worldbody><body name="r">
          <body name="jaw"><joint name="jaw" class="servo"/>
            <inertial mass="0.01" diaginertia="1e-6 1e-6 1e-6"/>
            <geom name="pad" type="box" size="0.01 0.01 0.01" contype="2" conaffinity="2"/>
            <geom name="shell" type="box" size="0.02 0.02 0.02" contype="0" conaffinity="0"/>
          </body>
        </body></worldbody>
        <actuator><position name="jaw" joint="jaw" kp="17.8"/></actuator></mujoco>"#;
    let m = parse_mjcf(xml).unwrap();
    let jaw = &m.joints[0];
    assert_eq!(jaw.armature, 0.028);
    // kp is per unit of inertia, the armature counted: 17.8 N·m/rad over about 0.028 kg·m².
    let force_kp = jaw.kp * (effective_inertia(&m, 0) + jaw.armature);
    assert!((force_kp - 17.8).abs() < 1e-3, "{force_kp}");
    // On bit 2 the pad does not meet the world, unless the options name it.
    assert!(m.links[1].collisions.is_empty());
    let options = LoadOptions {
        collide_geoms: vec!["pad".into()],
        ..Default::default()
    };
    let m = parse_mjcf_file(xml, None, &options).unwrap();
    let names: Vec<_> = m.links[1]
        .collisions
        .iter()
        .map(|g| g.name.as_deref())
        .collect();
    assert_eq!(names, [Some("pad")]);
}

#[test]
fn cameras_ride_on_their_bodies_in_armsims_camera_frame() {
    use crate::camera::spec::{CameraMount, CameraSpec};
    let xml = r#"<mujoco model="t">
          <compiler angle="radian"/>
          <default><camera fovy="50"/></default>
          <worldbody>
            <camera name="overview" pos="2 0 1" xyaxes="0 1 0 -0.6 0 0.8"/>
            <body name="base" pos="0 0 0.5">
              <geom type="sphere" size="0.1"/>
              <body name="hand" pos="0 0 1">
                <joint name="j" type="hinge" axis="0 0 1"/>
                <geom type="sphere" size="0.05"/>
                <camera name="wrist" pos="0 0 0.1" resolution="640 480" fovy="90"/>
                <camera pos="0.1 0 0" mode="trackcom"/>
              </body>
            </body>
          </worldbody>
        </mujoco>"#;
    let m = parse_mjcf(xml).expect("loads");
    let names: Vec<&str> = m.cameras.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["wrist", "hand_cam1", "overview"]);
    let hand = m.link_index("hand").unwrap();
    let link_pose = |c: &CameraSpec| match c.mount {
        CameraMount::Link { link, pose } => (link, pose),
        ref other => panic!("{other:?}"),
    };
    // MuJoCo's camera looks along its −Z: with no rotation, armsim's forward (+X) is the
    // body's −Z and its up (+Z) the body's +Y.
    let wrist = &m.cameras[0];
    let (link, pose) = link_pose(wrist);
    assert_eq!(link, hand);
    assert!((pose.translation - Vec3::new(0.0, 0.0, 0.1)).length() < 1e-6);
    assert!((pose.rotation * Vec3::X - Vec3::NEG_Z).length() < 1e-5);
    assert!((pose.rotation * Vec3::Z - Vec3::Y).length() < 1e-5);
    assert_eq!((wrist.fov_deg, wrist.width, wrist.height), (90.0, 640, 480));
    // The class default's fovy, the default size, and a note for the tracking mode.
    let unnamed = &m.cameras[1];
    assert_eq!(
        (unnamed.fov_deg, unnamed.width, unnamed.height),
        (50.0, 256, 256)
    );
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("hand_cam1") && n.contains("trackcom")),
        "{:?}",
        m.notes
    );
    // A camera of the file's world keeps its place relative to the root body (at z = 0.5 in
    // the file): it rides on the root link, 0.5 lower.
    let (link, pose) = link_pose(&m.cameras[2]);
    assert_eq!(link, 0);
    assert!((pose.translation - Vec3::new(2.0, 0.0, 0.5)).length() < 1e-6);
    // xyaxes: the camera's x (right) is world +Y, its y (up) tilts back: it looks along −X and
    // down a little.
    let forward = pose.rotation * Vec3::X;
    assert!(forward.x < -0.7 && forward.z < -0.5, "{forward}");
    assert!(
        !m.notes.iter().any(|n| n.contains("<camera>")),
        "{:?}",
        m.notes
    );

    // MuJoCo's default field of view, and a bad one.
    let m = parse_mjcf(&one_joint(
        r#"<joint name="j" type="hinge"/><camera name="c"/>"#,
        "",
    ))
    .unwrap();
    assert_eq!(m.cameras[0].fov_deg, 45.0);
    let e = one_joint_error(r#"<joint name="j" type="hinge"/><camera fovy="180"/>"#, "");
    assert!(e.to_string().contains("fovy"), "{e}");
    assert!(parse_mjcf(ARM6).unwrap().cameras.is_empty());
}

#[test]
fn a_position_actuator_with_kp_is_a_servo_in_the_files_units() {
    use crate::robot::model::Servo;
    let two = |actuators: &str| {
        format!(
            r#"<mujoco><worldbody><body name="r">
                 <body name="a"><joint name="a" damping="0.6" frictionloss="0.052"/>
                   <geom type="sphere" size="0.1"/>
                   <body name="b"><joint name="b"/><geom type="sphere" size="0.1"/></body>
                 </body>
               </body></worldbody><actuator>{actuators}</actuator></mujoco>"#
        )
    };
    let m = parse_mjcf(&two(
        r#"<position joint="a" kp="17.8" forcerange="-3.35 3.35"/>
           <general joint="b" biastype="affine" gainprm="4500" biasprm="0 -4500 -450"/>"#,
    ))
    .unwrap();
    let (a, b) = (&m.joints[0], &m.joints[1]);
    assert_eq!(
        a.servo,
        Some(Servo {
            kp: 17.8,
            kv: 0.0,
            max_force: 3.35
        })
    );
    assert_eq!((a.damping, a.frictionloss), (0.6, 0.052));
    // No force range: MuJoCo does not clamp it.
    assert_eq!(
        b.servo,
        Some(Servo {
            kp: 4500.0,
            kv: 450.0,
            max_force: f32::INFINITY
        })
    );
    assert_eq!(b.frictionloss, 0.0);
    // Without kp (arm6's arm joints) and for velocity actuators: armsim's own motor.
    let m = parse_mjcf(&two(
        r#"<position joint="a" forcerange="-3 3"/><velocity joint="b" kv="2"/>"#,
    ))
    .unwrap();
    assert!(m.joints.iter().all(|j| j.servo.is_none()));
}

/// Two slide fingers on a fixed tendon with the Panda's actuator, and a nonlinear equality.
const TENDON_FINGERS: &str = r#"<mujoco model="t">
    <worldbody><body name="base">
      <body name="l"><joint name="f1" type="slide" axis="0 1 0" range="0 0.04"/>
        <inertial pos="0 0 0" mass="0.1" diaginertia="1e-5 1e-5 1e-5"/></body>
      <body name="r"><joint name="f2" type="slide" axis="0 -1 0" range="0 0.04"/>
        <inertial pos="0 0 0" mass="0.1" diaginertia="1e-5 1e-5 1e-5"/></body>
    </body></worldbody>
    <tendon><fixed name="split">
      <joint joint="f1" coef="0.5"/><joint joint="f2" coef="0.5"/>
    </fixed></tendon>
    <equality><joint joint1="f2" joint2="f1" polycoef="0 1 0.5" solref="0.005 1"
      solimp="0.95 0.99 0.001"/></equality>
    <actuator><general name="grip" tendon="split" biastype="affine" forcerange="-100 100"
      ctrlrange="0 255" gainprm="0.01568627451 0 0" biasprm="0 -100 -10"/></actuator>
  </mujoco>"#;

#[test]
fn a_tendon_actuator_is_the_files_servo_on_the_tendons_length() {
    let m = parse_mjcf(TENDON_FINGERS).unwrap();
    let [t] = &m.tendons[..] else {
        panic!("one tendon actuator: {:?}", m.tendons)
    };
    assert_eq!(t.name, "grip");
    assert_eq!(t.leader, 0);
    assert_eq!(t.joints, [(0, 0.5), (1, 0.5)]);
    assert_eq!(
        (t.servo.kp, t.servo.kv, t.servo.max_force),
        (100.0, 10.0, 100.0)
    );
    // ctrl 0..255 asks for lengths 0..255·0.0157/100 = 0..0.04 m.
    let (lo, hi) = t.length_range.unwrap();
    assert!(approx(lo, 0.0) && approx(hi, 0.04), "{lo} {hi}");
    assert_eq!(m.joints[0].actuator.as_ref().unwrap().name, "grip");
    // polycoef "0 1 0.5": f2 = f1 + 0.5·f1², slope 1 + f1.
    let mimic = &m.mimics[0];
    assert_eq!((mimic.joint, mimic.leader), (1, 0));
    assert!(approx(mimic.follow(0.02), 0.0202));
    assert!(approx(mimic.slope(0.02), 1.02));
    // solref 0.005 is shorter than two 240 Hz steps: τ = 1/120 s, as MuJoCo's refsafe has it.
    // The pair's inertia is 0.05 kg, dmin 0.95: MuJoCo's is 19·0.05·(120², 240). That is past
    // what the 240 Hz step keeps stable on a 0.1 kg finger, 0.5·0.1·240² and 1·0.1·240, and
    // a note says so.
    let c = mimic.coupling.unwrap();
    assert!(near(c.stiffness, 0.5 * 0.1 * 240.0 * 240.0), "{c:?}");
    assert!(near(c.damping, 0.1 * 240.0), "{c:?}");
    let note = m
        .notes
        .iter()
        .find(|n| n.contains("joint equality on `f2`"));
    assert!(
        note.is_some_and(|n| n.contains("4.7× softer") && n.contains("9.5× less damped")),
        "{:?}",
        m.notes
    );
}

#[test]
fn condim_is_sliding_friction_or_none() {
    let geoms = |attrs: &str| {
        format!(
            r#"<mujoco model="t">
                 <worldbody>
                   <body name="base">
                     <geom type="sphere" size="0.1" friction="0.7 0.01 0.001" {attrs}/>
                   </body>
                 </worldbody>
               </mujoco>"#
        )
    };
    let friction = |m: &RobotModel| m.links[0].collisions[0].friction;
    // MuJoCo's default condim 3 is sliding friction: the first of the three coefficients.
    let m = parse_mjcf(&geoms("")).unwrap();
    assert_eq!(friction(&m), Some(0.7));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    // condim 1 is a frictionless contact.
    assert_eq!(
        friction(&parse_mjcf(&geoms(r#"condim="1""#)).unwrap()),
        Some(0.0)
    );
    // 4 and 6 keep the sliding part, and a note says what is left out.
    let m = parse_mjcf(&geoms(r#"condim="6""#)).unwrap();
    assert_eq!(friction(&m), Some(0.7));
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("torsional and rolling friction")),
        "{:?}",
        m.notes
    );
    let e = parse_mjcf(&geoms(r#"condim="2""#)).unwrap_err().to_string();
    assert!(e.contains("`condim`") && e.contains("1, 3, 4 or 6"), "{e}");
}
