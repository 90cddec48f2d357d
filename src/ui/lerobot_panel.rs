//! The panel's LeRobot controls: Record LeRobot, and while a dataset records its episode count,
//! the open episode's length, the last episode saved, and End episode, Re-record and Stop
//! (the keys N, ← and Esc do the same while a dataset records).

use bevy::prelude::*;
use bevy_egui::egui;

use crate::lerobot::{LeRobotCommand, LeRobotRecording};

/// The colour of a recording that failed.
const FAILED: egui::Color32 = egui::Color32::from_rgb(220, 70, 70);

pub(super) fn lerobot_section(
    ui: &mut egui::Ui,
    rec: &LeRobotRecording,
    requests: &mut Messages<LeRobotCommand>,
    scene_id: &str,
) {
    ui.separator();
    match rec.progress() {
        Some((root, episodes, frames)) => {
            ui.label(format!(
                "LeRobot dataset {}: {episodes} episodes, {frames} frames",
                root.display()
            ));
            if let Some((open, last)) = rec.episode_status() {
                ui.small(match open {
                    Some(rows) => format!("open episode: {rows} frames"),
                    None => "no episode open (rows are recorded while RUNNING)".to_string(),
                });
                if let Some(last) = last {
                    ui.small(format!("last saved: {last}"));
                }
            }
            ui.horizontal(|ui| {
                if ui
                    .button("End episode")
                    .on_hover_text("end the open episode now and keep it (N)")
                    .clicked()
                {
                    requests.write(LeRobotCommand::EndEpisode);
                }
                if ui
                    .button("Re-record")
                    .on_hover_text("discard the open episode and reset the scene (←)")
                    .clicked()
                {
                    requests.write(LeRobotCommand::Rerecord);
                }
                if ui
                    .button("Stop LeRobot")
                    .on_hover_text("finish the dataset, keeping the open episode (Esc)")
                    .clicked()
                {
                    requests.write(LeRobotCommand::Stop);
                }
            });
        }
        None => {
            if ui
                .button("Record LeRobot")
                .on_hover_text("a LeRobot v3.0 dataset: joints and the scene's cameras")
                .clicked()
            {
                requests.write(LeRobotCommand::Start {
                    root: crate::lerobot::default_root(scene_id),
                });
            }
        }
    }
    match &rec.last {
        Some(Ok(s)) => {
            ui.small(format!("wrote {s}"));
        }
        Some(Err(e)) => {
            ui.colored_label(FAILED, e);
        }
        None => {}
    }
}
