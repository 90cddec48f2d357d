#!/usr/bin/env python3
"""Collects scripted pick-and-place episodes with Ray: N actors, each holding a vector env of
armsim worlds (stepped in parallel Rust threads) and running the scripted policy
(`pick_and_place.py`); every episode is written as a MetaSim v2 `.pkl.gz` in --out.

    pip install './python[ray]'
    python3 examples/python/ray_collect.py --actors 2 --episodes 4 --out /tmp/episodes

On a cluster, start Ray on each machine and point the script at it; use one actor per core:

    ray start --head --port 6379                       # the head node
    ray start --address HEAD_IP:6379                   # every other node
    RAY_ADDRESS=HEAD_IP:6379 python3 examples/python/ray_collect.py --actors 32 --episodes 10 --out /shared/episodes

--out must then be a folder every node can write (a shared file system); each actor writes its
own files. Read them back with `armsim.load_trajectory(path)`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pick_and_place import ScriptedPolicy  # noqa: E402


def collect(actor_id, episodes, out, worlds, scene, state_every, max_steps):
    """One actor's work: `episodes` finished episodes from `worlds` parallel worlds."""
    import armsim

    venv = armsim.make_vec(worlds, scene=scene)
    obs, _ = venv.record_episodes(out, prefix=f"actor{actor_id:03d}", every=state_every)
    policies = [ScriptedPolicy() for _ in range(worlds)]
    files, outcomes, env_steps = [], [], 0
    start = time.perf_counter()
    resetting = np.zeros(worlds, bool)
    while len(files) < episodes and env_steps < max_steps:
        actions = np.stack([p({k: v[i] for k, v in obs.items()}) for i, p in enumerate(policies)])
        obs, _, terminated, truncated, info = venv.step(actions)
        env_steps += worlds
        for i in range(worlds):
            if resetting[i]:
                policies[i].reset()
            if terminated[i] or truncated[i]:
                outcomes.append(str(info["play_mode"][i]))
        resetting = terminated | truncated
        files += venv.take_recorded()
    venv.stop_recording()
    wall = time.perf_counter() - start
    # Worlds that finished in the same step can overshoot; keep exactly `episodes` files.
    for extra in files[episodes:]:
        os.remove(extra)
    return {"actor": actor_id, "files": files[:episodes],
            "outcomes": outcomes, "env_steps": env_steps, "wall_s": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--actors", type=int, default=2, help="Ray actors (one per core is a good start)")
    ap.add_argument("--episodes", type=int, default=2, help="episodes per actor")
    ap.add_argument("--out", required=True, help="folder for the .pkl.gz files")
    ap.add_argument("--worlds", type=int, default=1, help="worlds in each actor's vector env")
    ap.add_argument("--scene", help="scene file or bundled name (default: the default scene)")
    ap.add_argument("--state-every", type=int, default=8, help="a state every N physics steps")
    ap.add_argument("--max-env-steps", type=int, default=200_000, help="per actor, a safety stop")
    ap.add_argument("--address", default=os.environ.get("RAY_ADDRESS"),
                    help="a running Ray cluster (default: $RAY_ADDRESS, else a local Ray)")
    args = ap.parse_args(argv)
    if args.actors < 1 or args.episodes < 1 or args.worlds < 1:
        ap.error("--actors, --episodes and --worlds must be at least 1")
    import ray

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        # A bounded local Ray: no dashboard, one CPU per actor, quiet workers.
        ray.init(num_cpus=args.actors, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    try:
        Collector = ray.remote(num_cpus=1)(_Collector)
        actors = [Collector.remote() for _ in range(args.actors)]
        start = time.perf_counter()
        results = ray.get([a.run.remote(i, args.episodes, str(out), args.worlds, args.scene,
                                        args.state_every, args.max_env_steps)
                           for i, a in enumerate(actors)])
        wall = time.perf_counter() - start
    finally:
        ray.shutdown()
    files = [f for r in results for f in r["files"]]
    steps = sum(r["env_steps"] for r in results)
    successes = sum(o == "Success" for r in results for o in r["outcomes"])
    finished = sum(len(r["outcomes"]) for r in results)
    print(f"{len(files)} episodes in {out} from {args.actors} actors x {args.worlds} worlds: "
          f"{successes}/{finished} Success, {steps} env steps in {wall:.1f} s "
          f"({len(files) / wall:.2f} episodes/s, {steps / wall:.0f} env steps/s)")
    return 0 if len(files) == args.actors * args.episodes else 1


class _Collector:
    def run(self, *args):
        return collect(*args)


if __name__ == "__main__":
    sys.exit(main())
