//! Sim time as a ROS `builtin_interfaces/Time`, computed from the step count with integers:
//! `steps * SIM_DT` in floats drifts by nanoseconds within minutes, and a `/clock` that goes
//! 4.166666666 → 4.166666665 is a backwards time jump to every `use_sim_time` node.

use super::msgs::Time;
use crate::rate::SIM_HZ;

/// Physics steps per second, as an integer: the rate of [`SIM_HZ`].
pub const STEPS_PER_SECOND: u64 = 240;
const NANOS_PER_SECOND: u64 = 1_000_000_000;

// The integer rate must be the world's rate; a change to `SIM_HZ` stops the build here.
const _: () = assert!(SIM_HZ == STEPS_PER_SECOND as f64);

/// The stamp of the state after `steps` physics steps since the episode began: exact, rounded
/// down to the nanosecond (step k of 240 Hz is at k·1e9/240 ns, a whole number only when 3
/// divides k). Saturates at `i32::MAX` seconds (≈ 68 years of sim time, 5·10¹¹ steps).
pub fn time_from_steps(steps: u64) -> Time {
    let sec = steps / STEPS_PER_SECOND;
    let rem = steps % STEPS_PER_SECOND;
    // rem < 240, so rem * 1e9 fits easily in u64.
    let nanosec = (rem * NANOS_PER_SECOND / STEPS_PER_SECOND) as u32;
    match i32::try_from(sec) {
        Ok(sec) => Time { sec, nanosec },
        Err(_) => Time {
            sec: i32::MAX,
            nanosec: (NANOS_PER_SECOND - 1) as u32,
        },
    }
}

/// A stamp from float sim seconds, for callers that only have seconds (a trajectory's start):
/// rounded to the nearest nanosecond, clamped to `[0, i32::MAX s]`, NaN as 0. Prefer
/// [`time_from_steps`] for anything published every step.
pub fn time_from_seconds(seconds: f64) -> Time {
    if seconds.is_nan() || seconds <= 0.0 {
        return Time::default();
    }
    // `as u64` saturates; the clamp is in integers, since i32::MAX s + 999 999 999 ns is not
    // representable in f64 and would round up to 2^31 s.
    let max = i32::MAX as u64 * NANOS_PER_SECOND + (NANOS_PER_SECOND - 1);
    let nanos = ((seconds * NANOS_PER_SECOND as f64).round() as u64).min(max);
    Time {
        sec: (nanos / NANOS_PER_SECOND) as i32,
        nanosec: (nanos % NANOS_PER_SECOND) as u32,
    }
}

/// A stamp as float seconds (for logs and trajectory sampling).
pub fn seconds(t: Time) -> f64 {
    t.sec as f64 + t.nanosec as f64 / NANOS_PER_SECOND as f64
}
