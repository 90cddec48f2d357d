//! MetaSim states and actions: the Bevy-free snapshot, views and action mapping
//! from `armsim_core::state`, plus the snapshot of a running app with its session, clock and
//! referee filled in.

pub use armsim_core::state::*;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use bevy::prelude::Resource;

use armsim_core::camera::CameraState;

/// One rendered image of one camera, tagged with the state it shows. The renderer (the window,
/// or `--headless --cameras`) makes them; this crate only keeps and hands them out.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraFrame {
    pub camera: String,
    /// Resets since start (`SimClock::episode`) when it was taken.
    pub episode: u64,
    /// The step whose state it shows (`SimClock::steps`: steps since load or reset).
    pub step: u64,
    /// Sim time of that step, seconds.
    pub sim_time: f64,
    pub width: u32,
    pub height: u32,
    /// Where the camera was at that step (MetaSim's pos, `quat_world` w first, intrinsics).
    pub state: CameraState,
    /// RGB8 (sRGB), `height` rows of `width * 3` bytes, the top row first.
    pub rgb: Arc<[u8]>,
    /// A `depth: true` camera's depth: `height` rows of `width` values, the top row first, in
    /// metres along the optical axis (the distance from the camera's plane, not along the
    /// pixel's ray); `f32::INFINITY` where nothing was hit. `None` for other cameras.
    pub depth: Option<Arc<[f32]>>,
}

/// Each scene camera's newest image, by camera name. Render-free: the app's renderer (window,
/// or `--headless --cameras`) fills it as each image is read back (`armsim::ui::cameras`);
/// without a renderer it is absent, and the state's cameras carry poses and intrinsics only.
///
/// The window renders a camera only while something uses its images (`armsim::ui::
/// camera_demand`): clients say so by asking ([`ask`](Self::ask)), and a camera the renderer
/// has stopped is *idle*: its last image no longer shows the present, so [`get`](Self::get)
/// hands out none until a fresh one arrives.
#[derive(Resource, Clone, Debug, Default)]
pub struct CameraImages {
    latest: BTreeMap<String, Arc<CameraFrame>>,
    received: u64,
    /// Cameras the renderer does not keep up to date at present.
    idle: BTreeSet<String>,
    /// When a client last asked for each camera's images, and for all of them.
    asked: BTreeMap<String, Instant>,
    asked_all: Option<Instant>,
}

impl CameraImages {
    /// Keeps `image` as its camera's newest unless a newer one (later episode, or later step of
    /// the same episode) is already there.
    pub fn insert(&mut self, image: Arc<CameraFrame>) {
        self.received += 1;
        let newer = self
            .latest
            .get(&image.camera)
            .is_none_or(|old| (old.episode, old.step) <= (image.episode, image.step));
        if newer {
            self.latest.insert(image.camera.clone(), image);
        }
    }

    /// Camera `camera`'s newest image, if one has arrived and the camera is not idle
    /// ([`is_idle`](Self::is_idle)): what clients are handed.
    pub fn get(&self, camera: &str) -> Option<&Arc<CameraFrame>> {
        if self.idle.contains(camera) {
            return None;
        }
        self.latest.get(camera)
    }

    /// Camera `camera`'s newest image, idle or not.
    pub fn newest(&self, camera: &str) -> Option<&Arc<CameraFrame>> {
        self.latest.get(camera)
    }

    /// Every camera's newest image that [`get`](Self::get) hands out, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Arc<CameraFrame>)> {
        self.latest
            .iter()
            .filter(|(k, _)| !self.idle.contains(*k))
            .map(|(k, v)| (k.as_str(), v))
    }

    /// Whether the renderer has stopped keeping camera `camera` up to date (nothing used its
    /// images): its newest image is old, and asking starts it again.
    pub fn is_idle(&self, camera: &str) -> bool {
        self.idle.contains(camera)
    }

    /// The renderer stops (`true`) or has a fresh image again (`false`) for camera `camera`.
    pub fn set_idle(&mut self, camera: &str, idle: bool) {
        if idle {
            self.idle.insert(camera.to_string());
        } else {
            self.idle.remove(camera);
        }
    }

    /// A client asks for camera `camera`'s images (`None`: every camera's) now: the window
    /// renders it for a while after.
    pub fn ask(&mut self, camera: Option<&str>) {
        let now = Instant::now();
        match camera {
            Some(name) => {
                self.asked.insert(name.to_string(), now);
            }
            None => self.asked_all = Some(now),
        }
    }

    /// When a client last asked for camera `camera`'s images (by name or all together).
    pub fn asked(&self, camera: &str) -> Option<Instant> {
        self.asked.get(camera).copied().max(self.asked_all)
    }

    /// Images received since start, all cameras together.
    pub fn received(&self) -> u64 {
        self.received
    }
}

/// Puts camera `name`'s newest image (if any) on its state entry: the pixels, and the step and
/// sim time they show.
pub fn attach_image(entry: &mut CameraEntry, image: &CameraFrame) {
    entry.image_step = Some(image.step);
    entry.image_sim_time = Some(image.sim_time);
    entry.has_rgb = true;
    entry.rgb = Some(image.rgb.clone());
    entry.has_depth = image.depth.is_some();
    entry.depth = image.depth.clone();
}

/// Every scene camera of a running app where it is now (MetaSim's `CameraState`: pos,
/// `quat_world`, intrinsics, size), with its newest image where [`CameraImages`] holds one.
pub fn camera_states_app(world: &bevy::prelude::World) -> BTreeMap<String, CameraEntry> {
    let Some(scene) = world.get_resource::<crate::sim::SimScene>() else {
        return BTreeMap::new();
    };
    let mut cameras = camera_states(&scene.0.cameras(), &crate::sim::sim_view(world));
    if let Some(images) = world.get_resource::<CameraImages>() {
        for (name, entry) in cameras.iter_mut() {
            if let Some(image) = images.get(name) {
                attach_image(entry, image);
            }
        }
    }
    cameras
}

/// The snapshot of a running app, with `cameras` filled from the scene's cameras
/// ([`camera_states_app`]: poses and intrinsics now, plus the newest rendered image where
/// [`CameraImages`] holds one) and `extras` filled from the session and the referee:
/// `session` (state), `sim_time_s`, `steps`, and `referee` (rule book, play mode, score, play
/// time). What a tool embedding armsim asks for.
pub fn snapshot_app(world: &bevy::prelude::World) -> TensorState {
    let mut state = snapshot(&crate::sim::sim_view(world));
    state.cameras = camera_states_app(world);
    if let Some(session) = world.get_resource::<crate::session::Session>() {
        state
            .extras
            .insert("session".into(), session.state().as_str().into());
    }
    if let Some(clock) = world.get_resource::<crate::sim::SimClock>() {
        state
            .extras
            .insert("sim_time_s".into(), clock.sim_time.into());
        state.extras.insert("steps".into(), clock.steps.into());
    }
    if let Some(referee) = world.get_resource::<crate::referee::plugin::Referee>() {
        let book = &referee.book;
        state.extras.insert(
            "referee".into(),
            serde_json::json!({
                "rules": book.name(),
                "play_mode": book.play_mode().as_str(),
                "score": book.score(),
                "play_time_s": book.play_time(),
            }),
        );
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    use armsim_core::camera::{CameraMount, CameraSpec, look_at};
    use bevy::math::{Quat, Vec3};

    /// The default scene's world as built (no frame run, no step taken).
    fn app() -> bevy::app::App {
        let scene = armsim_core::scene::load_bundled_scene("default_scene")
            .expect("bundled")
            .expect("default scene loads");
        crate::headless_app(Arc::new(scene), &crate::SimOptions::default())
    }

    fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < tol)
    }

    /// A fixed camera looking along world −Y from (0, 1, 0): +X forward is world −Y, +Y left is
    /// world +X, +Z up is world +Z — a turn of −90° about Z.
    #[test]
    fn fixed_camera_state_from_its_look_at() {
        let spec = CameraSpec {
            width: 320,
            height: 240,
            fov_deg: 90.0,
            ..CameraSpec::new(
                "side",
                CameraMount::Fixed {
                    pos_m: [0.0, 1.0, 0.0],
                    look_at_m: [0.0, -1.0, 0.0],
                },
            )
        };
        let app = app();
        let view = crate::sim::sim_view(app.world());
        let states = camera_states(std::slice::from_ref(&spec), &view);
        let cam = &states["side"];
        assert_eq!(cam.pos, [0.0, 1.0, 0.0]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let q = cam.quat_world;
        // ±q is the same rotation.
        let sign = q[0].signum();
        let q = q.map(|v| v * sign);
        assert!(close(&q, &[h, 0.0, 0.0, -h], 1e-5), "{q:?}");
        // 90° vertical field of view on 240 rows: f = 120 px; centre (160, 120).
        let k = cam.intrinsics;
        assert!(close(&k[0], &[120.0, 0.0, 160.0], 1e-3), "{k:?}");
        assert!(close(&k[1], &[0.0, 120.0, 120.0], 1e-3), "{k:?}");
        assert_eq!(k[2], [0.0, 0.0, 1.0]);
        assert_eq!((cam.width, cam.height), (320, 240));
        assert!(!cam.has_rgb && cam.rgb.is_none() && cam.image_step.is_none());
    }

    #[test]
    fn snapshot_app_carries_the_scene_cameras_and_the_newest_image() {
        let mut app = app();
        let state = snapshot_app(app.world());
        let names: Vec<&str> = state.cameras.keys().map(String::as_str).collect();
        assert_eq!(names, ["front", "wrist"]);
        let front = &state.cameras["front"];
        let pos = Vec3::new(1.3, -0.6, 1.5);
        let q = look_at(pos, Vec3::new(0.5, 0.0, 1.05));
        assert!(close(&front.pos, &pos.to_array(), 1e-6));
        assert!(
            close(&front.quat_world, &[q.w, q.x, q.y, q.z], 1e-5),
            "{:?}",
            front.quat_world
        );
        // The optical axis (+X) points at the look-at point.
        let w = front.quat_world;
        let axis = Quat::from_xyzw(w[1], w[2], w[3], w[0]) * Vec3::X;
        let to = (Vec3::new(0.5, 0.0, 1.05) - pos).normalize();
        assert!(axis.dot(to) > 0.99999, "{axis} vs {to}");
        let f = 128.0 / 30f32.to_radians().tan();
        assert!(close(&front.intrinsics[0], &[f, 0.0, 128.0], 1e-3));
        assert!(close(&front.intrinsics[1], &[0.0, f, 128.0], 1e-3));
        assert_eq!((front.width, front.height), (256, 256));
        // The wrist camera rides on the arm: somewhere above the table, not at the origin.
        assert!(state.cameras["wrist"].pos[2] > 0.9);

        // JSON: pose, intrinsics and size; no pixels, no image stamp yet.
        let json = serde_json::to_value(&state).unwrap();
        let fj = &json["cameras"]["front"];
        assert_eq!(fj["width"], 256);
        assert_eq!(fj["quat_world"].as_array().unwrap().len(), 4);
        assert_eq!(fj["has_rgb"], false);
        assert!(fj.get("rgb").is_none() && fj.get("image_step").is_none());
        let back: TensorState = serde_json::from_value(json).unwrap();
        assert_eq!(back.cameras["front"].pos, front.pos);
        assert_eq!(state.to_dict().cameras["front"].pos, front.pos);

        // A renderer's image shows up with its step.
        let image = CameraFrame {
            camera: "front".into(),
            episode: 0,
            step: 8,
            sim_time: 8.0 / 240.0,
            width: 256,
            height: 256,
            state: front.camera_state(),
            rgb: vec![7u8; 256 * 256 * 3].into(),
            depth: None,
        };
        let mut images = CameraImages::default();
        images.insert(Arc::new(image.clone()));
        // An older one does not replace it.
        images.insert(Arc::new(CameraFrame {
            step: 4,
            ..image.clone()
        }));
        assert_eq!(images.received(), 2);
        app.world_mut().insert_resource(images);
        let state = snapshot_app(app.world());
        let front = &state.cameras["front"];
        assert_eq!(front.image_step, Some(8));
        assert!(front.has_rgb && !front.has_depth);
        assert_eq!(front.rgb.as_ref().unwrap().len(), 256 * 256 * 3);
        assert!(state.cameras["wrist"].rgb.is_none());
    }

    #[test]
    fn an_idle_cameras_image_is_not_handed_out_and_asking_is_remembered() {
        let frame = |step| {
            Arc::new(CameraFrame {
                camera: "front".into(),
                episode: 0,
                step,
                sim_time: step as f64 / 240.0,
                width: 1,
                height: 1,
                state: CameraState {
                    pos: [0.0; 3],
                    quat_world: [1.0, 0.0, 0.0, 0.0],
                    intrinsics: [[0.0; 3]; 3],
                },
                rgb: vec![1, 2, 3].into(),
                depth: None,
            })
        };
        let mut images = CameraImages::default();
        images.insert(frame(8));
        assert_eq!(images.get("front").map(|f| f.step), Some(8));
        images.set_idle("front", true);
        assert!(images.is_idle("front") && images.get("front").is_none());
        assert_eq!(images.iter().count(), 0);
        assert_eq!(images.newest("front").map(|f| f.step), Some(8));
        images.insert(frame(16));
        images.set_idle("front", false);
        assert_eq!(images.get("front").map(|f| f.step), Some(16));

        assert_eq!(images.asked("front"), None);
        images.ask(Some("front"));
        let one = images.asked("front").expect("asked");
        assert_eq!(images.asked("wrist"), None);
        images.ask(None);
        assert!(images.asked("wrist").is_some());
        assert!(images.asked("front").unwrap() >= one);
    }
}
