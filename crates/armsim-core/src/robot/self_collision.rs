//! Which of a robot's own links may touch each other, by MuJoCo's contact filter, computed once
//! at load and written as Rapier collision-group bits (one bit per collision class).
//!
//! The rule (MuJoCo's `filterBodyPair` plus its contype/conaffinity test):
//! - links with no joint between them form one weld group, and never touch each other; the
//!   robot's root is fixed in the scene, so its weld group is the world;
//! - the weld groups of a parent and its child do not touch, unless one of them is the world
//!   (MJCF: `link1` can hit `link0`); a URDF's adjacent links never touch, the base included;
//! - MJCF `<contact><exclude body1 body2>` pairs do not touch;
//! - any other pair of geoms touches when `(contype1 & conaffinity2) || (contype2 &
//!   conaffinity1)` (a URDF's geoms all have 1 and 1).
//!
//! Rapier tests a pair of colliders with `memberships1 & filter2 != 0 && memberships2 & filter1
//! != 0`. Bit 1 is the world's (the table and the objects keep Rapier's default groups: member
//! of bit 1, filter all), so every arm geom's filter holds it; bits 2..=31 are collision classes
//! and bit 32 is for arm geoms that touch nothing of the arm. An arm geom is a member of its
//! class's bit only, and its filter holds the class of every geom it may touch. Geoms whose rows of the allowed matrix let them share a bit without admitting a
//! pair the rule forbids are grouped greedily into one class.

use super::model::RobotModel;
pub use super::self_collision_table::{LONE_BIT, MAX_CLASSES, SelfCollision, WORLD_BIT};

/// Which rule a file's format gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// MuJoCo's own: a child of the world's weld group may touch it.
    Mjcf,
    /// A URDF (every geom 1/1, no exclusions): adjacent links never touch, the base included.
    /// MuJoCo fuses a URDF's base into its world and would let the base touch its child; the
    /// SO-100 URDF's base and shoulder overlap by 33 mm at q = 0, so that pair stays out.
    Urdf,
}

/// One geom kind: a link and its contype/conaffinity. Geoms of one kind share every answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kind {
    link: usize,
    contype: u32,
    conaffinity: u32,
}

/// The weld group of each link: the index of its topmost link reached without a joint, and 0
/// (the world) for the root and everything welded to it. Links come parents first.
pub fn weld_groups(model: &RobotModel) -> Vec<usize> {
    let mut weld = vec![0; model.links.len()];
    for (i, link) in model.links.iter().enumerate() {
        weld[i] = match (link.parent, link.joint) {
            (None, _) => 0,
            (Some(p), None) => weld[p],
            (Some(_), Some(_)) => i,
        };
    }
    weld
}

/// Computes the table for `model` under `rule`, with `exclude`d link pairs (MJCF
/// `<contact><exclude>`, already resolved to links).
pub fn compute(model: &RobotModel, rule: Rule, exclude: &[(usize, usize)]) -> SelfCollision {
    let weld = weld_groups(model);
    // The weld group each weld group hangs from (its top link's parent's group).
    let parent_weld = |w: usize| model.links[w].parent.map_or(usize::MAX, |p| weld[p]);
    let adjacent_filtered = |wa: usize, wb: usize| {
        let adjacent = wa == parent_weld(wb) || wb == parent_weld(wa);
        adjacent && (rule == Rule::Urdf || (wa != 0 && wb != 0))
    };
    let excluded = |a: usize, b: usize| {
        exclude
            .iter()
            .any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a))
    };

    let mut kinds: Vec<Kind> = Vec::new();
    let mut kind_of: Vec<Vec<usize>> = Vec::with_capacity(model.links.len());
    for (link, l) in model.links.iter().enumerate() {
        let mut row = Vec::with_capacity(l.collisions.len());
        for g in &l.collisions {
            let k = Kind {
                link,
                contype: g.contype,
                conaffinity: g.conaffinity,
            };
            let index = kinds.iter().position(|x| *x == k).unwrap_or_else(|| {
                kinds.push(k);
                kinds.len() - 1
            });
            row.push(index);
        }
        kind_of.push(row);
    }
    let n = kinds.len();
    let allowed: Vec<Vec<bool>> = (0..n)
        .map(|a| {
            (0..n)
                .map(|b| {
                    let (ka, kb) = (kinds[a], kinds[b]);
                    let (wa, wb) = (weld[ka.link], weld[kb.link]);
                    wa != wb
                        && !adjacent_filtered(wa, wb)
                        && !excluded(ka.link, kb.link)
                        && (ka.contype & kb.conaffinity != 0 || kb.contype & ka.conaffinity != 0)
                })
                .collect()
        })
        .collect();

    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for a in 0..n {
        for b in a + 1..n {
            let (la, lb) = (kinds[a].link, kinds[b].link);
            let pair = (la.min(lb), la.max(lb));
            if allowed[a][b] && !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs.sort_unstable();

    let (class, classes) = assign_classes(&allowed);
    // A kind that touches no other arm geom, or one past the bits, is a member of the lone bit,
    // which no filter holds: it meets the world only.
    let bit = |k: usize| -> u32 {
        if class[k] < MAX_CLASSES {
            1 << (class[k] + 1)
        } else {
            LONE_BIT
        }
    };
    let filter: Vec<u32> = (0..n)
        .map(|a| {
            (0..n)
                .filter(|&b| allowed[a][b] && bit(b) != LONE_BIT)
                .fold(WORLD_BIT, |f, b| f | bit(b))
        })
        .collect();
    let mut dropped = 0;
    for a in 0..n {
        for b in a..n {
            let passes = bit(a) & filter[b] != 0 && bit(b) & filter[a] != 0;
            if allowed[a][b] != passes {
                dropped += 1;
            }
        }
    }
    let groups = kind_of
        .iter()
        .map(|row| row.iter().map(|&k| (bit(k), filter[k])).collect())
        .collect();
    SelfCollision {
        groups,
        pairs,
        classes: classes.min(MAX_CLASSES),
        dropped,
    }
}

/// Groups kinds into classes greedily (each kind joins the first class it can share without the
/// bits admitting a forbidden pair or losing an allowed one). Returns each kind's class and the
/// number of classes. A kind that touches nothing gets no class (`usize::MAX`), and kinds past
/// [`MAX_CLASSES`] classes get classes that have no bit.
fn assign_classes(allowed: &[Vec<bool>]) -> (Vec<usize>, usize) {
    let n = allowed.len();
    let mut class: Vec<usize> = Vec::with_capacity(n);
    let mut count = 0;
    for k in 0..n {
        if !allowed[k].iter().any(|&a| a) {
            class.push(usize::MAX);
            continue;
        }
        let fits = (0..count).find(|&c| {
            class.push(c);
            let ok = exact(allowed, &class);
            class.pop();
            ok
        });
        match fits {
            Some(c) => class.push(c),
            None => {
                class.push(count);
                count += 1;
            }
        }
    }
    (class, count)
}

/// Whether one bit per class, with each kind's filter holding the classes of the kinds it may
/// touch, gives exactly `allowed` among the kinds assigned so far (`class.len()` of them).
/// Kinds without a class touch nothing and need no check.
fn exact(allowed: &[Vec<bool>], class: &[usize]) -> bool {
    let n = class.len();
    let classes = class
        .iter()
        .filter(|&&c| c != usize::MAX)
        .max()
        .map_or(0, |c| c + 1);
    let mut filter = vec![vec![false; classes]; n];
    for a in 0..n {
        for b in 0..n {
            if allowed[a][b] && class[b] != usize::MAX {
                filter[a][class[b]] = true;
            }
        }
    }
    let classed: Vec<usize> = (0..n).filter(|&k| class[k] != usize::MAX).collect();
    classed.iter().enumerate().all(|(i, &a)| {
        classed[i..]
            .iter()
            .all(|&b| allowed[a][b] == (filter[b][class[a]] && filter[a][class[b]]))
    })
}

#[cfg(test)]
#[path = "self_collision_tests.rs"]
mod tests;
