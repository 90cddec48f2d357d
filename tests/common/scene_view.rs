//! What the default scene should look like from its cameras, for the camera tests' pixel checks:
//! its colours in a rendered image (sRGB, flat material), and where its links, cubes and cameras
//! are at the home posture (the arm holds it while IDLE).

use armsim::robot::Pose;
use armsim::robot::kinematics::forward_kinematics;
use armsim::scene::Scene;
use armsim_core::camera::CameraState;
use glam::Vec3;

/// Every link's world pose at the scene's home posture.
pub fn home_link_poses(scene: &Scene) -> Vec<Pose> {
    let base = scene.config.robot.base_pose.to_pose();
    forward_kinematics(&scene.robot, &scene.home_q_full())
        .iter()
        .map(|p| base.mul(p))
        .collect()
}

/// The centre of the scene's object `name`.
pub fn object(scene: &Scene, name: &str) -> Vec3 {
    scene
        .config
        .objects
        .iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("the scene has no object {name}"))
        .pose
        .translation()
}

/// The state (pose, intrinsics) of the scene's camera `name` with the links at `links`.
pub fn camera_state(scene: &Scene, name: &str, links: &[Pose]) -> CameraState {
    let cameras = scene.cameras();
    let spec = cameras
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("the scene has no camera {name}"));
    let pose = spec
        .placement(&scene.robot)
        .and_then(|p| p.world_pose(links))
        .expect("the camera resolves");
    CameraState::new(spec, &pose)
}

pub fn red(&[r, g, b]: &[u8; 3]) -> bool {
    r > 120 && r > g.saturating_add(70) && r > b.saturating_add(70)
}

pub fn green(&[r, g, b]: &[u8; 3]) -> bool {
    g > 100 && g > r.saturating_add(50) && g > b.saturating_add(50)
}

pub fn blue(&[r, g, b]: &[u8; 3]) -> bool {
    b > 120 && b > r.saturating_add(70) && b > g.saturating_add(70)
}

/// The table's wood (not the arm's orange).
pub fn wood(&[r, g, b]: &[u8; 3]) -> bool {
    let (r, g, b) = (u16::from(r), u16::from(g), u16::from(b));
    r > 60 && r > g + 15 && g > b + 10 && !(r > 170 && r > b + 120 && r > g + 60)
}

/// arm6's links.
pub fn orange(&[r, g, b]: &[u8; 3]) -> bool {
    r > 170 && i32::from(r) - i32::from(b) > 120 && i32::from(r) - i32::from(g) > 60
}

/// The goal zone's gizmo.
pub fn yellow(&[r, g, b]: &[u8; 3]) -> bool {
    r > 200 && g > 170 && b < 80
}
