//! `/joint_trajectory` (trajectory_msgs/JointTrajectory): validation, and sampling at a sim time,
//! as ros2_control's joint_trajectory_controller reads the message. Sans-IO and pure, so the
//! same message, arrival time and start pose always give the same targets (determinism), and
//! the bridge only has to call [`Trajectory::sample`] once per step.
//!
//! Only `positions` and `velocities` of a point are used; `accelerations` and `effort` are
//! ignored, neither checked nor followed (the bridge drives position targets with a velocity
//! feed-forward, which has no place for them).

use super::command::{JointNameError, resolve_names, shown};
use super::msgs::{Duration, JointTrajectory, Time};
use super::stamp;

/// At most this many points: a minute of a 100 Hz trajectory is 6 000, and the cap bounds the
/// work (and memory) one hostile message can cost.
pub const MAX_POINTS: usize = 10_000;

/// Positions and velocities must lie within ±this. It is not a joint limit (the bridge clamps
/// to those); it keeps every sample finite: with finite knots this small, no interpolation or
/// slope over the shortest segment (1 ns) can overflow to infinity.
pub const MAX_MAGNITUDE: f64 = 1e9;

/// A stamp more than this far ahead of sim time is refused: it is almost surely wall-clock
/// time from a node without `use_sim_time`, and would otherwise wait for decades, silently.
pub const MAX_LEAD_SECONDS: f64 = 3600.0;

const NANOS_PER_SECOND: u32 = 1_000_000_000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrajectoryError {
    #[error(transparent)]
    Name(#[from] JointNameError),
    #[error("`joint_names` is empty")]
    NoJoints,
    #[error("no points")]
    NoPoints,
    #[error("{got} points; at most {max} are accepted")]
    TooManyPoints { got: usize, max: usize },
    #[error(
        "point {point}: `{field}` has {got} values for {names} joint names{}",
        may_be_empty(.field)
    )]
    WrongLength {
        point: usize,
        field: &'static str,
        names: usize,
        got: usize,
    },
    #[error("point {point}: `{field}` of joint {joint:?} is {value}, not a finite number")]
    NotFinite {
        point: usize,
        field: &'static str,
        joint: String,
        value: f64,
    },
    #[error(
        "point {point}: `{field}` of joint {joint:?} is {value}, beyond ±{MAX_MAGNITUDE:e} \
         (a sanity bound, not a joint limit)"
    )]
    OutOfRange {
        point: usize,
        field: &'static str,
        joint: String,
        value: f64,
    },
    #[error(
        "point {point}: bad time_from_start (sec {sec}, nanosec {nanosec}): nanosec must be \
         below 1e9 and the total not negative"
    )]
    BadDuration {
        point: usize,
        sec: i32,
        nanosec: u32,
    },
    #[error(
        "times go backwards at point {point}: time_from_start {time} s is not after point {}'s \
         {previous} s (times must strictly increase)",
        .point.saturating_sub(1)
    )]
    TimesGoBackwards {
        point: usize,
        previous: f64,
        time: f64,
    },
    #[error(
        "bad header.stamp (sec {sec}, nanosec {nanosec}): nanosec must be below 1e9 and the \
         time not negative"
    )]
    BadStamp { sec: i32, nanosec: u32 },
    #[error(
        "header.stamp is {stamp} s, more than {MAX_LEAD_SECONDS} s ahead of sim time {now} s: \
         wall-clock time? Stamp in sim time (use_sim_time:=true), or leave it zero to start at \
         once"
    )]
    StampFarAhead { stamp: f64, now: f64 },
    #[error(
        "the trajectory ends at {end} s (header.stamp + the last time_from_start), before sim \
         time {now} s: nothing is left to follow"
    )]
    EndsInPast { end: f64, now: f64 },
    #[error("{got} current joint positions for {expected} robot joints (a caller bug)")]
    CurrentLength { expected: usize, got: usize },
}

/// The tail of a wrong-length message: `velocities` may be empty, `positions` may not.
fn may_be_empty(field: &str) -> &'static str {
    if field == "velocities" {
        " (it may also be empty)"
    } else {
        ""
    }
}

/// A validated trajectory, fixed in sim time: ready to [`sample`](Self::sample) each step.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    /// Robot joint index of each trajectory joint, in the message's `joint_names` order.
    joints: Vec<usize>,
    /// Where each trajectory joint was when the trajectory was accepted.
    from: Vec<f64>,
    /// When the move from `from` towards point 0 begins: the later of arrival and the stamp.
    from_time: f64,
    /// Absolute sim time of each point (stamp + time_from_start); non-decreasing (strictly
    /// increasing before the rounding of very long trajectories to f64).
    knots: Vec<f64>,
    /// Positions of point k at `k * joints.len()..`.
    positions: Vec<f64>,
    /// Velocities laid out as `positions`, for the points that carry them.
    velocities: Vec<Option<Vec<f64>>>,
}

/// Seconds of a `Duration` that passed [`check_duration`], with the same float formula as
/// `stamp::seconds`, so that equal times give equal floats.
fn duration_seconds(d: Duration) -> f64 {
    stamp::seconds(Time {
        sec: d.sec,
        nanosec: d.nanosec,
    })
}

/// Each value finite and within [`MAX_MAGNITUDE`].
fn check_values(
    point: usize,
    field: &'static str,
    values: &[f64],
    names: &[String],
) -> Result<(), TrajectoryError> {
    for (value, name) in values.iter().zip(names) {
        let value = *value;
        if !value.is_finite() {
            return Err(TrajectoryError::NotFinite {
                point,
                field,
                joint: shown(name),
                value,
            });
        }
        if value.abs() > MAX_MAGNITUDE {
            return Err(TrajectoryError::OutOfRange {
                point,
                field,
                joint: shown(name),
                value,
            });
        }
    }
    Ok(())
}

impl Trajectory {
    /// Validates `msg` and fixes it in sim time. `joints`: the robot's joint names in robot
    /// order; `now`: sim seconds when it arrived; `current`: the robot's joint positions now,
    /// in robot joint order (`current.len() == joints.len()`).
    ///
    /// Start time (the instant `time_from_start` counts from): a zero `header.stamp` means
    /// `now`, any other stamp is sim time. A stamp in the past starts at once with the elapsed
    /// time skipped, as joint_trajectory_controller does: points keep their absolute times, the
    /// move towards the first point still ahead begins now, and a trajectory that ends before
    /// `now` is refused.
    pub fn new(
        msg: &JointTrajectory,
        joints: &[&str],
        now: f64,
        current: &[f64],
    ) -> Result<Self, TrajectoryError> {
        if msg.joint_names.is_empty() {
            return Err(TrajectoryError::NoJoints);
        }
        let indices = resolve_names(&msg.joint_names, joints)?;
        let Time { sec, nanosec } = msg.header.stamp;
        if nanosec >= NANOS_PER_SECOND || sec < 0 {
            return Err(TrajectoryError::BadStamp { sec, nanosec });
        }
        if msg.points.is_empty() {
            return Err(TrajectoryError::NoPoints);
        }
        if msg.points.len() > MAX_POINTS {
            return Err(TrajectoryError::TooManyPoints {
                got: msg.points.len(),
                max: MAX_POINTS,
            });
        }
        if current.len() != joints.len() {
            return Err(TrajectoryError::CurrentLength {
                expected: joints.len(),
                got: current.len(),
            });
        }

        let n = indices.len();
        let mut times = Vec::with_capacity(msg.points.len());
        let mut positions = Vec::with_capacity(msg.points.len() * n);
        let mut velocities = Vec::with_capacity(msg.points.len());
        let mut previous: Option<Duration> = None;
        for (k, point) in msg.points.iter().enumerate() {
            let d = point.time_from_start;
            if d.nanosec >= NANOS_PER_SECOND || d.sec < 0 {
                return Err(TrajectoryError::BadDuration {
                    point: k,
                    sec: d.sec,
                    nanosec: d.nanosec,
                });
            }
            // Compared as integers: two times a nanosecond apart may be one f64 apart or none.
            if let Some(prev) = previous
                && d <= prev
            {
                return Err(TrajectoryError::TimesGoBackwards {
                    point: k,
                    previous: duration_seconds(prev),
                    time: duration_seconds(d),
                });
            }
            previous = Some(d);
            times.push(duration_seconds(d));

            if point.positions.len() != n {
                return Err(TrajectoryError::WrongLength {
                    point: k,
                    field: "positions",
                    names: n,
                    got: point.positions.len(),
                });
            }
            check_values(k, "positions", &point.positions, &msg.joint_names)?;
            positions.extend_from_slice(&point.positions);
            velocities.push(match point.velocities.len() {
                0 => None,
                len if len == n => {
                    check_values(k, "velocities", &point.velocities, &msg.joint_names)?;
                    Some(point.velocities.clone())
                }
                got => {
                    return Err(TrajectoryError::WrongLength {
                        point: k,
                        field: "velocities",
                        names: n,
                        got,
                    });
                }
            });
        }

        let start = if msg.header.stamp == Time::default() {
            now
        } else {
            stamp::seconds(msg.header.stamp)
        };
        if start - now > MAX_LEAD_SECONDS {
            return Err(TrajectoryError::StampFarAhead { stamp: start, now });
        }
        let knots: Vec<f64> = times.iter().map(|t| start + t).collect();
        let end = knots[knots.len() - 1];
        if end < now {
            return Err(TrajectoryError::EndsInPast { end, now });
        }
        Ok(Self {
            from: indices.iter().map(|&i| current[i]).collect(),
            joints: indices,
            from_time: start.max(now),
            knots,
            positions,
            velocities,
        })
    }

    /// Targets at sim time `t` (seconds): (robot joint index, position, velocity) for each
    /// trajectory joint, in [`joints`](Self::joints) order.
    ///
    /// - Before the start: the position at arrival, held (velocity 0).
    /// - Before point 0: linear from the position at arrival to point 0 (reached at its
    ///   time_from_start); a point 0 at time 0 is the target at once.
    /// - Between points: cubic Hermite when both points carry velocities, so the samples pass
    ///   through each knot with its velocity; else linear, with the segment's slope as the
    ///   velocity.
    /// - From the last point on: that point, held, velocity 0.
    pub fn sample(&self, t: f64) -> Vec<(usize, f64, f64)> {
        let n = self.joints.len();
        let hold = |positions: &[f64]| -> Vec<(usize, f64, f64)> {
            self.joints
                .iter()
                .zip(positions)
                .map(|(&j, &p)| (j, p, 0.0))
                .collect()
        };
        // A NaN time holds too, rather than interpolating with NaN.
        if t.is_nan() || t < self.from_time {
            return hold(&self.from);
        }
        // The first knot after t: segment [knots[next-1], knots[next]) holds t. Knots that
        // rounded to the same float give an empty segment that is never picked, so no
        // division below is by zero.
        let next = self.knots.partition_point(|&k| k <= t);
        if next == self.knots.len() {
            return hold(&self.positions[(next - 1) * n..]);
        }
        let to = &self.positions[next * n..(next + 1) * n];
        let (t0, from, from_velocity) = if next == 0 {
            (self.from_time, &self.from[..], None)
        } else {
            let k = next - 1;
            (
                self.knots[k],
                &self.positions[k * n..next * n],
                self.velocities[k].as_deref(),
            )
        };
        let dt = self.knots[next] - t0;
        let s = (t - t0) / dt;
        let hermite = from_velocity.zip(self.velocities[next].as_deref());
        (0..n)
            .map(|i| {
                let (position, velocity) = match hermite {
                    Some((v0, v1)) => hermite_at(from[i], v0[i], to[i], v1[i], dt, s),
                    None => linear_at(from[i], to[i], dt, s),
                };
                (self.joints[i], position, velocity)
            })
            .collect()
    }

    /// Absolute sim time of the last point; from then on [`sample`](Self::sample) holds it.
    pub fn end_time(&self) -> f64 {
        self.knots[self.knots.len() - 1]
    }

    /// Absolute sim time at which the move towards the first point begins (the later of
    /// arrival and `header.stamp`).
    pub fn start_time(&self) -> f64 {
        self.from_time
    }

    /// Robot joint indices it drives, in the message's `joint_names` order.
    pub fn joints(&self) -> &[usize] {
        &self.joints
    }
}

/// Linear from `p0` to `p1` at fraction `s` of a segment `dt` long: exact at `s = 0`, and
/// clamped to the two ends, which the exact value never leaves but a rounded one could by an
/// ulp (a target past a knot would be an overshoot the sender never asked for).
fn linear_at(p0: f64, p1: f64, dt: f64, s: f64) -> (f64, f64) {
    let p = (p0 + (p1 - p0) * s).clamp(p0.min(p1), p0.max(p1));
    (p, (p1 - p0) / dt)
}

/// Cubic Hermite from (`p0`, `v0`) to (`p1`, `v1`) at fraction `s` of a segment `dt` long:
/// position and its time derivative. At `s = 0` every term but `p0` (and `v0`) is an exact
/// zero, so a knot is hit exactly.
fn hermite_at(p0: f64, v0: f64, p1: f64, v1: f64, dt: f64, s: f64) -> (f64, f64) {
    let s2 = s * s;
    let s3 = s2 * s;
    let h00 = 2.0 * s3 - 3.0 * s2 + 1.0;
    let h10 = s3 - 2.0 * s2 + s;
    let h01 = -2.0 * s3 + 3.0 * s2;
    let h11 = s3 - s2;
    let p = h00 * p0 + h10 * dt * v0 + h01 * p1 + h11 * dt * v1;
    // d/dt = (d/ds) / dt; the tangent terms carry a dt that cancels.
    let d00 = 6.0 * s2 - 6.0 * s;
    let d10 = 3.0 * s2 - 4.0 * s + 1.0;
    let d01 = -6.0 * s2 + 6.0 * s;
    let d11 = 3.0 * s2 - 2.0 * s;
    let v = (d00 * p0 + d01 * p1) / dt + d10 * v0 + d11 * v1;
    (p, v)
}

#[cfg(test)]
mod tests;
