//! armsim: a robot arm on a table with cubes, simulated by Rapier at a fixed 240 Hz inside a
//! Bevy app, shown in a window or run headless. The window and headless apps are built here from
//! the same simulation plugins, so both run exactly the same step path.

pub mod app;
pub mod headless;
pub mod lerobot;
pub mod logging;
pub mod offscreen;
pub mod protocol;
pub mod ui;

/// The simulation crate (no render, window or GUI dependency), re-exported whole: its modules
/// keep their paths in the app (`armsim::sim`, `armsim::session`, ...).
pub use armsim_sim::{
    SimOptions, add_simulation, headless_app, rapier, referee, robot, scene, session, sim, state,
    trajectory,
};

use std::sync::Arc;

use bevy::prelude::*;

use crate::scene::Scene;

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
