"""Grasps on the Menagerie Panda as its file and Coulomb say (benches/mujoco_grasp.py runs the
grasps in armsim and in MuJoCo 4.0.0 and prints the table; these tests assert armsim's side).

The expectations come from the file and the law, not from recorded runs:
- the fingers' tendon actuator, closed on a 5 cm cube, presses the pads with the force the file
  gives (`actuator8`: 100 N/m on the tendon's length, 2.5 N in all), within 5 %;
- with friction 1, two pads hold at most μN/g: a cube of 0.8× that stays in the still hand,
  creeping at most 10 µm/s, and one of 1.2× slips out onto the table;
- while the cube hangs in the hand, the contact forces on it carry its weight: |ΣF_z − mg|
  within 5 % of mg.

The robot file comes from PyPI through scripts/robot-fixtures (cached under target/); without
it, and without the network to fetch it, these tests fail saying so."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benches"))
import mujoco_grasp as grasp  # noqa: E402

GRIP_TOLERANCE = 0.05
MAX_CREEP_UM_S = 10.0
BALANCE_TOLERANCE = 0.05


@pytest.fixture(scope="module")
def grip(fixtures, tmp_path_factory):
    return grasp.file_grip(fixtures, str(tmp_path_factory.mktemp("grip")))


@pytest.fixture(scope="module")
def creep(fixtures, tmp_path_factory):
    return grasp.grasp(fixtures, str(tmp_path_factory.mktemp("creep")), grasp.CREEP_MASS)


def test_the_files_grip_is_its_tendon_actuators_force(grip):
    """The harness reads the file as the docstring says: 100 N/m × 0.025 m on the tendon."""
    assert grip.tendon_force == pytest.approx(2.5, rel=1e-3)
    assert grip.pad_normal == pytest.approx(2.5, rel=1e-3)
    assert grip.limit_kg() == pytest.approx(0.255, abs=1e-3)


def test_the_pads_press_with_the_files_force(grip, creep):
    measured = creep.grip_n("armsim")
    assert measured == pytest.approx(grip.pad_normal, rel=GRIP_TOLERANCE), (
        f"armsim's pads press with {measured:.3f} N; the file says {grip.pad_normal:.3f} N")


def test_a_light_cube_is_held_still(creep):
    assert creep.held("armsim")
    rate = creep.creep_um_s("armsim")
    assert rate <= MAX_CREEP_UM_S, f"the cube creeps {rate:.1f} µm/s in the still hand"


def test_the_contacts_carry_the_cubes_weight(creep):
    weight = creep.mass * grasp.G
    off = creep.balance_n("armsim")
    assert off <= BALANCE_TOLERANCE * weight, f"|ΣF_z − mg| = {off:.4f} N, mg = {weight:.4f} N"


@pytest.mark.parametrize("ratio,held", [(0.8, True), (1.2, False)])
def test_coulombs_limit_decides_what_stays_in_the_hand(fixtures, grip, tmp_path, ratio, held):
    mass = ratio * grip.limit_kg()
    run = grasp.grasp(fixtures, str(tmp_path), mass)
    if held:
        assert run.held("armsim"), f"{mass * 1e3:.0f} g ({ratio}× μN/g) fell out"
        assert run.creep_um_s("armsim") <= MAX_CREEP_UM_S
    else:
        assert run.dropped("armsim"), f"{mass * 1e3:.0f} g ({ratio}× μN/g) is not on the table"
