//! Shared set-up for the integration tests: load a shipped scene and build a headless app whose
//! clock steps only when the test says so.

#![allow(dead_code)]

pub mod child;
pub mod netns;
pub mod scene_view;
pub mod sexp;
pub mod teleop;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use armsim::SimOptions;
use armsim::headless::finish_setup;
use armsim::scene::{Scene, load_scene};
use armsim::session::{Session, SessionCommand, SessionRequest, SessionState};
use armsim::sim::{ClockMode, JointTargets};
use bevy::prelude::*;

pub fn asset(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub fn default_scene() -> Arc<Scene> {
    Arc::new(load_scene(&asset("assets/scenes/default_scene.json")).expect("default scene loads"))
}

pub fn gripper4_scene() -> Arc<Scene> {
    Arc::new(load_scene(&asset("assets/scenes/gripper4.json")).expect("gripper4 scene loads"))
}

/// A headless app on `scene` with `clock`, not set up yet: servers are added before
/// `finish_setup`.
pub fn headless(scene: Arc<Scene>, clock: ClockMode) -> App {
    armsim::headless_app(scene, &SimOptions { clock })
}

/// A headless app on `scene` in manual clock mode, set up and ready to step.
pub fn app_for(scene: Arc<Scene>) -> App {
    let mut app = headless(scene, ClockMode::Manual);
    finish_setup(&mut app);
    app.update();
    app
}

/// Runs frames until the client thread is done (or 60 s pass, or the app asks to exit), pausing
/// `pause` between frames, and returns the client's result (re-raising its panic).
pub fn drive<T>(
    app: &mut App,
    client: std::thread::JoinHandle<T>,
    pause: std::time::Duration,
) -> T {
    drive_with(app, client, pause, |_| {})
}

/// [`drive`], calling `after_frame` on the app after each frame: for a test that watches the app
/// (counts its frames, or tells the client once the app has taken its messages).
pub fn drive_with<T>(
    app: &mut App,
    client: std::thread::JoinHandle<T>,
    pause: std::time::Duration,
    mut after_frame: impl FnMut(&mut App),
) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !client.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "client did not finish in time"
        );
        if app.should_exit().is_none() {
            app.update();
        }
        after_frame(app);
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    match client.join() {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e),
    }
}

/// Sends a session command and lets the app process it.
pub fn command(app: &mut App, cmd: SessionCommand) {
    app.world_mut().write_message(SessionRequest(cmd));
    app.update();
}

pub fn state(app: &App) -> SessionState {
    app.world().resource::<Session>().state()
}

pub fn sim(app: &App) -> armsim::sim::SimView<'_> {
    armsim::sim::sim_view(app.world())
}

/// Runs `f` on the world, to write it (a teleport, a state).
pub fn sim_mut<R>(app: &mut App, f: impl FnOnce(&mut armsim::sim::SimViewMut<'_>) -> R) -> R {
    armsim::sim::with_sim_mut(app.world_mut(), f)
}

pub fn targets(app: &mut App) -> Mut<'_, JointTargets> {
    app.world_mut().resource_mut::<JointTargets>()
}

pub fn joint(app: &App, name: &str) -> usize {
    sim(app)
        .robot
        .joint_index(name)
        .unwrap_or_else(|| panic!("robot has no joint {name}"))
}

/// A LeRobot dataset's `meta/info.json`.
pub fn lerobot_info(root: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(root.join("meta/info.json"))
        .unwrap_or_else(|e| panic!("{}/meta/info.json: {e}", root.display()));
    serde_json::from_str(&text).expect("info.json is JSON")
}
