#!/usr/bin/env python3
"""Benchmarks of the Python package, each against a baseline measured in the same run:

  1. Sim.step(2400) against the bare Rust step (`SimWorld::step` 2400 times: Rapier's pipeline
     on the same sets, with no ECS, referee or guard, timed inside Rust:
     `armsim.bench_bare_step`). A `Sim` steps the app's ECS schedule, so this ratio is the ECS
     step path's cost (bevy_rapier3d's systems, the session, the referee).
  2. Sim.step(1) called 600 times against Sim.step(2400)'s time per step: the per-call overhead
     of crossing from Python (target: within 10 %); and against 600 bare steps.
  3. make_vec(1, 2, 4): env steps per second (one env step = 8 physics steps + the teleop IK),
     and the ratio of 2 worlds to 1 (target on 2 cores: >= 1.7).
  4. Ray collection (examples/python/ray_collect.py) with 1 and 2 actors: episodes and env
     steps per second, Ray's start-up excluded.

Each figure is the median of --repeats runs. Run on a quiet machine for absolute figures; the
ratios are what carries over.

    python/.venv/bin/python examples/python/bench.py [--repeats 5] [--no-ray]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import armsim

ROOT = Path(__file__).resolve().parents[2]


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_step(repeats):
    sim = armsim.Sim()

    def big():
        sim.reset()
        sim.step(2400)

    def small():
        sim.reset()
        for _ in range(600):
            sim.step(1)

    # Interleaved, so drifting machine load hits both sides alike.
    bare_2400, py_2400, bare_600, py_600 = [], [], [], []
    for _ in range(repeats):
        bare_2400.append(armsim.bench_bare_step(2400))
        py_2400.append(median_time(big, 1))
        bare_600.append(armsim.bench_bare_step(600))
        py_600.append(median_time(small, 1))
    b24, p24 = statistics.median(bare_2400), statistics.median(py_2400)
    b6, p6 = statistics.median(bare_600), statistics.median(py_600)
    print(f"Sim.step(2400):        {p24 * 1e3:8.1f} ms  ({2400 / p24:7.0f} steps/s)   "
          f"bare Rust step: {b24 * 1e3:8.1f} ms ({2400 / b24:7.0f} steps/s)   ratio {p24 / b24:.3f}")
    print(f"Sim.step(1) x 600:     {p6 * 1e3:8.1f} ms  ({600 / p6:7.0f} steps/s)   "
          f"bare Rust step: {b6 * 1e3:8.1f} ms ({600 / b6:7.0f} steps/s)   ratio {p6 / b6:.3f}")
    print(f"per-call overhead of Sim.step(1) over Sim.step(2400) per step: "
          f"{100 * ((p6 / 600) / (p24 / 2400) - 1):+.1f} % (target within 10 %)")


def bench_vec(repeats, steps):
    rates = {}
    for n in (1, 2, 4):
        venv = armsim.make_vec(n)
        venv.reset()
        rng = np.random.default_rng(0)
        # Every world gets the same actions, so each does the same work and the ratio measures
        # the parallel stepping alone (with different actions the worlds' costs drift apart as
        # cubes are knocked awake, and each step waits for the slowest world).
        actions = np.repeat(rng.uniform(-1, 1, size=(steps, 1, 4)).astype(np.float32), n, axis=1)

        def run():
            venv.reset()
            for a in actions:
                venv.step(a)

        t = median_time(run, repeats)
        rates[n] = n * steps / t
        print(f"make_vec({n}) [{venv.threads} threads]: {rates[n]:7.0f} env steps/s "
              f"({rates[n] * 8:7.0f} physics steps/s)")
        venv.close()
    print(f"make_vec: 2 worlds / 1 world = {rates[2] / rates[1]:.2f}x, 4 / 1 = {rates[4] / rates[1]:.2f}x "
          f"on {os.cpu_count()} cores")


def bench_ray(episodes):
    script = ROOT / "examples" / "python" / "ray_collect.py"
    for actors in (1, 2):
        out = Path(f"/tmp/armsim-bench-ray-{os.getpid()}-{actors}")
        proc = subprocess.run([sys.executable, str(script), "--actors", str(actors), "--episodes",
                               str(episodes), "--out", str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"ray_collect --actors {actors} failed:\n{proc.stdout}{proc.stderr}")
            return
        line = proc.stdout.strip().splitlines()[-1]
        m = re.search(r"in ([\d.]+) s \(([\d.]+) episodes/s, (\d+) env steps/s\)", line)
        print(f"Ray {actors} actor(s) x {episodes} episodes: "
              + (f"{m.group(2)} episodes/s, {m.group(3)} env steps/s ({m.group(1)} s)" if m else line))
        for f in out.glob("*"):
            f.unlink()
        out.rmdir()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vec-steps", type=int, default=300, help="vector env steps per run")
    ap.add_argument("--ray-episodes", type=int, default=2, help="episodes per actor")
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"armsim {armsim.__version__}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    bench_step(args.repeats)
    bench_vec(args.repeats, args.vec_steps)
    if not args.no_ray:
        bench_ray(args.ray_episodes)


if __name__ == "__main__":
    main()
