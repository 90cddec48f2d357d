"""armsim.make_vec: a gymnasium VectorEnv whose worlds step in parallel threads without the GIL,
each bit-identical to a single env given the same actions, with next-step autoreset."""

import threading

import gymnasium as gym
import numpy as np

import armsim
from pick_and_place import ScriptedPolicy


def test_vector_env_api_and_spaces():
    venv = armsim.make_vec(3)
    assert isinstance(venv, gym.vector.VectorEnv)
    assert venv.num_envs == 3
    obs, info = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    assert obs["q"].shape == (3, 8) and obs["cubes"].shape == (3, 3, 7)
    actions = venv.action_space.sample()
    obs, rewards, terminated, truncated, info = venv.step(actions)
    assert rewards.shape == (3,) and terminated.dtype == bool and truncated.shape == (3,)
    assert list(info["play_mode"]) == ["PlayOn"] * 3
    venv.close()


def test_worlds_match_single_envs_bit_for_bit():
    rng = np.random.default_rng(7)
    actions = rng.uniform(-1, 1, size=(40, 2, 4)).astype(np.float32)
    venv = armsim.make_vec(2, threads=2)
    venv.reset()
    singles = [gym.make("armsim/PickAndPlace-v0").unwrapped for _ in range(2)]
    for env in singles:
        env.reset()
    for a in actions:
        obs, rewards, *_ = venv.step(a)
        for i, env in enumerate(singles):
            o, r, *_ = env.step(a[i])
            assert r == rewards[i]
            np.testing.assert_array_equal(o["q"], obs["q"][i])
    assert venv.state_hashes() == [env.state_hash() for env in singles]
    assert venv.threads == 2


def test_autoreset_next_step():
    venv = armsim.make_vec(2, time_limit_s=0.2)
    obs0, _ = venv.reset()
    zero = np.zeros((2, 4), np.float32)
    for _ in range(6):
        obs, _, terminated, truncated, info = venv.step(zero)
    assert truncated.all() and list(info["play_mode"]) == ["TimeUp", "TimeUp"]
    obs, rewards, terminated, truncated, info = venv.step(zero)
    # The step after the end resets: the first observation again, PlayOn, no reward.
    np.testing.assert_array_equal(obs["q"], obs0["q"])
    assert (rewards == 0).all() and not truncated.any()
    assert list(info["play_mode"]) == ["PlayOn", "PlayOn"]


def test_step_releases_the_gil():
    venv = armsim.make_vec(2)
    venv.reset()
    done = threading.Event()
    counter = 0
    actions = np.zeros((2, 4), np.float32)

    def worker():
        for _ in range(100):
            venv.step(actions)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    while not done.is_set():
        counter += 1
    t.join()
    assert counter > 1000, counter


def test_scripted_policy_in_every_world():
    venv = armsim.make_vec(2)
    obs, _ = venv.reset()
    policies = [ScriptedPolicy() for _ in range(2)]
    succeeded = [False, False]
    for _ in range(1500):
        actions = np.stack([p({k: v[i] for k, v in obs.items()}) for i, p in enumerate(policies)])
        obs, _, terminated, truncated, info = venv.step(actions)
        for i in range(2):
            if terminated[i]:
                succeeded[i] = True
        if all(succeeded):
            break
    assert succeeded == [True, True]
