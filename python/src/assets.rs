//! The scenes and robots shipped with armsim, compiled into the extension so that an installed
//! package needs no checkout: `Sim()` loads the default scene, `Sim("gripper4")` a bundled one by
//! name, `Sim("path/to/scene.json")` a file.
//!
//! The scene loader resolves a robot path against the scene file's folder, so the bundled files
//! are written once to a folder named after their content hash under the system's temporary
//! directory (written to a sibling and renamed, so concurrent processes never see half a file).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use armsim_core::scene::{Scene, load_scene};

/// (path relative to the assets folder, content) of every bundled file.
const FILES: [(&str, &str); 4] = [
    (
        "scenes/default_scene.json",
        include_str!("../../assets/scenes/default_scene.json"),
    ),
    (
        "scenes/gripper4.json",
        include_str!("../../assets/scenes/gripper4.json"),
    ),
    (
        "robots/arm6.xml",
        include_str!("../../assets/robots/arm6.xml"),
    ),
    (
        "robots/gripper4.urdf",
        include_str!("../../assets/robots/gripper4.urdf"),
    ),
];

/// The names `Sim(scene=…)` accepts besides a file path, the default first.
pub const BUNDLED_SCENES: [&str; 2] = ["default_scene", "gripper4"];

/// FNV-1a over every bundled file, naming the folder they are written to.
fn content_hash() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, text) in FILES {
        for b in name.bytes().chain(text.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The folder holding the bundled files, written there on first use.
fn bundled_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("armsim-assets-{:016x}", content_hash()));
    for (name, text) in FILES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
            continue;
        }
        let parent = path.parent().unwrap_or(&dir);
        std::fs::create_dir_all(parent)?;
        let tmp = parent.join(format!(".{}.{}", std::process::id(), unique()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(dir)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Loads the scene `spec` names: `None` is the default scene, a bundled name, or a file path.
pub fn resolve_scene(spec: Option<&str>) -> Result<Arc<Scene>, String> {
    let path = match spec {
        None => bundled_path(BUNDLED_SCENES[0])?,
        Some(name) if BUNDLED_SCENES.contains(&name) => bundled_path(name)?,
        Some(file) => {
            let path = Path::new(file);
            if !path.is_file() {
                return Err(format!(
                    "scene {file:?} is neither a file nor a bundled scene ({})",
                    BUNDLED_SCENES.join(", ")
                ));
            }
            path.to_path_buf()
        }
    };
    load_scene(&path)
        .map(Arc::new)
        .map_err(|e| format!("scene {}: {e}", path.display()))
}

fn bundled_path(name: &str) -> Result<PathBuf, String> {
    let dir = bundled_dir()
        .map_err(|e| format!("cannot write the bundled scenes to the temporary directory: {e}"))?;
    Ok(dir.join("scenes").join(format!("{name}.json")))
}
