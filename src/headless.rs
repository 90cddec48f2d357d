//! Running the simulation without a window: the loop behind `armsim --headless`, with its stop
//! condition and the report printed at exit.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bevy::app::PluginsState;
use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use bevy::tasks::tick_global_task_pools_on_main_thread;

use crate::protocol::registry::Connections;
use crate::sim::{ClockMode, SIM_DT, SimClock, SimWaker, StepGate};
use crate::trajectory::plugin::Replay;

static STOP: AtomicBool = AtomicBool::new(false);
/// A second, deliberate stop request: finish what is finished, cut the open episode short.
static HURRY: AtomicBool = AtomicBool::new(false);
/// The stop requests counted so far and when the last one came (see [`StopSignals`]).
static SIGNALS: Mutex<StopSignals> = Mutex::new(StopSignals::new());

/// How close a signal must follow the previous counted one to be the same request. GNU
/// `timeout`, and anything else that signals a process group, delivers its SIGTERM twice within
/// microseconds (to the child, then to the group); a terminal's Ctrl-C reaches every process of
/// the foreground group at once. 2 s is far above those bursts and below a person's deliberate
/// second Ctrl-C after waiting for the exit.
pub const SIGNAL_GRACE: Duration = Duration::from_secs(2);

/// What a stop signal asks for, by how many distinct requests came before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopRequest {
    /// The first: stop after the current frame and finish every recording.
    Stop,
    /// Within [`SIGNAL_GRACE`] of the previous counted request: the same request again.
    Repeated,
    /// A second request after the grace period: finish faster, the open LeRobot episode
    /// discarded; finished episodes and the trajectory are still written.
    Hurry,
    /// A third: exit at once (code 130).
    ExitNow,
}

/// Counts stop signals into requests: repeats within [`SIGNAL_GRACE`] of the last counted one
/// are folded into it, so a signal burst never escalates.
#[derive(Debug)]
pub struct StopSignals {
    counted: u32,
    last: Option<Instant>,
}

impl StopSignals {
    pub const fn new() -> Self {
        Self {
            counted: 0,
            last: None,
        }
    }

    /// What the signal received at `now` asks for.
    pub fn on_signal(&mut self, now: Instant) -> StopRequest {
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < SIGNAL_GRACE)
        {
            return StopRequest::Repeated;
        }
        self.last = Some(now);
        self.counted += 1;
        match self.counted {
            1 => StopRequest::Stop,
            2 => StopRequest::Hurry,
            _ => StopRequest::ExitNow,
        }
    }
}

impl Default for StopSignals {
    fn default() -> Self {
        Self::new()
    }
}

/// Turns Ctrl-C, SIGTERM and SIGHUP into a graceful stop: the run loop (or the window, through
/// [`exit_on_stop_request`]) ends after the current frame, so recordings and datasets are
/// finished and the report is printed. Signals repeated within [`SIGNAL_GRACE`] are the same
/// request (GNU `timeout` sends two). A second request after that hurries the finish
/// ([`hurry_requested`]: the open LeRobot episode is discarded, finished episodes and the
/// trajectory are still written); a third exits at once (code 130), leaving what was already on
/// disk: the LeRobot episodes finished before it and the trajectory's journal (`armsim
/// trajectory recover`).
///
/// The handler is installed even where the process inherited an ignored signal: a job started
/// by `nohup` or in the background of a script has SIGHUP or SIGINT ignored, and `ctrlc`'s
/// non-overwriting install (the one Bevy's own handler uses) then gives up and leaves SIGTERM
/// killing the process outright, losing a recording. A SIGINT or SIGHUP inherited ignored is
/// ignored again right after, as the shell or `nohup` meant: `nohup armsim ...` outlives its
/// terminal, and a script's background armsim is not stopped by the terminal's Ctrl-C.
pub fn stop_on_signals() -> Result<(), String> {
    let inherited_ignored = ignored_signals();
    // `ctrlc` calls this on a thread of its own (not in the signal handler), so it may lock and log.
    ctrlc::set_handler(|| {
        let request = SIGNALS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .on_signal(Instant::now());
        match request {
            StopRequest::Stop => {
                STOP.store(true, Ordering::SeqCst);
                info!("stop requested (Ctrl-C, SIGTERM or SIGHUP): finishing recordings");
            }
            StopRequest::Repeated => info!(
                "stop signal repeated within {} s: the same request",
                SIGNAL_GRACE.as_secs()
            ),
            StopRequest::Hurry => {
                HURRY.store(true, Ordering::SeqCst);
                STOP.store(true, Ordering::SeqCst);
                warn!(
                    "second stop request: finishing now; the open LeRobot episode is discarded, \
                     finished episodes and the trajectory are still written (a third request \
                     exits at once)"
                );
            }
            StopRequest::ExitNow => {
                eprintln!(
                    "armsim: third stop request: exiting at once (code 130); LeRobot episodes \
                     finished before now stay, a trajectory's journal (FILE.partial.jsonl) is \
                     recovered by `armsim trajectory recover` or by the next --record of the same file"
                );
                std::process::exit(130);
            }
        }
    })
    .map_err(|e| format!("cannot install the Ctrl-C/SIGTERM handler: {e}"))?;
    for signal in inherited_ignored {
        ignore_signal(signal);
    }
    Ok(())
}

/// SIGINT and SIGHUP where their disposition is "ignore" (inherited through exec from `nohup`,
/// or from a shell running a job in the background).
#[cfg(unix)]
fn ignored_signals() -> Vec<libc::c_int> {
    [libc::SIGINT, libc::SIGHUP]
        .into_iter()
        .filter(|&signal| {
            // SAFETY: sigaction with a null new action only reads the current disposition into
            // `old`, a zeroed plain-data struct it fully owns.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            }
        })
        .collect()
}

#[cfg(not(unix))]
fn ignored_signals() -> Vec<i32> {
    Vec::new()
}

#[cfg(unix)]
fn ignore_signal(signal: libc::c_int) {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no code; `old` is ignored.
    let done = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_IGN;
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, &action, &mut old)
    };
    if done != 0 {
        eprintln!(
            "armsim: cannot keep signal {signal} ignored as inherited: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(not(unix))]
fn ignore_signal(_signal: i32) {}

/// Whether Ctrl-C or SIGTERM asked the process to stop.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Whether a second stop request (after [`SIGNAL_GRACE`]) asked to finish faster: recorders
/// then drop what is not finished yet (the open LeRobot episode) and keep the rest.
pub fn hurry_requested() -> bool {
    HURRY.load(Ordering::SeqCst)
}

/// The window's side of [`stop_on_signals`]: a stop request closes the app through `AppExit`
/// (exit code 0), on which recordings and datasets are finished.
pub fn exit_on_stop_request(mut exit: MessageWriter<AppExit>, mut sent: Local<bool>) {
    if stop_requested() && !*sent {
        *sent = true;
        info!("stop requested (Ctrl-C, SIGTERM or SIGHUP): closing");
        exit.write(AppExit::Success);
    }
}

/// When a headless run ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StopAfter {
    Steps(u64),
    SimSeconds(f64),
    /// After this much wall time (benchmarks that measure a running server).
    Wall(Duration),
    /// Until the process is interrupted or the app exits by itself.
    Never,
}

impl StopAfter {
    fn step_limit(self) -> Option<u64> {
        match self {
            StopAfter::Steps(n) => Some(n),
            StopAfter::SimSeconds(s) => Some((s / SIM_DT).round() as u64),
            StopAfter::Wall(_) | StopAfter::Never => None,
        }
    }
}

/// What a headless run did, printed at exit.
#[derive(Clone, Copy, Debug)]
pub struct RunReport {
    pub steps: u64,
    pub sim_time: f64,
    pub wall: Duration,
}

impl RunReport {
    pub fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} steps, {:.1} s sim, {:.1} s wall, {:.0} steps/s",
            self.steps,
            self.sim_time,
            self.wall.as_secs_f64(),
            self.steps_per_second()
        )
    }
}

/// Finishes plugin set-up the way Bevy's runners do, so `app.update()` can be called directly.
/// Does nothing on an app already set up.
pub fn finish_setup(app: &mut App) {
    if app.plugins_state() == PluginsState::Cleaned {
        return;
    }
    while app.plugins_state() == PluginsState::Adding {
        tick_global_task_pools_on_main_thread();
    }
    app.finish();
    app.cleanup();
}

/// The longest the loop sleeps between frames when no step is due (paused, waiting for a first
/// client): what Ctrl-C, a panel-less command or a teleop message may wait for a frame.
const IDLE_FRAME: Duration = Duration::from_millis(10);

/// How far a real-time run nobody is connected to may let its steps fall behind the wall clock,
/// so that one wake-up runs four of them (60 wake-ups a second): nobody sees the lag (it is gone
/// at the first frame after someone connects), and on the 2-core VM a wake-up alone costs about
/// 50 µs of CPU, 1.25 % of a core at 240 a second, before the frame's own work (`bench idle`;
/// idle may cost the physics plus 3 % of a core). Longer than `IDLE_FRAME` on purpose: the
/// steps are what the frame is for.
const UNWATCHED_LAG: Duration = Duration::from_micros(16_667);

/// Sleeps until the next frame has something to do: in real time, until the next step is due
/// (or `UNWATCHED_LAG` later while nobody is connected); paused or waiting for a first client,
/// up to `IDLE_FRAME`. Lockstep and agent messages ring
/// the `SimWaker` and cut the sleep short. It does not sleep as fast as possible (unless
/// paused), with queued single steps, nor while a connected client paces the steps (the frame
/// itself blocks on its answers).
fn wait_for_next_frame(world: &World) {
    let clock = world.resource::<SimClock>();
    let gate = world.resource::<StepGate>();
    let queued = clock.is_paused() && clock.pending_steps() > 0;
    if queued || (gate.is_gated() && !gate.is_held()) {
        return;
    }
    let now = Instant::now();
    let unwatched = world
        .get_resource::<Connections>()
        .is_none_or(Connections::is_empty);
    let paced = if unwatched {
        None
    } else {
        frame_paced_lag(clock)
    };
    let lag = match (unwatched, paced) {
        (true, _) => UNWATCHED_LAG,
        (false, Some(lag)) => lag,
        (false, None) => Duration::ZERO,
    };
    let deadline = match clock.mode {
        ClockMode::Fast if !gate.is_gated() && !clock.is_paused() => return,
        _ if gate.is_gated() => now + IDLE_FRAME,
        // Paced by frames: wake when the batch's last frame step is due, not before (a cap
        // at `IDLE_FRAME` would cut a batch into two wake-ups).
        _ if paced.is_some() => clock.next_step_due().map_or(now + IDLE_FRAME, |due| {
            (due + lag).min(now + PACED_MAX_SLEEP)
        }),
        _ => clock.next_step_due().map_or(now + IDLE_FRAME, |due| {
            (due + lag).min(now + IDLE_FRAME.max(lag))
        }),
    };
    if deadline > now {
        world.resource::<SimWaker>().wait_until(deadline);
    }
}

/// How long the next step may wait while only frame-paced clients are connected (the clock's
/// [`FramePacing`]): until the step that ends the batch is due, in wall time at the clock's
/// speed. `None` without frame pacing, or while anyone else is connected (their messages are
/// per step).
fn frame_paced_lag(clock: &SimClock) -> Option<Duration> {
    let wake_step = clock.frame_pacing?.wake_step()?;
    let ClockMode::RealTime { speed } = clock.mode else {
        return None;
    };
    if !(speed.is_finite() && speed > 0.0) {
        return None;
    }
    let ahead = wake_step.saturating_sub(clock.steps + 1);
    if ahead == 0 {
        return Some(Duration::ZERO);
    }
    // A hair past the frame's step: woken at exactly its due time, rounding can leave the
    // accumulator a nanosecond short of it, and the step would need a wake-up of its own.
    let wall = Duration::from_secs_f64(SIM_DT * ahead as f64 / speed);
    Some((wall + PACING_MARGIN).min(PACED_MAX_SLEEP))
}

/// See `frame_paced_lag`: far below a step, far above float rounding.
const PACING_MARGIN: Duration = Duration::from_micros(20);

/// The longest a frame-paced loop sleeps (a 1 Hz `--ros2-rate` wakes it this often all the
/// same): what a Ctrl-C or a panel-less command may wait for a frame.
const PACED_MAX_SLEEP: Duration = Duration::from_millis(34);

/// Headless, every schedule runs its systems on the calling thread. A frame here is one or a few
/// short steps, and the multi-threaded executor's hand-offs to the task pool and back cost more
/// than they save: idle in real time (240 frames/s) on the default scene they took the process
/// from 8.5–9.3 % to 10.6–12.4 % of a core (`armsim bench idle`, back to back). Systems of one
/// schedule still run in the schedule's order, so what they see does not change.
fn run_schedules_on_this_thread(app: &mut App) {
    let mut schedules = app.world_mut().resource_mut::<Schedules>();
    for (_, schedule) in schedules.iter_mut() {
        schedule.set_executor(SingleThreadedExecutor::new());
    }
}

/// Runs `app` frame by frame until `stop` is reached or the app asks to exit. The clock's mode
/// decides the pace; in real-time mode the loop sleeps until the next step is due instead of
/// spinning (see `wait_for_next_frame`).
pub fn run(app: &mut App, stop: StopAfter) -> RunReport {
    finish_setup(app);
    run_schedules_on_this_thread(app);
    let limit = stop.step_limit();
    let started = Instant::now();
    loop {
        let mut cap = u64::MAX;
        if let Some(limit) = limit {
            // The last frame must not overshoot: cap the clock to what is left.
            let left = limit.saturating_sub(app.world().resource::<SimClock>().steps);
            if left == 0 {
                break;
            }
            cap = left;
        }
        // Nor run past a replay's end: a fast frame holds many steps, and the ones after the
        // end would move the world (and a re-recording) beyond the replayed demo.
        if let Some(r) = app.world().get_resource::<Replay>() {
            cap = cap.min(r.len().saturating_sub(r.step).max(1) as u64);
        }
        app.world_mut()
            .resource_mut::<SimClock>()
            .max_steps_this_frame = u32::try_from(cap).unwrap_or(u32::MAX);
        app.update();
        if app.should_exit().is_some() || stop_requested() {
            break;
        }
        if let StopAfter::Wall(d) = stop
            && started.elapsed() >= d
        {
            break;
        }
        // The replay's end pauses the session, so sim time stops there: a --steps/--duration
        // beyond it would never be reached.
        if let Some(r) = app.world().get_resource::<Replay>()
            && r.finished
        {
            if let Some(limit) = limit {
                let steps = app.world().resource::<SimClock>().steps;
                if steps < limit {
                    info!(
                        "the replay ended after {steps} steps, before the {limit} of --steps/--duration; stopping"
                    );
                }
            }
            break;
        }
        wait_for_next_frame(app.world());
    }
    let clock = app.world().resource::<SimClock>();
    RunReport {
        steps: clock.steps,
        sim_time: clock.sim_time,
        wall: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::FramePacing;

    #[test]
    fn frame_paced_runs_wake_per_frame_while_controlled_and_per_batch_while_watched() {
        // 100 Hz: frames at steps 0, 3, 5, 8; after step 0, the next is at 3 and the batch of
        // two (frames 1 and 2) ends at 5.
        let mut clock = SimClock::default();
        assert_eq!(
            frame_paced_lag(&clock),
            None,
            "no pacing without a paced protocol"
        );
        let watched = FramePacing {
            next_frame_step: 3,
            watched_wake_step: 5,
            sole_clients: true,
            controlled: false,
        };
        clock.frame_pacing = Some(watched);
        let steps = |d: Duration| ((d - PACING_MARGIN).as_secs_f64() / SIM_DT).round() as u64;
        // Watched: the loop sleeps until step 5 is due (the 5th step from step 0 on).
        let lag = frame_paced_lag(&clock).expect("paced");
        assert_eq!(steps(lag), 4);
        // Controlled: until the next frame's step.
        clock.frame_pacing = Some(FramePacing {
            controlled: true,
            ..watched
        });
        assert_eq!(steps(frame_paced_lag(&clock).expect("paced")), 2);
        // Anyone else connected: no pacing by frames at all.
        clock.frame_pacing = Some(FramePacing {
            sole_clients: false,
            ..watched
        });
        assert_eq!(frame_paced_lag(&clock), None);
        // Fast mode never sleeps for frames.
        clock.frame_pacing = Some(watched);
        clock.mode = ClockMode::Fast;
        assert_eq!(frame_paced_lag(&clock), None);
    }

    #[test]
    fn a_signal_burst_is_one_request_and_later_ones_escalate() {
        let mut signals = StopSignals::new();
        let t0 = Instant::now();
        // GNU timeout: the child, then the whole group, microseconds apart.
        assert_eq!(signals.on_signal(t0), StopRequest::Stop);
        assert_eq!(
            signals.on_signal(t0 + Duration::from_micros(20)),
            StopRequest::Repeated
        );
        assert_eq!(
            signals.on_signal(t0 + SIGNAL_GRACE - Duration::from_millis(1)),
            StopRequest::Repeated
        );
        // A deliberate second Ctrl-C after the grace period.
        let second = t0 + SIGNAL_GRACE + Duration::from_millis(500);
        assert_eq!(signals.on_signal(second), StopRequest::Hurry);
        assert_eq!(
            signals.on_signal(second + Duration::from_millis(10)),
            StopRequest::Repeated
        );
        assert_eq!(
            signals.on_signal(second + SIGNAL_GRACE),
            StopRequest::ExitNow
        );
    }
}
