//! The scene's cameras rendered headless: `armsim --headless --cameras` (implied by
//! `--record-lerobot` and `--camera-snapshots` when the scene has cameras) builds the simulation
//! with Bevy's render stack but no window, no X display, no egui and no gizmos, and renders each
//! scene camera offscreen exactly as the window does (`ui::cameras`), so the app gets the same
//! [`CameraImages`](crate::ui::cameras::CameraImages) and
//! [`CameraFrameReady`](crate::ui::cameras::CameraFrameReady) and the LeRobot recorder records
//! the cameras as video.
//!
//! **How.** Bevy's default plugins without winit, the primary window, Bevy's Ctrl-C handler
//! (armsim has its own, `headless::stop_on_signals`) and pipelined rendering: each
//! `app.update()` runs the frame's steps and then renders, so an image belongs to the frame's
//! step. Meshes use the lite profile's flat material (`ui/flat.wgsl`), lights cast no shadows,
//! cameras have no MSAA nor tonemapping. Pipelines compile synchronously, and after rendering the
//! render world waits for the device ([`wait_for_gpu`]), so each image is back one frame after
//! the frame that rendered it. [`warm_up`] renders the first state before the run starts until
//! every camera shows something (the flat shader is an asset that loads in the background).
//!
//! **Rows.** While the LeRobot recorder aligns frames to its rows (`SimClock::align_frames_to`)
//! a real-time frame already ends on a row's step; a fast or client-paced frame is cut there
//! too ([`end_frames_on_aligned_steps`]), so every row gets the image of its own step.
//!
//! **Adapter.** Any Vulkan adapter does; without a GPU, Mesa's lavapipe (software) renders it
//! all on the CPU. [`find_adapter`] looks before the app is built, so a machine without one
//! gets an error that names the fix rather than Bevy's panic.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::render_resource::{PipelineCache, PollType};
use bevy::render::renderer::RenderDevice;
use bevy::render::settings::WgpuSettings;
use bevy::render::{Render, RenderApp, RenderPlugin, RenderSystems};
use bevy::window::ExitCondition;

use crate::headless::{RunReport, StopAfter};
use crate::scene::Scene;
use crate::sim::{ClockMode, SIM_HZ, SimClock, StepGate};
use crate::ui::cameras::{
    CameraFrame, CameraFrameReady, CameraImages, SimCamera, WarmingUp, period_at, shows_something,
};
use crate::ui::render::{Profile, ProfileChoice, RenderProfile};
use crate::{SimOptions, add_simulation};

/// The background the cameras see where nothing is drawn: the window's.
const CLEAR: Color = Color::srgb(0.62, 0.68, 0.75);

/// The graphics adapter Bevy will render on (its name, backend and driver) and whether it
/// rasterizes on the CPU, or an error naming the fix when there is none.
pub fn find_adapter() -> Result<(String, bool), String> {
    match crate::ui::render::probe_adapter(Some(backends())) {
        Ok(info) => Ok((
            format!("{} ({:?}, {})", info.name, info.backend, info.driver_info),
            info.device_type == wgpu::DeviceType::Cpu,
        )),
        Err(e) => Err(format!(
            "no Vulkan adapter to render the cameras offscreen ({e}): install a Vulkan driver; \
             without a GPU, Mesa's software one, lavapipe (Debian/Ubuntu: apt install \
             mesa-vulkan-drivers; Fedora: dnf install mesa-vulkan-drivers). Headless runs \
             without --cameras, --record-lerobot and --camera-snapshots need none"
        )),
    }
}

/// Vulkan unless `WGPU_BACKEND` says otherwise: the backend the offscreen cameras are tested on
/// (Mesa's lavapipe without a GPU), and the one the error of [`find_adapter`] names.
fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::VULKAN)
}

/// The log plugin for a headless render app: armsim's, quieter about wgpu and the renderer.
pub fn log_plugin() -> bevy::log::LogPlugin {
    bevy::log::LogPlugin {
        filter: "wgpu=error,naga=warn,bevy_render=warn,offset_allocator=warn".into(),
        ..crate::logging::log_plugin()
    }
}

/// Images per camera since the run started (after [`warm_up`]), for the report.
#[derive(Resource, Debug, Default)]
pub struct OffscreenStats {
    pub images: BTreeMap<String, u64>,
    /// When [`warm_up`] ended (or the first frame, without one).
    pub since: Option<Instant>,
}

/// The simulation headless with the scene's cameras rendered offscreen (see the module's
/// documentation). Like `headless_app`, it adds no log plugin ([`log_plugin`] is the one to add);
/// fails without a graphics adapter.
pub fn headless_render_app(scene: Arc<Scene>, options: &SimOptions) -> Result<App, String> {
    let (adapter, software) = find_adapter()?;
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .build()
            .disable::<bevy::log::LogPlugin>()
            .disable::<bevy::app::TerminalCtrlCHandlerPlugin>()
            .disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>()
            .disable::<bevy::winit::WinitPlugin>()
            .disable::<bevy::gizmos_render::GizmoRenderPlugin>()
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                close_when_requested: false,
                ..default()
            })
            .set(RenderPlugin {
                render_creation: WgpuSettings {
                    backends: Some(backends()),
                    ..default()
                }
                .into(),
                synchronous_pipeline_compilation: true,
                ..default()
            }),
    )
    .insert_resource(ClearColor(CLEAR))
    .init_resource::<crate::lerobot::FinishAfterDrain>()
    .insert_resource(RenderProfile {
        choice: ProfileChoice::Lite,
        active: Some(Profile::Lite),
        adapter: Some((adapter, software)),
        ..default()
    })
    .init_resource::<OffscreenStats>();
    add_simulation(&mut app, scene, options);
    crate::ui::offscreen_plugin(&mut app);
    app.add_systems(PreUpdate, end_frames_on_aligned_steps)
        .add_systems(Update, (no_shadows, count_images));
    if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
        render_app.add_systems(Render, wait_for_gpu.in_set(RenderSystems::PostCleanup));
    }
    Ok(app)
}

/// Lights cast no shadows offscreen: under a software rasterizer they cost most of a frame.
fn no_shadows(
    mut directional: Query<&mut DirectionalLight, Added<DirectionalLight>>,
    mut point: Query<&mut PointLight, Added<PointLight>>,
    mut spot: Query<&mut SpotLight, Added<SpotLight>>,
) {
    for mut l in &mut directional {
        l.shadow_maps_enabled = false;
    }
    for mut l in &mut point {
        l.shadow_maps_enabled = false;
    }
    for mut l in &mut spot {
        l.shadow_maps_enabled = false;
    }
}

/// The frame's commands are submitted: wait until the device has run them, so that the images
/// read back this frame arrive in the next one (Bevy maps readback buffers asynchronously and
/// nothing else polls the device without a window).
fn wait_for_gpu(device: Res<RenderDevice>, mut failures: Local<u64>) {
    let wait = PollType::Wait {
        submission_index: None,
        timeout: Some(Duration::from_secs(10)),
    };
    if let Err(e) = device.wgpu_device().poll(wait) {
        *failures += 1;
        // The first failure, then one line per thousand: a lost device fails every frame.
        if *failures == 1 || failures.is_multiple_of(1000) {
            warn!(
                "offscreen cameras: waiting for the device failed ({e}; {} time(s))",
                *failures
            );
        }
    }
}

/// A frame that is not paced by the real-time clock (fast, or a lockstep client or sync agent
/// pacing it) ends on the next step where a camera's image is due (its rate, counted in steps as
/// `ui::cameras` counts it) or, while frames are aligned (`SimClock::align_frames_to`, the
/// LeRobot recorder's rows), on the next aligned step: so each camera renders once per period,
/// and every row's step. A real-time frame already ends on aligned steps
/// (`SimClock::begin_frame`) and renders the cameras due at its end. `headless::run` sets the
/// frame's cap before each frame; this only lowers it.
fn end_frames_on_aligned_steps(
    mut clock: ResMut<SimClock>,
    gate: Res<StepGate>,
    cameras: Query<&SimCamera>,
) {
    if matches!(clock.mode, ClockMode::RealTime { .. }) && !gate.is_gated() {
        return;
    }
    let steps = clock.steps;
    let every = clock.align_frames_to;
    let mut left = if every > 1 {
        every - steps % every
    } else {
        u64::MAX
    };
    for cam in &cameras {
        left = left.min(steps_to_next_period(steps, cam.spec.rate_hz));
    }
    let left = u32::try_from(left).unwrap_or(u32::MAX);
    if clock.max_steps_this_frame > left {
        clock.max_steps_this_frame = left;
    }
}

/// Steps from `steps` to the next step where a camera at `rate_hz` starts a new period (its
/// next image is due, `ui::cameras::period_at`).
fn steps_to_next_period(steps: u64, rate_hz: f32) -> u64 {
    let rate = f64::from(rate_hz);
    if rate.is_nan() || rate <= 0.0 {
        return u64::MAX;
    }
    let period = |s: u64| period_at(s, rate_hz);
    let now = period(steps);
    // The first step of the next period, found from an estimate and corrected both ways.
    let mut next = (((now + 1) as f64 * SIM_HZ / rate).ceil() as u64).max(steps + 1);
    while next > steps + 1 && period(next - 1) > now {
        next -= 1;
    }
    while period(next) <= now {
        next += 1;
    }
    next - steps
}

fn count_images(mut ready: MessageReader<CameraFrameReady>, mut stats: ResMut<OffscreenStats>) {
    for CameraFrameReady(frame) in ready.read() {
        *stats.images.entry(frame.camera.clone()).or_default() += 1;
    }
    if stats.since.is_none() {
        stats.since = Some(Instant::now());
    }
}

/// Renders the first state (no step runs) until every camera has delivered an image that shows
/// something, or has delivered images while no pipeline was left to compile for 3 frames (a
/// camera that sees nothing but the sky), or `timeout`: the flat material's shader loads in the
/// background, and images rendered before it is in are blank. Sets up the app first
/// (`headless::finish_setup`). Until it ends, images are not kept in [`CameraImages`]
/// ([`WarmingUp`]), so no client is handed a blank one; at the end each camera's last image goes
/// there (after a timeout, only one that shows something). Returns the frames it took.
pub fn warm_up(app: &mut App, timeout: Duration) -> u32 {
    crate::headless::finish_setup(app);
    app.world_mut().init_resource::<WarmingUp>();
    let mut cursor = app
        .world()
        .resource::<Messages<CameraFrameReady>>()
        .get_cursor();
    let mut latest: BTreeMap<String, Arc<CameraFrame>> = BTreeMap::new();
    let started = Instant::now();
    let mut names: Vec<String> = Vec::new();
    let mut frames = 0;
    let mut idle_frames = 0;
    let mut ready = false;
    loop {
        if crate::headless::stop_requested() {
            break;
        }
        if frames == 1 {
            // The cameras are spawned by the first frame's `Startup`.
            let world = app.world_mut();
            let mut cameras = world.query::<&SimCamera>();
            names = cameras.iter(world).map(|c| c.spec.name.clone()).collect();
        }
        let messages = app.world().resource::<Messages<CameraFrameReady>>();
        for CameraFrameReady(frame) in cursor.read(messages) {
            latest.insert(frame.camera.clone(), frame.clone());
        }
        ready = frames > 0 && {
            let all = |ok: fn(&[u8]) -> bool| {
                names
                    .iter()
                    .all(|n| latest.get(n).is_some_and(|f| ok(&f.rgb)))
            };
            all(shows_something) || (idle_frames >= 3 && all(|_| true))
        };
        if ready {
            info!(
                "offscreen cameras ready after {frames} frame(s), {:.1} s: {}",
                started.elapsed().as_secs_f64(),
                names.join(", ")
            );
            break;
        }
        if started.elapsed() > timeout {
            warn!(
                "offscreen cameras: still no image showing anything after {:.0} s; going on",
                started.elapsed().as_secs_f64()
            );
            break;
        }
        crate::ui::cameras::retake_all(app.world_mut());
        app.world_mut()
            .resource_mut::<SimClock>()
            .max_steps_this_frame = 0;
        app.update();
        frames += 1;
        let compiling = app.get_sub_app(RenderApp).is_some_and(|r| {
            r.world()
                .get_resource::<PipelineCache>()
                .is_some_and(|p| p.waiting_pipelines().next().is_some())
        });
        idle_frames = if compiling { 0 } else { idle_frames + 1 };
    }
    app.world_mut()
        .resource_mut::<SimClock>()
        .max_steps_this_frame = u32::MAX;
    app.world_mut().remove_resource::<WarmingUp>();
    let mut images = app.world_mut().resource_mut::<CameraImages>();
    // A camera's one-colour image counts as rendered only once the pipelines are in.
    for frame in latest.into_values() {
        if ready || shows_something(&frame.rgb) {
            images.insert(frame);
        }
    }
    let mut stats = app.world_mut().resource_mut::<OffscreenStats>();
    stats.images.clear();
    stats.since = Some(Instant::now());
    frames
}

/// After the run: a few frames without steps, so that the images still on their way back reach
/// `CameraImages`, the recorder and the snapshots.
pub fn drain(app: &mut App) {
    for _ in 0..3 {
        app.world_mut()
            .resource_mut::<SimClock>()
            .max_steps_this_frame = 0;
        app.update();
    }
}

/// One line on what the cameras delivered: images per camera and per wall second since
/// [`warm_up`], and the simulation's real-time factor over that time (sim seconds per wall
/// second; the clock starts at [`warm_up`]'s end) with the steps real time dropped.
pub fn report(world: &World) -> String {
    let stats = world.resource::<OffscreenStats>();
    let wall = stats.since.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let clock = world.resource::<SimClock>();
    let per: Vec<String> = stats
        .images
        .iter()
        .map(|(name, n)| format!("{name} {n} ({:.1}/s)", *n as f64 / wall.max(1e-9)))
        .collect();
    format!(
        "camera images over {wall:.2} s wall: {}; real-time factor {:.3}, {} step(s) dropped",
        if per.is_empty() {
            "none".to_string()
        } else {
            per.join(", ")
        },
        clock.sim_time / wall.max(1e-9),
        clock.stats.dropped_steps
    )
}

/// What the command line asks of the scene's cameras in a headless run.
#[derive(Clone, Debug, Default)]
pub struct HeadlessCameras {
    /// `--cameras`.
    pub cameras: bool,
    /// `--record-lerobot`, which implies `--cameras` where the scene has cameras.
    pub recording: bool,
    /// `--camera-snapshots DIR`, which implies `--cameras` too.
    pub snapshots: Option<PathBuf>,
}

/// `armsim --headless`'s app, with its log plugin: the scene's cameras rendered offscreen
/// ([`headless_render_app`]) where they are asked for (`--cameras`, or implied by a recording or
/// snapshots) and the scene has any; otherwise the plain `headless_app`, which starts without a
/// graphics stack, and one log line where the scene has cameras that are not rendered. The
/// `bool`: whether the cameras render.
pub fn headless_cli_app(
    scene: Arc<Scene>,
    options: &SimOptions,
    asked: &HeadlessCameras,
) -> Result<(App, bool), String> {
    let count = scene.cameras().len();
    let wanted = asked.cameras || asked.recording || asked.snapshots.is_some();
    if count == 0 || !wanted {
        let mut app = crate::headless_app(scene, options);
        app.add_plugins(crate::logging::log_plugin());
        if count > 0 {
            info!(
                "{count} scene camera(s) not rendered: headless, --cameras renders them \
                 offscreen (--record-lerobot and --camera-snapshots imply it)"
            );
        } else if wanted && (asked.cameras || asked.snapshots.is_some()) {
            info!("the scene has no cameras: nothing to render");
        }
        return Ok((app, false));
    }
    let mut app = match headless_render_app(scene.clone(), options) {
        Ok(app) => app,
        // Implied by a recording or snapshots, not asked for: go on without images, loudly.
        Err(e) if !asked.cameras => {
            let mut app = crate::headless_app(scene, options);
            app.add_plugins(crate::logging::log_plugin());
            warn!(
                "the scene's {count} camera(s) cannot render, so they give no images (the \
                 LeRobot dataset records joints only; --cameras makes this an error): {e}"
            );
            return Ok((app, false));
        }
        Err(e) => return Err(e),
    };
    app.add_plugins(log_plugin());
    if let Some((adapter, software)) = &app.world().resource::<RenderProfile>().adapter {
        info!(
            "rendering {count} camera(s) offscreen on {adapter}{}",
            if *software { " (software)" } else { "" }
        );
    }
    if let Some(dir) = &asked.snapshots {
        app.insert_resource(crate::ui::camera_snapshots::CameraSnapshots::new(dir));
    }
    Ok((app, true))
}

/// `headless::run` with the cameras: [`warm_up`] first, [`drain`] after, and the cameras' line
/// ([`report`]) in the log.
pub fn run(app: &mut App, stop: StopAfter) -> RunReport {
    warm_up(app, Duration::from_secs(60));
    let report = crate::headless::run(app, stop);
    drain(app);
    info!("{}", self::report(app.world()));
    report
}

#[cfg(test)]
mod tests {
    use super::{shows_something, steps_to_next_period};

    #[test]
    fn the_next_period_is_where_the_cameras_count_it() {
        assert_eq!(steps_to_next_period(0, 30.0), 8);
        assert_eq!(steps_to_next_period(7, 30.0), 1);
        assert_eq!(steps_to_next_period(8, 30.0), 8);
        assert_eq!(steps_to_next_period(5, 240.0), 1);
        assert_eq!(steps_to_next_period(0, 1000.0), 1);
        assert_eq!(steps_to_next_period(0, 7.0), 35);
        assert_eq!(steps_to_next_period(34, 7.0), 1);
        assert_eq!(steps_to_next_period(35, 7.0), 34);
        assert_eq!(steps_to_next_period(3, 0.0), u64::MAX);
    }

    #[test]
    fn a_blank_image_shows_nothing() {
        assert!(!shows_something(&[9, 9, 9, 9, 9, 9]));
        assert!(shows_something(&[9, 9, 9, 9, 8, 9]));
    }
}
