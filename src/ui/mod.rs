//! The window: 3D view of the scene following physics, the orbit camera, the control panel and
//! MuJoCo-style keys. Everything here only reads the simulation or sends `SessionCommand`s, so
//! the window can never change what the simulation does except through the same commands the
//! protocols use.

mod camera;
mod camera_demand;
pub(crate) mod camera_frames;
mod camera_panel;
pub mod camera_snapshots;
mod camera_uses;
pub mod cameras;
mod gizmos;
mod headset;
mod history;
mod lerobot_panel;
mod panel;
pub mod render;
mod visuals;

pub use visuals::{Drawn, USER_BODY_RGB, collider_meshes};

use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;
use bevy_egui::input::egui_wants_any_keyboard_input;

use crate::scene::Scene;
use crate::session::{SessionCommand, SessionRequest};
use crate::sim::ClockSystems;

/// Window-only settings from the command line.
#[derive(Resource, Clone, Debug, Default)]
pub struct UiOptions {
    /// Save one screenshot here once the scene has rendered for a moment (for CI and docs).
    pub screenshot: Option<PathBuf>,
    /// Seconds between the frame-rate log lines (default 10).
    pub frame_log_secs: Option<f64>,
}

/// The window title for a scene: `armsim — <scene id>`.
pub fn window_title(scene: &Scene) -> String {
    format!("armsim — {}", scene.config.scene_id)
}

/// Bevy's default plugins configured for our window, plus egui; `pipelined`: see
/// [`render::pipelined_rendering`].
pub fn add_window_plugins(app: &mut App, scene: &Scene, pipelined: bool) {
    // Ctrl-C and SIGTERM are armsim's own (`headless::stop_on_signals`): Bevy's handler gives
    // up where the process inherited an ignored signal, and SIGTERM then kills the window.
    let mut plugins = DefaultPlugins
        .build()
        .disable::<bevy::app::TerminalCtrlCHandlerPlugin>();
    if !pipelined {
        plugins = plugins.disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>();
    }
    app.add_plugins(
        plugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: window_title(scene),
                    resolution: WindowResolution::new(1280, 800),
                    ..default()
                }),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: "wgpu=error,naga=warn,bevy_render=warn,offset_allocator=warn".into(),
                ..crate::logging::log_plugin()
            }),
    )
    .add_plugins(EguiPlugin::default())
    .insert_resource(ClearColor(Color::srgb(0.62, 0.68, 0.75)))
    .insert_resource(render::Pipelined(pipelined));
    // Per-pass GPU and CPU times in the log (Vulkan timestamp queries), for profiling.
    if std::env::var_os("ARMSIM_RENDER_DIAGNOSTICS").is_some() {
        app.add_plugins((
            bevy::render::diagnostic::RenderDiagnosticsPlugin,
            bevy::diagnostic::LogDiagnosticsPlugin {
                wait_duration: std::time::Duration::from_secs(5),
                ..default()
            },
        ));
    }
}

/// What the headless offscreen renderer (`crate::offscreen`) takes of the window: the scene's
/// meshes and lights, the flat material and the scene's cameras with their images; no panel,
/// orbit camera, gizmos or window.
pub(crate) fn offscreen_plugin(app: &mut App) {
    render::materials_plugin(app);
    cameras::capture_plugin(app);
    visuals::plugin(app);
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<UiOptions>();
    render::plugin(app);
    camera::plugin(app);
    cameras::plugin(app);
    camera_demand::plugin(app);
    gizmos::plugin(app);
    history::plugin(app);
    visuals::plugin(app);
    app.add_systems(Update, (update_title, frame_figures));
    panel::plugin(app);
    app.add_systems(
        Update,
        (
            keyboard_shortcuts.run_if(not(egui_wants_any_keyboard_input)),
            screenshot_keys,
        )
            .before(ClockSystems),
    );
}

/// When `window_app` began building the app: the start of "time to first frame".
pub(crate) static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Logs the time to the first rendered frame, then every 10 s (`--frame-log-secs`) the frame
/// rate, the frame time's median and 99th percentile and the simulation's real-time factor over
/// that window (sim seconds per wall second; less than 1 only while paused or when the machine
/// cannot keep up). `armsim bench window` reads these lines.
fn frame_figures(
    frames: Res<bevy::diagnostic::FrameCount>,
    time: Res<Time<Real>>,
    clock: Res<crate::sim::SimClock>,
    options: Res<UiOptions>,
    mut window: Local<Option<(f64, u32, f64)>>,
    mut frame_times: Local<Vec<f64>>,
) {
    // Frame 1 has been rendered and presented when frame 2 begins.
    if frames.0 == 2
        && let Some(start) = STARTED.get()
    {
        info!(
            "first frame rendered {:.0} ms after start",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    let now = time.elapsed_secs_f64();
    if frames.0 > 2 {
        frame_times.push(time.delta_secs_f64());
    }
    let every = options.frame_log_secs.unwrap_or(10.0);
    match *window {
        None => *window = Some((now, frames.0, clock.sim_time)),
        Some((t0, f0, sim0)) if now - t0 >= every => {
            let (p50, p99) = percentiles(&mut frame_times);
            info!(
                "{:.1} frames/s over the last {:.0} s (frame time p50 {:.1} ms, p99 {:.1} ms); \
                 simulation real-time factor {:.3}",
                f64::from(frames.0 - f0) / (now - t0),
                now - t0,
                p50 * 1e3,
                p99 * 1e3,
                (clock.sim_time - sim0) / (now - t0)
            );
            frame_times.clear();
            *window = Some((now, frames.0, clock.sim_time));
        }
        Some(_) => {}
    }
}

/// Median and 99th percentile (nearest rank) of `values`; zeros when empty.
fn percentiles(values: &mut [f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values.sort_unstable_by(f64::total_cmp);
    let at =
        |q: f64| values[((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1];
    (at(0.5), at(0.99))
}

/// The title shows the scene and the session state (`armsim — default_scene — RUNNING`), so
/// the state is visible from the taskbar (and to tests through the window manager).
fn update_title(
    session: Res<crate::session::Session>,
    scene: Res<crate::sim::SimScene>,
    mut windows: Query<&mut Window, With<bevy::window::PrimaryWindow>>,
) {
    let title = format!("{} — {}", window_title(&scene.0), session.state().as_str());
    for mut w in &mut windows {
        if w.title != title {
            w.title.clone_from(&title);
        }
    }
}

/// Space pause/run, Right arrow one step, Backspace reset: MuJoCo's viewer keys. While a
/// LeRobot dataset records: N ends the episode (LeRobot's →, which steps here), Left arrow
/// re-records it, Esc stops recording, as LeRobot's record keys do.
fn keyboard_shortcuts(
    keys: Res<ButtonInput<KeyCode>>,
    mut session: MessageWriter<SessionRequest>,
    mut dataset: crate::lerobot::DatasetRequests,
) {
    use crate::protocol::dataset::DatasetControl;
    if dataset.recording() {
        for (key, control) in [
            (KeyCode::KeyN, DatasetControl::EndEpisode),
            (KeyCode::ArrowLeft, DatasetControl::Rerecord),
            (KeyCode::Escape, DatasetControl::Stop),
        ] {
            if keys.just_pressed(key) {
                match dataset.request(control) {
                    Ok(what) => info!("keys: {what}"),
                    Err(why) => warn!("keys: {why}"),
                }
            }
        }
    }
    if keys.just_pressed(KeyCode::Space) {
        session.write(SessionRequest(SessionCommand::TogglePause));
    }
    if keys.just_pressed(KeyCode::ArrowRight) {
        session.write(SessionRequest(SessionCommand::Step(1)));
    }
    if keys.just_pressed(KeyCode::Backspace) {
        session.write(SessionRequest(SessionCommand::Reset));
    }
}

/// F12 writes a PNG of the window; `--screenshot PATH` writes one after the first second.
fn screenshot_keys(
    mut commands: Commands,
    keys: Res<ButtonInput<KeyCode>>,
    mut options: ResMut<UiOptions>,
    time: Res<Time<Real>>,
    frames: Res<bevy::diagnostic::FrameCount>,
    mut counter: Local<u32>,
) {
    if keys.just_pressed(KeyCode::F12) {
        *counter += 1;
        let path = format!("armsim-screenshot-{}.png", *counter);
        info!("screenshot: {path}");
        commands
            .spawn(Screenshot::primary_window())
            .observe(save_to_disk(path));
    }
    // Wait for a few frames and a moment of wall time so meshes, shadows and the panel are in.
    if frames.0 >= 30
        && time.elapsed_secs() > 1.0
        && let Some(path) = options.screenshot.take()
    {
        info!("screenshot: {}", path.display());
        commands
            .spawn(Screenshot::primary_window())
            .observe(save_to_disk(path));
    }
}
