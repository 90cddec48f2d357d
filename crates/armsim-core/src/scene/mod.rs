//! The scene: revA `scene_config.json` types and validation (`config`); spawning lives beside it.

pub mod config;

pub use config::*;
