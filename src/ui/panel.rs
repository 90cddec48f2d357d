//! The egui side panel: session state and controls, sim time, real-time factor, step cost. The
//! 3D view is confined to the area right of the panel so nothing hides behind it.

use bevy::camera::Viewport;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

use crate::protocol::lockstep::plugin::LockstepServer;
use crate::protocol::sexp::plugin::{AgentPort, MonitorPort};
use crate::protocol::teleop::plugin::TeleopServer;
use crate::referee::plugin::Referee;
use crate::session::{ArmOwner, Session, SessionCommand, SessionState};
use crate::sim::{SimClock, SimScene, StepGate};
use crate::trajectory::plugin::{
    Recording, Replay, ReplayMode, TrajectoryCommand, default_recording_path,
};

pub(super) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, draw_panel);
}

fn state_colour(state: SessionState) -> egui::Color32 {
    match state {
        SessionState::Idle => egui::Color32::from_rgb(170, 170, 170),
        SessionState::Running => egui::Color32::from_rgb(90, 200, 110),
        SessionState::Paused => egui::Color32::from_rgb(230, 190, 70),
        SessionState::Error => egui::Color32::from_rgb(230, 80, 70),
    }
}

/// What the panel reads from the simulation.
#[derive(SystemParam)]
struct SimView<'w> {
    session: Res<'w, Session>,
    clock: Res<'w, SimClock>,
    gate: Res<'w, StepGate>,
    scene: Res<'w, SimScene>,
    owner: Res<'w, ArmOwner>,
}

/// Recording and replay state, and where to send requests.
#[derive(SystemParam)]
struct Trajectories<'w, 's> {
    recording: Res<'w, Recording>,
    replay: Option<Res<'w, Replay>>,
    requests: MessageWriter<'w, TrajectoryCommand>,
    replay_path: Local<'s, String>,
    replay_by_action: Local<'s, bool>,
}

/// The servers that are running, for the connections summary.
#[derive(SystemParam)]
struct Servers<'w> {
    teleop: Option<Res<'w, TeleopServer>>,
    agents: Option<Res<'w, AgentPort>>,
    monitors: Option<Res<'w, MonitorPort>>,
    lockstep: Option<Res<'w, LockstepServer>>,
}

#[allow(clippy::too_many_arguments)] // a Bevy system: each argument is one thing it reads or writes
fn draw_panel(
    mut contexts: EguiContexts,
    view: SimView,
    servers: Servers,
    mut traj: Trajectories,
    mut referee: ResMut<Referee>,
    mut commands: MessageWriter<SessionCommand>,
    mut camera: Query<&mut Camera, With<super::camera::OrbitCamera>>,
    window: Query<&Window, With<PrimaryWindow>>,
) -> Result {
    let SimView {
        session,
        clock,
        gate,
        scene,
        owner,
    } = view;
    let ctx = contexts.ctx_mut()?;
    let mut root = egui::Ui::new(
        ctx.clone(),
        "armsim_root".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    let width = egui::Panel::left("armsim_panel")
        .resizable(true)
        .default_size(260.0)
        .show(&mut root, |ui| {
            ui.heading("armsim");
            ui.label(format!("scene: {}", scene.0.config.scene_id));
            ui.separator();

            let state = session.state();
            ui.horizontal(|ui| {
                ui.label("state");
                ui.colored_label(
                    state_colour(state),
                    egui::RichText::new(state.as_str()).strong(),
                );
            });
            if let Some(why) = &session.error {
                ui.colored_label(state_colour(SessionState::Error), why);
            }
            if clock.waiting_for_external {
                let names: Vec<&str> = gate.waiting_on().collect();
                let who = if names.iter().any(|n| n.starts_with("lockstep")) {
                    "lockstep client"
                } else {
                    "sync agent"
                };
                ui.colored_label(
                    state_colour(SessionState::Paused),
                    format!("waiting for {who} ({})", names.join(", ")),
                );
            }
            ui.label(format!("arm controlled by {}", owner.describe()));
            ui.horizontal(|ui| {
                if ui.button("Start").clicked() {
                    commands.write(SessionCommand::Start);
                }
                if ui.button("Pause").clicked() {
                    commands.write(SessionCommand::Pause);
                }
                if ui.button("Step").clicked() {
                    commands.write(SessionCommand::Step(1));
                }
                if ui.button("Reset").clicked() {
                    commands.write(SessionCommand::Reset);
                }
            });
            ui.small(
                "Space run/pause · Right arrow step · Backspace reset · Home view · F12 screenshot",
            );
            ui.separator();

            let s = &clock.stats;
            egui::Grid::new("monitoring").num_columns(2).show(ui, |ui| {
                ui.label("sim time");
                ui.label(format!("{:.3} s", clock.sim_time));
                ui.end_row();
                ui.label("steps");
                ui.label(clock.steps.to_string());
                ui.end_row();
                ui.label("real-time factor");
                ui.label(format!("{:.2}", s.real_time_factor));
                ui.end_row();
                ui.label("steps/s");
                ui.label(format!("{:.0}", s.steps_per_second));
                ui.end_row();
                ui.label("step cost");
                ui.label(format!(
                    "{:.1} µs (p99 {:.1})",
                    s.mean_step_cost.as_secs_f64() * 1e6,
                    s.p99_step_cost.as_secs_f64() * 1e6
                ));
                ui.end_row();
            });
            ui.separator();

            egui::CollapsingHeader::new("Referee")
                .default_open(true)
                .show(ui, |ui| {
                    let book = &referee.book;
                    ui.label(format!(
                        "{} · {} · score {}",
                        book.name(),
                        book.play_mode(),
                        book.score()
                    ));
                    let time = match book.time_limit() {
                        Some(limit) => format!("{:.1} / {limit:.0} s", book.play_time()),
                        None => format!("{:.1} s", book.play_time()),
                    };
                    ui.label(format!("episode time {time}"));
                    if ui.button("Kick off").clicked() {
                        referee.kick_off(clock.sim_time);
                        commands.write(SessionCommand::Start);
                    }
                    let recent: Vec<String> = referee
                        .since(referee.last_seq().saturating_sub(5))
                        .map(|e| format!("{:>7.2} s  {}", e.sim_time, e.event))
                        .collect();
                    for line in recent.iter().rev() {
                        ui.small(line);
                    }
                });

            egui::CollapsingHeader::new("Record / replay")
                .default_open(false)
                .show(ui, |ui| trajectory_section(ui, &mut traj));

            egui::CollapsingHeader::new("Connections")
                .default_open(true)
                .show(ui, |ui| {
                    if let Some(t) = &servers.teleop {
                        let sessions = t.conns.values().filter(|c| c.session_id.is_some()).count();
                        ui.label(format!(
                            "teleop ws://{}{}: {} connected, {sessions} in session",
                            t.addr,
                            t.path,
                            t.conns.len()
                        ));
                        for c in t.conns.values().filter(|c| c.session_id.is_some()) {
                            let rtt_us =
                                c.counters.rtt_us.load(std::sync::atomic::Ordering::Relaxed);
                            ui.small(format!(
                                "  {} {} rtt {:.2} ms",
                                c.peer,
                                c.role.as_str(),
                                rtt_us as f64 / 1e3
                            ));
                        }
                    }
                    if let Some(a) = &servers.agents {
                        ui.label(format!(
                            "agents {}: {} connected{}",
                            a.addr,
                            a.conns.len(),
                            if a.sync { " (sync)" } else { "" }
                        ));
                    }
                    if let Some(m) = &servers.monitors {
                        ui.label(format!("monitors {}: {} connected", m.addr, m.conns.len()));
                    }
                    if let Some(l) = &servers.lockstep {
                        let client = l
                            .client()
                            .map_or("no client".to_string(), |c| c.to_string());
                        ui.label(format!("lockstep {}: {client}", l.addr));
                    }
                });
            ui.allocate_space(ui.available_size());
        })
        .response
        .rect
        .width();

    // Keep the 3D view to the right of the panel.
    if let (Ok(window), Ok(mut camera)) = (window.single(), camera.single_mut()) {
        let left = (width * window.scale_factor()) as u32;
        let size = UVec2::new(
            window.physical_width().saturating_sub(left).max(1),
            window.physical_height().max(1),
        );
        camera.viewport = Some(Viewport {
            physical_position: UVec2::new(left, 0),
            physical_size: size,
            ..default()
        });
    }
    Ok(())
}

fn trajectory_section(ui: &mut egui::Ui, traj: &mut Trajectories) {
    match traj.recording.progress() {
        Some((path, steps)) => {
            ui.label(format!("recording {} ({steps} steps)", path.display()));
            if ui.button("Stop recording").clicked() {
                traj.requests.write(TrajectoryCommand::StopRecording);
            }
        }
        None => {
            if ui.button("Record").clicked() {
                traj.requests.write(TrajectoryCommand::StartRecording {
                    path: default_recording_path(),
                    every: 1,
                });
            }
        }
    }
    match &traj.recording.last {
        Some(Ok(r)) => {
            ui.small(format!(
                "wrote {} ({} actions, {} states)",
                r.path.display(),
                r.actions,
                r.states
            ));
        }
        Some(Err(e)) => {
            ui.colored_label(state_colour(SessionState::Error), e);
        }
        None => {}
    }
    ui.separator();
    ui.horizontal(|ui| {
        ui.label("file");
        ui.text_edit_singleline(&mut *traj.replay_path);
    });
    ui.checkbox(
        &mut traj.replay_by_action,
        "by action (physics) instead of by state",
    );
    if ui.button("Replay").clicked() && !traj.replay_path.trim().is_empty() {
        let mode = if *traj.replay_by_action {
            ReplayMode::Action
        } else {
            ReplayMode::State
        };
        traj.requests.write(TrajectoryCommand::StartReplay {
            path: traj.replay_path.trim().into(),
            mode,
            demo: 0,
        });
    }
    if let Some(replay) = &traj.replay {
        ui.small(replay.report());
        let states = replay.demo.states.len();
        if replay.mode == ReplayMode::State && states > 0 {
            let current = (replay.step / replay.every.max(1) as usize).clamp(1, states) - 1;
            let mut index = current;
            let slider = ui.add(egui::Slider::new(&mut index, 0..=states - 1).text("state"));
            if slider.changed() && index != current {
                traj.requests.write(TrajectoryCommand::Scrub { index });
            }
        }
        ui.small("play / pause with the session's Start / Pause");
    }
}
