//! Varied episodes: each episode's start drawn from the scene's `extensions.armsim.randomize`
//! block and a seed. Episode `k` (resets since the app started) draws from
//! [`episode_seed`]`(seed, k)`, or from `randomize.episode_seed` when one is set, so the same seed
//! gives the same episodes, and one episode's seed gives its start again.
//!
//! A draw is a scene: the file's with each object moved (and, as the block asks, turned,
//! resized, made heavier or lighter, rougher or smoother) and the arm's `home_q` offset; the
//! world is built from it as from any scene ([`crate::sim::SimWorld::new`]). [`EpisodeStart`]
//! says what was drawn, for the datasets' episodes table.
//!
//! The numbers come from SplitMix64 (Steele, Lea and Flood, 2014), written here: eight lines,
//! and the stream must never change under a crate upgrade, or old seeds would give new episodes.

use glam::{Quat, Vec3};

use super::config::{MAX_SEED, ObjectConfig, ObjectShape, Randomize, Scene, SceneErrors};
use crate::robot::shape_volume;

/// What an object weighs per cubic metre when its scene gives no `mass_kg` (a 5 cm cube of
/// wood-like density: 0.1 kg).
pub const DEFAULT_OBJECT_DENSITY: f32 = 800.0;

/// Placements tried per object before the whole draw starts again, and draws before it gives up.
const TRIES_PER_OBJECT: usize = 200;
const DRAWS: usize = 50;

/// One object's start as drawn: where it is, how it is turned, its size, mass and friction.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectStart {
    pub name: String,
    pub pos_m: [f32; 3],
    pub quat_xyzw: [f32; 4],
    /// A box's full edges, or a sphere's radius.
    pub size_m: Vec<f32>,
    pub mass_kg: f32,
    pub friction: f32,
}

/// What an episode's start was drawn from, and what was drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeStart {
    /// The scene's `randomize.seed` (0 without the block).
    pub seed: u64,
    /// Resets since the app started.
    pub episode: u64,
    /// The seed this start was drawn from (`--episode-seed` with it starts the same way);
    /// `None`: the file's own start (a draw that failed, a replay's world).
    pub episode_seed: Option<u64>,
    /// Every object of the scene, in its order.
    pub objects: Vec<ObjectStart>,
    /// Every joint's start position (rad or m), in the robot's joint order.
    pub home_q: Vec<f32>,
}

/// The seed of episode `episode` under the scene's `seed`: well mixed, so neighbouring episodes
/// and neighbouring seeds draw unrelated starts, and below 2^53 (exact in JSON and pandas).
pub fn episode_seed(seed: u64, episode: u64) -> u64 {
    let mut s = SplitMix64(seed ^ 0x5DEE_CE66_D1CE_4E5B);
    let a = s.next_u64();
    SplitMix64(a ^ episode.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64() & MAX_SEED
}

/// The seed episode `episode` starts from under `randomize`.
pub fn seed_for(randomize: &Randomize, episode: u64) -> u64 {
    randomize
        .episode_seed
        .unwrap_or_else(|| episode_seed(randomize.seed, episode))
}

/// The start of episode `episode`: the scene to build the world from and what was drawn, or
/// `None` for a scene without a `randomize` block (every episode starts as the file says).
pub fn start_of(scene: &Scene, episode: u64) -> Result<Option<(Scene, EpisodeStart)>, String> {
    let Some(randomize) = &scene.config.extensions.armsim.randomize else {
        return Ok(None);
    };
    draw(scene, episode, seed_for(randomize, episode)).map(Some)
}

/// The start drawn from `episode_seed` (whatever the scene's own seed would give episode
/// `episode`): a recorded episode's start again.
pub fn draw(
    scene: &Scene,
    episode: u64,
    episode_seed: u64,
) -> Result<(Scene, EpisodeStart), String> {
    let Some(randomize) = &scene.config.extensions.armsim.randomize else {
        return Err("the scene has no extensions.armsim.randomize block".into());
    };
    let mut rng = SplitMix64(episode_seed);
    let mut varied = scene.clone();
    let cfg = &mut varied.config;
    if let Some(o) = &randomize.objects {
        for object in &mut cfg.objects {
            if let Some([lo, hi]) = o.yaw_rad {
                let yaw = rng.range(lo, hi);
                let turned = Quat::from_rotation_z(yaw) * object.pose.rotation().normalize();
                object.pose.quat_xyzw = turned.to_array();
            }
            if let Some([lo, hi]) = o.size_scale {
                let k = rng.range(lo, hi);
                object.shape = match object.shape {
                    ObjectShape::Box { size_m } => ObjectShape::Box {
                        size_m: size_m.map(|s| s * k),
                    },
                    ObjectShape::Sphere { radius_m } => ObjectShape::Sphere {
                        radius_m: radius_m * k,
                    },
                };
            }
            if let Some([lo, hi]) = o.mass_scale {
                let k = rng.range(lo, hi);
                object.extensions.mass_kg = Some(mass_of(object) * k);
            }
            if let Some([lo, hi]) = o.friction {
                object.extensions.friction = Some(rng.range(lo, hi));
            }
        }
        place(&mut cfg.objects, o, cfg.table.top_height_m, &mut rng)
            .map_err(|e| format!("episode seed {episode_seed}: {e}"))?;
    }
    let mut home_q = scene.home_q_full();
    if let Some(arm) = &randomize.arm {
        for j in scene.arm_joints() {
            let offset = rng.range(-arm.home_q_jitter, arm.home_q_jitter);
            let q = home_q[j] + offset;
            home_q[j] = match scene.robot.joints[j].limits {
                Some((lo, hi)) => q.clamp(lo, hi),
                None => q,
            };
        }
    }
    cfg.robot.home_q = home_q;
    let start = describe(&varied, episode, Some(episode_seed));
    Ok((varied, start))
}

/// What `scene` starts with, as an [`EpisodeStart`]: a draw's scene, or (`episode_seed`
/// `None`) the file's own start, where a draw failed or a replay set the world.
pub fn describe(scene: &Scene, episode: u64, episode_seed: Option<u64>) -> EpisodeStart {
    let cfg = &scene.config;
    let default_friction = cfg.extensions.armsim.physics.friction;
    let objects = cfg
        .objects
        .iter()
        .map(|o| ObjectStart {
            name: o.name.clone(),
            pos_m: o.pose.pos_m,
            quat_xyzw: o.pose.quat_xyzw,
            size_m: match o.shape {
                ObjectShape::Box { size_m } => size_m.to_vec(),
                ObjectShape::Sphere { radius_m } => vec![radius_m],
            },
            mass_kg: mass_of(o),
            friction: o.extensions.friction.unwrap_or(default_friction),
        })
        .collect();
    EpisodeStart {
        seed: cfg
            .extensions
            .armsim
            .randomize
            .as_ref()
            .map_or(0, |r| r.seed),
        episode,
        episode_seed,
        objects,
        home_q: scene.home_q_full(),
    }
}

/// A new seed for the scene's draws (`--randomize-seed`), or one episode's seed for every
/// start (`--episode-seed`), over the scene file's; then the first draw is checked again.
pub fn override_seeds(
    scene: &mut Scene,
    seed: Option<u64>,
    episode_seed: Option<u64>,
) -> Result<(), String> {
    if seed.is_none() && episode_seed.is_none() {
        return Ok(());
    }
    let Some(randomize) = scene.config.extensions.armsim.randomize.as_mut() else {
        return Err(
            "the scene has no extensions.armsim.randomize block, so there is nothing to draw \
             from a seed (see docs/datasets.md, \"Varied episodes\")"
                .into(),
        );
    };
    for (flag, value) in [("--randomize-seed", seed), ("--episode-seed", episode_seed)] {
        if let Some(v) = value
            && v > MAX_SEED
        {
            return Err(format!(
                "{flag} must be at most 2^53 - 1 = {MAX_SEED}, found {v}"
            ));
        }
    }
    if let Some(seed) = seed {
        randomize.seed = seed;
    }
    if episode_seed.is_some() {
        randomize.episode_seed = episode_seed;
    }
    check(scene).map_err(|e| e.to_string())
}

/// Checks at load that the scene's first episode can be drawn (a region too small for its
/// objects is an error before anything runs, not at the first reset).
pub fn check(scene: &Scene) -> Result<(), SceneErrors> {
    start_of(scene, 0)
        .map(|_| ())
        .map_err(|e| SceneErrors::single("$.extensions.armsim.randomize.objects.region", e))
}

/// What the world makes an object weigh: its `mass_kg`, or its volume at the default density.
pub fn mass_of(object: &ObjectConfig) -> f32 {
    object
        .extensions
        .mass_kg
        .unwrap_or_else(|| DEFAULT_OBJECT_DENSITY * shape_volume(&object.shape.to_shape()))
}

/// The radius of the circle around an object's footprint, whatever its turn about the vertical.
fn footprint_radius(object: &ObjectConfig) -> f32 {
    match object.shape {
        ObjectShape::Box { size_m } => {
            // The box's corners, turned by its orientation, seen from above.
            let r = glam::Mat3::from_quat(object.pose.rotation().normalize());
            let half = Vec3::from_array(size_m) * 0.5;
            let corner =
                r.col(0).abs() * half.x + r.col(1).abs() * half.y + r.col(2).abs() * half.z;
            corner.truncate().length()
        }
        ObjectShape::Sphere { radius_m } => radius_m,
    }
}

/// Puts every object's centre in the region, resting on the table, no two footprints closer than
/// the gap. A draw that cannot fit an object starts again; after `DRAWS` the region is too small.
fn place(
    objects: &mut [ObjectConfig],
    o: &super::config::ObjectRandomize,
    table_top: f32,
    rng: &mut SplitMix64,
) -> Result<(), String> {
    let radii: Vec<f32> = objects.iter().map(footprint_radius).collect();
    let [cx, cy] = o.region.center_xy_m;
    let [hx, hy] = o.region.half_size_m;
    for _ in 0..DRAWS {
        let mut placed: Vec<[f32; 2]> = Vec::with_capacity(objects.len());
        'object: for r in &radii {
            for _ in 0..TRIES_PER_OBJECT {
                let xy = [rng.range(cx - hx, cx + hx), rng.range(cy - hy, cy + hy)];
                let clear = placed.iter().zip(&radii).all(|(p, q)| {
                    let d = ((p[0] - xy[0]).powi(2) + (p[1] - xy[1]).powi(2)).sqrt();
                    d >= r + q + o.min_gap_m
                });
                if clear {
                    placed.push(xy);
                    continue 'object;
                }
            }
            break;
        }
        if placed.len() == objects.len() {
            for (object, xy) in objects.iter_mut().zip(placed) {
                let depth = object
                    .shape
                    .depth_below_center(object.pose.rotation().normalize());
                object.pose.pos_m = [xy[0], xy[1], table_top + depth];
            }
            return Ok(());
        }
    }
    Err(format!(
        "{} object(s) do not fit in the randomize region ({} × {} m around [{cx}, {cy}]) with \
         {} m between them: make the region larger, the gap smaller, or the objects fewer",
        objects.len(),
        2.0 * hx,
        2.0 * hy,
        o.min_gap_m
    ))
}

/// SplitMix64: a 64-bit state stepped by the golden ratio and mixed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]` (24 bits, every float32 step of the unit interval).
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }
}

#[cfg(test)]
mod tests;
