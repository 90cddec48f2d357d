"""armsim/PickAndPlace-v0: registration, gymnasium's checker, observation and reward, the
referee's Success and TimeUp, and the scripted policy succeeding on the default scene."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import armsim  # noqa: F401  (registers the env)
from pick_and_place import ScriptedPolicy, run_episode


def test_registered_and_passes_check_env():
    env = gym.make("armsim/PickAndPlace-v0")
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    assert set(obs) == {"q", "qd", "ee_pos", "gripper", "cubes", "goal_zone"}
    assert obs["cubes"].shape == (3, 7)
    assert obs["goal_zone"] == pytest.approx([0.45, 0.3, 0.08, 0.08])
    assert info["play_mode"] == "PlayOn"
    env.close()


def test_action_moves_the_tool_through_the_teleop_limits():
    env = gym.make("armsim/PickAndPlace-v0")
    obs, _ = env.reset()
    z0 = obs["ee_pos"][2]
    for _ in range(60):
        obs, reward, terminated, truncated, info = env.step(np.array([0, 0, -1, 0], np.float32))
    # Down as far as the table clearance (table top 1.0 + 0.03), not into the table.
    assert obs["ee_pos"][2] < z0 - 0.15
    assert obs["ee_pos"][2] > 1.02
    obs, *_ = env.step(np.array([0, 0, 0, 1], np.float32))
    assert obs["gripper"][0] == 1.0


def test_dense_shaping_rewards_approaching_a_cube():
    env = gym.make("armsim/PickAndPlace-v0")
    obs, _ = env.reset()
    cube = obs["cubes"][1][:3]
    total = 0.0
    for _ in range(20):
        d = np.clip((cube + [0, 0, 0.1] - obs["ee_pos"]) / 0.03, -1, 1)
        obs, reward, *_ = env.step(np.array([*d, -1], np.float32))
        total += reward
    assert total > 0.05
    flat = gym.make("armsim/PickAndPlace-v0", shaping=0.0)
    flat.reset()
    rewards = [flat.step(np.array([1, 0, 0, 0], np.float32))[1] for _ in range(10)]
    assert rewards == [0.0] * 10, "without shaping only the referee rewards"


def test_time_up_truncates():
    env = gym.make("armsim/PickAndPlace-v0", time_limit_s=0.5)
    env.reset()
    for step in range(1, 100):
        _, _, terminated, truncated, info = env.step(np.zeros(4, np.float32))
        if truncated:
            break
    assert truncated and not terminated and info["play_mode"] == "TimeUp"
    assert step == 15  # 0.5 s at 30 Hz


def test_scripted_policy_succeeds_on_the_default_scene():
    env = gym.make("armsim/PickAndPlace-v0")
    info, steps, total = run_episode(env, ScriptedPolicy())
    assert info["play_mode"] == "Success", info
    assert info["score"] == 3
    assert total > 3.0  # three scores plus the shaping's net gain
    # terminated, not truncated, and well before the 120 s limit.
    assert info["sim_time"] < 60


def test_bad_arguments():
    with pytest.raises(ValueError, match="frame_skip"):
        gym.make("armsim/PickAndPlace-v0", frame_skip=0)
    with pytest.raises(ValueError, match="time_limit_s"):
        gym.make("armsim/PickAndPlace-v0", time_limit_s=-1.0)
    env = gym.make("armsim/PickAndPlace-v0")
    env.reset()
    with pytest.raises(ValueError):
        env.step(np.zeros(3, np.float32))
