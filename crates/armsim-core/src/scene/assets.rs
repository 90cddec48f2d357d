//! The files under `assets/` that armsim compiles in (the bundled scenes and their robots), and
//! the robot a path under the virtual [`BUNDLED_ROOT`] names, which the scene checker reads a
//! bundled scene's robot from.

use std::path::{Component, Path};

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

/// The text of the bundled file at `rel` (relative to `assets/`, e.g. `robots/arm6.xml`).
pub fn file(rel: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == rel).map(|(_, t)| *t)
}

/// The path relative to `assets/` (`robots/gripper4.urdf`) of a path under [`BUNDLED_ROOT`],
/// with `..` applied; `None` for any other path.
pub fn relative(path: &Path) -> Option<String> {
    let mut components = path.components();
    if components.next() != Some(Component::Normal(BUNDLED_ROOT.as_ref())) {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for c in components {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    Some(parts.join("/"))
}

/// The bundled robot a path under [`BUNDLED_ROOT`] names, if the path is one: `Some(Ok)` for a
/// bundled file, `Some(Err)` for a path under the root that names none, `None` for any other
/// path (read it from disk).
pub(crate) fn robot_at(path: &Path) -> Option<Result<RobotModel, RobotError>> {
    let rel = relative(path)?;
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
    fn bundled_files_match_the_source_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets");
        for (rel, text) in FILES {
            let on_disk = std::fs::read_to_string(root.join(rel)).unwrap();
            assert_eq!(on_disk, text, "{rel}");
        }
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
