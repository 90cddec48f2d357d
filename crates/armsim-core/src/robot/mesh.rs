//! Mesh files of real robots: STL (binary and ASCII), OBJ and COLLADA read with mesh-loader,
//! the convex hull of each part for collision (parry's, MuJoCo's rule), and where a file's mesh
//! paths point (`package://`, `file://`, relative, absolute).
//!
//! A mesh keeps the parts its file splits it into (OBJ `o`/`g` objects, COLLADA meshes), each
//! with the colour the file gives, if any. Hulls are built once, at load, and only for meshes a
//! collision geom uses: visual meshes never pay for one.

use std::fmt;
use std::path::{Path, PathBuf};

use glam::Vec3;

use super::error::RobotError;

/// One part of a mesh file: a triangle soup in the file's units (metres after COLLADA's `<unit>`).
#[derive(Clone, PartialEq)]
pub struct MeshPart {
    /// The part's name in the file (OBJ object or group, COLLADA geometry); empty for STL.
    pub name: String,
    pub positions: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
    /// The part's colour where the file gives one (COLLADA/OBJ material diffuse), linear RGBA.
    pub color: Option<[f32; 4]>,
    /// The convex hull (vertices and triangles), built at load for meshes that collide.
    pub hull: Option<Hull>,
}

/// A convex polyhedron: parry's hull of a part's vertices, simplified where it is big
/// (`super::hull`).
#[derive(Clone, Debug, PartialEq)]
pub struct Hull {
    pub points: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
    /// The vertex count of the full hull, before simplification.
    pub full_vertices: usize,
    /// The largest distance of a point of the full hull from this one, in the file's units
    /// (0 for a full hull).
    pub error: f32,
}

/// How a mesh's hulls may be simplified: the tolerance in the file's units (the robot's
/// `HULL_TOLERANCE_M` divided by the largest scale a geom gives the mesh) and MJCF's
/// `maxhullvert`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HullLimits {
    pub tolerance: f32,
    pub max_vertices: Option<usize>,
}

/// A mesh file, loaded: the robot model's geoms refer to it by index (`Shape::Mesh`).
#[derive(Clone, PartialEq)]
pub struct MeshAsset {
    /// The file it was read from, resolved: two geoms naming the same file share one asset.
    pub path: PathBuf,
    pub parts: Vec<MeshPart>,
}

impl fmt::Debug for MeshPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeshPart")
            .field("name", &self.name)
            .field("vertices", &self.positions.len())
            .field("triangles", &self.triangles.len())
            .field("color", &self.color)
            .field("hull_points", &self.hull.as_ref().map(|h| h.points.len()))
            .finish()
    }
}

impl fmt::Debug for MeshAsset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeshAsset")
            .field("path", &self.path)
            .field("parts", &self.parts)
            .finish()
    }
}

impl MeshAsset {
    /// Reads a mesh file, choosing the reader by extension in any case (`.STL`, `.Dae`).
    pub fn load(path: &Path) -> Result<MeshAsset, RobotError> {
        let bytes = std::fs::read(path).map_err(|source| RobotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(path, &bytes)
    }

    /// Parses a mesh file's bytes; `path` picks the format and names it in errors.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<MeshAsset, RobotError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let loader = mesh_loader::Loader::default();
        let fail = |e: std::io::Error| RobotError::Mesh {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let scene = match ext.as_deref() {
            Some("stl") => loader.load_stl_from_slice(bytes, path).map_err(fail)?,
            Some("dae") => loader.load_collada_from_slice(bytes, path).map_err(fail)?,
            Some("obj") => {
                // mesh-loader splits an OBJ on `g` and `usemtl` but not on `o`: a convex
                // decomposition written as `o convex_0 … o convex_1` must stay separate parts.
                // Most files have no `o` line: they are parsed as they are, without a copy.
                let has_objects =
                    bytes.starts_with(b"o ") || bytes.windows(3).any(|w| w == b"\no ");
                let split: std::borrow::Cow<[u8]> = if has_objects {
                    let text = String::from_utf8_lossy(bytes);
                    let mut out = String::with_capacity(text.len() + 64);
                    for line in text.lines() {
                        match line.strip_prefix("o ") {
                            Some(name) => {
                                out.push_str("g ");
                                out.push_str(name);
                            }
                            None => out.push_str(line),
                        }
                        out.push('\n');
                    }
                    std::borrow::Cow::Owned(out.into_bytes())
                } else {
                    std::borrow::Cow::Borrowed(bytes)
                };
                // The .mtl files that OBJs name are often not shipped: read none, colour comes
                // from the robot file.
                loader
                    .custom_reader(|p| {
                        Err(std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            format!("{} not read", p.display()),
                        ))
                    })
                    .load_obj_from_slice(&split, path)
                    .map_err(fail)?
            }
            _ => {
                return Err(RobotError::Mesh {
                    path: path.to_path_buf(),
                    message: "unsupported mesh format: the extension must be .stl, .obj or .dae \
                              (any case)"
                        .into(),
                });
            }
        };
        let mut parts = Vec::with_capacity(scene.meshes.len());
        for (i, mesh) in scene.meshes.into_iter().enumerate() {
            if mesh.faces.is_empty() {
                continue;
            }
            let color = scene
                .materials
                .get(i)
                .and_then(|m| m.color.diffuse)
                .filter(|c| c.iter().all(|v| v.is_finite()));
            let n = mesh.vertices.len() as u32;
            if mesh.vertices.iter().flatten().any(|v| !v.is_finite())
                || mesh.faces.iter().flatten().any(|&i| i >= n)
            {
                return Err(RobotError::Mesh {
                    path: path.to_path_buf(),
                    message: format!(
                        "part {i} `{}` has a non-finite vertex or a face index out of range",
                        mesh.name
                    ),
                });
            }
            parts.push(MeshPart {
                name: mesh.name,
                positions: mesh.vertices,
                triangles: mesh.faces,
                color,
                hull: None,
            });
        }
        if parts.is_empty() {
            return Err(RobotError::Mesh {
                path: path.to_path_buf(),
                message: "the file holds no triangles".into(),
            });
        }
        Ok(MeshAsset {
            path: path.to_path_buf(),
            parts,
        })
    }

    /// Builds each part's convex hull once (parry's `convex_hull`); parts too flat or too small
    /// to have one are left without, and their count is returned so the loader can say so.
    pub fn build_hulls(&mut self) -> usize {
        self.build_hulls_within(HullLimits::default())
    }

    /// As [`Self::build_hulls`], simplifying each big hull within `limits` (`super::hull`).
    pub fn build_hulls_within(&mut self, limits: HullLimits) -> usize {
        let mut degenerate = 0;
        for part in &mut self.parts {
            if part.hull.is_some() {
                continue;
            }
            // An STL repeats each vertex in every triangle that has it (about six times):
            // the hull of the distinct points is the same, and much faster to build.
            let mut distinct: Vec<[u32; 3]> =
                part.positions.iter().map(|p| p.map(f32::to_bits)).collect();
            distinct.sort_unstable();
            distinct.dedup();
            let points: Vec<Vec3> = distinct
                .iter()
                .map(|p| Vec3::from_array(p.map(f32::from_bits)))
                .collect();
            // `try_`: a flat or tiny part is an error to report, never a panic.
            let Ok((vertices, triangles)) =
                rapier3d::parry::transformation::try_convex_hull(&points)
            else {
                degenerate += 1;
                continue;
            };
            if triangles.len() < 4 {
                degenerate += 1;
                continue;
            }
            let full_vertices = vertices.len();
            let (vertices, triangles, error) = match (limits.tolerance > 0.0
                || limits.max_vertices.is_some())
            .then(|| super::hull::simplify(&vertices, limits.tolerance, limits.max_vertices))
            .flatten()
            {
                Some(s) => (s.points, s.triangles, s.error),
                None => (vertices, triangles, 0.0),
            };
            part.hull = Some(Hull {
                points: vertices.iter().map(|v| [v.x, v.y, v.z]).collect(),
                triangles,
                full_vertices,
                error,
            });
        }
        degenerate
    }

    /// The axis-aligned bounds `(min, max)` of every part's vertices, unscaled.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for p in self.parts.iter().flat_map(|p| &p.positions) {
            let v = Vec3::from_array(*p);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        (lo, hi)
    }

    /// Vertices and triangles of all parts.
    pub fn counts(&self) -> (usize, usize) {
        self.parts.iter().fold((0, 0), |(v, t), p| {
            (v + p.positions.len(), t + p.triangles.len())
        })
    }
}

/// How a robot file is read: where `package://NAME/…` URIs point (an explicit map first, then a
/// walk up from the robot file), and which parked geoms collide.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadOptions {
    /// `NAME → DIR`, from `--package-path NAME=DIR` and the scene's
    /// `extensions.armsim.robot.package_paths`, first match wins.
    pub package_paths: Vec<(String, PathBuf)>,
    /// MJCF geoms, by name, that collide with the world whatever their `contype`/`conaffinity`
    /// (the scene's `extensions.armsim.robot.collide_geoms`): the SO-101's jaw pads, which its
    /// file parks on bit 2 for an environment option to switch on.
    pub collide_geoms: Vec<String>,
}

/// Resolves a mesh reference as a robot file writes it to an existing file.
///
/// - `package://NAME/rest`: `DIR/rest` for an explicit `NAME=DIR`; otherwise, walking up from
///   the robot file's folder, a folder named NAME, or one whose `package.xml` names it, and also
///   `rest` itself against each folder up the way (the folder that holds the packages).
/// - `file:///abs/path` and absolute paths: as they are.
/// - Anything else: relative to `base_dir` (the robot file's folder, or MJCF's meshdir).
///
/// When nothing is found, the error lists every path tried, in order.
pub fn resolve_mesh_path(
    uri: &str,
    base_dir: &Path,
    robot_file: Option<&Path>,
    options: &LoadOptions,
) -> Result<PathBuf, RobotError> {
    let mut tried = Vec::new();
    let found = |p: PathBuf, tried: &mut Vec<PathBuf>| {
        if p.is_file() {
            Some(p)
        } else {
            tried.push(p);
            None
        }
    };
    if let Some(rest) = uri.strip_prefix("package://") {
        let (name, rel) = rest.split_once('/').unwrap_or((rest, ""));
        for (pkg, dir) in &options.package_paths {
            if pkg == name
                && let Some(p) = found(dir.join(rel), &mut tried)
            {
                return Ok(p);
            }
        }
        let start = robot_file
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| base_dir.to_path_buf());
        for dir in start.ancestors() {
            let named = dir.file_name().and_then(|n| n.to_str()) == Some(name);
            if (named || package_xml_names(dir, name))
                && let Some(p) = found(dir.join(rel), &mut tried)
            {
                return Ok(p);
            }
            if let Some(p) = found(dir.join(name).join(rel), &mut tried) {
                return Ok(p);
            }
        }
        return Err(RobotError::MeshNotFound {
            uri: uri.to_string(),
            tried,
            hint: format!(
                " (no folder named `{name}` above the robot file; pass --package-path \
                 {name}=DIR or set extensions.armsim.robot.package_paths)"
            ),
        });
    }
    let path = match uri.strip_prefix("file://") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(uri),
    };
    let candidate = if path.is_absolute() {
        path
    } else {
        base_dir.join(path)
    };
    found(candidate, &mut tried).ok_or_else(|| RobotError::MeshNotFound {
        uri: uri.to_string(),
        tried,
        hint: String::new(),
    })
}

/// Whether `dir/package.xml` declares `<name>NAME</name>`.
fn package_xml_names(dir: &Path, name: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("package.xml")) else {
        return false;
    };
    roxmltree::Document::parse(&text).is_ok_and(|doc| {
        doc.root_element()
            .children()
            .find(|n| n.has_tag_name("name"))
            .and_then(|n| n.text())
            .is_some_and(|t| t.trim() == name)
    })
}

/// `f` over `items`, split into one chunk per core, each on its own thread; results in order.
/// Mesh files and their hulls are independent, and a Menagerie arm has dozens.
pub(crate) fn on_every_core<T: Send, R: Send>(
    items: &mut [T],
    f: impl Fn(&mut T) -> R + Sync,
) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().max(1));
    let chunk = items.len().div_ceil(workers).max(1);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks_mut(chunk)
            .map(|part| scope.spawn(move || part.iter_mut().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a mesh worker panicked"))
            .collect()
    })
}

/// Mesh assets of one robot file, keyed by resolved path so that a file named twice (or by two
/// spellings) is read once.
#[derive(Default)]
pub(crate) struct MeshTable {
    pub assets: Vec<MeshAsset>,
    /// Asset index → the smallest `maxhullvert` a file's `<mesh>` gives it.
    pub max_hull_vertices: std::collections::HashMap<usize, usize>,
}

impl MeshTable {
    /// Reads `paths` on every core at once (a Menagerie arm names dozens of files), keeping
    /// those that load; a file that fails is left for [`get_or_load`](Self::get_or_load) to
    /// report when a geom uses it.
    pub fn preload(&mut self, paths: &[PathBuf]) {
        let mut keys: Vec<PathBuf> = paths
            .iter()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_path_buf()))
            .filter(|k| !self.assets.iter().any(|a| &a.path == k))
            .collect();
        keys.sort();
        keys.dedup();
        let loaded = on_every_core(&mut keys, |k| {
            let mut a = MeshAsset::load(k).ok()?;
            a.path = k.clone();
            Some(a)
        });
        self.assets.extend(loaded.into_iter().flatten());
    }

    /// Caps the hulls of asset `index` at `max` vertices (MJCF `maxhullvert`); the smallest
    /// cap wins where two `<mesh>` elements name one file.
    pub fn cap_hull(&mut self, index: usize, max: usize) {
        let cap = self.max_hull_vertices.entry(index).or_insert(max);
        *cap = (*cap).min(max);
    }

    /// The index of the asset for `path`, reading the file the first time.
    pub fn get_or_load(&mut self, path: &Path) -> Result<usize, RobotError> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(i) = self.assets.iter().position(|a| a.path == key) {
            return Ok(i);
        }
        let mut asset = MeshAsset::load(path)?;
        asset.path = key;
        self.assets.push(asset);
        Ok(self.assets.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBE_OBJ: &str = "o first\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n\
                            o second\nv 2 0 0\nv 3 0 0\nv 2 1 0\nv 2 0 1\nf 5 6 7\nf 5 6 8\nf 5 7 8\nf 6 7 8\n";

    #[test]
    fn obj_objects_stay_separate_parts_and_get_hulls() {
        let mut m = MeshAsset::from_bytes(Path::new("x.OBJ"), CUBE_OBJ.as_bytes()).unwrap();
        assert_eq!(m.parts.len(), 2, "{m:?}");
        assert_eq!(m.parts[0].triangles.len(), 4);
        assert_eq!(m.build_hulls(), 0);
        for p in &m.parts {
            assert_eq!(p.hull.as_ref().unwrap().points.len(), 4);
        }
        let (lo, hi) = m.bounds();
        assert_eq!((lo, hi), (Vec3::ZERO, Vec3::new(3.0, 1.0, 1.0)));
    }

    #[test]
    fn ascii_stl_reads_and_bad_files_say_which() {
        let stl = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n\
                   endloop\nendfacet\nendsolid t\n";
        let m = MeshAsset::from_bytes(Path::new("a.Stl"), stl.as_bytes()).unwrap();
        assert_eq!(m.counts().1, 1);
        let e = MeshAsset::from_bytes(Path::new("a.ply"), b"ply").unwrap_err();
        assert!(e.to_string().contains("a.ply"), "{e}");
        let e = MeshAsset::load(Path::new("/nonexistent/m.stl")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/m.stl"), "{e}");
    }

    #[test]
    fn package_uris_resolve_by_map_then_by_walking_up_and_list_what_was_tried() {
        let root = std::env::temp_dir().join(format!("armsim-mesh-{}", std::process::id()));
        let pkg = root.join("share/my_robot");
        std::fs::create_dir_all(pkg.join("meshes")).unwrap();
        std::fs::create_dir_all(pkg.join("urdf")).unwrap();
        std::fs::write(pkg.join("meshes/a.stl"), "").unwrap();
        let urdf = pkg.join("urdf/r.urdf");
        let opts = LoadOptions::default();
        let found = resolve_mesh_path("package://my_robot/meshes/a.stl", &root, Some(&urdf), &opts)
            .unwrap();
        assert_eq!(found, pkg.join("meshes/a.stl"));
        // Relative to the file, and file://.
        let rel = resolve_mesh_path("../meshes/a.stl", &pkg.join("urdf"), None, &opts).unwrap();
        assert!(rel.is_file());
        let uri = format!("file://{}", pkg.join("meshes/a.stl").display());
        assert!(resolve_mesh_path(&uri, &root, None, &opts).is_ok());
        // An explicit map wins over the walk.
        let other = root.join("elsewhere");
        std::fs::create_dir_all(other.join("meshes")).unwrap();
        std::fs::write(other.join("meshes/a.stl"), "").unwrap();
        let opts = LoadOptions {
            package_paths: vec![("my_robot".into(), other.clone())],
            ..Default::default()
        };
        let mapped =
            resolve_mesh_path("package://my_robot/meshes/a.stl", &root, Some(&urdf), &opts)
                .unwrap();
        assert_eq!(mapped, other.join("meshes/a.stl"));
        let e = resolve_mesh_path("package://nope/m.stl", &root, Some(&urdf), &opts).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("package://nope/m.stl") && msg.contains("--package-path"),
            "{msg}"
        );
        assert!(
            msg.contains(&pkg.join("urdf/nope/m.stl").display().to_string()),
            "{msg}"
        );
        std::fs::remove_dir_all(&root).ok();
    }
}
