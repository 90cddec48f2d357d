//! Meshes for the table, the objects and the robot's visual geoms, lights with shadows, and the
//! per-frame copy of physics poses onto them.

use std::f32::consts::FRAC_PI_2;

use crate::rapier::prelude::RigidBodyHandle;
use bevy::light::CascadeShadowConfigBuilder;
use bevy::prelude::*;

use crate::robot::{Geom, Shape};
use crate::sim::{BodyRole, ClockSystems, Sim};

/// Links an entity to the rigid body whose pose it shows. Reset rebuilds the world in the same
/// order, so the handles stay valid across resets.
#[derive(Component, Clone, Copy, Debug)]
pub struct BodyVisual(pub RigidBodyHandle);

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_scene)
        .add_systems(Update, sync_poses.after(ClockSystems));
}

/// The table's wood-like colour; the GUI test looks for it in screenshots.
pub const TABLE_RGB: [f32; 3] = [0.55, 0.38, 0.22];

fn spawn_scene(
    mut commands: Commands,
    sim: Res<Sim>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    let world = &sim.0;
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

    for (role, handle) in world.bodies() {
        let pose = world.body_pose(handle);
        let parent = commands
            .spawn((
                BodyVisual(handle),
                Transform::from_translation(pose.translation).with_rotation(pose.rotation),
                Visibility::default(),
            ))
            .id();
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
        for geom in geoms {
            let (mesh, turn) = mesh_for(&geom.shape);
            let [r, g, b, a] = geom.rgba;
            let material = materials.add(StandardMaterial {
                base_color: Color::srgba(r, g, b, a),
                perceptual_roughness: 0.6,
                alpha_mode: if a < 1.0 {
                    AlphaMode::Blend
                } else {
                    AlphaMode::Opaque
                },
                ..default()
            });
            let child = commands
                .spawn((
                    Mesh3d(meshes.add(mesh)),
                    MeshMaterial3d(material),
                    Transform::from_translation(geom.pose.translation)
                        .with_rotation(geom.pose.rotation * turn),
                ))
                .id();
            commands.entity(parent).add_child(child);
        }
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
    }
}

/// A mesh for a model shape and the rotation that aligns it: Bevy's capsules and cylinders run
/// along Y, the model's along Z.
fn mesh_for(shape: &Shape) -> (Mesh, Quat) {
    let to_z = Quat::from_rotation_x(FRAC_PI_2);
    match *shape {
        Shape::Box { half_extents } => {
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

fn sync_poses(sim: Res<Sim>, mut bodies: Query<(&BodyVisual, &mut Transform)>) {
    for (visual, mut transform) in &mut bodies {
        if let Some(rb) = sim.0.physics.bodies.get(visual.0) {
            let p = rb.position();
            transform.translation = p.translation;
            transform.rotation = p.rotation;
        }
    }
}
