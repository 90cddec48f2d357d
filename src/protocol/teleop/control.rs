//! revA's control pipeline (spec 004), as a spec-000 codec and command adapter: a control frame's
//! target in the operator-anchor frame becomes joint position targets through anchor transform →
//! 1€ filter → workspace clamp → table clearance → end-effector speed limit → IK (gripper kept
//! pointing down) → joint speed limit. It runs every sim step on the latest frame, so a 60 Hz
//! headset drives a 240 Hz arm smoothly, and everything in it is in sim time (deterministic).

use std::sync::Arc;

use glam::Vec3;

use super::envelope::{ControlFrame, GripMode, ObjectPose, StateFramePayload};
use super::filter::OneEuro3;
use crate::protocol::core::{Codec, CommandAdapter, ProtocolTime};
use crate::robot::kinematics::{
    AxisTarget, IkOptions, forward_kinematics, solve_ik_position_axis, tool_axis,
};
use crate::robot::{Pose, RobotModel};
use crate::scene::{Aabb, Limits, OneEuroParams, Scene, VpAnchor};
use crate::sim::{JointCommand, SIM_DT, SimWorld, WORLD_HALF_EXTENT, gripper_commands};
use crate::state::TensorState;

/// The `frame_id` revA control frames must carry.
pub const ANCHOR_FRAME: &str = "vp_operator_anchor";

/// A validated control frame, in the world frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TeleopCommand {
    pub seq: u64,
    pub target: Vec3,
    pub grip_closed: bool,
    pub clutch: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControlError {
    #[error("frame_id {0:?} is not supported (expected \"{ANCHOR_FRAME}\")")]
    FrameId(String),
    #[error("left_target_pos_m is not finite in the world frame")]
    NotFinite,
    #[error(
        "left_target_pos_m is {0} m in the world frame, outside the world (each coordinate within ±{WORLD_HALF_EXTENT} m)"
    )]
    OutOfWorld(Vec3),
    #[error("left_grip.value must be 0 or 1 in binary mode, got {0}")]
    GripValue(f64),
}

/// What the protocol sees of the world: the adapter needs only `q`; a published state frame
/// carries the rest.
#[derive(Clone, Debug, Default)]
pub struct TeleopState {
    pub q: Vec<f32>,
    pub frame: Option<StateFramePayload>,
}

/// Control frames ↔ commands and states ↔ state frames.
pub struct TeleopCodec {
    pub anchor: VpAnchor,
}

impl Codec for TeleopCodec {
    type Inbound = (u64, ControlFrame);
    type Outbound = Arc<StateFramePayload>;
    type Command = TeleopCommand;
    type State = TeleopState;
    type Error = ControlError;

    fn decode(
        &mut self,
        (seq, frame): &(u64, ControlFrame),
    ) -> Result<TeleopCommand, ControlError> {
        if frame.frame_id != ANCHOR_FRAME {
            return Err(ControlError::FrameId(frame.frame_id.clone()));
        }
        let p = self.anchor.to_sim(frame.left_target_pos_m);
        let target = Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32);
        if !target.is_finite() {
            return Err(ControlError::NotFinite);
        }
        // Refused here, before the filter: a huge finite target would overflow its state.
        if target.abs().max_element() > WORLD_HALF_EXTENT {
            return Err(ControlError::OutOfWorld(target));
        }
        let GripMode::Binary = frame.left_grip.mode;
        let v = frame.left_grip.value;
        if v != 0.0 && v != 1.0 {
            return Err(ControlError::GripValue(v));
        }
        Ok(TeleopCommand {
            seq: *seq,
            target,
            grip_closed: v == 1.0,
            clutch: frame.clutch_enabled,
        })
    }

    fn encode(&mut self, state: &TeleopState, _time: ProtocolTime, out: &mut Vec<Self::Outbound>) {
        if let Some(frame) = &state.frame {
            out.push(Arc::new(frame.clone()));
        }
    }
}

/// Which limits shaped the current setpoint; reported in state frames and as alerts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitFlags {
    pub workspace: bool,
    pub table_clearance: bool,
}

/// The adapter: latest command + current joints → joint commands for every joint.
pub struct TeleopController {
    robot: RobotModel,
    base: Pose,
    arm_joints: Vec<usize>,
    gripper: Option<usize>,
    limits: Limits,
    table_top_z: f32,
    table_min: [f32; 2],
    table_max: [f32; 2],
    tool_axis: AxisTarget,
    filter: OneEuro3,
    dt: f32,
    /// Following the hand (clutch held since the setpoint was initialised).
    engaged: bool,
    /// After a heartbeat loss the clutch must be released and pressed again.
    needs_reclutch: bool,
    /// `q_cmd` no longer describes the arm (after a reset, another controller, a new session):
    /// it is refreshed from the measured joints before it is held or followed.
    q_stale: bool,
    setpoint: Vec3,
    q_cmd: Vec<f32>,
    flags: LimitFlags,
    last_seq: u64,
}

impl TeleopController {
    pub fn new(scene: &Scene, world: &SimWorld, filter: OneEuroParams) -> Self {
        let robot = world.robot.clone();
        let tool_axis = AxisTarget {
            local_axis: tool_axis(&robot),
            // Straight down in the world, expressed in the base frame.
            direction: world.base_pose.rotation.inverse() * Vec3::NEG_Z,
            weight: 0.1,
        };
        let (table_min, table_max) = world.table_bounds();
        Self {
            arm_joints: scene.arm_joints(),
            gripper: scene.gripper_joint(),
            limits: scene.config.control.limits.clone(),
            table_top_z: world.table_top_z,
            table_min,
            table_max,
            base: world.base_pose,
            tool_axis,
            filter: OneEuro3::new(filter),
            dt: SIM_DT as f32,
            engaged: false,
            needs_reclutch: false,
            setpoint: Vec3::ZERO,
            q_cmd: world.joint_positions(),
            flags: LimitFlags::default(),
            last_seq: 0,
            q_stale: true,
            robot,
        }
    }

    /// Limits active on the current setpoint.
    pub fn flags(&self) -> LimitFlags {
        self.flags
    }

    /// The setpoint the arm is moving to (world), while following the hand.
    pub fn setpoint(&self) -> Option<Vec3> {
        self.engaged.then_some(self.setpoint)
    }

    /// `seq` of the command the arm follows (0 = none yet).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Stops following: the next engaged frame starts again from where the arm is. With
    /// `require_reclutch`, frames are ignored until the clutch has been released and re-engaged.
    pub fn disengage(&mut self, require_reclutch: bool) {
        self.engaged = false;
        self.q_stale = true;
        self.flags = LimitFlags::default();
        self.needs_reclutch |= require_reclutch;
    }

    /// The workspace, table and speed limits applied to a filtered target; returns the new
    /// setpoint. Public for tests of the clamps on their own.
    pub fn limit(&mut self, filtered: Vec3) -> Vec3 {
        let ws: &Aabb = &self.limits.workspace_aabb_m;
        let mut target = ws.clamp(filtered);
        self.flags.workspace = target != filtered;
        let over_table = (self.table_min[0]..=self.table_max[0]).contains(&target.x)
            && (self.table_min[1]..=self.table_max[1]).contains(&target.y);
        let floor = self.table_top_z + self.limits.table_clearance_m;
        self.flags.table_clearance = over_table && target.z < floor;
        if self.flags.table_clearance {
            target.z = floor;
        }
        let max_move = self.limits.max_ee_speed_mps * self.dt;
        self.setpoint += (target - self.setpoint).clamp_length_max(max_move);
        self.setpoint
    }

    fn hold(&self, cmd: &TeleopCommand) -> Vec<JointCommand> {
        let mut out: Vec<JointCommand> = self
            .q_cmd
            .iter()
            .map(|&q| JointCommand::Position {
                target: q,
                velocity: 0.0,
            })
            .collect();
        self.grip(cmd, &mut out);
        out
    }

    fn grip(&self, cmd: &TeleopCommand, out: &mut [JointCommand]) {
        if let Some(leader) = self.gripper {
            let closed = if cmd.grip_closed { 1.0 } else { 0.0 };
            for (j, c) in gripper_commands(&self.robot, leader, closed) {
                if let Some(slot) = out.get_mut(j) {
                    *slot = c;
                }
            }
        }
    }
}

impl CommandAdapter for TeleopController {
    type Command = TeleopCommand;
    type State = TeleopState;
    type Action = Vec<JointCommand>;

    fn adapt(&mut self, cmd: &TeleopCommand, state: &TeleopState) -> Option<Vec<JointCommand>> {
        if self.q_stale {
            self.q_cmd.clone_from(&state.q);
            self.q_stale = false;
        }
        if !cmd.clutch {
            if self.engaged || self.needs_reclutch {
                self.disengage(false);
                self.needs_reclutch = false;
            }
            return Some(self.hold(cmd));
        }
        if self.needs_reclutch {
            return Some(self.hold(cmd));
        }
        if !self.engaged {
            // Start from where the arm is, so engaging never jumps.
            self.engaged = true;
            self.q_cmd.clone_from(&state.q);
            let poses = forward_kinematics(&self.robot, &state.q);
            let ee = poses[self.robot.ee_link].transform_point(self.robot.ee_offset);
            self.setpoint = self.base.transform_point(ee);
            self.filter.reset();
        }
        self.last_seq = cmd.seq;
        let filtered = self.filter.filter(cmd.target, self.dt);
        let setpoint = self.limit(filtered);
        let target_base = self.base.inverse().transform_point(setpoint);
        let ik = solve_ik_position_axis(
            &self.robot,
            &self.q_cmd,
            target_base,
            &self.tool_axis,
            &self.arm_joints,
            &IkOptions {
                max_iters: 12,
                tolerance: 1e-4,
                ..IkOptions::default()
            },
        );
        let max_dq = self.limits.max_joint_speed_rad_s * self.dt;
        let mut out = Vec::with_capacity(self.q_cmd.len());
        for (j, q) in self.q_cmd.iter_mut().enumerate() {
            let mut v = 0.0;
            if self.arm_joints.contains(&j) && ik.q[j].is_finite() {
                let dq = (ik.q[j] - *q).clamp(-max_dq, max_dq);
                *q += dq;
                v = dq / self.dt;
            }
            out.push(JointCommand::Position {
                target: *q,
                velocity: v,
            });
        }
        self.grip(cmd, &mut out);
        Some(out)
    }
}

/// Builds the state frame payload from a state snapshot (without per-client stats). Objects go
/// in scene order and joints in the robot's order (CONNECTED's `joint_names`).
pub fn state_payload(
    snap: &TensorState,
    world: &SimWorld,
    sim_state: &'static str,
    step: u64,
    sim_time_s: f64,
    alerts: Vec<&'static str>,
    controller: Option<&TeleopController>,
) -> StateFramePayload {
    use super::envelope::{PoseOut, StateExtensions, Stats};
    let objects = world
        .objects
        .iter()
        .filter_map(|o| {
            let (pose, _, _) = snap.objects.get(&o.name)?.pose();
            Some(ObjectPose {
                name: o.name.clone(),
                pose: PoseOut {
                    pos_m: pose.translation.to_array(),
                    // glam stores x, y, z, w: exactly the wire order.
                    quat_xyzw: pose.rotation.to_array(),
                },
            })
        })
        .collect();
    let robot = &world.robot;
    let (q, qd, ee) = match snap.robots.get(&robot.name) {
        Some(r) => (
            r.model_order(&r.joint_pos, robot),
            r.model_order(&r.joint_vel, robot),
            r.ee_position(robot),
        ),
        None => (Vec::new(), Vec::new(), Vec3::ZERO),
    };
    StateFramePayload {
        sim_state,
        q_rad: q,
        qd_rad_s: qd,
        ee_pos_m: ee.to_array(),
        objects,
        alerts,
        stats: Stats { rtt_ms_est: 0.0 },
        extensions: StateExtensions {
            sim_time_s,
            step,
            episode: 0,
            last_control_seq: controller.map_or(0, |c| c.last_seq()),
            ee_target_m: controller.and_then(|c| c.setpoint()).map(|p| p.to_array()),
            referee: None,
        },
    }
}
