//! A few seconds of history for the panel's plots, sampled once per frame: joint angles and
//! targets, step cost, frame rate, and each teleop client's round trip.

use std::collections::{BTreeMap, VecDeque};

use bevy::prelude::*;

use crate::protocol::registry::{Connections, Protocol, Role};
use crate::sim::{ClockSystems, JointCommand, SimClock, SimRef};

/// Seconds of wall time the plots show.
pub const WINDOW_S: f64 = 10.0;

#[derive(Clone, Debug)]
pub struct Sample {
    /// Wall seconds since the app started.
    pub t: f64,
    pub q: Vec<f32>,
    /// Position targets (NaN where a joint is not position-controlled).
    pub target: Vec<f32>,
    pub step_cost_us: f64,
}

#[derive(Resource, Default)]
pub struct History {
    pub samples: VecDeque<Sample>,
    /// Round trip (ms) per teleop peer, as (t, ms).
    pub rtt: BTreeMap<String, VecDeque<[f64; 2]>>,
    /// Smoothed frames per second.
    pub fps: f64,
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<History>()
        .add_systems(Update, sample.after(ClockSystems));
}

fn sample(
    mut history: ResMut<History>,
    time: Res<Time<Real>>,
    sim: SimRef,
    clock: Res<SimClock>,
    conns: Option<Res<Connections>>,
) {
    let t = time.elapsed_secs_f64();
    let dt = time.delta_secs_f64();
    if dt > 0.0 {
        let fps = 1.0 / dt;
        history.fps = if history.fps == 0.0 {
            fps
        } else {
            0.95 * history.fps + 0.05 * fps
        };
    }
    let world = sim.view();
    let target = world
        .commands()
        .iter()
        .map(|c| match *c {
            JointCommand::Position { target, .. } => target,
            _ => f32::NAN,
        })
        .collect();
    history.samples.push_back(Sample {
        t,
        q: world.joint_positions(),
        target,
        step_cost_us: clock.stats.last_step_cost.as_secs_f64() * 1e6,
    });
    while history.samples.front().is_some_and(|s| s.t < t - WINDOW_S) {
        history.samples.pop_front();
    }
    if let Some(conns) = conns {
        for (_, c) in conns.of(Protocol::Teleop) {
            if let (Some(rtt), false) = (c.rtt(), c.role == Role::NoSession) {
                history
                    .rtt
                    .entry(c.peer.to_string())
                    .or_default()
                    .push_back([t, rtt.as_secs_f64() * 1e3]);
            }
        }
        for series in history.rtt.values_mut() {
            while series.front().is_some_and(|p| p[0] < t - WINDOW_S) {
                series.pop_front();
            }
        }
        history.rtt.retain(|_, s| !s.is_empty());
    }
}
