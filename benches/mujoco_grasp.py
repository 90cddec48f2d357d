#!/usr/bin/env python3
"""Grasps in armsim beside MuJoCo on the same real arm: grip force, Coulomb's limit, creep.

MuJoCo Menagerie's Panda (assets/scenes/panda.json, its own MJCF file from the fixture cache)
picks a 5 cm cube off the table in armsim (the Python package, `armsim.Sim`) and in MuJoCo
4.0.0 twice, once at MuJoCo's defaults and once with its documented grasp settings (elliptic
friction cone, impratio 10). All three get the same joint targets every step: armsim's teleop
pipeline (`armsim.TeleopIk`, the IK a headset operator drives) turns one tool-point path into
joint targets from armsim's measured joints, and MuJoCo gets them as `ctrl`, as
benches/mujoco_agreement.py maps them (`Pair.ctrl`). dt is 1/240 s on all sides.

The cube: 5 cm, friction 1 on every surface (the pads' MJCF default, the cube's and the
table's; MuJoCo takes the larger of two geoms' friction, and so does armsim). It starts on the
table under the tool point at home. The path: down over 2 s, the gripper closes (0.5 s open, 1 s
closed), up 195 mm over 2 s, then held still for 5 s (or swung ±10 cm sideways for 4 s and held
1 s: the "swing" case).

What the file says the grip is: the Panda's fingers are driven by `actuator8`, a `general`
actuator on the tendon `split` (half of each finger's opening), force gain·ctrl + b₁·L + b₂·L̇.
Closed (ctrl 0) on a 5 cm cube (L = 0.025 m) that is 100·0.025 = 2.5 N on the tendon, half of it
on each finger: the pads press with 2.5 N in all. Coulomb's law then holds at most μN/g = 255 g
between two pads with μ = 1.

Figures, per side:
- grip: the sum of the pads' normal forces during the hold (N), against the file's 2.5 N;
- creep: how fast the cube slides in the still hand during the last 4 s of the hold (µm/s);
- mass sweep at 0.8, 0.9, 1.1 and 1.2 × μN/g: held (in the hand after the hold) or dropped
  (back on the table);
- force balance (MotrixSim's Franka-and-cube metrics): the mean |ΣF_z − mg| of the contact
  forces on the cube during the hold, and the step-to-step jitter (RMS of the change) of the
  pads' summed normal force;
- path: the cube's RMS distance from MuJoCo's (grasp settings) over the swing case;
- cost: mean wall time of one step with the fingers on the cube, armsim's `Sim.step` against
  `mj_step`, and their ratio.

Usage (needs `armsim` and `mujoco`, as in python/.venv after python/test.sh; re-runs itself
there when the current Python lacks them):
    benches/mujoco_grasp.py [--hold-seconds 5]

python/tests/test_mujoco_grasp.py imports this module and asserts armsim's figures against
Coulomb and the file (not against recorded numbers).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mujoco_agreement as agreement  # noqa: E402

if __name__ == "__main__":
    agreement.ensure_imports()

import numpy as np  # noqa: E402

HZ = agreement.HZ
DT = agreement.DT
G = 9.81
CUBE = 0.05
MU = 1.0
# Ratios of the cube's mass to Coulomb's limit μN/g in the mass sweep.
SWEEP = (0.8, 0.9, 1.1, 1.2)
# The still-hold creep case: 80 g, about a third of the Panda's limit.
CREEP_MASS = 0.08
LIFT = 0.195
SIDES = ("armsim", "mujoco_defaults", "mujoco_grasp")


@dataclass
class Grip:
    """The file's grip on a cube: the tendon actuator's force at the cube's width, closed."""

    tendon_force: float  # N on the tendon
    pad_normal: float  # N, the pads' normal forces summed

    def limit_kg(self, mu=MU):
        """Coulomb's limit: the heaviest cube two pads hold, μN/g."""
        return mu * self.pad_normal / G


def scene_with_cube(fixtures, mass, xy):
    """The Panda scene with its robot file from the fixture cache, friction 1 on the table and
    one cube of `mass` at `xy` on the table."""
    scene = agreement.scene_json(agreement.PANDA, fixtures)
    top = scene["table"]["top_height_m"]
    scene["extensions"]["armsim"]["physics"]["friction"] = MU
    scene["objects"] = [{
        "name": "cube",
        "type": "box",
        "size_m": [CUBE, CUBE, CUBE],
        "pose": {"pos_m": [xy[0], xy[1], top + CUBE / 2], "quat_xyzw": [0, 0, 0, 1]},
        "extensions": {"mass_kg": mass, "friction": MU, "rgba": [0.85, 0.15, 0.12, 1.0]},
    }]
    return scene


def mujoco_model(scene, grasp_settings):
    """MuJoCo's model of the scene: the robot file at the base pose, a floor at the table top
    and the free cube, at MuJoCo's defaults or with its grasp settings."""
    import mujoco

    spec = mujoco.MjSpec.from_file(scene["robot"]["mjcf_path"])
    spec.option.timestep = DT
    if grasp_settings:
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.option.impratio = 10.0
    base = scene["robot"]["base_pose"]
    x, y, z, w = base.get("quat_xyzw", [0, 0, 0, 1])
    root = spec.worldbody.first_body()
    root.pos = base["pos_m"]
    root.quat = [w, x, y, z]
    top = scene["table"]["top_height_m"]
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=[0, 0, top],
                            friction=[MU, 0.005, 0.0001])
    cube = scene["objects"][0]
    body = spec.worldbody.add_body(name="cube", pos=cube["pose"]["pos_m"])
    body.add_freejoint()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[CUBE / 2] * 3,
                  mass=cube["extensions"]["mass_kg"], friction=[MU, 0.005, 0.0001])
    return spec.compile()


class MujocoSide:
    """One MuJoCo run of the scene, stepped with armsim's targets."""

    def __init__(self, sim, scene, grasp_settings):
        import mujoco

        self.model = mujoco_model(scene, grasp_settings)
        self.data = mujoco.MjData(self.model)
        m = self.model
        names = sim.joint_names
        qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in names])
        tool = scene["extensions"]["armsim"]["robot"]["tool"]
        # The ctrl mapping and the tool point of benches/mujoco_agreement.py.
        self.pair = agreement.Pair(
            arm=agreement.PANDA, sim=sim, model=m, data=self.data, qadr=qadr,
            arm_joints=[], tool_body=m.body(tool["frame"]).id,
            tool_offset=np.array(tool.get("offset_m", [0.0, 0.0, 0.0])))
        self.data.qpos[qadr] = sim.q
        self.cube_body = m.body("cube").id
        cube_adr = m.jnt_qposadr[m.body_jntadr[self.cube_body]]
        self.data.qpos[cube_adr:cube_adr + 3] = scene["objects"][0]["pose"]["pos_m"]
        self.data.qpos[cube_adr + 3:cube_adr + 7] = [1, 0, 0, 0]
        self.data.ctrl[:] = self.pair.ctrl(np.array([t[1] for t in sim.targets]))
        mujoco.mj_forward(m, self.data)
        self.fingers = {m.body(n).id for n in ("left_finger", "right_finger")}
        self.seconds = 0.0

    def step(self, targets):
        import mujoco

        self.data.ctrl[:] = self.pair.ctrl(self.pair.clamp(targets))
        start = time.perf_counter()
        mujoco.mj_step(self.model, self.data)
        self.seconds += time.perf_counter() - start
        mujoco.mj_kinematics(self.model, self.data)

    def cube(self):
        return self.data.xpos[self.cube_body].copy()

    def tool(self):
        return self.pair.tool_mujoco()

    def contacts(self):
        """(total force on the cube (3,), the pads' summed normal force), as armsim reports."""
        import mujoco

        m, d = self.model, self.data
        total, normal = np.zeros(3), 0.0
        f6 = np.zeros(6)
        for i, c in enumerate(d.contact[:d.ncon]):
            b1, b2 = m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2]
            if self.cube_body not in (b1, b2):
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            # The force geom1 puts on geom2, in the contact frame (normal first).
            world = c.frame.reshape(3, 3).T @ f6[:3]
            total += world if b2 == self.cube_body else -world
            other = b1 if b2 == self.cube_body else b2
            if other in self.fingers:
                normal += f6[0]
        return total, normal


class ArmsimSide:
    """armsim's run of the scene, with the contact forces it reports."""

    def __init__(self, sim):
        self.sim = sim
        self.seconds = 0.0

    def step(self, targets):
        self.sim.set_targets(targets)
        start = time.perf_counter()
        self.sim.step()
        self.seconds += time.perf_counter() - start

    def cube(self):
        return self.sim.objects["cube"]["pos"].copy()

    def tool(self):
        return self.sim.ee_pos.copy()

    def contacts(self):
        c = self.sim.contacts("cube")
        return c["total"].copy(), c["robot_normal"]


def smooth(a):
    """0 → 1 with zero slope at both ends."""
    a = min(max(a, 0.0), 1.0)
    return 0.5 - 0.5 * np.cos(np.pi * a)


@dataclass
class Run:
    """One grasp in all three, with what each side measured."""

    mass: float
    case: str
    top: float
    cube: dict = field(default_factory=dict)  # side → (steps, 3) cube positions
    offset: dict = field(default_factory=dict)  # side → (hold steps, 3) cube − tool
    normal: dict = field(default_factory=dict)  # side → (hold steps,) pads' normal force
    fz: dict = field(default_factory=dict)  # side → (hold steps,) ΣF_z on the cube
    seconds: dict = field(default_factory=dict)  # side → wall time of the hold's steps
    hold_steps: int = 0

    def held(self, side):
        """In the hand at the end: within 3 cm of the tool point, above the table."""
        off = self.offset[side][-1]
        return bool(np.linalg.norm(off) < 0.03 and self.cube[side][-1][2] > self.top + 0.1)

    def dropped(self, side):
        """Back on the table at the end."""
        return bool(self.cube[side][-1][2] < self.top + CUBE / 2 + 0.01)

    def creep_um_s(self, side, settle_s=1.0):
        """How fast the cube slides in the hand over the hold after `settle_s`: the distance
        it moved relative to the tool point over that time (µm/s)."""
        off = self.offset[side][int(settle_s * HZ):]
        return float(np.linalg.norm(off[-1] - off[0]) / ((len(off) - 1) * DT) * 1e6)

    def grip_n(self, side):
        return float(np.mean(self.normal[side]))

    def balance_n(self, side):
        """Mean |ΣF_z − mg| of the contact forces on the cube during the hold (N)."""
        return float(np.mean(np.abs(self.fz[side] - self.mass * G)))

    def jitter_n(self, side):
        """RMS of the step-to-step change of the pads' summed normal force (N)."""
        return float(np.sqrt(np.mean(np.diff(self.normal[side]) ** 2)))

    def step_us(self, side):
        return self.seconds[side] / self.hold_steps * 1e6

    def path_rms_mm(self, side, reference="mujoco_grasp"):
        d = self.cube[side] - self.cube[reference]
        return float(np.sqrt(np.mean(np.sum(d**2, axis=1))) * 1e3)


def grasp(fixtures, workdir, mass, case="hold", hold_s=5.0):
    """One grasp of a cube of `mass` in armsim and both MuJoCos; `case` "hold" keeps the hand
    still after the lift, "swing" swings it sideways for 4 s and holds 1 s."""
    import armsim

    ik_scene = agreement.scene_json(agreement.PANDA, fixtures)
    path = os.path.join(workdir, "ik.json")
    with open(path, "w") as f:
        json.dump(ik_scene, f)
    ik = armsim.TeleopIk(path)
    home = np.array(armsim.Sim(path).q)
    start = np.array(ik.tool_point(home))
    scene = scene_with_cube(fixtures, mass, start[:2])
    path = os.path.join(workdir, f"grasp-{mass:.4f}.json")
    with open(path, "w") as f:
        json.dump(scene, f)
    sim = armsim.Sim(path)
    top = scene["table"]["top_height_m"]
    sides = {
        "armsim": ArmsimSide(sim),
        "mujoco_defaults": MujocoSide(sim, scene, False),
        "mujoco_grasp": MujocoSide(sim, scene, True),
    }
    low = np.array([start[0], start[1], top + 0.03])
    high = low + [0, 0, LIFT]
    phases = [("down", 2.0), ("open", 0.5), ("close", 1.0), ("lift", 2.0)]
    if case == "swing":
        phases += [("swing", 4.0), ("hold", 1.0)]
    else:
        phases += [("hold", hold_s)]
    run = Run(mass=mass, case=case, top=top)
    for side in SIDES:
        run.cube[side], run.offset[side], run.normal[side], run.fz[side] = [], [], [], []
    for phase, seconds in phases:
        n = int(round(seconds * HZ))
        if phase == "hold":
            for s in sides.values():
                s.seconds = 0.0
            run.hold_steps = n
        for k in range(n):
            a = (k + 1) / n
            if phase == "down":
                target = start + smooth(a) * (low - start)
            elif phase == "lift":
                target = low + smooth(a) * (high - low)
            elif phase == "swing":
                target = high + [0, 0.1 * np.sin(2 * np.pi * 0.25 * (k + 1) * DT), 0]
            elif phase == "hold":
                target = high
            else:
                target = low
            closed = phase not in ("down", "open")
            targets, _ = ik.solve(target.tolist(), closed, sim.q, sim.qd, 1)
            targets = np.array(targets)
            for name, s in sides.items():
                s.step(targets)
                run.cube[name].append(s.cube())
                if phase == "hold":
                    total, normal = s.contacts()
                    run.offset[name].append(s.cube() - s.tool())
                    run.normal[name].append(normal)
                    run.fz[name].append(total[2])
    for name, s in sides.items():
        run.seconds[name] = s.seconds
        for key in ("cube", "offset", "normal", "fz"):
            getattr(run, key)[name] = np.array(getattr(run, key)[name])
    return run


def file_grip(fixtures, workdir):
    """The file's grip force on the 5 cm cube: `actuator8` closed (ctrl 0) at the tendon length
    of fingers on the cube's faces, from MuJoCo's compiled model of the file."""
    scene = scene_with_cube(fixtures, CREEP_MASS, [0.5, 0.0])
    m = mujoco_model(scene, False)
    a = m.actuator(scene["robot"]["gripper"]["actuator_name"]).id
    tendon = m.actuator_trnid[a, 0]
    adr, num = m.tendon_adr[tendon], m.tendon_num[tendon]
    coefs = np.array([m.wrap_prm[w] for w in range(adr, adr + num)])
    # Each finger's joint is its opening: on a 5 cm cube each is open by half its width.
    length = float(np.sum(coefs) * CUBE / 2)
    gain, bias = m.actuator_gainprm[a, 0], m.actuator_biasprm[a, :3]
    force = abs(gain * 0.0 + bias[0] + bias[1] * length)
    return Grip(tendon_force=force, pad_normal=force * float(np.sum(np.abs(coefs))))


def suite(fixtures, workdir, hold_s=5.0):
    """Every case: the file's grip, the creep hold, the mass sweep, the swing."""
    grip = file_grip(fixtures, workdir)
    creep = grasp(fixtures, workdir, CREEP_MASS, "hold", hold_s)
    sweep = {r: grasp(fixtures, workdir, r * grip.limit_kg(), "hold", hold_s) for r in SWEEP}
    swing = grasp(fixtures, workdir, CREEP_MASS, "swing")
    return grip, creep, sweep, swing


def report(grip, creep, sweep, swing):
    """One table: a row per figure, a column per side."""
    limit = grip.limit_kg()
    rows = [
        (f"grip: pads' normal force, N (file: {grip.pad_normal:.2f})",
         lambda s: f"{creep.grip_n(s):.3f}"),
        (f"creep, {CREEP_MASS * 1e3:.0f} g still hold, µm/s",
         lambda s: f"{creep.creep_um_s(s):.1f}"),
    ]
    for r, run in sweep.items():
        rows.append((f"{r}× μN/g = {r * limit * 1e3:.0f} g after {run.hold_steps / HZ:.0f} s",
                     lambda s, run=run: "held" if run.held(s) else
                     ("dropped" if run.dropped(s) else "slipping")))
    rows += [
        (f"|ΣF_z − mg|, {CREEP_MASS * 1e3:.0f} g hold, N (mg {CREEP_MASS * G:.3f})",
         lambda s: f"{creep.balance_n(s):.4f}"),
        ("normal-force jitter, step to step, N RMS", lambda s: f"{creep.jitter_n(s):.4f}"),
        ("cube path vs MuJoCo grasp settings, swing, mm RMS",
         lambda s: f"{swing.path_rms_mm(s):.1f}"),
        ("step with fingers on the cube, µs", lambda s: f"{creep.step_us(s):.0f}"),
        ("  armsim's cost ÷ this side's", lambda s: f"{creep.step_us('armsim') / creep.step_us(s):.2f}×"),
    ]
    heads = ("armsim", "MuJoCo defaults", "MuJoCo grasp settings")
    width = max(len(r[0]) for r in rows)
    print(f"| {'Panda, 5 cm cube, μ = 1':<{width}} | " + " | ".join(heads) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(h) + 2) for h in heads) + "|")
    for label, cell in rows:
        cells = [f"{cell(s):>{len(h)}}" for s, h in zip(SIDES, heads)]
        print(f"| {label:<{width}} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hold-seconds", type=float, default=5.0)
    args = parser.parse_args()
    import mujoco

    import armsim

    print(f"armsim {armsim.__version__}, MuJoCo {mujoco.__version__}, dt 1/{HZ} s")
    fixtures = agreement.fixtures_root()
    with tempfile.TemporaryDirectory() as workdir:
        report(*suite(fixtures, workdir, args.hold_seconds))


if __name__ == "__main__":
    main()
