//! Robot descriptions: the shared [`RobotModel`], its URDF and MJCF loaders, kinematics and IK.
//!
//! Everything here is Bevy-free so loaders and kinematics can be unit-tested and reused by the
//! physics builder, the protocols and the tools alike. Both loaders funnel through [`validate`]
//! so that a model that loads is one every consumer can rely on (tree order, limits, mimics).
//!
//! This file is the front door ([`load_robot`], which picks a loader) and re-exports the items
//! of the modules below: `model` (the model), `inertia`, `validate`, `mesh_shapes`, `fold`
//! (what the loaders share) and the loaders `mjcf` and `urdf`.

pub mod defaults;
pub mod error;
pub(crate) mod fold;
pub mod hull;
pub mod inertia;
pub mod kinematics;
pub mod mesh;
pub(crate) mod mesh_shapes;
pub mod mjcf;
pub mod model;
pub mod self_collision;
pub mod self_collision_table;
#[cfg(test)]
pub(crate) mod test_support;
pub mod urdf;
pub mod validate;
pub(crate) mod xml;

pub use defaults::*;
pub use error::RobotError;
pub use inertia::{shape_inertia, shape_volume};
pub use mesh::{LoadOptions, MeshAsset};
pub use model::*;
pub use validate::validate;

use std::path::Path;

/// Loads a robot file, choosing the format by extension: `.urdf` is URDF, `.xml` and `.mjcf`
/// are MJCF. Mesh paths resolve against the file's folder (see [`load_robot_with`]).
pub fn load_robot(path: &Path) -> Result<RobotModel, RobotError> {
    load_robot_with(path, &LoadOptions::default())
}

/// [`load_robot`] with `package://` locations ([`LoadOptions`]); meshes are read and the hulls
/// of collision meshes built here, once.
pub fn load_robot_with(path: &Path, options: &LoadOptions) -> Result<RobotModel, RobotError> {
    let format = format_of(path)?;
    let text = std::fs::read_to_string(path).map_err(|source| RobotError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    match format {
        Format::Urdf => urdf::parse_urdf_file(&text, Some(path), options),
        // Joint-less bodies move with their parents: fused for simulation (`mjcf::fuse`).
        Format::Mjcf => mjcf::parse_mjcf_file(&text, Some(path), options).map(mjcf::fuse_jointless),
    }
}

/// Parses a robot file's `text`, choosing the format by `path`'s extension (as [`load_robot`]).
/// Nothing is read from disk, so a file with meshes or `<include>`s is refused: use
/// [`load_robot_with`].
pub fn parse_robot(path: &Path, text: &str) -> Result<RobotModel, RobotError> {
    match format_of(path)? {
        Format::Urdf => urdf::parse_urdf(text),
        Format::Mjcf => mjcf::parse_mjcf(text),
    }
}

enum Format {
    Urdf,
    Mjcf,
}

fn format_of(path: &Path) -> Result<Format, RobotError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("urdf") => Ok(Format::Urdf),
        Some("xml" | "mjcf") => Ok(Format::Mjcf),
        _ => Err(RobotError::UnknownFormat {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_robot_picks_loader_by_extension() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/robots");
        let arm = load_robot(&root.join("arm6.xml")).expect("arm6 loads");
        assert_eq!(arm.name, "arm6");
        let g = load_robot(&root.join("gripper4.urdf")).expect("gripper4 loads");
        assert_eq!(g.name, "gripper4");
    }

    #[test]
    fn load_robot_rejects_unknown_extension_and_missing_file() {
        let e = load_robot(Path::new("robot.sdf")).unwrap_err();
        assert!(matches!(e, RobotError::UnknownFormat { .. }));
        assert!(e.to_string().contains("robot.sdf"), "{e}");

        let e = load_robot(Path::new("/nonexistent/dir/arm.urdf")).unwrap_err();
        assert!(matches!(e, RobotError::Io { .. }));
        assert!(e.to_string().contains("/nonexistent/dir/arm.urdf"), "{e}");
    }
}
