//! `TeleopIk`: the teleop control pipeline (`armsim_core::protocol::teleop::control`) on its own,
//! for `armsim.connect`: the client turns an action into joint targets for a remote arm with the
//! same filter, limits and IK as the in-process env, plus gravity compensation for its effectors.

use std::sync::Arc;

use armsim_core::protocol::teleop::control::{TeleopCommand, TeleopController, TeleopState};
use armsim_core::protocol::tick::CommandAdapter;
use armsim_core::scene::Scene;
use armsim_core::sim::{JointCommand, SimWorld, gripper_commands};
use glam::Vec3;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::assets::resolve_scene;

/// The teleop control pipeline on its own, for driving a remote arm (`armsim.connect`): given
/// the hand target and the measured joints, the joint position targets of one physics step.
#[pyclass(module = "armsim._core")]
pub struct TeleopIk {
    scene: Arc<Scene>,
    controller: TeleopController,
    gripper: Option<usize>,
}

#[pymethods]
impl TeleopIk {
    #[new]
    #[pyo3(signature = (scene=None))]
    fn new(scene: Option<String>) -> PyResult<Self> {
        let scene = resolve_scene(scene.as_deref()).map_err(PyValueError::new_err)?;
        let world = SimWorld::new(&scene);
        let controller =
            TeleopController::new(&scene, &world.view(), scene.config.control.filter.params);
        Ok(Self {
            gripper: scene.gripper_joint(),
            scene,
            controller,
        })
    }

    /// Forget the hand: the next call starts again from the measured arm.
    fn reset(&mut self) {
        self.controller.disengage(false);
    }

    /// `steps` physics steps of the pipeline towards `target` (world, m) from the measured
    /// joints `q`, `qd` (robot order). Returns (position targets, velocity feed-forward) per
    /// joint, robot order; the gripper joints get its open/closed targets.
    fn solve(
        &mut self,
        target: [f32; 3],
        grip_closed: bool,
        q: PyReadonlyArray1<'_, f64>,
        qd: PyReadonlyArray1<'_, f64>,
        steps: u32,
    ) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let q: Vec<f32> = q.as_array().iter().map(|&v| v as f32).collect();
        let qd: Vec<f32> = qd.as_array().iter().map(|&v| v as f32).collect();
        let n = self.scene.robot.joints.len();
        if q.len() != n || qd.len() != n {
            return Err(PyValueError::new_err(format!(
                "q and qd need {n} values (robot order)"
            )));
        }
        let target = Vec3::from(target);
        if !target.is_finite() {
            return Err(PyValueError::new_err("the target must be finite"));
        }
        let cmd = TeleopCommand {
            seq: 1,
            target,
            grip_closed,
            clutch: true,
        };
        let state = TeleopState { q, qd, frame: None };
        let mut last = None;
        for _ in 0..steps.max(1) {
            last = self.controller.adapt(&cmd, &state);
        }
        let commands =
            last.ok_or_else(|| PyRuntimeError::new_err("the pipeline gave no command"))?;
        let mut pos = Vec::with_capacity(n);
        let mut vel = Vec::with_capacity(n);
        for c in &commands {
            match *c {
                JointCommand::Position { target, velocity } => {
                    pos.push(f64::from(target));
                    vel.push(f64::from(velocity));
                }
                _ => {
                    pos.push(f64::NAN);
                    vel.push(0.0);
                }
            }
        }
        if let Some(leader) = self.gripper {
            for (j, c) in gripper_commands(
                &self.scene.robot,
                leader,
                if grip_closed { 1.0 } else { 0.0 },
            ) {
                if let JointCommand::Position { target, .. } = c {
                    pos[j] = f64::from(target);
                }
            }
        }
        Ok((pos, vel))
    }

    /// The tool point (world, m) of joint positions `q` (robot order).
    fn tool_point(&self, q: PyReadonlyArray1<'_, f64>) -> Vec<f64> {
        let q: Vec<f32> = q.as_array().iter().map(|&v| v as f32).collect();
        self.controller
            .tool_point(&q)
            .to_array()
            .map(f64::from)
            .to_vec()
    }

    /// Gravity-compensation torques (robot order) at `q`, for PD effectors on a remote arm.
    fn gravity(&self, q: PyReadonlyArray1<'_, f64>) -> Vec<f64> {
        let q: Vec<f32> = q.as_array().iter().map(|&v| v as f32).collect();
        let base = armsim_core::robot::Pose::new(
            Vec3::from(self.scene.config.robot.base_pose.pos_m),
            glam::Quat::from_array(self.scene.config.robot.base_pose.quat_xyzw).normalize(),
        );
        let g = base.rotation.inverse() * Vec3::new(0.0, 0.0, -9.81);
        armsim_core::robot::kinematics::gravity_compensation(&self.scene.robot, &q, g, 1000.0)
            .into_iter()
            .map(f64::from)
            .collect()
    }
}
