//! `/scene.json`: what a browser (the headset page) needs to draw a scene and drive it over revA,
//! in one document: the table, the objects with their size and colour, the goal zone, the
//! workspace box, the operator-anchor transform, the heartbeat settings, and the robot's links
//! with their visual shapes (from the MJCF or URDF) so the live `extensions.link_poses` of each
//! state frame can place them. Built once at start-up from the scene and its world.

use std::collections::BTreeMap;

use serde::Serialize;

use super::envelope::PoseOut;
use super::mesh_buffers;
use crate::robot::{Geom, MeshAsset, Pose, Shape};
use crate::scene::{Aabb, GoalZone, Scene};
use crate::sim::SimView;

/// The table's colour in every view (the window draws it with the same RGB).
pub const TABLE_RGBA: [f32; 4] = [0.55, 0.38, 0.22, 1.0];

/// The whole document.
#[derive(Clone, Debug, Serialize)]
pub struct SceneInfo {
    pub schema_version: String,
    pub scene_id: String,
    /// The revA WebSocket path (`networking.ws_path`) on the same origin.
    pub ws_path: String,
    /// `frames.vp_operator_anchor.t_sim_from_vp_anchor`, row-major 4x4.
    pub t_sim_from_vp_anchor: [[f64; 4]; 4],
    pub heartbeat: HeartbeatInfo,
    pub table: TableInfo,
    pub objects: Vec<ObjectInfo>,
    pub goal_zone: Option<GoalZone>,
    pub workspace_aabb_m: Aabb,
    pub table_clearance_m: f32,
    pub robot: RobotInfo,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct HeartbeatInfo {
    pub period_ms: u64,
    pub timeout_ms: u64,
}

/// The table: a box from the floor (z = 0) to `top_height_m`.
#[derive(Clone, Debug, Serialize)]
pub struct TableInfo {
    pub top_height_m: f32,
    pub size_xy_m: [f32; 2],
    pub center_xy_m: [f32; 2],
    pub rgba: [f32; 4],
}

#[derive(Clone, Debug, Serialize)]
pub struct ObjectInfo {
    pub name: String,
    pub shape: ShapeInfo,
    pub rgba: [f32; 4],
    /// The initial pose; state frames carry the live one.
    pub pose: PoseOut,
}

/// A primitive shape. Capsules and cylinders run along the local Z axis; `length_m` is the
/// cylinder's full length, a capsule's without its two caps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ShapeInfo {
    Box {
        size_m: [f32; 3],
    },
    Sphere {
        radius_m: f32,
    },
    Capsule {
        radius_m: f32,
        length_m: f32,
    },
    Cylinder {
        radius_m: f32,
        length_m: f32,
    },
    /// Mesh `mesh` of the robot (`robot.meshes[mesh]`: its parts, each served as a buffer at
    /// `/meshes/<mesh>/<part>.bin`, see [`super::mesh_buffers`]), scaled per axis.
    Mesh {
        mesh: usize,
        scale: [f32; 3],
    },
}

impl From<Shape> for ShapeInfo {
    fn from(shape: Shape) -> Self {
        match shape {
            Shape::Box { half_extents } => ShapeInfo::Box {
                size_m: (half_extents * 2.0).to_array(),
            },
            Shape::Sphere { radius } => ShapeInfo::Sphere { radius_m: radius },
            Shape::Capsule {
                radius,
                half_length,
            } => ShapeInfo::Capsule {
                radius_m: radius,
                length_m: half_length * 2.0,
            },
            Shape::Cylinder {
                radius,
                half_length,
            } => ShapeInfo::Cylinder {
                radius_m: radius,
                length_m: half_length * 2.0,
            },
            Shape::Mesh { mesh, scale, .. } => ShapeInfo::Mesh {
                mesh,
                scale: scale.to_array(),
            },
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RobotInfo {
    pub name: String,
    pub base_pose: PoseOut,
    /// The link whose frame carries the end effector, and the tool point in it.
    pub ee_link: String,
    pub ee_offset_m: [f32; 3],
    pub joint_names: Vec<String>,
    pub links: Vec<LinkInfo>,
    /// Each link's pose at start (sim frame), so a page can draw the arm before its first state
    /// frame.
    pub link_poses: BTreeMap<String, PoseOut>,
    /// The mesh files the visuals' `mesh` shapes index, in `RobotModel::meshes` order.
    pub meshes: Vec<MeshInfo>,
}

/// One mesh file: its parts, each drawn in its own colour.
#[derive(Clone, Debug, Serialize)]
pub struct MeshInfo {
    pub parts: Vec<MeshPartInfo>,
}

/// One part of a mesh: where its buffer is and what it holds.
#[derive(Clone, Debug, Serialize)]
pub struct MeshPartInfo {
    /// `/meshes/<mesh>/<part>.bin?v=TAG` (the page adds `&key=KEY`): the buffer's path, and a
    /// hash of its bytes so that a cached buffer of another start is never taken for this one.
    pub url: String,
    pub vertices: usize,
    pub triangles: usize,
    /// The part's own colour (linear RGBA) where its file gives one: it is drawn in the geom's
    /// `rgba` times this, component by component; else in the geom's `rgba`.
    pub color: Option<[f32; 4]>,
}

fn mesh_info(mesh: usize, asset: &MeshAsset) -> MeshInfo {
    MeshInfo {
        parts: asset
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| MeshPartInfo {
                url: format!(
                    "{}?v={}",
                    mesh_buffers::path(mesh, i),
                    mesh_buffers::tag(part)
                ),
                vertices: part.positions.len(),
                triangles: part.triangles.len(),
                color: part.color,
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkInfo {
    pub name: String,
    pub parent: Option<String>,
    pub visuals: Vec<VisualInfo>,
}

/// One visual shape, posed in its link's frame.
#[derive(Clone, Debug, Serialize)]
pub struct VisualInfo {
    pub shape: ShapeInfo,
    pub pose: PoseOut,
    pub rgba: [f32; 4],
}

fn pose_out(pose: &Pose) -> PoseOut {
    PoseOut {
        pos_m: pose.translation.to_array(),
        quat_xyzw: pose.rotation.to_array(),
    }
}

fn visual(geom: &Geom) -> VisualInfo {
    VisualInfo {
        shape: geom.shape.into(),
        pose: pose_out(&geom.pose),
        rgba: geom.rgba,
    }
}

/// The document for `scene` as `world` (built from it) has it at start.
pub fn scene_info(scene: &Scene, world: &SimView<'_>) -> SceneInfo {
    let cfg = &scene.config;
    let robot = &world.robot;
    let links = robot
        .links
        .iter()
        .map(|link| LinkInfo {
            name: link.name.clone(),
            parent: link.parent.map(|p| robot.links[p].name.clone()),
            // Links drawn in the window from their collision shapes when they have no visuals
            // are drawn the same way here.
            visuals: if link.visuals.is_empty() {
                link.collisions.iter().map(visual).collect()
            } else {
                link.visuals.iter().map(visual).collect()
            },
        })
        .collect();
    // The world's objects: their sizes are this episode's, which a scene's `randomize` block
    // may have drawn.
    let objects = world
        .objects
        .iter()
        .map(|body| ObjectInfo {
            name: body.name.clone(),
            shape: body.shape.into(),
            rgba: body.rgba,
            pose: pose_out(&body.initial),
        })
        .collect();
    SceneInfo {
        schema_version: cfg.schema_version.clone(),
        scene_id: cfg.scene_id.clone(),
        ws_path: cfg.networking.ws_path.clone(),
        t_sim_from_vp_anchor: cfg.frames.vp_operator_anchor.t_sim_from_vp_anchor,
        heartbeat: HeartbeatInfo {
            period_ms: cfg.heartbeat.period_ms,
            timeout_ms: cfg.heartbeat.timeout_ms,
        },
        table: TableInfo {
            top_height_m: world.table_top_z,
            size_xy_m: world.table_size,
            center_xy_m: world.table_center,
            rgba: TABLE_RGBA,
        },
        objects,
        goal_zone: cfg.extensions.armsim.goal_zone,
        workspace_aabb_m: cfg.control.limits.workspace_aabb_m,
        table_clearance_m: cfg.control.limits.table_clearance_m,
        robot: RobotInfo {
            name: robot.name.clone(),
            base_pose: pose_out(&world.base_pose),
            ee_link: robot.links[robot.ee_link].name.clone(),
            ee_offset_m: robot.ee_offset.to_array(),
            joint_names: robot.joints.iter().map(|j| j.name.clone()).collect(),
            links,
            link_poses: super::control::link_poses(world),
            meshes: robot
                .meshes
                .iter()
                .enumerate()
                .map(|(i, m)| mesh_info(i, m))
                .collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::load_scene;
    use crate::sim::SimWorld;
    use serde_json::Value;

    fn scene(name: &str) -> (Scene, SimWorld) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/scenes")
            .join(name);
        let scene = load_scene(&path).expect("scene loads");
        let world = SimWorld::new(&scene);
        (scene, world)
    }

    #[test]
    fn the_default_scene_describes_table_cubes_zone_workspace_and_arm() {
        let (scene, world) = scene("default_scene.json");
        let doc = serde_json::to_value(scene_info(&scene, &world.view())).unwrap();
        assert_eq!(doc["scene_id"], "default_scene");
        assert_eq!(doc["ws_path"], "/ws");
        assert_eq!(doc["table"]["top_height_m"].as_f64(), Some(1.0));
        assert_eq!(doc["heartbeat"]["period_ms"], 1000);
        let objects = doc["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 3);
        assert_eq!(objects[0]["name"], "cube_red");
        assert_eq!(objects[0]["shape"]["type"], "box");
        assert!((objects[0]["shape"]["size_m"][0].as_f64().unwrap() - 0.05).abs() < 1e-6);
        assert!(objects[0]["rgba"][0].as_f64().unwrap() > 0.8);
        assert!(doc["goal_zone"]["center_xy_m"].is_array());
        assert_eq!(doc["workspace_aabb_m"]["min"].as_array().unwrap().len(), 3);
        let links = doc["robot"]["links"].as_array().unwrap();
        assert_eq!(links.len(), world.robot.links.len());
        let shapes: Vec<&Value> = links
            .iter()
            .flat_map(|l| l["visuals"].as_array().unwrap())
            .collect();
        assert!(shapes.len() >= links.len(), "every link has a shape");
        for s in &shapes {
            let t = s["shape"]["type"].as_str().unwrap();
            assert!(["box", "sphere", "capsule", "cylinder"].contains(&t), "{t}");
            assert_eq!(s["pose"]["quat_xyzw"].as_array().unwrap().len(), 4);
        }
        // Every link has a start pose under its name, the base where the scene puts it.
        let poses = doc["robot"]["link_poses"].as_object().unwrap();
        assert_eq!(poses.len(), links.len());
        let base = &poses[links[0]["name"].as_str().unwrap()]["pos_m"];
        assert!((base[2].as_f64().unwrap() - 1.0).abs() < 1e-4, "{base}");
        assert!(links[0]["parent"].is_null() && links[1]["parent"].is_string());
    }

    #[test]
    fn meshes_list_their_parts_with_urls_counts_and_colours() {
        use crate::robot::mesh::MeshPart;
        let (scene, mut world) = scene("default_scene.json");
        let doc = serde_json::to_value(scene_info(&scene, &world.view())).unwrap();
        assert_eq!(
            doc["robot"]["meshes"],
            serde_json::json!([]),
            "no meshes, empty"
        );
        let part = |n: usize, color| MeshPart {
            name: String::new(),
            positions: vec![[0.0; 3]; n],
            triangles: vec![[0, 1, 2]; n - 2],
            color,
            hull: None,
        };
        let asset = MeshAsset {
            path: "/somewhere/link0.obj".into(),
            parts: vec![part(3, None), part(5, Some([0.1, 0.2, 0.3, 1.0]))],
        };
        let shared = std::sync::Arc::new(asset.clone());
        world.model.robot.meshes = vec![shared.clone(), shared];
        let doc = serde_json::to_value(scene_info(&scene, &world.view())).unwrap();
        let meshes = doc["robot"]["meshes"].as_array().unwrap();
        assert_eq!(meshes.len(), 2);
        let parts = meshes[1]["parts"].as_array().unwrap();
        assert_eq!(parts.len(), 2);
        let url = parts[1]["url"].as_str().unwrap();
        let tag = mesh_buffers::tag(&asset.parts[1]);
        assert_eq!(url, format!("/meshes/1/1.bin?v={tag}"));
        assert_eq!(
            (
                parts[1]["vertices"].as_u64(),
                parts[1]["triangles"].as_u64()
            ),
            (Some(5), Some(3))
        );
        assert!(parts[0]["color"].is_null());
        assert!((parts[1]["color"][2].as_f64().unwrap() - 0.3).abs() < 1e-6);
        // The file's path stays on the server.
        assert!(!doc.to_string().contains("somewhere"));
        let shape = serde_json::to_value(ShapeInfo::from(Shape::Mesh {
            mesh: 1,
            scale: glam::Vec3::new(1.0, 2.0, 3.0),
            half_extents: glam::Vec3::ONE,
        }))
        .unwrap();
        assert_eq!(
            shape,
            serde_json::json!({"type": "mesh", "mesh": 1, "scale": [1.0, 2.0, 3.0]})
        );
    }

    #[test]
    fn shapes_keep_their_full_sizes() {
        let capsule = Shape::Capsule {
            radius: 0.03,
            half_length: 0.1,
        };
        assert_eq!(
            ShapeInfo::from(capsule),
            ShapeInfo::Capsule {
                radius_m: 0.03,
                length_m: 0.2
            }
        );
        let json = serde_json::to_value(ShapeInfo::from(Shape::Box {
            half_extents: glam::Vec3::new(0.1, 0.2, 0.3),
        }))
        .unwrap();
        assert_eq!(json["type"], "box");
        let size: Vec<f64> = serde_json::from_value(json["size_m"].clone()).unwrap();
        assert!((size[2] - 0.6).abs() < 1e-6);
    }

    #[test]
    fn link_poses_follow_the_links() {
        let (_, world) = scene("gripper4.json");
        let poses = super::super::control::link_poses(&world.view());
        assert_eq!(poses.len(), world.robot.links.len());
        for (link, body) in world.robot.links.iter().zip(&world.link_bodies) {
            let p = &poses[&link.name];
            assert_eq!(
                p.pos_m,
                world.view().body_pose(*body).translation.to_array()
            );
        }
    }
}
