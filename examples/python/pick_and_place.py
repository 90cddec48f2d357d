#!/usr/bin/env python3
"""A scripted pick-and-place policy for `armsim/PickAndPlace-v0`: for each cube in turn, move
above it, descend, close the gripper, lift, carry it above its own spot in the goal zone, put it
down, open and rise; all three cubes resting in the zone is the referee's Success.

It reads only the env's observation (tool point and cube poses), so the same policy runs on the
in-process env, on each world of `armsim.make_vec`, and on a running armsim through
`armsim.connect` while the window shows it:

    python3 examples/python/pick_and_place.py                    # in-process, prints the outcome
    armsim --agent-port 60000 --monitor-port 60001 &             # the window
    python3 examples/python/pick_and_place.py --connect 127.0.0.1:60000 --monitor 127.0.0.1:60001
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

#: Heights of the tool centre point (m, world): carrying, grasping (the table clearance stops the
#: hand just above the table) and putting down.
CARRY_Z = 1.20
GRASP_Z = 1.03
PLACE_Z = 1.045
#: Offsets of the three spots from the zone's centre: 10 cm apart, so the opening jaws miss the
#: cubes already placed.
SPOTS = [(-0.05, -0.05), (0.05, -0.05), (0.0, 0.045)]


class ScriptedPolicy:
    """One world's policy: `policy(obs)` gives the next action. `reset()` between episodes."""

    def __init__(self, max_step_m=0.03, gain=1.0):
        self.max_step_m = max_step_m
        self.gain = gain
        self.reset()

    def reset(self):
        self.plan = None
        self.index = 0
        self.ticks = 0

    def _make_plan(self, obs):
        cubes = obs["cubes"]
        zone = obs["goal_zone"]
        plan = []
        for k in range(len(cubes)):
            x, y = cubes[k][0], cubes[k][1]
            dx, dy = SPOTS[k % len(SPOTS)]
            px, py = zone[0] + dx, zone[1] + dy
            plan += [
                # (waypoint, grip, tolerance m, then hold for n steps, at most m steps)
                ((x, y, CARRY_Z), 0.0, 0.02, 0, 150),
                ((x, y, GRASP_Z), 0.0, 0.008, 6, 150),
                ((x, y, GRASP_Z), 1.0, 1.0, 20, 20),
                ((x, y, CARRY_Z), 1.0, 0.02, 0, 150),
                ((px, py, CARRY_Z), 1.0, 0.02, 0, 200),
                ((px, py, PLACE_Z), 1.0, 0.008, 6, 150),
                ((px, py, PLACE_Z), 0.0, 1.0, 15, 15),
                ((px, py, CARRY_Z), 0.0, 0.03, 0, 150),
            ]
        return plan

    def __call__(self, obs):
        if self.plan is None:
            self.plan = self._make_plan(obs)
        ee = np.asarray(obs["ee_pos"])
        if self.index >= len(self.plan):
            return np.zeros(4, dtype=np.float32)
        wp, grip, tol, hold, limit = self.plan[self.index]
        err = np.asarray(wp) - ee
        self.ticks += 1
        reached = np.linalg.norm(err) < tol
        if reached:
            self._held = getattr(self, "_held", 0) + 1
        if (reached and self._held > hold) or self.ticks > limit:
            self.index += 1
            self.ticks = 0
            self._held = 0
        move = np.clip(err * self.gain / self.max_step_m, -1.0, 1.0)
        return np.array([*move, 1.0 if grip > 0.5 else -1.0], dtype=np.float32)

    @property
    def done(self):
        return self.plan is not None and self.index >= len(self.plan)


def run_episode(env, policy=None, max_steps=4000, on_step=None):
    """Runs one episode of `env` (PickAndPlaceEnv or RemoteSim) with the scripted policy; returns
    (final info, steps, total reward)."""
    policy = policy or ScriptedPolicy()
    obs, info = env.reset()
    policy.reset()
    total = 0.0
    for t in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total += reward
        if on_step:
            on_step(t, obs, info)
        if terminated or truncated:
            return info, t + 1, total
        if policy.done:
            # Everything placed: wait for the referee's resting second to run out.
            pass
    return info, max_steps, total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connect", metavar="HOST:PORT", help="drive a running armsim's agent port")
    ap.add_argument("--monitor", metavar="HOST:PORT", help="its monitor port (resets and kicks off)")
    ap.add_argument("--sync", action="store_true", help="the server runs --sync")
    ap.add_argument("--scene", help="scene file or bundled name (must match the server's)")
    args = ap.parse_args(argv)
    import armsim

    if args.connect:
        env = armsim.connect(agent=args.connect, monitor=args.monitor, scene=args.scene, sync=args.sync)
    else:
        import gymnasium as gym

        env = gym.make("armsim/PickAndPlace-v0", scene=args.scene)
    start = time.time()
    info, steps, total = run_episode(env)
    print(f"{info['play_mode']} after {steps} steps ({info['sim_time']:.1f} s sim, "
          f"{time.time() - start:.1f} s wall): score {info['score']}, return {total:.2f}")
    env.close()
    return 0 if info["play_mode"] == "Success" else 1


if __name__ == "__main__":
    sys.exit(main())
