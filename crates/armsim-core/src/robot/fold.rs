//! Links folded into their parents: the part of fusing that both loaders share.
//!
//! The URDF loader folds massless fixed links, the MJCF loader joint-less bodies; either way a
//! folded link's geoms and visuals move into the nearest kept ancestor with their poses
//! composed, its children re-parent onto that ancestor with their origins composed, and its
//! name stays findable as a [`Site`] there. What else moves (mass, self-collision rows) is the
//! caller's.

use super::model::{Geom, Joint, Link, Site};
use crate::geometry::Pose;

/// The links left after folding, and where each link of the input went.
pub(crate) struct Folded {
    pub links: Vec<Link>,
    /// Per input link: the kept link it ended up in (an index into `links`) and its frame in
    /// that link's frame (the identity for a kept link).
    pub at: Vec<(usize, Pose)>,
    /// The folded links as sites of the links they joined, in input order.
    pub sites: Vec<Site>,
    /// `folded→kept` for each folded link, for the load notes.
    pub pairs: Vec<String>,
}

/// Folds every link of `links` (parents first, root at 0) that `fold` picks, the root never,
/// into its nearest kept ancestor, remapping `joints[*].link`. `merge(kept, folded, offset)`
/// runs for each folded link before its geoms move, with `offset` its frame in the kept link's.
pub(crate) fn fold_links(
    links: Vec<Link>,
    joints: &mut [Joint],
    fold: impl Fn(&Link) -> bool,
    mut merge: impl FnMut(&mut Link, &Link, &Pose),
) -> Folded {
    let n = links.len();
    // The kept link each link ends up in, and the link's frame in that link's frame.
    let mut target: Vec<usize> = (0..n).collect();
    let mut offset = vec![Pose::IDENTITY; n];
    let mut folded = vec![false; n];
    for (i, link) in links.iter().enumerate() {
        if let Some(p) = link.parent
            && fold(link)
        {
            folded[i] = true;
            target[i] = target[p];
            offset[i] = offset[p].mul(&link.origin);
        }
    }

    let mut new_index = vec![usize::MAX; n];
    let mut out: Vec<Link> = Vec::with_capacity(n);
    let mut sites = Vec::new();
    let mut pairs = Vec::new();
    for (i, mut link) in links.into_iter().enumerate() {
        if folded[i] {
            let t = new_index[target[i]];
            let o = offset[i];
            let dst = &mut out[t];
            merge(dst, &link, &o);
            let moved = |g: Geom| Geom {
                pose: o.mul(&g.pose),
                ..g
            };
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
    let at = (0..n).map(|i| (new_index[target[i]], offset[i])).collect();
    Folded {
        links: out,
        at,
        sites,
        pairs,
    }
}
