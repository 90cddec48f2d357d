//! The scenes armsim ships, as the Python package names them: `Sim()` loads the default scene,
//! `Sim("gripper4")` a bundled one by name, `Sim("path/to/scene.json")` a file. The scenes and
//! their robots are compiled into the core (`armsim_core::scene::bundled`), so an installed
//! package needs no checkout and writes nothing to disk.

use std::path::Path;
use std::sync::Arc;

use armsim_core::scene::{Scene, SceneSource};

pub use armsim_core::scene::BUNDLED_SCENES;

/// Loads the scene `spec` names: `None` is the default scene, a bundled name, or a file path.
pub fn resolve_scene(spec: Option<&str>) -> Result<Arc<Scene>, String> {
    let source = SceneSource::choose(spec.map(Path::new));
    if let (SceneSource::File(path), Some(file)) = (&source, spec)
        && !path.is_file()
    {
        return Err(format!(
            "scene {file:?} is neither a file nor a bundled scene ({})",
            BUNDLED_SCENES.join(", ")
        ));
    }
    source
        .load()
        .map(Arc::new)
        .map_err(|e| format!("scene {}: {e}", source.describe()))
}
