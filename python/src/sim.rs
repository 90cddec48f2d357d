//! `armsim.Sim`: one world in the Python process, stepped by armsim-sim's `SimStep` schedule
//! (`armsim_sim::embed::EmbeddedSim`: the app's own step path),
//! with joint state as numpy arrays, targets by array or by name, the MetaSim state view, the
//! referee and recording. `step` releases the GIL, so other Python threads run meanwhile.

use std::collections::BTreeMap;
use std::path::PathBuf;

use armsim_core::referee::PlayMode;
use armsim_core::scene::variation;
use armsim_core::sim::{JointCommand, SIM_DT, gripper_commands};
use armsim_core::state::{NamedAction, apply_actions, camera_states, snapshot};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyKeyError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use armsim_core::referee::{config_of, rule_book_by_name};
use armsim_sim::embed::EmbeddedSim;

use crate::assets::resolve_scene;
use crate::convert::json_to_py;
use crate::{event_to_py, traj_err};

/// One armsim world (default scene, a bundled scene name or a scene file) stepped at 240 Hz.
///
/// Joint vectors are in `joint_names` order (the robot's order). Targets start as the scene's
/// home posture (position control). `step` releases the GIL.
#[pyclass(module = "armsim._core")]
pub struct Sim {
    pub app: EmbeddedSim,
    /// The referee event `events()` returns from.
    cursor: u64,
}

pub fn mode_of(mode: &str) -> PyResult<&'static str> {
    match mode {
        "position" | "velocity" | "effort" => Ok(match mode {
            "position" => "position",
            "velocity" => "velocity",
            _ => "effort",
        }),
        _ => Err(PyValueError::new_err(format!(
            "mode must be \"position\", \"velocity\" or \"effort\", got {mode:?}"
        ))),
    }
}

#[pymethods]
impl Sim {
    /// `seed`: draw each episode's start (the scene's `extensions.armsim.randomize` block) from
    /// this seed instead of the scene's; a scene without the block raises ValueError.
    #[new]
    #[pyo3(signature = (scene=None, rules=None, seed=None))]
    fn new(scene: Option<PathBuf>, rules: Option<&str>, seed: Option<u64>) -> PyResult<Self> {
        let spec = scene.as_ref().map(|p| p.to_string_lossy().into_owned());
        let mut scene = resolve_scene(spec.as_deref()).map_err(PyValueError::new_err)?;
        if seed.is_some() {
            let mut reseeded = (*scene).clone();
            variation::override_seeds(&mut reseeded, seed, None).map_err(PyValueError::new_err)?;
            scene = std::sync::Arc::new(reseeded);
        }
        let book = match rules {
            None => None,
            Some(name) => Some(
                rule_book_by_name(name, &config_of(&scene))
                    .map_err(|e| PyValueError::new_err(e.to_string()))?,
            ),
        };
        let app = EmbeddedSim::new(scene, book);
        Ok(Self { app, cursor: 0 })
    }

    /// Runs `n` physics steps of 1/240 s with the current targets, without the GIL. Raises
    /// RuntimeError if the physics produced a non-finite state (call `reset()`).
    #[pyo3(signature = (n=1))]
    fn step(&mut self, py: Python<'_>, n: u64) -> PyResult<()> {
        let app = &mut self.app;
        let result = py.detach(|| app.step(n));
        result.map_err(PyOSError::new_err)?;
        for (_, w) in self.app.referee_mut().take_warnings() {
            let _ = PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                &std::ffi::CString::new(w).unwrap_or_default(),
                1,
            );
        }
        if let Some(why) = self.app.error() {
            return Err(PyRuntimeError::new_err(format!(
                "{why} after {} steps; call reset()",
                self.app.clock().steps
            )));
        }
        Ok(())
    }

    /// Back to the scene's initial state: bit-identical to a fresh `Sim` of the same scene
    /// (targets, referee and time too). A scene with a `randomize` block draws the next
    /// episode's start instead (`episode_start`). A recording starts a new demo.
    fn reset(&mut self) -> PyResult<()> {
        self.app.reset().map_err(PyOSError::new_err)?;
        self.cursor = self.app.referee().last_seq();
        Ok(())
    }

    /// What this episode started from, for a scene with a `randomize` block (else None):
    /// `{"seed", "episode", "episode_seed", "objects": {name: {"pos_m", "quat_xyzw", "size_m",
    /// "mass_kg", "friction"}}, "home_q"}`. `Sim(scene, seed=...)` and the scene's own seed
    /// give the same starts for the same episodes.
    #[getter]
    fn episode_start<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(start) = self.app.episode_start() else {
            return Ok(None);
        };
        let objects: serde_json::Map<String, serde_json::Value> = start
            .objects
            .iter()
            .map(|o| {
                let value = serde_json::json!({
                    "pos_m": o.pos_m, "quat_xyzw": o.quat_xyzw, "size_m": o.size_m,
                    "mass_kg": o.mass_kg, "friction": o.friction,
                });
                (o.name.clone(), value)
            })
            .collect();
        let value = serde_json::json!({
            "seed": start.seed,
            "episode": start.episode,
            "episode_seed": start.episode_seed,
            "objects": objects,
            "home_q": start.home_q,
        });
        json_to_py(py, &value).map(Some)
    }

    /// Joint names in the robot's order (the order of `q`, `qd` and array targets).
    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.app.joint_names()
    }

    /// Joint positions (rad or m), float64, in `joint_names` order.
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let q = self.app.sim().joint_positions();
        PyArray1::from_iter(py, q.iter().map(|&v| f64::from(v)))
    }

    /// Joint velocities (rad/s or m/s), float64, in `joint_names` order.
    #[getter]
    fn qd<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let qd = self.app.sim().joint_velocities();
        PyArray1::from_iter(py, qd.iter().map(|&v| f64::from(v)))
    }

    /// Sets joint targets: an array in `joint_names` order (every joint) or a dict
    /// `{joint: value}` (only those joints). `mode`: "position" (rad or m, through the joint's
    /// PD motor), "velocity" (rad/s or m/s) or "effort" (N·m or N). Nothing changes on an error.
    #[pyo3(signature = (values, mode="position"))]
    fn set_targets(&mut self, values: &Bound<'_, PyAny>, mode: &str) -> PyResult<()> {
        let mode = mode_of(mode)?;
        let names = self.joint_names();
        let map: BTreeMap<String, f32> = if let Ok(dict) = values.cast::<PyDict>() {
            let mut map = BTreeMap::new();
            for (k, v) in dict.iter() {
                let name: String = k
                    .extract()
                    .map_err(|_| PyTypeError::new_err("target dict keys must be joint names"))?;
                let value: f64 = v.extract().map_err(|_| {
                    PyTypeError::new_err(format!("target for {name:?} must be a number"))
                })?;
                map.insert(name, value as f32);
            }
            map
        } else {
            let arr: Vec<f64> = values
                .extract::<PyReadonlyArray1<'_, f64>>()
                .map(|a| a.as_array().to_vec())
                .or_else(|_| values.extract::<Vec<f64>>())
                .map_err(|_| {
                    PyTypeError::new_err(
                        "targets must be a 1-D array or sequence of numbers, or a {joint: value} dict",
                    )
                })?;
            if arr.len() != names.len() {
                return Err(PyValueError::new_err(format!(
                    "expected {} targets in the order {names:?}, got {}",
                    names.len(),
                    arr.len()
                )));
            }
            names
                .iter()
                .cloned()
                .zip(arr.iter().map(|&v| v as f32))
                .collect()
        };
        let mut action = NamedAction::default();
        match mode {
            "position" => action.dof_pos_target = Some(map),
            "velocity" => action.dof_vel_target = Some(map),
            _ => action.dof_effort_target = Some(map),
        }
        let mut commands = self.app.targets().to_vec();
        let robot = &self.app.sim().robot;
        let actions = BTreeMap::from([(robot.name.clone(), action)]);
        apply_actions(robot, &mut commands, &actions).map_err(|e| match e {
            armsim_core::state::ActionError::UnknownJoint { .. } => {
                PyKeyError::new_err(e.to_string())
            }
            _ => PyValueError::new_err(e.to_string()),
        })?;
        for (i, cmd) in commands.into_iter().enumerate() {
            self.app
                .set_target(i, cmd)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        Ok(())
    }

    /// Opens (0) or closes (1) the gripper: position targets for the scene's gripper joint and
    /// the joints that mimic it.
    fn set_gripper(&mut self, closed: f64) -> PyResult<()> {
        if !(0.0..=1.0).contains(&closed) {
            return Err(PyValueError::new_err(format!(
                "closed must be in 0..=1, got {closed}"
            )));
        }
        let leader = self
            .app
            .scene()
            .gripper_joint()
            .ok_or_else(|| PyValueError::new_err("this scene's robot has no gripper"))?;
        for (j, cmd) in gripper_commands(&self.app.sim().robot, leader, closed as f32) {
            self.app
                .set_target(j, cmd)
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        Ok(())
    }

    /// The current command of every joint: `[(mode, value, velocity)]` in `joint_names` order.
    #[getter]
    fn targets(&self) -> Vec<(&'static str, f64, f64)> {
        self.app
            .targets()
            .iter()
            .map(|c| match *c {
                JointCommand::Position { target, velocity } => {
                    ("position", f64::from(target), f64::from(velocity))
                }
                JointCommand::Velocity { target } => ("velocity", f64::from(target), 0.0),
                JointCommand::Effort { torque } => ("effort", f64::from(torque), 0.0),
            })
            .collect()
    }

    /// Whether the arm sleeps: it rested (commands unchanged, joints still) for half a second
    /// and the physics skips it, with its joint velocities at zero, until a new command, a
    /// contact, a teleport or a placement wakes it. Off for a scene with
    /// `extensions.armsim.physics.arm_sleeps: false`.
    #[getter]
    fn arm_asleep(&self) -> bool {
        self.app.sim().arm_asleep()
    }

    /// The end-effector (tool centre) point in the world, metres, float64 (3,).
    #[getter]
    fn ee_pos<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let p = self.app.sim().ee_position();
        PyArray1::from_iter(py, p.to_array().iter().map(|&v| f64::from(v)))
    }

    /// Every free object: `{name: {"pos": (3,), "rot": (4,) w x y z}}`, float64.
    #[getter]
    fn objects<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let world = self.app.sim();
        for o in &world.objects {
            let pose = world.body_pose(o.body);
            let r = pose.rotation;
            let entry = PyDict::new(py);
            entry.set_item(
                "pos",
                PyArray1::from_iter(py, pose.translation.to_array().map(f64::from)),
            )?;
            entry.set_item(
                "rot",
                PyArray1::from_iter(py, [r.w, r.x, r.y, r.z].map(f64::from)),
            )?;
            out.set_item(&o.name, entry)?;
        }
        Ok(out)
    }

    /// The contact forces on object `name` at the end of the last step (N, world frame), from
    /// the solver's impulses: `{"total": (3,), "from_robot": (3,), "robot_normal": float,
    /// "robot_points": int}`: the sum over everything it touches, the part from the robot's
    /// links, the sum of those contacts' normal-force magnitudes (a gripper's squeeze, counted
    /// once per pad) and how many points press. KeyError for a name the scene lacks.
    fn contacts<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyDict>> {
        let index = self
            .app
            .sim()
            .object_index(name)
            .ok_or_else(|| PyKeyError::new_err(format!("no object named {name:?}")))?;
        let c = self
            .app
            .object_contacts(index)
            .ok_or_else(|| PyKeyError::new_err(format!("no object named {name:?}")))?;
        let out = PyDict::new(py);
        let vec = |v: glam::Vec3| PyArray1::from_iter(py, v.to_array().map(f64::from));
        out.set_item("total", vec(c.total))?;
        out.set_item("from_robot", vec(c.from_robot))?;
        out.set_item("robot_normal", f64::from(c.robot_normal))?;
        out.set_item("robot_points", c.robot_points)?;
        Ok(out)
    }

    /// MetaSim's dict view of the world (`DictEnvState`): objects and robots by name,
    /// `rot` w first, joint maps by name; `cameras` holds each scene camera's `CameraState`
    /// (`pos`, `quat_world` w first of the camera frame +X forward / +Z up, 3×3 `intrinsics`,
    /// `width`, `height`; no images: see `camera`); `extras` holds the referee and the clock.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = &self.app;
        let mut dict = snapshot(&r.sim()).to_dict();
        dict.cameras = camera_states(&r.scene().cameras(), &r.sim());
        dict.extras
            .insert("sim_time_s".into(), serde_json::json!(r.clock().sim_time));
        dict.extras
            .insert("steps".into(), serde_json::json!(r.clock().steps));
        dict.extras.insert(
            "referee".into(),
            serde_json::json!({
                "rules": r.referee().book.name(),
                "play_mode": r.referee().book.play_mode().as_str(),
                "score": r.referee().book.score(),
                "play_time_s": r.referee().book.play_time(),
            }),
        );
        let json =
            serde_json::to_value(&dict).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        json_to_py(py, &json)
    }

    /// Camera `name`'s image: always raises, because the Python package has no render stack.
    /// KeyError for a name the scene lacks; RuntimeError (saying where images come from) for
    /// a scene camera, whose pose and intrinsics are in `state()["cameras"][name]`.
    fn camera(&self, name: &str) -> PyResult<()> {
        let names: Vec<String> = self
            .app
            .scene()
            .cameras()
            .into_iter()
            .map(|c| c.name)
            .collect();
        if !names.iter().any(|n| n == name) {
            let known = if names.is_empty() {
                "this scene has no cameras".to_string()
            } else {
                format!("the scene's cameras are: {}", names.join(", "))
            };
            return Err(PyKeyError::new_err(format!(
                "no camera named {name:?}; {known}"
            )));
        }
        Err(PyRuntimeError::new_err(format!(
            "armsim.Sim has no render stack, so it has no camera images (camera {name:?}'s \
             pose and intrinsics are in Sim.state()[\"cameras\"][{name:?}]). For images, run \
             `armsim` in a window or `armsim --headless --cameras`, with --agent-port and \
             --monitor-port, and use armsim.connect(...).camera({name:?})"
        )))
    }

    /// The hash over every body's pose and velocity and every joint's coordinate and velocity,
    /// bit for bit (`SimView::state_hash`, as the app's determinism tests and
    /// `armsim --headless` print it): equal hashes mean equal physical states.
    fn state_hash(&self) -> u64 {
        self.app.sim().state_hash()
    }

    /// The referee's play mode: "BeforeStart", "PlayOn", "Success" or "TimeUp".
    #[getter]
    fn play_mode(&self) -> &'static str {
        self.app.referee().book.play_mode().as_str()
    }

    #[setter]
    fn set_play_mode(&mut self, mode: &str) -> PyResult<()> {
        let mode: PlayMode = mode
            .parse()
            .map_err(|e: armsim_core::referee::UnknownPlayMode| {
                PyValueError::new_err(e.to_string())
            })?;
        self.app.set_play_mode(mode);
        Ok(())
    }

    /// Cubes scored in this episode.
    #[getter]
    fn score(&self) -> u32 {
        self.app.referee().book.score()
    }

    /// Seconds played in this episode (time in PlayOn).
    #[getter]
    fn play_time(&self) -> f64 {
        self.app.referee().book.play_time()
    }

    /// The rule book's name ("pick_and_place", "free_play").
    #[getter]
    fn rules(&self) -> &'static str {
        self.app.referee().book.name()
    }

    /// Starts an episode: PlayOn, score and play time 0 (the monitor's `(kickOff)`).
    fn kick_off(&mut self) {
        self.app.kick_off();
    }

    /// Referee events since the last call (or the last reset), oldest first: dicts with `seq`,
    /// `sim_time`, `code` (PLAY_MODE, KICK_OFF, SCORED, OBJECT_REPLACED), `text` and the event's fields.
    fn events<'py>(&mut self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let out = self
            .app
            .referee()
            .since(self.cursor)
            .map(|e| event_to_py(py, e))
            .collect::<PyResult<Vec<_>>>()?;
        self.cursor = self.app.referee().last_seq();
        Ok(out)
    }

    /// Simulated seconds since the last reset.
    #[getter]
    fn sim_time(&self) -> f64 {
        self.app.clock().sim_time
    }

    /// Physics steps since the last reset.
    #[getter]
    fn steps(&self) -> u64 {
        self.app.clock().steps
    }

    /// One physics step, seconds (1/240).
    #[getter]
    fn dt(&self) -> f64 {
        SIM_DT
    }

    /// The scene's id (`scene_id`).
    #[getter]
    fn scene_id(&self) -> String {
        self.app.scene().config.scene_id.clone()
    }

    /// The robot's name (the key of its demos in a trajectory file).
    #[getter]
    fn robot(&self) -> String {
        self.app.sim().robot.name.clone()
    }

    /// Starts recording a MetaSim v2 trajectory into `path` (`.json`, `.json.gz`, `.pkl`,
    /// `.pkl.gz`): every step's commands and a state every `every` steps, as `armsim --record`.
    /// Use as a context manager (`with sim.record(path): ...`) or call `stop_recording()`.
    #[pyo3(signature = (path, every=1))]
    fn record(slf: Bound<'_, Self>, path: PathBuf, every: u32) -> PyResult<Recording> {
        {
            let mut this = slf.borrow_mut();
            if let Some(Err(e)) = this.app.finish_recording() {
                return Err(PyOSError::new_err(e));
            }
            this.app.start_recording(&path, every).map_err(traj_err)?;
        }
        Ok(Recording {
            sim: slf.unbind(),
            path,
        })
    }

    /// Ends the recording and writes the file; returns `{path, demos, actions, states}`, or
    /// None if nothing was being recorded.
    fn stop_recording<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        match self.app.finish_recording() {
            None => Ok(None),
            Some(Err(e)) => Err(PyOSError::new_err(e)),
            Some(Ok(r)) => {
                let d = PyDict::new(py);
                d.set_item("path", r.path.to_string_lossy().into_owned())?;
                d.set_item("demos", r.demos)?;
                d.set_item("actions", r.actions)?;
                d.set_item("states", r.states)?;
                Ok(Some(d))
            }
        }
    }

    #[getter]
    fn is_recording(&self) -> bool {
        self.app.is_recording()
    }

    fn __repr__(&self) -> String {
        format!(
            "Sim(scene={:?}, robot={:?}, steps={}, play_mode={})",
            self.app.scene().config.scene_id,
            self.app.sim().robot.name,
            self.app.clock().steps,
            self.app.referee().book.play_mode()
        )
    }
}

/// An active recording of a `Sim`; leaving the `with` block (or `close()`) writes the file.
#[pyclass(module = "armsim._core")]
pub struct Recording {
    sim: Py<Sim>,
    #[pyo3(get)]
    path: PathBuf,
}

#[pymethods]
impl Recording {
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__<'py>(
        &self,
        py: Python<'py>,
        _args: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<bool> {
        self.close(py)?;
        // False: an exception raised in the block propagates.
        Ok(false)
    }

    /// Writes the file (`Sim.stop_recording()`).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.sim.borrow_mut(py).stop_recording(py)
    }
}
