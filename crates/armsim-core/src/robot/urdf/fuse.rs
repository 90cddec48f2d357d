//! Massless fixed links fused into their parents.
//!
//! A URDF link without `<inertial>` (or with zero mass) hung on a `fixed` joint is a frame, not
//! a body (`panda_link8`, `panda_hand_tcp`, a tool point): as a body of its own it would be a
//! massless rigid body the solver has to weld on. It is removed, its geoms move into the nearest
//! kept ancestor with their poses composed, its children re-parent onto that ancestor with their
//! origins composed, and its name stays findable as a [`Site`] there (`robot::fold`, which the
//! MJCF loader's fusing shares).

use glam::Vec3;

use crate::robot::fold::fold_links;
use crate::robot::model::{Joint, Link, Site};

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

    let folded = fold_links(
        links,
        joints,
        |l| l.joint.is_none() && l.inertial.is_none(),
        |_, _, _| {},
    );
    if !folded.pairs.is_empty() {
        notes.push(format!(
            "fused massless links into their parents: {}",
            folded.pairs.join(", ")
        ));
    }
    let (ee_link, ee_offset) = folded.at[ee];
    Fused {
        links: folded.links,
        ee_link,
        ee_offset: ee_offset.translation,
        sites: folded.sites,
    }
}
