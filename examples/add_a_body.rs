//! Extending the scene the Bevy way: a box spawned with bevy_rapier3d's `RigidBody` and
//! `Collider` while the simulation runs is simulated with the arm, the table and the cubes.
//!
//! Run: `cargo run --release --example add_a_body`. It drops a 6 cm box onto `cube_red`,
//! steps one simulated second headless and prints where the box came to rest.

use std::sync::Arc;

use armsim::scene::load_bundled_scene;
use armsim::sim::{ClockMode, SceneObject, run_steps};
use armsim::{SimOptions, headless_app};
use bevy::prelude::*;
use bevy_rapier3d::prelude::{Collider, RigidBody};

fn main() {
    let scene = load_bundled_scene("default_scene")
        .expect("the default scene is built in")
        .expect("the default scene loads");
    let mut app = headless_app(
        Arc::new(scene),
        &SimOptions {
            clock: ClockMode::Manual,
        },
    );
    app.finish();
    app.cleanup();
    app.update();
    // The cubes are entities: find cube_red's pose through its `SceneObject` marker.
    let red = app
        .world_mut()
        .query::<(&SceneObject, &Transform)>()
        .iter(app.world())
        .find(|(o, _)| o.name == "cube_red")
        .map(|(_, t)| t.translation)
        .expect("the scene has cube_red");
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(0.03, 0.03, 0.03),
            Transform::from_translation(red + Vec3::new(0.0, 0.0, 0.15)),
        ))
        .id();
    run_steps(&mut app, 240);
    let rest = app
        .world()
        .get::<Transform>(body)
        .expect("the box")
        .translation;
    println!(
        "cube_red's top is at z = {:.3} m; the box came to rest with its centre at z = {:.3} m",
        red.z + 0.025,
        rest.z
    );
}
