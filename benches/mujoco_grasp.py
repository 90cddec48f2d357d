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
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mujoco_agreement as agreement  # noqa: E402

if __name__ == "__main__":
    agreement.ensure_imports()

import numpy as np  # noqa: E402

HZ = agreement.HZ
DT = agreement.DT
G = 9.81
# Ratios of the cube's mass to Coulomb's limit μN/g in the mass sweep.
SWEEP = (0.8, 0.9, 1.1, 1.2)
# How far the block starts off the fixed pad of a jaw with one (m).
GAP = 0.002
SIDES = ("armsim", "mujoco_defaults", "mujoco_grasp")


@dataclass(frozen=True)
class Hand:
    """One arm's grasp: its scene, the cube and its friction, the path, and how to read the
    grip off the file."""

    name: str
    label: str
    arm: object  # mujoco_agreement.Arm: the scene and the robot file
    cube: tuple  # the block's size (x, y, z), m; x across the pads where they are given
    mu: float  # friction of the pads and the cube (the larger of the two decides, MuJoCo's rule)
    creep_mass: float  # kg, the still-hold creep case
    lift: float  # m, from the grasp up
    swing: float  # m, sideways amplitude of the swing case
    grasp_z: float  # m, the tool point over the table at the grasp
    fingers: tuple  # MuJoCo bodies whose contacts with the cube are the grip
    pads: tuple = ()  # geoms the scene's `collide_geoms` switches on (MuJoCo: moved to bit 1)
    jaw_force: float = None  # N·m: the jaw actuator's force range, in a copy of the file
    over: tuple = ()  # (x, y, z over the table): first waypoint, and the cube goes under it
    open: float = None  # the gripper's open target here (the scene's when None)
    table_friction: float = None  # the table's friction (`mu` when None)
    close_s: float = 0.0  # the jaw's target goes from open to closed over this long (0: at once)
    closing_s: float = 1.0  # how long the hand stays at the grasp with the jaw closing
    tool_axis: tuple = None  # the scene's `tool.axis` here (the scene's own when None)


PANDA = Hand(
    name="panda", label="Panda", arm=agreement.PANDA, cube=(0.05, 0.05, 0.05), mu=1.0, creep_mass=0.08, lift=0.195,
    swing=0.1, grasp_z=0.03, fingers=("left_finger", "right_finger"))

# The SO-101's jaw is its file's position servo (17.8 N·m/rad, ±3.35 N·m): closed (−0.17 rad)
# on a block it presses with about 45 N per pad, which with the pads' friction 1 holds some 9 kg,
# far more than the arm lifts. The first row is measured with that jaw; for the others the
# jaw's force range is cut to ±0.3 N·m in a copy of the file that both sides load, so that
# Coulomb's limit (about 680 g) is a load the arm lifts, and the sweep tests the grip, not the
# arm (its servos hold 1.4 kg there, sagging 3 cm). (Lowering the friction instead does not work: the jaw turns about its hinge, so its pad
# meets the block a few hundredths of a radian off parallel, and a block between pads with
# μ below that angle is squeezed out, in physics as in both simulators.) The block is 40 mm
# across the pads, which the file makes parallel 40 mm apart (jaw at 0.46 rad), so they close
# flat on its faces, and 20 mm wide and high, so that only the pads (14 mm high) touch it, not
# the jaws' hulls above them. The tool axis is the jaw's (−Z of `gripper`), so that teleop's IK
# brings the pads down vertical (the scene's default axis, from the link to the tool point, is
# 8° off it, and tilted pads wedge the block). The jaw opens to 1.0 rad to clear it and its
# target closes over
# 0.5 s, as an operator's leader arm does (the weak jaw then takes about a second to close). It sits 2 mm off the fixed pad, turned as the pads are (`place`).
SO101 = Hand(
    name="so101", label="SO-101", arm=agreement.SO101, cube=(0.04, 0.02, 0.02), mu=1.0,
    creep_mass=0.08, lift=0.06, swing=0.05, grasp_z=0.01,
    fingers=("gripper", "moving_jaw_so101_v1"), pads=("fixed_jaw_pad", "moving_jaw_pad"),
    jaw_force=0.3, over=(0.25, 0.0, 0.113), open=1.0, table_friction=0.8, close_s=0.5,
    closing_s=2.0, tool_axis=(0.0, 0.0, -1.0))

HANDS = {h.name: h for h in (PANDA, SO101)}


@dataclass
class Grip:
    """The file's grip on the cube: its actuator's force closed on the cube's faces, and what
    the pads then press with."""

    actuator_force: float  # N on the Panda's tendon; N·m on the SO-101's jaw joint
    pad_normal: float  # N, the pads' normal forces summed
    mu: float

    def limit_kg(self):
        """Coulomb's limit: the heaviest cube two pads hold, μN/g."""
        return self.mu * self.pad_normal / G


def robot_file(hand, fixtures, workdir):
    """The robot file both sides load: the fixture's, or a copy with the jaw actuator's force
    range set to `jaw_force` (its mesh folder made absolute, so that the copy finds the
    meshes)."""
    path = os.path.join(fixtures, hand.arm.robot)
    if hand.jaw_force is None:
        return path
    with open(path) as f:
        xml = f.read()
    folder = os.path.dirname(path)
    xml, n = re.subn(r'meshdir="([^"]*)"', lambda m: f'meshdir="{os.path.join(folder, m[1])}"',
                     xml, count=1)
    if n != 1:
        raise ValueError(f"{path}: no compiler meshdir to rewrite")
    scene = agreement.scene_json(hand.arm, fixtures)
    actuator = scene["robot"]["gripper"]["actuator_name"]
    f = hand.jaw_force
    xml, n = re.subn(rf'(<position [^>]*name="{actuator}"[^>]*forcerange=")[^"]*"',
                     rf'\g<1>{-f} {f}"', xml)
    if n != 1:
        raise ValueError(f"{path}: no position actuator {actuator} with a forcerange")
    out = os.path.join(workdir, f"{hand.name}-jaw-{f:g}.xml")
    with open(out, "w") as f:
        f.write(xml)
    return out


def base_scene(hand, fixtures, workdir):
    """The hand's scene without objects, its robot file from `robot_file`."""
    scene = agreement.scene_json(hand.arm, fixtures)
    scene["robot"]["mjcf_path"] = robot_file(hand, fixtures, workdir)
    scene["extensions"]["armsim"]["physics"]["friction"] = (
        hand.mu if hand.table_friction is None else hand.table_friction)
    if hand.open is not None:
        scene["extensions"]["armsim"]["robot"]["gripper_positions"]["open"] = hand.open
    if hand.tool_axis is not None:
        scene["extensions"]["armsim"]["robot"]["tool"]["axis"] = list(hand.tool_axis)
    return scene


def scene_with_cube(hand, fixtures, workdir, mass, pos):
    """The hand's scene with one block of `mass` at `pos` (x, y, yaw; it rests on the table)."""
    scene = base_scene(hand, fixtures, workdir)
    top = scene["table"]["top_height_m"]
    x, y, yaw = pos
    scene["objects"] = [{
        "name": "cube",
        "type": "box",
        "size_m": list(hand.cube),
        "pose": {"pos_m": [x, y, top + hand.cube[2] / 2],
                 "quat_xyzw": [0, 0, float(np.sin(yaw / 2)), float(np.cos(yaw / 2))]},
        "extensions": {"mass_kg": mass, "friction": hand.mu, "rgba": [0.85, 0.15, 0.12, 1.0]},
    }]
    return scene


def mujoco_spec(scene, hand, grasp_settings):
    """MuJoCo's spec of the scene: the robot file at the base pose, the pads switched on as the
    scene does, a floor at the table top, at MuJoCo's defaults or with its grasp settings."""
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
    for pad in hand.pads:
        geom = spec.geom(pad)
        geom.contype, geom.conaffinity = 1, 1
    top = scene["table"]["top_height_m"]
    floor = scene["extensions"]["armsim"]["physics"]["friction"]
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=[0, 0, top],
                            friction=[floor, 0.005, 0.0001])
    return spec


def mujoco_model(scene, hand, grasp_settings):
    """`mujoco_spec` with the scene's free cube, compiled."""
    import mujoco

    spec = mujoco_spec(scene, hand, grasp_settings)
    cube = scene["objects"][0]
    x, y, z, w = cube["pose"]["quat_xyzw"]
    body = spec.worldbody.add_body(name="cube", pos=cube["pose"]["pos_m"], quat=[w, x, y, z])
    body.add_freejoint()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[s / 2 for s in hand.cube],
                  mass=cube["extensions"]["mass_kg"], friction=[hand.mu, 0.005, 0.0001])
    return spec.compile()


class MujocoSide:
    """One MuJoCo run of the scene, stepped with armsim's targets."""

    def __init__(self, sim, scene, hand, grasp_settings):
        import mujoco

        self.model = mujoco_model(scene, hand, grasp_settings)
        self.data = mujoco.MjData(self.model)
        m = self.model
        names = sim.joint_names
        qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in names])
        tool = scene["extensions"]["armsim"]["robot"]["tool"]
        # The ctrl mapping and the tool point of benches/mujoco_agreement.py.
        self.pair = agreement.Pair(
            arm=hand.arm, sim=sim, model=m, data=self.data, qadr=qadr,
            arm_joints=[], tool_body=m.body(tool["frame"]).id,
            tool_offset=np.array(tool.get("offset_m", [0.0, 0.0, 0.0])))
        self.data.qpos[qadr] = sim.q
        self.cube_body = m.body("cube").id
        cube_adr = m.jnt_qposadr[m.body_jntadr[self.cube_body]]
        pose = scene["objects"][0]["pose"]
        x, y, z, w = pose["quat_xyzw"]
        self.data.qpos[cube_adr:cube_adr + 3] = pose["pos_m"]
        self.data.qpos[cube_adr + 3:cube_adr + 7] = [w, x, y, z]
        self.data.ctrl[:] = self.pair.ctrl(np.array([t[1] for t in sim.targets]))
        mujoco.mj_forward(m, self.data)
        self.fingers = {m.body(n).id for n in hand.fingers}
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

    hand: Hand
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
        """In the hand at the end: within 3 cm of the tool point and off the table (a weak arm
        such as the SO-101 sags under a heavy block, so not necessarily as high as lifted)."""
        off = self.offset[side][-1]
        rest = self.top + self.hand.cube[2] / 2
        return bool(np.linalg.norm(off) < 0.03 and self.cube[side][-1][2] > rest + 0.01)

    def dropped(self, side):
        """Back on the table at the end."""
        return bool(self.cube[side][-1][2] < self.top + self.hand.cube[2] / 2 + 0.01)

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


def write_scene(scene, workdir, name):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        json.dump(scene, f)
    return path


def waypoints(hand, start, top):
    """The path's points: (first waypoint or None, the grasp point, the lifted point)."""
    if hand.over:
        over = np.array(hand.over) + [0, 0, top]
        low = np.array([over[0], over[1], top + hand.grasp_z])
    else:
        over, low = None, np.array([start[0], start[1], top + hand.grasp_z])
    return over, low, low + [0, 0, hand.lift]


def phases(hand, case, hold_s):
    out = [("approach", 2.0)] if hand.over else []
    out += [("down", 2.0), ("open", 0.5), ("close", hand.closing_s), ("lift", 2.0)]
    if case == "swing":
        return out + [("swing", 4.0), ("hold", 1.0)]
    return out + [("hold", hold_s)]


def drive(hand, ik, sim, start, top, case, hold_s, on_step, until=None, jaw=None):
    """The path, phase by phase (up to and with `until`): armsim's IK gives the targets from
    armsim's joints and `on_step(phase, k, n, targets)` steps every side. `jaw` (`jaw_of`)
    ramps the jaw's target while it closes."""
    over, low, high = waypoints(hand, start, top)
    first = over if over is not None else start
    for phase, seconds in phases(hand, case, hold_s):
        n = int(round(seconds * HZ))
        for k in range(n):
            a = (k + 1) / n
            if phase == "approach":
                target = start + smooth(a) * (over - start)
            elif phase == "down":
                target = first + smooth(a) * (low - first)
            elif phase == "lift":
                target = low + smooth(a) * (high - low)
            elif phase == "swing":
                target = high + [0, hand.swing * np.sin(2 * np.pi * 0.25 * (k + 1) * DT), 0]
            elif phase == "hold":
                target = high
            else:
                target = low
            closed = phase not in ("approach", "down", "open")
            targets, _ = ik.solve(target.tolist(), closed, sim.q, sim.qd, 1)
            targets = np.array(targets)
            if phase == "close" and jaw is not None:
                a = smooth((k + 1) * DT / hand.close_s)
                targets[jaw[0]] = jaw[1] + a * (jaw[2] - jaw[1])
            on_step(phase, k, n, targets)
        if phase == until:
            return


def jaw_of(hand, scene, sim):
    """(the jaw's joint in armsim's order, its open target, its closed target) for a jaw whose
    target is ramped (`close_s`), else None."""
    import mujoco

    if hand.close_s <= 0:
        return None
    m = mujoco_spec(scene, hand, False).compile()
    a = m.actuator(scene["robot"]["gripper"]["actuator_name"])
    if a.trntype[0] != mujoco.mjtTrn.mjTRN_JOINT:
        raise ValueError(f"{hand.name}: a ramped jaw needs a joint actuator")
    grip = scene["extensions"]["armsim"]["robot"]["gripper_positions"]
    return sim.joint_names.index(m.joint(a.trnid[0]).name), grip["open"], grip["closed"]


def place(hand, fixtures, workdir):
    """Where the block goes (x, y, yaw): under the tool point at the grasp, square to the
    world; or, for a jaw with pads, 2 mm off the fixed pad's face towards the other, its x axis
    along the pad's normal (from a run of armsim's arm alone to the grasp, the jaw open, and
    MuJoCo's kinematics of where it stands then)."""
    import mujoco

    import armsim

    scene = base_scene(hand, fixtures, workdir)
    path = write_scene(scene, workdir, f"{hand.name}-ik.json")
    ik, sim = armsim.TeleopIk(path), armsim.Sim(path)
    top = scene["table"]["top_height_m"]
    start = np.array(ik.tool_point(np.array(sim.q)))
    if not hand.pads:
        return start[0], start[1], 0.0

    def step(phase, k, n, targets):
        sim.set_targets(targets)
        sim.step()

    drive(hand, ik, sim, start, top, "hold", 0.0, step, until="down")
    m = mujoco_spec(scene, hand, False).compile()
    d = mujoco.MjData(m)
    d.qpos[[m.jnt_qposadr[m.joint(n).id] for n in sim.joint_names]] = sim.q
    mujoco.mj_kinematics(m, d)
    fixed, moving = (m.geom(p).id for p in hand.pads)
    normal = d.geom_xmat[fixed].reshape(3, 3)[:, 0]
    normal = normal * np.sign(np.dot(d.geom_xpos[moving] - d.geom_xpos[fixed], normal))
    normal[2] = 0.0
    normal /= np.linalg.norm(normal)
    centre = d.geom_xpos[fixed] + normal * (m.geom_size[fixed][0] + GAP + hand.cube[0] / 2)
    return centre[0], centre[1], float(np.arctan2(normal[1], normal[0]))


def grasp(hand, fixtures, workdir, mass, case="hold", hold_s=5.0, pos=None):
    """One grasp of a cube of `mass` in armsim and both MuJoCos; `case` "hold" keeps the hand
    still after the lift, "swing" swings it sideways for 4 s and holds 1 s. `pos` is where the
    cube goes (from `place` when None)."""
    import armsim

    if pos is None:
        pos = place(hand, fixtures, workdir)
    scene = scene_with_cube(hand, fixtures, workdir, mass, pos)
    path = write_scene(scene, workdir, f"{hand.name}-grasp-{mass:.4f}.json")
    ik, sim = armsim.TeleopIk(path), armsim.Sim(path)
    start = np.array(ik.tool_point(np.array(sim.q)))
    top = scene["table"]["top_height_m"]
    sides = {
        "armsim": ArmsimSide(sim),
        "mujoco_defaults": MujocoSide(sim, scene, hand, False),
        "mujoco_grasp": MujocoSide(sim, scene, hand, True),
    }
    run = Run(hand=hand, mass=mass, case=case, top=top)
    for side in SIDES:
        run.cube[side], run.offset[side], run.normal[side], run.fz[side] = [], [], [], []

    def step(phase, k, n, targets):
        if phase == "hold" and k == 0:
            for s in sides.values():
                s.seconds = 0.0
            run.hold_steps = n
        for name, s in sides.items():
            s.step(targets)
            run.cube[name].append(s.cube())
            if phase == "hold":
                total, normal = s.contacts()
                run.offset[name].append(s.cube() - s.tool())
                run.normal[name].append(normal)
                run.fz[name].append(total[2])

    drive(hand, ik, sim, start, top, case, hold_s, step, jaw=jaw_of(hand, scene, sim))
    for name, s in sides.items():
        run.seconds[name] = s.seconds
        for key in ("cube", "offset", "normal", "fz"):
            getattr(run, key)[name] = np.array(getattr(run, key)[name])
    return run


def file_grip(hand, fixtures, workdir):
    """The file's grip on the cube, from MuJoCo's compiled model of the file.

    A tendon gripper (the Panda's `actuator8`): closed (ctrl 0) at the tendon length of fingers
    on the cube's faces (each finger's joint is its opening, half the cube), gain·ctrl + b₀ +
    b₁·L; each finger gets its coefficient's share, and the pads' normals sum to Σ|coef|·F.

    A jaw on a hinge (the SO-101's): the position servo's torque closed at the jaw angle where
    the pads are the block's width apart, clamped to its force range; the moving pad presses
    with torque / lever (the pad normal's moment arm about the hinge, at the pad's centre), and
    the fixed pad presses back as hard. Two things the figure leaves out make the measured grip
    differ by a few per cent: the joint's dry friction (`frictionloss`, 0.052 N·m on the
    SO-101's jaw), which can hold any torque up to it, and where on the pad (14 mm high, some
    74 mm from the hinge) the block presses."""
    import mujoco

    scene = base_scene(hand, fixtures, workdir)
    m = mujoco_spec(scene, hand, False).compile()
    a = m.actuator(scene["robot"]["gripper"]["actuator_name"]).id
    closed = scene["extensions"]["armsim"]["robot"].get("gripper_positions", {}).get("closed")
    gain, bias = m.actuator_gainprm[a, 0], m.actuator_biasprm[a, :3]

    def clamp(force):
        if m.actuator_forcelimited[a]:
            lo, hi = m.actuator_forcerange[a]
            return float(np.clip(force, lo, hi))
        return float(force)

    target = m.actuator_trnid[a, 0]
    if m.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_TENDON:
        adr, num = m.tendon_adr[target], m.tendon_num[target]
        coefs = np.array([m.wrap_prm[w] for w in range(adr, adr + num)])
        length = float(np.sum(coefs) * hand.cube[0] / 2)
        # The Panda's closed ctrl is 0 (its tendon's closed end).
        force = abs(clamp(gain * 0.0 + bias[0] + bias[1] * length))
        return Grip(actuator_force=force, pad_normal=force * float(np.sum(np.abs(coefs))),
                    mu=hand.mu)
    d = mujoco.MjData(m)
    fixed, moving = (m.geom(p).id for p in hand.pads)
    qadr = m.jnt_qposadr[target]

    def gap(q):
        """The distance between the pads' faces along the fixed pad's normal at jaw angle q."""
        d.qpos[:] = 0.0
        d.qpos[qadr] = q
        mujoco.mj_kinematics(m, d)
        n = d.geom_xmat[fixed].reshape(3, 3)[:, 0]
        n = n * np.sign(np.dot(d.geom_xpos[moving] - d.geom_xpos[fixed], n))
        nm = d.geom_xmat[moving].reshape(3, 3)[:, 0]
        nm = nm * np.sign(np.dot(nm, n))
        face_f = d.geom_xpos[fixed] + n * m.geom_size[fixed][0]
        face_m = d.geom_xpos[moving] - nm * m.geom_size[moving][0]
        return float(np.dot(face_m - face_f, n)), face_m, nm

    lo, hi = m.jnt_range[target]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gap(mid)[0] < hand.cube[0] else (lo, mid)
    q = 0.5 * (lo + hi)
    _, face, normal = gap(q)
    torque = abs(clamp(gain * closed + bias[1] * q))
    axis, anchor = d.xaxis[target], d.xanchor[target]
    lever = abs(np.dot(np.cross(face - anchor, normal), axis))
    return Grip(actuator_force=torque, pad_normal=2.0 * torque / lever, mu=hand.mu)


@dataclass
class Suite:
    """Every case of one hand."""

    hand: Hand
    grip: Grip  # the file's grip, as the cases run it
    creep: Run
    sweep: dict  # ratio → Run
    swing: Run
    # Where the cases run a weaker jaw than the file's (`jaw_force`): the file's own grip and a
    # short hold with it.
    own_grip: Grip = None
    own: Run = None


def suite(hand, fixtures, workdir, hold_s=5.0):
    """Every case: the file's grip, the creep hold, the mass sweep, the swing."""
    grip = file_grip(hand, fixtures, workdir)
    pos = place(hand, fixtures, workdir)
    creep = grasp(hand, fixtures, workdir, hand.creep_mass, "hold", hold_s, pos)
    sweep = {r: grasp(hand, fixtures, workdir, r * grip.limit_kg(), "hold", hold_s, pos)
             for r in SWEEP}
    swing = grasp(hand, fixtures, workdir, hand.creep_mass, "swing", pos=pos)
    out = Suite(hand, grip, creep, sweep, swing)
    if hand.jaw_force is not None:
        own = replace(hand, jaw_force=None)
        out.own_grip = file_grip(own, fixtures, workdir)
        out.own = grasp(own, fixtures, workdir, hand.creep_mass, "hold", 2.0, pos)
    return out


def report(cases):
    """One table: a row per figure, a column per side."""
    hand, grip, creep, sweep, swing = cases.hand, cases.grip, cases.creep, cases.sweep, cases.swing
    own, own_grip = cases.own, cases.own_grip
    limit = grip.limit_kg()
    mass = f"{creep.mass * 1e3:.0f} g"
    rows = []
    if own is not None:
        rows.append((f"grip of the file's own jaw, N (file: {own_grip.pad_normal:.2f})",
                     lambda s: f"{own.grip_n(s):.2f}"))
    jaw = "" if hand.jaw_force is None else f" (jaw ±{hand.jaw_force:g} N·m)"
    rows += [
        (f"grip{jaw}: pads' normal force, N (file: {grip.pad_normal:.2f})",
         lambda s: f"{creep.grip_n(s):.3f}"),
        (f"creep, {mass} still hold, µm/s", lambda s: f"{creep.creep_um_s(s):.1f}"),
    ]
    for r, run in sweep.items():
        rows.append((f"{r}× μN/g = {r * limit * 1e3:.0f} g after {run.hold_steps / HZ:.0f} s",
                     lambda s, run=run: "held" if run.held(s) else
                     ("dropped" if run.dropped(s) else "slipping")))
    rows += [
        (f"|ΣF_z − mg|, {mass} hold, N (mg {creep.mass * G:.3f})",
         lambda s: f"{creep.balance_n(s):.4f}"),
        ("normal-force jitter, step to step, N RMS", lambda s: f"{creep.jitter_n(s):.4f}"),
        ("cube path vs MuJoCo grasp settings, swing, mm RMS",
         lambda s: f"{swing.path_rms_mm(s):.1f}"),
        ("step with fingers on the cube, µs", lambda s: f"{creep.step_us(s):.0f}"),
        ("  armsim's cost ÷ this side's", lambda s: f"{creep.step_us('armsim') / creep.step_us(s):.2f}×"),
    ]
    heads = ("armsim", "MuJoCo defaults", "MuJoCo grasp settings")
    size = " × ".join(f"{s * 1e3:.0f}" for s in hand.cube)
    title = f"{hand.label}, {size} mm block, μ = {hand.mu:g}"
    width = max(len(r[0]) for r in rows + [(title,)])
    print(f"| {title:<{width}} | " + " | ".join(heads) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (len(h) + 2) for h in heads) + "|")
    for label, cell in rows:
        cells = [f"{cell(s):>{len(h)}}" for s, h in zip(SIDES, heads)]
        print(f"| {label:<{width}} | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", nargs="+", choices=sorted(HANDS), default=["panda", "so101"])
    parser.add_argument("--hold-seconds", type=float, default=5.0)
    args = parser.parse_args()
    import mujoco

    import armsim

    print(f"armsim {armsim.__version__}, MuJoCo {mujoco.__version__}, dt 1/{HZ} s")
    fixtures = agreement.fixtures_root()
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.arm:
            hand = HANDS[name]
            report(suite(hand, fixtures, workdir, args.hold_seconds))
            print()


if __name__ == "__main__":
    main()
