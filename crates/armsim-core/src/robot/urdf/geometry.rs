//! URDF geometry: poses, primitive shapes, meshes (resolved, loaded and scaled) and colours.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::{EulerRot, Quat, Vec3};

use crate::geometry::Pose;
use crate::robot::error::RobotError;
use crate::robot::mesh::{LoadOptions, MeshTable, resolve_mesh_path};
use crate::robot::mesh_shapes::mesh_shape;
use crate::robot::model::Shape;

/// Colour of a primitive visual the file gives none for.
pub(super) const DEFAULT_RGBA: [f32; 4] = [0.7, 0.7, 0.7, 1.0];
/// Colour of a mesh visual the file gives none for: white, so that the renderer, which multiplies
/// the geom colour into the colours of the mesh's parts (COLLADA/OBJ materials), shows them
/// unchanged.
pub(super) const MESH_RGBA: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

/// Where the meshes of one robot file come from, and the table they are loaded into.
pub(super) struct Meshes<'a> {
    /// The robot file and its folder; `None` when parsing text with no file behind it.
    file: Option<(PathBuf, PathBuf)>,
    options: &'a LoadOptions,
    pub table: MeshTable,
}

impl<'a> Meshes<'a> {
    pub fn new(path: Option<&Path>, options: &'a LoadOptions) -> Self {
        let file = path.map(|p| {
            // Absolute (symlinks kept) so that the walk up for `package://` does not stop at a
            // relative path's first component.
            let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            (p, dir)
        });
        Meshes {
            file,
            options,
            table: MeshTable::default(),
        }
    }

    /// The model shape of a URDF geometry; `link` and `line` name it in errors.
    pub fn shape(
        &mut self,
        g: &urdf_rs::Geometry,
        link: &str,
        line: Option<u32>,
    ) -> Result<Shape, RobotError> {
        Ok(match g {
            urdf_rs::Geometry::Box { size } => Shape::Box {
                half_extents: vec3(size) * 0.5,
            },
            urdf_rs::Geometry::Sphere { radius } => Shape::Sphere {
                radius: *radius as f32,
            },
            urdf_rs::Geometry::Cylinder { radius, length } => Shape::Cylinder {
                radius: *radius as f32,
                half_length: *length as f32 * 0.5,
            },
            urdf_rs::Geometry::Capsule { radius, length } => Shape::Capsule {
                radius: *radius as f32,
                half_length: *length as f32 * 0.5,
            },
            urdf_rs::Geometry::Mesh { filename, scale } => {
                let Some((file, dir)) = &self.file else {
                    return Err(RobotError::Unsupported {
                        what: format!(
                            "mesh geometry `{filename}` on link `{link}` without a file path to \
                             resolve it against (load the robot from its file)"
                        ),
                        line,
                    });
                };
                let path = resolve_mesh_path(filename, dir, Some(file), self.options).map_err(
                    |e| match e {
                        RobotError::MeshNotFound { uri, tried, hint } => RobotError::MeshNotFound {
                            uri,
                            tried,
                            hint: format!(" for link `{link}`{hint}"),
                        },
                        e => e,
                    },
                )?;
                let index = self.table.get_or_load(&path)?;
                let scale = scale.as_ref().map_or(Vec3::ONE, vec3);
                mesh_shape(&self.table.assets[index], index, scale)
            }
        })
    }
}

/// urdf-rs reads `scale` as exactly three numbers, but files also write one (`scale="0.001"`):
/// returns `xml` with every single-number mesh scale written out three times, or `None` when
/// there is none. Lines and columns stay where they were.
pub(super) fn expand_uniform_scales(xml: &str, doc: &roxmltree::Document) -> Option<String> {
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for node in doc.descendants().filter(|n| n.has_tag_name("mesh")) {
        let Some(attr) = node.attributes().find(|a| a.name() == "scale") else {
            continue;
        };
        let range = attr.range_value();
        let Some(raw) = xml.get(range.clone()) else {
            continue;
        };
        let mut words = raw.split_whitespace();
        if let (Some(one), None) = (words.next(), words.next())
            && one.parse::<f64>().is_ok()
        {
            edits.push((range, format!("{one} {one} {one}")));
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(xml.len() + edits.len() * 16);
    let mut at = 0;
    for (range, text) in edits {
        out.push_str(&xml[at..range.start]);
        out.push_str(&text);
        at = range.end;
    }
    out.push_str(&xml[at..]);
    Some(out)
}

pub(super) fn vec3(v: &urdf_rs::Vec3) -> Vec3 {
    Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// URDF rpy is fixed-axis roll about X, then pitch about Y, then yaw about Z: R = Rz·Ry·Rx.
pub(super) fn pose(p: &urdf_rs::Pose) -> Pose {
    let rpy = vec3(&p.rpy);
    Pose::new(
        vec3(&p.xyz),
        Quat::from_euler(EulerRot::ZYX, rpy.z, rpy.y, rpy.x).normalize(),
    )
}

/// The colour a visual's material gives: its inline `<color>`, else the robot-level material
/// of that name's; `None` when neither has one.
pub(super) fn visual_rgba(
    material: Option<&urdf_rs::Material>,
    materials: &HashMap<&str, &urdf_rs::Material>,
    link: &str,
) -> Result<Option<[f32; 4]>, RobotError> {
    let Some(m) = material else {
        return Ok(None);
    };
    let color = match (&m.color, m.name.as_str()) {
        (Some(c), _) => Some(c),
        (None, "") => None,
        (None, name) => {
            let named = materials
                .get(name)
                .ok_or_else(|| RobotError::UnknownReference {
                    kind: "material",
                    name: name.to_string(),
                    referrer: format!("a visual of link `{link}`"),
                })?;
            named.color.as_ref()
        }
    };
    Ok(color.map(|c| c.rgba.0.map(|v| v as f32)))
}
