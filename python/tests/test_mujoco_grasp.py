"""Grasps on the Menagerie Panda and the SO-101 as their files and Coulomb say
(benches/mujoco_grasp.py runs the grasps in armsim and in MuJoCo 4.0.0 and prints the tables;
these tests assert armsim's side).

The expectations come from the files and the law, not from recorded runs:
- the Panda's tendon actuator, closed on a 5 cm cube, presses the pads with the force the file
  gives (`actuator8`: 100 N/m on the tendon's length, 2.5 N in all), within 5 %; the SO-101's
  jaw servo, closed on a 40 mm block, with its torque over the pad's lever about the hinge,
  within 10 % (where on its 14 mm pad the block presses moves the lever by a few per cent, and
  the jaw's dry friction holds up to 0.052 N·m of the servo's torque either way);
- with friction 1, two pads hold at most μN/g: a block of 0.8× that stays in the still hand,
  creeping at most 10 µm/s, and one of 1.2× slips out onto the table;
- while the block hangs in the hand, the contact forces on it carry its weight: |ΣF_z − mg|
  within 5 % of mg.

The robot files come from PyPI through scripts/robot-fixtures (cached under target/); without
them, and without the network to fetch them, these tests fail saying so."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benches"))
import mujoco_grasp as grasp  # noqa: E402

GRIP_TOLERANCE = {"panda": 0.05, "so101": 0.10}
MAX_CREEP_UM_S = 10.0
BALANCE_TOLERANCE = 0.05
HANDS = sorted(grasp.HANDS)


@pytest.fixture(scope="module", params=HANDS)
def hand(request):
    return grasp.HANDS[request.param]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, hand):
    return str(tmp_path_factory.mktemp(hand.name))


@pytest.fixture(scope="module")
def grip(fixtures, workdir, hand):
    return grasp.file_grip(hand, fixtures, workdir)


@pytest.fixture(scope="module")
def place(fixtures, workdir, hand):
    return grasp.place(hand, fixtures, workdir)


@pytest.fixture(scope="module")
def creep(fixtures, workdir, hand, place):
    return grasp.grasp(hand, fixtures, workdir, hand.creep_mass, pos=place)


def test_the_pandas_grip_is_its_tendon_actuators_force(fixtures, tmp_path):
    """The harness reads the file as the docstring says: 100 N/m × 0.025 m on the tendon."""
    grip = grasp.file_grip(grasp.PANDA, fixtures, str(tmp_path))
    assert grip.actuator_force == pytest.approx(2.5, rel=1e-3)
    assert grip.pad_normal == pytest.approx(2.5, rel=1e-3)
    assert grip.limit_kg() == pytest.approx(0.255, abs=1e-3)


def test_the_so101s_grip_is_its_servos_torque_over_the_lever(fixtures, tmp_path):
    """Closed (−0.17 rad) on the block the jaw's servo is at its force range, and the pads sit
    some 74 mm from the hinge."""
    own = grasp.replace(grasp.SO101, jaw_force=None)
    grip = grasp.file_grip(own, fixtures, str(tmp_path))
    assert grip.actuator_force == pytest.approx(3.35, rel=1e-6)
    assert 0.07 < 2 * grip.actuator_force / grip.pad_normal < 0.08


def test_the_pads_press_with_the_files_force(hand, grip, creep):
    measured = creep.grip_n("armsim")
    assert measured == pytest.approx(grip.pad_normal, rel=GRIP_TOLERANCE[hand.name]), (
        f"{hand.name}: armsim's pads press with {measured:.3f} N; the file says "
        f"{grip.pad_normal:.3f} N")


def test_a_light_block_is_held_still(hand, creep):
    assert creep.held("armsim"), f"{hand.name}: the block fell out"
    rate = creep.creep_um_s("armsim")
    assert rate <= MAX_CREEP_UM_S, f"{hand.name}: the block creeps {rate:.1f} µm/s in the hand"


def test_the_contacts_carry_the_blocks_weight(hand, creep):
    weight = creep.mass * grasp.G
    off = creep.balance_n("armsim")
    assert off <= BALANCE_TOLERANCE * weight, (
        f"{hand.name}: |ΣF_z − mg| = {off:.4f} N, mg = {weight:.4f} N")


@pytest.mark.parametrize("ratio,held", [(0.8, True), (1.2, False)])
def test_coulombs_limit_decides_what_stays_in_the_hand(fixtures, workdir, hand, grip, place,
                                                        ratio, held):
    mass = ratio * grip.limit_kg()
    run = grasp.grasp(hand, fixtures, workdir, mass, pos=place)
    if held:
        assert run.held("armsim"), f"{hand.name}: {mass * 1e3:.0f} g ({ratio}× μN/g) fell out"
        assert run.creep_um_s("armsim") <= MAX_CREEP_UM_S
    else:
        assert run.dropped("armsim"), (
            f"{hand.name}: {mass * 1e3:.0f} g ({ratio}× μN/g) is not on the table")
