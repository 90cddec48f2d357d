//! The scenes and robots shipped with armsim, compiled in, so that the binary and the Python
//! package run from any folder (and once installed, with no source tree at all).
//!
//! A bundled scene is parsed with a virtual base folder, [`BUNDLED_ROOT`]`/scenes`; the scene
//! loader resolves a robot path under that root (e.g. the default scene's `../robots/arm6.xml`)
//! against the files below instead of the disk. Nothing is written anywhere.

use std::path::{Path, PathBuf};

pub use super::assets::{BUNDLED_ROOT, file, relative};
use super::config::{Scene, SceneErrors, parse_scene};

/// The bundled scenes by name, the default first.
pub const BUNDLED_SCENES: [&str; 2] = ["default_scene", "gripper4"];

/// The name of the scene armsim runs when none is given.
pub const DEFAULT_SCENE: &str = BUNDLED_SCENES[0];

/// The JSON of the bundled scene `name` (`default_scene`, `gripper4`).
pub fn scene_json(name: &str) -> Option<&'static str> {
    BUNDLED_SCENES
        .contains(&name)
        .then(|| file(&format!("scenes/{name}.json")))
        .flatten()
}

/// Loads the bundled scene `name`, its robot from the bundled robots.
pub fn load_bundled_scene(name: &str) -> Option<Result<Scene, SceneErrors>> {
    let json = scene_json(name)?;
    let base = Path::new(BUNDLED_ROOT).join("scenes");
    Some(parse_scene(json, &base).map(|mut scene| {
        scene.path = base.join(format!("{name}.json"));
        scene
    }))
}

/// Where a scene argument (a command-line `--scene`, Python's `Sim(scene)`) leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SceneSource {
    /// A scene file on disk.
    File(PathBuf),
    /// A bundled scene, by name.
    Bundled(&'static str),
}

impl SceneSource {
    /// Chooses where `spec` comes from: `None` is the bundled default scene; an existing file is
    /// that file; a bundled name (`gripper4`, or `gripper4.json`) is the bundled scene; a path
    /// that does not exist but ends in `assets/scenes/NAME.json` of a bundled scene (the
    /// README's commands run outside the source tree) is the bundled scene too. Anything else
    /// is the file, which then fails to load with the path in the message.
    pub fn choose(spec: Option<&Path>) -> Self {
        let Some(path) = spec else {
            return Self::Bundled(DEFAULT_SCENE);
        };
        if path.is_file() {
            return Self::File(path.to_path_buf());
        }
        let bundled = |name: &str| BUNDLED_SCENES.iter().copied().find(|s| *s == name);
        let text = path.to_string_lossy();
        if let Some(name) = bundled(text.strip_suffix(".json").unwrap_or(&text)) {
            return Self::Bundled(name);
        }
        let in_assets = path.parent().is_some_and(|p| p.ends_with("assets/scenes"));
        if in_assets
            && path.extension().is_some_and(|e| e == "json")
            && let Some(name) = path.file_stem().and_then(|s| bundled(&s.to_string_lossy()))
        {
            return Self::Bundled(name);
        }
        Self::File(path.to_path_buf())
    }

    /// Loads the scene.
    pub fn load(&self) -> Result<Scene, SceneErrors> {
        self.load_with(&crate::robot::LoadOptions::default())
    }

    /// [`load`](Self::load) with where a robot file's `package://` names point
    /// (`--package-path`); built-in scenes' robots have no meshes and ignore them. A scene whose
    /// `randomize` block cannot draw its first episode is an error here too.
    pub fn load_with(&self, options: &crate::robot::LoadOptions) -> Result<Scene, SceneErrors> {
        let scene = match self {
            Self::File(path) => super::config::load_scene_with(path, options),
            Self::Bundled(name) => {
                load_bundled_scene(name).expect("SceneSource::Bundled names a bundled scene")
            }
        }?;
        super::variation::check(&scene)?;
        Ok(scene)
    }

    /// How to name it in messages: the file's path, or `built-in scene NAME`.
    pub fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Bundled(name) => format!("built-in scene {name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_scene_loads_with_its_bundled_robot() {
        for name in BUNDLED_SCENES {
            let scene = load_bundled_scene(name)
                .expect("a bundled name")
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(scene.path.starts_with(BUNDLED_ROOT), "{name}");
            assert!(scene.robot_path.starts_with(BUNDLED_ROOT), "{name}");
            assert!(!scene.robot.joints.is_empty(), "{name}");
        }
    }

    #[test]
    fn scene_arguments_choose_the_file_or_the_bundled_scene() {
        assert_eq!(
            SceneSource::choose(None),
            SceneSource::Bundled("default_scene")
        );
        for spec in [
            "gripper4",
            "gripper4.json",
            "/nowhere/assets/scenes/gripper4.json",
        ] {
            assert_eq!(
                SceneSource::choose(Some(Path::new(spec))),
                SceneSource::Bundled("gripper4"),
                "{spec}"
            );
        }
        // A real file wins over a bundled name; an unknown path stays a file (and fails to load
        // naming it).
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/gripper4.json");
        assert_eq!(
            SceneSource::choose(Some(&real)),
            SceneSource::File(real.clone())
        );
        let missing = Path::new("/nowhere/scenes/mine.json");
        let source = SceneSource::choose(Some(missing));
        assert_eq!(source, SceneSource::File(missing.to_path_buf()));
        let errors = source.load().unwrap_err().to_string();
        assert!(errors.contains("/nowhere/scenes/mine.json"), "{errors}");
    }
}
