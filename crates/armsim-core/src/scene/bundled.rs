//! The scenes and robots shipped with armsim, compiled in, so that the binary and the Python
//! package run from any folder (and once installed, with no source tree at all).
//!
//! A bundled scene is parsed with a virtual base folder, [`BUNDLED_ROOT`]`/scenes`; the scene
//! loader resolves a robot path under that root (e.g. the default scene's `../robots/arm6.xml`)
//! against the files below instead of the disk. Nothing is written anywhere.

use std::path::{Component, Path, PathBuf};

use super::config::{Scene, SceneErrors, parse_scene};
use crate::robot::{RobotError, RobotModel, parse_robot};

/// The virtual folder bundled scenes are resolved in. It is shown in messages and in
/// `Scene::path`; it never names a real folder (a path starting with it is never read from
/// disk).
pub const BUNDLED_ROOT: &str = "<armsim built-in>";

/// (path relative to `assets/`, content) of every bundled file.
const FILES: [(&str, &str); 4] = [
    (
        "scenes/default_scene.json",
        include_str!("../../../../assets/scenes/default_scene.json"),
    ),
    (
        "scenes/gripper4.json",
        include_str!("../../../../assets/scenes/gripper4.json"),
    ),
    (
        "robots/arm6.xml",
        include_str!("../../../../assets/robots/arm6.xml"),
    ),
    (
        "robots/gripper4.urdf",
        include_str!("../../../../assets/robots/gripper4.urdf"),
    ),
];

/// The bundled scenes by name, the default first.
pub const BUNDLED_SCENES: [&str; 2] = ["default_scene", "gripper4"];

/// The name of the scene armsim runs when none is given.
pub const DEFAULT_SCENE: &str = BUNDLED_SCENES[0];

/// The text of the bundled file at `rel` (relative to `assets/`, e.g. `robots/arm6.xml`).
pub fn file(rel: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == rel).map(|(_, t)| *t)
}

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
    /// (`--package-path`); built-in scenes' robots have no meshes and ignore them.
    pub fn load_with(&self, options: &crate::robot::LoadOptions) -> Result<Scene, SceneErrors> {
        match self {
            Self::File(path) => super::config::load_scene_with(path, options),
            Self::Bundled(name) => {
                load_bundled_scene(name).expect("SceneSource::Bundled names a bundled scene")
            }
        }
    }

    /// How to name it in messages: the file's path, or `built-in scene NAME`.
    pub fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Bundled(name) => format!("built-in scene {name}"),
        }
    }
}

/// The bundled robot a path under [`BUNDLED_ROOT`] names, if the path is one: `Some(Ok)` for a
/// bundled file, `Some(Err)` for a path under the root that names none, `None` for any other
/// path (read it from disk).
pub(crate) fn robot_at(path: &Path) -> Option<Result<RobotModel, RobotError>> {
    let mut parts: Vec<String> = Vec::new();
    let mut components = path.components();
    if components.next() != Some(Component::Normal(BUNDLED_ROOT.as_ref())) {
        return None;
    }
    for c in components {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    let rel = parts.join("/");
    Some(match file(&rel) {
        Some(text) => parse_robot(path, text),
        None => Err(RobotError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such file among armsim's built-in robots (robots/arm6.xml, robots/gripper4.urdf)",
            ),
        }),
    })
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
    fn bundled_files_match_the_source_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets");
        for (rel, text) in FILES {
            let on_disk = std::fs::read_to_string(root.join(rel)).unwrap();
            assert_eq!(on_disk, text, "{rel}");
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

    #[test]
    fn a_path_under_the_bundled_root_never_reads_the_disk() {
        let base = Path::new(BUNDLED_ROOT).join("scenes");
        assert!(robot_at(&base.join("../robots/arm6.xml")).is_some_and(|r| r.is_ok()));
        let err = robot_at(&base.join("../robots/panda.xml"))
            .expect("under the root")
            .unwrap_err()
            .to_string();
        assert!(err.contains("built-in robots"), "{err}");
        assert!(robot_at(Path::new("/tmp/arm6.xml")).is_none());
    }
}
