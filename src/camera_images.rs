//! The renderer's camera images in the simulation's render-free [`CameraImages`]: every
//! [`CameraFrameReady`] the cameras' readback sends (the window, or `--headless --cameras`) is
//! kept, shared and not copied, as its camera's newest image, so the state snapshot
//! (`armsim::state::snapshot_app`) and the monitor port's `(getCamera NAME)` can hand out the
//! pixels without a render dependency.

use bevy::prelude::*;

use crate::state::CameraImages;
use crate::ui::cameras::{CameraFrameReady, CameraFrames};

/// Adds [`CameraImages`] and the system keeping each [`CameraFrameReady`] into it. Call it
/// after the cameras' plugin (`ui::plugin`, or the headless render app's): it does nothing in
/// an app without [`CameraFrames`].
pub fn plugin(app: &mut App) {
    if !app.world().contains_resource::<CameraFrames>() {
        return;
    }
    app.init_resource::<CameraImages>()
        .add_systems(Last, keep_camera_images);
}

fn keep_camera_images(
    mut ready: MessageReader<CameraFrameReady>,
    mut images: ResMut<CameraImages>,
) {
    for CameraFrameReady(frame) in ready.read() {
        images.insert(frame.clone());
    }
}
