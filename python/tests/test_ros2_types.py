"""armsim's ROS 2 message bytes and type hashes, checked by a third party (rosbags 0.11.9).

`armsim ros2-types --dump DIR` writes, for every ROS 2 type armsim defines, a sample encoded by
armsim's own CDR code (`.cdr`), the same values as JSON (`.json`) and `index.json` with the DDS
type name and RIHS01 hash from armsim's table. Here rosbags must serialize the JSON values to
exactly armsim's bytes, deserialize armsim's bytes back to the JSON values, and hash each type
to the table's hash. rosbags' Jazzy store lacks simulation_interfaces, so that package is loaded
from the vendored .msg/.srv text in tests/ros2/simulation_interfaces. No DDS is involved.
"""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# A missing rosbags fails these tests (in the `ts` fixture) rather than skipping them: it is in
# the test extra, so its absence is a broken environment, not an optional feature.
try:
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
    from rosbags.typesys.base import Nodetype
except ImportError as e:
    ROSBAGS_MISSING = f"{e}: install the test extra (pip install 'rosbags==0.11.9')"
else:
    ROSBAGS_MISSING = None

SIM_INTERFACES = Path(__file__).parent / "ros2" / "simulation_interfaces"
# The interop peer's Cyclone DDS types (tests/ros2/msgs.py), checked against armsim's bytes below.
sys.path.insert(0, str(Path(__file__).parent / "ros2"))

# Types that must be in the dump whatever else is: what armsim publishes, subscribes and serves.
REQUIRED = {
    "sensor_msgs/msg/JointState",
    "rosgraph_msgs/msg/Clock",
    "tf2_msgs/msg/TFMessage",
    "std_msgs/msg/String",
    "std_msgs/msg/Float64MultiArray",
    "trajectory_msgs/msg/JointTrajectory",
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/CameraInfo",
} | {
    f"simulation_interfaces/srv/{srv}_{part}"
    for srv in ("GetSimulatorFeatures", "GetSimulationState", "SetSimulationState", "ResetSimulation",
                "StepSimulation")
    for part in ("Request", "Response")
}

NUMPY_TYPES = {
    "bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8, "uint8": np.uint8,
    "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
    "uint64": np.uint64, "float32": np.float32, "float64": np.float64,
}


def _srv_to_msg_names(defs):
    """rosbags files the parts of a .srv under `pkg/srv/msg/X_Request` and resolves relative field
    types to `pkg/srv/msg/Y`. rosidl names them `pkg/srv/X_Request` and `pkg/msg/Y`, and the names go
    into the RIHS01 hash, so both are renamed."""
    def field(desc):
        nodetype, detail = desc
        if nodetype == Nodetype.NAME:
            return nodetype, detail.replace("/srv/msg/", "/msg/")
        if nodetype in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            inner, size = detail
            return nodetype, (field(inner), size)
        return desc

    return {
        name.replace("/srv/msg/", "/srv/"): (consts, [(fname, field(desc)) for fname, desc in fields])
        for name, (consts, fields) in defs.items()
    }


def typestore():
    """Jazzy's store plus simulation_interfaces 2.1.0 from the vendored text."""
    ts = get_typestore(Stores.ROS2_JAZZY)
    defs = {}
    for path in sorted((SIM_INTERFACES / "msg").glob("*.msg")):
        defs.update(get_types_from_msg(path.read_text(), f"simulation_interfaces/msg/{path.stem}"))
    for path in sorted((SIM_INTERFACES / "srv").glob("*.srv")):
        parts = re.split(r"^---\s*$", path.read_text(), flags=re.MULTILINE)
        assert len(parts) == 2, f"{path}: expected one --- separator"
        for part, text in zip(("Request", "Response"), parts):
            defs.update(_srv_to_msg_names(
                get_types_from_msg(text, f"simulation_interfaces/srv/{path.stem}_{part}")))
    assert len(defs) == 13, sorted(defs)
    ts.register(defs)
    return ts


def build(ts, typename, value):
    """A rosbags message of `typename` from armsim's JSON values."""
    _, fields = ts.fielddefs[typename]
    assert set(value) == {f for f, _ in fields}, f"{typename}: JSON keys {sorted(value)} vs {fields}"
    return ts.types[typename](**{f: convert(ts, desc, value[f]) for f, desc in fields})


def convert(ts, desc, value):
    nodetype, detail = desc
    if nodetype == Nodetype.BASE:
        return value
    if nodetype == Nodetype.NAME:
        return build(ts, detail, value)
    (inner_type, inner_detail), _size = detail
    if inner_type == Nodetype.BASE and inner_detail[0] in NUMPY_TYPES:
        return np.array(value, dtype=NUMPY_TYPES[inner_detail[0]])
    return [convert(ts, (inner_type, inner_detail), v) for v in value]


def plain(ts, msg):
    """A rosbags message as JSON-like values: its fields (not its constants), numpy arrays as lists."""
    if isinstance(msg, np.ndarray):
        return msg.tolist()
    if isinstance(msg, (list, tuple)):
        return [plain(ts, v) for v in msg]
    if hasattr(msg, "__msgtype__"):
        _, fields = ts.fielddefs[msg.__msgtype__]
        return {f: plain(ts, getattr(msg, f)) for f, _ in fields}
    if isinstance(msg, np.generic):
        return msg.item()
    return msg


@pytest.fixture(scope="module")
def dump(armsim_exe, tmp_path_factory):
    out = tmp_path_factory.mktemp("ros2_types")
    run = subprocess.run([str(armsim_exe), "ros2-types", "--dump", str(out)], timeout=60,
                         capture_output=True, text=True)
    assert run.returncode == 0, f"armsim ros2-types --dump failed:\n{run.stderr}"
    index = json.loads((out / "index.json").read_text())
    return out, index


@pytest.fixture(scope="module")
def ts():
    if ROSBAGS_MISSING:
        pytest.fail(ROSBAGS_MISSING)
    return typestore()


def samples(dump):
    out, index = dump
    for name in sorted(index):
        stem = name.replace("/", "_")
        yield name, (out / f"{stem}.cdr").read_bytes(), json.loads((out / f"{stem}.json").read_text())


def test_the_dump_covers_every_type_it_lists(dump):
    out, index = dump
    assert REQUIRED <= set(index), sorted(REQUIRED - set(index))
    stems = {p.stem for p in out.glob("*.cdr")}
    assert stems == {n.replace("/", "_") for n in index}
    assert stems == {p.stem for p in out.glob("*.json")} - {"index"}


def test_dds_type_names_follow_the_ros2_convention(dump):
    _, index = dump
    for name, entry in index.items():
        pkg, kind, typ = name.split("/")
        assert entry["dds_name"] == f"{pkg}::{kind}::dds_::{typ}_", name


def test_rosbags_serializes_the_json_values_to_armsims_bytes(dump, ts):
    wrong = []
    for name, cdr, values in samples(dump):
        ours = bytes(ts.serialize_cdr(build(ts, name, values), name))
        if ours != cdr:
            wrong.append(f"{name}: rosbags {ours.hex()} armsim {cdr.hex()}")
    assert not wrong, "\n".join(wrong)


def test_rosbags_reads_armsims_bytes_as_the_json_values(dump, ts):
    wrong = []
    for name, cdr, values in samples(dump):
        got = plain(ts, ts.deserialize_cdr(cdr, name))
        if got != values:
            wrong.append(f"{name}: rosbags read {got}, armsim wrote {values}")
    assert not wrong, "\n".join(wrong)


def test_rihs01_hashes_match_rosbags(dump, ts):
    _, index = dump
    wrong = {name: (entry["rihs01"], ts.hash_rihs01(name)) for name, entry in index.items()
             if ts.hash_rihs01(name) != "RIHS01_" + entry["rihs01"]}
    assert not wrong, wrong


def test_a_changed_byte_is_caught(dump, ts):
    """The comparison is not vacuous: a JointState with one position changed serializes differently."""
    name = "sensor_msgs/msg/JointState"
    out, _ = dump
    values = json.loads((out / "sensor_msgs_msg_JointState.json").read_text())
    values["position"][0] += 1.0
    assert bytes(ts.serialize_cdr(build(ts, name, values), name)) != (out / "sensor_msgs_msg_JointState.cdr").read_bytes()


def test_the_interop_peers_cyclone_types_read_and_write_armsims_bytes(dump):
    """tests/ros2/msgs.py declares the types for the Cyclone DDS peer of test_ros2_interop.py;
    a layout slip there would show up as a confusing interop failure, so check it here first:
    each type it declares must read armsim's sample as the JSON values and write the same bytes
    back in plain CDR (XCDR1)."""
    try:
        import msgs
    except ImportError as e:
        pytest.fail(f"{e}: install the test extra (pip install 'cyclonedds==11.0.1')")
    out, index = dump
    checked, wrong = [], []
    for name in sorted(index):
        pkg, kind, typ = name.split("/")
        cls = getattr(msgs, f"{typ}_", None)
        if cls is None or cls.__idl_typename__ != f"{pkg}::{kind}::dds_::{typ}_":
            continue
        stem = name.replace("/", "_")
        cdr = (out / f"{stem}.cdr").read_bytes()
        msg = cls.deserialize(cdr)
        if dataclasses.asdict(msg) != json.loads((out / f"{stem}.json").read_text()):
            wrong.append(f"{name}: cyclonedds read {msg}")
        elif msg.serialize(use_version_2=False) != cdr:
            wrong.append(f"{name}: cyclonedds wrote {msg.serialize(use_version_2=False).hex()}, armsim {cdr.hex()}")
        checked.append(name)
    assert not wrong, "\n".join(wrong)
    assert {"sensor_msgs/msg/JointState", "rosgraph_msgs/msg/Clock", "trajectory_msgs/msg/JointTrajectory",
            "simulation_interfaces/srv/SetSimulationState_Request"} <= set(checked), checked
