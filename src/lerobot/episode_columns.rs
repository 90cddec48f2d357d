//! A varied episode's start in its row of the episodes table: for a scene with a `randomize`
//! block, `armsim/seed`, `armsim/episode` (resets since the app started), `armsim/episode_seed`
//! (what `--episode-seed` takes to start the same way; -1 where the world started as the file
//! says), then per object `armsim/<object>/pos_m`, `quat_xyzw`, `size_m`, `mass_kg` and
//! `friction`, and `armsim/home_q` (every joint, in the file's units).

use armsim_lerobot::{EpisodeColumn, EpisodeValue, EpisodeValueKind};

use crate::scene::Scene;
use crate::scene::variation::{self, EpisodeStart};

/// The columns a recording of `scene` adds to the episodes table; none without `randomize`.
pub fn columns(scene: &Scene) -> Vec<EpisodeColumn> {
    if scene.config.extensions.armsim.randomize.is_none() {
        return Vec::new();
    }
    let start = variation::describe(scene, 0, None);
    let mut out = vec![
        EpisodeColumn::new("armsim/seed", EpisodeValueKind::Int),
        EpisodeColumn::new("armsim/episode", EpisodeValueKind::Int),
        EpisodeColumn::new("armsim/episode_seed", EpisodeValueKind::Int),
    ];
    for o in &start.objects {
        let name = |what: &str| format!("armsim/{}/{what}", o.name);
        out.extend([
            EpisodeColumn::new(name("pos_m"), EpisodeValueKind::Floats(3)),
            EpisodeColumn::new(name("quat_xyzw"), EpisodeValueKind::Floats(4)),
            EpisodeColumn::new(name("size_m"), EpisodeValueKind::Floats(o.size_m.len())),
            EpisodeColumn::new(name("mass_kg"), EpisodeValueKind::Float),
            EpisodeColumn::new(name("friction"), EpisodeValueKind::Float),
        ]);
    }
    out.push(EpisodeColumn::new(
        "armsim/home_q",
        EpisodeValueKind::Floats(start.home_q.len()),
    ));
    out
}

/// `start`'s values of [`columns`], in their order.
pub fn values(start: &EpisodeStart) -> Vec<EpisodeValue> {
    let floats = |v: &[f32]| EpisodeValue::Floats(v.iter().map(|&x| f64::from(x)).collect());
    let mut out = vec![
        EpisodeValue::Int(start.seed as i64),
        EpisodeValue::Int(start.episode as i64),
        EpisodeValue::Int(start.episode_seed.map_or(-1, |s| s as i64)),
    ];
    for o in &start.objects {
        out.extend([
            floats(&o.pos_m),
            floats(&o.quat_xyzw),
            floats(&o.size_m),
            EpisodeValue::Float(f64::from(o.mass_kg)),
            EpisodeValue::Float(f64::from(o.friction)),
        ]);
    }
    out.push(floats(&start.home_q));
    out
}
