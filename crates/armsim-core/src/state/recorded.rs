//! Joint commands as recorded MetaSim actions and back: what the recorder writes after every
//! step (`dof_pos_target` by name, plus armsim's exact control modes when some joint is not plain
//! position control) and what a replay by action feeds the physics. Shared by the app and the
//! Python package, so a recording from either replays bit for bit in the other.

use std::collections::BTreeMap;

use crate::robot::RobotModel;
use crate::sim::{JointCommand, SimView};
use crate::trajectory::{ActionFrame, JointValues, Value};

/// The exact command of every joint as an action: MetaSim's `dof_pos_target` for all joints
/// (where a joint is not position-controlled, the position its command aims at, as an agent's
/// PD effector target, or else the measured position: [`SimView::action_positions`]), and, only
/// when some joint is not plain position control, `dof_vel_target`, `dof_effort_target` and
/// `control_mode`. A replay by action drives such joints by their mode, not by the aim.
pub fn action_of(sim: &SimView<'_>) -> ActionFrame {
    let q = sim.action_positions();
    let names = |j: usize| sim.robot.joints[j].name.clone();
    let mut pos = JointValues::default();
    let mut vel = Vec::new();
    let mut effort = Vec::new();
    let mut mode = Vec::new();
    for (j, cmd) in sim.commands().iter().enumerate() {
        match *cmd {
            JointCommand::Position { target, velocity } => {
                pos.set(&names(j), f64::from(target));
                if velocity != 0.0 {
                    vel.push((names(j), Value::Float(f64::from(velocity))));
                }
                mode.push((names(j), Value::Str("position".into())));
            }
            JointCommand::Velocity { target } => {
                pos.set(&names(j), f64::from(q[j]));
                vel.push((names(j), Value::Float(f64::from(target))));
                mode.push((names(j), Value::Str("velocity".into())));
            }
            JointCommand::Effort { torque } => {
                pos.set(&names(j), f64::from(q[j]));
                effort.push((names(j), Value::Float(f64::from(torque))));
                mode.push((names(j), Value::Str("effort".into())));
            }
        }
    }
    let mut action = ActionFrame::new(pos);
    let plain = vel.is_empty() && effort.is_empty();
    if !plain {
        action
            .other
            .push(("dof_vel_target".into(), Value::Dict(vel)));
        action
            .other
            .push(("dof_effort_target".into(), Value::Dict(effort)));
        action
            .other
            .push(("control_mode".into(), Value::Dict(mode)));
    }
    action
}

/// The joint commands an action stands for (the inverse of [`action_of`]); joints the action
/// does not name keep `current`.
pub fn commands_of(
    robot: &RobotModel,
    action: &ActionFrame,
    current: &[JointCommand],
) -> Vec<JointCommand> {
    let other = |key: &str| -> BTreeMap<String, Value> {
        action
            .other
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.as_dict())
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    };
    let (vel, effort_map, mode) = (
        other("dof_vel_target"),
        other("dof_effort_target"),
        other("control_mode"),
    );
    let mut out = current.to_vec();
    for (j, joint) in robot.joints.iter().enumerate() {
        let target = action.dof_pos_target.get(&joint.name);
        let v = vel.get(&joint.name).and_then(Value::as_f64).unwrap_or(0.0) as f32;
        let cmd = match mode.get(&joint.name).and_then(Value::as_str) {
            Some("velocity") => JointCommand::Velocity { target: v },
            Some("effort") => JointCommand::Effort {
                torque: effort_map
                    .get(&joint.name)
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0) as f32,
            },
            _ => match target {
                Some(t) => JointCommand::Position {
                    target: t as f32,
                    velocity: v,
                },
                None => continue,
            },
        };
        out[j] = cmd;
    }
    out
}

/// A recorded demo's `extra`: the scene, the rate, how often a state was kept, and whether the
/// demo starts from the scene as loaded (which lets a replay by action start from a fresh load
/// and reproduce the run bit for bit).
pub fn demo_extra(scene_id: &str, every: u32, fresh: bool) -> Value {
    Value::Dict(vec![
        ("scene_id".into(), Value::Str(scene_id.to_owned())),
        ("sim_hz".into(), Value::Float(crate::sim::SIM_HZ)),
        ("state_every".into(), Value::Int(i64::from(every.max(1)))),
        ("from_fresh_load".into(), Value::Bool(fresh)),
    ])
}
