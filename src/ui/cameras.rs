//! The scene's simulated cameras in the window: one Bevy `Camera3d` per camera (the scene's
//! `extensions.armsim.cameras` and the robot file's own, `Scene::cameras`) rendering into an
//! image of its size, aimed each frame from the physics state (a camera attached to a link
//! follows it), read back to the CPU at the camera's rate with Bevy's `Readback`, and shown live
//! in the panel's Cameras section.
//!
//! **Tagging.** A camera renders only on frames where its next image is due: the sim has
//! crossed a multiple of `1 / rate_hz` of sim time (counted in steps, so 30 Hz is every 8th
//! step) since its last image, or a reset started a new episode. That frame, after the clock
//! has run its steps (`ClockSystems`) and bevy_rapier has written the bodies' poses back, the
//! camera is aimed and a capture entity is spawned holding `Readback::texture` and the stamp of
//! that state (episode, step, sim time, the camera's pose). In the window a camera renders only
//! while something uses its images (`super::camera_demand`); a camera that does not render this
//! frame is inactive (`Camera::is_active`), which Bevy skips in visibility, extraction and
//! shadow cascades, so it costs nothing. The render world extracts the
//! poses, the meshes and the readback together at the end of that frame, so the image shows
//! exactly the stamped state; it arrives one or more frames later (`ReadbackComplete` on the
//! capture entity), and the stamp travels with it. The capture's `Readback` is removed the next
//! frame, so each capture reads back once.
//!
//! **What you get.** [`CameraImages`] holds each camera's newest [`CameraFrame`] (RGB8, rows
//! top first, unpadded); every frame is also sent as a [`CameraFrameReady`] message, for a
//! recorder that wants them all. `--camera-snapshots DIR` writes each camera's newest frame to
//! disk (`super::camera_snapshots`); the panel shows them (`super::camera_panel`).
//!
//! The 3D view's gizmos are moved to their own render layer ([`GIZMO_LAYER`]), which only the
//! orbit camera sees, so the markers are not in the cameras' images; the panel is drawn by its
//! own camera.
//!
//! **Depth.** A camera with `depth: true` also delivers [`CameraFrame::depth`], metres along
//! its optical axis: its depth attachment is kept (`COPY_SRC`, no MSAA), copied in the render
//! world right after the frame's passes into an image of its own ([`copy_depth`]), and read back
//! with the colour; Bevy's reverse-Z with an infinite far plane stores `near / z`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::asset::RenderAssetUsages;
use bevy::camera::RenderTarget;
use bevy::camera::visibility::RenderLayers;
use bevy::core_pipeline::tonemapping::{DebandDither, Tonemapping};
use bevy::diagnostic::FrameCount;
use bevy::prelude::*;
use bevy::render::RenderApp;
use bevy::render::extract_component::{ExtractComponent, ExtractComponentPlugin};
use bevy::render::gpu_readback::{Readback, ReadbackComplete};
use bevy::render::render_asset::RenderAssets;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat, TextureUsages};
use bevy::render::renderer::{RenderDevice, RenderGraph, RenderGraphSystems, RenderQueue};
use bevy::render::texture::GpuImage;
use bevy::render::view::ViewDepthTexture;

pub use armsim_core::camera::{CameraMount, CameraSpec, CameraState};
use armsim_core::camera::{Placement, gl_from_armsim, link_poses};

use super::camera::OrbitCamera;
use super::camera_uses::{CameraDemand, PipelinesIdle, Rendering, warmed_up};
use super::render::{Profile, RenderProfile};
use crate::sim::{ClockSystems, SIM_HZ, SimClock, SimRef, SimScene};

/// The render layer of the 3D view's gizmos: the orbit camera sees it, the scene's cameras do
/// not (they see layer 0, the meshes').
pub const GIZMO_LAYER: usize = 1;

/// The cameras' near plane: a wrist camera sees the fingers a few centimetres away.
const NEAR_M: f32 = 0.01;

/// One image of one camera, tagged with the state it shows: the simulation crate's type, so
/// the state snapshot and the protocols hand out the very images the renderer made.
pub use crate::state::CameraFrame;

/// Sent once for every image read back: defined in a leaf of its own, which the recorder and
/// the snapshots read it from.
pub use super::camera_frames::CameraFrameReady;

/// Each camera's newest image: the simulation crate's render-free resource, so the state
/// snapshot and the monitor's `(getCamera NAME)` read the very images the renderer made.
pub use crate::state::CameraImages;

/// Where the cameras decide to render and spawn their captures (after the clock's steps).
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CameraSystems;

/// A scene camera's Bevy camera: what it is, where it rides and the image it renders into.
#[derive(Component, Debug)]
pub struct SimCamera {
    /// Its place in `Scene::cameras`.
    pub index: usize,
    pub spec: CameraSpec,
    pub image: Handle<Image>,
    /// Where a `depth: true` camera's depth is copied for reading back.
    pub depth_image: Option<Handle<Image>>,
    placement: Placement,
    /// `(episode, period index)` of its last image.
    last: Option<(u64, u64)>,
    /// Whether it renders in the window, where cameras render on demand
    /// (`super::camera_demand`).
    pub(super) rendering: Rendering,
}

impl SimCamera {
    /// Takes an image on the next frame, whether one is due or not.
    pub(super) fn retake(&mut self) {
        self.last = None;
    }
}

/// One image on its way back from the GPU, and the state it shows.
#[derive(Component, Debug)]
struct Capture {
    frame: CameraFrame,
    /// Its camera, and the camera's run (`Rendering::run`) when it was spawned.
    camera: Entity,
    run: u64,
    /// Frames without a pipeline waiting to compile when it was spawned (`PipelinesIdle`).
    pipelines_idle: u32,
    /// `FrameCount` when it was spawned.
    spawned: u32,
    /// Its depth is still on its way ([`DepthCapture`]).
    waiting_depth: bool,
    /// Its colour is in (`frame.rgb`).
    has_rgb: bool,
}

/// A depth image on its way back, for the [`Capture`] `of`.
#[derive(Component, Debug)]
struct DepthCapture {
    of: Entity,
    spawned: u32,
}

/// On a `depth: true` camera in the frames it renders: the image its depth attachment is copied
/// into ([`copy_depth`]), in the render world.
#[derive(Component, ExtractComponent, Clone, Debug)]
struct DepthCopy(Handle<Image>);

/// The cameras in the window: [`capture_plugin`] and the gizmos' own layer. The window adds
/// what decides which cameras render (`super::camera_demand`) beside it.
pub(super) fn plugin(app: &mut App) {
    capture_plugin(app);
    app.add_systems(Update, gizmos_on_their_layer);
}

/// The cameras, their images and `--camera-snapshots`, without the window's parts (the gizmos'
/// layer, the panel, the demand): what the headless offscreen renderer (`crate::offscreen`)
/// adds.
pub(crate) fn capture_plugin(app: &mut App) {
    app.add_plugins(ExtractComponentPlugin::<DepthCopy>::default());
    if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
        render_app.add_systems(RenderGraph, copy_depth.in_set(RenderGraphSystems::Finish));
    }
    app.init_resource::<CameraImages>()
        .add_message::<CameraFrameReady>()
        .add_observer(frame_arrived)
        .add_systems(Startup, spawn_cameras)
        .add_systems(First, retire_captures)
        .add_systems(
            Update,
            (
                aim_and_capture.in_set(CameraSystems).after(ClockSystems),
                follow_profile,
                super::camera_snapshots::write_snapshots,
            ),
        );
}

/// The period of a camera at `rate_hz` that step `steps` falls in, `⌊steps · rate / 240⌋`: its
/// next image is due when this grows. Counted in steps, not sim time, so that 30 Hz is exactly
/// every 8th step of 240.
pub(crate) fn period_at(steps: u64, rate_hz: f32) -> u64 {
    (steps as f64 * f64::from(rate_hz) / SIM_HZ + 1e-9) as u64
}

/// While present (the offscreen renderer's warm-up), images are sent as [`CameraFrameReady`]
/// but not kept in [`CameraImages`]: the ones rendered before the pipelines are in are blank,
/// and clients must not be handed them. The warm-up keeps the good ones when it ends.
#[derive(Resource, Debug, Default)]
pub(crate) struct WarmingUp;

/// Makes every camera take an image on the next frame, whether one is due or not (the
/// offscreen renderer's warm-up, which renders the first state until the pipelines are in).
pub(crate) fn retake_all(world: &mut World) {
    let mut cameras = world.query::<&mut SimCamera>();
    for mut cam in cameras.iter_mut(world) {
        cam.retake();
    }
}

fn spawn_cameras(mut commands: Commands, scene: Res<SimScene>, mut images: ResMut<Assets<Image>>) {
    let scene = &scene.0;
    for (index, spec) in scene.cameras().into_iter().enumerate() {
        let Some(placement) = spec.placement(&scene.robot) else {
            warn!(
                "camera {}: its frame is not on the robot; left out",
                spec.name
            );
            continue;
        };
        let mut image =
            Image::new_target_texture(spec.width, spec.height, TextureFormat::Rgba8UnormSrgb, None);
        image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
        // The camera draws every pixel: nothing to upload, nothing to keep.
        image.data = None;
        image.copy_on_resize = false;
        let handle = images.add(image);
        let depth_image = spec.depth.then(|| {
            let mut depth = Image::new_uninit(
                Extent3d {
                    width: spec.width,
                    height: spec.height,
                    depth_or_array_layers: 1,
                },
                TextureDimension::D2,
                TextureFormat::Depth32Float,
                RenderAssetUsages::default(),
            );
            depth.texture_descriptor.usage =
                TextureUsages::COPY_DST | TextureUsages::COPY_SRC | TextureUsages::TEXTURE_BINDING;
            images.add(depth)
        });
        let place = match &spec.mount {
            CameraMount::Fixed { .. } => "fixed".to_string(),
            CameraMount::Attached { frame, .. } => format!("on {frame}"),
            CameraMount::Link { link, .. } => format!("on {}", scene.robot.links[*link].name),
        };
        info!(
            "camera {}: {}x{} at {} Hz, {:.0}° vertical field of view, {place}{}",
            spec.name,
            spec.width,
            spec.height,
            spec.rate_hz,
            spec.fov_deg,
            if spec.depth { ", with depth" } else { "" }
        );
        commands.spawn((
            Name::new(format!("camera {}", spec.name)),
            Camera3d {
                depth_texture_usages: if spec.depth {
                    (TextureUsages::RENDER_ATTACHMENT | TextureUsages::COPY_SRC).into()
                } else {
                    TextureUsages::RENDER_ATTACHMENT.into()
                },
                ..default()
            },
            Camera {
                // Before the 3D view (-1); each its own image, so the order only keeps them apart.
                order: -10 - index as isize,
                is_active: false,
                ..default()
            },
            RenderTarget::Image(handle.clone().into()),
            Projection::Perspective(PerspectiveProjection {
                fov: spec.fov_y_rad(),
                aspect_ratio: spec.width as f32 / spec.height as f32,
                near: NEAR_M,
                far: 100.0,
                near_clip_plane: Vec4::new(0.0, 0.0, -1.0, -NEAR_M),
            }),
            Msaa::Off,
            RenderLayers::layer(0),
            Transform::default(),
            SimCamera {
                index,
                spec,
                image: handle,
                depth_image,
                placement,
                last: None,
                rendering: Rendering::default(),
            },
        ));
    }
}

/// After the frame's steps: each camera whose next image is due is aimed and renders this
/// frame, and a capture stamped with this state reads its image back; the others skip the frame.
/// In the window (where [`CameraDemand`] is), a camera nothing uses does not render at all, and
/// one warming up renders every frame.
#[allow(clippy::too_many_arguments)] // a Bevy system: each argument is one thing it reads
fn aim_and_capture(
    mut commands: Commands,
    clock: Res<SimClock>,
    sim: SimRef,
    frames: Res<FrameCount>,
    demand: Option<Res<CameraDemand>>,
    idle: Option<Res<PipelinesIdle>>,
    mut cameras: Query<(
        Entity,
        &mut SimCamera,
        &mut Camera,
        &mut Transform,
        Has<DepthCopy>,
    )>,
) {
    if cameras.is_empty() {
        return;
    }
    let poses = link_poses(&sim.view());
    for (entity, mut cam, mut camera, mut transform, copying) in &mut cameras {
        let Some(pose) = cam.placement.world_pose(&poses) else {
            continue;
        };
        let period = period_at(clock.steps, cam.spec.rate_hz);
        let on_demand = demand.is_some();
        let warming = on_demand && !cam.rendering.warmed;
        let due = (!on_demand || cam.rendering.on)
            && (warming
                || cam
                    .last
                    .is_none_or(|(episode, last)| episode != clock.episode || period > last));
        if warming && due && cam.rendering.warm_since.is_none() {
            cam.rendering.warm_since = Some(Instant::now());
        }
        if camera.is_active != due {
            camera.is_active = due;
        }
        if copying && !due {
            commands.entity(entity).remove::<DepthCopy>();
        }
        if !due {
            continue;
        }
        cam.last = Some((clock.episode, period));
        *transform = Transform {
            translation: pose.translation,
            rotation: gl_from_armsim(pose.rotation),
            scale: Vec3::ONE,
        };
        let spec = &cam.spec;
        let capture = commands
            .spawn((
                Readback::texture(cam.image.clone()),
                Capture {
                    frame: CameraFrame {
                        camera: spec.name.clone(),
                        episode: clock.episode,
                        step: clock.steps,
                        sim_time: clock.sim_time,
                        width: spec.width,
                        height: spec.height,
                        state: CameraState::new(spec, &pose),
                        rgb: Arc::from([]),
                        depth: None,
                    },
                    camera: entity,
                    run: cam.rendering.run,
                    pipelines_idle: idle.as_ref().map_or(u32::MAX, |i| i.frames()),
                    spawned: frames.0,
                    waiting_depth: cam.depth_image.is_some(),
                    has_rgb: false,
                },
            ))
            .id();
        if let Some(depth) = &cam.depth_image {
            commands.entity(entity).insert(DepthCopy(depth.clone()));
            commands.spawn((
                Readback::texture(depth.clone()),
                DepthCapture {
                    of: capture,
                    spawned: frames.0,
                },
            ));
        }
    }
}

/// A colour or a depth capture.
type InFlight = AnyOf<(&'static Capture, &'static DepthCapture)>;

/// A capture's readback was extracted with the frame it was spawned in: it must not read back
/// again. One whose image never came back (a device hiccup) is dropped after a while.
fn retire_captures(
    mut commands: Commands,
    frames: Res<FrameCount>,
    captures: Query<(Entity, InFlight, Has<Readback>)>,
) {
    for (entity, (capture, depth), reading) in &captures {
        let spawned = capture.map_or_else(|| depth.map_or(0, |d| d.spawned), |c| c.spawned);
        if reading {
            commands.entity(entity).remove::<Readback>();
        } else if frames.0.wrapping_sub(spawned) > 300 {
            commands.entity(entity).despawn();
        }
    }
}

/// An image is back: unpad its rows; once its depth is in too (a `depth: true` camera), keep it
/// as its camera's newest and announce it. In the window, a camera's images are kept once its
/// warm-up has ended, and one of its current run makes it no longer idle.
#[allow(clippy::too_many_arguments)] // a Bevy system: each argument is one thing it reads
fn frame_arrived(
    event: On<ReadbackComplete>,
    mut captures: Query<&mut Capture>,
    depths: Query<&DepthCapture>,
    mut images: ResMut<CameraImages>,
    warming_up: Option<Res<WarmingUp>>,
    demand: Option<Res<CameraDemand>>,
    mut cameras: Query<&mut SimCamera>,
    mut ready: MessageWriter<CameraFrameReady>,
    mut commands: Commands,
) {
    let (entity, depth) = match depths.get(event.entity) {
        Ok(d) => {
            commands.entity(event.entity).despawn();
            (d.of, true)
        }
        Err(_) => (event.entity, false),
    };
    let Ok(mut capture) = captures.get_mut(entity) else {
        return;
    };
    let (camera, width, height) = (
        capture.frame.camera.clone(),
        capture.frame.width,
        capture.frame.height,
    );
    let size_error = || {
        warn!(
            "camera {camera}: {} bytes read back for a {width}x{height} {}",
            event.data.len(),
            if depth { "depth image" } else { "image" }
        );
    };
    if depth {
        capture.waiting_depth = false;
        match depth_rows(&event.data, width, height, NEAR_M) {
            Some(d) => capture.frame.depth = Some(d.into()),
            None => size_error(),
        }
    } else {
        capture.has_rgb = true;
        match rgb_rows(&event.data, width, height) {
            Some(rgb) => capture.frame.rgb = rgb.into(),
            None => {
                size_error();
                commands.entity(entity).despawn();
                return;
            }
        }
    }
    if capture.waiting_depth || !capture.has_rgb {
        return;
    }
    commands.entity(entity).despawn();
    let frame = Arc::new(std::mem::replace(&mut capture.frame, empty_frame()));
    // Whether it is kept (a warm camera's), and whether it is fresh (of the camera's current run).
    let (keep, current) = match cameras.get_mut(capture.camera) {
        Ok(mut cam) if demand.is_some() => {
            let r = &mut cam.rendering;
            if !r.warmed {
                let warming_for = r.warm_since.map_or(Duration::ZERO, |t| t.elapsed());
                r.warmed = warmed_up(
                    shows_something(&frame.rgb),
                    capture.pipelines_idle,
                    warming_for,
                );
            }
            (r.warmed, r.on && r.run == capture.run)
        }
        _ => (true, true),
    };
    if warming_up.is_none() && keep {
        images.insert(frame.clone());
        if current {
            images.set_idle(&frame.camera, false);
        }
    }
    ready.write(CameraFrameReady(frame));
}

/// Whether an image shows anything: not one colour all over (the clear colour where nothing
/// was drawn yet).
pub(crate) fn shows_something(rgb: &[u8]) -> bool {
    rgb.chunks_exact(3).any(|p| p != &rgb[..3])
}

fn empty_frame() -> CameraFrame {
    CameraFrame {
        camera: String::new(),
        episode: 0,
        step: 0,
        sim_time: 0.0,
        width: 0,
        height: 0,
        state: CameraState {
            pos: [0.0; 3],
            quat_world: [1.0, 0.0, 0.0, 0.0],
            intrinsics: [[0.0; 3]; 3],
        },
        rgb: Arc::from([]),
        depth: None,
    }
}

/// Depth32Float rows padded to 256 bytes → metres along the optical axis, unpadded: Bevy's
/// reverse-Z with an infinite far plane stores `near / z`, and 0 (the clear value) where nothing
/// was drawn, which becomes infinity.
fn depth_rows(data: &[u8], width: u32, height: u32, near: f32) -> Option<Vec<f32>> {
    let (w, h) = (width as usize, height as usize);
    let stride = (w * 4).div_ceil(256) * 256;
    if data.len() < stride * h.saturating_sub(1) + w * 4 {
        return None;
    }
    let mut depth = Vec::with_capacity(w * h);
    for row in data.chunks(stride).take(h) {
        for b in row[..w * 4].chunks_exact(4) {
            let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            depth.push(if d > 0.0 { near / d } else { f32::INFINITY });
        }
    }
    Some(depth)
}

/// Render world, after the frame's passes: each depth camera that rendered this frame has its
/// depth attachment copied into its [`DepthCopy`] image, which its capture reads back (Bevy
/// encodes the readbacks after this).
fn copy_depth(
    views: Query<(&DepthCopy, &ViewDepthTexture)>,
    images: Res<RenderAssets<GpuImage>>,
    device: Res<RenderDevice>,
    queue: Res<RenderQueue>,
) {
    let mut encoder = None;
    for (copy, depth) in &views {
        let Some(target) = images.get(&copy.0) else {
            continue;
        };
        let size = target.texture_descriptor.size;
        if depth.texture.size() != size || depth.texture.sample_count() != 1 {
            continue;
        }
        encoder
            .get_or_insert_with(|| device.create_command_encoder(&Default::default()))
            .copy_texture_to_texture(
                depth.texture.as_image_copy(),
                target.texture.as_image_copy(),
                size,
            );
    }
    if let Some(encoder) = encoder {
        queue.submit([encoder.finish()]);
    }
}

/// RGBA8 rows padded to 256 bytes (wgpu's copy alignment) → RGB8 rows without padding.
fn rgb_rows(data: &[u8], width: u32, height: u32) -> Option<Vec<u8>> {
    let (w, h) = (width as usize, height as usize);
    let stride = (w * 4).div_ceil(256) * 256;
    if data.len() < stride * h.saturating_sub(1) + w * 4 {
        return None;
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for row in data.chunks(stride).take(h) {
        for px in row[..w * 4].chunks_exact(4) {
            rgb.extend_from_slice(&px[..3]);
        }
    }
    Some(rgb)
}

/// Gizmos on [`GIZMO_LAYER`], which the orbit camera sees besides the meshes' layer 0.
fn gizmos_on_their_layer(
    mut commands: Commands,
    view: Query<Entity, (With<OrbitCamera>, Without<RenderLayers>)>,
    mut gizmos: ResMut<GizmoConfigStore>,
    cameras: Query<(), With<SimCamera>>,
) {
    if cameras.is_empty() {
        return;
    }
    for entity in &view {
        commands
            .entity(entity)
            .insert(RenderLayers::from_layers(&[0, GIZMO_LAYER]));
        let (config, _) = gizmos.config_mut::<DefaultGizmoConfigGroup>();
        config.render_layers = RenderLayers::layer(GIZMO_LAYER);
    }
}

/// The cameras' tonemapping follows the 3D view's (off in the lite profile, whose flat material
/// the cameras see too). Their pipelines change with it, so they warm up again.
fn follow_profile(
    profile: Res<RenderProfile>,
    mut applied: Local<Option<bool>>,
    mut cameras: Query<(Entity, &mut SimCamera)>,
    mut commands: Commands,
) {
    let tonemap = profile.active != Some(Profile::Lite) || profile.lite.tonemapping;
    if *applied == Some(tonemap) {
        return;
    }
    for (entity, mut cam) in &mut cameras {
        cam.rendering.warmed = false;
        cam.rendering.warm_since = None;
        if tonemap {
            commands
                .entity(entity)
                .insert((Tonemapping::default(), DebandDither::Enabled));
        } else {
            commands
                .entity(entity)
                .insert((Tonemapping::None, DebandDither::Disabled));
        }
    }
    *applied = Some(tonemap);
}

#[cfg(test)]
mod tests {
    use super::{depth_rows, rgb_rows};

    #[test]
    fn depth_rows_become_metres_and_nothing_becomes_infinity() {
        // 2×2 Depth32Float, rows of 8 bytes padded to 256; reverse-Z stores near / z.
        let mut data = vec![0u8; 256 + 8];
        for (i, d) in [(0, 0.01f32 / 0.5), (4, 0.0), (256, 0.01 / 2.0), (260, 1.0)] {
            data[i..i + 4].copy_from_slice(&d.to_le_bytes());
        }
        let z = depth_rows(&data, 2, 2, 0.01).expect("enough bytes");
        assert!(
            (z[0] - 0.5).abs() < 1e-6 && (z[2] - 2.0).abs() < 1e-6,
            "{z:?}"
        );
        assert_eq!(z[1], f32::INFINITY);
        assert!((z[3] - 0.01).abs() < 1e-9, "the near plane");
        assert_eq!(depth_rows(&data[..256 + 7], 2, 2, 0.01), None);
    }

    #[test]
    fn readback_rows_lose_their_padding_and_alpha() {
        // 3×2 RGBA: rows of 12 bytes padded to 256.
        let mut data = vec![0u8; 256 + 12];
        for (y, x) in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)] {
            let i = y * 256 + x * 4;
            data[i..i + 4].copy_from_slice(&[y as u8, x as u8, 7, 255]);
        }
        let rgb = rgb_rows(&data, 3, 2).expect("enough bytes");
        assert_eq!(rgb, [0, 0, 7, 0, 1, 7, 0, 2, 7, 1, 0, 7, 1, 1, 7, 1, 2, 7]);
        assert_eq!(rgb_rows(&data[..256 + 11], 3, 2), None);
        // 256 pixels of 4 bytes: no padding at all.
        assert_eq!(
            rgb_rows(&vec![9; 1024 * 2], 256, 2).map(|v| v.len()),
            Some(256 * 2 * 3)
        );
    }
}
