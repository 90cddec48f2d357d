//! The ECS side of ROS 2: connects the DDS thread (`node`) to the one step path. The
//! bridge never touches DDS; it sees the thread only through the channels of `link`.
//!
//! - `First`, before `SessionSystems`: what the DDS thread reported. Peers enter and leave the
//!   registry; commands are validated (`armsim_core::protocol::ros2::{command, trajectory}`)
//!   and go through the control rules (`control`: the first valid command claims the arm);
//!   service requests go through the `simulation_interfaces` machine (`services`), whose
//!   session commands take effect in this same frame.
//! - `SimSystems::Adapt`: while a ROS peer holds the arm and the session runs, its latest
//!   command or its trajectory (sampled at the step's sim time) becomes `JointTargets`.
//! - `SimSystems::Publish` (and once a frame in `First`, for step 0 and for a paused session):
//!   deferred `StepSimulation` replies, and every `1/rate` of sim time a frame (`/clock`,
//!   `joint_states`, `/tf`) stamped from the step count (`schedule`).

mod control;
mod schedule;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Duration;

use bevy::prelude::*;
use crossbeam_channel::Receiver;

use self::control::{Control, Goal, Verdict, joint_command};
use self::schedule::Schedule;
use super::cameras::{self, CameraSchedule, ImageOutlet};
use super::command;
use super::link::{Frame, Inbound, PeerPrefix, Ticket};
use super::node::{ImageFeed, NodeConfig, NodeError, NodeStats, Ros2Handle};
use super::options::{Discovery, Ros2Options};
use super::published;
use super::services::{Action, Services, SessionView};
use super::sim_interfaces::{
    ResetSimulationResponse, ServiceRequest, ServiceResponse, SetSimulationStateResponse,
    SimResult, StepSimulationResponse,
};
use super::stamp::STEPS_PER_SECOND;
use super::trajectory::Trajectory;
use crate::protocol::net::{RateLimited, suppressed_note};
use crate::protocol::registry::{self, BridgeIo, Connections, Protocol};
use crate::scene::Scene;
use crate::session::{Session, SessionState, SessionSystems};
use crate::sim::{
    ClockSystems, FramePacing, Sim, SimClock, SimScene, SimStep, SimSystems, SimWaker,
};

pub use self::control::Target;

/// The topics a command arrives on, as logs name them (relative to the namespace).
const JOINT_COMMAND: &str = "joint_command";
const FORWARD_COMMAND: &str = "forward_position_controller/commands";
const TRAJECTORY: &str = "joint_trajectory";

/// At most this many reports are taken from the DDS thread per frame, so that a flood of
/// commands cannot hold the frame up; the rest wait in the bounded channel.
const MAX_INBOUND_PER_FRAME: usize = 1024;

/// One line per topic per second for bad input: a node that sends NaN at 1 kHz writes one line
/// a second, with the count of the rest.
const BAD_INPUT_LOG_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum Ros2Error {
    /// The DDS participant or one of its endpoints could not be created (the error says which).
    #[error("cannot start ROS 2 on DDS domain {domain}: {error}")]
    Node { domain: u16, error: NodeError },
    /// `--ros2-cameras` names a camera the scene does not have.
    #[error("--ros2-cameras: the scene has no camera {name:?} (it has: {known})")]
    UnknownCamera { name: String, known: String },
}

/// The bridge as the ECS sees it.
#[derive(Resource)]
pub struct Ros2Bridge {
    node: Ros2Handle,
    inbound: Receiver<Inbound>,
    services: Services<Ticket>,
    control: Control,
    schedule: Schedule,
    /// Frames per batch while the peers only watch ([`FramePacing`]).
    watched_batch: u64,
    /// The robot's joint names, in robot order (what `joint_states` lists).
    joints: Vec<String>,
    /// Who asked each request not yet answered, to count the reply on its registry entry.
    callers: HashMap<Ticket, PeerPrefix>,
    bad_input: HashMap<&'static str, RateLimited>,
    /// The frames made since the last [`flush`], oldest first.
    frames: Vec<Frame>,
    /// The replies made since the last [`flush`], in order: they follow the frames, so a
    /// `StepSimulation` reply follows the frame of its last step.
    replies: Vec<(Ticket, ServiceResponse)>,
}

impl Ros2Bridge {
    /// Frames published and writes refused so far.
    pub fn stats(&self) -> NodeStats {
        self.node.stats()
    }
}

/// Starts the DDS participant for the app's robot and wires the bridge into the step path. An
/// error (a domain whose ports are taken, no usable interface) is the caller's to report, as a
/// bind error is for the other protocols.
pub fn add(app: &mut App, options: Ros2Options) -> Result<(), Ros2Error> {
    let scene = app.world().resource::<SimScene>().0.clone();
    let model = &app.world().resource::<Sim>().0;
    let latched = published::latched(model, robot_description(&scene));
    let joints: Vec<String> = model.robot.joints.iter().map(|j| j.name.clone()).collect();
    let waker = app.world().resource::<SimWaker>().clone();
    let (tx, inbound) = crossbeam_channel::bounded(super::link::INBOUND_CAPACITY);
    let domain = options.domain;
    let (images, camera_outlet) = camera_feed(&scene, &options)?;
    let node = Ros2Handle::spawn_with_images(
        NodeConfig {
            options: options.clone(),
            latched,
            waker,
        },
        tx,
        images,
    )
    .map_err(|error| Ros2Error::Node { domain, error })?;
    if let Some(outlet) = camera_outlet {
        cameras::add(
            app,
            CameraSchedule::new(&options.cameras, options.camera_hz),
            outlet,
        );
        info!(
            "ros2: cameras {} as <camera>/image_raw and camera_info, at most {} Hz of sim time",
            options.cameras.join(", "),
            options.camera_hz
        );
    }
    let namespace = match options.namespace.as_str() {
        "" => "/",
        ns => ns,
    };
    let reach = match options.discovery {
        // The DDS thread has logged "discovery on this host only (127.0.0.1); DDS has no
        // authentication".
        Discovery::Local => "local host only".to_owned(),
        Discovery::Subnet => {
            // The loud line of every unauthenticated listener beyond loopback (`net::
            // warn_if_exposed`), worded for DDS: there is no bind address, only a domain.
            warn!(
                "ros2: OPEN TO THE NETWORK WITHOUT AUTHENTICATION (--ros2-discovery subnet): any \
                 host on the network that joins DDS domain {domain} can see the simulation, \
                 command the arm, and pause, step or reset it. Leave the flag out (discovery on \
                 this host only) unless you trust every host that can reach this one"
            );
            "subnet (open to the network, no key)".to_owned()
        }
    };
    info!(
        "ros2: DDS domain {domain}, namespace {namespace}: /clock, joint_states and /tf at {} Hz \
         of sim time; commands on {JOINT_COMMAND}, {FORWARD_COMMAND} and {TRAJECTORY}",
        options.rate_hz
    );
    registry::add_listener(
        app,
        Protocol::Ros2,
        format!(
            "ros2 domain {domain}, {namespace}, {reach}, {} Hz",
            options.rate_hz
        ),
    );
    app.insert_resource(Ros2Bridge {
        node,
        inbound,
        services: Services::new(),
        control: Control::default(),
        schedule: Schedule::new(options.rate_hz),
        watched_batch: FramePacing::frames_per_watched_batch(options.rate_hz),
        joints,
        callers: HashMap::new(),
        bad_input: HashMap::new(),
        frames: Vec::new(),
        replies: Vec::new(),
    })
    // Before the session handles commands, so that a claim's start and a service's pause,
    // step or reset take effect in this frame, before any step.
    .add_systems(First, handle_inbound.before(SessionSystems))
    // After it, once a frame: step 0's frame (at start and after a reset, before any step),
    // and the step replies of a paused session, which runs no step to publish in.
    .add_systems(First, frame_tick.after(SessionSystems))
    .add_systems(SimStep, adapt.in_set(SimSystems::Adapt))
    .add_systems(SimStep, publish.in_set(SimSystems::Publish))
    // Once a frame, after every step of it: the frames and replies it made go out together.
    .add_systems(Update, flush.after(ClockSystems))
    // Once a frame, at its end: what a real-time headless run may batch before it wakes.
    .add_systems(Last, pace_frames);
    Ok(())
}

/// `--ros2-cameras`: the image thread's feed and the bridge's outlet, once every name is
/// checked against the scene's cameras (the scene's own and the robot file's).
fn camera_feed(
    scene: &Scene,
    options: &Ros2Options,
) -> Result<(Option<ImageFeed>, Option<ImageOutlet>), Ros2Error> {
    if options.cameras.is_empty() {
        return Ok((None, None));
    }
    let known: Vec<String> = scene.cameras().into_iter().map(|c| c.name).collect();
    if let Some(name) = options.cameras.iter().find(|c| !known.contains(c)) {
        return Err(Ros2Error::UnknownCamera {
            name: name.clone(),
            known: if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            },
        });
    }
    let (outlet, frames) = cameras::image_queue();
    let feed = ImageFeed {
        cameras: options.cameras.clone(),
        frames,
    };
    Ok((Some(feed), Some(outlet)))
}

/// The URDF text of the scene's robot, for `robot_description`; `None` for an MJCF robot or a
/// file that cannot be read now (logged).
fn robot_description(scene: &Scene) -> Option<String> {
    let path = &scene.robot_path;
    if !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("urdf"))
    {
        return None;
    }
    if let Some(rel) = crate::scene::bundled::relative(path) {
        return crate::scene::bundled::file(&rel).map(str::to_owned);
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) => {
            warn!(
                "ros2: no robot_description: cannot read {}: {e}",
                path.display()
            );
            None
        }
    }
}

/// What the DDS thread reported since the last frame, and the panel's requests.
fn handle_inbound(mut bridge: ResMut<Ros2Bridge>, mut io: BridgeIo) {
    let bridge = &mut *bridge;
    let t = io.clock.sim_time;
    let mut hold = false;
    let panel = io.conns.panel_requests(Protocol::Ros2);
    if panel.revoked.is_some() {
        hold |= bridge.control.revoked(&mut io.conns);
    }
    hold |= bridge
        .control
        .kick(&panel.kicks, &mut io.conns, &mut io.log, t);
    // The session as this batch meets it; the services machine updates it with the effect of
    // each session command it asks for, so "pause, then step" in one batch steps.
    let mut view = session_view(&io.session, &io.clock);
    for _ in 0..MAX_INBOUND_PER_FRAME {
        let Ok(report) = bridge.inbound.try_recv() else {
            break;
        };
        match report {
            Inbound::PeerUp {
                prefix,
                vendor,
                addr,
            } => bridge
                .control
                .peer_up(prefix, &vendor, addr, &mut io.conns, &mut io.log, t),
            Inbound::PeerDown { prefix } => {
                hold |= bridge
                    .control
                    .peer_down(prefix, &mut io.conns, &mut io.log, t);
            }
            Inbound::CommandWriterLost {
                prefix,
                writers_left,
            } => {
                hold |= bridge
                    .control
                    .writer_lost(prefix, writers_left, &mut io.conns)
            }
            Inbound::JointCommand { prefix, msg } => {
                let joints = bridge.joint_names();
                let goal = command::joint_command(&msg, &joints).map(Goal::Joints);
                bridge.command(prefix, JOINT_COMMAND, goal, &mut view, &mut io);
            }
            Inbound::ForwardCommand { prefix, msg } => {
                let goal = command::forward_positions(&msg, bridge.joints.len()).map(|q| {
                    Goal::Joints(
                        q.into_iter()
                            .enumerate()
                            .map(|(j, p)| (j, command::JointGoal::Position(p)))
                            .collect(),
                    )
                });
                bridge.command(prefix, FORWARD_COMMAND, goal, &mut view, &mut io);
            }
            Inbound::Trajectory { prefix, msg } => {
                let joints = bridge.joint_names();
                let current: Vec<f64> = io
                    .sim
                    .view()
                    .joint_positions()
                    .into_iter()
                    .map(f64::from)
                    .collect();
                let now = view.steps as f64 / STEPS_PER_SECOND as f64;
                let goal = Trajectory::new(&msg, &joints, now, &current).map(Goal::Trajectory);
                bridge.command(prefix, TRAJECTORY, goal, &mut view, &mut io);
            }
            Inbound::Request {
                prefix,
                ticket,
                request,
            } => {
                bridge.control.count_in(prefix, &mut io.conns);
                bridge.callers.insert(ticket, prefix);
                if bridge.control.is_kicked(&prefix)
                    && let Some(response) = refused(&request)
                {
                    bridge.reply(ticket, response);
                    continue;
                }
                bridge.services.handle(ticket, request, &mut view);
                bridge.apply_actions(&mut io);
            }
        }
    }
    if hold {
        io.hold_arm();
    }
}

/// The services machine's view of the live session and clock.
fn session_view(session: &Session, clock: &SimClock) -> SessionView {
    SessionView {
        state: session.state(),
        error: session.error.clone(),
        steps: clock.steps,
        episode: clock.episode,
        pending_steps: clock.pending_steps(),
    }
}

/// Once a frame, after the session's commands: the step replies whose steps have run (or never
/// will), and the frame of step 0 of an episode.
fn frame_tick(mut bridge: ResMut<Ros2Bridge>, mut io: BridgeIo) {
    bridge.tick(&mut io);
}

/// The owner's goal becomes the joints' targets while the session runs.
fn adapt(mut bridge: ResMut<Ros2Bridge>, mut io: BridgeIo) {
    if io.session.state() != SessionState::Running {
        return;
    }
    // The targets are for the state at the end of this step.
    let t = (io.clock.steps + 1) as f64 / STEPS_PER_SECOND as f64;
    let targets = bridge.control.targets(&io.conns, io.clock.episode, t);
    if targets.is_empty() {
        return;
    }
    let view = io.sim.view();
    for (j, target) in targets {
        let Some(joint) = view.robot.joints.get(j) else {
            continue;
        };
        // Values are finite (validated where they entered); a refusal only keeps the old one.
        let _ = io
            .targets
            .set_aiming(j, joint_command(target, joint.limits), None);
    }
}

/// The frames and replies of this frame's steps, to DDS: a real-time batch's frames leave
/// together (see [`Ros2Handle::send_frames`]), and each reply after the frames before it.
fn flush(mut bridge: ResMut<Ros2Bridge>) {
    let bridge = &mut *bridge;
    if !bridge.frames.is_empty() {
        bridge.node.send_frames(bridge.frames.drain(..));
    }
    for (ticket, response) in bridge.replies.drain(..) {
        bridge.node.reply(ticket, response);
    }
}

/// After each step: step replies and the frame, when due.
fn publish(mut bridge: ResMut<Ros2Bridge>, mut io: BridgeIo) {
    bridge.tick(&mut io);
}

/// The clock's frame pacing, from the frame schedule and who is connected: only ROS 2 peers
/// (anyone else's messages are per step), and whether one of them controls the arm.
fn pace_frames(bridge: Res<Ros2Bridge>, conns: Res<Connections>, mut clock: ResMut<SimClock>) {
    let next = Some(frame_pacing(&bridge.schedule, bridge.watched_batch, &conns));
    // Written only when it changes, so that nothing sees a change every frame.
    if clock.frame_pacing != next {
        clock.frame_pacing = next;
    }
}

/// What a real-time headless run may batch: the next frame's step, the end of a watched batch
/// of `watched_batch` frames, and whether the ROS 2 peers are alone and one of them controls the
/// arm.
fn frame_pacing(schedule: &Schedule, watched_batch: u64, conns: &Connections) -> FramePacing {
    FramePacing {
        next_frame_step: schedule.next_step(),
        watched_wake_step: schedule.batch_end_step(watched_batch),
        sole_clients: conns.iter().all(|(key, _)| key.protocol == Protocol::Ros2),
        controlled: conns.owner_key().is_some(),
    }
}

impl Ros2Bridge {
    fn joint_names(&self) -> Vec<&str> {
        self.joints.iter().map(String::as_str).collect()
    }

    /// A command of `prefix`'s on `topic`, validated: it claims the arm or replaces the
    /// owner's goal, or is refused; a bad one is logged and moves nothing.
    fn command<E: std::fmt::Display>(
        &mut self,
        prefix: PeerPrefix,
        topic: &'static str,
        goal: Result<Goal, E>,
        view: &mut SessionView,
        io: &mut BridgeIo,
    ) {
        if self.control.is_kicked(&prefix) {
            return;
        }
        let goal = match goal {
            Ok(goal) => goal,
            Err(error) => {
                self.control.count_in(prefix, &mut io.conns);
                let log = self
                    .bad_input
                    .entry(topic)
                    .or_insert_with(|| RateLimited::new(BAD_INPUT_LOG_INTERVAL));
                if let Some(suppressed) = log.allow() {
                    warn!(
                        "ros2: {topic}: {error}; nothing moved{}",
                        suppressed_note(suppressed)
                    );
                }
                return;
            }
        };
        let verdict = self
            .control
            .command(prefix, topic, goal, view.episode, &mut io.conns);
        if let Verdict::Accepted {
            claimed: Some(claimed),
        } = verdict
        {
            // START on claim, as for every protocol; the batch's later requests meet it.
            io.session_command(claimed.then);
            view.apply(claimed.then);
        }
    }

    /// Step replies due and the frame of this step count, if due.
    fn tick(&mut self, io: &mut BridgeIo) {
        let view = session_view(&io.session, &io.clock);
        self.services.tick(&view);
        self.apply_actions(io);
        if self.schedule.due(io.clock.steps, io.clock.episode) {
            self.frames
                .push(published::frame(&io.sim.view(), io.clock.steps));
        }
    }

    /// Carries out what the services machine asked for, in order.
    fn apply_actions(&mut self, io: &mut BridgeIo) {
        while let Some(action) = self.services.poll() {
            match action {
                Action::Reply { ticket, response } => self.reply(ticket, response),
                Action::Session(command) => io.session_command(command),
                // The reset sets the targets to home; the ROS goal must not override them.
                Action::ForgetControl => self.control.forget_goal(),
            }
        }
    }

    fn reply(&mut self, ticket: Ticket, response: ServiceResponse) {
        if let Some(prefix) = self.callers.remove(&ticket) {
            self.control.count_out(&prefix);
        }
        self.replies.push((ticket, response));
    }
}

/// The answer to a state change (set, reset, step) asked by a peer disconnected from the panel;
/// `None` for the read-only services, which it may still call.
fn refused(request: &ServiceRequest) -> Option<ServiceResponse> {
    let result = SimResult::failed(
        SimResult::RESULT_OPERATION_FAILED,
        "this participant was disconnected from armsim's panel; it may change the simulation \
         again once it rejoins the domain",
    );
    Some(match request {
        ServiceRequest::GetSimulatorFeatures(_) | ServiceRequest::GetSimulationState(_) => {
            return None;
        }
        ServiceRequest::SetSimulationState(_) => {
            ServiceResponse::SetSimulationState(SetSimulationStateResponse { result })
        }
        ServiceRequest::ResetSimulation(_) => {
            ServiceResponse::ResetSimulation(ResetSimulationResponse { result })
        }
        ServiceRequest::StepSimulation(_) => {
            ServiceResponse::StepSimulation(StepSimulationResponse { result })
        }
    })
}
