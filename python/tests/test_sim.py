"""armsim.Sim: joint state, targets, reset, the GIL, the state view, the referee, trajectories,
and the same state hash as the app stepping the same inputs."""

import threading

import numpy as np
import pytest

import armsim
from conftest import ROOT, run_armsim, state_hash_of


def drive(sim, steps):
    """A varied, deterministic input: position, velocity and effort targets and the gripper."""
    for k in range(steps):
        if k % 40 == 0:
            phase = k / 40
            sim.set_targets({"shoulder_pan": 0.3 * np.sin(phase), "elbow": 0.9 + 0.2 * np.cos(phase)})
            sim.set_targets({"wrist_3": 0.5 * np.cos(phase)}, mode="velocity")
            sim.set_gripper(1.0 if int(phase) % 2 else 0.0)
        if k == 100:
            sim.set_targets({"wrist_2": 0.2}, mode="effort")
        sim.step()


def test_joint_state_and_targets():
    sim = armsim.Sim()
    names = sim.joint_names
    assert names[:3] == ["shoulder_pan", "shoulder_lift", "elbow"]
    assert sim.q.dtype == np.float64 and sim.q.shape == (len(names),)
    assert sim.qd.shape == (len(names),)
    q0 = sim.q.copy()
    target = q0.copy()
    target[0] = 0.4
    sim.set_targets(target)
    sim.step(480)
    assert abs(sim.q[0] - 0.4) < 0.02, sim.q
    sim.set_targets({"elbow": q0[2] + 0.2})
    sim.step(480)
    assert abs(sim.q[2] - (q0[2] + 0.2)) < 0.02
    assert abs(sim.q[0] - 0.4) < 0.02, "a partial dict keeps the other targets"
    assert sim.targets[2][0] == "position"
    sim.set_targets({"shoulder_pan": 0.5}, mode="velocity")
    sim.step(240)
    assert sim.q[0] > 0.7, "a velocity target turns the joint"


def test_a_resting_arm_sleeps_and_a_new_target_wakes_it():
    sim = armsim.Sim()
    assert not sim.arm_asleep, "a fresh world is awake"
    for _ in range(480):
        sim.step()
        if sim.arm_asleep:
            break
    assert sim.arm_asleep, "holding home, the arm rests and sleeps within 2 s"
    assert np.all(sim.qd == 0.0), sim.qd
    q = sim.q.copy()
    sim.step(240)
    assert sim.arm_asleep and np.array_equal(sim.q, q), "asleep, it stays put"
    sim.set_targets({"elbow": q[2] + 0.2})
    sim.step()
    assert not sim.arm_asleep, "a new target wakes it at the next step"
    sim.step(720)
    assert abs(sim.q[2] - (q[2] + 0.2)) < 0.01, "and it goes there"


def test_bad_targets_are_refused_with_a_reason():
    sim = armsim.Sim()
    before = sim.targets
    with pytest.raises(KeyError, match="no_such_joint"):
        sim.set_targets({"no_such_joint": 1.0})
    with pytest.raises(ValueError, match="expected 8 targets"):
        sim.set_targets([0.0, 1.0])
    with pytest.raises(ValueError, match="not finite"):
        sim.set_targets({"elbow": float("nan")})
    with pytest.raises(ValueError, match="mode must be"):
        sim.set_targets({"elbow": 1.0}, mode="torque")
    with pytest.raises(TypeError):
        sim.set_targets("elbow")
    assert sim.targets == before, "a refused target changes nothing"
    with pytest.raises(ValueError, match="neither a file nor a bundled scene"):
        armsim.Sim("/no/such/scene.json")


def test_reset_is_bit_identical_to_a_fresh_sim():
    fresh = armsim.Sim().state_hash()
    sim = armsim.Sim()
    drive(sim, 300)
    sim.kick_off()
    assert sim.state_hash() != fresh
    sim.reset()
    assert sim.state_hash() == fresh
    assert sim.steps == 0 and sim.play_mode == "BeforeStart"
    # And it steps on identically: same inputs, same trajectory.
    other = armsim.Sim()
    drive(sim, 200)
    drive(other, 200)
    assert sim.state_hash() == other.state_hash()


VARIED = ROOT / "examples" / "scenes" / "varied_cubes.json"


def test_a_varied_scene_draws_each_reset_and_the_same_seed_draws_the_same():
    """`examples/scenes/varied_cubes.json`'s randomize block: each reset is the next episode's
    draw, `episode_start` says what it was, and a seed gives the same episodes again."""
    sim = armsim.Sim(str(VARIED), seed=3)
    first = sim.episode_start
    assert first["seed"] == 3 and first["episode"] == 0
    assert set(first["objects"]) == set(sim.objects)
    for name, o in first["objects"].items():
        # The world is the draw: each cube where it was placed.
        assert sim.objects[name]["pos"] == pytest.approx(o["pos_m"], abs=1e-6)
        assert abs(o["pos_m"][0] - 0.5) <= 0.07 + 1e-6 and abs(o["pos_m"][1]) <= 0.14 + 1e-6
        assert 0.6 * 0.08 * 0.9**3 - 1e-6 <= o["mass_kg"] <= 1.4 * 0.08 + 1e-6
    drive(sim, 100)
    sim.reset()
    second = sim.episode_start
    assert second["episode"] == 1 and second["objects"] != first["objects"]
    assert second["episode_seed"] != first["episode_seed"]
    # The same seed: the same two episodes, and the same trajectory through them.
    again = armsim.Sim(str(VARIED), seed=3)
    assert again.episode_start == first
    drive(again, 100)
    again.reset()
    assert again.episode_start == second
    drive(sim, 150)
    drive(again, 150)
    assert sim.state_hash() == again.state_hash()
    # Another seed, another start; a scene without the block has nothing to seed.
    assert armsim.Sim(str(VARIED), seed=4).episode_start["objects"] != first["objects"]
    assert armsim.Sim().episode_start is None
    with pytest.raises(ValueError, match="no extensions.armsim.randomize block"):
        armsim.Sim(seed=1)


def test_step_releases_the_gil():
    sim = armsim.Sim()
    done = threading.Event()
    counter = 0

    def worker():
        sim.step(2400)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    while not done.is_set():
        counter += 1
    t.join()
    # With the GIL held for the whole call, this loop could not have run meanwhile.
    assert counter > 1000, counter


def test_state_view_objects_and_ee():
    sim = armsim.Sim()
    state = sim.state()
    assert set(state["objects"]) == {"cube_red", "cube_green", "cube_blue"}
    robot = state["robots"]["arm6"]
    assert set(robot["dof_pos"]) == set(sim.joint_names)
    assert robot["rot"] == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert state["extras"]["referee"]["play_mode"] == "BeforeStart"
    objects = sim.objects
    assert objects["cube_red"]["pos"] == pytest.approx([0.5, -0.12, 1.025], abs=1e-3)
    assert objects["cube_red"]["rot"].shape == (4,)
    assert sim.ee_pos == pytest.approx([0.45, 0.0, 1.25], abs=0.01)


def test_referee_play_mode_score_and_events():
    sim = armsim.Sim()
    assert sim.rules == "pick_and_place"
    sim.kick_off()
    assert sim.play_mode == "PlayOn" and sim.score == 0
    events = sim.events()
    assert [e["code"] for e in events] == ["KICK_OFF", "PLAY_MODE"]
    assert events[1]["to"] == "PlayOn"
    # A cube put into the goal zone by hand rests there and scores after one second.
    sim.step(10)
    sim.play_mode = "TimeUp"
    assert sim.play_mode == "TimeUp"
    with pytest.raises(ValueError, match="unknown play mode"):
        sim.play_mode = "Halftime"


def test_trajectory_record_load_save(tmp_path):
    sim = armsim.Sim()
    path = tmp_path / "run.pkl.gz"
    with sim.record(path, every=10):
        drive(sim, 100)
    assert not sim.is_recording
    demos = armsim.load_trajectory(path)
    assert list(demos) == ["arm6"]
    demo = demos["arm6"][0]
    assert len(demo["actions"]) == 100 and len(demo["states"]) == 10
    assert demo["extra"]["from_fresh_load"] is True
    assert set(demo["actions"][0]["dof_pos_target"]) == set(sim.joint_names)
    assert demo["states"][-1]["cube_red"]["pos"] == pytest.approx(sim.objects["cube_red"]["pos"].tolist())
    # Save in another format and read it back unchanged.
    out = tmp_path / "copy.json.gz"
    armsim.save_trajectory(out, demos)
    assert armsim.load_trajectory(out) == demos
    with pytest.raises(ValueError, match="init_state"):
        armsim.save_trajectory(tmp_path / "bad.json", {"arm6": [{"actions": []}]})
    with pytest.raises(FileNotFoundError):
        armsim.load_trajectory(tmp_path / "missing.pkl")
    # A reset while recording starts a new demo.
    path2 = tmp_path / "two.json"
    sim.record(path2)
    sim.step(5)
    sim.reset()
    sim.step(7)
    summary = sim.stop_recording()
    assert summary["demos"] == 2 and summary["actions"] == 12
    assert [len(d["actions"]) for d in armsim.load_trajectory(path2)["arm6"]] == [5, 7]


def test_same_state_hash_as_the_app_idle(armsim_exe):
    """The app with nobody controlling holds the scene's home targets: as a fresh Sim."""
    sim = armsim.Sim()
    sim.step(480)
    out = run_armsim(armsim_exe, "--headless", "--steps", "480", "--no-teleop", "--no-agent-ports")
    assert state_hash_of(out) == sim.state_hash()


def test_same_state_hash_as_the_app_replaying_our_inputs(armsim_exe, tmp_path):
    """Inputs recorded here, replayed by action by the app, end in the same state, bit for bit."""
    sim = armsim.Sim()
    path = tmp_path / "inputs.pkl.gz"
    with sim.record(path, every=60):
        drive(sim, 600)
    out = run_armsim(armsim_exe, "--headless", "--replay", str(path), "--replay-mode", "action",
                     "--no-teleop", "--no-agent-ports")
    assert state_hash_of(out) == sim.state_hash(), out
