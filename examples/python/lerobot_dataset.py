#!/usr/bin/env python3
"""Make a LeRobot v3.0 dataset with no headset: the scripted pick-and-place policy
(`pick_and_place.py`) drives an armsim through `armsim.connect`, and armsim records what it does
(`--record-lerobot`): joint states, joint targets and its cameras' video.
Each episode ends at the referee's Success (or TimeUp, or after --max-steps policy steps), and the
next starts with a scene reset.

By default this starts its own `armsim --headless --record-lerobot OUT` on free ports (the
cameras render offscreen: Vulkan, Mesa's software lavapipe will do, no display needed), runs the
episodes in sync mode (as fast as the machine allows), then stops armsim with SIGTERM, which
finishes the dataset. With --connect it drives an armsim you started yourself with
`--record-lerobot DIR --agent-port … --monitor-port …` (for example the window) and leaves it
running; stop it to write the dataset.

    python3 examples/python/lerobot_dataset.py --out my_dataset --episodes 2
    armsim --record-lerobot my_dataset --agent-port 60000 --monitor-port 60001 &
    python3 examples/python/lerobot_dataset.py --connect 127.0.0.1:60000 --monitor 127.0.0.1:60001
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from pick_and_place import run_episode  # noqa: E402


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_port(port, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"armsim exited early ({proc.returncode}): {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"armsim did not listen on port {port} within {timeout} s")


def default_armsim():
    env = os.environ.get("ARMSIM_BIN")
    if env:
        return env
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / "armsim"
        if path.is_file():
            return str(path)
    return "armsim"


def record(out, episodes, max_steps, armsim_bin, scene=None, extra=()):
    """Starts armsim recording into `out`, runs `episodes` scripted episodes through
    `armsim.connect` and stops armsim with SIGTERM. Returns (outcomes, armsim's stdout, its log
    (stderr))."""
    import armsim

    agent, monitor = free_ports(2)
    cmd = [armsim_bin, "--headless", "--sync", "--no-teleop", "--agent-port", str(agent),
           "--monitor-port", str(monitor), "--record-lerobot", str(out), *extra]
    if scene:
        cmd += ["--scene", scene]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_port(agent, proc)
        wait_port(monitor, proc)
        outcomes = drive(armsim, f"127.0.0.1:{agent}", f"127.0.0.1:{monitor}", episodes, max_steps,
                         scene=scene, sync=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"armsim failed ({proc.returncode}):\n{stderr}")
    return outcomes, stdout, stderr


def drive(armsim, agent, monitor, episodes, max_steps, scene=None, sync=False):
    outcomes = []
    with armsim.connect(agent=agent, monitor=monitor, scene=scene, sync=sync) as remote:
        for k in range(episodes):
            # reset() resets the scene (ending the previous episode) and kicks off a new one.
            info, steps, _ = run_episode(remote, max_steps=max_steps)
            outcomes.append((info["play_mode"], info["score"], steps))
            print(f"episode {k}: {info['play_mode']} after {steps} policy steps, score {info['score']}")
    return outcomes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="armsim_lerobot_dataset", help="dataset folder (must not hold files)")
    ap.add_argument("--episodes", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=4000, help="policy steps per episode at most")
    ap.add_argument("--scene", help="scene file or bundled name")
    ap.add_argument("--armsim", default=default_armsim(), help="the armsim binary to start")
    ap.add_argument("--connect", metavar="HOST:PORT", help="drive an armsim you started (its agent port)")
    ap.add_argument("--monitor", metavar="HOST:PORT", help="its monitor port")
    ap.add_argument("--sync", action="store_true", help="the armsim you started runs --sync")
    args = ap.parse_args(argv)
    import armsim

    if args.connect:
        drive(armsim, args.connect, args.monitor, args.episodes, args.max_steps, args.scene, args.sync)
        print("done; stop armsim (Ctrl-C or SIGTERM) to write the dataset")
        return 0
    outcomes, stdout, _log = record(Path(args.out), args.episodes, args.max_steps, args.armsim, args.scene)
    info = json.loads((Path(args.out) / "meta" / "info.json").read_text())
    print(f"{args.out}: {info['total_episodes']} episodes, {info['total_frames']} frames at "
          f"{info['fps']} fps ({', '.join(o[0] for o in outcomes)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
