//! What a client may ask of a LeRobot dataset being recorded, the same over every protocol that
//! offers it (the monitor port's `(lerobot …)`, revA's `LEROBOT_*` ui_cmds) and from the panel
//! and the keys: end the open episode and keep it, discard it and record it again from the
//! scene's start, or stop the recording.

/// A request to the LeRobot recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetControl {
    /// End the open episode now; it is kept (if it is a second or longer) and the next starts
    /// at the next frame. LeRobot's → key.
    EndEpisode,
    /// Discard the open episode and reset the scene, so it is recorded again from the start.
    /// LeRobot's ← key.
    Rerecord,
    /// Stop recording: the open episode is kept and the dataset finished. LeRobot's Esc key.
    Stop,
}

impl DatasetControl {
    pub const ALL: [DatasetControl; 3] = [
        DatasetControl::EndEpisode,
        DatasetControl::Rerecord,
        DatasetControl::Stop,
    ];

    /// The word the monitor port takes after `lerobot`: `end`, `rerecord`, `stop`.
    pub fn word(self) -> &'static str {
        match self {
            DatasetControl::EndEpisode => "end",
            DatasetControl::Rerecord => "rerecord",
            DatasetControl::Stop => "stop",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.word() == word)
    }

    /// The revA event that answers it once the recorder has it.
    pub fn event(self) -> &'static str {
        match self {
            DatasetControl::EndEpisode => "EPISODE_ENDED",
            DatasetControl::Rerecord => "EPISODE_DISCARDED",
            DatasetControl::Stop => "RECORDING_STOPPED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_events_are_one_to_one() {
        for c in DatasetControl::ALL {
            assert_eq!(DatasetControl::parse(c.word()), Some(c));
        }
        assert_eq!(DatasetControl::parse("next"), None);
        assert_eq!(DatasetControl::Rerecord.event(), "EPISODE_DISCARDED");
    }
}
