//! The panel's Cameras section: each scene camera's image, live, with its name, size, rate and
//! the step its newest image shows. A camera renders while its thumbnail is on screen (the
//! section open and scrolled into view; `super::camera_demand`).

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiTextureHandle, egui};

use super::camera_uses::CameraDemand;
use super::cameras::{CameraImages, SimCamera};

/// What the panel's Cameras section shows of one camera.
pub(super) struct Thumbnail {
    name: String,
    texture: egui::TextureId,
    size: [u32; 2],
    rate_hz: f32,
    depth: bool,
    /// Step and sim time of its newest image.
    shows: Option<(u64, f64)>,
}

/// The cameras and their images, for the panel.
#[derive(SystemParam)]
pub(super) struct CameraPanel<'w, 's> {
    cameras: Query<'w, 's, &'static SimCamera>,
    frames: Res<'w, CameraImages>,
    demand: Option<ResMut<'w, CameraDemand>>,
}

impl CameraPanel<'_, '_> {
    /// One thumbnail per camera, in scene order; their images registered with egui (before the
    /// panel borrows egui's context).
    pub(super) fn thumbnails(&self, contexts: &mut EguiContexts) -> Vec<Thumbnail> {
        let mut cams: Vec<&SimCamera> = self.cameras.iter().collect();
        cams.sort_by_key(|c| c.index);
        cams.into_iter()
            .map(|c| Thumbnail {
                name: c.spec.name.clone(),
                texture: contexts.add_image(EguiTextureHandle::Weak(c.image.id())),
                size: [c.spec.width, c.spec.height],
                rate_hz: c.spec.rate_hz,
                depth: c.spec.depth,
                shows: self.frames.get(&c.spec.name).map(|f| (f.step, f.sim_time)),
            })
            .collect()
    }

    /// The cameras whose thumbnails were on screen this frame ([`section`]'s answer; none when
    /// the section is folded or the panel hidden): they render while they are.
    pub(super) fn on_screen(&mut self, names: Vec<String>) {
        if let Some(demand) = &mut self.demand {
            let names = names.into_iter().collect();
            if demand.panel != names {
                demand.panel = names;
            }
        }
    }
}

/// Width of a thumbnail in the panel, logical pixels.
const THUMBNAIL_WIDTH: f32 = 128.0;

/// The Cameras section: each camera's image, live, with what it is and the step it shows.
/// Returns the cameras whose thumbnails are on screen (not scrolled out of view).
pub(super) fn section(ui: &mut egui::Ui, thumbnails: &[Thumbnail]) -> Vec<String> {
    let mut on_screen = Vec::new();
    ui.horizontal_wrapped(|ui| {
        for t in thumbnails {
            ui.vertical(|ui| {
                ui.set_width(THUMBNAIL_WIDTH);
                let [w, h] = t.size;
                let size = egui::vec2(THUMBNAIL_WIDTH, THUMBNAIL_WIDTH * h as f32 / w as f32);
                let image = ui.add(egui::Image::new(egui::load::SizedTexture::new(
                    t.texture, size,
                )));
                if ui.is_rect_visible(image.rect) {
                    on_screen.push(t.name.clone());
                }
                image.on_hover_text(format!(
                    "{w}×{h} at {} Hz{}",
                    t.rate_hz,
                    if t.depth { ", with depth" } else { "" }
                ));
                let shows = match t.shows {
                    Some((step, time)) => format!("step {step} · {time:.2} s"),
                    None => "no image yet".to_string(),
                };
                ui.label(egui::RichText::new(format!("{}  {shows}", t.name)).small());
            });
        }
    });
    on_screen
}
