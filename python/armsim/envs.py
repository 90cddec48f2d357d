"""`armsim/PickAndPlace-v0`: put every cube in the goal zone, on the default scene.

Observation (a Dict of float64 arrays):
  q, qd      joint positions and velocities, robot order (`env.unwrapped.joint_names`)
  ee_pos     the tool centre point, world frame (m)
  gripper    1 if the gripper is commanded closed, else 0
  cubes      one row per cube (`env.unwrapped.object_names`): x y z, quaternion w x y z
  goal_zone  centre x y and half sizes x y of the goal zone (m)

Action (float32, 4): dx dy dz in -1..1, a displacement of the hand target of up to `max_step_m`
(default 3 cm) per step, and grip (> 0 closes the gripper). The hand target goes through the
teleop path of the app: 1€ filter, workspace box, table clearance, end-effector and joint speed
limits, IK with the gripper pointing down. One env step is `frame_skip` (default 8) physics
steps: 30 Hz control.

Reward: +1 for each cube the referee scores (a cube resting in the goal zone for 1 s), plus
`shaping` (default 1) times the change of Φ = −(distance from the tool to the nearest unscored
cube + Σ over unscored cubes of their horizontal distance to the zone's centre). Φ-based shaping
keeps the best policy the same; `shaping=0` leaves the referee's reward alone.

`terminated` when the referee says Success (every cube scored); `truncated` on TimeUp (the
scene's `episode_time_limit_s`, 120 s by default, or `time_limit_s=`) or a physics blow-up.
"""

from __future__ import annotations

import numpy as np
import gymnasium as gym
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import _core


def _spaces(layout):
    obs = spaces.Dict(
        {
            key: spaces.Box(-np.inf, np.inf, shape=tuple(shape), dtype=np.float64)
            for key, shape in layout
        }
    )
    act = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
    return obs, act


def _slices(layout):
    out, k = [], 0
    for key, shape in layout:
        size = int(np.prod(shape))
        out.append((key, slice(k, k + size), tuple(shape)))
        k += size
    return out


def _split(flat, slices):
    """The flat observation (d,) or (n, d) as the Dict observation."""
    lead = flat.shape[:-1]
    return {key: flat[..., s].reshape(lead + shape) for key, s, shape in slices}


class PickAndPlaceEnv(gym.Env):
    """One world; see the module docstring for observation, action and reward."""

    metadata = {"render_modes": [], "render_fps": 30}

    def __init__(self, scene=None, frame_skip=8, max_step_m=0.03, shaping=1.0, time_limit_s=None,
                 render_mode=None):
        if render_mode is not None:
            raise ValueError("PickAndPlaceEnv does not render; watch it with armsim.connect and the window")
        self._core = _core.EnvCore(scene, frame_skip, max_step_m, shaping, time_limit_s)
        layout = self._core.layout()
        self.observation_space, self.action_space = _spaces(layout)
        self._slices = _slices(layout)
        self.joint_names = self._core.joint_names
        self.object_names = self._core.object_names
        self.metadata = dict(self.metadata, render_fps=240 / frame_skip)

    def _info(self):
        return {"play_mode": self._core.play_mode, "score": self._core.score,
                "is_success": self._core.play_mode == "Success", "sim_time": self._core.sim_time}

    def reset(self, *, seed=None, options=None):
        # The scene is deterministic: the seed only seeds the spaces' samplers.
        super().reset(seed=seed)
        flat = self._core.reset()
        return _split(flat, self._slices), self._info()

    def step(self, action):
        a = np.asarray(action, dtype=np.float32).reshape(4)
        flat, reward, terminated, truncated = self._core.step(a)
        info = self._info()
        if self._core.error is not None:
            info["error"] = self._core.error
        return _split(flat, self._slices), float(reward), bool(terminated), bool(truncated), info

    @property
    def play_mode(self):
        return self._core.play_mode

    @property
    def target(self):
        """The hand target the arm follows (world, m)."""
        return self._core.target

    def state_hash(self):
        return self._core.state_hash()


class PickAndPlaceVectorEnv(VectorEnv):
    """`num_envs` worlds stepped in parallel Rust threads with the GIL released.

    Autoreset is gymnasium's NEXT_STEP mode: after a world's episode ends, its next `step`
    resets it (that step's action for it is ignored) and returns the first observation.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs=1, scene=None, frame_skip=8, max_step_m=0.03, shaping=1.0,
                 time_limit_s=None, threads=None, render_mode=None, **_ignored):
        if render_mode is not None:
            raise ValueError("PickAndPlaceVectorEnv does not render")
        self._core = _core.VecCore(num_envs, scene, frame_skip, max_step_m, shaping, time_limit_s, threads)
        layout = self._core.layout()
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = _spaces(layout)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._slices = _slices(layout)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._np_random_seed = seed
            self.action_space.seed(seed)
        flat = self._core.reset()
        return _split(flat, self._slices), self._infos()

    def _infos(self):
        modes = np.array(self._core.play_modes())
        return {"play_mode": modes, "score": np.array(self._core.scores()), "is_success": modes == "Success"}

    def step(self, actions):
        a = np.ascontiguousarray(actions, dtype=np.float32).reshape(self.num_envs, 4)
        flat, rewards, terminated, truncated, _was_reset = self._core.step(a)
        return _split(flat, self._slices), rewards, terminated, truncated, self._infos()

    def record_episodes(self, directory, prefix="episode", every=8):
        """Records each world's episodes, from a reset done here, as MetaSim v2 files
        `<directory>/<prefix>-w<world>-ep<k>.pkl.gz` (every physics step's commands, a state
        every `every` physics steps). Returns the reset's observation."""
        flat = self._core.record_episodes(str(directory), prefix, every)
        return _split(flat, self._slices), self._infos()

    def take_recorded(self):
        """Paths of the episodes finished (and written) since the last call."""
        return self._core.take_recorded()

    def stop_recording(self):
        """Stops recording; episodes still running are discarded."""
        self._core.stop_recording()

    def state_hashes(self):
        return self._core.state_hashes()

    @property
    def threads(self):
        return self._core.threads


def make_vec(n, scene=None, **kwargs):
    """n PickAndPlace worlds as one gymnasium VectorEnv, stepped in parallel Rust threads.

    kwargs: frame_skip, max_step_m, shaping, time_limit_s (as `PickAndPlaceEnv`), threads
    (worker threads; default min(n, CPU cores))."""
    return PickAndPlaceVectorEnv(n, scene=scene, **kwargs)
