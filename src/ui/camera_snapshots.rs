//! `--camera-snapshots DIR`: each camera's newest image as `DIR/<camera>.png`, with its stamp
//! (episode, step, sim time, pose, intrinsics) in `DIR/<camera>.json`, both replaced atomically
//! at most every half second. For a person or a script watching what the cameras see.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};

use super::camera_frames::CameraFrameReady;
use crate::state::{CameraFrame, CameraImages};

/// `--camera-snapshots DIR`: each camera's newest image as `DIR/<camera>.png` and its stamp as
/// `DIR/<camera>.json`, each replaced atomically at most every `every`.
#[derive(Resource, Debug)]
pub struct CameraSnapshots {
    pub dir: PathBuf,
    pub every: Duration,
    last: HashMap<String, Instant>,
    failed: bool,
}

impl CameraSnapshots {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            every: Duration::from_millis(500),
            last: HashMap::new(),
            failed: false,
        }
    }
}

pub(super) fn write_snapshots(
    snapshots: Option<ResMut<CameraSnapshots>>,
    mut ready: MessageReader<CameraFrameReady>,
    frames: Res<CameraImages>,
) {
    let Some(mut snapshots) = snapshots else {
        ready.clear();
        return;
    };
    let mut newest: HashMap<&str, &Arc<CameraFrame>> = HashMap::new();
    for CameraFrameReady(frame) in ready.read() {
        newest.insert(frame.camera.as_str(), frame);
    }
    let now = Instant::now();
    for (name, frame) in newest {
        let every = snapshots.every;
        if snapshots
            .last
            .get(name)
            .is_some_and(|t| now.duration_since(*t) < every)
        {
            continue;
        }
        snapshots.last.insert(name.to_string(), now);
        if let Err(e) = write_snapshot(&snapshots.dir, frame, frames.received()) {
            if !snapshots.failed {
                error!("--camera-snapshots {}: {e}", snapshots.dir.display());
            }
            snapshots.failed = true;
        }
    }
}

/// `dir/<camera>.png` and `dir/<camera>.json`, each written aside and renamed into place.
fn write_snapshot(dir: &Path, frame: &CameraFrame, received: u64) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let rgba: Vec<u8> = frame
        .rgb
        .chunks_exact(3)
        .flat_map(|p| [p[0], p[1], p[2], 255])
        .collect();
    let image = Image::new(
        Extent3d {
            width: frame.width,
            height: frame.height,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        rgba,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::MAIN_WORLD,
    );
    let png = dir.join(format!("{}.png", frame.camera));
    let tmp = dir.join(format!("{}.tmp.png", frame.camera));
    image
        .try_into_dynamic()
        .map_err(|e| e.to_string())?
        .to_rgb8()
        .save(&tmp)
        .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, &png).map_err(|e| e.to_string())?;
    let s = &frame.state;
    let tag = serde_json::json!({
        "camera": frame.camera,
        "episode": frame.episode,
        "step": frame.step,
        "sim_time": frame.sim_time,
        "width": frame.width,
        "height": frame.height,
        "pos": s.pos,
        "quat_world": s.quat_world,
        "intrinsics": s.intrinsics,
        "frames_received": received,
    });
    let json = dir.join(format!("{}.json", frame.camera));
    let tmp = dir.join(format!("{}.json.tmp", frame.camera));
    std::fs::write(&tmp, tag.to_string()).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, &json).map_err(|e| e.to_string())
}
