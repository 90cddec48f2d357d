//! Lights with shadows, the floor, and meshes on the simulation's own entities: the visual
//! geoms of the table, the objects and the robot's links become children of their `SimBody`
//! entities, and every other entity with a bevy_rapier `Collider` (a body the user spawned) gets
//! a mesh made from its collider's shape. bevy_rapier writes each body's pose into its
//! `Transform` and Bevy's transform propagation carries it to the meshes: nothing here copies
//! poses. A reset despawns the scene's entities with their meshes and spawns new ones, which
//! are drawn in the same frame. A robot's mesh files become one Bevy mesh per part, built once
//! and kept across resets ([`MeshCache`]).

use std::collections::HashMap;
use std::f32::consts::FRAC_PI_2;
use std::sync::Arc;

use bevy::asset::RenderAssetUsages;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use bevy_rapier3d::geometry::ColliderView;
use bevy_rapier3d::prelude::Collider;
use bevy_rapier3d::rapier::parry::shape::TypedShape;

use crate::robot::mesh::MeshPart;
use crate::robot::{Geom, MeshAsset, Shape};
use crate::sim::{BodyRole, ClockSystems, Sim, SimBody};

/// An entity the window has drawn (its meshes are its children), or one it must leave alone:
/// insert it on a body of your own to keep the window from giving it a mesh.
#[derive(Component, Clone, Copy, Debug, Default)]
pub struct Drawn;

/// A body the user spawned that the window gave meshes of its collider's shape.
#[derive(Component, Clone, Copy, Debug)]
struct DrawnFromCollider;

/// One of those meshes (a child of the body).
#[derive(Component, Clone, Copy, Debug)]
struct ColliderMesh;

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<MeshCache>()
        .add_systems(Startup, spawn_lights_and_floor)
        .add_systems(
            Update,
            (
                redraw_changed_colliders,
                draw_scene_bodies,
                draw_user_bodies,
            )
                .chain()
                .after(ClockSystems),
        );
}

/// The table's wood-like colour; the GUI test looks for it in screenshots.
pub const TABLE_RGB: [f32; 3] = [0.55, 0.38, 0.22];

/// The colour of a body the user spawned without a material of its own.
pub const USER_BODY_RGB: [f32; 3] = [0.72, 0.72, 0.70];

fn spawn_lights_and_floor(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.insert_resource(GlobalAmbientLight {
        color: Color::WHITE,
        brightness: 350.0,
        ..default()
    });
    commands.spawn((
        DirectionalLight {
            illuminance: 9_000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        Transform::from_xyz(1.5, -1.0, 4.0).looking_at(Vec3::new(0.4, 0.0, 1.0), Vec3::Z),
        CascadeShadowConfigBuilder {
            maximum_distance: 8.0,
            first_cascade_far_bound: 2.5,
            ..default()
        }
        .build(),
    ));
    // A floor gives the table something to cast its shadow on, which makes height readable.
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::new(Vec3::Z, Vec2::splat(6.0)))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(0.42, 0.44, 0.47),
            perceptual_roughness: 0.95,
            ..default()
        })),
        Transform::default(),
    ));
}

/// Gives each scene body not drawn yet (at start, and after every reset) its visual geoms as
/// child meshes: a primitive as one mesh, a mesh file as one mesh per part, each part in its own
/// colour (the geom's rgba times the part's, where the file gives one).
fn draw_scene_bodies(
    mut commands: Commands,
    sim: Res<Sim>,
    bodies: Query<(Entity, &SimBody), Without<Drawn>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut cache: ResMut<MeshCache>,
) {
    if bodies.is_empty() {
        return;
    }
    let world = &sim.0;
    cache.prune();
    for (entity, &SimBody(role)) in &bodies {
        let geoms: Vec<Geom> = match role {
            BodyRole::Table => {
                let half = Vec3::new(
                    world.table_size[0] / 2.0,
                    world.table_size[1] / 2.0,
                    world.table_top_z / 2.0,
                );
                vec![plain_geom(
                    Shape::Box { half_extents: half },
                    [TABLE_RGB[0], TABLE_RGB[1], TABLE_RGB[2], 1.0],
                )]
            }
            BodyRole::Object(i) => {
                let o = &world.objects[i];
                vec![plain_geom(o.shape, o.rgba)]
            }
            BodyRole::Link(i) => {
                let link = &world.robot.links[i];
                if link.visuals.is_empty() {
                    link.collisions.clone()
                } else {
                    link.visuals.clone()
                }
            }
        };
        let mut body = commands.entity(entity);
        body.insert((Drawn, Visibility::default()));
        for geom in geoms {
            let parts: Vec<(Handle<Mesh>, [f32; 4], Quat)> = match geom.shape {
                Shape::Mesh { mesh, scale, .. } if mesh < world.robot.meshes.len() => cache
                    .parts(&world.robot.meshes[mesh], scale, &mut meshes)
                    .into_iter()
                    .map(|(handle, color)| (handle, part_rgba(geom.rgba, color), Quat::IDENTITY))
                    .collect(),
                shape => {
                    if let Shape::Mesh { mesh, .. } = shape {
                        warn!("geom {:?}: no mesh {mesh}; drawn as its box", geom.name);
                    }
                    let (m, turn) = mesh_for(&shape);
                    vec![(meshes.add(m), geom.rgba, turn)]
                }
            };
            for (mesh, [r, g, b, a], turn) in parts {
                body.with_child((
                    Mesh3d(mesh),
                    MeshMaterial3d(materials.add(StandardMaterial {
                        base_color: Color::srgba(r, g, b, a),
                        perceptual_roughness: 0.6,
                        alpha_mode: if a < 1.0 {
                            AlphaMode::Blend
                        } else {
                            AlphaMode::Opaque
                        },
                        ..default()
                    })),
                    Transform::from_translation(geom.pose.translation)
                        .with_rotation(geom.pose.rotation * turn),
                ));
            }
        }
    }
}

/// A mesh part's colour: the geom's rgba times the part's own colour where the file gives one.
fn part_rgba(geom: [f32; 4], part: Option<[f32; 4]>) -> [f32; 4] {
    match part {
        Some(c) => std::array::from_fn(|i| geom[i] * c[i]),
        None => geom,
    }
}

/// The Bevy meshes of the robot's mesh files, one per part and scale, built the first time a
/// geom uses them and kept across resets (which spawn the bodies again, not their meshes), so a
/// file that several geoms or links use is uploaded once.
#[derive(Resource, Default)]
pub(crate) struct MeshCache {
    /// Keyed by the asset's address. Each entry holds the asset, so no other asset can take its
    /// address while it is cached; one that only the cache still holds (the scene that used it
    /// is gone) is dropped by [`MeshCache::prune`].
    entries: HashMap<usize, CachedMesh>,
}

/// One part's mesh (none for a part without triangles) and its own colour.
type CachedPart = (Option<Handle<Mesh>>, Option<[f32; 4]>);

struct CachedMesh {
    asset: Arc<MeshAsset>,
    /// Its parts at each scale used, by the scale's bits.
    scales: HashMap<[u32; 3], Vec<CachedPart>>,
}

impl MeshCache {
    /// The meshes of `asset`'s parts at `scale`, with each part's colour, built on first use.
    fn parts(
        &mut self,
        asset: &Arc<MeshAsset>,
        scale: Vec3,
        meshes: &mut Assets<Mesh>,
    ) -> Vec<(Handle<Mesh>, Option<[f32; 4]>)> {
        let entry = self
            .entries
            .entry(Arc::as_ptr(asset) as usize)
            .or_insert_with(|| CachedMesh {
                asset: asset.clone(),
                scales: HashMap::new(),
            });
        let parts = entry
            .scales
            .entry(scale.to_array().map(f32::to_bits))
            .or_insert_with(|| {
                asset
                    .parts
                    .iter()
                    .map(|part| (part_mesh(part, scale).map(|m| meshes.add(m)), part.color))
                    .collect()
            });
        parts
            .iter()
            .filter_map(|(mesh, color)| mesh.clone().map(|m| (m, *color)))
            .collect()
    }

    /// Forgets the meshes of files no scene uses any more.
    fn prune(&mut self) {
        self.entries.retain(|_, e| Arc::strong_count(&e.asset) > 1);
    }
}

/// A Bevy mesh of one part of a mesh file: its triangles (any that index past its vertices left
/// out), its vertices scaled by `scale`, and smooth normals (the lite profile's flat material
/// shades by them too). The normals are weighted by area: Bevy's angle-weighted
/// `compute_smooth_normals` skips corners whose edges' squared lengths multiply to less than
/// `f32::EPSILON`, which leaves every vertex of a finely meshed part in metres (edges of a few
/// millimetres) without a normal. A scale that mirrors (negative determinant) turns the triangles inside
/// out, so their order is flipped to keep them facing out. `None` for a part without triangles.
fn part_mesh(part: &MeshPart, scale: Vec3) -> Option<Mesh> {
    let n = part.positions.len() as u32;
    let mirrored = scale.x * scale.y * scale.z < 0.0;
    let indices: Vec<u32> = part
        .triangles
        .iter()
        .filter(|t| t.iter().all(|&i| i < n))
        .flat_map(|&[a, b, c]| if mirrored { [a, c, b] } else { [a, b, c] })
        .collect();
    if indices.is_empty() {
        return None;
    }
    let positions: Vec<[f32; 3]> = part
        .positions
        .iter()
        .map(|&p| (Vec3::from(p) * scale).to_array())
        .collect();
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_indices(Indices::U32(indices));
    mesh.compute_area_weighted_normals();
    Some(mesh)
}

/// A body the user spawned: its collider, its own material if any, its name if any.
type UserBody = (
    Entity,
    &'static Collider,
    Option<&'static MeshMaterial3d<StandardMaterial>>,
    Option<&'static Name>,
);

/// A collider that is not one of the scene's bodies, has no mesh and is not drawn yet.
type UserBodyNotDrawn = (Without<SimBody>, Without<Mesh3d>, Without<Drawn>);

/// Gives each body the user spawned (a `Collider`, no mesh, not one of the scene's) a mesh of
/// its collider's shape, in its own `MeshMaterial3d<StandardMaterial>` if it has one, else a
/// neutral grey.
fn draw_user_bodies(
    mut commands: Commands,
    bodies: Query<UserBody, UserBodyNotDrawn>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    mut neutral: Local<Option<Handle<StandardMaterial>>>,
) {
    for (entity, collider, own, name) in &bodies {
        let material = match own {
            Some(m) => m.0.clone(),
            None => neutral
                .get_or_insert_with(|| {
                    let [r, g, b] = USER_BODY_RGB;
                    materials.add(StandardMaterial {
                        base_color: Color::srgb(r, g, b),
                        perceptual_roughness: 0.6,
                        ..default()
                    })
                })
                .clone(),
        };
        let (parts, exact) = collider_meshes(collider);
        if !exact {
            info!(
                "body {}: no mesh for some of its collider's shapes ({:?}); drawn as their bounding boxes",
                name.map_or_else(|| entity.to_string(), |n| n.to_string()),
                collider.raw.shape_type()
            );
        }
        let mut body = commands.entity(entity);
        body.insert((Drawn, DrawnFromCollider, Visibility::default()));
        for (mesh, at) in parts {
            body.with_child((
                Mesh3d(meshes.add(mesh)),
                MeshMaterial3d(material.clone()),
                at,
                ColliderMesh,
            ));
        }
    }
}

/// A body drawn from its collider whose collider has changed since.
type ChangedUserCollider = (With<DrawnFromCollider>, Changed<Collider>);

/// A user's body whose collider changed (another shape, a compound, a new scale) loses the
/// meshes drawn from the old one and is drawn again.
fn redraw_changed_colliders(
    mut commands: Commands,
    changed: Query<(Entity, &Children), ChangedUserCollider>,
    meshes: Query<(), With<ColliderMesh>>,
) {
    for (entity, children) in &changed {
        for &child in children {
            if meshes.contains(child) {
                commands.entity(child).despawn();
            }
        }
        commands
            .entity(entity)
            .remove::<(Drawn, DrawnFromCollider)>();
    }
}

/// Meshes (with their poses in the body) for a collider's unscaled shape (the body's
/// `Transform` scale reaches the meshes through propagation, as it reaches the collider through
/// bevy_rapier): balls, cuboids, capsules, cylinders, cones and compounds of them. Any other
/// shape is drawn as its bounding box; `false` then says so.
pub fn collider_meshes(collider: &Collider) -> (Vec<(Mesh, Transform)>, bool) {
    let mut out = Vec::new();
    let exact = if matches!(collider.raw.as_typed_shape(), TypedShape::Custom(_)) {
        // bevy_rapier's shape views do not cover custom shapes.
        let aabb = collider.raw.compute_local_aabb();
        out.push(bounding_box(aabb.mins, aabb.maxs, Transform::IDENTITY));
        false
    } else {
        view_meshes(
            collider.as_unscaled_typed_shape(),
            Transform::IDENTITY,
            &mut out,
        )
    };
    (out, exact)
}

fn view_meshes(view: ColliderView, at: Transform, out: &mut Vec<(Mesh, Transform)>) -> bool {
    match view {
        ColliderView::Ball(b) => out.push((Sphere::new(b.radius()).into(), at)),
        ColliderView::Cuboid(c) => out.push((Cuboid::from_size(c.half_extents() * 2.0).into(), at)),
        ColliderView::Capsule(c) => {
            // Bevy's capsule runs along Y; the collider's from segment end a to b.
            let (centre, turn) = c.canonical_transform();
            let local = Transform::from_translation(centre).with_rotation(turn);
            out.push((Capsule3d::new(c.radius(), c.height()).into(), at * local));
        }
        ColliderView::Cylinder(c) => {
            out.push((Cylinder::new(c.radius(), c.half_height() * 2.0).into(), at))
        }
        ColliderView::Cone(c) => {
            out.push((Cone::new(c.radius(), c.half_height() * 2.0).into(), at))
        }
        ColliderView::Compound(c) => {
            let mut exact = true;
            for (pose, shape) in c.raw.shapes() {
                let local =
                    Transform::from_translation(pose.translation).with_rotation(pose.rotation);
                if matches!(shape.as_typed_shape(), TypedShape::Custom(_)) {
                    let aabb = shape.compute_local_aabb();
                    out.push(bounding_box(aabb.mins, aabb.maxs, at * local));
                    exact = false;
                } else {
                    exact &= view_meshes(shape.as_typed_shape().into(), at * local, out);
                }
            }
            return exact;
        }
        other => {
            let aabb = other.to_shared_shape().compute_local_aabb();
            out.push(bounding_box(aabb.mins, aabb.maxs, at));
            return false;
        }
    }
    true
}

/// A box over `mins..maxs`, or a 5 cm cube where that is not finite (a half-space).
fn bounding_box(mins: Vec3, maxs: Vec3, at: Transform) -> (Mesh, Transform) {
    let size = maxs - mins;
    if size.is_finite() && size.max_element() < 1e3 {
        let centre = Transform::from_translation((mins + maxs) / 2.0);
        (
            Cuboid::from_size(size.max(Vec3::splat(1e-3))).into(),
            at * centre,
        )
    } else {
        (Cuboid::from_length(0.05).into(), at)
    }
}

fn plain_geom(shape: Shape, rgba: [f32; 4]) -> Geom {
    Geom {
        name: None,
        shape,
        pose: crate::robot::Pose::IDENTITY,
        rgba,
        friction: None,
        density: None,
        contype: 0,
        conaffinity: 0,
    }
}

/// A mesh for a primitive model shape and the rotation that aligns it: Bevy's capsules and
/// cylinders run along Y, the model's along Z. A mesh file's geom (drawn by [`MeshCache`]) gets
/// its bounding box here.
fn mesh_for(shape: &Shape) -> (Mesh, Quat) {
    let to_z = Quat::from_rotation_x(FRAC_PI_2);
    match *shape {
        Shape::Box { half_extents } | Shape::Mesh { half_extents, .. } => {
            (Cuboid::from_size(half_extents * 2.0).into(), Quat::IDENTITY)
        }
        Shape::Sphere { radius } => (Sphere::new(radius).into(), Quat::IDENTITY),
        Shape::Capsule {
            radius,
            half_length,
        } => (Capsule3d::new(radius, half_length * 2.0).into(), to_z),
        Shape::Cylinder {
            radius,
            half_length,
        } => (Cylinder::new(radius, half_length * 2.0).into(), to_z),
    }
}

#[cfg(test)]
mod tests {
    use bevy::mesh::VertexAttributeValues;

    use super::*;

    /// How many meshes the window gave `body`.
    fn meshes_of(app: &mut App, body: Entity) -> usize {
        let children: Vec<Entity> = app
            .world()
            .get::<Children>(body)
            .map(|c| c.to_vec())
            .unwrap_or_default();
        children
            .into_iter()
            .filter(|&c| app.world().get::<Mesh3d>(c).is_some())
            .count()
    }

    #[test]
    fn a_users_body_is_drawn_again_when_its_collider_changes() {
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, AssetPlugin::default()))
            .init_asset::<Mesh>()
            .init_asset::<StandardMaterial>()
            .add_systems(Update, (redraw_changed_colliders, draw_user_bodies).chain());
        let body = app
            .world_mut()
            .spawn((Collider::cuboid(0.03, 0.03, 0.03), Transform::default()))
            .id();
        // Drawn by the user: left alone whatever its collider does.
        let own = app
            .world_mut()
            .spawn((Collider::ball(0.05), Transform::default(), Drawn))
            .id();
        app.update();
        assert_eq!(meshes_of(&mut app, body), 1);
        app.update();
        assert_eq!(meshes_of(&mut app, body), 1, "drawn once, not every frame");
        let two = Collider::compound(vec![
            (Vec3::ZERO, Quat::IDENTITY, Collider::ball(0.02)),
            (
                Vec3::X * 0.1,
                Quat::IDENTITY,
                Collider::cuboid(0.02, 0.02, 0.02),
            ),
        ]);
        app.world_mut().entity_mut(body).insert(two.clone());
        app.world_mut().entity_mut(own).insert(two);
        app.update();
        assert_eq!(
            meshes_of(&mut app, body),
            2,
            "the old mesh went, the new shape's came"
        );
        assert_eq!(meshes_of(&mut app, own), 0);
    }

    /// The bounding box of a mesh's vertices, placed by `at`.
    fn extent(mesh: &Mesh, at: Transform) -> (Vec3, Vec3) {
        let Some(VertexAttributeValues::Float32x3(points)) =
            mesh.attribute(Mesh::ATTRIBUTE_POSITION)
        else {
            panic!("positions");
        };
        points
            .iter()
            .map(|&p| at.transform_point(Vec3::from(p)))
            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p), hi.max(p))
            })
    }

    fn one(collider: Collider) -> (Vec3, Vec3) {
        let (parts, exact) = collider_meshes(&collider);
        assert!(exact);
        assert_eq!(parts.len(), 1);
        extent(&parts[0].0, parts[0].1)
    }

    fn near(a: Vec3, b: Vec3) -> bool {
        (a - b).abs().max_element() < 1e-3
    }

    #[test]
    fn meshes_cover_the_collider_shapes() {
        let (lo, hi) = one(Collider::cuboid(0.1, 0.2, 0.3));
        assert!(near(lo, -Vec3::new(0.1, 0.2, 0.3)) && near(hi, Vec3::new(0.1, 0.2, 0.3)));
        // A sphere's mesh: vertices on the sphere, not every one at an axis's end.
        let (lo, hi) = one(Collider::ball(0.25));
        assert!((lo + Vec3::splat(0.25)).abs().max_element() < 0.02, "{lo}");
        assert!((hi - Vec3::splat(0.25)).abs().max_element() < 0.02, "{hi}");
        // Along Z: half length 0.3 plus the caps' radius 0.1.
        let (lo, hi) = one(Collider::capsule_z(0.3, 0.1));
        assert!(near(lo, Vec3::new(-0.1, -0.1, -0.4)), "{lo}");
        assert!(near(hi, Vec3::new(0.1, 0.1, 0.4)), "{hi}");
        // An off-centre capsule along X.
        let (lo, hi) = one(Collider::capsule(
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(2.0, 0.0, 0.0),
            0.1,
        ));
        assert!(near(lo, Vec3::new(0.9, -0.1, -0.1)) && near(hi, Vec3::new(2.1, 0.1, 0.1)));
        let (lo, hi) = one(Collider::cylinder(0.5, 0.2));
        assert!(near(lo, Vec3::new(-0.2, -0.5, -0.2)) && near(hi, Vec3::new(0.2, 0.5, 0.2)));
    }

    #[test]
    fn compounds_are_their_parts_and_other_shapes_their_bounding_box() {
        let (parts, exact) = collider_meshes(&Collider::compound(vec![
            (Vec3::X, Quat::IDENTITY, Collider::ball(0.1)),
            (-Vec3::X, Quat::IDENTITY, Collider::cuboid(0.1, 0.1, 0.1)),
        ]));
        assert!(exact);
        let centres: Vec<Vec3> = parts
            .iter()
            .map(|(m, at)| {
                let (lo, hi) = extent(m, *at);
                (lo + hi) / 2.0
            })
            .collect();
        assert!(near(centres[0], Vec3::X) && near(centres[1], -Vec3::X));

        let triangle = Collider::triangle(Vec3::ZERO, Vec3::X, Vec3::Y);
        let (parts, exact) = collider_meshes(&triangle);
        assert!(!exact);
        let (lo, hi) = extent(&parts[0].0, parts[0].1);
        assert!(near(lo.with_z(0.0), Vec3::ZERO) && near(hi.with_z(0.0), Vec3::new(1.0, 1.0, 0.0)));
        // A half-space has no finite box: a small one stands for it.
        let (parts, exact) = collider_meshes(&Collider::halfspace(Vec3::Z).unwrap());
        assert!(!exact && parts.len() == 1);
    }

    /// A tetrahedron about the origin, its triangles wound to face out.
    fn tetrahedron(color: Option<[f32; 4]>) -> MeshPart {
        MeshPart {
            name: String::new(),
            positions: vec![
                [1.0, 1.0, 1.0],
                [1.0, -1.0, -1.0],
                [-1.0, 1.0, -1.0],
                [-1.0, -1.0, 1.0],
            ],
            triangles: vec![[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]],
            color,
            hull: None,
        }
    }

    #[test]
    fn mesh_parts_are_scaled_with_normals_facing_out_even_when_mirrored() {
        for scale in [
            Vec3::ONE,
            Vec3::splat(0.001),
            Vec3::new(-1.0, 2.0, 1.0),
            Vec3::new(-1.0, -1.0, -1.0),
            Vec3::new(-1.0, -1.0, 3.0),
        ] {
            let mesh = part_mesh(&tetrahedron(None), scale).expect("a mesh");
            let (lo, hi) = extent(&mesh, Transform::IDENTITY);
            assert!(near(hi - lo, 2.0 * scale.abs()), "{scale}: {lo} {hi}");
            let Some(VertexAttributeValues::Float32x3(points)) =
                mesh.attribute(Mesh::ATTRIBUTE_POSITION)
            else {
                panic!("positions");
            };
            let Some(VertexAttributeValues::Float32x3(normals)) =
                mesh.attribute(Mesh::ATTRIBUTE_NORMAL)
            else {
                panic!("normals");
            };
            for (p, n) in points.iter().zip(normals) {
                assert!(
                    Vec3::from(*p).dot(Vec3::from(*n)) > 0.0,
                    "{scale}: the normal at {p:?} faces in: {n:?}"
                );
            }
        }
        // Triangles past the vertices are left out; nothing left, no mesh.
        let mut part = tetrahedron(None);
        part.triangles = vec![[0, 1, 9]];
        assert!(part_mesh(&part, Vec3::ONE).is_none());
    }

    #[test]
    fn a_part_is_drawn_in_the_geoms_colour_times_its_own() {
        let white = [1.0, 1.0, 1.0, 1.0];
        assert_eq!(part_rgba(white, None), white);
        assert_eq!(
            part_rgba([0.5, 1.0, 1.0, 0.5], Some([0.2, 0.4, 1.0, 1.0])),
            [0.1, 0.4, 1.0, 0.5]
        );
    }

    #[test]
    fn a_mesh_file_is_built_once_per_scale_and_forgotten_with_its_scene() {
        let mut meshes = Assets::<Mesh>::default();
        let mut cache = MeshCache::default();
        let asset = Arc::new(MeshAsset {
            path: "tetra.obj".into(),
            parts: vec![
                tetrahedron(Some([0.0, 0.0, 0.0, 1.0])),
                MeshPart {
                    triangles: vec![],
                    ..tetrahedron(None)
                },
                tetrahedron(None),
            ],
        });
        let first = cache.parts(&asset, Vec3::ONE, &mut meshes);
        assert_eq!(first.len(), 2, "the empty part has no mesh");
        assert_eq!(first[0].1, Some([0.0, 0.0, 0.0, 1.0]));
        assert_eq!(first[1].1, None);
        // Another geom (or the same after a reset) with the same file and scale: the same meshes.
        let again = cache.parts(&asset.clone(), Vec3::ONE, &mut meshes);
        assert_eq!(
            first.iter().map(|p| p.0.id()).collect::<Vec<_>>(),
            again.iter().map(|p| p.0.id()).collect::<Vec<_>>()
        );
        assert_eq!(meshes.len(), 2);
        // Another scale is another mesh.
        let mirrored = cache.parts(&asset, Vec3::new(-1.0, 1.0, 1.0), &mut meshes);
        assert_ne!(mirrored[0].0.id(), first[0].0.id());
        assert_eq!(meshes.len(), 4);
        cache.prune();
        assert_eq!(cache.entries.len(), 1, "the scene still holds the file");
        drop(asset);
        cache.prune();
        assert!(cache.entries.is_empty(), "the scene is gone");
    }
}
