//! What a LeRobot dataset's rows are: the frame rate (a divisor of the step rate) and the
//! schema that turns the robot's joints into `observation.state` and `action` (the file's joints
//! as they are, or a LeRobot robot's motors in its units), from the command line or the scene.

use armsim_lerobot::{FileJoint, LeRobotRobot, Schema};
use bevy::prelude::*;

use crate::scene::Scene;
use crate::sim::SIM_HZ;

/// The dataset rate unless `--lerobot-fps` says otherwise: LeRobot's recorder's.
pub const DEFAULT_FPS: u32 = 30;

/// The steps per dataset frame at `fps`, or why that rate cannot be recorded.
pub fn steps_per_frame(fps: u32) -> Result<u64, String> {
    let hz = SIM_HZ as u32;
    if fps == 0 || !hz.is_multiple_of(fps) {
        return Err(format!(
            "a LeRobot dataset's rate must divide the {hz} Hz step rate (30, 60, 40, 24, 20, …), \
             not {fps}"
        ));
    }
    Ok(u64::from(hz / fps))
}

/// How recordings are made, from the command line (`--lerobot-fps`, `--lerobot-robot`): the
/// panel's button records with these too.
#[derive(Resource, Clone, Copy, Debug)]
pub struct LeRobotDefaults {
    pub fps: u32,
    /// The LeRobot robot schema; `None`: the scene's `extensions.armsim.lerobot.robot`, else the
    /// file's joints as they are.
    pub robot: Option<LeRobotRobot>,
}

impl Default for LeRobotDefaults {
    fn default() -> Self {
        Self {
            fps: DEFAULT_FPS,
            robot: None,
        }
    }
}

/// The schema a dataset of `scene` follows: `robot` (the command line's), else the scene's
/// `extensions.armsim.lerobot.robot`, else the file's joints as they are (radians,
/// `<joint>.pos`, the file's robot name). A LeRobot robot the file does not fit is an error
/// that says why.
pub fn schema_for(scene: &Scene, robot: Option<LeRobotRobot>) -> Result<Schema, String> {
    let from_scene = scene.config.extensions.armsim.lerobot_robot.as_deref();
    let robot = match (robot, from_scene) {
        (Some(r), _) => r,
        (None, Some(name)) => LeRobotRobot::parse(name)
            .map_err(|e| format!("extensions.armsim.lerobot.robot: {e}"))?,
        (None, None) => {
            let names: Vec<String> = scene.robot.joints.iter().map(|j| j.name.clone()).collect();
            return Ok(Schema::native(&scene.robot.name, &names));
        }
    };
    let joints: Vec<FileJoint> = scene
        .robot
        .joints
        .iter()
        .map(|j| FileJoint {
            name: j.name.clone(),
            revolute: j.kind == crate::robot::JointKind::Revolute,
            limits: j.limits,
        })
        .collect();
    let closed = scene
        .gripper_joint()
        .and_then(|g| scene.robot.joints[g].grip)
        .map(|(_, closed)| closed);
    Schema::for_robot(robot, &joints, closed)
}
