"""A LeRobot v3.0 dataset made the way a user makes one without a headset
(`examples/python/lerobot_dataset.py`: the scripted policy drives `armsim --headless
--record-lerobot` through `armsim.connect`, and SIGTERM finishes the dataset), then loaded by the
rules LeRobot applies, with pyarrow, datasets and PyAV (`lerobot_check.check_dataset`)."""

import json

from lerobot_check import check_dataset


def test_a_scripted_session_becomes_a_dataset_lerobot_loads(armsim_exe, tmp_path):
    from lerobot_dataset import record

    out = tmp_path / "dataset"
    # Short episodes: 150 policy steps of 8 physics steps each (5 s of sim time, 150 frames).
    outcomes, stdout = record(out, episodes=2, max_steps=150, armsim_bin=str(armsim_exe))
    assert len(outcomes) == 2
    assert "LeRobot dataset" in stdout and "2 episodes" in stdout, stdout
    summary = check_dataset(out)
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["robot_type"] == "arm6"
    assert summary["episodes"] == 2, summary
    # Each episode runs from its kick-off to the next reset (or the stop): its 150 policy steps,
    # plus the few frames the next reset's round trip takes. The moments between the client's
    # connect and its first reset are dropped (under a second).
    assert all(150 <= n <= 170 for n in summary["episode_lengths"]), summary["episode_lengths"]
    assert summary["tasks"] == ["Pick up each cube and place it in the goal zone."], summary
    names = info["features"]["observation.state"]["names"]
    assert names[0] == "shoulder_pan.pos" and len(names) == len(info["features"]["action"]["names"])
    # Headless armsim renders no cameras yet: joints only.
    assert info["video_path"] is None and summary["video_files"] == 0, summary
