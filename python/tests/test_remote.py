"""armsim.connect against a real `armsim --headless` on free ports: the same observation and
action API as the in-process env, driving the app's arm through the agent and monitor ports."""

import numpy as np
import pytest

import armsim


def test_connect_sync_moves_the_arm_like_the_env(server):
    agent, monitor = server("--sync", "--fast")
    env = armsim.make_vec(1)  # for the spaces
    with armsim.connect(agent=agent, monitor=monitor, sync=True) as remote:
        obs, info = remote.reset()
        assert info["play_mode"] == "PlayOn"
        assert env.single_observation_space.contains(obs), {k: v.shape for k, v in obs.items()}
        assert remote.joint_names == armsim.Sim().joint_names
        local = armsim.Sim()
        np.testing.assert_allclose(obs["q"], local.q, atol=2e-3)
        np.testing.assert_allclose(obs["ee_pos"], local.ee_pos, atol=2e-3)
        t0 = remote.sim_time
        z0 = obs["ee_pos"][2]
        x0 = obs["ee_pos"][0]
        for _ in range(60):
            obs, reward, terminated, truncated, info = remote.step(np.array([0, 0, -1, 0], np.float32))
        # frame_skip physics steps per env step, in sync mode exactly.
        assert remote.sim_time == pytest.approx(t0 + 60 * 8 / 240, abs=1e-3)
        assert obs["ee_pos"][2] < z0 - 0.12, obs["ee_pos"]
        assert abs(obs["ee_pos"][0] - x0) < 0.03, "the tool went down, not sideways"
        for _ in range(40):
            obs, *_ = remote.step(np.array([1, 0, 1, 1], np.float32))
        assert obs["gripper"][0] == 1.0
        assert obs["ee_pos"][0] > x0 + 0.05
        assert not terminated and not truncated


def test_connect_reports_a_missing_server():
    with pytest.raises(OSError):
        armsim.connect(agent="127.0.0.1:1", monitor=None, timeout=2)


def test_the_scripted_policy_drives_the_app_to_success(server):
    """The policy written against the in-process env, unchanged, through the agent port."""
    from pick_and_place import run_episode

    agent, monitor = server("--sync", "--fast")
    with armsim.connect(agent=agent, monitor=monitor, sync=True) as remote:
        info, steps, total = run_episode(remote)
    assert info["play_mode"] == "Success" and info["score"] == 3, info


def test_connect_real_time_without_sync(server):
    """A server pacing itself in real time (as the window does): perceptions are read as they
    come and each step returns the newest one, frame_skip steps on."""
    agent, monitor = server()
    with armsim.connect(agent=agent, monitor=monitor) as remote:
        obs, info = remote.reset()
        t0 = remote.sim_time
        z0 = obs["ee_pos"][2]
        for _ in range(20):
            obs, *_ = remote.step(np.array([0, 0, -1, 0], np.float32))
        assert remote.sim_time >= t0 + 20 * 8 / 240 - 1e-6
        assert obs["ee_pos"][2] < z0 - 0.05
