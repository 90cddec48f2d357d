//! The simulator's clock: the mode (real time, as fast as possible, lockstep through the
//! `StepGate`), sim time and step count, and the figures the panel and protocols show
//! (real-time factor, steps/s, step cost).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bevy::prelude::*;

use armsim_core::sim::{SIM_DT, Stamp};

/// Runs each frame (in `Update`) to drive the clock; the GUI's transform sync runs after it.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClockSystems;

/// The most paused single steps that can be queued (about 7 minutes of sim time).
pub const MAX_PENDING_STEPS: u32 = 100_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClockMode {
    /// Sim time follows wall time times `speed` (1.0 = real time).
    RealTime { speed: f64 },
    /// As many steps as fit in the frame budget (headless batch work, benchmarks).
    Fast,
    /// No steps from frames at all: the embedding code steps explicitly with `sim::run_steps`
    /// (tests and batch scripts that need exact step counts).
    Manual,
}

/// The most step costs one stats window keeps for its mean and 99th percentile.
const MAX_WINDOW_COSTS: usize = 1 << 16;

/// How many steps the driver may run this frame and for how long.
#[derive(Clone, Copy, Debug)]
pub struct FrameBudget {
    pub max_steps: u32,
    pub wall_budget: Duration,
}

#[derive(Resource, Debug)]
pub struct SimClock {
    pub mode: ClockMode,
    /// Simulated seconds since the scene was loaded or reset.
    pub sim_time: f64,
    /// Steps since the scene was loaded or reset.
    pub steps: u64,
    /// Resets since start: with `steps`, a stamp that orders moments across resets.
    pub episode: u64,
    /// Real-time mode: the most steps one frame may run to catch up; beyond it, time is dropped
    /// (the sim runs slower than real time rather than spiralling).
    pub max_catch_up_steps: u32,
    /// Wall time one frame may spend stepping in fast/lockstep mode, so rendering stays live.
    pub frame_wall_budget: Duration,
    /// Upper bound on the steps of any one frame (a headless run's remaining steps).
    pub max_steps_this_frame: u32,
    /// Real time: a frame's steps end on a multiple of this many steps whenever they reach one,
    /// and the steps past it stay due for the next frame, so what is rendered at the end of a
    /// frame shows such a step (the LeRobot recorder's rows, for its cameras). 0 or 1: off.
    pub align_frames_to: u64,
    /// Set by a protocol whose clients take periodic frames (ROS 2 at `--ros2-rate`): the steps
    /// a real-time headless run may batch before it wakes. None: it wakes for every step.
    pub frame_pacing: Option<FramePacing>,
    /// Simulation time is frozen: frames run only the queued single steps. The clock does not
    /// decide this; whoever owns the run state (the session) sets it, as avian's
    /// `Time<Physics>::pause` does, so the sim needs no knowledge of who paused it.
    paused: bool,
    /// Error stop: the state went bad (set by the session on ERROR), so a frame ends after the
    /// step it is running rather than stepping on.
    error_stop: bool,
    accumulator: f64,
    pending_single_steps: u32,
    last_frame: Option<Instant>,
    pub stats: ClockStats,
}

/// Frame pacing: while a protocol's periodic frames are all that its clients get (ROS 2's
/// `/clock`, `joint_states` and `/tf` at `--ros2-rate`) and no other protocol has a client, a
/// real-time headless run steps in batches instead of waking for each step (fewer wake-ups,
/// less of a core):
/// - while one of them controls the arm, each batch ends on the step of the next frame, so
///   every frame leaves when it is due (100 wake-ups a second at 100 Hz instead of 240);
/// - while they only watch, a batch ends on `watched_wake_step`, a frame a few frames ahead:
///   the frames in between are still made at their own steps and leave together, at most
///   1/60 s late (50 wake-ups a second at 100 Hz), as an unwatched run lags its steps.
///
/// Messages from the clients still ring the `SimWaker`, so a command or a service call waits
/// for no batch. The protocol that sets it brings it up to date once a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FramePacing {
    /// The step after which the next frame goes out.
    pub next_frame_step: u64,
    /// Where a batch ends while the clients only watch.
    pub watched_wake_step: u64,
    /// Only this protocol has clients: anyone else's messages are per step, and then nothing
    /// is batched.
    pub sole_clients: bool,
    /// One of its clients controls the arm.
    pub controlled: bool,
}

impl FramePacing {
    /// The most frames a batch holds while the clients only watch: as many as fit in 1/60 s.
    pub fn frames_per_watched_batch(rate_hz: u32) -> u64 {
        u64::from(rate_hz.div_ceil(WATCHED_WAKE_HZ).max(1))
    }

    /// The step a batch ends on now, or None when nothing may be batched.
    pub fn wake_step(&self) -> Option<u64> {
        if !self.sole_clients {
            return None;
        }
        Some(match self.controlled {
            true => self.next_frame_step,
            false => self.watched_wake_step.max(self.next_frame_step),
        })
    }
}

/// How often a run watched only through periodic frames wakes, at most.
const WATCHED_WAKE_HZ: u32 = 60;

/// Measured figures, refreshed about twice a second.
#[derive(Debug, Clone, Default)]
pub struct ClockStats {
    /// Sim seconds per wall second over the last window.
    pub real_time_factor: f64,
    pub steps_per_second: f64,
    /// Cost of the last step (the whole `SimStep` schedule).
    pub last_step_cost: Duration,
    /// Mean and 99th percentile step cost over the last window.
    pub mean_step_cost: Duration,
    pub p99_step_cost: Duration,
    /// Steps dropped because real time ran ahead of what the machine could simulate.
    pub dropped_steps: u64,
    window_start: Option<Instant>,
    window_sim_start: f64,
    window_steps: u64,
    window_costs: Vec<Duration>,
}

impl Default for SimClock {
    fn default() -> Self {
        Self {
            mode: ClockMode::RealTime { speed: 1.0 },
            sim_time: 0.0,
            steps: 0,
            episode: 0,
            // Half a second of sim time: a window rendering at a few frames per second (software
            // rendering) still runs in real time; only longer stalls drop time.
            max_catch_up_steps: 120,
            frame_wall_budget: Duration::from_millis(12),
            max_steps_this_frame: u32::MAX,
            align_frames_to: 0,
            frame_pacing: None,
            paused: false,
            error_stop: false,
            accumulator: 0.0,
            pending_single_steps: 0,
            last_frame: None,
            stats: ClockStats::default(),
        }
    }
}

impl SimClock {
    /// Where the simulation stands now, for frames and events.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            sim_time_s: self.sim_time,
            step: self.steps,
            episode: self.episode,
        }
    }

    /// Freezes (true) or resumes (false) simulation time; while frozen only queued single
    /// steps run.
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Raises (true) or clears (false) the error stop: while raised, a frame ends after the
    /// step it is running.
    pub fn set_error_stop(&mut self, stop: bool) {
        self.error_stop = stop;
    }

    pub fn is_error_stopped(&self) -> bool {
        self.error_stop
    }

    /// Queues single steps (paused). At most `MAX_PENDING_STEPS` wait at once, so a flood of
    /// requests cannot queue hours of work.
    pub fn request_steps(&mut self, n: u32) {
        self.pending_single_steps = self
            .pending_single_steps
            .saturating_add(n)
            .min(MAX_PENDING_STEPS);
    }

    pub fn pending_steps(&self) -> u32 {
        self.pending_single_steps
    }

    /// `n` queued single steps have run.
    pub fn single_steps_done(&mut self, n: u32) {
        self.pending_single_steps = self.pending_single_steps.saturating_sub(n);
    }

    /// Back to time zero (reset); the mode and its settings stay.
    pub fn reset(&mut self) {
        self.episode += 1;
        self.sim_time = 0.0;
        self.steps = 0;
        self.accumulator = 0.0;
        self.pending_single_steps = 0;
        self.stats = ClockStats::default();
    }

    /// Called by the physics system after each step.
    pub fn advance(&mut self) {
        self.steps += 1;
        self.sim_time = self.steps as f64 * SIM_DT;
    }

    pub fn record_step(&mut self, cost: Duration) {
        self.stats.last_step_cost = cost;
        // A caller that steps without frames (the Python package) never closes a window: the
        // costs kept for the percentile stay bounded.
        if self.stats.window_costs.len() < MAX_WINDOW_COSTS {
            self.stats.window_costs.push(cost);
        }
        self.stats.window_steps += 1;
    }

    /// Decides this frame's budget from the mode, the pause state and the gate.
    pub fn begin_frame(&mut self, paused: bool, gated: bool) -> FrameBudget {
        let mut budget = self.frame_budget(paused, gated);
        let every = self.align_frames_to;
        if every > 1
            && !paused
            && !gated
            && matches!(self.mode, ClockMode::RealTime { .. })
            && budget.max_steps > 0
        {
            let end = self.steps + u64::from(budget.max_steps);
            let aligned = end - end % every;
            if aligned > self.steps {
                let held = end - aligned;
                budget.max_steps -= u32::try_from(held).unwrap_or(0);
                self.accumulator += held as f64 * SIM_DT;
            }
        }
        budget.max_steps = budget.max_steps.min(self.max_steps_this_frame);
        budget
    }

    fn frame_budget(&mut self, paused: bool, gated: bool) -> FrameBudget {
        let now = Instant::now();
        let wall_dt = self
            .last_frame
            .map(|t| now - t)
            .unwrap_or_default()
            .as_secs_f64();
        self.last_frame = Some(now);
        if paused {
            self.accumulator = 0.0;
            // Within the frame budget: what does not fit runs next frame (see `record_step`).
            return FrameBudget {
                max_steps: self.pending_single_steps,
                wall_budget: self.frame_wall_budget,
            };
        }
        // Single steps belong to a pause; running again forgets any left over.
        self.pending_single_steps = 0;
        if gated {
            // Lockstep: the clients set the pace; the budget only keeps frames coming.
            return FrameBudget {
                max_steps: u32::MAX,
                wall_budget: self.frame_wall_budget,
            };
        }
        match self.mode {
            ClockMode::RealTime { speed } => {
                self.accumulator += wall_dt * speed;
                let wanted = (self.accumulator / SIM_DT).floor();
                let n = wanted.min(f64::from(self.max_catch_up_steps)) as u32;
                if wanted > f64::from(n) {
                    self.stats.dropped_steps += (wanted as u64).saturating_sub(u64::from(n));
                }
                self.accumulator -= wanted * SIM_DT;
                FrameBudget {
                    max_steps: n,
                    wall_budget: Duration::MAX,
                }
            }
            ClockMode::Fast => FrameBudget {
                max_steps: u32::MAX,
                wall_budget: self.frame_wall_budget,
            },
            ClockMode::Manual => FrameBudget {
                max_steps: 0,
                wall_budget: Duration::ZERO,
            },
        }
    }

    /// Real time, running: when the next step falls due (the last frame's time plus what the
    /// accumulator still lacks of a step, at this speed). None in the other modes or paused,
    /// where frames, not wall time, bring the next step. The headless loop sleeps until then.
    pub fn next_step_due(&self) -> Option<Instant> {
        let ClockMode::RealTime { speed } = self.mode else {
            return None;
        };
        if self.paused || speed <= 0.0 || !speed.is_finite() {
            return None;
        }
        let lacking = ((SIM_DT - self.accumulator) / speed).max(0.0);
        Some(self.last_frame? + Duration::from_secs_f64(lacking))
    }

    /// Refreshes the measured figures once the window is long enough.
    pub fn end_frame(&mut self) {
        let now = Instant::now();
        let s = &mut self.stats;
        let Some(start) = s.window_start else {
            s.window_start = Some(now);
            s.window_sim_start = self.sim_time;
            s.window_steps = 0;
            s.window_costs.clear();
            return;
        };
        let wall = (now - start).as_secs_f64();
        if wall < 0.5 {
            return;
        }
        s.real_time_factor = (self.sim_time - s.window_sim_start) / wall;
        s.steps_per_second = s.window_steps as f64 / wall;
        if !s.window_costs.is_empty() {
            s.window_costs.sort_unstable();
            let total: Duration = s.window_costs.iter().sum();
            s.mean_step_cost = total / s.window_costs.len() as u32;
            let idx = ((s.window_costs.len() - 1) as f64 * 0.99).round() as usize;
            s.p99_step_cost = s.window_costs[idx];
        }
        s.window_start = Some(now);
        s.window_sim_start = self.sim_time;
        s.window_steps = 0;
        s.window_costs.clear();
    }
}

/// Lets steps wait for external clients (lockstep clients, sync-mode agents): while any
/// source is registered, a step runs only when every source has said it is ready, and each step
/// consumes that readiness. With no source registered the gate is open and the clock's mode
/// alone sets the pace.
#[derive(Resource, Debug, Default)]
pub struct StepGate {
    next_id: u64,
    sources: BTreeMap<u64, GateSource>,
    /// The frame driver's last step waited for a source past its budget (the panel shows who).
    waiting: bool,
}

#[derive(Debug)]
struct GateSource {
    name: String,
    ready: bool,
    /// Waits for something that polling cannot bring (a client that has not connected yet):
    /// the driver does not spin on it, the frame simply goes on without steps.
    held: bool,
}

impl StepGate {
    /// Registers a synchronous source; returns its id.
    pub fn register(&mut self, name: impl Into<String>) -> u64 {
        self.next_id += 1;
        self.sources.insert(
            self.next_id,
            GateSource {
                name: name.into(),
                ready: false,
                held: false,
            },
        );
        self.next_id
    }

    /// Registers a source that keeps the gate shut until it is unregistered (the lockstep
    /// server before its first client); returns its id.
    pub fn hold(&mut self, name: impl Into<String>) -> u64 {
        let id = self.register(name);
        if let Some(s) = self.sources.get_mut(&id) {
            s.held = true;
        }
        id
    }

    /// Whether a held source shuts the gate: no answer can arrive this frame, so the driver
    /// does not wait for one.
    pub fn is_held(&self) -> bool {
        self.sources.values().any(|s| s.held)
    }

    pub fn unregister(&mut self, id: u64) {
        self.sources.remove(&id);
    }

    /// The source has supplied its input for the next step.
    pub fn mark_ready(&mut self, id: u64) {
        if let Some(s) = self.sources.get_mut(&id)
            && !s.held
        {
            s.ready = true;
        }
    }

    pub fn is_gated(&self) -> bool {
        !self.sources.is_empty()
    }

    /// Names of the sources the next step is waiting for (for the panel).
    /// The frame driver's last step is still waiting for a source (past the frame's budget).
    pub fn is_waiting(&self) -> bool {
        self.waiting
    }

    /// Set by the frame driver: it gave up a frame waiting for a source, or a step ran.
    pub fn set_waiting(&mut self, waiting: bool) {
        self.waiting = waiting;
    }

    pub fn waiting_on(&self) -> impl Iterator<Item = &str> {
        self.sources
            .values()
            .filter(|s| !s.ready)
            .map(|s| s.name.as_str())
    }

    /// If every source is ready, consumes their readiness and returns true.
    pub fn try_consume(&mut self) -> bool {
        if !self.sources.values().all(|s| s.ready) {
            return false;
        }
        self.sources.values_mut().for_each(|s| s.ready = false);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_opens_only_when_every_source_is_ready() {
        let mut gate = StepGate::default();
        assert!(!gate.is_gated());
        let a = gate.register("a");
        let b = gate.register("b");
        assert!(!gate.try_consume());
        gate.mark_ready(a);
        assert!(!gate.try_consume());
        assert_eq!(gate.waiting_on().collect::<Vec<_>>(), vec!["b"]);
        gate.mark_ready(b);
        assert!(gate.try_consume());
        assert!(!gate.try_consume(), "readiness is consumed by the step");
        gate.unregister(a);
        gate.unregister(b);
        assert!(!gate.is_gated());
        // A held source shuts the gate until it goes, whatever is marked ready.
        let held = gate.hold("first client");
        gate.mark_ready(held);
        assert!(gate.is_gated() && gate.is_held() && !gate.try_consume());
        gate.unregister(held);
        assert!(!gate.is_gated() && !gate.is_held());
    }

    #[test]
    fn paused_clock_runs_only_requested_steps() {
        let mut clock = SimClock::default();
        assert_eq!(clock.begin_frame(true, false).max_steps, 0);
        clock.request_steps(3);
        assert_eq!(clock.begin_frame(true, false).max_steps, 3);
        // Steps the frame did not get to stay queued; done ones are not run again.
        clock.single_steps_done(2);
        assert_eq!(clock.begin_frame(true, false).max_steps, 1);
        clock.single_steps_done(1);
        assert_eq!(clock.begin_frame(true, false).max_steps, 0);
        // A flood of requests is capped; running again forgets the rest.
        for _ in 0..10 {
            clock.request_steps(u32::MAX);
        }
        assert_eq!(clock.pending_steps(), MAX_PENDING_STEPS);
        clock.begin_frame(false, false);
        assert_eq!(clock.pending_steps(), 0);
    }

    #[test]
    fn next_step_is_due_one_step_after_a_fresh_frame() {
        let mut clock = SimClock::default();
        assert!(clock.next_step_due().is_none(), "no frame yet");
        clock.begin_frame(false, false);
        let due = clock.next_step_due().expect("real time, running");
        // Counted from the frame, not from now: a loaded machine may run this line after the
        // step fell due.
        let wait = due - clock.last_frame.unwrap();
        assert!(wait <= Duration::from_secs_f64(SIM_DT) && wait > Duration::ZERO);
        clock.set_paused(true);
        assert!(clock.next_step_due().is_none());
        clock.set_paused(false);
        clock.mode = ClockMode::RealTime { speed: 2.0 };
        let wait = clock.next_step_due().unwrap() - clock.last_frame.unwrap();
        assert!(wait <= Duration::from_secs_f64(SIM_DT / 2.0 + 1e-9));
        clock.mode = ClockMode::Fast;
        assert!(clock.next_step_due().is_none());
    }

    #[test]
    fn real_time_caps_catch_up_and_counts_dropped_steps() {
        let mut clock = SimClock {
            max_catch_up_steps: 24,
            ..SimClock::default()
        };
        clock.begin_frame(false, false);
        std::thread::sleep(Duration::from_millis(300));
        let b = clock.begin_frame(false, false);
        assert_eq!(b.max_steps, clock.max_catch_up_steps);
        assert!(clock.stats.dropped_steps > 0);
    }

    #[test]
    fn aligned_frames_end_on_a_multiple_and_keep_the_rest_due() {
        let mut clock = SimClock {
            align_frames_to: 8,
            steps: 5,
            ..SimClock::default()
        };
        clock.begin_frame(false, false);
        // Pretend 13 steps fell due: 5 + 13 = 18, so the frame stops at 16 and 2 stay due.
        clock.accumulator = 13.0 * SIM_DT + 1e-9;
        clock.last_frame = Some(Instant::now());
        let b = clock.begin_frame(false, false);
        assert_eq!(b.max_steps, 11);
        assert!(
            (clock.accumulator / SIM_DT - 2.0).abs() < 1e-3,
            "{}",
            clock.accumulator
        );
        // Short of the next multiple, nothing is held back.
        clock.steps = 16;
        clock.accumulator = 5.0 * SIM_DT + 1e-9;
        clock.last_frame = Some(Instant::now());
        assert_eq!(clock.begin_frame(false, false).max_steps, 5);
    }
}
