//! Extending the scene the Bevy way: a box spawned with bevy_rapier3d's `RigidBody` and
//! `Collider` while the simulation runs is simulated with the arm, the table and the cubes, and
//! the window draws it.
//!
//! Run: `cargo run --release --example add_a_body`. It drops a 6 cm box onto `cube_red`,
//! steps one simulated second headless and prints where the box came to rest.
//!
//! `cargo run --release --example add_a_body -- --window` opens armsim's window instead and
//! drops a magenta box onto `cube_red` there: the window gives the box a mesh of its collider's
//! shape (in the box's own material, as here, or a neutral grey without one), and the box stays
//! through resets (Backspace). `--screenshot PATH` saves a screenshot once the scene is drawn
//! (the GUI test uses it).

use std::path::PathBuf;
use std::sync::Arc;

use armsim::scene::load_bundled_scene;
use armsim::sim::{ClockMode, SceneObject, run_steps};
use armsim::ui::UiOptions;
use armsim::ui::render::RenderProfile;
use armsim::{SimOptions, headless_app, window_app};
use bevy::prelude::*;
use bevy_rapier3d::prelude::{Collider, RigidBody};

/// The box's colour in the window: nothing else in the scene is magenta.
const BOX_RGB: [f32; 3] = [1.0, 0.0, 1.0];

fn main() {
    let mut window = false;
    let mut screenshot = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--window" => window = true,
            "--screenshot" => screenshot = args.next().map(PathBuf::from),
            other => {
                eprintln!("add_a_body: unknown argument {other:?} (--window, --screenshot PATH)");
                std::process::exit(2);
            }
        }
    }
    let scene = Arc::new(
        load_bundled_scene("default_scene")
            .expect("the default scene is built in")
            .expect("the default scene loads"),
    );
    if window {
        let mut app = window_app(
            scene,
            &SimOptions::default(),
            UiOptions {
                screenshot,
                frame_log_secs: None,
            },
            RenderProfile::default(),
        );
        let material = app
            .world_mut()
            .resource_mut::<Assets<StandardMaterial>>()
            .add(Color::srgb(BOX_RGB[0], BOX_RGB[1], BOX_RGB[2]));
        let red = cube_red(&mut app);
        app.world_mut().spawn((
            Name::new("magenta box"),
            RigidBody::Dynamic,
            Collider::cuboid(0.03, 0.03, 0.03),
            Transform::from_translation(red + Vec3::new(0.0, 0.0, 0.15)),
            // Optional: without a material of its own the box is drawn grey.
            MeshMaterial3d(material),
        ));
        app.run();
        return;
    }
    let mut app = headless_app(
        scene,
        &SimOptions {
            clock: ClockMode::Manual,
        },
    );
    app.finish();
    app.cleanup();
    app.update();
    let red = cube_red(&mut app);
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

/// cube_red's position: the cubes are entities, found through their `SceneObject` marker.
fn cube_red(app: &mut App) -> Vec3 {
    app.world_mut()
        .query::<(&SceneObject, &Transform)>()
        .iter(app.world())
        .find(|(o, _)| o.name == "cube_red")
        .map(|(_, t)| t.translation)
        .expect("the scene has cube_red")
}
