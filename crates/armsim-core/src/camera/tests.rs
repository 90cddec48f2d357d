//! The camera model: intrinsics, look-at, the frame conventions and projection.

use std::f32::consts::PI;

use super::*;

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).length() < 1e-5
}

fn fixed(pos: [f32; 3], look_at_m: [f32; 3]) -> CameraSpec {
    CameraSpec::new(
        "cam",
        CameraMount::Fixed {
            pos_m: pos,
            look_at_m,
        },
    )
}

fn state_of(spec: &CameraSpec) -> CameraState {
    let robot = crate::robot::mjcf::parse_mjcf(include_str!("../../../../assets/robots/arm6.xml"))
        .expect("arm6 loads");
    let placement = spec.placement(&robot).expect("a fixed camera resolves");
    CameraState::new(spec, &placement.world_pose(&[]).unwrap())
}

#[test]
fn defaults_and_intrinsics() {
    let spec = fixed([1.0, 0.0, 0.0], [0.0; 3]);
    assert_eq!((spec.width, spec.height), (256, 256));
    assert_eq!(
        (spec.fov_deg, spec.rate_hz, spec.depth),
        (60.0, 30.0, false)
    );
    let f = 128.0 / 30f32.to_radians().tan();
    let k = spec.intrinsics();
    assert!(
        (k[0][0] - f).abs() < 1e-3 && (k[1][1] - f).abs() < 1e-3,
        "{k:?}"
    );
    assert_eq!([k[0][2], k[1][2]], [128.0, 128.0]);
    assert_eq!(
        [k[0][1], k[1][0], k[2][0], k[2][1], k[2][2]],
        [0., 0., 0., 0., 1.]
    );

    let wide = CameraSpec {
        width: 320,
        height: 240,
        fov_deg: 90.0,
        ..spec
    };
    let k = wide.intrinsics();
    assert!((k[1][1] - 120.0).abs() < 1e-3, "{k:?}");
    assert_eq!([k[0][2], k[1][2]], [160.0, 120.0]);
    assert!((wide.period_s() - 1.0 / 30.0).abs() < 1e-9);
}

#[test]
fn look_at_keeps_world_up_and_projects_like_a_pinhole() {
    // At x = 2 looking back at the origin: forward is −X, up +Z, so left is −Y.
    let q = look_at(Vec3::new(2.0, 0.0, 0.0), Vec3::ZERO);
    assert!(close(q * Vec3::X, Vec3::NEG_X));
    assert!(close(q * Vec3::Z, Vec3::Z));
    assert!(close(q * Vec3::Y, Vec3::NEG_Y));

    let s = state_of(&fixed([2.0, 0.0, 0.0], [0.0; 3]));
    assert_eq!(s.pos, [2.0, 0.0, 0.0]);
    // w first: a half turn about Z is (w, x, y, z) = (0, 0, 0, ±1).
    assert!(s.quat_world[0].abs() < 1e-6 && (s.quat_world[3].abs() - 1.0).abs() < 1e-6);
    let [u, v] = s.project(Vec3::ZERO).unwrap();
    assert!((u - 128.0).abs() < 1e-3 && (v - 128.0).abs() < 1e-3);
    // Above the target: higher in the image (smaller v); world −Y is the camera's left.
    let [_, v_up] = s.project(Vec3::new(0.0, 0.0, 0.1)).unwrap();
    let [u_left, _] = s.project(Vec3::new(0.0, -0.1, 0.0)).unwrap();
    let f = s.intrinsics[0][0];
    assert!((v_up - (128.0 - f * 0.05)).abs() < 1e-2, "{v_up}");
    assert!((u_left - (128.0 - f * 0.05)).abs() < 1e-2, "{u_left}");
    // Behind the camera: nothing.
    assert_eq!(s.project(Vec3::new(3.0, 0.0, 0.0)), None);
}

#[test]
fn looking_straight_down_puts_world_x_up_in_the_image() {
    let q = look_at(Vec3::new(0.0, 0.0, 2.0), Vec3::ZERO);
    assert!(close(q * Vec3::X, Vec3::NEG_Z));
    assert!(close(q * Vec3::Z, Vec3::X));
    assert!(q.is_normalized());
}

#[test]
fn renderer_frame_conversions() {
    // The renderer's camera looks along its −Z with +Y up: in armsim's frame, +X and +Z.
    let gl = gl_from_armsim(Quat::IDENTITY);
    assert!(close(gl * Vec3::NEG_Z, Vec3::X));
    assert!(close(gl * Vec3::Y, Vec3::Z));
    assert!(close(gl * Vec3::X, Vec3::NEG_Y));
    let q = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 2.0);
    let back = armsim_from_gl(gl_from_armsim(q));
    assert!(back.dot(q).abs() > 1.0 - 1e-6, "{back:?} vs {q:?}");
}

#[test]
fn attached_cameras_ride_on_their_frame() {
    let robot = crate::robot::mjcf::parse_mjcf(include_str!("../../../../assets/robots/arm6.xml"))
        .expect("arm6 loads");
    let wrist = robot.link_index("wrist_3_link").unwrap();
    // On the site `ee` (0.107 m along the wrist link's Z), 1 cm further along.
    let spec = CameraSpec::new(
        "wrist",
        CameraMount::Attached {
            frame: "ee".into(),
            pos_m: [0.0, 0.0, 0.01],
            quat_xyzw: [0.0, 0.0, 0.0, 1.0],
        },
    );
    let Some(Placement::Link { link, pose }) = spec.placement(&robot) else {
        panic!("the site resolves to a link");
    };
    assert_eq!(link, wrist);
    assert!(close(pose.translation, Vec3::new(0.0, 0.0, 0.117)));
    // The link somewhere in the world: the camera follows.
    let mut poses = vec![Pose::IDENTITY; robot.links.len()];
    poses[wrist] = Pose::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_y(PI));
    let world = Placement::Link { link, pose }.world_pose(&poses).unwrap();
    assert!(close(world.translation, Vec3::new(1.0, 2.0, 3.0 - 0.117)));
    assert!(close(world.rotation * Vec3::X, Vec3::NEG_X));
    assert_eq!(Placement::Link { link: 99, pose }.world_pose(&poses), None);

    let missing = CameraSpec::new(
        "nowhere",
        CameraMount::Attached {
            frame: "no_such_frame".into(),
            pos_m: [0.0; 3],
            quat_xyzw: [0.0, 0.0, 0.0, 1.0],
        },
    );
    assert_eq!(missing.placement(&robot), None);
}
