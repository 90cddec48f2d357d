//! The TF tree armsim publishes is the robot's own kinematics: composing `/tf_static` and
//! `/tf` from `world` gives every link where the model and the physics put it.

use std::collections::HashMap;
use std::path::Path;

use armsim_core::geometry::Pose;
use armsim_core::robot::kinematics::forward_kinematics;
use armsim_core::scene::load_scene;
use armsim_core::sim::SimWorld;
use bevy::math::{Quat, Vec3};

use super::*;

fn world(name: &str) -> SimWorld {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/scenes")
        .join(name);
    SimWorld::new(&load_scene(&path).expect("scene loads"))
}

fn pose_of(t: &TransformStamped) -> Pose {
    let (v, q) = (t.transform.translation, t.transform.rotation);
    Pose::new(
        Vec3::new(v.x as f32, v.y as f32, v.z as f32),
        Quat::from_xyzw(q.x as f32, q.y as f32, q.z as f32, q.w as f32),
    )
}

/// Every frame's pose in `world`, composed through its parents, and checks that each child
/// has exactly one parent (a tree, as tf2 requires).
fn resolve(transforms: &[TransformStamped]) -> HashMap<String, Pose> {
    let mut parent_of: HashMap<&str, (&str, Pose)> = HashMap::new();
    for t in transforms {
        let old = parent_of.insert(&t.child_frame_id, (&t.header.frame_id, pose_of(t)));
        assert!(old.is_none(), "{} has two parents", t.child_frame_id);
    }
    let mut out = HashMap::new();
    for &child in parent_of.keys() {
        let (mut pose, mut at) = (Pose::IDENTITY, child);
        for _ in 0..=parent_of.len() {
            let Some((parent, local)) = parent_of.get(at) else {
                break;
            };
            pose = local.mul(&pose);
            at = parent;
        }
        assert_eq!(at, WORLD_FRAME, "{child} does not hang from world");
        out.insert(child.to_string(), pose);
    }
    out
}

fn close(a: &Pose, b: &Pose, tol: f32) -> bool {
    a.translation.distance(b.translation) < tol && a.rotation.angle_between(b.rotation) < tol
}

#[test]
fn the_tf_tree_places_every_link_where_the_kinematics_does() {
    for scene in ["default_scene.json", "gripper4.json"] {
        let w = world(scene);
        let view = w.view();
        let mut all = latched(&view, None).tf_static.transforms;
        let f = frame(&view, 0);
        all.extend(f.tf.transforms.clone());
        let poses = resolve(&all);
        let q = armsim_core::state::joint_state(&view).0;
        let fk = forward_kinematics(&view.robot, &q);
        for (i, link) in view.robot.links.iter().enumerate() {
            let want = view.base_pose.mul(&fk[i]);
            let got = poses
                .get(&link.name)
                .unwrap_or_else(|| panic!("{scene}: no frame for link {}", link.name));
            assert!(close(got, &want, 1e-4), "{scene}: {}", link.name);
            // The physics body is the link frame too (the cameras rely on it).
            let body = view.body_pose(view.link_bodies[i]);
            assert!(close(got, &body, 2e-3), "{scene}: {} vs physics", link.name);
        }
        for site in &view.robot.sites {
            let want = view.base_pose.mul(&fk[site.link]).mul(&site.pose);
            assert!(
                close(&poses[&site.name], &want, 1e-4),
                "{scene}: {}",
                site.name
            );
        }
        for object in &view.objects {
            let want = view.body_pose(object.body);
            assert!(close(&poses[&object.name], &want, 1e-6), "{}", object.name);
        }
    }
}

#[test]
fn a_frame_carries_the_joints_in_model_order_stamped_in_sim_time() {
    let w = world("default_scene.json");
    let view = w.view();
    let f = frame(&view, 240 * 3 + 24);
    let names: Vec<_> = view.robot.joints.iter().map(|j| j.name.clone()).collect();
    assert_eq!(f.joint_states.name, names);
    assert_eq!(f.joint_states.position.len(), names.len());
    assert_eq!(f.joint_states.velocity.len(), names.len());
    assert!(f.joint_states.effort.is_empty());
    let stamp = Time {
        sec: 3,
        nanosec: 100_000_000,
    };
    assert_eq!(f.clock.clock, stamp);
    assert_eq!(f.joint_states.header.stamp, stamp);
    assert!(f.tf.transforms.iter().all(|t| t.header.stamp == stamp));
}

#[test]
fn robot_description_rides_along_only_when_given() {
    let w = world("gripper4.json");
    let view = w.view();
    assert_eq!(latched(&view, None).robot_description, None);
    let text = "<robot name=\"x\"/>".to_string();
    assert_eq!(
        latched(&view, Some(text.clone())).robot_description,
        Some(text)
    );
}
