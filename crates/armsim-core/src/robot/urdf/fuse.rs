//! Massless fixed links fused into their parents.
//!
//! A URDF link without `<inertial>` (or with zero mass) hung on a `fixed` joint is a frame, not
//! a body (`panda_link8`, `panda_hand_tcp`, a tool point): as a body of its own it would be a
//! massless rigid body the solver has to weld on. It is removed, its geoms move into the nearest
//! kept ancestor with their poses composed, its children re-parent onto that ancestor with their
//! origins composed, and its name stays findable as a [`Site`] there.

use glam::Vec3;

use super::super::{Geom, Joint, Link, Pose, Site};

/// The links left after fusing, the end effector mapped onto them and the fused links as sites.
pub(super) struct Fused {
    pub links: Vec<Link>,
    pub ee_link: usize,
    pub ee_offset: Vec3,
    pub sites: Vec<Site>,
}

/// Fuses every massless fixed link of `links` (parents first, root at 0; the root is never
/// fused) into its parent, remapping `joints[*].link`. `ee` is the end-effector link before
/// fusing; a fused one becomes its kept ancestor with the link's origin as offset. Notes name
/// the fused links and the moving links without an inertial.
pub(super) fn fuse_massless(
    links: Vec<Link>,
    joints: &mut [Joint],
    ee: usize,
    notes: &mut Vec<String>,
) -> Fused {
    let n = links.len();
    // The kept link each link ends up in, and the link's frame in that link's frame.
    let mut target: Vec<usize> = (0..n).collect();
    let mut offset = vec![Pose::IDENTITY; n];
    let mut fused = vec![false; n];
    for (i, link) in links.iter().enumerate() {
        if let Some(p) = link.parent
            && link.joint.is_none()
            && link.inertial.is_none()
        {
            fused[i] = true;
            target[i] = target[p];
            offset[i] = offset[p].mul(&link.origin);
        }
    }

    let massless_moving: Vec<&str> = links
        .iter()
        .filter(|l| l.joint.is_some() && l.inertial.is_none())
        .map(|l| l.name.as_str())
        .collect();
    if !massless_moving.is_empty() {
        notes.push(format!(
            "moving links without <inertial> get their mass from their collision shapes: {}",
            massless_moving.join(", ")
        ));
    }

    let mut new_index = vec![usize::MAX; n];
    let mut out: Vec<Link> = Vec::with_capacity(n);
    let mut sites = Vec::new();
    let mut pairs = Vec::new();
    for (i, mut link) in links.into_iter().enumerate() {
        if fused[i] {
            let t = new_index[target[i]];
            let o = offset[i];
            let moved = |g: Geom| Geom {
                pose: o.mul(&g.pose),
                ..g
            };
            let dst = &mut out[t];
            dst.collisions
                .extend(link.collisions.into_iter().map(moved));
            dst.visuals.extend(link.visuals.into_iter().map(moved));
            pairs.push(format!("{}→{}", link.name, dst.name));
            sites.push(Site {
                name: link.name,
                link: t,
                pose: o,
            });
            continue;
        }
        if let Some(p) = link.parent {
            link.origin = offset[p].mul(&link.origin);
            link.parent = Some(new_index[target[p]]);
        }
        new_index[i] = out.len();
        if let Some(j) = link.joint {
            joints[j].link = out.len();
        }
        out.push(link);
    }
    if !pairs.is_empty() {
        notes.push(format!(
            "fused massless links into their parents: {}",
            pairs.join(", ")
        ));
    }
    Fused {
        links: out,
        ee_link: new_index[target[ee]],
        ee_offset: offset[ee].translation,
        sites,
    }
}
