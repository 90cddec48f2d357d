"""`armsim.connect`: the PickAndPlace observation and action API against a running armsim (the
window or `--headless`) over the RCSSServerMJ-style agent and monitor ports, so a
policy written against `Sim` / `armsim/PickAndPlace-v0` drives the window while a person watches.

The agent port carries perceptions (joints in degrees, the tool point, every cube's pose, the
referee's game state) and our effectors. Each action goes through the same teleop IK and limits
as in-process (`armsim.TeleopIk`, run here in the client on the measured joints); the joint
targets it gives are sent as PD effectors `(joint q dq kp kd tau)` with gravity compensation as
the feed-forward torque, and the gripper as `(gripper 0|1)`. The monitor port (optional) resets
the scene and kicks off an episode on `reset()`.

    armsim --agent-port 60000 --monitor-port 60001 &          # the window; add --sync to lockstep
    remote = armsim.connect(agent="127.0.0.1:60000", monitor="127.0.0.1:60001")
    obs, info = remote.reset()
    obs, reward, terminated, truncated, info = remote.step(policy(obs))
"""

from __future__ import annotations

import base64
import math
import re
import socket
import struct
import threading
import time
from collections import deque

import numpy as np

from . import _core

#: PD gains (kp N*m/rad, kd N*m*s/rad) of the arm6 arm joints' effectors; others use DEFAULT_GAINS.
#: The server applies the torque as an explicit force each 1/240 s step, so kd must stay small
#: against each link's inertia: higher damping (e.g. kd 40 on the shoulder) makes the arm buzz.
ARM6_GAINS = {
    "shoulder_pan": (1500.0, 20.0),
    "shoulder_lift": (1500.0, 20.0),
    "elbow": (1000.0, 10.0),
    "wrist_1": (150.0, 1.5),
    "wrist_2": (50.0, 0.3),
    "wrist_3": (20.0, 0.05),
}
DEFAULT_GAINS = (40.0, 0.3)


class ProtocolError(RuntimeError):
    """The server closed the connection or said something this client cannot read."""


def _addr(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address must be host:port, got {text!r}")
    return host, int(port)


def _send(sock, text):
    data = text.encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(sock):
    header = _recv_exact(sock, 4)
    if header is None:
        return None
    (n,) = struct.unpack(">I", header)
    body = _recv_exact(sock, n)
    return None if body is None else body.decode("utf-8", "replace")


# A bracket, a quoted atom ("…" with the escapes \" \\ \n \t \r; group 1 is its text) or a bare
# atom. Tokenizing with one regular expression keeps a megabyte image atom cheap to read.
_TOKEN = re.compile(r'[()]|"((?:[^"\\]|\\.)*)"|[^\s()"]+', re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


def _unescape(text):
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text, flags=re.S)


def parse_sexp(text):
    """Top-level S-expressions as nested lists of atoms (strings); quoted atoms come unquoted."""
    stack, cur = [], []
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok == "(":
            stack.append(cur)
            cur = []
        elif tok == ")":
            if not stack:
                raise ProtocolError(f"unbalanced ')' in {text[:200]!r}")
            done, cur = cur, stack.pop()
            cur.append(done)
        elif m.group(1) is not None:
            cur.append(_unescape(m.group(1)) if "\\" in tok else m.group(1))
        else:
            cur.append(tok)
    if stack:
        raise ProtocolError(f"unbalanced '(' in {text[:200]!r}")
    return cur


def _text(e):
    return e if isinstance(e, str) else "(" + " ".join(map(_text, e)) + ")"


class Perception:
    """One agent perception, decoded."""

    def __init__(self, exprs):
        self.time = None
        self.play_mode = None
        self.score = 0
        self.session = None
        self.joints = {}  # name -> (rad, rad/s)
        self.pos = {}
        self.quat = {}
        self.referee = []
        self.errors = []
        for e in exprs:
            if not isinstance(e, list) or not e:
                continue
            head = e[0]
            if head == "time":
                self.time = float(e[1][1])
            elif head == "GS":
                for f in e[1:]:
                    if f[0] == "pm":
                        self.play_mode = f[1]
                    elif f[0] == "score":
                        self.score = int(f[1])
            elif head == "state":
                self.session = e[1]
            elif head == "HJ":
                fields = {f[0]: f[1] for f in e[1:]}
                self.joints[fields["n"]] = (math.radians(float(fields["ax"])),
                                            math.radians(float(fields["vx"])))
            elif head == "pos":
                self.pos[e[1][1]] = np.array([float(v) for v in e[2][1:4]])
            elif head == "quat":
                self.quat[e[1][1]] = np.array([float(v) for v in e[2][1:5]])
            elif head == "referee":
                self.referee.append({f[0]: " ".join(map(_text, f[1:])) for f in e[1:]
                                     if isinstance(f, list) and f})
            elif head == "error":
                self.errors.append(" ".join(str(x) for x in e[1:]))


class _Reader(threading.Thread):
    """Reads one socket's frames into a queue, so the server never waits on us."""

    def __init__(self, sock, name, keep):
        super().__init__(name=name, daemon=True)
        self.sock = sock
        self.frames = deque(maxlen=keep)
        self.cond = threading.Condition()
        self.closed = False

    def run(self):
        try:
            while True:
                text = _recv(self.sock)
                if text is None:
                    break
                with self.cond:
                    self.frames.append(text)
                    self.cond.notify_all()
        except OSError:
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def get(self, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.frames:
                left = deadline - time.monotonic()
                if self.closed:
                    raise ProtocolError("the server closed the connection")
                if left <= 0:
                    raise TimeoutError(f"no message from the server in {timeout} s")
                self.cond.wait(left)
            return self.frames.popleft()


class RemoteSim:
    """A running armsim seen through the agent (and monitor) ports, with `PickAndPlaceEnv`'s
    observation, action and reward (see `armsim.envs`). Use `armsim.connect` to make one."""

    def __init__(self, agent="127.0.0.1:60000", monitor=None, scene=None, sync=False,
                 frame_skip=8, cycle_steps=4, max_step_m=0.03, shaping=1.0, gains=None,
                 timeout=10.0, team="armsim_py", number=1):
        self.sync = sync
        self.frame_skip = frame_skip
        self.cycle_steps = cycle_steps
        self.max_step_m = max_step_m
        self.shaping = shaping
        self.timeout = timeout
        self.dt = 1.0 / _core.SIM_HZ
        # The local model of the same scene: joint order, limits and IK run here.
        self._ik = _core.TeleopIk(scene)
        layout_env = _core.EnvCore(scene, frame_skip, max_step_m, shaping, None)
        self.joint_names = layout_env.joint_names
        self.object_names = layout_env.object_names
        self._layout = layout_env.layout()
        self._goal_zone = None
        from .envs import _spaces
        self.observation_space, self.action_space = _spaces(self._layout)
        self._goal_zone = layout_env.obs()[-4:].copy()
        self._robot = _robot_name(scene)
        gains = dict(ARM6_GAINS, **(gains or {}))
        self._gains = [gains.get(n, DEFAULT_GAINS) for n in self.joint_names]
        self._agent = socket.create_connection(_addr(agent), timeout=timeout)
        self._agent.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._agent.settimeout(None)
        self._agent_reader = _Reader(self._agent, "armsim-agent", keep=None if sync else 64)
        self._agent_reader.start()
        self._monitor = None
        if monitor is not None:
            self._monitor = socket.create_connection(_addr(monitor), timeout=timeout)
            self._monitor.settimeout(None)
            self._monitor_reader = _Reader(self._monitor, "armsim-monitor", keep=256)
            self._monitor_reader.start()
        _send(self._agent, f"(init {self._robot} {team} {number})")
        self._grip = False
        self._target = None
        self._scored = set()
        self._owe_reply = False
        self.last = self._next_perception()
        self.errors = list(self.last.errors)

    # -- perceptions --------------------------------------------------------------------------

    def _next_perception(self):
        """The next perception. In sync mode the server waits for one message per perception:
        a perception not answered by an action is answered with `(syn)` first."""
        if self.sync and self._owe_reply:
            _send(self._agent, "(syn)")
        self._owe_reply = False
        while True:
            text = self._agent_reader.get(self.timeout)
            p = Perception(parse_sexp(text))
            if p.time is not None:
                self._owe_reply = True
                return p
            # An (error ...) on its own: keep it for the caller.
            self.errors = getattr(self, "errors", []) + p.errors

    def _send_action(self, msg):
        _send(self._agent, msg)
        self._owe_reply = False

    def _latest_perception(self, after):
        """The newest perception at or past sim time `after` (real-time mode)."""
        while True:
            p = self._next_perception()
            with self._agent_reader.cond:
                pending = len(self._agent_reader.frames)
            if p.time >= after - 1e-9 and pending == 0:
                return p

    @property
    def q(self):
        return np.array([self.last.joints.get(n, (np.nan, 0.0))[0] for n in self.joint_names])

    @property
    def qd(self):
        return np.array([self.last.joints.get(n, (0.0, np.nan))[1] for n in self.joint_names])

    @property
    def ee_pos(self):
        return self.last.pos.get("ee", np.full(3, np.nan))

    @property
    def objects(self):
        return {n: {"pos": self.last.pos.get(n), "rot": self.last.quat.get(n)} for n in self.object_names}

    @property
    def play_mode(self):
        return self.last.play_mode

    @property
    def score(self):
        return self.last.score

    @property
    def sim_time(self):
        return self.last.time

    def observation(self):
        cubes = np.array([np.concatenate([self.last.pos[n], self.last.quat[n]]) for n in self.object_names])
        return {
            "q": self.q,
            "qd": self.qd,
            "ee_pos": np.array(self.ee_pos, dtype=np.float64),
            "gripper": np.array([1.0 if self._grip else 0.0]),
            "cubes": cubes.reshape(len(self.object_names), 7),
            "goal_zone": np.array(self._goal_zone, dtype=np.float64),
        }

    def _phi(self):
        zone = self._goal_zone[:2]
        ee = self.ee_pos
        unscored = [self.last.pos[n] for i, n in enumerate(self.object_names) if i not in self._scored]
        if not unscored:
            return 0.0
        nearest = min(np.linalg.norm(p - ee) for p in unscored)
        return -(nearest + sum(np.linalg.norm(p[:2] - zone) for p in unscored))

    def _info(self):
        return {"play_mode": self.play_mode, "score": self.score,
                "is_success": self.play_mode == "Success", "sim_time": self.sim_time}

    # -- monitor ------------------------------------------------------------------------------

    def command(self, text):
        """Sends one monitor command, e.g. "(kickOff)" or "(cube (n cube_red)(pos 0.45 0.3 1.1))"."""
        if self._monitor is None:
            raise RuntimeError("no monitor connection; pass monitor='host:port' to armsim.connect")
        _send(self._monitor, text)

    # -- cameras (monitor port) ---------------------------------------------------------------

    def _ask_monitor(self, text, head):
        """Sends monitor command `text` and returns its reply: the next top-level expression
        named `head` (world frames in between are skipped). Raises CameraError for an unknown
        camera, ProtocolError for an `(error …)` about the query itself."""
        if self._monitor is None:
            raise RuntimeError("no monitor connection; pass monitor='host:port' to armsim.connect")
        reader = self._monitor_reader
        with reader.cond:
            reader.frames.clear()  # old world frames and replies: not the answer
        _send(self._monitor, text)
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to {text} within {self.timeout} s")
            frame = reader.get(left)
            if head not in frame and "error" not in frame:
                continue
            for e in parse_sexp(frame):
                if not isinstance(e, list) or not e:
                    continue
                if e[0] == head:
                    return e
                if e[0] == "error":
                    reason = " ".join(_text(x) for x in e[1:])
                    if reason.startswith("no camera named") or "has no cameras" in reason:
                        raise CameraError(reason)
                    # An error about the query itself (a server without camera queries, bad
                    # arguments); an error answering an earlier command is not the reply.
                    about_query = reason.startswith("(getCamera") or (
                        reason.startswith("unknown command") and "getCamera" in reason.split(";")[0])
                    if about_query:
                        raise ProtocolError(reason)

    def camera(self, name):
        """Camera `name` as the server has it, via the monitor port's `(getCamera NAME)`: a dict
        with `rgb` (uint8 (H, W, 3), rows top first) and `depth` (float32 (H, W), metres) of its
        newest rendered image, or None where there is none (`no_image` / `no_depth` then say
        why: images need `armsim` in a window or `armsim --headless --cameras`); `pos` (3,),
        `quat_world` (4,) w first of the camera frame +X forward / +Z up, `intrinsics` (3, 3),
        `width`, `height`, and the `step` and `sim_time` they show (the image's, or now's).
        Raises CameraError (a KeyError) for a name the scene lacks. The window renders a camera
        only while something uses its images: one it had stopped answers "warming up" and starts,
        so this asks again (every 20 ms, up to `timeout`) until its fresh image is in."""
        deadline = time.monotonic() + self.timeout
        while True:
            cam = _camera_of(self._ask_monitor(f"(getCamera {name})", "camera"), images=True)
            warming = cam["rgb"] is None and (cam["no_image"] or "").startswith("warming up")
            if not warming or time.monotonic() > deadline:
                return cam
            time.sleep(0.02)

    def cameras(self):
        """Every scene camera by name, via `(getCameras)`: pose, intrinsics and size now (as
        `camera` gives them), with `image_step` / `image_sim_time` of its newest rendered image
        (None without one) and no pixels; call `camera(name)` for those."""
        reply = self._ask_monitor("(getCameras)", "cameras")
        out = {}
        for c in reply[1:]:
            cam = _camera_of(c, images=False)
            out[cam["name"]] = cam
        return out

    # -- env API ------------------------------------------------------------------------------

    def reset(self, *, seed=None, options=None):
        """With a monitor: resets the scene, starts the session and kicks off an episode. Without
        one: starts from wherever the arm is. Returns (obs, info) like `PickAndPlaceEnv.reset`."""
        if self._monitor is not None:
            # The reset must land before the kick-off (a reset puts the referee back to
            # BeforeStart), so each waits for the perceptions to show the one before.
            before = self.last.time
            self.command("(reset)")
            self.command("(start)")
            self._wait(lambda p: p.time < before or p.time < 0.05, "reset the scene")
            self.command("(kickOff)")
            self._wait(lambda p: p.play_mode == "PlayOn" and p.session == "RUNNING", "kick off")
        self._ik.reset()
        self._grip = False
        self._target = np.array(self.ee_pos, dtype=np.float64)
        self._scored = set()
        self._potential = self._phi()
        return self.observation(), self._info()

    def _wait(self, done, what):
        deadline = time.monotonic() + self.timeout
        while True:
            self.last = self._next_perception()
            if done(self.last):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server did not {what} within {self.timeout} s")

    def _effectors(self, target):
        q, qd = self.q, self.qd
        pos, vel = self._ik.solve([float(v) for v in target], self._grip, q, qd, self.frame_skip)
        tau = self._ik.gravity(q)
        parts = []
        for j, name in enumerate(self.joint_names):
            if name.startswith("finger") or not math.isfinite(pos[j]):
                continue
            kp, kd = self._gains[j]
            parts.append(f"({name} {math.degrees(pos[j]):.4f} {math.degrees(vel[j]):.4f} {kp:g} {kd:g} {tau[j]:.4f})")
        parts.append(f"(gripper {1 if self._grip else 0})")
        return "".join(parts)

    def step(self, action):
        """One env step: the action through the IK here, effectors out, then the perception
        `frame_skip` physics steps later. Returns (obs, reward, terminated, truncated, info)."""
        a = np.asarray(action, dtype=np.float64).reshape(4)
        if self._target is None:
            self.reset()
        d = np.clip(np.nan_to_num(a[:3]), -1.0, 1.0) * self.max_step_m
        ee = np.array(self.ee_pos)
        target = self._target + d
        lead = target - ee
        n = np.linalg.norm(lead)
        if n > 0.1:
            target = ee + lead * (0.1 / n)
        self._target = target
        self._grip = bool(a[3] > 0)
        msg = self._effectors(target)
        t0 = self.last.time
        self._send_action(msg)
        if self.sync:
            # One message per cycle: the effectors, then (syn) until frame_skip steps are done.
            for _ in range(max(1, round(self.frame_skip / self.cycle_steps))):
                self.last = self._next_perception()
        else:
            self.last = self._latest_perception(t0 + self.frame_skip * self.dt)
        reward = 0.0
        for e in self.last.referee:
            if e.get("code") == "SCORED":
                reward += 1.0
        # Which cubes scored is not in the perception; count by score instead.
        while len(self._scored) < self.score:
            self._scored.add(len(self._scored))
        potential = self._phi()
        reward += self.shaping * (potential - self._potential)
        self._potential = potential
        terminated = self.play_mode == "Success"
        truncated = self.play_mode == "TimeUp"
        return self.observation(), reward, terminated, truncated, self._info()

    @property
    def target(self):
        return None if self._target is None else self._target.copy()

    def close(self):
        for s in (self._agent, self._monitor):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class CameraError(KeyError):
    """The server refused a camera query (an unknown camera name; the message lists the scene's
    cameras)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _fields(e):
    return {f[0]: f[1:] for f in e[1:] if isinstance(f, list) and f}


def _camera_of(e, images):
    """A `(camera (n …)(size W H)(step N)(time T)(pos …)(quat …)(intrinsics …) …)` reply as a
    dict."""
    f = _fields(e)
    width, height = (int(v) for v in f["size"])
    cam = {
        "name": f["n"][0],
        "width": width,
        "height": height,
        "step": int(f["step"][0]),
        "sim_time": float(f["time"][0]),
        "pos": np.array([float(v) for v in f["pos"]], dtype=np.float32),
        "quat_world": np.array([float(v) for v in f["quat"]], dtype=np.float32),
        "intrinsics": np.array([float(v) for v in f["intrinsics"]], dtype=np.float32).reshape(3, 3),
    }
    if images:
        rgb = f.get("rgb")
        cam["rgb"] = None if rgb is None else np.frombuffer(
            base64.b64decode(rgb[0]), dtype=np.uint8).reshape(height, width, 3)
        depth = f.get("depth")
        cam["depth"] = None if depth is None else np.frombuffer(
            base64.b64decode(depth[0]), dtype="<f4").astype(np.float32).reshape(height, width)
    else:
        image = _fields(["image", *f["image"]]) if "image" in f else None
        cam["image_step"] = None if image is None else int(image["step"][0])
        cam["image_sim_time"] = None if image is None else float(image["time"][0])
        cam["has_depth"] = image is not None and image.get("depth", ["0"])[0] == "1"
    cam["no_image"] = " ".join(f["noimage"]) if "noimage" in f else None
    if images:
        cam["no_depth"] = " ".join(f["nodepth"]) if "nodepth" in f else None
    return cam


def _robot_name(scene):
    return _core.Sim(scene).robot


def connect(agent="127.0.0.1:60000", monitor="127.0.0.1:60001", **kwargs):
    """Connects to a running armsim's agent port (and monitor port; None to go without) and
    returns a `RemoteSim` with `PickAndPlaceEnv`'s reset/step API. kwargs: scene (the scene the
    server runs, for the local IK model; default scene), sync (True if the server runs --sync),
    frame_skip, cycle_steps (the server's --cycle-steps), max_step_m, shaping, gains, timeout."""
    return RemoteSim(agent=agent, monitor=monitor, **kwargs)
