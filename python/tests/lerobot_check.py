"""Checks a LeRobot v3.0 dataset folder by the rules LeRobot 0.4.4 applies when it loads a local root,
using only pyarrow, pandas, `datasets` and PyAV (LeRobot itself needs torch).

    from lerobot_check import check_dataset
    summary = check_dataset("/path/to/dataset")   # AssertionError with a clear message if not

What it checks (LeRobot's source in brackets):
- `meta/info.json` has every key, `codebase_version` has major version 3 [check_version_compatibility],
  `splits` is `0:N`, each feature has dtype/shape/names, image/video names are
  `[height, width, channels]`, video features carry their `info` block;
- `meta/tasks.parquet` reads back (pandas, as `load_tasks` does) with the task strings as the index
  [`tasks.iloc[i].name`], not integers;
- `meta/episodes/*/*.parquet` loads with `datasets` [load_episodes]: episodes 0..N-1 in order, lengths
  matching `dataset_from_index`/`dataset_to_index`, contiguous, tasks known;
- the data parquet loads with `datasets.load_dataset("parquet", ...)` and casts to the `datasets.Features`
  built from info.json [get_hf_features_from_features]; every episode is in it
  [_check_cached_episodes_sufficient]; `index` is global and continuous, `frame_index` restarts at 0,
  `timestamp` is exactly float32(frame_index / fps), `task_index` matches the episode's task;
- every episode's video file exists [_check_cached_episodes_sufficient]; each mp4 is one video
  stream at `fps` with pts from 0 in steps of exactly 1/fps; every episode starts on a keyframe;
- for the first, middle and last frame of every episode and camera, PyAV seeks as LeRobot's pyav
  backend does (previous keyframe of `from_timestamp + timestamp`) and decodes forward; the closest
  frame must be within `tolerance_s` (1e-4 s) of the query [decode_video_frames_torchvision], and it
  must be frame `round(query * fps)` as torchcodec computes it;
- `meta/stats.json`, if present: every stat LeRobot writes, with the feature's shape ([3, 1, 1] in
  [0, 1] for images and videos).

Returns summary numbers (episodes, frames, tasks, episode_lengths, video_files, decoded_frames,
max_timestamp_error_s, ...).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import datasets
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

TOLERANCE_S = 1e-4
INFO_KEYS = [
    "codebase_version", "robot_type", "total_episodes", "total_frames", "total_tasks", "chunks_size",
    "data_files_size_in_mb", "video_files_size_in_mb", "fps", "splits", "data_path", "video_path",
    "features",
]
DEFAULT_FEATURES = {
    "timestamp": "float32", "frame_index": "int64", "episode_index": "int64", "index": "int64",
    "task_index": "int64",
}
STATS_KEYS = ["min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"]


def _check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def hf_features(features: dict) -> datasets.Features:
    """`get_hf_features_from_features` of LeRobot 0.4.4."""
    out = {}
    for key, ft in features.items():
        shape = tuple(ft["shape"])
        if ft["dtype"] == "video":
            continue
        if ft["dtype"] == "image":
            out[key] = datasets.Image()
        elif shape == (1,):
            out[key] = datasets.Value(dtype=ft["dtype"])
        elif len(shape) == 1:
            out[key] = datasets.Sequence(length=shape[0], feature=datasets.Value(dtype=ft["dtype"]))
        elif 2 <= len(shape) <= 5:
            array = getattr(datasets, f"Array{len(shape)}D")
            out[key] = array(shape=shape, dtype=ft["dtype"])
        else:
            raise AssertionError(f"feature {key}: unsupported shape {shape}")
    return datasets.Features(out)


def _check_info(root: Path) -> dict:
    path = root / "meta" / "info.json"
    _check(path.is_file(), f"{path} is missing (LeRobot would try to download the dataset from the Hub)")
    info = json.loads(path.read_text())
    missing = [k for k in INFO_KEYS if k not in info]
    _check(not missing, f"info.json lacks {missing}")
    version = str(info["codebase_version"])
    _check(version.startswith("v") and version[1:].split(".")[0] == "3",
           f"codebase_version {version!r}: LeRobot 0.4+ needs major version 3")
    n = info["total_episodes"]
    _check(info["splits"] == {"train": f"0:{n}"}, f"splits {info['splits']} != {{'train': '0:{n}'}}")
    _check(isinstance(info["fps"], int) and info["fps"] > 0, f"fps {info['fps']!r} must be a positive int")
    for key, dtype in DEFAULT_FEATURES.items():
        ft = info["features"].get(key)
        _check(ft is not None, f"feature {key} is missing")
        _check(ft["dtype"] == dtype and list(ft["shape"]) == [1], f"feature {key}: {ft}, want {dtype} [1]")
    video_keys = []
    for key, ft in info["features"].items():
        for k in ("dtype", "shape", "names"):
            _check(k in ft, f"feature {key} has no {k!r}")
        _check("/" not in key, f"feature name {key!r} contains '/'")
        if ft["dtype"] in ("image", "video"):
            _check(ft["names"] == ["height", "width", "channels"],
                   f"feature {key}: names {ft['names']} must be ['height', 'width', 'channels'] (lerobot#3786)")
            _check(len(ft["shape"]) == 3, f"feature {key}: shape {ft['shape']} is not [H, W, C]")
        if ft["dtype"] == "video":
            video_keys.append(key)
            vi = ft.get("info") or {}
            for k in ("video.height", "video.width", "video.codec", "video.pix_fmt", "video.fps",
                      "video.is_depth_map", "video.channels"):
                _check(k in vi, f"feature {key}: info block lacks {k!r}")
            _check([vi["video.height"], vi["video.width"], vi["video.channels"]] == list(ft["shape"]),
                   f"feature {key}: info {vi} disagrees with shape {ft['shape']}")
        elif len(ft["shape"]) == 1 and ft["shape"] != [1] and ft["names"] is not None:
            _check(len(ft["names"]) == ft["shape"][0], f"feature {key}: {len(ft['names'])} names for {ft['shape']}")
    if video_keys:
        _check(info["video_path"], "video_path is null but there are video features")
    return info


def _check_tasks(root: Path, info: dict) -> pd.DataFrame:
    path = root / "meta" / "tasks.parquet"
    _check(path.is_file(), f"{path} is missing")
    tasks = pd.read_parquet(path)  # LeRobot's load_tasks
    _check("task_index" in tasks.columns, f"tasks.parquet columns {list(tasks.columns)} lack task_index")
    names = [tasks.iloc[i].name for i in range(len(tasks))]
    _check(all(isinstance(t, str) for t in names),
           f"task names read back as {names!r}, not strings: the pandas index metadata must be in the "
           "Arrow schema metadata of tasks.parquet")
    _check(list(tasks["task_index"]) == list(range(len(tasks))),
           f"task_index {list(tasks['task_index'])} is not 0..{len(tasks) - 1}")
    _check(len(tasks) == info["total_tasks"], f"{len(tasks)} tasks, info says {info['total_tasks']}")
    # The same through pyarrow directly.
    df = pq.read_table(path).to_pandas()
    _check(list(df.index) == names, f"pyarrow .to_pandas() index {list(df.index)} != {names}")
    return tasks


def _load_parquet_dir(directory: Path, cache: str, features=None) -> datasets.Dataset:
    paths = sorted(str(p) for p in directory.glob("*/*.parquet"))
    _check(paths, f"no parquet file under {directory}")
    return datasets.load_dataset("parquet", data_files=paths, features=features, split="train", cache_dir=cache)


def _check_episodes(root: Path, info: dict, tasks: pd.DataFrame, cache: str) -> list[dict]:
    eps = _load_parquet_dir(root / "meta" / "episodes", cache)
    eps = eps.select_columns([k for k in eps.features if not k.startswith("stats/")])
    rows = eps.to_list()
    n = info["total_episodes"]
    _check(len(rows) == n, f"{len(rows)} episode rows, info says {n}")
    task_names = set(tasks.index)
    expected_from = 0
    for i, ep in enumerate(rows):
        _check(ep["episode_index"] == i, f"episode row {i} has episode_index {ep['episode_index']}")
        for k in ("data/chunk_index", "data/file_index", "dataset_from_index", "dataset_to_index", "length",
                  "tasks"):
            _check(k in ep, f"episode {i} lacks {k}")
        _check(ep["dataset_from_index"] == expected_from,
               f"episode {i} starts at {ep['dataset_from_index']}, expected {expected_from}")
        _check(ep["dataset_to_index"] - ep["dataset_from_index"] == ep["length"] > 0,
               f"episode {i}: length {ep['length']} vs {ep['dataset_from_index']}..{ep['dataset_to_index']}")
        _check(ep["tasks"] and all(t in task_names for t in ep["tasks"]),
               f"episode {i}: tasks {ep['tasks']} not all in tasks.parquet {sorted(task_names)}")
        expected_from = ep["dataset_to_index"]
    _check(expected_from == info["total_frames"], f"episodes cover {expected_from} frames, info says "
           f"{info['total_frames']}")
    return rows


def _check_data(root: Path, info: dict, episodes: list[dict], tasks: pd.DataFrame, cache: str) -> int:
    features = hf_features(info["features"])
    for ep in episodes:
        path = root / info["data_path"].format(chunk_index=ep["data/chunk_index"], file_index=ep["data/file_index"])
        _check(path.is_file(), f"episode {ep['episode_index']}: data file {path} is missing")
    try:
        ds = _load_parquet_dir(root / "data", cache, features=features)
    except Exception as e:  # a cast failure is a format error
        raise AssertionError(f"data parquet does not load/cast to the declared features {features}: {e}") from e
    _check(ds.features == features, f"loaded features {ds.features} != declared {features}")
    table = ds.with_format("arrow")[:]
    fps = info["fps"]
    n = info["total_frames"]
    _check(table.num_rows == n, f"data has {table.num_rows} rows, info says {n}")
    col = {k: table.column(k).to_numpy() for k in DEFAULT_FEATURES}
    present = set(np.unique(col["episode_index"]).tolist())
    missing = [e["episode_index"] for e in episodes if e["episode_index"] not in present]
    _check(not missing, f"episodes {missing} have no rows in the data")
    _check(np.array_equal(col["index"], np.arange(n)), "index is not 0..total_frames-1 in order")
    for ep in episodes:
        a, b = ep["dataset_from_index"], ep["dataset_to_index"]
        e = ep["episode_index"]
        _check(np.all(col["episode_index"][a:b] == e), f"rows {a}..{b} are not all episode {e}")
        fi = col["frame_index"][a:b]
        _check(np.array_equal(fi, np.arange(b - a)), f"episode {e}: frame_index is not 0..{b - a - 1}")
        want = (fi / fps).astype(np.float32)
        ts = col["timestamp"][a:b]
        _check(ts.dtype == np.float32 and np.array_equal(ts, want),
               f"episode {e}: timestamp != float32(frame_index / fps), e.g. {ts[:3]} vs {want[:3]}")
        task_rows = {int(t) for t in col["task_index"][a:b]}
        names = {tasks.iloc[t].name for t in task_rows}
        _check(names <= set(ep["tasks"]), f"episode {e}: frame tasks {names} not in its tasks {ep['tasks']}")
    for key, ft in info["features"].items():
        if ft["dtype"] == "float32" and len(ft["shape"]) == 1 and ft["shape"] != [1]:
            values = np.stack(table.column(key).to_numpy(zero_copy_only=False))
            _check(values.shape == (n, ft["shape"][0]), f"{key}: shape {values.shape}")
            _check(np.all(np.isfinite(values)), f"{key} has NaN or inf")
    return n


def _check_video_file(path: Path, fps: int, shape: list, frames_expected: int) -> list[int]:
    """Stream-level checks; returns the keyframe frame numbers."""
    with av.open(str(path)) as c:
        _check(len(c.streams.video) == 1, f"{path}: {len(c.streams.video)} video streams")
        s = c.streams.video[0]
        _check([s.codec_context.height, s.codec_context.width, 3] == list(shape),
               f"{path}: {s.codec_context.width}x{s.codec_context.height} vs feature shape {shape}")
        _check(s.average_rate == fps or s.base_rate == fps,
               f"{path}: frame rate {s.average_rate}/{s.base_rate}, want {fps}")
        tb = s.time_base
        keyframes, pts = [], []
        for pkt in c.demux(s):
            if pkt.pts is None:
                continue
            pts.append(pkt.pts)
            if pkt.is_keyframe:
                keyframes.append(pkt.pts)
    pts.sort()
    _check(len(pts) == frames_expected, f"{path}: {len(pts)} frames, episodes say {frames_expected}")
    secs = [Fraction(p) * tb for p in pts]
    want = [Fraction(i, fps) for i in range(len(pts))]
    bad = [(i, float(a)) for i, (a, w) in enumerate(zip(secs, want)) if abs(a - w) > Fraction(1, 10**6)]
    _check(not bad, f"{path}: pts are not frame/fps from 0 (first bad: {bad[:3]})")
    return sorted(round(float(Fraction(p) * tb) * fps) for p in keyframes)


def _decode_like_lerobot(path: Path, query: float) -> tuple[float, np.ndarray]:
    """torchvision's pyav VideoReader with keyframes_only: seek to the keyframe at or before
    `query`, decode forward until a frame reaches it; return the closest frame's pts and RGB."""
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        c.seek(int(round(query / s.time_base)), backward=True, any_frame=False, stream=s)
        loaded = []
        for frame in c.decode(s):
            ts = float(frame.pts * frame.time_base)
            loaded.append((ts, frame))
            if ts >= query:
                break
    _check(loaded, f"{path}: nothing decoded after seeking to {query}")
    ts, frame = min(loaded, key=lambda t: abs(t[0] - query))
    return ts, frame.to_ndarray(format="rgb24")


def _check_videos(root: Path, info: dict, episodes: list[dict], data_ts: dict) -> dict:
    fps = info["fps"]
    video_keys = [k for k, ft in info["features"].items() if ft["dtype"] == "video"]
    files: dict[Path, list[dict]] = {}
    for key in video_keys:
        for ep in episodes:
            e = ep["episode_index"]
            for k in ("chunk_index", "file_index", "from_timestamp", "to_timestamp"):
                _check(f"videos/{key}/{k}" in ep, f"episode {e} lacks videos/{key}/{k}")
            path = root / info["video_path"].format(
                video_key=key, chunk_index=ep[f"videos/{key}/chunk_index"], file_index=ep[f"videos/{key}/file_index"])
            _check(path.is_file(), f"episode {e}: video {path} is missing (LeRobot would download it)")
            files.setdefault(path, []).append(ep | {"_key": key})
    decoded, worst = 0, 0.0
    for path, eps in files.items():
        key = eps[0]["_key"]
        frames_in_file = 0
        starts = []
        for ep in eps:
            frm, to = ep[f"videos/{key}/from_timestamp"], ep[f"videos/{key}/to_timestamp"]
            first = round(frm * fps)
            _check(abs(first / fps - frm) < TOLERANCE_S, f"{path}: from_timestamp {frm} is not a frame time")
            _check(abs((to - frm) * fps - ep["length"]) < 1e-3,
                   f"{path}: episode {ep['episode_index']} spans {frm}..{to} s for {ep['length']} frames")
            starts.append(first)
            frames_in_file = max(frames_in_file, first + ep["length"])
        keyframes = _check_video_file(path, fps, info["features"][key]["shape"], frames_in_file)
        late = [s for s in starts if s not in keyframes]
        _check(not late, f"{path}: episodes starting at frames {late} do not start on a keyframe "
               f"(keyframes {keyframes[:20]})")
        for ep in eps:
            frm = ep[f"videos/{key}/from_timestamp"]
            n = ep["length"]
            for i in sorted({0, n // 2, n - 1}):
                ts = float(data_ts[ep["dataset_from_index"] + i])  # float32 -> float, as LeRobot does
                query = frm + ts
                got, rgb = _decode_like_lerobot(path, query)
                err = abs(got - query)
                _check(err < TOLERANCE_S, f"{path}: episode {ep['episode_index']} frame {i}: query {query:.6f}s, "
                       f"closest decoded frame at {got:.6f}s (> {TOLERANCE_S}s, LeRobot's FrameTimestampError)")
                _check(round(query * fps) == round(frm * fps) + i,
                       f"{path}: torchcodec would pick frame {round(query * fps)} for episode frame {i}")
                _check(rgb.shape == tuple(info["features"][key]["shape"]), f"{path}: decoded {rgb.shape}")
                worst = max(worst, err)
                decoded += 1
    return {"video_files": len(files), "decoded_frames": decoded, "max_timestamp_error_s": worst,
            "video_keys": video_keys}


def _check_stats(root: Path, info: dict) -> bool:
    path = root / "meta" / "stats.json"
    if not path.is_file():
        return False
    stats = json.loads(path.read_text())
    for key, st in stats.items():
        _check(key in info["features"], f"stats.json has {key!r}, which is not a feature")
        ft = info["features"][key]
        for k in STATS_KEYS:
            _check(k in st, f"stats.json: {key} lacks {k}")
        _check(np.array(st["count"]).shape == (1,), f"stats.json: {key} count {st['count']} is not [n]")
        for k in STATS_KEYS:
            if k == "count":
                continue
            v = np.array(st[k], dtype=np.float64)
            _check(np.all(np.isfinite(v)), f"stats.json: {key} {k} is not finite")
            if ft["dtype"] in ("image", "video"):
                _check(v.shape == (3, 1, 1), f"stats.json: {key} {k} has shape {v.shape}, want (3, 1, 1)")
                _check(np.all((v >= 0) & (v <= 1)), f"stats.json: {key} {k} = {v.ravel()} not in [0, 1]")
            else:
                _check(v.shape == tuple(ft["shape"]), f"stats.json: {key} {k} has shape {v.shape}, want {ft['shape']}")
        _check(np.all(np.array(st["min"]) <= np.array(st["max"])), f"stats.json: {key} min > max")
    return True


def check_dataset(root) -> dict:
    """Raises AssertionError (with what is wrong and where) unless LeRobot 0.4.4 would load `root`
    and read every episode's frames; returns summary numbers."""
    root = Path(root)
    _check(root.is_dir(), f"{root} is not a directory")
    cache = tempfile.mkdtemp(prefix="lerobot_check_")
    try:
        info = _check_info(root)
        tasks = _check_tasks(root, info)
        episodes = _check_episodes(root, info, tasks, cache)
        frames = _check_data(root, info, episodes, tasks, cache)
        data = datasets.load_dataset("parquet", data_files=sorted(str(p) for p in (root / "data").glob("*/*.parquet")),
                                     split="train", cache_dir=cache)
        data_ts = data.with_format("arrow")[:].column("timestamp").to_numpy()
        video = _check_videos(root, info, episodes, data_ts)
        has_stats = _check_stats(root, info)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "episodes": info["total_episodes"],
        "frames": frames,
        "fps": info["fps"],
        "tasks": [tasks.iloc[i].name for i in range(len(tasks))],
        "episode_lengths": [ep["length"] for ep in episodes],
        "has_stats": has_stats,
        "bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
        **video,
    }


if __name__ == "__main__":
    import sys

    for arg in sys.argv[1:]:
        print(json.dumps(check_dataset(arg), indent=2))
