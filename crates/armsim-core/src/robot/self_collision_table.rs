//! A robot's self-collision table as the model carries it ([`SelfCollision`]): the collision
//! group bits of each arm geom and the link pairs that may touch;
//! `self_collision.rs` computes it from the model.

/// Rapier's default membership, which the table and the objects keep: every arm geom meets it.
pub const WORLD_BIT: u32 = 1;
/// Collision classes the group bits hold (bits 2..=31).
pub const MAX_CLASSES: usize = 30;
/// The bit of arm geoms that touch no other arm geom (bit 32, in no filter): they meet the world
/// only. With self-collision off every arm geom is a member of it alone.
pub const LONE_BIT: u32 = 1 << 31;

/// The self-collision table of a robot. The default (empty `groups`) is "off": every arm geom
/// is then a member of one bit that its own filter leaves out, and the arm never meets itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelfCollision {
    /// Per link, per collision geom (`Link::collisions` order): `(memberships, filter)` bits.
    pub groups: Vec<Vec<(u32, u32)>>,
    /// Link pairs `(a, b)`, `a < b`, with at least one pair of geoms that may touch.
    pub pairs: Vec<(usize, usize)>,
    /// Collision classes (group bits besides the world's) in use.
    pub classes: usize,
    /// Allowed pairs the bits could not express (more than [`MAX_CLASSES`] classes were needed):
    /// these link pairs do not touch. Zero for every robot the project ships or tests.
    pub dropped: usize,
}

impl SelfCollision {
    /// Whether the arm's links may touch each other at all.
    pub fn enabled(&self) -> bool {
        !self.groups.is_empty()
    }

    /// One line for the load log: how many link pairs may touch, in how many classes, and what
    /// the bits could not hold.
    pub fn summary(&self, links: usize) -> String {
        if !self.enabled() {
            return "self-collision off: the arm's links never touch each other".into();
        }
        let mut line = format!(
            "self-collision on (MuJoCo's rule): {} of {} link pairs may touch, {} collision \
             classes of {MAX_CLASSES}",
            self.pairs.len(),
            links * links.saturating_sub(1) / 2,
            self.classes
        );
        if self.dropped > 0 {
            line.push_str(&format!(
                "; {} geom pairs the rule lets touch do not, for want of group bits",
                self.dropped
            ));
        }
        line
    }

    /// Whether the geoms `(link a, geom i)` and `(link b, geom j)` pass the group test.
    pub fn touches(&self, a: usize, i: usize, b: usize, j: usize) -> bool {
        let (Some(&(m1, f1)), Some(&(m2, f2))) = (
            self.groups.get(a).and_then(|g| g.get(i)),
            self.groups.get(b).and_then(|g| g.get(j)),
        ) else {
            return false;
        };
        m1 & f2 != 0 && m2 & f1 != 0
    }
}
