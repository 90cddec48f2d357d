//! The egui side panel: is it running well (monitoring, plots), who is connected and in
//! control (connections, revoke, disconnect), what the arm does (joint table, targets, manual
//! sliders), the referee, recording/replay and the alerts log. Every action a protocol can take
//! on the session is also a click here. The 3D view is confined to the area right of the panel.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, EguiTextureHandle, egui};
use egui_plot::{Legend, Line, Plot, PlotPoints};

use super::gizmos::ViewOptions;
use super::history::History;
use super::render::{LiteTarget, Profile, RenderProfile, ViewRect};
use crate::protocol::registry::Connections;
use crate::referee::plugin::Referee;
use crate::robot::Pose;
use crate::session::{AlertLog, Session, SessionCommand, SessionRequest, SessionState};
use crate::sim::{ClockMode, JointCommand, JointTargets, SimClock, SimMut, SimScene, StepGate};
use crate::trajectory::plugin::{
    Recording, Replay, ReplayMode, TrajectoryCommand, default_recording_path,
};

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<PanelState>()
        .init_resource::<Connections>()
        .add_systems(EguiPrimaryContextPass, draw_panel);
}

/// Widget state that outlives a frame.
#[derive(Resource, Default)]
struct PanelState {
    headset: super::headset::HeadsetState,
    place_object: usize,
    place_pos: [f32; 3],
    gripper_closed: bool,
    replay_path: String,
    replay_by_action: bool,
}

fn state_colour(state: SessionState) -> egui::Color32 {
    match state {
        SessionState::Idle => egui::Color32::from_rgb(170, 170, 170),
        SessionState::Running => egui::Color32::from_rgb(90, 200, 110),
        SessionState::Paused => egui::Color32::from_rgb(230, 190, 70),
        SessionState::Error => egui::Color32::from_rgb(230, 80, 70),
    }
}

/// The session, the clock and control.
// `duplicates` pairs this list of resources with `WorldView`'s by shape: both are plain Bevy
// parameter declarations, with no logic to share; merging them gives one list that pairs with
// itself.
#[derive(SystemParam)]
struct SessionView<'w> {
    session: Res<'w, Session>,
    clock: ResMut<'w, SimClock>,
    gate: Res<'w, StepGate>,
    scene: Res<'w, SimScene>,
    /// Who is connected and who controls the arm.
    conns: ResMut<'w, Connections>,
    commands: MessageWriter<'w, SessionRequest>,
}

/// The world and what the panel edits in it.
// Alike in shape only to `SessionView` (see there).
#[derive(SystemParam)]
struct WorldView<'w, 's> {
    sim: SimMut<'w, 's>,
    targets: ResMut<'w, JointTargets>,
    referee: ResMut<'w, Referee>,
    log: Res<'w, AlertLog>,
    history: Res<'w, History>,
    view: ResMut<'w, ViewOptions>,
    render: ResMut<'w, RenderProfile>,
}

/// Recording and replay state, and where to send requests.
#[derive(SystemParam)]
struct Trajectories<'w> {
    recording: Res<'w, Recording>,
    replay: Option<Res<'w, Replay>>,
    requests: MessageWriter<'w, TrajectoryCommand>,
    /// The LeRobot recorder, where the app has one (`crate::lerobot::plugin`).
    lerobot: Option<Res<'w, crate::lerobot::LeRobotRecording>>,
    lerobot_requests: Option<ResMut<'w, Messages<crate::lerobot::LeRobotCommand>>>,
}

#[allow(clippy::too_many_arguments)] // a Bevy system: each argument is one thing it reads or writes
fn draw_panel(
    mut contexts: EguiContexts,
    mut sv: SessionView,
    mut wv: WorldView,
    mut traj: Trajectories,
    mut state: ResMut<PanelState>,
    xr: Option<Res<crate::protocol::xr::XrInfo>>,
    mut view_rect: ResMut<ViewRect>,
    lite_target: Option<Res<LiteTarget>>,
    window: Query<&Window, With<PrimaryWindow>>,
    mut cameras: super::camera_panel::CameraPanel,
) -> Result {
    let lite_image = match wv.render.active {
        Some(Profile::Lite) => lite_target
            .as_ref()
            .map(|t| contexts.add_image(EguiTextureHandle::Weak(t.0.id()))),
        _ => None,
    };
    let thumbnails = cameras.thumbnails(&mut contexts);
    let ctx = contexts.ctx_mut()?;
    let mut root = egui::Ui::new(
        ctx.clone(),
        "armsim_root".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    // `--render-tweak no-panel` (benchmark only): the window without the panel.
    let show_panel = !wv.render.ablation.no_panel;
    // The cameras whose thumbnails are on screen: they render while they are.
    let mut thumbnails_on_screen = Vec::new();
    let width = if !show_panel {
        0.0
    } else {
        egui::Panel::left("armsim_panel")
            .resizable(true)
            .default_size(300.0)
            .show(&mut root, |ui| {
                session_section(ui, &mut sv);
                egui::ScrollArea::vertical().show(ui, |ui| {
                    egui::CollapsingHeader::new("Robot")
                        .default_open(true)
                        .show(ui, |ui| robot_section(ui, &mut sv, &mut wv, &mut state));
                    egui::CollapsingHeader::new("Monitoring")
                        .default_open(true)
                        .show(ui, |ui| monitoring_section(ui, &sv, &wv));
                    if !thumbnails.is_empty() {
                        egui::CollapsingHeader::new("Cameras")
                            .default_open(true)
                            .show(ui, |ui| {
                                thumbnails_on_screen =
                                    super::camera_panel::section(ui, &thumbnails);
                            });
                    }
                    egui::CollapsingHeader::new("Connections")
                        .default_open(true)
                        .show(ui, |ui| connections_section(ui, &mut sv.conns));
                    if let Some(xr) = &xr {
                        egui::CollapsingHeader::new("Headset")
                            .default_open(true)
                            .show(ui, |ui| super::headset::section(ui, xr, &mut state.headset));
                    }
                    egui::CollapsingHeader::new("Referee")
                        .default_open(true)
                        .show(ui, |ui| referee_section(ui, &mut sv, &mut wv, &mut state));
                    egui::CollapsingHeader::new("Plots")
                        .default_open(false)
                        .show(ui, |ui| plots_section(ui, &wv));
                    egui::CollapsingHeader::new("Record / replay")
                        .default_open(false)
                        .show(ui, |ui| {
                            trajectory_section(ui, &mut traj, &mut state);
                            if let (Some(rec), Some(requests)) =
                                (&traj.lerobot, traj.lerobot_requests.as_mut())
                            {
                                super::lerobot_panel::lerobot_section(
                                    ui,
                                    rec,
                                    requests,
                                    &sv.scene.0.config.scene_id,
                                );
                            }
                        });
                    egui::CollapsingHeader::new("Alerts")
                        .default_open(true)
                        .show(ui, |ui| alerts_section(ui, &wv));
                    egui::CollapsingHeader::new("View")
                        .default_open(false)
                        .show(ui, |ui| view_section(ui, &mut wv));
                    ui.allocate_space(egui::vec2(ui.available_width(), 0.0));
                });
            })
            .response
            .rect
            .width()
    };

    cameras.on_screen(thumbnails_on_screen);

    // Keep the 3D view to the right of the panel.
    if let Ok(window) = window.single() {
        let left = (width * window.scale_factor()) as u32;
        let rect = ViewRect {
            position: UVec2::new(left, 0),
            size: UVec2::new(
                window.physical_width().saturating_sub(left).max(1),
                window.physical_height().max(1),
            ),
        };
        if *view_rect != rect {
            *view_rect = rect;
        }
        // Lite: the 3D view's offscreen image, stretched over the view under the panel.
        if let Some(texture) = lite_image {
            let k = window.scale_factor();
            let view = egui::Rect::from_min_size(
                egui::pos2(rect.position.x as f32 / k, 0.0),
                egui::vec2(rect.size.x as f32 / k, rect.size.y as f32 / k),
            );
            ctx.layer_painter(egui::LayerId::background()).image(
                texture,
                view,
                egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
                egui::Color32::WHITE,
            );
        }
    }
    Ok(())
}

/// The View section: markers and the render profile.
fn view_section(ui: &mut egui::Ui, wv: &mut WorldView) {
    let v = &mut wv.view;
    ui.checkbox(&mut v.workspace, "workspace box");
    ui.checkbox(&mut v.goal_zone, "goal zone");
    ui.checkbox(&mut v.teleop_target, "teleop target and setpoint");
    ui.checkbox(&mut v.joint_axes, "joint axes");
    let Some(active) = wv.render.active else {
        return;
    };
    ui.horizontal(|ui| {
        ui.label("render");
        let mut pick = active;
        ui.selectable_value(&mut pick, Profile::Full, "full")
            .on_hover_text("window resolution, tonemapping, no frame cap");
        ui.selectable_value(&mut pick, Profile::Lite, "lite")
            .on_hover_text(
                "for software renderers: reduced resolution, no tonemapping, capped frame rate",
            );
        if pick != active {
            wv.render.active = Some(pick);
        }
    });
    if active == Profile::Lite {
        let lite = &mut wv.render.lite;
        let mut percent = (lite.scale * 100.0).round();
        ui.horizontal(|ui| {
            ui.label("resolution");
            if ui
                .add(egui::Slider::new(&mut percent, 25.0..=100.0).suffix(" %"))
                .changed()
            {
                lite.scale = percent / 100.0;
            }
        });
    }
    if let Some((name, software)) = &wv.render.adapter {
        ui.small(format!(
            "{}: {name}",
            if *software {
                "software renderer"
            } else {
                "GPU"
            }
        ));
    }
}

fn session_section(ui: &mut egui::Ui, sv: &mut SessionView) {
    ui.heading("armsim");
    ui.label(format!("scene: {}", sv.scene.0.config.scene_id));
    ui.separator();
    let state = sv.session.state();
    ui.horizontal(|ui| {
        ui.label("state");
        ui.colored_label(
            state_colour(state),
            egui::RichText::new(state.as_str()).strong(),
        );
    });
    if let Some(why) = &sv.session.error {
        ui.colored_label(state_colour(SessionState::Error), why);
    }
    if sv.gate.is_waiting() {
        let names: Vec<&str> = sv.gate.waiting_on().collect();
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
    ui.horizontal(|ui| {
        if ui.button("Start").clicked() {
            sv.commands.write(SessionRequest(SessionCommand::Start));
        }
        if ui.button("Pause").clicked() {
            sv.commands.write(SessionRequest(SessionCommand::Pause));
        }
        if ui.button("Step").clicked() {
            sv.commands.write(SessionRequest(SessionCommand::Step(1)));
        }
        if ui.button("Reset").clicked() {
            sv.commands.write(SessionRequest(SessionCommand::Reset));
        }
    });
    ui.horizontal(|ui| {
        ui.label(format!("arm controlled by {}", sv.conns.describe()));
        if sv.conns.owner().is_some() && ui.button("Revoke").clicked() {
            sv.conns.revoke();
        }
    });
    match sv.clock.mode {
        ClockMode::RealTime { speed } => {
            ui.horizontal(|ui| {
                ui.label("speed");
                let mut s = speed;
                for (label, v) in [
                    ("¼×", 0.25),
                    ("½×", 0.5),
                    ("1×", 1.0),
                    ("2×", 2.0),
                    ("4×", 4.0),
                ] {
                    if ui.selectable_label((s - v).abs() < 1e-9, label).clicked() {
                        s = v;
                    }
                }
                if ui
                    .add(
                        egui::DragValue::new(&mut s)
                            .range(0.05..=20.0)
                            .speed(0.01)
                            .suffix("×"),
                    )
                    .changed()
                    || s != speed
                {
                    sv.clock.mode = ClockMode::RealTime { speed: s };
                }
            });
        }
        ClockMode::Fast => {
            ui.label("speed: as fast as possible");
        }
        ClockMode::Manual => {
            ui.label("speed: manual stepping");
        }
    }
    ui.small("keys: Space · Right · Backspace · Home · F12 (hover)")
        .on_hover_text(
            "Space run/pause, Right arrow one step, Backspace reset, Home reset view, \
             F12 screenshot",
        );
    ui.separator();
}

fn monitoring_section(ui: &mut egui::Ui, sv: &SessionView, wv: &WorldView) {
    let clock = &sv.clock;
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
        ui.label("frame rate");
        ui.label(format!("{:.0} fps", wv.history.fps));
        ui.end_row();
        ui.label("dropped steps");
        ui.label(s.dropped_steps.to_string());
        ui.end_row();
        // A resting arm sleeps until a new command, a contact or a placement wakes it.
        ui.label("arm");
        ui.label(if wv.sim.view().arm_asleep() {
            "asleep (at rest)"
        } else {
            "awake"
        });
        ui.end_row();
    });
    let points: Vec<[f64; 2]> = wv
        .history
        .samples
        .iter()
        .map(|x| [x.t, x.step_cost_us])
        .collect();
    Plot::new("step_cost")
        .height(70.0)
        .show_axes([false, true])
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .show(ui, |p| {
            p.line(Line::new("step cost µs", PlotPoints::from(points)))
        });
}

fn robot_section(
    ui: &mut egui::Ui,
    sv: &mut SessionView,
    wv: &mut WorldView,
    state: &mut PanelState,
) {
    let manual = sv.conns.owner().is_none();
    let world = wv.sim.view();
    let robot = world.robot.clone();
    let q = world.joint_positions();
    let qd = world.joint_velocities();
    let applied = world.commands().to_vec();
    egui::Grid::new("joints")
        .num_columns(5)
        .striped(true)
        .show(ui, |ui| {
            ui.label("joint");
            ui.label("pos");
            ui.label("vel");
            ui.label("target");
            ui.label("effort");
            ui.end_row();
            for (j, joint) in robot.joints.iter().enumerate() {
                ui.label(&joint.name);
                let near_limit = joint.limits.is_some_and(|(lo, hi)| {
                    q[j] < lo + 0.02 * (hi - lo) || q[j] > hi - 0.02 * (hi - lo)
                });
                let text = format!("{:+.3}", q[j]);
                if near_limit {
                    ui.colored_label(state_colour(SessionState::Paused), text);
                } else {
                    ui.label(text);
                }
                ui.label(format!("{:+.2}", qd[j]));
                let (target, effort) = match applied[j] {
                    JointCommand::Position { target, .. } => (format!("p {target:+.3}"), 0.0),
                    JointCommand::Velocity { target } => (format!("v {target:+.2}"), 0.0),
                    JointCommand::Effort { torque } => ("effort".into(), torque),
                };
                ui.label(target);
                let max = joint.max_effort;
                if max > 0.0 {
                    ui.add(
                        egui::ProgressBar::new((effort.abs() / max).min(1.0))
                            .desired_width(50.0)
                            .text(format!("{effort:.1}")),
                    );
                } else {
                    ui.label(format!("{effort:.1}"));
                }
                ui.end_row();
            }
        });
    if !manual {
        ui.small("manual control is off while a client controls the arm");
        return;
    }
    ui.label("manual control (sets position targets; starts the session)");
    let mut changed = false;
    let gripper = wv.sim.model().robot.clone();
    let leader = sv.scene.0.gripper_joint();
    let followers: Vec<usize> = leader
        .map(|l| gripper.followers(l).map(|m| m.joint).collect())
        .unwrap_or_default();
    for (j, joint) in robot.joints.iter().enumerate() {
        if Some(j) == leader || followers.contains(&j) {
            continue;
        }
        let (lo, hi) = joint
            .limits
            .unwrap_or((-std::f32::consts::PI, std::f32::consts::PI));
        let mut v = match wv.targets.commands[j] {
            JointCommand::Position { target, .. } => target,
            _ => q[j],
        };
        if ui
            .add(egui::Slider::new(&mut v, lo..=hi).text(joint.name.as_str()))
            .changed()
        {
            wv.targets.commands[j] = JointCommand::Position {
                target: v,
                velocity: 0.0,
            };
            changed = true;
        }
    }
    if let Some(l) = leader
        && ui
            .checkbox(&mut state.gripper_closed, "gripper closed")
            .changed()
    {
        wv.targets
            .set_gripper(&robot, l, if state.gripper_closed { 1.0 } else { 0.0 });
        changed = true;
    }
    if changed && sv.session.state() == SessionState::Idle {
        sv.commands.write(SessionRequest(SessionCommand::Start));
    }
}

/// Every protocol's listener, its connections (peer, role, connected for, messages per second,
/// round trip and sequence where the protocol has them, a disconnect button) and its warning.
fn connections_section(ui: &mut egui::Ui, conns: &mut Connections) {
    let now = std::time::Instant::now();
    let mut kicks = Vec::new();
    let listeners: Vec<_> = conns.listeners().map(|(p, l)| (p, l.clone())).collect();
    for (protocol, listener) in listeners {
        ui.label(&listener.label);
        for (id, c) in conns.of(protocol) {
            let secs = now.saturating_duration_since(c.since).as_secs_f64();
            let (rate_in, rate_out) = c.rates(now);
            let peer = match &c.name {
                Some(name) => format!("{} {name}", c.peer),
                None => c.peer.to_string(),
            };
            let mut text = format!(
                "{peer} {} {secs:.0}s in {rate_in:.0}/s out {rate_out:.0}/s",
                c.role_text()
            );
            if let Some(rtt) = c.rtt() {
                text += &format!(" rtt {:.2} ms", rtt.as_secs_f64() * 1e3);
            }
            if let Some(seq) = c.last_seq_in() {
                text += &format!(" seq {seq}");
            }
            ui.horizontal(|ui| {
                ui.small(text);
                if ui.small_button("✕").on_hover_text("disconnect").clicked() {
                    kicks.push(crate::protocol::registry::ConnKey::new(protocol, id));
                }
            });
        }
        if let Some(warning) = &listener.warning {
            ui.colored_label(state_colour(SessionState::Error), warning);
        }
    }
    if conns.is_empty() {
        ui.small("no clients");
    }
    for key in kicks {
        conns.kick(key);
    }
}

fn referee_section(
    ui: &mut egui::Ui,
    sv: &mut SessionView,
    wv: &mut WorldView,
    state: &mut PanelState,
) {
    let book = &wv.referee.book;
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
    ui.horizontal(|ui| {
        if ui.button("Kick off").clicked() {
            let t = sv.clock.sim_time;
            wv.referee.kick_off(t);
            sv.commands.write(SessionRequest(SessionCommand::Start));
        }
        if ui.button("Reset cubes").clicked() {
            let mut sim = wv.sim.view_mut();
            for i in 0..sim.objects.len() {
                let _ = sim.reset_object(i);
            }
        }
    });
    let names: Vec<String> = wv
        .sim
        .model()
        .objects
        .iter()
        .map(|o| o.name.clone())
        .collect();
    if names.is_empty() {
        return;
    }
    state.place_object = state.place_object.min(names.len() - 1);
    ui.horizontal(|ui| {
        egui::ComboBox::from_id_salt("place_object")
            .selected_text(&names[state.place_object])
            .show_ui(ui, |ui| {
                for (i, n) in names.iter().enumerate() {
                    ui.selectable_value(&mut state.place_object, i, n);
                }
            });
        for v in &mut state.place_pos {
            ui.add(egui::DragValue::new(v).speed(0.005).max_decimals(3));
        }
    });
    if state.place_pos == [0.0; 3] {
        let top = wv.sim.model().table_top_z;
        state.place_pos = [0.45, 0.3, top + 0.1];
    }
    if ui.button("Place cube").clicked() {
        let pose = Pose::new(Vec3::from_array(state.place_pos), Quat::IDENTITY);
        if let Err(e) =
            wv.sim
                .view_mut()
                .place_object(state.place_object, pose, Vec3::ZERO, Vec3::ZERO)
        {
            warn!("panel: cannot place {}: {e}", names[state.place_object]);
        }
    }
    let recent: Vec<String> = wv
        .referee
        .since(wv.referee.last_seq().saturating_sub(5))
        .map(|e| format!("{:>7.2} s  {}", e.sim_time, e.event))
        .collect();
    for line in recent.iter().rev() {
        ui.small(line);
    }
}

fn plots_section(ui: &mut egui::Ui, wv: &WorldView) {
    let h = &wv.history;
    let names: Vec<String> = wv
        .sim
        .model()
        .robot
        .joints
        .iter()
        .map(|j| j.name.clone())
        .collect();
    Plot::new("joints")
        .height(150.0)
        .legend(Legend::default())
        .show(ui, |p| {
            for (j, name) in names.iter().enumerate() {
                let q: Vec<[f64; 2]> = h
                    .samples
                    .iter()
                    .filter_map(|s| s.q.get(j).map(|v| [s.t, f64::from(*v)]))
                    .collect();
                p.line(Line::new(name.clone(), PlotPoints::from(q)));
                let t: Vec<[f64; 2]> = h
                    .samples
                    .iter()
                    .filter_map(|s| {
                        s.target
                            .get(j)
                            .filter(|v| v.is_finite())
                            .map(|v| [s.t, f64::from(*v)])
                    })
                    .collect();
                if !t.is_empty() {
                    p.line(
                        Line::new(format!("{name} target"), PlotPoints::from(t))
                            .style(egui_plot::LineStyle::dashed_dense()),
                    );
                }
            }
        });
    ui.label("round trip per teleop client (ms)");
    Plot::new("rtt")
        .height(90.0)
        .legend(Legend::default())
        .show(ui, |p| {
            for (peer, series) in &h.rtt {
                let pts: Vec<[f64; 2]> = series.iter().copied().collect();
                p.line(Line::new(peer.clone(), PlotPoints::from(pts)));
            }
        });
}

fn alerts_section(ui: &mut egui::Ui, wv: &WorldView) {
    if wv.log.is_empty() {
        ui.small("nothing yet");
        return;
    }
    for e in wv.log.recent().take(12) {
        ui.small(format!(
            "{:>8.2} s {:<8} {} {}",
            e.sim_time, e.source, e.code, e.text
        ));
    }
}

fn trajectory_section(ui: &mut egui::Ui, traj: &mut Trajectories, state: &mut PanelState) {
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
        ui.text_edit_singleline(&mut state.replay_path);
    });
    ui.checkbox(
        &mut state.replay_by_action,
        "by action (physics) instead of by state",
    );
    if ui.button("Replay").clicked() && !state.replay_path.trim().is_empty() {
        let mode = if state.replay_by_action {
            ReplayMode::Action
        } else {
            ReplayMode::State
        };
        traj.requests.write(TrajectoryCommand::StartReplay {
            path: state.replay_path.trim().into(),
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
