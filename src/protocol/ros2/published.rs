//! What armsim publishes to ROS 2, built from the simulation: the per-step [`Frame`]
//! (`/clock`, `joint_states`, `/tf`) and the [`Latched`] topics sent once (`/tf_static`,
//! `robot_description`). Pure functions of the model and a view, so the TF tree is unit-tested
//! against the robot's own kinematics without DDS.
//!
//! The TF tree is the one `robot_state_publisher` would build from our URDF and joint states:
//! - `world → <root link>`: the robot's base pose in the scene, static;
//! - `<parent> → <link>` for every link moved by a joint, from the measured joint positions
//!   through the model's forward kinematics (so TF and `joint_states` always agree);
//! - `<parent> → <link>` for every link welded to its parent (a fixed joint to a link with
//!   mass), static, at its origin;
//! - `<link> → <site>` for every site, static: the URDF loader folds massless fixed links
//!   (`panda_hand_tcp`, tool points) into their ancestor and keeps them as sites, and RViz's
//!   robot model would miss their frames otherwise;
//! - `world → <object>` for every cube, from the physics.
//!
//! Frame ids are the model's link names and the scene's object names, unprefixed.

use armsim_core::geometry::Pose;
use armsim_core::robot::kinematics::forward_kinematics;

use super::link::{Frame, Latched};
use super::msgs::{
    Clock, Header, JointState, Quaternion, TFMessage, Time, Transform, TransformStamped, Vector3,
};
use super::stamp::time_from_steps;
use crate::sim::{SimModel, SimView};

/// The fixed frame everything hangs from, as in Gazebo's and Isaac Sim's bridges.
pub const WORLD_FRAME: &str = "world";

/// The topics published once, for late joiners: the static part of the TF tree and, for a
/// robot loaded from a URDF file, its text.
pub fn latched(model: &SimModel, robot_description: Option<String>) -> Latched {
    let robot = &model.robot;
    let stamp = Time::default();
    let mut transforms = Vec::new();
    if let Some(root) = robot.links.iter().find(|l| l.parent.is_none()) {
        transforms.push(stamped(stamp, WORLD_FRAME, &root.name, &model.base_pose));
    }
    for link in &robot.links {
        if let (Some(parent), None) = (link.parent, link.joint) {
            transforms.push(stamped(
                stamp,
                &robot.links[parent].name,
                &link.name,
                &link.origin,
            ));
        }
    }
    for site in &robot.sites {
        transforms.push(stamped(
            stamp,
            &robot.links[site.link].name,
            &site.name,
            &site.pose,
        ));
    }
    Latched {
        tf_static: TFMessage { transforms },
        robot_description,
    }
}

/// The state after `steps` physics steps of this episode, stamped in sim time.
pub fn frame(view: &SimView<'_>, steps: u64) -> Frame {
    let robot = &view.robot;
    let stamp = time_from_steps(steps);
    let (q, qd) = armsim_core::state::joint_state(view);
    let joint_states = JointState {
        header: Header {
            stamp,
            frame_id: String::new(),
        },
        name: robot.joints.iter().map(|j| j.name.clone()).collect(),
        position: q.iter().map(|&v| f64::from(v)).collect(),
        velocity: qd.iter().map(|&v| f64::from(v)).collect(),
        effort: Vec::new(),
    };
    let poses = forward_kinematics(robot, &q);
    let mut transforms = Vec::with_capacity(robot.links.len() + view.objects.len());
    for (i, link) in robot.links.iter().enumerate() {
        if let (Some(parent), Some(_)) = (link.parent, link.joint) {
            let relative = poses[parent].inverse().mul(&poses[i]);
            transforms.push(stamped(
                stamp,
                &robot.links[parent].name,
                &link.name,
                &relative,
            ));
        }
    }
    for object in &view.objects {
        let pose = view.body_pose(object.body);
        transforms.push(stamped(stamp, WORLD_FRAME, &object.name, &pose));
    }
    Frame {
        clock: Clock { clock: stamp },
        joint_states,
        tf: TFMessage { transforms },
    }
}

fn stamped(stamp: Time, parent: &str, child: &str, pose: &Pose) -> TransformStamped {
    let (t, r) = (pose.translation, pose.rotation);
    TransformStamped {
        header: Header {
            stamp,
            frame_id: parent.to_string(),
        },
        child_frame_id: child.to_string(),
        transform: Transform {
            translation: Vector3 {
                x: f64::from(t.x),
                y: f64::from(t.y),
                z: f64::from(t.z),
            },
            rotation: Quaternion {
                x: f64::from(r.x),
                y: f64::from(r.y),
                z: f64::from(r.z),
                w: f64::from(r.w),
            },
        },
    }
}

#[cfg(test)]
mod tests;
