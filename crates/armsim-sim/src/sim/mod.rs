//! The simulation in the ECS: the scene and physics world as resources, the `SimClock` that
//! decides how many 240 Hz steps run each frame, and the `SimStep` schedule that every step, in
//! every mode, goes through, in the protocol tick's order.
//!
//! Why a custom schedule run by an exclusive driver rather than `FixedUpdate`: lockstep and
//! as-fast-as-possible need the step count to be decided by inputs and budgets, not by virtual
//! time, and a step must be able to wait for a client without holding up the frame.

pub mod access;
mod clock;
pub mod physics;
mod start;
mod wake;

use std::sync::Arc;
use std::time::Instant;

use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
use bevy::prelude::*;

pub use access::{
    PhysicsContext, Sim, SimMut, SimRef, contacts_of_object, install, sim_view, with_sim_mut,
};
/// The Bevy-free world and commands (`armsim_core::sim`), re-exported.
pub use armsim_core::sim::*;
pub use clock::{ClockMode, ClockSystems, FramePacing, SimClock, StepGate};
pub use physics::{
    RapierStep, RapierSync, RapierWriteback, RobotJoint, RobotLink, SceneObject, SimBody, Table,
    WithContext, sync_entities,
};
pub use start::{EpisodeStartNow, log_start, world_for, world_from_seed};
pub use wake::SimWaker;

use crate::scene::Scene;

/// The scene the world was built from; reset rebuilds from it (drawing the next episode's start
/// from its `randomize` block, if it has one: `EpisodeStartNow`).
#[derive(Resource, Clone)]
pub struct SimScene(pub Arc<Scene>);

/// What the arm's controller (a protocol client, the panel's sliders, a test) wants, in robot
/// joint order. The session applies it in `SimSystems::Apply` while RUNNING, and its hold
/// posture otherwise.
#[derive(Resource, Debug, Clone)]
pub struct JointTargets {
    pub commands: Vec<JointCommand>,
    /// Per joint, the position a velocity or effort command aims at (`SimModel::aim`), kept
    /// with the command it was given for: a later write of another command to `commands`
    /// leaves it behind, so an aim never outlives its command.
    aims: Vec<Option<(JointCommand, f32)>>,
}

impl JointTargets {
    /// The controller's targets, aiming at nothing beyond themselves.
    pub fn new(commands: Vec<JointCommand>) -> Self {
        Self {
            aims: vec![None; commands.len()],
            commands,
        }
    }

    /// Sets joint `index`'s command with the position it aims at (an agent's PD target, a
    /// velocity integrated to a position), which recordings take as the joint's action.
    pub fn set_aiming(
        &mut self,
        index: usize,
        cmd: JointCommand,
        aim: Option<f32>,
    ) -> Result<(), CommandError> {
        self.set(index, cmd)?;
        if self.aims.len() < self.commands.len() {
            self.aims.resize(self.commands.len(), None);
        }
        self.aims[index] = aim.filter(|a| a.is_finite()).map(|a| (cmd, a));
        Ok(())
    }

    /// The aim given with joint `index`'s current command, if that command is still in place.
    pub fn aim(&self, index: usize) -> Option<f32> {
        let cmd = self.commands.get(index)?;
        match self.aims.get(index).copied().flatten() {
            Some((given, aim)) if given == *cmd => Some(aim),
            _ => None,
        }
    }

    /// Sets the target of joint `index` (robot joint order). Non-finite values are refused, as
    /// `SimModel::set_command` refuses them, so a bad input never reaches the motors.
    pub fn set(&mut self, index: usize, cmd: JointCommand) -> Result<(), CommandError> {
        set_checked(&mut self.commands, index, cmd)
    }

    /// Opens (0) or closes (1) the gripper whose actuator drives joint `leader`.
    pub fn set_gripper(&mut self, robot: &crate::robot::RobotModel, leader: usize, closed: f32) {
        for (j, cmd) in gripper_commands(robot, leader, closed) {
            if let Some(slot) = self.commands.get_mut(j) {
                *slot = cmd;
            }
        }
    }
}

/// One physics step, in the protocol tick's order (the phases of [`SimSystems`]). Each phase is a
/// set; protocols add their systems to the set of their phase. A new phase goes into the chain
/// in `plugin`, in tick order.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimStep;

#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub enum SimSystems {
    /// Sample the newest command of each source (decode only on a new token).
    Sample,
    /// Turn commands into joint targets (`JointTargets`).
    Adapt,
    /// Push the targets (or the hold posture) into the joint motors.
    Apply,
    /// Rapier step; sim time advances.
    Physics,
    /// Rule book after the step.
    Referee,
    /// Encode and publish outbound messages.
    Publish,
}

/// Run by the driver while the `StepGate` is closed, between steps: protocol bridges poll their
/// channels here and mark their source ready when an answer has arrived.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct GatePoll;

/// Builds the world for `scene` and registers the clock and the step schedule. What the arm
/// follows (`JointTargets` or a hold posture) and what counts as a failed state are decided by
/// whoever adds systems to `SimSystems::Apply` and after `SimSystems::Physics` (the session);
/// the sim only reads the clock's pause and error-stop flags.
pub fn plugin_for(scene: Arc<Scene>) -> impl Fn(&mut App) {
    move |app: &mut App| {
        let (world, start) = world_for(&scene, 0);
        let SimWorld { physics, model } = world;
        app.insert_resource(JointTargets::new(model.commands().to_vec()))
            .insert_resource(EpisodeStartNow(start))
            .insert_resource(Sim(model))
            .insert_resource(SimScene(scene.clone()))
            .init_resource::<SimClock>()
            .init_resource::<StepGate>()
            .init_resource::<SimWaker>()
            .init_resource::<GateLatency>();

        let mut schedule = Schedule::new(SimStep);
        // A step is a short, strictly ordered sequence: threads would cost more than they save.
        schedule.set_executor(SingleThreadedExecutor::new());
        schedule.configure_sets(
            (
                SimSystems::Sample,
                SimSystems::Adapt,
                SimSystems::Apply,
                SimSystems::Physics,
                SimSystems::Referee,
                SimSystems::Publish,
            )
                .chain(),
        );
        schedule.add_systems(physics::physics_step.in_set(SimSystems::Physics));
        app.add_schedule(schedule);
        physics::plugin(app, physics);
        let mut poll = Schedule::new(GatePoll);
        poll.set_executor(SingleThreadedExecutor::new());
        app.add_schedule(poll);
        app.add_systems(Update, drive_clock.in_set(ClockSystems));
        app.add_systems(Startup, (log_scene_notes, start::log_first_start).chain());
    }
}

/// The defaults the scene loader filled in; logged here because the scene is parsed before logging starts.
fn log_scene_notes(scene: Res<SimScene>) {
    for note in &scene.0.notes {
        info!("scene {}: {note}", scene.0.path.display());
    }
    let robot = &scene.0.robot;
    info!(
        "robot `{}`: {}",
        robot.name,
        robot.self_collision.summary(robot.links.len())
    );
}

/// Runs exactly one step, as a batch of its own (see [`begin_batch`]). Every mode and every
/// caller (driver, tests, benchmarks) steps through [`step_in_batch`].
pub fn step_once(world: &mut World) {
    begin_batch(world);
    step_in_batch(world);
    end_batch(world);
}

/// Before a batch of consecutive steps: bevy_rapier's `SyncBackend` brings what the ECS changed
/// (bodies the user spawned, moved or despawned, changed colliders, joints, forces) into the
/// Rapier sets. Nothing outside the `SimStep` schedule runs within a batch, so once is enough.
pub fn begin_batch(world: &mut World) {
    physics::sync_backend(world);
}

/// One step through the `SimStep` schedule, its cost recorded; between [`begin_batch`] and
/// [`end_batch`].
pub fn step_in_batch(world: &mut World) {
    let t0 = Instant::now();
    world.run_schedule(SimStep);
    let cost = t0.elapsed();
    world.resource_mut::<SimClock>().record_step(cost);
}

/// After a batch: bevy_rapier's `Writeback` puts the bodies' poses and velocities into their
/// entities' `Transform` and `Velocity`, as bevy_rapier does once per frame however many steps
/// its own fixed-timestep modes ran.
pub fn end_batch(world: &mut World) {
    physics::writeback(world);
}

/// Runs `n` steps back to back as one batch, ignoring the clock's pacing (tests, batch work,
/// benchmarks).
pub fn run_steps(app: &mut App, n: u64) {
    let world = app.world_mut();
    begin_batch(world);
    for _ in 0..n {
        step_in_batch(world);
    }
    end_batch(world);
}

/// Decides how many steps this frame gets and runs them.
fn drive_clock(world: &mut World) {
    let paused = world.resource::<SimClock>().is_paused();
    let gated = world.resource::<StepGate>().is_gated();
    let budget = world.resource_mut::<SimClock>().begin_frame(paused, gated);
    // Aligned frames (`SimClock::align_frames_to`) that run out of wall time mid-way still end
    // on a multiple (at most `align - 1` steps more), so what renders after them is a row's step.
    let align = match (paused, gated) {
        (false, false) => world.resource::<SimClock>().align_frames_to,
        _ => 0,
    };
    let mid_row =
        |world: &World| align > 1 && !world.resource::<SimClock>().steps.is_multiple_of(align);
    let started = Instant::now();
    let mut ran = 0u32;
    while ran < budget.max_steps
        && (started.elapsed() < budget.wall_budget || (ran > 0 && mid_row(world)))
    {
        // Even a paused single step must not hold the frame hostage to a silent client.
        let wait_budget = budget
            .wall_budget
            .min(world.resource::<SimClock>().frame_wall_budget);
        if gated && !wait_for_gate(world, started, wait_budget) {
            set_gate_waiting(world, true);
            break;
        }
        set_gate_waiting(world, false);
        if ran == 0 {
            begin_batch(world);
        }
        step_in_batch(world);
        ran += 1;
        if world.resource::<SimClock>().is_error_stopped() {
            break;
        }
    }
    if ran > 0 {
        end_batch(world);
    }
    let mut clock = world.resource_mut::<SimClock>();
    if paused {
        clock.single_steps_done(ran);
    }
    clock.end_frame();
}

/// How long the driver polls a gate in a tight loop before it blocks on the `SimWaker`, at least
/// and at most. Blocking and being woken costs about 50 µs of CPU and latency on a VM; a client
/// that answers within a couple of hundred microseconds (a Rust lockstep client, an agent on
/// loopback) is caught by the spin, one that takes longer is waited for asleep after the
/// shortest spin, so a slow or silent client never costs a core.
pub const GATE_SPIN: std::time::Duration = std::time::Duration::from_micros(30);
pub const GATE_SPIN_MAX: std::time::Duration = std::time::Duration::from_micros(200);

/// How long the gate's source has typically taken to answer (an average over recent waits, a
/// wait that ran out of frame budget counting as that budget): the spin window follows it.
#[derive(Resource, Debug, Default)]
pub struct GateLatency {
    typical: std::time::Duration,
}

impl GateLatency {
    /// Twice the typical answer time, within `GATE_SPIN..=GATE_SPIN_MAX`; the shortest spin once
    /// answers typically take three times the longest (an average that includes the wake-ups of
    /// waits the spin missed, so it sits above the answer time itself).
    pub fn spin(&self) -> std::time::Duration {
        if self.typical > GATE_SPIN_MAX * 3 {
            GATE_SPIN
        } else {
            (self.typical * 2).clamp(GATE_SPIN, GATE_SPIN_MAX)
        }
    }

    /// Folds one wait the source was not ready at once for into the average (weight 1/8).
    pub fn record(&mut self, waited: std::time::Duration) {
        self.typical = (self.typical * 7 + waited) / 8;
    }
}

/// Tells the panel whether the driver is waiting at the gate, written only when it changes.
fn set_gate_waiting(world: &mut World, waiting: bool) {
    if world.resource::<StepGate>().is_waiting() != waiting {
        world.resource_mut::<StepGate>().set_waiting(waiting);
    }
}

/// Polls the synchronous sources until the gate opens (true) or the frame's wall budget is
/// spent (false): a spin as long as `GateLatency` says, then blocking on the `SimWaker` that the
/// protocol threads ring on every message. The budget keeps the frame (and rendering) going when
/// a client is slow.
fn wait_for_gate(world: &mut World, started: Instant, budget: std::time::Duration) -> bool {
    let waker = world.resource::<SimWaker>().clone();
    let began = Instant::now();
    let spin_until = began + world.resource::<GateLatency>().spin();
    let deadline = started + budget;
    let mut polls = 0u32;
    let opened = loop {
        world.run_schedule(GatePoll);
        polls += 1;
        let mut gate = world.resource_mut::<StepGate>();
        if !gate.is_gated() || gate.try_consume() {
            if polls == 1 {
                return true; // ready at once: no wait to learn from
            }
            break true;
        }
        let now = Instant::now();
        if gate.is_held() || now >= deadline {
            break false;
        }
        if now < spin_until {
            std::hint::spin_loop();
        } else {
            waker.wait_until(deadline);
        }
    };
    world.resource_mut::<GateLatency>().record(began.elapsed());
    opened
}

#[cfg(test)]
mod gate_latency_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_spin_follows_fast_answers_and_falls_back_for_slow_ones() {
        let mut l = GateLatency::default();
        assert_eq!(l.spin(), GATE_SPIN, "nothing learnt yet: the shortest spin");
        for _ in 0..40 {
            l.record(Duration::from_micros(80));
        }
        let fast = l.spin();
        assert!(
            fast > Duration::from_micros(150) && fast <= GATE_SPIN_MAX,
            "answers in 80 µs: spin {fast:?}"
        );
        for _ in 0..40 {
            l.record(Duration::from_millis(2));
        }
        assert_eq!(l.spin(), GATE_SPIN, "answers in 2 ms are waited for asleep");
    }
}
