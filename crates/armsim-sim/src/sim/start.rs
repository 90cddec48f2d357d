//! Each episode's start: the world of episode `k` (resets since the app started) built from the
//! scene's `randomize` draw for `k` (`armsim_core::scene::variation`), or from the file as it is
//! when the scene varies nothing, and [`EpisodeStartNow`], what the world was drawn from, for
//! the recorder's episodes table and the replay.

use bevy::prelude::*;

use armsim_core::scene::Scene;
use armsim_core::scene::variation::{self, EpisodeStart};
use armsim_core::sim::SimWorld;

/// What the world in `Sim` was drawn from at its last reset (or at launch); `None` when the scene
/// has no `randomize` block (or a draw failed and the file's start stands in, which the log says).
#[derive(Resource, Clone, Debug, Default)]
pub struct EpisodeStartNow(pub Option<EpisodeStart>);

/// The world episode `episode` starts in, and what it was drawn from (which the caller logs
/// with [`log_start`] once logging runs).
pub fn world_for(scene: &Scene, episode: u64) -> (SimWorld, Option<EpisodeStart>) {
    match variation::start_of(scene, episode) {
        Ok(Some((varied, start))) => (SimWorld::new(&varied), Some(start)),
        Ok(None) => (SimWorld::new(scene), None),
        Err(e) => {
            error!(
                "episode {episode}: its start cannot be drawn ({e}); it starts as the scene file says"
            );
            (SimWorld::new(scene), None)
        }
    }
}

/// The world drawn from `episode_seed` (a recorded episode's `armsim/episode_seed`).
pub fn world_from_seed(
    scene: &Scene,
    episode: u64,
    episode_seed: u64,
) -> Result<(SimWorld, EpisodeStart), String> {
    let (varied, start) = variation::draw(scene, episode, episode_seed)?;
    log_start(&start);
    Ok((SimWorld::new(&varied), start))
}

/// The first episode's start, logged at startup (the world is built before logging starts).
pub(super) fn log_first_start(start: Res<EpisodeStartNow>) {
    if let Some(start) = &start.0 {
        log_start(start);
    }
}

/// One line: the episode, its seed and where each object starts.
pub fn log_start(start: &EpisodeStart) {
    let objects: Vec<String> = start
        .objects
        .iter()
        .map(|o| {
            format!(
                "{} at ({:.3}, {:.3}), {:.3} kg, friction {:.2}",
                o.name, o.pos_m[0], o.pos_m[1], o.mass_kg, o.friction
            )
        })
        .collect();
    info!(
        "episode {} starts from episode seed {} (randomize seed {}): {}",
        start.episode,
        start.episode_seed.unwrap_or_default(),
        start.seed,
        if objects.is_empty() {
            "the arm's start pose drawn".to_string()
        } else {
            objects.join("; ")
        }
    );
}
