//! Which scene cameras render in the window: only those whose images something uses. Each
//! 256×256 camera costs about 5 ms of a software-rendered frame, so a camera nobody looks at
//! would slow the window for nothing. A camera renders while any of these holds
//! ([`Use`](super::camera_uses::Use)):
//!
//! - its first renders, until its pipelines are compiled
//!   ([`warmed_up`](super::camera_uses::warmed_up)), so that a camera started later delivers a
//!   correct image at once;
//! - a LeRobot recording runs (`--record-lerobot`, or the panel's button);
//! - `--camera-snapshots` writes its images;
//! - a client asked for its images within the last [`LEASE`] (the monitor port's
//!   `(getCamera NAME)` for that camera, `(getCameras)` for all; the Python client's `camera()`
//!   and `cameras()` send those);
//! - its thumbnail is on screen: the panel's Cameras section is open and scrolled into view.
//!
//! A camera that stops is *idle* in [`CameraImages`]: its last image no longer shows the
//! present, so clients are told it is warming up (and the request starts it) until an image of
//! the new run arrives, a frame or two later. The headless offscreen renderer
//! (`crate::offscreen`) has no [`CameraDemand`]: there, asking for cameras (`--cameras`) is the
//! use, and every camera renders at its rate.

use std::time::Instant;

use bevy::prelude::*;
use bevy::render::{Render, RenderApp, RenderSystems};

use super::camera_snapshots::CameraSnapshots;
use super::camera_uses::{CameraDemand, LEASE, PipelinesIdle, Uses, count_idle_frames};
use super::cameras::{CameraSystems, SimCamera};
use crate::lerobot::LeRobotRecording;
use crate::state::CameraImages;

pub(super) fn plugin(app: &mut App) {
    let idle = PipelinesIdle::default();
    if let Some(render_app) = app.get_sub_app_mut(RenderApp) {
        render_app
            .insert_resource(idle.clone())
            .add_systems(Render, count_idle_frames.in_set(RenderSystems::Cleanup));
    }
    app.insert_resource(idle)
        .init_resource::<CameraDemand>()
        .add_systems(
            Update,
            follow_uses
                .after(crate::sim::ClockSystems)
                .before(CameraSystems),
        );
}

/// Starts the cameras something uses and stops the others, one log line each time.
fn follow_uses(
    demand: Res<CameraDemand>,
    recording: Option<Res<LeRobotRecording>>,
    snapshots: Option<Res<CameraSnapshots>>,
    mut images: ResMut<CameraImages>,
    mut cameras: Query<&mut SimCamera>,
) {
    let now = Instant::now();
    let recording = recording.is_some_and(|r| r.is_active());
    for mut cam in &mut cameras {
        let name = cam.spec.name.clone();
        let uses = Uses {
            warming: !cam.rendering.warmed,
            recording,
            snapshots: snapshots.is_some(),
            asked: images.asked(&name),
            on_panel: demand.panel.contains(&name),
        }
        .at(now);
        match cam.rendering.follow(&uses) {
            Some(true) => {
                let why: Vec<&str> = uses.iter().map(|u| u.text()).collect();
                info!("camera {name}: rendering ({})", why.join(", "));
                // Its first image is due now, whether or not the sim has moved.
                cam.retake();
            }
            Some(false) => {
                info!(
                    "camera {name}: stopped rendering: nothing uses its images (no recording, \
                     snapshots, client request in the last {} s or thumbnail on screen)",
                    LEASE.as_secs()
                );
                images.set_idle(&name, true);
            }
            None => {}
        }
    }
}
