//! The flags that vary each episode's start (`--randomize-seed`, `--episode-seed`), over the
//! scene's `extensions.armsim.randomize` block.

use armsim::scene::Scene;
use armsim::scene::variation;

#[derive(clap::Args, Debug)]
pub struct SceneArgs {
    /// Draw each episode's start (the scene's extensions.armsim.randomize block: cube poses,
    /// masses, sizes, friction, the arm's start pose) from this seed instead of the scene's:
    /// the same seed gives the same episodes.
    #[arg(long, value_name = "N", global = true)]
    pub randomize_seed: Option<u64>,

    /// Start every episode from this episode seed: one recorded episode's start again, from its
    /// armsim/episode_seed in the dataset's episodes table.
    #[arg(long, value_name = "SEED", global = true)]
    pub episode_seed: Option<u64>,
}

impl SceneArgs {
    /// Puts the flags into the scene's randomize block; a scene without one is an error.
    pub fn apply(&self, scene: &mut Scene) -> Result<(), String> {
        variation::override_seeds(scene, self.randomize_seed, self.episode_seed)
    }
}
