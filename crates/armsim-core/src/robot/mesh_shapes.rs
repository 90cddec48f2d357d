//! Loaded meshes made ready for the model: the convex hulls of every mesh a collision geom uses
//! (built once, on every core) and the [`Shape::Mesh`] of a scaled mesh asset.
//!
//! Shared by both loaders; apart from `mesh.rs` because it builds on the model's shapes and
//! links, which themselves hold meshes.

use glam::Vec3;

use super::hull;
use super::mesh::{self, MeshAsset};
use super::model::{Link, Shape};

/// Builds the convex hulls of every mesh a collision geom uses, and returns the meshes shared.
/// A part without a hull (flat, or fewer than four points) does not collide, and a note says so.
pub(crate) fn finish_meshes(
    links: &[Link],
    mut table: mesh::MeshTable,
    notes: &mut Vec<String>,
) -> Vec<std::sync::Arc<MeshAsset>> {
    // Per asset, the largest scale a colliding geom gives it (None: no geom collides with it):
    // the hull tolerance is 1 mm in the world, so in the file's units it shrinks with scale.
    let mut colliding: Vec<Option<f32>> = vec![None; table.assets.len()];
    for geom in links.iter().flat_map(|l| &l.collisions) {
        if let Shape::Mesh { mesh, scale, .. } = geom.shape
            && let Some(c) = colliding.get_mut(mesh)
        {
            let s = scale.abs().max_element().max(1e-6);
            *c = Some(c.map_or(s, |c| c.max(s)));
        }
    }
    // Hulls of different files are independent: build them on every core.
    let mut work: Vec<(&mut MeshAsset, mesh::HullLimits)> = table
        .assets
        .iter_mut()
        .zip(colliding)
        .enumerate()
        .filter_map(|(i, (a, c))| {
            let limits = mesh::HullLimits {
                tolerance: hull::HULL_TOLERANCE_M / c?,
                max_vertices: table.max_hull_vertices.get(&i).copied(),
            };
            Some((a, limits))
        })
        .collect();
    let flat = mesh::on_every_core(&mut work, |(a, limits)| {
        let flat = a.build_hulls_within(*limits);
        let scale = hull::HULL_TOLERANCE_M / limits.tolerance;
        let (mut full, mut kept, mut error) = (0, 0, 0.0f32);
        for h in a.parts.iter().filter_map(|p| p.hull.as_ref()) {
            full += h.full_vertices;
            kept += h.points.len();
            error = error.max(h.error * scale);
        }
        let simplified = (kept < full).then(|| {
            format!(
                "{}: convex hulls simplified from {full} to {kept} vertices, at most {:.2} mm from the full hulls{}",
                a.path.display(),
                error * 1000.0,
                limits
                    .max_vertices
                    .map_or(String::new(), |m| format!(" (maxhullvert {m})"))
            )
        });
        (flat, a.parts.len(), a.path.clone(), simplified)
    });
    for (flat, parts, path, simplified) in flat {
        notes.extend(simplified);
        if flat > 0 {
            notes.push(format!(
                "{flat} of {parts} parts of {} have no volume and do not collide",
                path.display()
            ));
        }
    }
    table.assets.into_iter().map(std::sync::Arc::new).collect()
}

/// The mesh shape for asset `mesh` of `table` at per-axis `scale`.
pub(crate) fn mesh_shape(asset: &MeshAsset, mesh: usize, scale: Vec3) -> Shape {
    let (lo, hi) = asset.bounds();
    Shape::Mesh {
        mesh,
        scale,
        half_extents: ((hi - lo) * scale.abs() * 0.5).max(Vec3::splat(1e-4)),
    }
}
