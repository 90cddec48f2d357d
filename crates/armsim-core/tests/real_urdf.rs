//! Real URDFs with meshes (the example-robot-data Panda and SO-100, lerobot's SO-101), loaded
//! through `load_robot`: joints, limits, masses, fused frames, mimics, meshes and hulls, checked
//! against the files themselves (read here with roxmltree, independently of the loader).

mod fixtures;

use std::path::Path;
use std::time::Instant;

use armsim_core::robot::{Mimic, RobotModel, Shape, load_robot};

/// Loads `path`, printing how long it took (never asserted).
fn load(path: &Path) -> RobotModel {
    let start = Instant::now();
    let model = load_robot(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (verts, tris) = model
        .meshes
        .iter()
        .map(|m| m.counts())
        .fold((0, 0), |(v, t), (a, b)| (v + a, t + b));
    eprintln!(
        "{}: loaded in {:.1} ms ({} links, {} meshes, {verts} vertices, {tris} triangles)",
        path.file_name().unwrap().to_string_lossy(),
        start.elapsed().as_secs_f64() * 1e3,
        model.links.len(),
        model.meshes.len(),
    );
    for note in &model.notes {
        eprintln!("  note: {note}");
    }
    model
}

/// What the file says, read without the loader.
struct FileFacts {
    mass: f64,
    links: usize,
    /// Links with no (or a zero) mass that a fixed joint attaches: the loader fuses them.
    massless_fixed: Vec<String>,
}

fn file_facts(path: &Path) -> FileFacts {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let robot = doc.root_element();
    let elements = |tag: &'static str| {
        robot
            .children()
            .filter(move |n| n.has_tag_name(tag))
            .collect::<Vec<_>>()
    };
    let link_mass = |link: roxmltree::Node| -> f64 {
        link.children()
            .find(|n| n.has_tag_name("inertial"))
            .and_then(|i| i.children().find(|n| n.has_tag_name("mass")))
            .and_then(|m| m.attribute("value"))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    };
    let links = elements("link");
    let fixed_children: Vec<&str> = elements("joint")
        .into_iter()
        .filter(|j| j.attribute("type") == Some("fixed"))
        .filter_map(|j| j.children().find(|n| n.has_tag_name("child")))
        .filter_map(|c| c.attribute("link"))
        .collect();
    FileFacts {
        mass: links.iter().map(|&l| link_mass(l)).sum(),
        links: links.len(),
        massless_fixed: links
            .iter()
            .filter(|&&l| link_mass(l) == 0.0)
            .map(|l| l.attribute("name").unwrap().to_string())
            .filter(|n| fixed_children.contains(&n.as_str()))
            .collect(),
    }
}

/// The checks every real robot gets: mass, fused links, meshes and hulls.
fn check_common(path: &Path, m: &RobotModel, links_after_fusing: usize) {
    let facts = file_facts(path);
    let mass: f64 = m
        .links
        .iter()
        .filter_map(|l| l.inertial)
        .map(|i| f64::from(i.mass))
        .sum();
    assert!(
        (mass - facts.mass).abs() < 1e-5,
        "total mass {mass}, the file says {}",
        facts.mass
    );
    assert_eq!(m.links.len(), links_after_fusing);
    assert_eq!(facts.links - facts.massless_fixed.len(), links_after_fusing);
    for name in &facts.massless_fixed {
        assert!(m.link_index(name).is_none(), "{name} was not fused");
        assert!(m.frame(name).is_some(), "{name} is not findable as a frame");
    }
    if !facts.massless_fixed.is_empty() {
        assert!(
            m.notes
                .iter()
                .any(|n| n.starts_with("fused massless links into their parents")),
            "{:?}",
            m.notes
        );
    }

    assert!(!m.meshes.is_empty());
    for asset in &m.meshes {
        assert!(!asset.parts.is_empty(), "{}", asset.path.display());
        for part in &asset.parts {
            assert!(
                !part.positions.is_empty() && !part.triangles.is_empty(),
                "{}: empty part {}",
                asset.path.display(),
                part.name
            );
        }
    }
    let mut collision_meshes = 0;
    for geom in m.links.iter().flat_map(|l| &l.collisions) {
        if let Shape::Mesh { mesh, .. } = geom.shape {
            collision_meshes += 1;
            let asset = &m.meshes[mesh];
            assert!(
                asset.parts.iter().all(|p| p.hull.is_some()),
                "{}: a collision part without a hull",
                asset.path.display()
            );
        }
    }
    assert!(collision_meshes > 0);
}

fn joint_names(m: &RobotModel) -> Vec<&str> {
    m.joints.iter().map(|j| j.name.as_str()).collect()
}

fn limits(m: &RobotModel, joint: &str) -> (f32, f32) {
    let j = m
        .joint_index(joint)
        .unwrap_or_else(|| panic!("no joint {joint}"));
    m.joints[j].limits.expect("limited")
}

#[test]
fn panda_from_example_robot_data() {
    let path = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    let m = load(&path);
    assert_eq!(
        joint_names(&m),
        [
            "panda_joint1",
            "panda_joint2",
            "panda_joint3",
            "panda_joint4",
            "panda_joint5",
            "panda_joint6",
            "panda_joint7",
            "panda_finger_joint1",
            "panda_finger_joint2",
        ]
    );
    assert_eq!(limits(&m, "panda_joint1"), (-2.8973, 2.8973));
    assert_eq!(limits(&m, "panda_joint4"), (-3.0718, -0.0698));
    assert_eq!(limits(&m, "panda_finger_joint1"), (0.0, 0.04));
    let j6 = &m.joints[m.joint_index("panda_joint6").unwrap()];
    assert_eq!((j6.max_effort, j6.max_velocity), (12.0, 2.61));
    // panda_link8 and panda_hand_tcp are massless frames: 13 links, 11 bodies.
    check_common(&path, &m, 11);
    assert!(m.link_index("panda_link8").is_none());
    let hand = m.link_index("panda_hand").unwrap();
    assert_eq!(m.links[m.links[hand].parent.unwrap()].name, "panda_link7");
    // link8's 0.107 m moved into the hand's origin.
    assert!((m.links[hand].origin.translation.z - 0.107).abs() < 1e-6);
    let (tcp_link, tcp) = m.frame("panda_hand_tcp").unwrap();
    assert_eq!(tcp_link, hand);
    assert!((tcp.translation.z - 0.1034).abs() < 1e-6);
    assert_eq!(m.mimics, vec![Mimic::linear(8, 7, 1.0, 0.0)]);
    // DAE visuals and STL collisions; the finger's visual is shared by both fingers.
    let ext = |e: &str| {
        m.meshes
            .iter()
            .filter(|a| a.path.extension().is_some_and(|x| x == e))
            .count()
    };
    assert!(
        ext("dae") >= 9 && ext("stl") >= 9,
        "{} dae, {} stl",
        ext("dae"),
        ext("stl")
    );
}

#[test]
fn so100_from_example_robot_data() {
    let path = fixtures::example_robot_data().join("so_arm_description/urdf/so100.urdf");
    let m = load(&path);
    assert_eq!(
        joint_names(&m),
        [
            "shoulder_pan",
            "shoulder_lift",
            "elbow_flex",
            "wrist_flex",
            "wrist_roll",
            "gripper"
        ]
    );
    assert_eq!(limits(&m, "shoulder_lift"), (0.0, 3.5));
    assert_eq!(limits(&m, "elbow_flex"), (-3.14158, 0.0));
    assert_eq!(limits(&m, "gripper"), (-0.2, 2.0));
    check_common(&path, &m, 7);
    assert!(m.mimics.is_empty());
}

#[test]
fn so101_from_lerobot() {
    let path = fixtures::so101_dir().join("so101_new_calib.urdf");
    let m = load(&path);
    // File order, which lists the gripper first.
    assert_eq!(
        joint_names(&m),
        [
            "gripper",
            "wrist_roll",
            "wrist_flex",
            "elbow_flex",
            "shoulder_lift",
            "shoulder_pan"
        ]
    );
    assert_eq!(limits(&m, "wrist_roll"), (-2.74385, 2.84121));
    assert_eq!(limits(&m, "elbow_flex"), (-1.69, 1.69));
    assert_eq!(limits(&m, "gripper"), (-0.174533, 1.74533));
    // gripper_frame_link weighs 1e-9 kg: not massless, so it stays a link.
    check_common(&path, &m, 8);
    assert!(m.link_index("gripper_frame_link").is_some());
    assert!(m.mimics.is_empty());
    // Relative paths next to the URDF; the STL shared by several links is read once.
    assert_eq!(m.meshes.len(), 13);
}
