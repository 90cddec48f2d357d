//! The LeRobot flags: recording a dataset (`--record-lerobot`, `--lerobot-fps`,
//! `--lerobot-robot`) and replaying one's episode (`--replay-lerobot`, `--episode`,
//! `--replay-threshold`); `setup.rs` turns them into the app's `LeRobotSetup`.

use std::path::PathBuf;

use armsim::lerobot::DEFAULT_FPS;
use armsim::lerobot::replay::DEFAULT_THRESHOLD_DEG;
use armsim_lerobot::LeRobotRobot;

#[derive(clap::Args, Debug)]
pub struct LeRobotArgs {
    /// Record a LeRobot v3.0 dataset into this folder (created; it must not hold files yet):
    /// joint states and targets, and the scene's cameras as H.264 video where they render. An
    /// episode ends at each reset and at the referee's Success or TimeUp.
    #[arg(long, value_name = "DIR")]
    pub record_lerobot: Option<PathBuf>,

    /// Frames per second of the LeRobot dataset (a divisor of the 240 Hz step rate).
    #[arg(long, default_value_t = DEFAULT_FPS, value_name = "FPS")]
    pub lerobot_fps: u32,

    /// The dataset as LeRobot's own recorder writes it for this robot: so101_follower or
    /// so100_follower (LeRobot 0.6's names), or so_follower (LeRobot 0.4's, for both) (robot_type the robot's, its motors shoulder_pan.pos … gripper.pos, the
    /// body joints in degrees, the gripper 0–100 from closed to open over the file's range).
    /// The robot file's joints must be the robot's motors, checked at start. Default: the
    /// scene's extensions.armsim.lerobot.robot, else the file's joints in radians under the
    /// file's robot name. --replay-lerobot reads a dataset with it too.
    #[arg(long, value_name = "TYPE", value_parser = LeRobotRobot::parse)]
    pub lerobot_robot: Option<LeRobotRobot>,

    /// Replay a LeRobot v3 dataset's episode (armsim's, or a real arm's): its action rows drive
    /// the simulated arm at the dataset's rate from its first recorded state, and the report
    /// says how far the simulated observation.state goes from the recorded one, per joint, with
    /// the first frame past --replay-threshold. Headless, armsim exits when the episode ends.
    #[arg(long, value_name = "DATASET", conflicts_with = "replay")]
    pub replay_lerobot: Option<PathBuf>,

    /// Which episode --replay-lerobot replays (its episode_index).
    #[arg(
        long,
        default_value_t = 0,
        value_name = "N",
        requires = "replay_lerobot"
    )]
    pub episode: u64,

    /// The replay's threshold in degrees (the gripper's 0–100 takes it as a percentage).
    #[arg(long, default_value_t = DEFAULT_THRESHOLD_DEG, value_name = "DEG",
          value_parser = positive_degrees, requires = "replay_lerobot")]
    pub replay_threshold: f32,
}

fn positive_degrees(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "expected a positive number of degrees, found {s:?}"
        )),
    }
}
