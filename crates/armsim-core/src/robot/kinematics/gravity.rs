//! Gravity compensation: the joint torques that hold the arm still against gravity, from link
//! masses (explicit inertials or geom volumes at a density).

use super::*;
use crate::robot::inertia::shape_volume;

/// Mass and centre of mass (link frame) of a link: its explicit inertial, else its collision
/// geoms at their density (`default_density` where a geom has none). `None` for a massless link.
pub fn link_mass(link: &Link, default_density: f32) -> Option<(f32, Vec3)> {
    if let Some(i) = &link.inertial {
        return Some((i.mass, i.com));
    }
    let (mass, moment) = link.collisions.iter().fold((0.0, Vec3::ZERO), |(m, s), g| {
        let gm = g.density.unwrap_or(default_density) * shape_volume(&g.shape);
        (m + gm, s + g.pose.translation * gm)
    });
    (mass > 0.0).then(|| (mass, moment / mass))
}

/// Joint torques (N·m) and forces (N) that hold the robot still at `q` against `gravity` (m/s²,
/// expressed in the base frame): the feed-forward a PD motor needs so it does not sag. Links
/// without an inertial count their collision geoms at `default_density`. Each joint is treated on
/// its own, mimic followers included, since each has its own motor.
pub fn gravity_compensation(
    model: &RobotModel,
    q: &[f32],
    gravity: Vec3,
    default_density: f32,
) -> Vec<f32> {
    let poses = forward_kinematics(model, q);
    // Mass and world-frame centre of every link, then subtree sums (children come after
    // parents, so one backward pass accumulates them).
    let mut mass = vec![0.0f32; model.links.len()];
    let mut moment = vec![Vec3::ZERO; model.links.len()];
    for (i, link) in model.links.iter().enumerate() {
        if let Some((m, com)) = link_mass(link, default_density) {
            mass[i] = m;
            moment[i] = poses[i].transform_point(com) * m;
        }
    }
    for i in (1..model.links.len()).rev() {
        if let Some(p) = model.links[i].parent {
            let (m, s) = (mass[i], moment[i]);
            mass[p] += m;
            moment[p] += s;
        }
    }
    model
        .joints
        .iter()
        .map(|joint| {
            let l = joint.link;
            let pose = &poses[l];
            let axis = pose.rotation * joint.axis;
            let force = gravity * mass[l];
            // Generalised gravity force: the work gravity does per unit of joint motion; the
            // motor must supply its opposite.
            let generalised = match joint.kind {
                JointKind::Revolute => {
                    let anchor = pose.transform_point(joint.anchor);
                    axis.dot((moment[l] - anchor * mass[l]).cross(gravity))
                }
                JointKind::Prismatic => axis.dot(force),
            };
            -generalised
        })
        .collect()
}
