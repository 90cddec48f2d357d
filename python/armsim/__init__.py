"""armsim from Python: the simulator in-process, a gymnasium env, parallel worlds, and a client
for a running armsim (window or headless).

    import armsim
    sim = armsim.Sim()                      # the default scene (or a scene file, or "gripper4")
    sim.set_targets({"elbow": 1.2})         # by name (partial), or an array in sim.joint_names order
    sim.step(240)                           # one second at 240 Hz, without the GIL
    sim.q, sim.qd, sim.ee_pos, sim.objects, sim.state(), sim.state_hash()

    import gymnasium as gym
    env = gym.make("armsim/PickAndPlace-v0")
    venv = armsim.make_vec(4)               # four worlds stepped in parallel Rust threads

    remote = armsim.connect(agent="127.0.0.1:60000", monitor="127.0.0.1:60001")

The compiled core (`armsim._core`) is Rust: each world is the `armsim` app's own ECS world
(the `armsim-sim` crate, no renderer), stepped by the app's step schedule: the same physics,
referee, IK and trajectory formats as the app, so the same inputs give the same state hash.
"""

from ._core import (
    SIM_HZ,
    Recording,
    Sim,
    TeleopIk,
    __version__,
    bench_bare_step,
    bundled_scenes,
    load_trajectory,
    save_trajectory,
)
from .envs import PickAndPlaceEnv, PickAndPlaceVectorEnv, make_vec
from .remote import RemoteSim, connect

__all__ = [
    "SIM_HZ",
    "PickAndPlaceEnv",
    "PickAndPlaceVectorEnv",
    "Recording",
    "RemoteSim",
    "Sim",
    "TeleopIk",
    "__version__",
    "bench_bare_step",
    "bundled_scenes",
    "connect",
    "load_trajectory",
    "make_vec",
    "save_trajectory",
]


def _register():
    import gymnasium

    if "armsim/PickAndPlace-v0" not in gymnasium.registry:
        gymnasium.register(
            id="armsim/PickAndPlace-v0",
            entry_point="armsim.envs:PickAndPlaceEnv",
            vector_entry_point="armsim.envs:PickAndPlaceVectorEnv",
            # The referee's time limit (the scene's episode_time_limit_s) truncates episodes.
            max_episode_steps=None,
        )


_register()
