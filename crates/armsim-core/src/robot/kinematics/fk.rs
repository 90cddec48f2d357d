//! Forward kinematics and end-effector Jacobians: joint values → link poses, and how the tool
//! point moves per joint (mimic followers moving with their leader).

use super::*;

/// Fills `q` up to one entry per joint: given entries are kept as they are; a missing entry is
/// where its mimic puts it for a follower and zero otherwise.
pub fn complete_q(model: &RobotModel, q: &[f32]) -> Vec<f32> {
    let n = model.joints.len();
    let mut full: Vec<f32> = (0..n).map(|j| q.get(j).copied().unwrap_or(0.0)).collect();
    for m in &model.mimics {
        if m.joint >= q.len() && m.leader < n {
            full[m.joint] = m.follow(full[m.leader]);
        }
    }
    full
}

/// The motion a joint at position `value` adds on top of its link's `origin`.
pub(super) fn joint_motion(model: &RobotModel, j: usize, value: f32) -> Pose {
    let joint = &model.joints[j];
    match joint.kind {
        JointKind::Revolute => {
            // Rotation about the axis through `anchor`: the anchor stays put.
            let rotation = Quat::from_axis_angle(joint.axis, value);
            Pose::new(joint.anchor - rotation * joint.anchor, rotation)
        }
        JointKind::Prismatic => Pose::new(joint.axis * value, Quat::IDENTITY),
    }
}

/// Every link's pose in the base frame for joint positions `q` (see [`complete_q`]).
pub fn forward_kinematics(model: &RobotModel, q: &[f32]) -> Vec<Pose> {
    let q = complete_q(model, q);
    let mut poses = Vec::with_capacity(model.links.len());
    fk_into(model, &q, &mut poses);
    poses
}

/// FK with a full-length `q` into a reused buffer (the IK loop calls this many times).
pub(super) fn fk_into(model: &RobotModel, q: &[f32], poses: &mut Vec<Pose>) {
    poses.clear();
    for link in &model.links {
        let mut pose = match link.parent {
            Some(p) => poses[p].mul(&link.origin),
            None => Pose::IDENTITY,
        };
        if let Some(j) = link.joint {
            pose = pose.mul(&joint_motion(model, j, q[j]));
        }
        poses.push(pose);
    }
}

/// The end-effector point (`ee_offset` in `ee_link`) in the base frame.
pub fn ee_position(model: &RobotModel, q: &[f32]) -> Vec3 {
    forward_kinematics(model, q)[model.ee_link].transform_point(model.ee_offset)
}

/// Which links lie on the path from the root to the end-effector link: only their joints move
/// the end effector.
pub(super) fn ee_path(model: &RobotModel) -> Vec<bool> {
    let mut on_path = vec![false; model.links.len()];
    let mut link = Some(model.ee_link);
    while let Some(l) = link {
        on_path[l] = true;
        link = model.links[l].parent;
    }
    on_path
}

/// What the Jacobian columns are taken at: the link poses of one configuration and which links
/// lie on the end-effector path ([`ee_path`]). The position columns (here) and the tool-axis
/// columns (`ik.rs`) read the same three things and fold in mimic followers the same way.
pub(super) struct JacobianAt<'a> {
    pub model: &'a RobotModel,
    pub poses: &'a [Pose],
    pub on_path: &'a [bool],
    /// The joint positions `poses` are at (a follower's slope depends on its leader's).
    pub q: &'a [f32],
}

impl JacobianAt<'_> {
    /// d(ee)/d(q_j) for one joint, ignoring mimics.
    pub(super) fn column(&self, ee: Vec3, j: usize) -> Vec3 {
        let joint = &self.model.joints[j];
        if !self.on_path[joint.link] {
            return Vec3::ZERO;
        }
        // The link pose already includes the joint's motion, which leaves axis and anchor in
        // place.
        let pose = &self.poses[joint.link];
        let axis = pose.rotation * joint.axis;
        match joint.kind {
            JointKind::Revolute => axis.cross(ee - pose.transform_point(joint.anchor)),
            JointKind::Prismatic => axis,
        }
    }

    /// Column of the position Jacobian for commanding joint `j`, including the joints that
    /// mimic it.
    pub(super) fn column_with_followers(&self, ee: Vec3, j: usize) -> Vec3 {
        self.with_followers(j, |k| self.column(ee, k))
    }

    /// `column` of joint `j` plus, for each joint that mimics it, that joint's column times its
    /// slope at `j`'s position: the motion of commanding `j` (followers move with their leader).
    pub(super) fn with_followers(&self, j: usize, column: impl Fn(usize) -> Vec3) -> Vec3 {
        let x = self.q.get(j).copied().unwrap_or(0.0);
        self.model
            .followers(j)
            .fold(column(j), |c, m| c + m.slope(x) * column(m.joint))
    }
}

/// Position Jacobian of the end effector (base frame, metres per joint unit) with respect to each
/// joint in `joints`, one column per entry. Mimic followers move with their leader. Indices out
/// of range give a zero column.
pub fn ee_jacobian(model: &RobotModel, q: &[f32], joints: &[usize]) -> Vec<Vec3> {
    let poses = forward_kinematics(model, q);
    let on_path = ee_path(model);
    let ee = poses[model.ee_link].transform_point(model.ee_offset);
    let at = JacobianAt {
        model,
        poses: &poses,
        on_path: &on_path,
        q,
    };
    joints
        .iter()
        .map(|&j| {
            if j < model.joints.len() {
                at.column_with_followers(ee, j)
            } else {
                Vec3::ZERO
            }
        })
        .collect()
}
