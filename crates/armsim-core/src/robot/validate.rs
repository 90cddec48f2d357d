//! The invariants every consumer of a [`RobotModel`] relies on ([`validate`]) and the
//! parents-first link order both loaders build ([`topological_order`]).

use std::collections::HashSet;

use super::error::{RobotError, invalid};
use super::model::{Geom, RobotModel, Shape};
use crate::geometry::Pose;

/// Checks the invariants every consumer of a [`RobotModel`] relies on. Both loaders call it last,
/// so a hand-built model can be checked the same way.
pub fn validate(model: &RobotModel) -> Result<(), RobotError> {
    if model.links.is_empty() {
        return Err(RobotError::NoLinks);
    }
    unique(model.links.iter().map(|l| l.name.as_str()), "link")?;
    unique(model.joints.iter().map(|j| j.name.as_str()), "joint")?;
    unique(
        model
            .joints
            .iter()
            .filter_map(|j| j.actuator.as_ref().map(|a| a.name.as_str())),
        "actuator",
    )?;

    for (i, link) in model.links.iter().enumerate() {
        let ctx = || format!("link `{}`", link.name);
        match (i, link.parent) {
            (0, None) => {}
            (0, Some(_)) => {
                return Err(RobotError::InvalidTree(format!(
                    "root link `{}` has a parent",
                    link.name
                )));
            }
            (_, None) => {
                return Err(RobotError::InvalidTree(format!(
                    "link `{}` is a second root (not connected to `{}`)",
                    link.name, model.links[0].name
                )));
            }
            (_, Some(p)) if p >= i => {
                return Err(RobotError::InvalidTree(format!(
                    "link `{}` comes before its parent",
                    link.name
                )));
            }
            _ => {}
        }
        if i == 0 && link.joint.is_some() {
            return Err(RobotError::InvalidTree(format!(
                "root link `{}` cannot have a joint",
                link.name
            )));
        }
        check_pose(&link.origin, &ctx)?;
        if let Some(j) = link.joint {
            match model.joints.get(j) {
                Some(joint) if joint.link == i => {}
                _ => {
                    return Err(RobotError::InvalidTree(format!(
                        "link `{}` and its joint disagree",
                        link.name
                    )));
                }
            }
        }
        if let Some(inertial) = &link.inertial {
            if !(inertial.mass.is_finite() && inertial.mass > 0.0) {
                return Err(invalid(
                    ctx(),
                    format!("mass must be positive, got {}", inertial.mass),
                ));
            }
            let ok = inertial.com.is_finite()
                && inertial.principal_inertia.is_finite()
                && inertial.principal_inertia.min_element() >= 0.0;
            if !ok {
                return Err(invalid(ctx(), "inertia must be finite and non-negative"));
            }
        }
        for geom in link.collisions.iter().chain(&link.visuals) {
            check_geom(geom, &ctx)?;
            if let Shape::Mesh { mesh, .. } = geom.shape
                && mesh >= model.meshes.len()
            {
                return Err(invalid(ctx(), format!("mesh index {mesh} out of range")));
            }
        }
    }

    for (j, joint) in model.joints.iter().enumerate() {
        let ctx = || format!("joint `{}`", joint.name);
        if model.links.get(joint.link).and_then(|l| l.joint) != Some(j) {
            return Err(RobotError::InvalidTree(format!(
                "joint `{}` and its link disagree",
                joint.name
            )));
        }
        if !(joint.axis.is_finite() && (joint.axis.length() - 1.0).abs() < 1e-3) {
            return Err(invalid(ctx(), "axis must be a unit vector"));
        }
        if !joint.anchor.is_finite() {
            return Err(invalid(ctx(), "anchor must be finite"));
        }
        if let Some((lower, upper)) = joint.limits {
            if !(lower.is_finite() && upper.is_finite()) {
                return Err(invalid(ctx(), "limits must be finite"));
            }
            if lower > upper {
                return Err(RobotError::InvalidLimits {
                    joint: joint.name.clone(),
                    lower,
                    upper,
                });
            }
        }
        for (what, v) in [
            ("max_effort", joint.max_effort),
            ("max_velocity", joint.max_velocity),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(ctx(), format!("{what} must be positive, got {v}")));
            }
        }
        for (what, v) in [
            ("damping", joint.damping),
            ("frictionloss", joint.frictionloss),
            ("kp", joint.kp),
            ("kd", joint.kd),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(
                    ctx(),
                    format!("{what} must be non-negative, got {v}"),
                ));
            }
        }
    }

    for joint in &model.joints {
        if let Some(s) = joint.servo
            && !(s.kp.is_finite()
                && s.kp > 0.0
                && s.kv.is_finite()
                && s.kv >= 0.0
                && s.max_force > 0.0)
        {
            return Err(invalid(
                format!("joint `{}`", joint.name),
                format!("servo gains must be kp > 0, kv ≥ 0 and a positive force range, got {s:?}"),
            ));
        }
    }

    let mut followers = HashSet::new();
    for m in &model.mimics {
        let (Some(joint), Some(leader)) = (model.joints.get(m.joint), model.joints.get(m.leader))
        else {
            return Err(RobotError::InvalidTree(
                "mimic joint index out of range".into(),
            ));
        };
        let err = |reason: &str| RobotError::InvalidMimic {
            joint: joint.name.clone(),
            reason: reason.into(),
        };
        if m.joint == m.leader {
            return Err(err("a joint cannot follow itself"));
        }
        if !(m.multiplier.is_finite()
            && m.offset.is_finite()
            && m.higher.iter().all(|c| c.is_finite()))
        {
            return Err(err("its coefficients must be finite"));
        }
        if !followers.insert(m.joint) {
            return Err(err("it follows more than one leader"));
        }
        if model.mimics.iter().any(|o| o.joint == m.leader) {
            return Err(err(&format!(
                "its leader `{}` itself follows another joint (chains are not supported)",
                leader.name
            )));
        }
    }

    if model.ee_link >= model.links.len() {
        return Err(RobotError::InvalidTree(
            "end-effector link index out of range".into(),
        ));
    }
    if !model.ee_offset.is_finite() {
        return Err(invalid("end effector", "offset must be finite"));
    }
    Ok(())
}

fn unique<'a>(names: impl Iterator<Item = &'a str>, kind: &'static str) -> Result<(), RobotError> {
    let mut seen = HashSet::new();
    for name in names {
        if !seen.insert(name) {
            return Err(RobotError::DuplicateName {
                kind,
                name: name.to_string(),
            });
        }
    }
    Ok(())
}

fn check_pose(pose: &Pose, ctx: &dyn Fn() -> String) -> Result<(), RobotError> {
    if pose.translation.is_finite() && pose.rotation.is_finite() && pose.rotation.is_normalized() {
        Ok(())
    } else {
        Err(invalid(ctx(), "pose must be finite with a unit rotation"))
    }
}

fn check_geom(geom: &Geom, ctx: &dyn Fn() -> String) -> Result<(), RobotError> {
    check_pose(&geom.pose, ctx)?;
    let positive = |v: f32| v.is_finite() && v > 0.0;
    // `sim::world`'s object size matches the same arms of `Shape` (a `duplicates` pair) but
    // takes the largest size, where this checks each one (a capsule's half length may be 0):
    // alike in form only, so each keeps its own match.
    let ok = match geom.shape {
        Shape::Box { half_extents } => half_extents.to_array().into_iter().all(positive),
        Shape::Sphere { radius } => positive(radius),
        Shape::Capsule {
            radius,
            half_length,
        }
        | Shape::Cylinder {
            radius,
            half_length,
        } => positive(radius) && half_length.is_finite() && half_length >= 0.0,
        Shape::Mesh {
            scale,
            half_extents,
            ..
        } => {
            scale.is_finite()
                && scale.abs().min_element() > 0.0
                && half_extents.to_array().into_iter().all(positive)
        }
    };
    if !ok {
        return Err(invalid(ctx(), "geometry sizes must be positive"));
    }
    if geom.friction.is_some_and(|f| !(f.is_finite() && f >= 0.0)) {
        return Err(invalid(ctx(), "friction must be non-negative"));
    }
    if geom.density.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
        return Err(invalid(ctx(), "density must be non-negative"));
    }
    if !geom.rgba.iter().all(|c| c.is_finite()) {
        return Err(invalid(ctx(), "rgba must be finite"));
    }
    Ok(())
}

/// Orders links parents-first with the root at index 0, keeping file order wherever the tree
/// allows, and remaps parents and joints to the new indices. `parents[i]` is link `i`'s parent
/// in the input order. Fails if there is not exactly one root or the links form a cycle.
pub(crate) fn topological_order(
    names: &[String],
    parents: &[Option<usize>],
) -> Result<Vec<usize>, RobotError> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let n = parents.len();
    if n == 0 {
        return Err(RobotError::NoLinks);
    }
    let roots: Vec<usize> = (0..n).filter(|&i| parents[i].is_none()).collect();
    if roots.len() != 1 {
        let names: Vec<&str> = roots.iter().map(|&i| names[i].as_str()).collect();
        return Err(RobotError::InvalidTree(if names.is_empty() {
            "no root link (the links form a cycle)".to_string()
        } else {
            format!(
                "{} root links ({}); exactly one link must have no parent",
                names.len(),
                names.join(", ")
            )
        }));
    }
    let mut children = vec![Vec::new(); n];
    for (i, p) in parents.iter().enumerate() {
        if let Some(p) = *p {
            children[p].push(i);
        }
    }
    // Smallest file index first keeps the output as close to the file as the tree allows.
    let mut ready = BinaryHeap::from([Reverse(roots[0])]);
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        ready.extend(children[i].iter().map(|&c| Reverse(c)));
    }
    if order.len() != n {
        let placed: HashSet<usize> = order.iter().copied().collect();
        let stuck: Vec<&str> = (0..n)
            .filter(|i| !placed.contains(i))
            .map(|i| names[i].as_str())
            .collect();
        return Err(RobotError::InvalidTree(format!(
            "links in a cycle: {}",
            stuck.join(", ")
        )));
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::test_support::bare_model;

    #[test]
    fn topological_order_keeps_file_order_and_rejects_bad_trees() {
        let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        // c's parent is d, which comes later in the file.
        let order = topological_order(&names, &[None, Some(0), Some(3), Some(0)]).unwrap();
        assert_eq!(order, vec![0, 1, 3, 2]);

        let e = topological_order(&names, &[None, None, Some(0), Some(0)]).unwrap_err();
        assert!(e.to_string().contains("2 root links (a, b)"), "{e}");

        let e = topological_order(&names, &[None, Some(2), Some(1), Some(0)]).unwrap_err();
        assert!(e.to_string().contains("links in a cycle: b, c"), "{e}");
    }

    #[test]
    fn validate_reports_no_links() {
        let model = bare_model("empty", vec![]);
        let e = validate(&model).unwrap_err();
        assert!(matches!(e, RobotError::NoLinks));
        assert_eq!(e.to_string(), "the robot has no links");
    }
}
