"""A dataset armsim records (`lerobot_dataset.record`, as in test_lerobot.py) checked the way
LeRobot's own tools use it, and by a third-party checker:

- the episodes parquet carries `stats/<feature>/<stat>` for every feature, typed as LeRobot writes
  them, and aggregating them with LeRobot's formula gives `meta/stats.json`: that is how
  `lerobot-edit-dataset` (delete_episodes, split) rebuilds `stats.json`;
- `lerobot-doctor`'s format checks pass;
- killed with SIGKILL in the middle of an episode, armsim leaves every episode saved before the
  kill loadable."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_check import STATS_KEYS, check_dataset

# lerobot-doctor's checks of the format (the others judge the demonstrations themselves: frozen or
# clipped actions, outlier episodes).
FORMAT_CHECKS = ["metadata", "temporal", "videos", "statistics", "episodes", "consistency", "portability",
                 "training"]


def aggregate_feature_stats(stats_ft_list):
    """LeRobot 0.4.4's `aggregate_feature_stats` (lerobot/datasets/compute_stats.py, Apache-2.0),
    the formula `lerobot-edit-dataset` rebuilds stats.json with."""
    means = np.stack([s["mean"] for s in stats_ft_list])
    variances = np.stack([s["std"] ** 2 for s in stats_ft_list])
    counts = np.stack([s["count"] for s in stats_ft_list])
    total_count = counts.sum(axis=0)
    while counts.ndim < means.ndim:
        counts = np.expand_dims(counts, axis=-1)
    weighted_means = means * counts
    total_mean = weighted_means.sum(axis=0) / total_count
    delta_means = means - total_mean
    weighted_variances = (variances + delta_means**2) * counts
    total_variance = weighted_variances.sum(axis=0) / total_count
    aggregated = {
        "min": np.min(np.stack([s["min"] for s in stats_ft_list]), axis=0),
        "max": np.max(np.stack([s["max"] for s in stats_ft_list]), axis=0),
        "mean": total_mean,
        "std": np.sqrt(total_variance),
        "count": total_count,
    }
    for q_key in [k for k in stats_ft_list[0] if k.startswith("q") and k[1:].isdigit()]:
        quantile_values = np.stack([s[q_key] for s in stats_ft_list])
        aggregated[q_key] = (quantile_values * counts).sum(axis=0) / total_count
    return aggregated


def episodes_table(root):
    files = sorted((Path(root) / "meta" / "episodes").glob("*/*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files])


def episode_stats(table, features):
    """Each episode's stats as LeRobot's dataset_tools reads them back: numpy arrays per
    feature and stat, `[3, 1, 1]` for images and videos."""
    rows = table.to_pylist()
    out = []
    for row in rows:
        stats = {}
        for key, ft in features.items():
            stats[key] = {s: np.array(row[f"stats/{key}/{s}"]) for s in STATS_KEYS}
            if ft["dtype"] in ("image", "video"):
                for s in STATS_KEYS:
                    if s != "count":
                        assert stats[key][s].shape == (3, 1, 1), (key, s, stats[key][s].shape)
        out.append(stats)
    return out


def check_episode_stats(root):
    """The episodes' stats columns exist for every feature with LeRobot's types, and
    aggregate to meta/stats.json."""
    root = Path(root)
    info = json.loads((root / "meta" / "info.json").read_text())
    features = info["features"]
    table = episodes_table(root)
    schema = table.schema
    image3 = pa.list_(pa.list_(pa.list_(pa.float64())))
    for key, ft in features.items():
        for s in STATS_KEYS:
            name = f"stats/{key}/{s}"
            assert name in schema.names, f"no column {name}"
            if s == "count" or (ft["dtype"] == "int64" and s in ("min", "max")):
                want = pa.list_(pa.int64())
            elif ft["dtype"] in ("image", "video"):
                want = image3
            else:
                want = pa.list_(pa.float64())
            assert schema.field(name).type == want, (name, schema.field(name).type, want)
    per_episode = episode_stats(table, features)
    assert len(per_episode) == info["total_episodes"]
    stats = json.loads((root / "meta" / "stats.json").read_text())
    assert sorted(stats) == sorted(features), (sorted(stats), sorted(features))
    for key in features:
        agg = aggregate_feature_stats([ep[key] for ep in per_episode])
        for s in STATS_KEYS:
            got = np.array(stats[key][s], dtype=float)
            assert got.shape == agg[s].shape, (key, s, got.shape, agg[s].shape)
            np.testing.assert_allclose(got, agg[s], rtol=1e-9, atol=1e-12, err_msg=f"{key} {s}")
    assert int(stats["index"]["count"][0]) == info["total_frames"]
    return per_episode


def run_doctor(root):
    """lerobot-doctor's CLI in CI mode on `root`: its JSON report (it exits 1 on a failed
    check)."""
    exe = Path(sys.executable).parent / "lerobot-doctor"
    assert exe.is_file(), f"{exe} missing: lerobot-doctor is in the test extras (pip install ./python[test])"
    out = subprocess.run([str(exe), "check", str(root), "--ci", "--checks", ",".join(FORMAT_CHECKS)],
                         capture_output=True, text=True, timeout=300)
    report = json.loads(out.stdout)
    failed = [(r["name"], [m["message"] for m in r["messages"] if m["severity"] == "FAIL"])
              for r in report["checks"] if r["severity"] == "FAIL"]
    assert out.returncode == 0 and not failed, (out.returncode, failed, out.stderr[-2000:])
    assert len(report["checks"]) == len(FORMAT_CHECKS), [r["name"] for r in report["checks"]]
    return report


@pytest.fixture(scope="module")
def recorded(armsim_exe, tmp_path_factory):
    from lerobot_dataset import record

    out = tmp_path_factory.mktemp("stats") / "dataset"
    # 60 policy steps of 8 physics steps: 2 s, 60 rows per episode (an episode under 1 s is dropped).
    outcomes, stdout, _ = record(out, episodes=2, max_steps=60, armsim_bin=str(armsim_exe))
    assert len(outcomes) == 2 and "2 episodes" in stdout, stdout
    return out


def test_episode_stats_aggregate_to_stats_json(recorded):
    per_episode = check_episode_stats(recorded)
    # Each episode's own counts: its length, and the frames it sampled for images.
    table = episodes_table(recorded).to_pylist()
    for row, stats in zip(table, per_episode):
        assert int(stats["observation.state"]["count"][0]) == row["length"]
        assert int(stats["frame_index"]["max"][0]) == row["length"] - 1
        assert 0 < int(stats["observation.images.front"]["count"][0]) <= row["length"]


def test_lerobot_doctor_format_checks_pass(recorded):
    report = run_doctor(recorded)
    assert report["total_episodes"] == 2 and report["overall_severity"] != "FAIL", report


def test_a_killed_recording_keeps_its_saved_episodes(armsim_exe, tmp_path):
    """SIGKILL while an episode is open (no handler runs, nothing is finished): the episodes
    saved before it load by LeRobot's rules, their stats aggregate to stats.json, and the doctor
    passes."""
    import armsim
    from lerobot_dataset import drive, free_ports, wait_port

    out = tmp_path / "dataset"
    agent, monitor = free_ports(2)
    proc = subprocess.Popen(
        [str(armsim_exe), "--headless", "--sync", "--no-teleop", "--agent-port", str(agent),
         "--monitor-port", str(monitor), "--record-lerobot", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG="warn"))
    try:
        wait_port(agent, proc)
        wait_port(monitor, proc)
        # Three episodes: the resets save the first two; the third is open when the kill comes.
        drive(armsim, f"127.0.0.1:{agent}", f"127.0.0.1:{monitor}", 3, 60, sync=True)
        # The writer saves an episode on its own thread: wait until info.json (written last,
        # atomically) counts two.
        info_path = out / "meta" / "info.json"
        deadline = time.monotonic() + 120
        saved = 0
        while time.monotonic() < deadline:
            if info_path.is_file():
                saved = json.loads(info_path.read_text())["total_episodes"]
                if saved >= 2:
                    break
            time.sleep(0.1)
        assert saved >= 2, f"{saved} episodes saved"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    info = json.loads((out / "meta" / "info.json").read_text())
    summary = check_dataset(out)
    assert summary["episodes"] == info["total_episodes"] >= 2, summary
    check_episode_stats(out)
    run_doctor(out)
