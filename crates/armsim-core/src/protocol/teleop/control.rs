//! revA's control pipeline, as a `Codec` and `CommandAdapter` of the tick: a control frame's
//! target in the operator-anchor frame becomes joint position targets through anchor transform →
//! 1€ filter → workspace clamp → table clearance → end-effector speed limit → IK (gripper kept
//! pointing down) → joint speed limit. It runs every sim step on the latest frame, so a 60 Hz
//! headset drives a 240 Hz arm smoothly, and everything in it is in sim time (deterministic).
//!
//! The joint speed limit scales the whole joint step by one factor, so the commanded motion
//! keeps its direction (clamping each joint on its own bends the tool's path, under the
//! clearance on fast moves); where it binds, the setpoint waits for the arm rather than running
//! ahead of it. Each step is also checked against the limits at the tool point it commands, and
//! the alerts come from the measured arm too, not only from the target.

use std::sync::Arc;

use glam::Vec3;

use super::envelope::{ControlFrame, GripMode, ObjectPose, StateFramePayload};
use super::filter::OneEuro3;
use crate::protocol::tick::{Codec, CommandAdapter, ProtocolTime};
use crate::robot::kinematics::{
    AxisTarget, IkOptions, forward_kinematics, gravity_compensation, solve_ik_position,
    solve_ik_position_first, tool_axis,
};
use crate::robot::{Pose, RobotModel};
use crate::scene::{Aabb, Limits, OneEuroParams, Scene, VpAnchor};
use crate::sim::{JointCommand, SIM_DT, SimView, Stamp, WORLD_HALF_EXTENT, gripper_commands};
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
    /// Measured joint velocities (for the speed alert); may be empty.
    pub qd: Vec<f32>,
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

/// Which limits shaped the current setpoint, or were crossed by the arm itself; reported in
/// state frames and as alerts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitFlags {
    pub workspace: bool,
    /// The target was raised to the clearance, or the measured tool point is below it.
    pub table_clearance: bool,
    /// The joint speed limit slowed the commanded motion, or a joint measured faster than it.
    pub speed_limit: bool,
}

impl LimitFlags {
    /// Either's flags.
    pub fn union(self, other: Self) -> Self {
        Self {
            workspace: self.workspace || other.workspace,
            table_clearance: self.table_clearance || other.table_clearance,
            speed_limit: self.speed_limit || other.speed_limit,
        }
    }
}

/// How far the measured tool point may sink under the clearance (PD tracking error) before
/// the arm itself is reported as under it.
pub const CLEARANCE_TOLERANCE_M: f32 = 0.005;
/// How much faster than `max_joint_speed_rad_s` a joint may be measured (the motor's overshoot
/// at the end of a ramp) before the arm itself is reported as too fast.
pub const SPEED_TOLERANCE: f32 = 1.1;
/// How far the setpoint may run ahead of the commanded tool point while the joint speed limit
/// holds the arm back.
const SETPOINT_LEAD_M: f32 = 0.01;
/// Violation of the limits (metres) a commanded step may leave, for rounding.
const PATH_TOLERANCE_M: f32 = 1e-3;
/// Halvings of a joint step tried before the step is refused as leaving the limits.
const PATH_BISECTIONS: usize = 6;
/// Gravity in the world (m/s²), as `SimWorld` sets it.
const GRAVITY: Vec3 = Vec3::new(0.0, 0.0, -9.81);
/// Density (kg/m³) the physics gives links whose file gives no mass (`sim::arm`).
const LINK_DENSITY: f32 = 1000.0;

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
    /// Gravity in the base frame, for [`Self::preloaded`].
    gravity: Vec3,
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
    pub fn new(scene: &Scene, world: &SimView<'_>, filter: OneEuroParams) -> Self {
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
            gravity: world.base_pose.rotation.inverse() * GRAVITY,
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

    /// A new controller takes over: nothing of the previous one's following, clutch state or
    /// sequence numbers carries over.
    pub fn hand_over(&mut self) {
        self.disengage(false);
        self.needs_reclutch = false;
        self.last_seq = 0;
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

    fn over_table(&self, p: Vec3) -> bool {
        (self.table_min[0]..=self.table_max[0]).contains(&p.x)
            && (self.table_min[1]..=self.table_max[1]).contains(&p.y)
    }

    fn floor(&self) -> f32 {
        self.table_top_z + self.limits.table_clearance_m
    }

    /// The tool point (world) of joint positions `q`.
    pub fn tool_point(&self, q: &[f32]) -> Vec3 {
        let poses = forward_kinematics(&self.robot, q);
        let ee = poses[self.robot.ee_link].transform_point(self.robot.ee_offset);
        self.base.transform_point(ee)
    }

    /// How far (metres) a tool point is outside the workspace box plus how far under the
    /// clearance over the table; 0 inside the limits.
    fn violation(&self, p: Vec3) -> f32 {
        let outside = (self.limits.workspace_aabb_m.clamp(p) - p).length();
        let under = if self.over_table(p) {
            (self.floor() - p.z).max(0.0)
        } else {
            0.0
        };
        outside + under
    }

    /// What the arm does, measured, against the limits: a tool point under the clearance or a
    /// joint faster than the limit raises the alert even where the target was fine.
    pub fn observe(&mut self, q: &[f32], qd: &[f32]) {
        if q.len() < self.robot.joints.len() {
            return;
        }
        let p = self.tool_point(q);
        if self.over_table(p) && p.z < self.floor() - CLEARANCE_TOLERANCE_M {
            self.flags.table_clearance = true;
        }
        let limit = self.limits.max_joint_speed_rad_s * SPEED_TOLERANCE;
        if self
            .arm_joints
            .iter()
            .any(|&j| qd.get(j).is_some_and(|v| v.abs() > limit))
        {
            self.flags.speed_limit = true;
        }
    }

    /// The workspace, table and speed limits applied to a filtered target; returns the new
    /// setpoint. Public for tests of the clamps on their own.
    pub fn limit(&mut self, filtered: Vec3) -> Vec3 {
        let ws: &Aabb = &self.limits.workspace_aabb_m;
        let mut target = ws.clamp(filtered);
        self.flags.workspace = target != filtered;
        let floor = self.floor();
        self.flags.table_clearance = self.over_table(target) && target.z < floor;
        if self.flags.table_clearance {
            target.z = floor;
        }
        let max_move = self.limits.max_ee_speed_mps * self.dt;
        self.setpoint += (target - self.setpoint).clamp_length_max(max_move);
        self.setpoint
    }

    /// The joint step from `q_cmd` towards `goal` (arm joints only), and the one factor that
    /// scales it so that the fastest joint keeps to the speed limit and the motion keeps its
    /// direction (1 where no joint is too fast).
    fn joint_step(&self, goal: &[f32]) -> (Vec<f32>, f32) {
        let mut dq = vec![0.0; self.q_cmd.len()];
        for &j in &self.arm_joints {
            if let (Some(&target), Some(&q)) = (goal.get(j), self.q_cmd.get(j))
                && target.is_finite()
            {
                dq[j] = target - q;
            }
        }
        let largest = dq.iter().fold(0.0f32, |m, d| m.max(d.abs()));
        let max_dq = self.limits.max_joint_speed_rad_s * self.dt;
        let scale = if largest > max_dq {
            max_dq / largest
        } else {
            1.0
        };
        (dq, scale)
    }

    /// The position targets that hold the arm at `q`. A joint driven by its file's own servo
    /// (a spring of stiffness `Servo::kp`, as MuJoCo simulates it) sags under gravity by the
    /// torque over the stiffness: the SO-101's weak servos by several millimetres at the tool
    /// (its shoulder lift 31 mrad at home, in MuJoCo as here). Its target is set past `q` by that
    /// much (as far as its force range can hold), so the arm stands where the IK put it. Joints
    /// on armsim's own motors do not sag and keep `q`.
    fn preloaded(&self, q: &[f32]) -> Vec<f32> {
        if self.robot.joints.iter().all(|j| j.servo.is_none()) {
            return q.to_vec();
        }
        let torques = gravity_compensation(&self.robot, q, self.gravity, LINK_DENSITY);
        q.iter()
            .zip(&self.robot.joints)
            .zip(&torques)
            .map(|((&q, joint), &t)| match joint.servo {
                Some(s) => q + t.clamp(-s.max_force, s.max_force) / s.kp,
                None => q,
            })
            .collect()
    }

    fn hold(&self, cmd: &TeleopCommand) -> Vec<JointCommand> {
        let mut out: Vec<JointCommand> = self
            .preloaded(&self.q_cmd)
            .into_iter()
            .map(|q| JointCommand::Position {
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
        let ik_options = IkOptions {
            max_iters: 12,
            tolerance: 1e-4,
            ..IkOptions::default()
        };
        // Position first: the tool point reaches the setpoint and the gripper turns down as far
        // as that allows (a 5-joint arm cannot point down at most points above the table, and a
        // weighted compromise stopped the SO-101 1–5 cm short of them).
        let ik = solve_ik_position_first(
            &self.robot,
            &self.q_cmd,
            target_base,
            &self.tool_axis,
            &self.arm_joints,
            &ik_options,
        );
        let (dq, mut scale) = self.joint_step(&ik.q);
        let slowed = scale < 1.0;
        let mut shortened = false;
        // The commanded path stays inside the limits: a step whose tool point would leave them
        // (further than the arm already is) is shortened, or refused.
        let allowed = self
            .violation(self.tool_point(&self.q_cmd))
            .max(PATH_TOLERANCE_M);
        let step = |dq: &[f32], scale: f32| -> Vec<f32> {
            self.q_cmd
                .iter()
                .zip(dq)
                .map(|(q, d)| q + d * scale)
                .collect()
        };
        let mut q_next = step(&dq, scale);
        let mut tries = 0;
        loop {
            let p = self.tool_point(&q_next);
            if self.violation(p) <= allowed {
                break;
            }
            if !shortened {
                shortened = true;
                if self.over_table(p) && p.z < self.floor() {
                    self.flags.table_clearance = true;
                } else {
                    self.flags.workspace = true;
                }
            }
            tries += 1;
            scale = if tries > PATH_BISECTIONS {
                0.0
            } else {
                scale * 0.5
            };
            q_next = step(&dq, scale);
            if scale == 0.0 {
                break;
            }
        }
        if scale == 0.0 {
            // Refused: turning the tool towards the axis sweeps it further out than the arm is
            // (the SO-101 starts with its tool level, 9 mm behind the workspace box's face, and
            // the turn carries it into the face). Refusing that step every tick would hold the
            // arm there for good, so the tool point alone is moved to the setpoint, which lies
            // inside the limits: that step heads back in, and the full step is tried again on
            // the next tick from there.
            let position = solve_ik_position(
                &self.robot,
                &self.q_cmd,
                target_base,
                &self.arm_joints,
                &ik_options,
            );
            let (dq, scale) = self.joint_step(&position.q);
            let q = step(&dq, scale);
            if self.violation(self.tool_point(&q)) <= allowed {
                q_next = q;
            }
        }
        if slowed || shortened {
            // The setpoint keeps at most a short lead on where the arm is commanded to be, so the
            // arm heads along the straight line to the target instead of cutting across to a
            // setpoint far ahead (which bends the path, under the clearance on fast moves).
            let commanded = self.tool_point(&q_next);
            self.setpoint =
                commanded + (self.setpoint - commanded).clamp_length_max(SETPOINT_LEAD_M);
        }
        // Only where the target is reachable: beyond reach the best-effort IK wanders a little
        // from step to step, which the limit absorbs without the hand having moved too fast.
        self.flags.speed_limit = slowed && ik.converged;
        let held = self.preloaded(&q_next);
        let mut out = Vec::with_capacity(self.q_cmd.len());
        for (j, q) in self.q_cmd.iter_mut().enumerate() {
            let v = (q_next[j] - *q) / self.dt;
            *q = q_next[j];
            out.push(JointCommand::Position {
                target: held[j],
                velocity: if self.arm_joints.contains(&j) { v } else { 0.0 },
            });
        }
        self.grip(cmd, &mut out);
        self.observe(&state.q, &state.qd);
        Some(out)
    }
}

/// Builds the state frame payload from a state snapshot (without per-client stats). Objects go
/// in scene order and joints in the robot's order (CONNECTED's `joint_names`).
pub fn state_payload(
    snap: &TensorState,
    world: &SimView<'_>,
    sim_state: &'static str,
    stamp: Stamp,
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
            sim_time_s: stamp.sim_time_s,
            step: stamp.step,
            episode: stamp.episode,
            last_control_seq: controller.map_or(0, |c| c.last_seq()),
            ee_target_m: controller.and_then(|c| c.setpoint()).map(|p| p.to_array()),
            referee: None,
            link_poses: link_poses(world),
            role: "observer",
            arm_holder: None,
            global_sim_state: sim_state,
            arm_asleep: world.arm_asleep(),
        },
    }
}

/// Every link's pose in the sim frame, by name (`extensions.link_poses`).
pub fn link_poses(
    world: &SimView<'_>,
) -> std::collections::BTreeMap<String, super::envelope::PoseOut> {
    world
        .robot
        .links
        .iter()
        .zip(&world.link_bodies)
        .map(|(link, &body)| {
            let pose = world.body_pose(body);
            let out = super::envelope::PoseOut {
                pos_m: pose.translation.to_array(),
                quat_xyzw: pose.rotation.to_array(),
            };
            (link.name.clone(), out)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::kinematics::solve_ik_position_axis;
    use crate::scene::load_scene;
    use crate::sim::SimWorld;

    fn controller() -> (TeleopController, SimWorld) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/scenes/default_scene.json");
        let scene = load_scene(&path).expect("default scene loads");
        let world = SimWorld::new(&scene);
        let c = TeleopController::new(&scene, &world.view(), scene.config.control.filter.params);
        (c, world)
    }

    #[test]
    fn alerts_come_from_the_measured_arm_too() {
        let (mut c, world) = controller();
        let q = world.view().joint_positions();
        let still = vec![0.0; q.len()];
        c.observe(&q, &still);
        assert_eq!(
            c.flags(),
            LimitFlags::default(),
            "home is inside every limit"
        );
        // A joint measured faster than the limit (plus tolerance).
        let mut fast = still.clone();
        fast[c.arm_joints[0]] = c.limits.max_joint_speed_rad_s * 1.5;
        c.observe(&q, &fast);
        assert!(c.flags().speed_limit && !c.flags().table_clearance);
        // The tool point 2.5 cm under the clearance over the table (target never asked it).
        c.flags = LimitFlags::default();
        let low = Vec3::new(0.45, 0.0, c.floor() - 0.025);
        let ik = solve_ik_position_axis(
            &c.robot,
            &q,
            c.base.inverse().transform_point(low),
            &c.tool_axis,
            &c.arm_joints,
            &IkOptions::default(),
        );
        assert!((c.tool_point(&ik.q) - low).length() < 0.005);
        c.observe(&ik.q, &still);
        assert!(c.flags().table_clearance && !c.flags().speed_limit);
    }

    #[test]
    fn a_fast_target_moves_every_joint_by_one_factor() {
        let (mut c, world) = controller();
        let q0 = world.view().joint_positions();
        let state = TeleopState {
            q: q0.clone(),
            qd: vec![0.0; q0.len()],
            frame: None,
        };
        let start = c.tool_point(&q0);
        let cmd = TeleopCommand {
            seq: 1,
            target: start + Vec3::new(0.0, -0.3, 0.0),
            grip_closed: false,
            clutch: true,
        };
        // Engage, then one step: the step heads straight for the IK solution of the setpoint.
        c.adapt(&cmd, &state);
        let q1 = c.q_cmd.clone();
        let steps: Vec<f32> = c.arm_joints.iter().map(|&j| q1[j] - q0[j]).collect();
        let largest = steps.iter().fold(0.0f32, |m, d| m.max(d.abs()));
        assert!(largest <= c.limits.max_joint_speed_rad_s * c.dt * 1.0001);
        // The tool moved towards the target, not across.
        let moved = c.tool_point(&q1) - start;
        assert!(
            moved.y < 0.0 && moved.x.abs() < moved.y.abs() * 0.5,
            "{moved:?}"
        );
    }
}
