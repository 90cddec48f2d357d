//! Where the robot files of armsim's shipped scenes come from: `assets/scenes/panda.json` reads
//! MuJoCo Menagerie's Panda from `~/mujoco_menagerie`, `so101.json` the SO-101 from
//! `~/SO-ARM100`. Those files are not in armsim; when one is missing, the error says which
//! `git clone` brings it to the path the scene names, so a first run's failure is a command
//! away from working.

use std::path::{Component, Path, PathBuf};

/// A public repository that robot files are commonly kept in, under its own folder name.
struct Source {
    /// The folder a clone makes (the repository's name).
    folder: &'static str,
    url: &'static str,
    what: &'static str,
}

const SOURCES: [Source; 2] = [
    Source {
        folder: "mujoco_menagerie",
        url: "https://github.com/google-deepmind/mujoco_menagerie",
        what: "MuJoCo Menagerie",
    },
    Source {
        folder: "SO-ARM100",
        url: "https://github.com/TheRobotStudio/SO-ARM100",
        what: "The Robot Studio's SO-ARM100",
    },
];

/// For a robot file that was not found, the `git clone` that brings it, when the path the scene
/// names (`written`, as in the file, `~` unexpanded) runs through a known repository's folder:
/// the clone goes where the path expects that folder. A relative path is resolved against the
/// scene's folder (`base_dir`), where the file is looked for first.
pub(super) fn clone_hint(written: &str, base_dir: &Path) -> Option<String> {
    let path = Path::new(written);
    let mut prefix = PathBuf::new();
    for part in path.components() {
        prefix.push(part);
        let Component::Normal(name) = part else {
            continue;
        };
        let Some(src) = SOURCES.iter().find(|s| name == s.folder) else {
            continue;
        };
        let home = path.starts_with("~");
        let dest = if home || prefix.is_absolute() {
            prefix.display().to_string()
        } else {
            base_dir.join(&prefix).display().to_string()
        };
        let home_note = if home {
            " (the scene reads `~` as $HOME)"
        } else {
            ""
        };
        return Some(format!(
            "it is part of {}: `git clone --depth 1 {} {dest}` brings it there{home_note}, or \
             set `robot.mjcf_path` in a copy of the scene to where your copy is",
            src.what, src.url
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_menagerie_path_under_home_gets_its_clone_command() {
        let hint = clone_hint(
            "~/mujoco_menagerie/franka_emika_panda/panda.xml",
            Path::new("/x/assets/scenes"),
        )
        .unwrap();
        assert!(
            hint.contains(
                "git clone --depth 1 https://github.com/google-deepmind/mujoco_menagerie \
                 ~/mujoco_menagerie`"
            ),
            "{hint}"
        );
        assert!(hint.contains("$HOME"), "{hint}");
    }

    #[test]
    fn a_relative_path_clones_beside_the_scene_and_others_get_no_hint() {
        let hint = clone_hint(
            "../SO-ARM100/Simulation/SO101/so101_new_calib.xml",
            Path::new("/x/scenes"),
        )
        .unwrap();
        assert!(hint.contains("SO-ARM100 /x/scenes/../SO-ARM100`"), "{hint}");
        assert!(!hint.contains("$HOME"), "{hint}");
        assert_eq!(clone_hint("../robots/arm6.xml", Path::new("/x")), None);
    }
}
