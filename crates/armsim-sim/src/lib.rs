//! armsim's simulation as a Bevy ECS app with no render, window or GUI crate in it: the table,
//! the scene's objects and the robot's links are entities stepped by bevy_rapier3d's plugin at a
//! fixed 240 Hz inside the `SimStep` schedule, with the clock, the session, the referee and the
//! recorder around it. The window (the `armsim` app) and the Python package both build their
//! worlds with [`add_simulation`], so every caller runs the same step path.

pub mod embed;
pub mod referee;
pub mod session;
pub mod sim;
pub mod state;
pub mod trajectory;

/// The Bevy-free core, re-exported whole where this crate adds nothing to a module.
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

/// The simulation with no window and no renderer: what tests, benchmarks, `--headless` and the
/// Python package run. No log plugin is added here so that tests can build many apps; `main`
/// adds one.
pub fn headless_app(scene: Arc<Scene>, options: &SimOptions) -> App {
    let mut app = App::new();
    // No TimePlugin or TransformPlugin: the sim keeps its own clock, and their systems ran every
    // frame, 240 times a second in real time; TransformPlugin's scoped a parallel iteration on the
    // compute pool each frame, waking its threads (a third of an idle real-time run's CPU). The
    // physics plugin propagates the transforms of its own entities inside the step. The window
    // adds them with its plugins. FrameCount stays: tests and logs count frames.
    app.add_plugins((TaskPoolPlugin::default(), FrameCountPlugin));
    add_simulation(&mut app, scene, options);
    app
}

/// Adds the simulation (physics entities, clock, session, referee, recorder) to `app`.
pub fn add_simulation(app: &mut App, scene: Arc<Scene>, options: &SimOptions) {
    app.add_plugins(sim::plugin_for(scene.clone()));
    // The session builds on the sim (one direction: the sim never imports it).
    session::plugin(app);
    referee::plugin::plugin(app, &scene);
    trajectory::plugin::plugin(app);
    app.world_mut().resource_mut::<SimClock>().mode = options.clock;
}
