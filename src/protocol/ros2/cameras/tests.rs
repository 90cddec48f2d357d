//! Camera images as ROS messages: pixels, intrinsics, the optical frame's axes and the rate cap.

use std::sync::Arc;

use armsim_core::camera::CameraState;
use bevy::math::{Quat, Vec3};

use super::*;

fn frame(camera: &str, episode: u64, step: u64, look: Quat) -> CameraFrame {
    CameraFrame {
        camera: camera.to_string(),
        episode,
        step,
        sim_time: step as f64 / 240.0,
        width: 4,
        height: 2,
        state: CameraState {
            pos: [1.0, 2.0, 3.0],
            quat_world: [look.w, look.x, look.y, look.z],
            intrinsics: [[500.0, 0.0, 2.0], [0.0, 500.0, 1.0], [0.0, 0.0, 1.0]],
        },
        rgb: Arc::from(vec![7u8; 4 * 2 * 3]),
        depth: None,
    }
}

#[test]
fn an_image_is_rgb8_rows_with_its_intrinsics() {
    let m = messages(&frame("front", 0, 240, Quat::IDENTITY));
    assert_eq!(m.image.encoding, "rgb8");
    assert_eq!((m.image.width, m.image.height, m.image.step), (4, 2, 12));
    assert_eq!(m.image.data, vec![7u8; 24]);
    assert_eq!(m.image.header.frame_id, "front_optical_frame");
    assert_eq!(m.image.header.stamp.sec, 1);
    assert_eq!(m.info.header, m.image.header);
    assert_eq!(m.info.k, [500.0, 0.0, 2.0, 0.0, 500.0, 1.0, 0.0, 0.0, 1.0]);
    assert_eq!(m.info.p[0..4], [500.0, 0.0, 2.0, 0.0]);
    assert_eq!(m.info.d, vec![0.0; 5]);
}

#[test]
fn the_optical_frame_looks_where_the_camera_looks() {
    // A camera turned 90° to the left: it looks along world +Y, its left is world -X.
    let look = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let m = messages(&frame("side", 0, 0, look));
    let r = m.optical.transform.rotation;
    let q = Quat::from_xyzw(r.x as f32, r.y as f32, r.z as f32, r.w as f32);
    let forward = look * Vec3::X;
    let right = look * -Vec3::Y;
    let down = look * -Vec3::Z;
    assert!(
        (q * Vec3::Z).distance(forward) < 1e-5,
        "optical +Z is forward"
    );
    assert!((q * Vec3::X).distance(right) < 1e-5, "optical +X is right");
    assert!((q * Vec3::Y).distance(down) < 1e-5, "optical +Y is down");
    assert_eq!(m.optical.header.frame_id, "world");
    assert_eq!(m.optical.child_frame_id, "side_optical_frame");
    let t = m.optical.transform.translation;
    assert_eq!((t.x, t.y, t.z), (1.0, 2.0, 3.0));
}

#[test]
fn the_schedule_caps_each_camera_in_sim_time() {
    let mut s = CameraSchedule::new(&["a".to_string(), "b".to_string()], 10);
    let sent: Vec<u64> = (0..100)
        .filter(|&step| s.admit(&frame("a", 0, step, Quat::IDENTITY)))
        .collect();
    assert_eq!(sent, vec![0, 24, 48, 72, 96]);
    // Another camera keeps its own schedule; an unnamed camera never goes.
    assert!(s.admit(&frame("b", 0, 50, Quat::IDENTITY)));
    assert!(!s.admit(&frame("c", 0, 0, Quat::IDENTITY)));
    // A reset starts again at once.
    assert!(s.admit(&frame("a", 1, 3, Quat::IDENTITY)));
    assert!(!s.admit(&frame("a", 1, 10, Quat::IDENTITY)));
    // The cap holds at the top rate.
    let mut fast = CameraSchedule::new(&["a".to_string()], 1000);
    assert!(fast.admit(&frame("a", 0, 0, Quat::IDENTITY)));
    assert!(!fast.admit(&frame("a", 0, 7, Quat::IDENTITY)));
    assert!(fast.admit(&frame("a", 0, 8, Quat::IDENTITY)));
}
