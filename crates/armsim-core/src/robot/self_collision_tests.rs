//! Unit tests of the self-collision rule: MJCF weld groups, the world's exception, exclusions
//! and contype/conaffinity; a URDF chain; and that the group bits say exactly what the rule says
//! for random trees.

use super::*;
use crate::robot::{mjcf::parse_mjcf, urdf::parse_urdf};

/// The link pairs of `m` by name, sorted, as `"a-b"`.
fn pair_names(m: &RobotModel) -> Vec<String> {
    let mut v: Vec<String> = m
        .self_collision
        .pairs
        .iter()
        .map(|&(a, b)| format!("{}-{}", m.links[a].name, m.links[b].name))
        .collect();
    v.sort();
    v
}

/// The weld group of link `name` of `m`: the index of its group's top link, 0 for the world's.
fn weld_of(m: &RobotModel, name: &str) -> usize {
    weld_groups(m)[m.link_index(name).expect("the link exists")]
}

/// Whether any geom of link `a` passes the group test with any geom of link `b`.
fn links_touch(m: &RobotModel, a: usize, b: usize) -> bool {
    let sc = &m.self_collision;
    (0..m.links[a].collisions.len())
        .any(|i| (0..m.links[b].collisions.len()).any(|j| sc.touches(a, i, b, j)))
}

/// The group bits agree with the pair list on every pair of links.
fn assert_bits_match_pairs(m: &RobotModel) {
    let n = m.links.len();
    for a in 0..n {
        for b in a..n {
            let listed = m.self_collision.pairs.contains(&(a, b));
            assert_eq!(
                links_touch(m, a, b),
                listed,
                "{}-{}",
                m.links[a].name,
                m.links[b].name
            );
        }
    }
}

/// A chain with weld groups, parent–child pairs, `<exclude>`s and contype/conaffinity classes:
/// each hinged body is a case of the rule (c, d, e and f differ only in their geoms' class).
const MJCF: &str = include_str!("testdata/self_collision_rule.xml");

#[test]
fn mjcf_rule_weld_groups_world_exclude_and_bits() {
    let m = parse_mjcf(MJCF).expect("loads");
    let at = |n: &str| m.link_index(n).unwrap();
    // base and mount are the world's weld group; b_tip is welded to b.
    assert_eq!(weld_of(&m, "base"), 0);
    assert_eq!(weld_of(&m, "mount"), 0);
    assert_eq!(weld_of(&m, "b_tip"), at("b"));
    // The class default reaches the geom.
    assert_eq!(
        (
            m.links[at("d")].collisions[0].contype,
            m.links[at("d")].collisions[0].conaffinity
        ),
        (1, 0)
    );
    assert_eq!(
        pair_names(&m),
        [
            // a is a child of the world's weld group: it touches it (MuJoCo's exception).
            "a-c",
            "a-d",
            "a-f",
            "b-d",
            "b-e",
            "b-f",
            "b_tip-d",
            "b_tip-e",
            "b_tip-f",
            "base-a",
            "base-b",
            "base-b_tip",
            "base-d",
            "base-e",
            "base-f",
            "c-e",
            "c-f",
            "mount-a",
            "mount-b",
            "mount-b_tip",
            "mount-c",
            "mount-d",
            "mount-e",
            "mount-f",
        ]
    );
    // Not there: a-b (parent and child), b-b_tip and base-mount (welded), b-c (parent), c-base
    // and e-a (excluded), d-f (contype 1 & conaffinity 0 both ways), a-b_tip (b_tip is b's).
    assert_bits_match_pairs(&m);
    assert!(m.self_collision.enabled());
    assert_eq!(m.self_collision.dropped, 0);
    assert!(m.self_collision.classes <= MAX_CLASSES);
    // The visual-only geom of b_tip is no collision geom at all.
    assert_eq!(m.links[at("b_tip")].collisions.len(), 1);
}

#[test]
fn mjcf_exclude_of_an_unknown_body_is_an_error() {
    let xml = MJCF.replace(r#"body2="base""#, r#"body2="nope""#);
    let e = parse_mjcf(&xml).unwrap_err();
    assert!(e.to_string().contains("unknown body `nope`"), "{e}");
}

const URDF: &str = r#"
<robot name="chain">
  <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="l1"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="l2"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="l3"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="l4"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <joint name="f3" type="fixed"><parent link="l2"/><child link="l3"/><origin xyz="0 0 0.1"/></joint>
  <joint name="j4" type="revolute"><parent link="l3"/><child link="l4"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>"#;

#[test]
fn urdf_chain_adjacent_links_never_touch_the_rest_do() {
    let m = parse_urdf(URDF).expect("loads");
    // l3 hangs on a fixed joint and has a mass: a link of its own, welded to l2.
    assert_eq!(weld_of(&m, "l3"), m.link_index("l2").unwrap());
    assert_eq!(
        pair_names(&m),
        ["base-l2", "base-l3", "base-l4", "l1-l4"],
        "base-l1 (adjacent, base included), l1-l2, l1-l3, l2-l3, l2-l4 and l3-l4 do not"
    );
    assert_bits_match_pairs(&m);
    // Every geom is on bit 1 both ways.
    assert!(
        m.links
            .iter()
            .flat_map(|l| &l.collisions)
            .all(|g| (g.contype, g.conaffinity) == (1, 1))
    );
}

#[test]
fn off_means_every_pair_is_out() {
    let off = SelfCollision::default();
    assert!(!off.enabled());
    assert!(!off.touches(0, 0, 1, 0));
    assert!(off.summary(3).contains("off"));
}

/// A tiny deterministic generator (xorshift), so the property test needs no extra crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The rule written out plainly, pair by pair, as the reference the bits must match.
fn reference(
    m: &RobotModel,
    rule: Rule,
    exclude: &[(usize, usize)],
    a: (usize, usize),
    b: (usize, usize),
) -> bool {
    let w = weld_groups(m);
    let (la, lb) = (a.0, b.0);
    let (wa, wb) = (w[la], w[lb]);
    let pw = |x: usize| m.links[x].parent.map(|p| w[p]);
    let adjacent = pw(wa) == Some(wb) || pw(wb) == Some(wa);
    let (ga, gb) = (&m.links[la].collisions[a.1], &m.links[lb].collisions[b.1]);
    wa != wb
        && !(adjacent && (rule == Rule::Urdf || (wa != 0 && wb != 0)))
        && !exclude.contains(&(la, lb))
        && !exclude.contains(&(lb, la))
        && (ga.contype & gb.conaffinity != 0 || gb.contype & ga.conaffinity != 0)
}

#[test]
fn bits_say_exactly_what_the_rule_says_on_random_trees() {
    use crate::geometry::Pose;
    use crate::robot::model::{Geom, Link, Shape};
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let n = 2 + rng.below(14) as usize;
        let mut links = Vec::with_capacity(n);
        for i in 0..n {
            let geoms = rng.below(3) as usize;
            let collisions = (0..geoms)
                .map(|_| Geom {
                    name: None,
                    shape: Shape::Sphere { radius: 0.1 },
                    pose: Pose::IDENTITY,
                    rgba: [1.0; 4],
                    friction: None,
                    density: None,
                    contype: rng.below(4) as u32,
                    conaffinity: rng.below(4) as u32,
                })
                .collect();
            links.push(Link {
                name: format!("l{i}"),
                parent: (i > 0).then(|| rng.below(i as u64) as usize),
                origin: Pose::IDENTITY,
                // A joint on about three links in four; the root never has one.
                joint: (i > 0 && rng.below(4) > 0).then_some(i),
                inertial: None,
                collisions,
                visuals: Vec::new(),
            });
        }
        let model = RobotModel {
            name: "random".into(),
            links,
            joints: Vec::new(),
            mimics: Vec::new(),
            tendons: Vec::new(),
            ee_link: 0,
            ee_offset: glam::Vec3::ZERO,
            ee_axis: None,
            sites: Vec::new(),
            meshes: Vec::new(),
            home: None,
            cameras: Vec::new(),
            notes: Vec::new(),
            self_collision: SelfCollision::default(),
        };
        let exclude: Vec<(usize, usize)> = (0..rng.below(3))
            .map(|_| (rng.below(n as u64) as usize, rng.below(n as u64) as usize))
            .collect();
        for rule in [Rule::Mjcf, Rule::Urdf] {
            let table = compute(&model, rule, &exclude);
            assert_eq!(table.dropped, 0, "round {round}");
            let geoms: Vec<(usize, usize)> = (0..n)
                .flat_map(|l| (0..model.links[l].collisions.len()).map(move |g| (l, g)))
                .collect();
            for (x, &a) in geoms.iter().enumerate() {
                for &b in &geoms[x + 1..] {
                    let want = reference(&model, rule, &exclude, a, b);
                    assert_eq!(
                        table.touches(a.0, a.1, b.0, b.1),
                        want,
                        "round {round} {rule:?}: {a:?} {b:?}"
                    );
                }
            }
        }
    }
}
