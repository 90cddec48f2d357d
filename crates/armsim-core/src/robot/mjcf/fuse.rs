//! Joint-less MJCF bodies fused into their parents for simulation, with the combined inertia.
//!
//! A body with no joint (the Panda's `hand`) moves with its parent; as a link of its own it is
//! one more multibody link whose Jacobian, velocity and share of the mass matrix Rapier
//! recomputes every substep, for nothing. Loading a robot file ([`crate::robot::load_robot`])
//! fuses it as the URDF loader fuses massless fixed links (both through `robot::fold`): its
//! geoms and visuals move into the nearest kept ancestor with their poses composed, its children
//! re-parent onto that ancestor, its mass joins the ancestor's (parallel-axis theorem, moments
//! about the ancestor's axes), and its name stays findable as a
//! [`Site`](crate::robot::model::Site) there, so a scene's `tool.frame`, a camera's `attach`
//! and `collide_geoms` still find it. The self-collision table moves with the geoms: a fused
//! body was in its ancestor's weld group already, so no pair changes.
//!
//! `parse_mjcf` (text) keeps the file's bodies as they are, for tests that look at them.

use glam::{Mat3, Quat, Vec3};

use crate::camera::spec::CameraMount;
use crate::geometry::Pose;
use crate::robot::fold::fold_links;
use crate::robot::inertia::mass_parts;
use crate::robot::model::{Inertial, Link, RobotModel};

/// `model` with every joint-less body but the root fused into its nearest ancestor that has a
/// joint (or the root).
pub(crate) fn fuse_jointless(mut model: RobotModel) -> RobotModel {
    if !model
        .links
        .iter()
        .any(|l| l.parent.is_some() && l.joint.is_none())
    {
        return model;
    }
    let old_groups = std::mem::take(&mut model.self_collision.groups);
    let folded = fold_links(
        std::mem::take(&mut model.links),
        &mut model.joints,
        |l| l.joint.is_none(),
        |dst, link, o| dst.inertial = combine(dst, link, o),
    );
    let at = |i: usize| folded.at[i];
    // The file's own sites are remapped; the fused bodies' come after them.
    for s in &mut model.sites {
        let (l, o) = at(s.link);
        s.link = l;
        s.pose = o.mul(&s.pose);
    }
    for c in &mut model.cameras {
        if let CameraMount::Link { link, pose } = &mut c.mount {
            let (l, o) = at(*link);
            *link = l;
            *pose = o.mul(pose);
        }
    }
    let (ee, o) = at(model.ee_link);
    model.ee_link = ee;
    model.ee_offset = o.transform_point(model.ee_offset);
    let sc = &mut model.self_collision;
    if !old_groups.is_empty() {
        // A fused body's geoms joined its kept ancestor's after the ancestor's own, in link
        // order, and so do their rows.
        let mut groups = vec![Vec::new(); folded.links.len()];
        for (i, rows) in old_groups.into_iter().enumerate() {
            groups[at(i).0].extend(rows);
        }
        sc.groups = groups;
    }
    for p in &mut sc.pairs {
        let (a, b) = (at(p.0).0, at(p.1).0);
        *p = (a.min(b), a.max(b));
    }
    sc.pairs.retain(|p| p.0 != p.1);
    sc.pairs.sort_unstable();
    sc.pairs.dedup();
    model.sites.extend(folded.sites);
    model.links = folded.links;
    model.notes.push(format!(
        "fused joint-less bodies into their parents: {}",
        folded.pairs.join(", ")
    ));
    model
}

/// The inertial of `parent` with `child` (at `offset` in the parent's frame) joined to it.
/// A link without one weighs what its collision geoms do at their density (MuJoCo's
/// `inertiafromgeom`, and what Rapier gives a link without one), so neither side's mass is
/// lost when only the other has an explicit inertial.
fn combine(parent: &Link, child: &Link, offset: &Pose) -> Option<Inertial> {
    if parent.inertial.is_none() && child.inertial.is_none() {
        return None;
    }
    let mut parts: Vec<(f32, Vec3, Mat3)> = Vec::new();
    let mut add = |link: &Link, at: &Pose| {
        let rotated = mass_parts(link, at)
            .into_iter()
            .map(|(mass, centre, moments, axes)| (mass, centre, rotated(axes, moments)));
        parts.extend(rotated);
    };
    add(parent, &Pose::IDENTITY);
    add(child, offset);
    let mass: f32 = parts.iter().map(|p| p.0).sum();
    if mass <= 0.0 {
        return None;
    }
    let com = parts.iter().map(|p| p.0 * p.1).sum::<Vec3>() / mass;
    let mut tensor = Mat3::ZERO;
    for (m, c, i) in parts {
        let d = c - com;
        tensor += i + (Mat3::IDENTITY * d.length_squared() - outer(d, d)) * m;
    }
    Some(Inertial {
        mass,
        com,
        // The model keeps moments about the link's axes (as the MJCF loader reads a rotated
        // inertial): the diagonal.
        principal_inertia: Vec3::new(tensor.x_axis.x, tensor.y_axis.y, tensor.z_axis.z),
    })
}

/// `diag` (moments about the axes `axes`) as a tensor in the axes `axes` is expressed in.
fn rotated(axes: Quat, diag: Vec3) -> Mat3 {
    let r = Mat3::from_quat(axes);
    r * Mat3::from_diagonal(diag) * r.transpose()
}

fn outer(a: Vec3, b: Vec3) -> Mat3 {
    Mat3::from_cols(a * b.x, a * b.y, a * b.z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::mjcf::parse_mjcf;

    const XML: &str = r#"<mujoco>
      <worldbody><body name="base">
        <body name="mount" pos="0 0 0.1"><geom type="box" size="0.05 0.05 0.05"/></body>
        <body name="l1" pos="0 0 0.2">
          <joint name="j1" axis="0 0 1"/>
          <inertial pos="0 0 0.1" mass="2" diaginertia="0.02 0.02 0.01"/>
          <geom type="box" size="0.02 0.02 0.1" pos="0 0 0.1"/>
          <body name="hand" pos="0 0 0.3" quat="0 1 0 0">
            <inertial pos="0 0 0.05" mass="1" diaginertia="0.003 0.002 0.001"/>
            <geom name="palm" type="sphere" size="0.03"/>
            <site name="tcp" pos="0 0 0.1"/>
            <camera name="wrist" pos="0 0 0.02"/>
            <body name="finger" pos="0 0 0.08">
              <joint name="f" type="slide" axis="1 0 0" range="0 0.04"/>
              <inertial mass="0.1" diaginertia="1e-5 1e-5 1e-5"/>
              <geom type="box" size="0.01 0.01 0.02"/>
            </body>
          </body>
        </body>
      </body></worldbody>
    </mujoco>"#;

    #[test]
    fn a_jointless_body_joins_its_parent_with_the_combined_inertia() {
        let file = parse_mjcf(XML).unwrap();
        let m = fuse_jointless(file.clone());
        let names: Vec<&str> = m.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["base", "l1", "finger"]);
        // The hand's mass and moments are l1's now: 3 kg, the centre between the two.
        let l1 = m.links[1].inertial.unwrap();
        assert!((l1.mass - 3.0).abs() < 1e-6);
        // hand at z 0.3 turned half about X: its centre (0 0 0.05) lands at z 0.25.
        let com = (2.0 * 0.1 + 1.0 * 0.25) / 3.0;
        assert!(
            (l1.com - Vec3::new(0.0, 0.0, com)).length() < 1e-6,
            "{l1:?}"
        );
        // About Z: 0.01 + 0.001 (no lever arm). About X: 0.02 + 0.003 plus the parallel-axis
        // terms 2·(0.1−com)² + 1·(0.25−com)².
        let ixx = 0.02 + 0.003 + 2.0 * (0.1 - com).powi(2) + (0.25 - com).powi(2);
        assert!((l1.principal_inertia.z - 0.011).abs() < 1e-6, "{l1:?}");
        assert!((l1.principal_inertia.x - ixx).abs() < 1e-6, "{l1:?}");
        // Its geom, site and camera ride on l1 where they were; its child hangs on l1.
        assert_eq!(m.links[1].collisions.len(), 2);
        let palm = &m.links[1].collisions[1];
        assert!((palm.pose.translation - Vec3::new(0.0, 0.0, 0.3)).length() < 1e-6);
        assert_eq!(m.links[2].parent, Some(1));
        assert!((m.links[2].origin.translation - Vec3::new(0.0, 0.0, 0.22)).length() < 1e-5);
        assert_eq!(m.joints[1].link, 2);
        let (link, pose) = m.frame("tcp").unwrap();
        assert_eq!(link, 1);
        assert!((pose.translation - Vec3::new(0.0, 0.0, 0.2)).length() < 1e-5);
        // The fused body's own name is a frame too (a scene's `tool.frame: "hand"`).
        let (link, pose) = m.frame("hand").unwrap();
        assert_eq!((link, pose.translation), (1, Vec3::new(0.0, 0.0, 0.3)));
        let CameraMount::Link { link, pose } = m.cameras[0].mount else {
            panic!()
        };
        assert_eq!(link, 1);
        assert!((pose.translation - Vec3::new(0.0, 0.0, 0.28)).length() < 1e-5);
        // The root's joint-less child joins the root.
        assert_eq!(m.links[0].collisions.len(), 1);
        assert!(m.links[0].inertial.is_none());
        // Same tool point in the world, and the same total mass.
        let q = vec![0.3, 0.01];
        let before = crate::robot::kinematics::forward_kinematics(&file, &q);
        let after = crate::robot::kinematics::forward_kinematics(&m, &q);
        let tool = |m: &RobotModel, poses: &[Pose]| poses[m.ee_link].transform_point(m.ee_offset);
        assert!((tool(&file, &before) - tool(&m, &after)).length() < 1e-5);
        let mass = |m: &RobotModel| -> f32 {
            m.links
                .iter()
                .filter_map(|l| l.inertial)
                .map(|i| i.mass)
                .sum()
        };
        assert!((mass(&file) - mass(&m)).abs() < 1e-6);
        // The self-collision table keeps one row per geom.
        if m.self_collision.enabled() {
            for (l, rows) in m.links.iter().zip(&m.self_collision.groups) {
                assert_eq!(l.collisions.len(), rows.len(), "{}", l.name);
            }
        }
    }
}
