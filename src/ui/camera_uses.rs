//! What may use a window camera's images, and each camera's on-demand rendering state: the
//! cameras (`super::cameras`) render by them, and the demand (`super::camera_demand`) sets them
//! from what the app is doing.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy::render::render_resource::PipelineCache;

/// How long a camera keeps rendering after a client last asked for its images: a client that
/// polls gets each new image at the camera's rate, and one that stops costs nothing after this.
pub const LEASE: Duration = Duration::from_secs(2);

/// Pipelines compile in the background: a warm-up image counts once none has waited for this
/// many frames.
const IDLE_FRAMES: u32 = 3;
/// A camera that sees nothing but the sky never shows something; it is warm after this.
const BLANK_WARM: Duration = Duration::from_secs(5);
/// The warm-up ends after this whatever the images show.
const MAX_WARM: Duration = Duration::from_secs(30);

/// What uses a camera's images.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Use {
    WarmUp,
    Recording,
    Snapshots,
    Client,
    Panel,
}

impl Use {
    pub(super) fn text(self) -> &'static str {
        match self {
            Use::WarmUp => "its first images, while its pipelines compile",
            Use::Recording => "a LeRobot recording",
            Use::Snapshots => "--camera-snapshots",
            Use::Client => "a client asked for its images",
            Use::Panel => "the panel shows it",
        }
    }
}

/// What the app is doing now that may use one camera's images.
#[derive(Clone, Copy, Debug, Default)]
pub struct Uses {
    /// Its warm-up has not ended.
    pub warming: bool,
    pub recording: bool,
    pub snapshots: bool,
    /// When a client last asked for its images.
    pub asked: Option<Instant>,
    /// Its thumbnail was on screen last frame.
    pub on_panel: bool,
}

impl Uses {
    /// What uses the camera at `now`: a client's request within [`LEASE`] of it counts.
    pub fn at(&self, now: Instant) -> Vec<Use> {
        let asked = self
            .asked
            .is_some_and(|t| now.saturating_duration_since(t) < LEASE);
        [
            (self.warming, Use::WarmUp),
            (self.recording, Use::Recording),
            (self.snapshots, Use::Snapshots),
            (asked, Use::Client),
            (self.on_panel, Use::Panel),
        ]
        .into_iter()
        .filter_map(|(on, u)| on.then_some(u))
        .collect()
    }
}

/// A window camera's on-demand state (on `super::cameras::SimCamera`).
#[derive(Debug, Default)]
pub struct Rendering {
    /// It renders at its rate.
    pub(super) on: bool,
    /// Counts its starts: an image from an earlier run is not fresh.
    pub(super) run: u64,
    /// Its warm-up has ended ([`warmed_up`]).
    pub(super) warmed: bool,
    /// Its first warm-up render.
    pub(super) warm_since: Option<Instant>,
}

impl Rendering {
    /// Follows what uses the camera: `Some(true)` when it starts rendering (a new run),
    /// `Some(false)` when it stops, `None` when nothing changes.
    pub fn follow(&mut self, uses: &[Use]) -> Option<bool> {
        let on = !uses.is_empty();
        if on == self.on {
            return None;
        }
        self.on = on;
        if on {
            self.run += 1;
        }
        Some(on)
    }
}

/// Whether a warm-up image ends the warm-up: it shows something and no pipeline was waiting
/// for [`IDLE_FRAMES`] frames when it was taken (or it shows nothing, but the camera has warmed
/// for [`BLANK_WARM`] already), or the warm-up has lasted [`MAX_WARM`].
pub fn warmed_up(shows_something: bool, pipelines_idle: u32, warming_for: Duration) -> bool {
    (pipelines_idle >= IDLE_FRAMES && (shows_something || warming_for >= BLANK_WARM))
        || warming_for >= MAX_WARM
}

/// Present in the window: cameras render on demand. `panel` holds the cameras whose thumbnails
/// were on screen last frame (the panel fills it).
#[derive(Resource, Debug, Default)]
pub struct CameraDemand {
    pub(super) panel: BTreeSet<String>,
}

/// Frames in a row in which no pipeline waited to compile, counted by the render world (which
/// runs on its own thread in the window) and read by the main world.
#[derive(Resource, Clone, Debug, Default)]
pub(super) struct PipelinesIdle(Arc<AtomicU32>);

impl PipelinesIdle {
    pub(super) fn frames(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

pub(super) fn count_idle_frames(cache: Res<PipelineCache>, idle: Res<PipelinesIdle>) {
    if cache.waiting_pipelines().next().is_some() {
        idle.0.store(0, Ordering::Relaxed);
    } else {
        idle.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(1))
            })
            .ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_camera_renders_while_something_uses_it_and_a_request_for_a_lease() {
        let t0 = Instant::now();
        let nothing = Uses::default();
        assert!(nothing.at(t0).is_empty());
        let asked = Uses {
            asked: Some(t0),
            ..nothing
        };
        assert_eq!(asked.at(t0), [Use::Client]);
        assert_eq!(
            asked.at(t0 + LEASE - Duration::from_millis(1)),
            [Use::Client]
        );
        assert!(asked.at(t0 + LEASE).is_empty(), "the lease ends");
        let all = Uses {
            warming: true,
            recording: true,
            snapshots: true,
            asked: Some(t0),
            on_panel: true,
        };
        assert_eq!(
            all.at(t0),
            [
                Use::WarmUp,
                Use::Recording,
                Use::Snapshots,
                Use::Client,
                Use::Panel
            ]
        );
    }

    #[test]
    fn starts_and_stops_once_each_and_each_start_is_a_new_run() {
        let mut r = Rendering::default();
        assert!(!r.on);
        assert_eq!(r.follow(&[]), None, "idle from the start: nothing to say");
        assert_eq!(r.follow(&[Use::WarmUp]), Some(true));
        let first = r.run;
        assert_eq!(r.follow(&[Use::WarmUp, Use::Panel]), None);
        assert_eq!(r.follow(&[]), Some(false));
        assert_eq!(r.follow(&[]), None);
        assert_eq!(r.follow(&[Use::Client]), Some(true));
        assert!(r.run > first, "a fresh run: older images are not fresh");
    }

    #[test]
    fn the_warm_up_waits_for_compiled_pipelines_and_a_picture() {
        let s = Duration::from_secs;
        assert!(!warmed_up(true, 0, s(1)), "a pipeline still compiles");
        assert!(
            !warmed_up(false, IDLE_FRAMES, s(1)),
            "blank: the shader loads"
        );
        assert!(warmed_up(true, IDLE_FRAMES, s(0)));
        assert!(warmed_up(false, IDLE_FRAMES, BLANK_WARM), "only sky");
        assert!(!warmed_up(false, 0, s(29)));
        assert!(warmed_up(false, 0, MAX_WARM));
    }
}
