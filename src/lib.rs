//! armsim: a robot arm on a table with cubes, simulated by Rapier at a fixed 240 Hz inside a
//! Bevy app, shown in a window or run headless. The window and headless apps are built here from
//! the same simulation plugins, so both run exactly the same step path.

pub mod headless;
pub mod logging;
pub mod protocol;
pub mod referee;
pub mod session;
pub mod sim;
pub mod state;
pub mod trajectory;
pub mod ui;

/// The Bevy-free core, re-exported whole where the app adds nothing to a module.
pub use armsim_core::{rapier, robot, scene};

use std::sync::Arc;

use bevy::app::TaskPoolPlugin;
use bevy::diagnostic::FrameCountPlugin;
use bevy::prelude::*;

use crate::scene::Scene;
use crate::sim::{ClockMode, SimClock};

/// Settings shared by the window and headless apps.
#[derive(Clone, Debug)]
pub struct SimOptions {
    pub clock: ClockMode,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            clock: ClockMode::RealTime { speed: 1.0 },
        }
    }
}

/// The simulation with no window and no renderer: what tests, benchmarks and `--headless` run.
/// No log plugin is added here so that tests can build many apps; `main` adds one.
pub fn headless_app(scene: Arc<Scene>, options: &SimOptions) -> App {
    let mut app = App::new();
    // No TimePlugin or TransformPlugin: nothing headless reads Bevy's Time or has a Transform
    // (the sim keeps its own clock), and their systems ran every frame, 240 times a second in
    // real time; TransformPlugin's scoped a parallel iteration on the compute pool each frame,
    // waking its threads (a third of an idle real-time run's CPU, issue 15). The window adds them
    // with its plugins. FrameCount stays: tests and logs count frames with it.
    app.add_plugins((TaskPoolPlugin::default(), FrameCountPlugin));
    add_simulation(&mut app, scene, options);
    app
}

/// The simulation in a window with the 3D view and the control panel.
pub fn window_app(
    scene: Arc<Scene>,
    options: &SimOptions,
    ui_options: ui::UiOptions,
    render: ui::render::RenderProfile,
) -> App {
    let _ = ui::STARTED.set(std::time::Instant::now());
    let mut app = App::new();
    let pipelined = ui::render::pipelined_rendering(render.choice);
    ui::add_window_plugins(&mut app, &scene, pipelined);
    add_simulation(&mut app, scene, options);
    ui::plugin(&mut app);
    app.insert_resource(ui_options);
    app.insert_resource(render);
    app
}

fn add_simulation(app: &mut App, scene: Arc<Scene>, options: &SimOptions) {
    app.add_plugins(sim::plugin_for(scene.clone()));
    // The session builds on the sim (one direction: the sim never imports it).
    session::plugin(app);
    referee::plugin::plugin(app, &scene);
    trajectory::plugin::plugin(app);
    app.world_mut().resource_mut::<SimClock>().mode = options.clock;
}
