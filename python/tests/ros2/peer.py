#!/usr/bin/env python3
"""A ROS 2 peer of `armsim --ros2` with no ROS install: Cyclone DDS (the PyPI `cyclonedds` wheel,
the DDS that rmw_cyclonedds is built on) plays the ROS 2 node, and for one case a Fast DDS C++
subscriber (ROS 2's default middleware) listens too.

It must run inside a private network namespace, because DDS discovery multicasts and nothing
may leave the machine. test_ros2_interop.py runs it as

    unshare -n sh -c 'ip link set lo up && ip link set lo multicast on &&
                      ip route add 224.0.0.0/4 dev lo && exec python peer.py --armsim BIN --case NAME'

and the script refuses to run anywhere else: it checks that its network namespace differs from
the outer one and holds only `lo` (case same_host: `lo` and a veth pair looping back into it). It then starts armsim (`--headless --ros2`) as
its own child, so both are in the namespace, runs one case, stops armsim and prints one JSON line
of findings, which the test asserts on. Findings, not verdicts: the script reports what it saw.

By hand (as root), for a quick look at what a ROS 2 node sees:

    cd python && unshare -n sh -c 'ip link set lo up && ip link set lo multicast on &&
        ip route add 224.0.0.0/4 dev lo && exec .venv/bin/python tests/ros2/peer.py \
        --armsim ../target/debug/armsim --case topics' | python3 -m json.tool
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cyclonedds.core import InstanceState, Policy, Qos, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

import msgs

NS_PER_S = 1_000_000_000

# QoS as ROS 2 nodes use them. Readers also ask for plain CDR: a ROS 2 node's
# types are XCDR1, and so are armsim's.
CDR_V0 = Policy.DataRepresentation(use_cdrv0_representation=True)
RELIABLE = Policy.Reliability.Reliable(duration(seconds=1))
# The sensor-data style readers keep more than rclcpp's depth 1 so that the test sees every
# sample it polls for, not only the newest.
BEST_EFFORT_DEEP = Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(200), CDR_V0)
RELIABLE_DEEP = Qos(RELIABLE, Policy.History.KeepLast(200), CDR_V0)
# tf2's static listener: reliable, transient local.
TF_STATIC = Qos(RELIABLE, Policy.Durability.TransientLocal, Policy.History.KeepLast(100), CDR_V0)
# What rclcpp publishers and service clients default to: reliable, volatile, keep last 10.
DEFAULT_WRITER = Qos(RELIABLE, Policy.History.KeepLast(10), CDR_V0)


def check_namespace(outer, nic):
    """Refuse to run DDS outside a private network namespace holding only `lo` (with `nic`: `lo`
    and a veth pair d0/d1 whose two ends are both in it, a stand-in for a host's network card
    from which no packet can leave either). The interfaces come from /proc/self/net/dev:
    /sys/class/net shows the namespace that mounted sysfs (the host's), whatever namespace the
    reader is in."""
    here = os.readlink("/proc/self/ns/net")
    if here == outer:
        sys.exit(f"peer.py: not in a private network namespace ({here} is the outer one); "
                 "DDS never runs on the host network")
    # What really keeps packets on this machine: no interface but loopback (and a veth pair
    # looping back into this namespace). That also holds when the outer namespace could not be
    # read, e.g. when /proc/1 is hidden.
    lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    interfaces = sorted(line.split(":")[0].strip() for line in lines)
    expected = ["d0", "d1", "lo"] if nic else ["lo"]
    if interfaces != expected:
        sys.exit(f"peer.py: the network namespace holds {interfaces}, not {expected}; run it under "
                 "`unshare -n` (see the top of this file): DDS never runs on the host network")
    if nic:
        for a, b in (("d0", "d1"), ("d1", "d0")):
            link = subprocess.run(["ip", "-d", "-o", "link", "show", a], capture_output=True, text=True).stdout
            if f"{a}@{b}:" not in link or " veth " not in link:
                sys.exit(f"peer.py: {a} is not the veth peer of {b} in this namespace: {link}")
    mcast_dev = "d0" if nic else "lo"
    routes = Path("/proc/self/net/route").read_text().splitlines()[1:]
    if not any(r.split()[:2] == [mcast_dev, "000000E0"] for r in routes):
        sys.exit(f"peer.py: no 224.0.0.0/4 route on {mcast_dev} in the namespace")
    return {"netns": here, "interfaces": interfaces}


def outer_default():
    try:
        return os.readlink("/proc/1/ns/net")
    except OSError:
        return ""


class Armsim:
    """`armsim --headless --ros2 …` as a child, its log in a file (the findings carry its tail)."""

    def __init__(self, exe, domain, namespace=None, extra=()):
        self.log = tempfile.NamedTemporaryFile(prefix="armsim-ros2-", suffix=".log", delete=False)
        cmd = [exe, "--headless", "--realtime", "--no-teleop", "--no-xr", "--no-agent-ports",
               "--ros2", "--ros2-domain", str(domain)]
        if namespace:
            cmd += ["--ros2-namespace", namespace]
        cmd += list(extra)
        env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "info,rustdds=warn,ros2_client=warn"))
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def check_alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"armsim exited with {self.proc.returncode}")

    def stop(self):
        """SIGINT (armsim's clean shutdown), then SIGKILL if it lingers; returns its exit code and
        the tail of its log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        text = Path(self.log.name).read_text(errors="replace")
        os.unlink(self.log.name)
        return self.proc.returncode, text[-6000:]


def stamp_ns(t):
    return t.sec * NS_PER_S + t.nanosec


class Peer:
    def __init__(self, domain, namespace, armsim):
        self.dp = DomainParticipant(domain)
        self.prefix = f"rt/{namespace.strip('/')}/" if namespace else "rt/"
        self.armsim = armsim
        self.topics = {}

    def topic(self, name, typ):
        """The DDS topic of ROS topic `name`: absolute names (`/clock`) stay at the root,
        relative ones go under the node's namespace, as rcl resolves them."""
        dds = "rt" + name if name.startswith("/") else self.prefix + name
        if dds not in self.topics:
            self.topics[dds] = Topic(self.dp, dds, typ)
        return self.topics[dds]

    def reader(self, name, typ, qos):
        return DataReader(self.dp, self.topic(name, typ), qos=qos)

    def writer(self, name, typ, qos=DEFAULT_WRITER):
        return DataWriter(self.dp, self.topic(name, typ), qos=qos)

    def wait(self, what, done, timeout, readers=()):
        """Takes samples from `readers` (each a (reader, list) pair) until `done()` or the
        deadline; armsim dying ends the wait at once. Between checks it sleeps on the readers'
        data (a WaitSet), or for 20 ms where there is no reader to wake it (matching)."""
        deadline = time.monotonic() + timeout
        waitset = WaitSet(self.dp)
        for reader, _ in readers:
            waitset.attach(ReadCondition(reader, ViewState.Any | InstanceState.Any | SampleState.NotRead))
        while True:
            for reader, into in readers:
                into.extend(reader.take(N=200))
            if done():
                return True
            self.armsim.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout} s")
            if readers:
                waitset.wait(duration(milliseconds=100))
            else:
                time.sleep(0.02)

    def wait_matched(self, endpoint, what, timeout=30):
        if isinstance(endpoint, DataWriter):
            self.wait(what, lambda: bool(endpoint.get_matched_subscriptions()), timeout)
        else:
            self.wait(what, lambda: bool(endpoint.get_matched_publications()), timeout)


class Client:
    """A simulation_interfaces service client over raw DDS, as Fast DDS (rmw_fastrtps) frames it:
    the plain request on `rq/<name>Request`, the plain response on `rr/<name>Reply`. Without a
    sample identity in the request's inline QoS armsim's server uses the request's own."""

    def __init__(self, peer, service):
        req_type, resp_type = msgs.SERVICES[service]
        base = peer.prefix.replace("rt/", "", 1)
        self.peer, self.service = peer, service
        self.requests = DataWriter(peer.dp, Topic(peer.dp, f"rq/{base}{service}Request", req_type),
                                   qos=DEFAULT_WRITER)
        self.replies = DataReader(peer.dp, Topic(peer.dp, f"rr/{base}{service}Reply", resp_type),
                                  qos=RELIABLE_DEEP)

    def ready(self):
        # Replies are volatile: a reply sent before our reader matched armsim's writer is lost,
        # and a request written before armsim's reader matched ours is never seen.
        self.peer.wait_matched(self.requests, f"{self.service}: armsim's request reader")
        self.peer.wait_matched(self.replies, f"{self.service}: armsim's reply writer")

    def call(self, request, also=(), timeout=20):
        self.requests.write(request)
        got = []
        self.peer.wait(f"{self.service} reply", lambda: bool(got), timeout, [(self.replies, got), *also])
        return got[0]


def js_summary(samples):
    return {
        "count": len(samples),
        "names": list(samples[0].name) if samples else [],
        "stamps_ns": [stamp_ns(s.header.stamp) for s in samples],
        "lengths_ok": all(len(s.position) == len(s.name) for s in samples),
        "frame_ids": sorted({s.header.frame_id for s in samples}),
    }


def case_topics(peer, args):
    """/joint_states and /clock for a second of sim time, /tf, then /tf_static read late."""
    js, clock, tf = [], [], []
    readers = [(peer.reader("joint_states", msgs.JointState_, RELIABLE_DEEP), js),
               # rclcpp's ClockQoS is best effort; armsim's reliable writer must match it.
               (peer.reader("/clock", msgs.Clock_, BEST_EFFORT_DEEP), clock),
               (peer.reader("/tf", msgs.TFMessage_, RELIABLE_DEEP), tf)]
    peer.wait("first /joint_states", lambda: bool(js), 90, readers)
    peer.wait("first /clock", lambda: bool(clock), 30, readers)
    first_clock = stamp_ns(clock[0].clock)
    peer.wait("a second of /clock", lambda: stamp_ns(clock[-1].clock) - first_clock >= NS_PER_S, 30, readers)
    peer.wait("/tf", lambda: bool(tf), 10, readers)
    clock_ns = [stamp_ns(c.clock) for c in clock]
    # /tf_static is transient local: a reader created now, long after armsim published it,
    # still gets it.
    static = []
    late_by_ns = clock_ns[-1]
    peer.wait("late /tf_static", lambda: bool(static), 20,
              [(peer.reader("/tf_static", msgs.TFMessage_, TF_STATIC), static)])
    transforms = [t for m in static for t in m.transforms]
    return {
        "joint_states": js_summary(js),
        "clock_ns": clock_ns,
        "tf": {"count": len(tf), "children": sorted({t.child_frame_id for m in tf for t in m.transforms}),
               "parents": sorted({t.header.frame_id for m in tf for t in m.transforms}),
               "stamps_ns": [stamp_ns(t.header.stamp) for m in tf[:20] for t in m.transforms[:1]]},
        "tf_static": {"late_by_sim_ns": late_by_ns, "messages": len(static),
                      "children": sorted({t.child_frame_id for t in transforms}),
                      "parents": sorted({t.header.frame_id for t in transforms})},
    }


def case_commands(peer, args):
    """A Float64MultiArray on forward_position_controller/commands, then a JointTrajectory on
    joint_trajectory, each moving joint 0 somewhere else; /joint_states shows where it went."""
    js = []
    readers = [(peer.reader("joint_states", msgs.JointState_, RELIABLE_DEEP), js)]
    forward = peer.writer("forward_position_controller/commands", msgs.Float64MultiArray_)
    trajectory = peer.writer("joint_trajectory", msgs.JointTrajectory_)
    peer.wait("first /joint_states", lambda: bool(js), 90, readers)
    peer.wait_matched(forward, "armsim's forward command reader")
    peer.wait_matched(trajectory, "armsim's trajectory reader")
    names, start = list(js[-1].name), list(js[-1].position)
    found = {"names": names, "start": start}
    tolerance = 0.05

    def joint0_near(target):
        return lambda: abs(js[-1].position[0] - target) < tolerance

    target = start[0] + 0.4
    data = list(start)
    data[0] = target
    forward.write(msgs.Float64MultiArray_(data=data))
    t0 = time.monotonic()
    try:
        peer.wait("joint 0 at the Float64MultiArray target", joint0_near(target), 30, readers)
        found["forward"] = {"target": target, "reached": js[-1].position[0], "wall_s": time.monotonic() - t0}
    except TimeoutError:
        found["forward"] = {"target": target, "reached": None, "last": js[-1].position[0]}
        return found

    target2 = start[0] - 0.3
    point = list(js[-1].position)
    point[0] = target2
    trajectory.write(msgs.JointTrajectory_(
        joint_names=names,
        points=[msgs.JointTrajectoryPoint_(positions=point, time_from_start=msgs.Duration_(sec=1))]))
    t0 = time.monotonic()
    try:
        peer.wait("joint 0 at the JointTrajectory's last point", joint0_near(target2), 30, readers)
        found["trajectory"] = {"target": target2, "reached": js[-1].position[0], "wall_s": time.monotonic() - t0}
    except TimeoutError:
        found["trajectory"] = {"target": target2, "reached": None, "last": js[-1].position[0]}
    return found


def case_services(peer, args):
    """simulation_interfaces over the Fast DDS request/reply mapping: features, state, pause (the
    clock stops), play (it runs again), reset (it restarts near 0)."""
    clock = []
    clock_reader = (peer.reader("/clock", msgs.Clock_, BEST_EFFORT_DEEP), clock)
    clients = {name: Client(peer, name) for name in
               ("get_simulator_features", "get_simulation_state", "set_simulation_state", "reset_simulation")}
    peer.wait("first /clock", lambda: bool(clock), 90, [clock_reader])
    for c in clients.values():
        c.ready()

    def now():
        return stamp_ns(clock[-1].clock)

    def call(name, request):
        return clients[name].call(request, also=[clock_reader])

    def watch(seconds):
        """/clock for `seconds` of wall time: what arrived."""
        start = len(clock)
        end = time.monotonic() + seconds
        peer.wait("watching /clock", lambda: time.monotonic() >= end, seconds + 5, [clock_reader])
        return [stamp_ns(c.clock) for c in clock[start:]]

    found = {}
    features = call("get_simulator_features", msgs.GetSimulatorFeatures_Request_())
    found["features"] = list(features.features.features)
    state = call("get_simulation_state", msgs.GetSimulationState_Request_())
    found["state_at_start"] = [state.state.state, state.result.result]

    peer.wait("/clock past 0.5 s", lambda: now() >= NS_PER_S // 2, 30, [clock_reader])
    reply = call("set_simulation_state", msgs.SetSimulationState_Request_(
        state=msgs.SimulationState_(state=msgs.STATE_PAUSED)))
    found["pause"] = [reply.result.result, reply.result.error_message]
    # Frames published before the pause may still be on their way: let them land, then the
    # clock must not move for a second of wall time.
    watch(0.3)
    paused_at = now()
    found["paused_at_ns"] = paused_at
    found["while_paused_ns"] = watch(1.0)
    state = call("get_simulation_state", msgs.GetSimulationState_Request_())
    found["state_paused"] = [state.state.state, state.result.result]

    # Counted from before the call: the reply's wait takes /clock too, so on a loaded machine
    # the first frames after the play can come in with the reply, and the first one taken after
    # it would show how far the sim got meanwhile, not where it went on from.
    played = len(clock)
    reply = call("set_simulation_state", msgs.SetSimulationState_Request_(
        state=msgs.SimulationState_(state=msgs.STATE_PLAYING)))
    found["play"] = [reply.result.result, reply.result.error_message]
    peer.wait("/clock running again", lambda: now() > paused_at + NS_PER_S // 5, 30, [clock_reader])
    found["first_after_play_ns"] = stamp_ns(clock[played].clock)
    before_reset = now()
    found["before_reset_ns"] = before_reset
    # From before the call, for the same reason as the play's: the new episode's first frames
    # may come in with the reply.
    reset_from = len(clock)
    reply = call("reset_simulation", msgs.ResetSimulation_Request_(scope=msgs.SCOPE_DEFAULT))
    found["reset"] = [reply.result.result, reply.result.error_message]

    def after_reset():
        return [stamp_ns(c.clock) for c in clock[reset_from:]]

    def a_second_into_the_new_episode():
        after = after_reset()
        return any(c < before_reset for c in after) and after[-1] >= NS_PER_S

    # A second of the new episode's sim time, however long the sim takes to run it (a wall
    # second on a loaded machine is a fraction of one); the test asserts on what came.
    try:
        peer.wait("a second of /clock after the reset", a_second_into_the_new_episode, 30, [clock_reader])
    except TimeoutError:
        pass  # reported by the assertions, with the stamps
    found["after_reset_ns"] = after_reset()
    return found


def case_fastdds(peer, args):
    """The Fast DDS C++ subscriber (sub.cpp) receives joint_states; a Cyclone reader of the same
    topic checks that the two saw the same robot."""
    js = []
    readers = [(peer.reader("joint_states", msgs.JointState_, RELIABLE_DEEP), js)]
    peer.wait("first /joint_states (Cyclone)", lambda: bool(js), 90, readers)
    topic = peer.prefix + "joint_states"
    sub = subprocess.run([args.fastdds_sub, str(args.domain), topic, "5", "30"],
                         capture_output=True, text=True, timeout=60)
    samples = [json.loads(line) for line in sub.stdout.splitlines() if line.startswith("{")]
    return {"topic": topic, "rc": sub.returncode, "samples": samples, "stderr": sub.stderr[-2000:],
            "cyclone_names": list(js[0].name)}


def case_same_host(peer, args):
    """A host with a network card (the veth pair), armsim in its default local mode: ROS 2 nodes on
    the same host must still find it. The Fast DDS subscriber runs with Fast DDS's defaults (as
    rmw_fastrtps_cpp does); this Cyclone peer runs with what rmw_cyclonedds does for
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST (CYCLONEDDS_URI, set by the test)."""
    js = []
    readers = [(peer.reader("joint_states", msgs.JointState_, RELIABLE_DEEP), js)]
    topic = peer.prefix + "joint_states"
    sub = subprocess.Popen([args.fastdds_sub, str(args.domain), topic, "5", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        peer.wait("/joint_states (Cyclone, localhost configuration)", lambda: len(js) >= 5, 60, readers)
    except TimeoutError:
        pass  # reported as a count below
    out, err = sub.communicate(timeout=60)
    samples = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {"cyclone_localhost_samples": len(js), "cyclone_names": list(js[0].name) if js else [],
            "fastdds_rc": sub.returncode, "fastdds_samples": samples, "fastdds_stderr": err[-2000:],
            "cyclonedds_uri": os.environ.get("CYCLONEDDS_URI", "")}


CAMERA = "front"


def case_cameras(peer, args):
    """`--ros2-cameras front`: the default scene's front camera as image_raw and camera_info,
    with its optical frame on /tf, at most --ros2-camera-hz (10) images per second of sim time."""
    images, infos, tf, clock = [], [], [], []
    readers = [(peer.reader(f"{CAMERA}/image_raw", msgs.Image_, RELIABLE_DEEP), images),
               (peer.reader(f"{CAMERA}/camera_info", msgs.CameraInfo_, RELIABLE_DEEP), infos),
               (peer.reader("/tf", msgs.TFMessage_, RELIABLE_DEEP), tf),
               (peer.reader("/clock", msgs.Clock_, BEST_EFFORT_DEEP), clock)]
    # The offscreen renderer compiles its pipelines first (software Vulkan: seconds).
    peer.wait("first image", lambda: bool(images), 120, readers)
    peer.wait("four images and their infos", lambda: len(images) >= 4 and len(infos) >= 4, 60, readers)
    image = images[-1]
    data = bytes(image.data)
    optical = [t for m in tf for t in m.transforms if t.child_frame_id == f"{CAMERA}_optical_frame"]
    stamps = [stamp_ns(i.header.stamp) for i in images]
    return {
        "image": {"width": image.width, "height": image.height, "encoding": image.encoding,
                  "step": image.step, "bytes": len(data), "distinct_bytes": len(set(data)),
                  "frame_id": image.header.frame_id},
        "image_stamps_ns": stamps,
        "info": {"width": infos[-1].width, "height": infos[-1].height, "k": list(infos[-1].k),
                 "distortion_model": infos[-1].distortion_model, "frame_id": infos[-1].header.frame_id},
        "optical_parents": sorted({t.header.frame_id for t in optical}),
        "optical_count": len(optical),
        "clock_ns_last": stamp_ns(clock[-1].clock) if clock else None,
    }


CASES = {"topics": case_topics, "cameras": case_cameras, "commands": case_commands, "services": case_services, "fastdds": case_fastdds,
         "same_host": case_same_host}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--armsim", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "0")))
    ap.add_argument("--namespace", default="")
    # By default the namespace of PID 1 (the host's, or the container's): `unshare -n` leaves
    # the PID namespace alone, so /proc/1 is still the outer process.
    ap.add_argument("--outer-netns", default=os.environ.get("ARMSIM_OUTER_NETNS") or outer_default(),
                    help="the network namespace this must not be in (default: PID 1's)")
    ap.add_argument("--fastdds-sub", help="the built Fast DDS subscriber (case fastdds)")
    args = ap.parse_args()

    found = {"case": args.case, **check_namespace(args.outer_netns, args.case == "same_host")}
    extra = ["--ros2-cameras", CAMERA, "--ros2-camera-hz", "10"] if args.case == "cameras" else []
    armsim = Armsim(args.armsim, args.domain, args.namespace, extra)
    try:
        peer = Peer(args.domain, args.namespace, armsim)
        found.update(CASES[args.case](peer, args))
    except Exception as e:  # reported in the findings, which the test prints on failure
        found["error"] = f"{type(e).__name__}: {e}"
    finally:
        found["armsim_rc"], found["armsim_log"] = armsim.stop()
    print(json.dumps(found))


if __name__ == "__main__":
    main()
