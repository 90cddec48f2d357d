//! `extensions.armsim.randomize` read and checked: how each episode's start varies, from a seed
//! (the cubes' places and turns on the table, optionally their mass, size and friction, and the
//! arm's start pose). The types are in `types.rs`; `scene::variation` draws the values.
//!
//! ```json
//! "randomize": {
//!   "seed": 7,
//!   "objects": {
//!     "region": {"center_xy_m": [0.5, 0.0], "half_size_m": [0.1, 0.15]},
//!     "yaw_rad": [-3.1416, 3.1416],
//!     "min_gap_m": 0.01,
//!     "mass_scale": [0.8, 1.25],
//!     "size_scale": [0.9, 1.1],
//!     "friction": [0.6, 1.2]
//!   },
//!   "arm": {"home_q_jitter": 0.05}
//! }
//! ```

use super::checker::{Checker, key};
use super::types::{ArmRandomize, MAX_SEED, ObjectRandomize, Randomize, Region};

/// `[lo, hi]` with `lo <= hi`, each passing `ok`.
fn range(
    c: &mut Checker,
    m: &super::checker::Obj,
    p: &str,
    k: &str,
    ok: impl Fn(f32) -> bool,
    what: &str,
) -> Option<[f32; 2]> {
    let r = c.opt(m, p, k, Checker::f32_array::<2>)?;
    let path = key(p, k);
    if !r.iter().all(|&x| ok(x)) {
        c.err(&path, format!("{what}, found [{}, {}]", r[0], r[1]));
        return None;
    }
    if r[0] > r[1] {
        c.err(
            &path,
            format!(
                "expected [low, high] with low <= high, found [{}, {}]",
                r[0], r[1]
            ),
        );
        return None;
    }
    Some(r)
}

/// Parses `extensions.armsim.randomize`; `None` after recording why.
pub(super) fn parse_randomize(
    c: &mut Checker,
    v: &serde_json::Value,
    p: &str,
) -> Option<Randomize> {
    let m = c.loose_object(v, p)?;
    let before = c.errors.len();
    let seed = c.req(m, p, "seed", Checker::u64v);
    let seed = seed.filter(|&s| {
        let ok = s <= MAX_SEED;
        if !ok {
            c.err(
                key(p, "seed"),
                format!("must be at most 2^53 - 1 = {MAX_SEED}, found {s}"),
            );
        }
        ok
    });
    let episode_seed = c.opt(m, p, "episode_seed", Checker::u64v).filter(|&s| {
        let ok = s <= MAX_SEED;
        if !ok {
            c.err(
                key(p, "episode_seed"),
                format!("must be at most 2^53 - 1 = {MAX_SEED}, found {s}"),
            );
        }
        ok
    });
    let objects = c.opt(m, p, "objects", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let region = c.req(m, p, "region", |c, v, p| {
            let m = c.loose_object(v, p)?;
            let center = c.req(m, p, "center_xy_m", Checker::f32_array::<2>);
            let half = c.req(m, p, "half_size_m", Checker::f32_array::<2>);
            let half = half.filter(|h| {
                let ok = h.iter().all(|&x| x >= 0.0);
                if !ok {
                    c.err(key(p, "half_size_m"), "each half size must be >= 0");
                }
                ok
            });
            Some(Region {
                center_xy_m: center?,
                half_size_m: half?,
            })
        });
        let yaw = range(
            c,
            m,
            p,
            "yaw_rad",
            |x| x.abs() <= 10.0,
            "each must be within ±10 rad",
        );
        let gap = c.opt(m, p, "min_gap_m", Checker::f32v);
        let gap = c.non_negative(gap, &key(p, "min_gap_m"));
        let positive = |x: f32| x > 0.0;
        let mass = range(c, m, p, "mass_scale", positive, "each factor must be > 0");
        let size = range(c, m, p, "size_scale", positive, "each factor must be > 0");
        let friction = range(c, m, p, "friction", |x| x >= 0.0, "each must be >= 0");
        Some(ObjectRandomize {
            region: region?,
            yaw_rad: yaw,
            min_gap_m: gap.unwrap_or(ObjectRandomize::DEFAULT_MIN_GAP_M),
            mass_scale: mass,
            size_scale: size,
            friction,
        })
    });
    let arm = c.opt(m, p, "arm", |c, v, p| {
        let m = c.loose_object(v, p)?;
        let jitter = c.req(m, p, "home_q_jitter", Checker::f32v);
        let jitter = c.non_negative(jitter, &key(p, "home_q_jitter"));
        Some(ArmRandomize {
            home_q_jitter: jitter?,
        })
    });
    (c.errors.len() == before).then_some(Randomize {
        seed: seed?,
        episode_seed,
        objects,
        arm,
    })
}
