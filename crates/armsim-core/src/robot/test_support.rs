//! Fixtures the robot module's unit tests share: hand-built models and links.
//!
//! Compiled for tests only. Loader tests, kinematics tests and self-collision tests build small
//! models by hand; one constructor keeps them from each spelling out every field.

use glam::Vec3;

use super::model::{Link, Mimic, RobotModel};

/// A model of `links` with no joints, mimics, sites, meshes, cameras or notes, its end effector
/// the origin of link 0 and self-collision off.
pub(crate) fn bare_model(name: &str, links: Vec<Link>) -> RobotModel {
    RobotModel {
        name: name.into(),
        links,
        joints: Vec::new(),
        mimics: Vec::new(),
        tendons: Vec::new(),
        ee_link: 0,
        ee_offset: Vec3::ZERO,
        ee_axis: None,
        sites: Vec::new(),
        meshes: Vec::new(),
        home: None,
        cameras: Vec::new(),
        notes: Vec::new(),
        self_collision: Default::default(),
    }
}

/// Asserts that `m` is called `name` and has exactly the joints `joints`, in that order.
pub(crate) fn assert_joint_names(m: &RobotModel, name: &str, joints: &[&str]) {
    assert_eq!(m.name, name);
    let names: Vec<&str> = m.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, joints);
}

/// Joint `joint` following `leader`: `q = multiplier * q_leader + offset`.
pub(crate) fn mimic(joint: usize, leader: usize, multiplier: f32, offset: f32) -> Mimic {
    Mimic::linear(joint, leader, multiplier, offset)
}
