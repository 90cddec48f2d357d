//! Requests to the LeRobot recorder from the protocols, the panel and the keys
//! ([`DatasetControl`]: end the episode, re-record it, stop), checked against what records: a
//! request while nothing records is refused with a reason the client is told.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::{LeRobotCommand, LeRobotRecording};
use armsim_core::protocol::dataset::DatasetControl;

/// The recorder's state and its command queue, for a system that takes requests.
#[derive(SystemParam)]
pub struct DatasetRequests<'w> {
    recording: Option<Res<'w, LeRobotRecording>>,
    commands: Option<ResMut<'w, Messages<LeRobotCommand>>>,
}

impl DatasetRequests<'_> {
    /// Whether a dataset is being recorded.
    pub fn recording(&self) -> bool {
        self.recording.as_ref().is_some_and(|r| r.is_active())
    }

    /// Queues `control` for the recorder (it acts before this frame's steps); says what will
    /// happen, or why nothing can.
    pub fn request(&mut self, control: DatasetControl) -> Result<String, String> {
        let (Some(rec), Some(commands)) = (self.recording.as_ref(), self.commands.as_mut()) else {
            return Err("this armsim records no LeRobot datasets".into());
        };
        let Some((root, episodes, _)) = rec.progress() else {
            return Err(
                "no LeRobot dataset is being recorded (--record-lerobot, or the panel's Record \
                 LeRobot)"
                    .into(),
            );
        };
        let what = match control {
            DatasetControl::EndEpisode => {
                format!(
                    "the open episode of {} ends (kept if it is a second or longer)",
                    root.display()
                )
            }
            DatasetControl::Rerecord => format!(
                "the open episode of {} is discarded and the scene reset to record it again",
                root.display()
            ),
            DatasetControl::Stop => format!(
                "recording into {} stops ({episodes} episode(s) ended so far)",
                root.display()
            ),
        };
        commands.write(LeRobotCommand::from(control));
        Ok(what)
    }
}

impl From<DatasetControl> for LeRobotCommand {
    fn from(control: DatasetControl) -> Self {
        match control {
            DatasetControl::EndEpisode => LeRobotCommand::EndEpisode,
            DatasetControl::Rerecord => LeRobotCommand::Rerecord,
            DatasetControl::Stop => LeRobotCommand::Stop,
        }
    }
}
