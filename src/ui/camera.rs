//! The orbit camera of the 3D view, Z up: left drag orbits, right or middle drag pans, the
//! wheel zooms, `Home` restores the starting view. Input over the panel belongs to the panel.

use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, ClearColorConfig};
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy_egui::input::{egui_wants_any_keyboard_input, egui_wants_any_pointer_input};
use bevy_egui::{EguiGlobalSettings, PrimaryEguiContext};

use crate::sim::SimScene;

#[derive(Component, Clone, Copy, Debug)]
pub struct OrbitCamera {
    pub focus: Vec3,
    pub radius: f32,
    /// Angle about world Z, radians.
    pub yaw: f32,
    /// Elevation above the XY plane, radians.
    pub pitch: f32,
}

impl OrbitCamera {
    /// A view of the table from the front-left, a little above, framing arm and cubes.
    fn home(table_top: f32) -> Self {
        Self {
            focus: Vec3::new(0.3, 0.0, table_top + 0.2),
            radius: 2.1,
            yaw: -0.75,
            pitch: 0.42,
        }
    }

    fn transform(&self) -> Transform {
        let dir = Vec3::new(
            self.pitch.cos() * self.yaw.cos(),
            self.pitch.cos() * self.yaw.sin(),
            self.pitch.sin(),
        );
        Transform::from_translation(self.focus + dir * self.radius).looking_at(self.focus, Vec3::Z)
    }
}

pub(super) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_camera).add_systems(
        Update,
        (
            orbit.run_if(not(egui_wants_any_pointer_input)),
            reset_view.run_if(not(egui_wants_any_keyboard_input)),
            apply_orbit,
        )
            .chain(),
    );
}

/// The 3D camera renders into the viewport right of the panel; egui gets a camera of its own
/// covering the whole window, drawn on top, so the panel does not move with the viewport.
fn spawn_camera(
    mut commands: Commands,
    scene: Res<SimScene>,
    mut egui_settings: ResMut<EguiGlobalSettings>,
) {
    egui_settings.auto_create_primary_context = false;
    let orbit = OrbitCamera::home(scene.0.config.table.top_height_m);
    // Order -1: in the lite profile the view renders into an image the display camera (order 0)
    // then draws, so it must come first.
    commands.spawn((
        Camera3d::default(),
        Camera {
            order: -1,
            ..default()
        },
        orbit.transform(),
        orbit,
    ));
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));
}

fn orbit(
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    mut cameras: Query<&mut OrbitCamera>,
) {
    for mut cam in &mut cameras {
        let delta = motion.delta;
        if buttons.pressed(MouseButton::Left) {
            cam.yaw -= delta.x * 0.006;
            cam.pitch = (cam.pitch + delta.y * 0.006).clamp(-1.45, 1.45);
        }
        if buttons.pressed(MouseButton::Right) || buttons.pressed(MouseButton::Middle) {
            let t = cam.transform();
            let scale = cam.radius * 0.0015;
            let (right, up) = (t.right(), t.up());
            cam.focus += (-right * delta.x + up * delta.y) * scale;
        }
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        if lines != 0.0 {
            cam.radius = (cam.radius * (1.0 - lines * 0.1)).clamp(0.2, 20.0);
        }
    }
}

fn reset_view(
    keys: Res<ButtonInput<KeyCode>>,
    scene: Res<SimScene>,
    mut cameras: Query<&mut OrbitCamera>,
) {
    if keys.just_pressed(KeyCode::Home) {
        for mut cam in &mut cameras {
            *cam = OrbitCamera::home(scene.0.config.table.top_height_m);
        }
    }
}

fn apply_orbit(mut cameras: Query<(&OrbitCamera, &mut Transform), Changed<OrbitCamera>>) {
    for (cam, mut transform) in &mut cameras {
        *transform = cam.transform();
    }
}
