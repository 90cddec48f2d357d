//! Render profiles. `full` draws the 3D view at window resolution with Bevy's PBR pipeline and
//! tonemapping, as fast as the machine allows. `lite` is for software rasterizers (Mesa's
//! lavapipe/llvmpipe in VMs, remote desktops and CI boxes), where every pixel the fragment
//! shaders touch costs CPU time shared with physics: the 3D view renders into an offscreen image
//! at a fraction of the resolution that the panel's egui pass stretches over the view (bilinear),
//! meshes use a flat Lambert material (`flat.wgsl`) instead of PBR, tonemapping is bypassed,
//! and frames are capped so the rasterizer's threads leave the
//! simulation its share of the cores. Input still wakes the app at once (winit's reactive mode),
//! so a click is not delayed by the cap.
//!
//! The profile follows the adapter (`auto`: lite on a software adapter, full on a GPU);
//! `--render-profile` and the panel's View section override it either way. On a software adapter
//! shadows and MSAA stay off in both profiles.

use bevy::camera::{CameraOutputMode, ClearColorConfig, RenderTarget, Viewport};
use bevy::core_pipeline::tonemapping::{DebandDither, Tonemapping};
use bevy::prelude::*;
use bevy::render::render_resource::{
    AsBindGroup, Extent3d, ShaderType, TextureFormat, TextureUsages,
};
use bevy::shader::ShaderRef;
use bevy::window::WindowRef;
use bevy::winit::{UpdateMode, WinitSettings};
use bevy_egui::PrimaryEguiContext;

use super::camera::OrbitCamera;

/// What the user asked for on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileChoice {
    /// Lite on a software adapter, full on a GPU.
    #[default]
    Auto,
    /// Window resolution, PBR with tonemapping, no frame cap.
    Full,
    /// Reduced render scale, no tonemapping, capped frame rate.
    Lite,
}

/// Whether the window should render pipelined (the render world one frame behind the main
/// world, on its own thread). That overlap buys throughput on a GPU but, under a software
/// rasterizer whose threads already fill the cores, only adds a frame between a click and its
/// repaint (`armsim bench window`: click to panel 464 → 129 ms median at the same frame rate).
/// So the lite profile renders unpipelined. The plugin is chosen before the app exists, so for
/// `auto` this asks wgpu which adapter Bevy will most likely get (Bevy's default backends and
/// power preference, no surface); it takes about a tenth of a second.
pub fn pipelined_rendering(choice: ProfileChoice) -> bool {
    match choice {
        ProfileChoice::Full => true,
        ProfileChoice::Lite => false,
        ProfileChoice::Auto => {
            probe_adapter(None).map_or(true, |info| info.device_type != wgpu::DeviceType::Cpu)
        }
    }
}

/// The adapter Bevy will most likely get on `backends` (default: Bevy's, from the environment):
/// its power preference, no surface. `Err`: why there is none.
pub fn probe_adapter(
    backends: Option<wgpu::Backends>,
) -> Result<wgpu::AdapterInfo, wgpu::RequestAdapterError> {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle().with_env();
    if let Some(backends) = backends {
        descriptor.backends = backends;
    }
    let instance = wgpu::Instance::new(descriptor);
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::from_env()
            .unwrap_or(wgpu::PowerPreference::HighPerformance),
        force_fallback_adapter: false,
        compatible_surface: None,
    };
    bevy::tasks::block_on(instance.request_adapter(&options)).map(|a| a.get_info())
}

/// Whether the app was built with pipelined rendering (for the log).
#[derive(Resource, Clone, Copy, Debug)]
pub struct Pipelined(pub bool);

/// A resolved profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Full,
    Lite,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Lite => "lite",
        }
    }
}

/// The knobs of the lite profile (defaults measured with `armsim bench window`, see README).
#[derive(Clone, Debug, PartialEq)]
pub struct LiteSettings {
    /// Fraction of the view's resolution the 3D scene renders at (0.25..=1).
    pub scale: f32,
    /// Frame cap in frames per second (input events still wake the app at once).
    pub max_fps: f64,
    /// Keep Bevy's tonemapping (TonyMcMapface) instead of bypassing it.
    pub tonemapping: bool,
    /// Keep Bevy's PBR materials instead of the flat Lambert material.
    pub pbr: bool,
}

impl Default for LiteSettings {
    fn default() -> Self {
        Self {
            scale: 0.5,
            max_fps: 30.0,
            tonemapping: false,
            pbr: false,
        }
    }
}

/// Benchmark-only switches that take parts of the window away, to measure what they cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ablation {
    pub no_panel: bool,
    pub no_gizmos: bool,
}

/// The render profile in force and how it was chosen.
#[derive(Resource, Clone, Debug)]
pub struct RenderProfile {
    pub choice: ProfileChoice,
    /// The profile in force; `None` until the adapter is known (auto).
    pub active: Option<Profile>,
    pub lite: LiteSettings,
    pub ablation: Ablation,
    /// The adapter's name and whether it rasterizes on the CPU, once known.
    pub adapter: Option<(String, bool)>,
}

impl Default for RenderProfile {
    fn default() -> Self {
        Self {
            choice: ProfileChoice::Auto,
            active: None,
            lite: LiteSettings::default(),
            ablation: Ablation::default(),
            adapter: None,
        }
    }
}

/// The window area right of the panel, in physical pixels; the panel sets it every frame.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ViewRect {
    pub position: UVec2,
    pub size: UVec2,
}

/// The offscreen image the lite profile renders the 3D view into; the panel paints it under
/// itself, stretched over the view, with egui's (cheap) textured-quad shader.
#[derive(Resource)]
pub struct LiteTarget(pub Handle<Image>);

pub(super) fn plugin(app: &mut App) {
    materials_plugin(app);
    app.init_resource::<ViewRect>()
        .add_systems(Startup, spawn_target)
        .add_systems(
            PostUpdate,
            (detect_adapter, apply_profile, place_view)
                .chain()
                .before(swap_materials)
                .before(bevy::camera::CameraUpdateSystems),
        );
}

/// The flat material and the swap between it and PBR, following [`RenderProfile`]: what the
/// headless offscreen renderer (`crate::offscreen`, which sets the profile to lite) takes of the
/// window's profiles.
pub(crate) fn materials_plugin(app: &mut App) {
    bevy::asset::embedded_asset!(app, "flat.wgsl");
    app.add_plugins(MaterialPlugin::<FlatMaterial>::default())
        .init_resource::<RenderProfile>()
        .add_systems(
            PostUpdate,
            swap_materials.before(bevy::camera::CameraUpdateSystems),
        );
}

fn spawn_target(mut commands: Commands, mut images: ResMut<Assets<Image>>) {
    let mut image = Image::new_target_texture(1, 1, TextureFormat::Rgba8UnormSrgb, None);
    image.texture_descriptor.usage |= TextureUsages::COPY_SRC;
    // The camera draws every pixel; nothing needs uploading or keeping across a resize.
    image.data = None;
    image.copy_on_resize = false;
    let handle = images.add(image);
    commands.insert_resource(LiteTarget(handle));
}

/// Resolves `auto` once the adapter is known, and keeps shadows and MSAA off on a software
/// adapter, where they cost most of a frame.
fn detect_adapter(
    adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>,
    mut profile: ResMut<RenderProfile>,
    pipelined: Option<Res<Pipelined>>,
    mut lights: Query<&mut DirectionalLight>,
    cameras: Query<Entity, With<Camera>>,
    mut commands: Commands,
) {
    if profile.adapter.is_some() {
        return;
    }
    let Some(adapter) = adapter else {
        return;
    };
    // wgpu's DeviceType is not re-exported by Bevy; its Debug name is stable ("Cpu").
    let software = format!("{:?}", adapter.device_type) == "Cpu";
    let name = format!(
        "{} ({:?}, {})",
        adapter.name, adapter.backend, adapter.driver_info
    );
    let active = match profile.choice {
        ProfileChoice::Full => Profile::Full,
        ProfileChoice::Lite => Profile::Lite,
        ProfileChoice::Auto if software => Profile::Lite,
        ProfileChoice::Auto => Profile::Full,
    };
    if software {
        info!(
            "software renderer {name}: shadows and MSAA off; render profile {} ({})",
            active.as_str(),
            if profile.choice == ProfileChoice::Auto {
                "auto; --render-profile full|lite overrides"
            } else {
                "--render-profile"
            }
        );
        for mut light in &mut lights {
            light.shadow_maps_enabled = false;
        }
        for camera in &cameras {
            commands.entity(camera).insert(Msaa::Off);
        }
    } else {
        info!("GPU {name}: render profile {}", active.as_str());
    }
    if pipelined.is_some_and(|p| !p.0) {
        info!("rendering unpipelined: one frame less between input and repaint");
    }
    profile.adapter = Some((name, software));
    profile.active = Some(active);
}

/// Switches cameras, tonemapping, materials and the frame cap when the profile changes.
#[allow(clippy::too_many_arguments)] // a Bevy system: each argument is one thing it switches
fn apply_profile(
    profile: Res<RenderProfile>,
    mut applied: Local<Option<(Profile, LiteSettings)>>,
    target: Res<LiteTarget>,
    mut scene_cam: Query<(Entity, &mut Camera), With<OrbitCamera>>,
    mut egui_cam: Query<&mut Camera, (With<PrimaryEguiContext>, Without<OrbitCamera>)>,
    mut winit: ResMut<WinitSettings>,
    mut gizmos: ResMut<GizmoConfigStore>,
    mut commands: Commands,
) {
    let Some(active) = profile.active else {
        return;
    };
    let wanted = (active, profile.lite.clone());
    if applied.as_ref() == Some(&wanted) {
        return;
    }
    let lite = active == Profile::Lite;
    let settings = &profile.lite;
    gizmos.config_mut::<DefaultGizmoConfigGroup>().0.enabled = !profile.ablation.no_gizmos;
    for (entity, mut camera) in &mut scene_cam {
        let mut e = commands.entity(entity);
        if lite {
            camera.viewport = None;
            e.insert(RenderTarget::Image(target.0.clone().into()));
        } else {
            e.insert(RenderTarget::Window(WindowRef::Primary));
        }
        if lite && !settings.tonemapping {
            e.insert((Tonemapping::None, DebandDither::Disabled));
        } else {
            e.insert((Tonemapping::default(), DebandDither::Enabled));
        }
    }
    // In lite nothing else draws to the window: the panel's camera clears it first.
    for mut camera in &mut egui_cam {
        if let CameraOutputMode::Write { clear_color, .. } = &mut camera.output_mode {
            *clear_color = if lite {
                ClearColorConfig::Default
            } else {
                ClearColorConfig::None
            };
        }
    }
    *winit = if lite {
        let mode = UpdateMode::Reactive {
            wait: std::time::Duration::from_secs_f64(1.0 / settings.max_fps),
            react_to_device_events: false,
            react_to_user_events: true,
            react_to_window_events: true,
        };
        WinitSettings {
            focused_mode: mode,
            unfocused_mode: mode,
        }
    } else {
        WinitSettings::default()
    };
    if lite {
        info!(
            "render profile lite: 3D view at {:.0}% resolution, tonemapping {}, {}, at most {} frames/s",
            settings.scale * 100.0,
            if settings.tonemapping { "on" } else { "off" },
            if settings.pbr {
                "PBR materials"
            } else {
                "flat materials"
            },
            settings.max_fps
        );
    } else if applied.is_some() {
        info!("render profile full");
    }
    *applied = Some(wanted);
}

/// Puts the 3D view right of the panel: a viewport on the window (full), or an offscreen image
/// of the scaled size that the panel paints over the view (lite).
fn place_view(
    profile: Res<RenderProfile>,
    rect: Res<ViewRect>,
    target: Res<LiteTarget>,
    mut images: ResMut<Assets<Image>>,
    mut scene_cam: Query<&mut Camera, With<OrbitCamera>>,
) {
    let Some(active) = profile.active else {
        return;
    };
    if rect.size.x == 0 || rect.size.y == 0 {
        return;
    }
    let Ok(mut camera) = scene_cam.single_mut() else {
        return;
    };
    if active == Profile::Full {
        let viewport = Viewport {
            physical_position: rect.position,
            physical_size: rect.size,
            ..default()
        };
        let same = camera.viewport.as_ref().is_some_and(|v| {
            v.physical_position == viewport.physical_position
                && v.physical_size == viewport.physical_size
        });
        if !same {
            camera.viewport = Some(viewport);
        }
        return;
    }
    let size = lite_size(rect.size, profile.lite.scale);
    if let Some(image) = images.get(&target.0)
        && image.size() != size
        && let Some(mut image) = images.get_mut(&target.0)
    {
        image.resize(Extent3d {
            width: size.x,
            height: size.y,
            depth_or_array_layers: 1,
        });
        image.data = None;
    }
}

/// The offscreen image's size for a view of `view` physical pixels.
pub fn lite_size(view: UVec2, scale: f32) -> UVec2 {
    (view.as_vec2() * scale.clamp(0.25, 1.0))
        .round()
        .as_uvec2()
        .max(UVec2::ONE)
}

/// The lite profile's material (`flat.wgsl`): colour times a Lambert term of one key light plus a
/// constant fill, instead of Bevy's PBR shader.
#[derive(Asset, TypePath, AsBindGroup, Debug, Clone)]
pub struct FlatMaterial {
    #[uniform(0)]
    pub uniform: FlatUniform,
    pub alpha_mode: AlphaMode,
}

#[derive(Clone, Copy, Debug, ShaderType)]
pub struct FlatUniform {
    /// Linear RGBA.
    pub color: Vec4,
    /// Direction towards the key light (normalized) and, in w, the fill fraction.
    pub light: Vec4,
}

impl Material for FlatMaterial {
    fn fragment_shader() -> ShaderRef {
        "embedded://armsim/ui/flat.wgsl".into()
    }

    fn alpha_mode(&self) -> AlphaMode {
        self.alpha_mode
    }
}

/// Both materials of a mesh, so the profile can swap them.
#[derive(Component, Clone)]
struct BothMaterials {
    standard: Handle<StandardMaterial>,
    flat: Handle<FlatMaterial>,
}

/// Direction towards the scene's key light: the directional light of `visuals` stands at
/// (1.5, -1, 4) and looks at (0.4, 0, 1).
const KEY_LIGHT: Vec3 = Vec3::new(1.1, -1.0, 3.0);
/// Share of a colour that faces away from the key light keep (ambient and fill).
const FILL: f32 = 0.45;
/// Brightens the flat colours to about what PBR with the scene's lights and tonemapping shows.
const GAIN: f32 = 1.6;

/// Meshes whose material has no flat twin yet.
type NotSwappedYet = (With<Mesh3d>, Without<BothMaterials>);

/// Swaps every mesh's material between PBR (full, or `--render-tweak pbr`) and flat (lite); a
/// body's own material on an entity without a mesh is left for `visuals` to read.
fn swap_materials(
    profile: Res<RenderProfile>,
    mut applied: Local<Option<bool>>,
    standard: Query<(Entity, &MeshMaterial3d<StandardMaterial>), NotSwappedYet>,
    both: Query<(Entity, &BothMaterials)>,
    std_assets: Res<Assets<StandardMaterial>>,
    mut flat_assets: ResMut<Assets<FlatMaterial>>,
    mut commands: Commands,
) {
    let Some(active) = profile.active else {
        return;
    };
    let flat = active == Profile::Lite && !profile.lite.pbr;
    if *applied == Some(flat) && standard.is_empty() {
        return;
    }
    // Meshes not seen yet get their flat twin.
    for (entity, material) in &standard {
        let Some(m) = std_assets.get(&material.0) else {
            continue;
        };
        let handle = flat_assets.add(FlatMaterial {
            uniform: FlatUniform {
                color: (m.base_color.to_linear().to_vec3() * GAIN).extend(m.base_color.alpha()),
                light: KEY_LIGHT.normalize().extend(FILL),
            },
            alpha_mode: m.alpha_mode,
        });
        let both = BothMaterials {
            standard: material.0.clone(),
            flat: handle,
        };
        if flat {
            commands
                .entity(entity)
                .remove::<MeshMaterial3d<StandardMaterial>>()
                .insert(MeshMaterial3d(both.flat.clone()));
        }
        commands.entity(entity).insert(both);
    }
    if *applied != Some(flat) {
        for (entity, both) in &both {
            let mut e = commands.entity(entity);
            if flat {
                e.remove::<MeshMaterial3d<StandardMaterial>>()
                    .insert(MeshMaterial3d(both.flat.clone()));
            } else {
                e.remove::<MeshMaterial3d<FlatMaterial>>()
                    .insert(MeshMaterial3d(both.standard.clone()));
            }
        }
    }
    *applied = Some(flat);
}
