"""Sim and real SO-101 episodes in one LeRobot dataset: what a LeRobot user with a real arm does.

1. Each episode of the real arm's dataset (`--real`, as `lerobot-record --dataset.vcodec=h264`
   writes it) is replayed in armsim (`--replay-lerobot`), which reports how far the simulated
   arm goes from the real one and records its twin in the same schema (`--lerobot-robot`).
2. `lerobot-edit-dataset merge` merges the real dataset with the simulated one.
3. The merged dataset loads with `LeRobotDataset`, and `lerobot-train` runs on it (`--train-steps`).

It needs LeRobot (`pip install 'lerobot[feetech]'`; 0.4.4 is the newest for Python 3.11) in
the Python that runs it, and an armsim binary (`--armsim`, default target/release/armsim, else
target/debug/armsim). The real dataset's cameras must be the scene's (names and sizes), its
videos H.264 as armsim's are (LeRobot's default is AV1; `merge` refuses features that differ),
and its robot type the schema's: `so_follower` for LeRobot 0.4, `so101_follower` for 0.6.

    python3 examples/python/lerobot_sim_real.py --real tests/fixtures/lerobot/so_follower_h264 \\
        --scene my_so101.json --out /tmp/sim_real --train-steps 2
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def default_armsim():
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "armsim"
        if path.is_file():
            return str(path)
    return "armsim"


def run(cmd, env=None):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(map(str, cmd))}\n{out.stdout}\n{out.stderr}")
    return out.stdout


def replay_episodes(armsim, scene, real, sim_root, robot):
    """Replays every episode of `real` in armsim, recording each twin; gives the reports."""
    info = json.loads((real / "meta" / "info.json").read_text())
    reports = []
    parts = []
    for episode in range(info["total_episodes"]):
        part = sim_root.parent / f"{sim_root.name}-part{episode}"
        shutil.rmtree(part, ignore_errors=True)
        out = run([armsim, "--headless", "--fast", "--no-teleop", "--no-agent-ports",
                   "--scene", scene, "--replay-lerobot", real, "--episode", episode,
                   "--lerobot-robot", robot, "--record-lerobot", part])
        reports.append(out[out.index("LeRobot replay"):out.index("state hash")].strip())
        parts.append(part)
    return reports, parts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--real", type=Path, required=True, help="the real arm's LeRobot v3 dataset")
    p.add_argument("--scene", type=Path, required=True,
                   help="the SO-101 scene (its cameras as the real dataset's)")
    p.add_argument("--out", type=Path, required=True, help="a folder for the datasets made here")
    p.add_argument("--armsim", default=default_armsim())
    p.add_argument("--robot", default=None,
                   help="the schema (default: the real dataset's robot_type)")
    p.add_argument("--train-steps", type=int, default=0,
                   help="run lerobot-train (ACT, CPU) this many steps on the merged dataset")
    args = p.parse_args()

    real = args.real.resolve()
    robot = args.robot or json.loads((real / "meta" / "info.json").read_text())["robot_type"]
    home = args.out.resolve() / "home"
    shutil.rmtree(home, ignore_errors=True)
    (home / "local").mkdir(parents=True)
    # LeRobot 0.4's merge loads every dataset by repo id under HF_LEROBOT_HOME.
    shutil.copytree(real, home / "local" / "real")
    reports, parts = replay_episodes(args.armsim, args.scene.resolve(), real,
                                     home / "local" / "sim", robot)
    for report in reports:
        print(report)

    env = {**os.environ, "HF_LEROBOT_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    bin_dir = Path(sys.executable).parent
    for k, part in enumerate(parts):
        shutil.move(str(part), home / "local" / f"sim{k}")
    sims = [f"local/sim{k}" for k in range(len(parts))]
    ids = ["local/real", *sims]
    run([bin_dir / "lerobot-edit-dataset", "--repo_id", "local/merged",
         "--operation.type", "merge", "--operation.repo_ids", json.dumps(ids)], env=env)

    # The merged dataset's last frame is the last twin's: its image, decoded from the merged
    # video, must be the one decoded from the twin's own.
    check = (
        "from lerobot.datasets.lerobot_dataset import LeRobotDataset\n"
        "ds = LeRobotDataset('local/merged', video_backend='pyav')\n"
        f"twin = LeRobotDataset('{sims[-1]}', video_backend='pyav')\n"
        "item, own = ds[len(ds) - 1], twin[len(twin) - 1]\n"
        "keys = [k for k in item if k.startswith('observation.images.')]\n"
        "diff = max(float((item[k] - own[k]).abs().mean()) for k in keys) if keys else 0.0\n"
        "print('merged:', ds.meta.total_episodes, 'episodes,', ds.meta.total_frames, 'frames,',\n"
        "      'robot_type', ds.meta.robot_type, '; last item keys:', sorted(item),\n"
        "      '; its images against the twin\\'s own: mean |diff|', round(diff, 4))\n"
        "assert diff < 0.01, diff\n"
    )
    print(run([sys.executable, "-c", check], env=env).strip())
    if args.train_steps > 0:
        out_dir = args.out.resolve() / "train"
        shutil.rmtree(out_dir, ignore_errors=True)
        log = run([bin_dir / "lerobot-train", "--dataset.repo_id=local/merged",
                   f"--dataset.root={home / 'local' / 'merged'}", "--dataset.video_backend=pyav",
                   "--policy.type=act", "--policy.pretrained_backbone_weights=null",
                   "--policy.device=cpu", "--policy.push_to_hub=false", "--wandb.enable=false",
                   f"--steps={args.train_steps}", "--batch_size=2", "--num_workers=0",
                   f"--output_dir={out_dir}", "--save_checkpoint=false"], env=env)
        print(f"lerobot-train ran {args.train_steps} steps on the merged dataset")
        tail = [line for line in log.splitlines() if "step:" in line]
        if tail:
            print(tail[-1])


if __name__ == "__main__":
    main()
