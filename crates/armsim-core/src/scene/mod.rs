//! The scene: revA `scene_config.json` types and validation (`config`), and the scenes and
//! robots compiled into armsim (`bundled`), so that it runs from any folder, and each episode's
//! start drawn from the scene's `randomize` block (`variation`).

mod assets;
pub mod bundled;
pub mod config;
pub mod variation;

pub use bundled::{BUNDLED_SCENES, SceneSource, load_bundled_scene};
pub use config::*;
