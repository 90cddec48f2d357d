//! Mass and inertia estimates from shapes: volumes, solid-shape inertia at MuJoCo's default
//! density, the mass parts of a link, and the effective inertia a joint moves.
//!
//! Shared by both loaders (gain scaling, fusing bodies) and the gravity compensation, so that
//! one density and one set of formulas answer for all of them.

use glam::{Quat, Vec3};

use super::kinematics;
use super::model::{JointKind, Link, RobotModel, Shape};
use crate::geometry::Pose;

/// MuJoCo's default geom density (water), used only to estimate inertia for gain scaling.
pub(crate) const MUJOCO_DENSITY: f32 = 1000.0;

/// Principal inertia of a solid shape of mass `mass` about its centre, in the shape's frame.
/// Capsules are approximated by a cylinder of the capsule's full length, which is plenty for gain
/// scaling and default masses.
pub fn shape_inertia(shape: &Shape, mass: f32) -> Vec3 {
    match *shape {
        Shape::Box { half_extents: h }
        | Shape::Mesh {
            half_extents: h, ..
        } => {
            let s = h * 2.0;
            Vec3::new(
                s.y * s.y + s.z * s.z,
                s.x * s.x + s.z * s.z,
                s.x * s.x + s.y * s.y,
            ) * (mass / 12.0)
        }
        Shape::Sphere { radius } => Vec3::splat(0.4 * mass * radius * radius),
        Shape::Cylinder {
            radius,
            half_length,
        } => cylinder_inertia(mass, radius, 2.0 * half_length),
        Shape::Capsule {
            radius,
            half_length,
        } => cylinder_inertia(mass, radius, 2.0 * (half_length + radius)),
    }
}

fn cylinder_inertia(mass: f32, radius: f32, length: f32) -> Vec3 {
    let side = mass * (3.0 * radius * radius + length * length) / 12.0;
    Vec3::new(side, side, 0.5 * mass * radius * radius)
}

/// Volume of a shape in m³.
pub fn shape_volume(shape: &Shape) -> f32 {
    use std::f32::consts::PI;
    match *shape {
        Shape::Box { half_extents: h } => 8.0 * h.x * h.y * h.z,
        // A mesh's volume is not computed: half its bounding box is a fair guess for robot parts.
        Shape::Mesh {
            half_extents: h, ..
        } => 4.0 * h.x * h.y * h.z,
        Shape::Sphere { radius } => 4.0 / 3.0 * PI * radius.powi(3),
        Shape::Cylinder {
            radius,
            half_length,
        } => PI * radius * radius * 2.0 * half_length,
        Shape::Capsule {
            radius,
            half_length,
        } => PI * radius * radius * (2.0 * half_length + 4.0 / 3.0 * radius),
    }
}

/// The masses of `link` with its frame at `at`: its explicit inertial, else each collision geom
/// at its density (MuJoCo's default when unset). Each part is `(mass, centre, principal
/// moments, the moments' axes)`, centre and axes in the frame `at` is expressed in.
pub(crate) fn mass_parts(link: &Link, at: &Pose) -> Vec<(f32, Vec3, Vec3, Quat)> {
    match &link.inertial {
        Some(inertial) => vec![(
            inertial.mass,
            at.transform_point(inertial.com),
            inertial.principal_inertia,
            at.rotation,
        )],
        None => link
            .collisions
            .iter()
            .map(|g| {
                let mass = g.density.unwrap_or(MUJOCO_DENSITY) * shape_volume(&g.shape);
                let frame = at.mul(&g.pose);
                (
                    mass,
                    frame.translation,
                    shape_inertia(&g.shape, mass),
                    frame.rotation,
                )
            })
            .collect(),
    }
}

/// Mass (slide) or moment of inertia about the axis (hinge) of everything joint `j` moves, at
/// q = 0. Links without an inertial count their collision geoms at their density (MuJoCo's
/// default when unset).
pub(crate) fn effective_inertia(model: &RobotModel, j: usize) -> f32 {
    let joint = &model.joints[j];
    let poses = kinematics::forward_kinematics(model, &[]);
    let axis = poses[joint.link].rotation * joint.axis;
    let anchor = poses[joint.link].transform_point(joint.anchor);
    let mut in_subtree = vec![false; model.links.len()];
    let mut total = 0.0;
    for (i, link) in model.links.iter().enumerate() {
        in_subtree[i] = i == joint.link || link.parent.is_some_and(|p| in_subtree[p]);
        if !in_subtree[i] {
            continue;
        }
        for (mass, centre, moments, rot) in mass_parts(link, &poses[i]) {
            total += match joint.kind {
                JointKind::Prismatic => mass,
                JointKind::Revolute => {
                    let r = centre - anchor;
                    let perp = r - axis * r.dot(axis);
                    let local = rot.inverse() * axis;
                    mass * perp.length_squared() + (moments * local * local).element_sum()
                }
            };
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_volumes_and_inertia() {
        let b = Shape::Box {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        assert!((shape_volume(&b) - 1.0).abs() < 1e-6);
        assert!(
            (shape_inertia(&b, 6.0) - Vec3::splat(1.0))
                .abs()
                .max_element()
                < 1e-6
        );
        let s = Shape::Sphere { radius: 1.0 };
        assert!((shape_inertia(&s, 1.0).x - 0.4).abs() < 1e-6);
    }
}
