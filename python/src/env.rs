//! The pick-and-place env's world in Rust (`EnvCore`) and n of them stepped in parallel threads
//! without the GIL (`VecCore`).
//!
//! An action is an end-effector displacement and a gripper command. The displacement moves a
//! hand target (kept inside the workspace box and within `LEASH_M` of the tool), and the target
//! goes through the teleop control pipeline of `armsim_core::protocol::teleop::control` every
//! physics step, exactly as a headset's hand does: 1€ filter, workspace clamp, table clearance,
//! end-effector speed limit, IK with the gripper pointing down, joint speed limit.
//!
//! Reward: +1 for each cube the referee scores in the step, plus `shaping` times the change of a
//! potential Φ = −(distance from the tool to the nearest unscored cube + Σ over unscored cubes of
//! their horizontal distance to the goal zone's centre). Potential-based shaping (Ng et al. 1999)
//! leaves the best policy unchanged; `shaping=0` gives the referee's reward alone.

use std::sync::Arc;

use armsim_core::protocol::teleop::control::{TeleopCommand, TeleopController, TeleopState};
use armsim_core::protocol::tick::CommandAdapter;
use armsim_core::referee::{
    PlayMode, RefereeEvent, RuleBookConfig, ZoneRect, config_of, rule_book_by_name,
};
use armsim_core::scene::Scene;
use glam::Vec3;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::assets::resolve_scene;
use armsim_sim::embed::EmbeddedSim;

/// How far the hand target may lead the tool (m): a policy pushing against a wall or the table
/// does not wind the target up far beyond where the arm is.
const LEASH_M: f32 = 0.1;

#[derive(Clone, Debug)]
pub struct EnvOptions {
    /// Physics steps per env step (8: 30 Hz control at 240 Hz physics).
    pub frame_skip: u32,
    /// Largest displacement of the hand target per env step (m), for an action of ±1.
    pub max_step_m: f32,
    pub shaping: f64,
    /// Overrides the scene's `episode_time_limit_s`.
    pub time_limit_s: Option<f64>,
}

/// One pick-and-place world with its teleop pipeline.
pub struct Env {
    app: EmbeddedSim,
    options: EnvOptions,
    controller: TeleopController,
    zone: ZoneRect,
    target: Vec3,
    grip: bool,
    scored: Vec<bool>,
    potential: f64,
    cursor: u64,
    seq: u64,
    /// Each episode recorded to its own file: (folder, file name prefix, a state every n steps).
    record: Option<(std::path::PathBuf, String, u32)>,
    episodes_started: u64,
    /// Files of finished episodes (or why one could not be written), for the caller to take.
    pub finished: Vec<Result<String, String>>,
}

/// What one env step gave.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepOut {
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
}

impl Env {
    pub fn new(scene: Arc<Scene>, options: EnvOptions) -> Result<Self, String> {
        let mut config: RuleBookConfig = config_of(&scene);
        if let Some(t) = options.time_limit_s {
            if !(t.is_finite() && t > 0.0) {
                return Err(format!("time_limit_s must be a positive number, got {t}"));
            }
            config.time_limit_s = Some(t);
        }
        let zone = config.goal_zone.ok_or_else(|| {
            format!(
                "scene {} has no goal zone (extensions.armsim.goal_zone); PickAndPlace needs one",
                scene.config.scene_id
            )
        })?;
        if options.frame_skip == 0 {
            return Err("frame_skip must be at least 1".into());
        }
        if !(options.max_step_m.is_finite() && options.max_step_m > 0.0) {
            return Err(format!(
                "max_step_m must be positive, got {}",
                options.max_step_m
            ));
        }
        let book = rule_book_by_name("pick_and_place", &config).map_err(|e| e.to_string())?;
        let app = EmbeddedSim::new(scene.clone(), Some(book));
        let controller =
            TeleopController::new(&scene, &app.sim(), scene.config.control.filter.params);
        let mut env = Self {
            scored: vec![false; app.sim().objects.len()],
            app,
            options,
            controller,
            zone,
            target: Vec3::ZERO,
            grip: false,
            potential: 0.0,
            cursor: 0,
            seq: 0,
            record: None,
            episodes_started: 0,
            finished: Vec::new(),
        };
        env.reset();
        Ok(env)
    }

    /// Records every episode from the next reset on as `<dir>/<prefix>-ep<k>.pkl.gz` (MetaSim
    /// v2: every physics step's commands, a state every `every` steps).
    pub fn record_episodes(&mut self, dir: std::path::PathBuf, prefix: String, every: u32) {
        self.record = Some((dir, prefix, every));
    }

    /// Ends the current episode's recording: written to its file, or removed if `keep` is false
    /// (an episode cut short because enough were collected).
    pub fn finish_recording(&mut self, keep: bool) {
        match self.app.finish_recording() {
            None => {}
            Some(Ok(r)) if keep => self
                .finished
                .push(Ok(r.path.to_string_lossy().into_owned())),
            Some(Ok(r)) => {
                let _ = std::fs::remove_file(&r.path);
            }
            Some(Err(e)) => self.finished.push(Err(e)),
        }
    }

    /// The scene's initial state, kicked off (PlayOn), gripper open, hand at the tool.
    pub fn reset(&mut self) {
        // An episode still being recorded was cut short by the reset: it is not kept.
        self.finish_recording(false);
        // Without a recording running, a reset cannot fail.
        let _ = self.app.reset();
        self.app.kick_off();
        if let Some((dir, prefix, every)) = &self.record {
            let path = dir.join(format!("{prefix}-ep{:05}.pkl.gz", self.episodes_started));
            self.episodes_started += 1;
            if let Err(e) = self.app.start_recording(&path, *every) {
                self.finished.push(Err(e.to_string()));
            }
        }
        let scene = self.app.scene().clone();
        self.controller =
            TeleopController::new(&scene, &self.app.sim(), scene.config.control.filter.params);
        self.target = self.app.sim().ee_position();
        self.grip = false;
        self.scored.iter_mut().for_each(|s| *s = false);
        self.cursor = self.app.referee().last_seq();
        self.seq = 0;
        self.potential = self.phi();
    }

    fn phi(&self) -> f64 {
        let world = self.app.sim();
        let ee = world.ee_position();
        let mut nearest = f32::INFINITY;
        let mut to_zone = 0.0f32;
        let zone = glam::Vec2::from(self.zone.center_xy);
        for (i, o) in world.objects.iter().enumerate() {
            if self.scored[i] {
                continue;
            }
            let p = world.body_pose(o.body).translation;
            nearest = nearest.min((p - ee).length());
            to_zone += (p.truncate() - zone).length();
        }
        if nearest.is_infinite() {
            nearest = 0.0;
        }
        -f64::from(nearest + to_zone)
    }

    /// One env step: `action` = [dx, dy, dz, grip] with dx..dz in -1..=1 (scaled by
    /// `max_step_m`) and grip > 0 closing the gripper.
    pub fn step(&mut self, action: [f32; 4]) -> StepOut {
        let d = Vec3::new(action[0], action[1], action[2]);
        let d = if d.is_finite() {
            d.clamp(Vec3::splat(-1.0), Vec3::splat(1.0))
        } else {
            Vec3::ZERO
        };
        let limits = &self.app.scene().config.control.limits;
        let ee = self.app.sim().ee_position();
        let mut target = limits
            .workspace_aabb_m
            .clamp(self.target + d * self.options.max_step_m);
        target = ee + (target - ee).clamp_length_max(LEASH_M);
        self.target = target;
        self.grip = action[3] > 0.0;
        self.seq += 1;
        let cmd = TeleopCommand {
            seq: self.seq,
            target,
            grip_closed: self.grip,
            clutch: true,
        };
        for _ in 0..self.options.frame_skip {
            if self.app.error().is_some() {
                break;
            }
            let world = self.app.sim();
            let state = TeleopState {
                q: world.joint_positions(),
                qd: world.joint_velocities(),
                frame: None,
            };
            if let Some(commands) = self.controller.adapt(&cmd, &state) {
                for (i, c) in commands.into_iter().enumerate() {
                    let _ = self.app.set_target(i, c);
                }
            }
            if let Err(e) = self.app.step(1) {
                // The recording stopped (disk full, …); the episode goes on unrecorded.
                self.finished.push(Err(e));
            }
        }
        let mut reward = 0.0;
        for e in self.app.referee().since(self.cursor) {
            if let RefereeEvent::Scored { object, .. } = e.event {
                reward += 1.0;
                if let Some(s) = self.scored.get_mut(object) {
                    *s = true;
                }
            }
        }
        self.cursor = self.app.referee().last_seq();
        let potential = self.phi();
        reward += self.options.shaping * (potential - self.potential);
        self.potential = potential;
        let mode = self.app.referee().book.play_mode();
        let out = StepOut {
            reward,
            terminated: mode == PlayMode::Success,
            // A physics blow-up ends the episode too: nothing more can be learnt from it.
            truncated: mode == PlayMode::TimeUp || self.app.error().is_some(),
        };
        if out.terminated || out.truncated {
            self.finish_recording(true);
        }
        out
    }

    pub fn obs_len(&self) -> usize {
        let nj = self.app.sim().joint_count();
        2 * nj + 3 + 1 + 7 * self.app.sim().objects.len() + 4
    }

    /// (key, shape) of each part of the flat observation, in order.
    pub fn layout(&self) -> Vec<(String, Vec<usize>)> {
        let nj = self.app.sim().joint_count();
        vec![
            ("q".into(), vec![nj]),
            ("qd".into(), vec![nj]),
            ("ee_pos".into(), vec![3]),
            ("gripper".into(), vec![1]),
            ("cubes".into(), vec![self.app.sim().objects.len(), 7]),
            ("goal_zone".into(), vec![4]),
        ]
    }

    /// Writes the flat observation into `out` (length `obs_len`).
    pub fn observe(&self, out: &mut [f64]) {
        let world = self.app.sim();
        let mut k = 0;
        let mut put = |v: f32| {
            out[k] = f64::from(v);
            k += 1;
        };
        world.joint_positions().into_iter().for_each(&mut put);
        world.joint_velocities().into_iter().for_each(&mut put);
        world
            .ee_position()
            .to_array()
            .into_iter()
            .for_each(&mut put);
        put(if self.grip { 1.0 } else { 0.0 });
        for o in &world.objects {
            let p = world.body_pose(o.body);
            p.translation.to_array().into_iter().for_each(&mut put);
            let r = p.rotation;
            [r.w, r.x, r.y, r.z].into_iter().for_each(&mut put);
        }
        let z = &self.zone;
        [
            z.center_xy[0],
            z.center_xy[1],
            z.half_size[0],
            z.half_size[1],
        ]
        .into_iter()
        .for_each(&mut put);
    }
}

fn options(
    frame_skip: u32,
    max_step_m: f32,
    shaping: f64,
    time_limit_s: Option<f64>,
) -> EnvOptions {
    EnvOptions {
        frame_skip,
        max_step_m,
        shaping,
        time_limit_s,
    }
}

fn action_of(a: &[f32]) -> PyResult<[f32; 4]> {
    <[f32; 4]>::try_from(a).map_err(|_| {
        PyValueError::new_err(format!(
            "an action has 4 values (dx, dy, dz, grip), got {}",
            a.len()
        ))
    })
}

/// One pick-and-place world for `armsim.envs.PickAndPlaceEnv`.
#[pyclass(module = "armsim._core")]
pub struct EnvCore {
    env: Env,
}

#[pymethods]
impl EnvCore {
    #[new]
    #[pyo3(signature = (scene=None, frame_skip=8, max_step_m=0.03, shaping=1.0, time_limit_s=None))]
    fn new(
        scene: Option<String>,
        frame_skip: u32,
        max_step_m: f32,
        shaping: f64,
        time_limit_s: Option<f64>,
    ) -> PyResult<Self> {
        let scene = resolve_scene(scene.as_deref()).map_err(PyValueError::new_err)?;
        let env = Env::new(
            scene,
            options(frame_skip, max_step_m, shaping, time_limit_s),
        )
        .map_err(PyValueError::new_err)?;
        Ok(Self { env })
    }

    fn layout(&self) -> Vec<(String, Vec<usize>)> {
        self.env.layout()
    }

    fn reset<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.env.reset();
        self.obs(py)
    }

    fn obs<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let mut out = vec![0.0; self.env.obs_len()];
        self.env.observe(&mut out);
        PyArray1::from_vec(py, out)
    }

    /// (obs, reward, terminated, truncated); the GIL is released while the world steps.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        action: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, f64, bool, bool)> {
        let a = action_of(action.as_slice()?)?;
        let env = &mut self.env;
        let out = py.detach(|| env.step(a));
        Ok((self.obs(py), out.reward, out.terminated, out.truncated))
    }

    #[getter]
    fn play_mode(&self) -> &'static str {
        self.env.app.referee().book.play_mode().as_str()
    }

    #[getter]
    fn score(&self) -> u32 {
        self.env.app.referee().book.score()
    }

    #[getter]
    fn sim_time(&self) -> f64 {
        self.env.app.clock().sim_time
    }

    #[getter]
    fn error(&self) -> Option<String> {
        self.env.app.error().map(str::to_owned)
    }

    /// The hand target the pipeline follows (world, m).
    #[getter]
    fn target<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_iter(py, self.env.target.to_array().map(f64::from))
    }

    #[getter]
    fn object_names(&self) -> Vec<String> {
        self.env.app.object_names()
    }

    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.env.app.joint_names()
    }

    /// The bit-for-bit state hash of the world (`SimView::state_hash`).
    fn state_hash(&self) -> u64 {
        self.env.app.sim().state_hash()
    }
}

/// n pick-and-place worlds stepped in parallel threads without the GIL, with gymnasium's
/// next-step autoreset: the step after an episode ends resets that world (its action ignored).
#[pyclass(module = "armsim._core")]
pub struct VecCore {
    envs: Vec<Env>,
    needs_reset: Vec<bool>,
    threads: usize,
}

#[pymethods]
impl VecCore {
    #[new]
    #[pyo3(signature = (n, scene=None, frame_skip=8, max_step_m=0.03, shaping=1.0, time_limit_s=None, threads=None))]
    fn new(
        n: usize,
        scene: Option<String>,
        frame_skip: u32,
        max_step_m: f32,
        shaping: f64,
        time_limit_s: Option<f64>,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        if n == 0 {
            return Err(PyValueError::new_err("make_vec needs at least one world"));
        }
        let scene = resolve_scene(scene.as_deref()).map_err(PyValueError::new_err)?;
        let opts = options(frame_skip, max_step_m, shaping, time_limit_s);
        let envs = (0..n)
            .map(|_| Env::new(scene.clone(), opts.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(PyValueError::new_err)?;
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let threads = threads.unwrap_or(cores).clamp(1, n);
        Ok(Self {
            envs,
            needs_reset: vec![false; n],
            threads,
        })
    }

    #[getter]
    fn num_envs(&self) -> usize {
        self.envs.len()
    }

    #[getter]
    fn threads(&self) -> usize {
        self.threads
    }

    fn layout(&self) -> Vec<(String, Vec<usize>)> {
        self.envs[0].layout()
    }

    fn reset<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let envs = &mut self.envs;
        py.detach(|| envs.iter_mut().for_each(Env::reset));
        self.needs_reset.iter_mut().for_each(|r| *r = false);
        self.obs(py)
    }

    fn obs<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let d = self.envs[0].obs_len();
        let mut out = vec![0.0; d * self.envs.len()];
        for (env, chunk) in self.envs.iter().zip(out.chunks_mut(d)) {
            env.observe(chunk);
        }
        let arr = PyArray1::from_vec(py, out);
        arr.reshape([self.envs.len(), d]).expect("n * d elements")
    }

    /// Steps every world with its row of `actions` (n, 4) in parallel threads, GIL released.
    /// Returns (obs (n, d), rewards (n,), terminated (n,), truncated (n,), reset (n,)), where
    /// `reset[i]` says world i was reset by this call (autoreset) instead of stepped.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<(
        Bound<'py, PyArray2<f64>>,
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray1<bool>>,
        Bound<'py, PyArray1<bool>>,
    )> {
        let n = self.envs.len();
        let shape = actions.as_array().shape().to_vec();
        if shape != [n, 4] {
            return Err(PyValueError::new_err(format!(
                "actions must have shape ({n}, 4), got {shape:?}"
            )));
        }
        let flat: Vec<f32> = actions.as_array().iter().copied().collect();
        let mut outs = vec![StepOut::default(); n];
        let was_reset = self.needs_reset.clone();
        let per = n.div_ceil(self.threads);
        let envs = &mut self.envs;
        py.detach(|| {
            let step_chunk =
                |envs: &mut [Env], outs: &mut [StepOut], acts: &[f32], resets: &[bool]| {
                    for (i, env) in envs.iter_mut().enumerate() {
                        if resets[i] {
                            env.reset();
                        } else {
                            let a = [
                                acts[4 * i],
                                acts[4 * i + 1],
                                acts[4 * i + 2],
                                acts[4 * i + 3],
                            ];
                            outs[i] = env.step(a);
                        }
                    }
                };
            // One chunk per thread; the calling thread steps the first chunk itself rather than
            // idling while it waits, so one thread fewer is spawned per step.
            let mut chunks = envs
                .chunks_mut(per)
                .zip(outs.chunks_mut(per))
                .zip(flat.chunks(per * 4).zip(was_reset.chunks(per)));
            let first = chunks.next();
            std::thread::scope(|s| {
                for ((envs, outs), (acts, resets)) in chunks {
                    s.spawn(move || step_chunk(envs, outs, acts, resets));
                }
                if let Some(((envs, outs), (acts, resets))) = first {
                    step_chunk(envs, outs, acts, resets);
                }
            });
        });
        for (r, o) in self.needs_reset.iter_mut().zip(&outs) {
            *r = o.terminated || o.truncated;
        }
        Ok((
            self.obs(py),
            PyArray1::from_iter(py, outs.iter().map(|o| o.reward)),
            PyArray1::from_iter(py, outs.iter().map(|o| o.terminated)),
            PyArray1::from_iter(py, outs.iter().map(|o| o.truncated)),
            PyArray1::from_vec(py, was_reset),
        ))
    }

    /// Each world's play mode.
    fn play_modes(&self) -> Vec<&'static str> {
        self.envs
            .iter()
            .map(|e| e.app.referee().book.play_mode().as_str())
            .collect()
    }

    /// Each world's score.
    fn scores(&self) -> Vec<u32> {
        self.envs
            .iter()
            .map(|e| e.app.referee().book.score())
            .collect()
    }

    /// Records every world's episodes, from a reset done here, as
    /// `<dir>/<prefix>-w<world>-ep<k>.pkl.gz`; `take_recorded()` hands over the finished files.
    #[pyo3(signature = (dir, prefix="episode", every=8))]
    fn record_episodes<'py>(
        &mut self,
        py: Python<'py>,
        dir: std::path::PathBuf,
        prefix: &str,
        every: u32,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| PyValueError::new_err(format!("cannot create {}: {e}", dir.display())))?;
        for (i, env) in self.envs.iter_mut().enumerate() {
            env.record_episodes(dir.clone(), format!("{prefix}-w{i}"), every);
        }
        Ok(self.reset(py))
    }

    /// Paths of the episodes written since the last call; raises if one could not be written.
    fn take_recorded(&mut self) -> PyResult<Vec<String>> {
        let mut out = Vec::new();
        for env in &mut self.envs {
            for r in env.finished.drain(..) {
                out.push(r.map_err(PyRuntimeError::new_err)?);
            }
        }
        Ok(out)
    }

    /// Stops recording; episodes still running are discarded (their files removed).
    fn stop_recording(&mut self) {
        for env in &mut self.envs {
            env.finish_recording(false);
            env.record = None;
        }
    }

    fn state_hashes(&self) -> Vec<u64> {
        self.envs.iter().map(|e| e.app.sim().state_hash()).collect()
    }
}
