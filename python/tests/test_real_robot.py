"""A real robot from its own files in Python: Menagerie's Panda (the copy genesis-world ships,
fetched from PyPI by scripts/robot-fixtures), stepped by armsim.Sim, and the same state hash as
the app stepping the same scene."""

import json
import subprocess

import numpy as np
import pytest

import armsim
from conftest import ROOT, run_armsim, state_hash_of


@pytest.fixture(scope="module")
def panda_scene(tmp_path_factory):
    out = subprocess.run([str(ROOT / "scripts" / "robot-fixtures")], capture_output=True, text=True, check=True)
    fixtures = out.stdout.strip().splitlines()[-1]
    robot = f"{fixtures}/genesis_world-1.4.5/genesis/assets/xml/franka_emika_panda/panda.xml"
    scene = json.loads((ROOT / "assets" / "scenes" / "panda.json").read_text())
    scene["robot"]["mjcf_path"] = robot
    path = tmp_path_factory.mktemp("panda") / "panda.json"
    path.write_text(json.dumps(scene))
    return path


def test_the_menagerie_panda_steps_from_python(panda_scene):
    sim = armsim.Sim(str(panda_scene))
    assert sim.joint_names == [f"joint{i}" for i in range(1, 8)] + ["finger_joint1", "finger_joint2"]
    home = sim.q.copy()
    assert abs(home[3] + 1.57079) < 1e-4, home
    sim.set_targets({"joint1": 0.3})
    sim.step(480)
    assert abs(sim.q[0] - 0.3) < 0.01, sim.q
    assert np.all(np.abs(sim.q[1:7] - home[1:7]) < 0.01), sim.q - home


def test_same_state_hash_as_the_app(armsim_exe, panda_scene):
    sim = armsim.Sim(str(panda_scene))
    sim.step(240)
    out = run_armsim(armsim_exe, "--scene", str(panda_scene), "--headless", "--steps", "240",
                     "--no-teleop", "--no-agent-ports")
    assert state_hash_of(out) == sim.state_hash()
