#!/usr/bin/env python3
"""armsim's step against MuJoCo's with the arm moving, both driven from Python.

For arm6 (the default scene), the Menagerie Panda and the SO-101 (the robot files of
`scripts/robot-fixtures`), with the scene's cubes resting on the table (benches/mujoco_compare.py
builds both worlds: the same scene, table and cubes, dt 1/240, MuJoCo's implicitfast), it times
`steps` steps in each of:
- armsim's Python package (`armsim.Sim`, the release build python/test.sh installs): a new
  target vector every step (`set_targets`, then `step`), timed together;
- MuJoCo 4.0.0 with the same targets as `ctrl`, copied in every step, then `mj_step`, at its
  defaults and with its sleep flag on (its resting cubes sleep; the driven arm stays awake,
  as a moving armsim arm does; a resting armsim arm sleeps): like for like is the sleep-on row.
The targets are those of `armsim bench --motion sines` (src/bin/armsim/bench/mod.rs, `sine_targets`): arm
joint i about home at 0.2 rad (2 cm for a slide), 0.23 + 0.06·i Hz; the gripper holds home.
With `--rest` it also times both with the arm holding home (armsim's arm and cubes then rest).
Each figure is the median of 5 rounds, each on a fresh world; the ratio is armsim's steps/s over
MuJoCo's, measured in one run.

Usage (needs `armsim` and `mujoco`, as in python/.venv after python/test.sh; re-runs itself
there when the current Python lacks them):
    benches/mujoco_moving.py [--robots arm6 panda so101] [--cubes 3] [--steps 2400] [--rest]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mujoco_agreement as agreement  # noqa: E402
import mujoco_compare as compare  # noqa: E402

if __name__ == "__main__":
    agreement.ensure_imports()

import numpy as np  # noqa: E402

ROUNDS = 5


def armsim_rate(path, targets, steps, moving):
    """armsim.Sim's steps/s on the scene at `path`: `targets` (steps, joints) set every step
    when `moving`, else the scene's home held."""
    import armsim

    times = []
    for _ in range(ROUNDS):
        sim = armsim.Sim(path)
        t0 = time.perf_counter()
        if moving:
            for k in range(steps):
                sim.set_targets(targets[k])
                sim.step()
        else:
            for _ in range(steps):
                sim.step()
        times.append(time.perf_counter() - t0)
    return steps / statistics.median(times)


def compare_robot(name, scene, robot, cubes, steps, tmp, rest):
    """Rows (robot, cubes, arm, MuJoCo sleep, armsim steps/s, MuJoCo steps/s)."""
    import armsim

    rows = []
    for n in cubes:
        sc = compare.scene_with_cubes(scene, n, robot)
        path = os.path.join(tmp, f"{name}_{n}.json")
        with open(path, "w") as f:
            json.dump(sc, f)
        model, _ = compare.mujoco_model(sc, robot is not None)
        sines = compare.sine_ctrl(model, sc, steps)
        sim = armsim.Sim(path)
        home = np.array([t[1] for t in sim.targets])
        targets = np.tile(home, (steps, 1))
        for joint, _, _, q in sines:
            targets[:, sim.joint_names.index(joint)] = q
        for moving in ([False, True] if rest else [True]):
            ours = armsim_rate(path, targets, steps, moving)
            motion = "sines" if moving else "rest"
            for sleep in (False, True):
                theirs, _ = compare.run_mujoco(sc, steps, own_actuators=robot is not None,
                                               sleep=sleep, motion=motion)
                rows.append((name, n, motion, sleep, ours, theirs))
                print(f"  {name}, {n} cubes, arm {motion}, MuJoCo sleep "
                      f"{'on' if sleep else 'off'}: armsim {ours:.0f} steps/s, MuJoCo "
                      f"{theirs:.0f}: armsim / MuJoCo = {ours / theirs:.2f}×", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", choices=sorted(compare.ROBOTS),
                    default=["arm6", "panda", "so101"])
    ap.add_argument("--cubes", type=int, nargs="+", default=[3])
    ap.add_argument("--steps", type=int, default=2400)
    ap.add_argument("--rest", action="store_true", help="also time the arm at rest")
    args = ap.parse_args()
    import mujoco

    import armsim

    print(f"armsim {armsim.__version__} (Python), MuJoCo {mujoco.__version__}, {args.steps} "
          f"steps per round, median of {ROUNDS} rounds")
    agreement.fixtures_root()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.robots:
            scene, pattern = compare.ROBOTS[name]
            robot = compare.fixture(pattern) if pattern else None
            if pattern and robot is None:
                sys.exit(f"{name}: no {pattern} under target/robot-fixtures")
            rows += compare_robot(name, os.path.join(compare.ROOT, scene), robot, args.cubes,
                                  args.steps, tmp, args.rest)
    print("\n| robot | cubes | arm | MuJoCo sleep | armsim steps/s | MuJoCo steps/s | "
          "armsim / MuJoCo |")
    print("|---|---:|:---:|:---:|---:|---:|---:|")
    for name, n, motion, sleep, ours, theirs in rows:
        print(f"| {name} | {n} | {motion} | {'on' if sleep else 'off'} | {ours:.0f} | "
              f"{theirs:.0f} | {ours / theirs:.2f}× |")


if __name__ == "__main__":
    main()
