"""A LeRobot v3.0 dataset made the way a user makes one without a headset
(`examples/python/lerobot_dataset.py`: the scripted policy drives `armsim --headless
--record-lerobot`, whose cameras render offscreen, through `armsim.connect`, and SIGTERM finishes
the dataset), then loaded by the rules LeRobot applies, with pyarrow, datasets and PyAV
(`lerobot_check.check_dataset`); and the same from the window under Xvfb."""

import json

from lerobot_check import check_dataset


def test_a_scripted_session_becomes_a_dataset_lerobot_loads(armsim_exe, tmp_path):
    from lerobot_dataset import record

    out = tmp_path / "dataset"
    # Short episodes: 150 policy steps of 8 physics steps each (5 s of sim time, 150 frames).
    outcomes, stdout, log = record(out, episodes=2, max_steps=150, armsim_bin=str(armsim_exe))
    assert len(outcomes) == 2
    assert "LeRobot dataset" in stdout and "2 episodes" in stdout, stdout
    summary = check_dataset(out)
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["robot_type"] == "arm6"
    assert summary["episodes"] == 2, summary
    # Each episode runs from its kick-off to the next reset (or the stop): its 150 policy steps,
    # plus the few frames the next reset's round trip takes. The moments between the client's
    # connect and its first reset are dropped (under a second).
    assert all(150 <= n <= 170 for n in summary["episode_lengths"]), summary["episode_lengths"]
    assert summary["tasks"] == ["Pick up each cube and place it in the goal zone."], summary
    names = info["features"]["observation.state"]["names"]
    assert names[0] == "shoulder_pan.pos" and len(names) == len(info["features"]["action"]["names"])
    # Headless, --record-lerobot renders the scene's cameras offscreen (lavapipe, no display).
    assert sorted(summary["video_keys"]) == ["observation.images.front", "observation.images.wrist"]
    # In sync mode every row's step ends a frame, so every row has its own image.
    assert "recording a LeRobot v3.0 dataset" in log, log[-3000:]
    assert "taken from the step before" not in log, log[-3000:]
    assert_images_show_the_scene(out, tmp_path)


def test_a_teleop_session_becomes_two_episodes(armsim_exe, tmp_path):
    """A scripted TeleSpace revA session (the WebSocket teleop a headset speaks,
    `examples/python/teleop_client.py`) against `armsim --headless --record-lerobot`: start, move
    the hand, reset, twice; SIGTERM; two episodes that load by LeRobot's rules, whose actions
    follow the hand and whose images show the scene."""
    import os
    import signal
    import subprocess

    import numpy as np
    import pyarrow.parquet as pq
    from lerobot_dataset import free_ports, wait_port
    from teleop_client import Session
    from websockets.sync.client import connect

    out = tmp_path / "dataset"
    (port,) = free_ports(1)
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    log = open(tmp_path / "armsim.log", "w")
    proc = subprocess.Popen(
        [str(armsim_exe), "--headless", "--no-agent-ports", "--no-xr", "--teleop-port", str(port),
         "--record-lerobot", str(out)],
        env=dict(env, RUST_LOG="info"), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(port, proc)
        with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            s = Session(ws)
            s.send("ui_cmd", {"command": "CONNECT", "requested_scene_config_id": "default_scene"})
            s.session_id = s.wait("CONNECTED")["session_id"]
            for _ in range(2):
                s.send("ui_cmd", {"command": "START"})
                s.wait("STARTED")
                # 1.5 s of sim time per target, by the state frames' clock: a loaded machine
                # runs below real time, and wall seconds would record less than the episode
                # needs.
                for target in ([0.5, 0.1, 1.2], [0.4, -0.2, 1.15]):
                    s.move(target, sim_secs=1.5)
                s.send("ui_cmd", {"command": "RESET"})
                s.wait("RESET_DONE")
            s.send("ui_cmd", {"command": "DISCONNECT"})
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        log.close()
    text = (tmp_path / "armsim.log").read_text(errors="replace")
    assert code == 0 and "LeRobot dataset written" in text, (code, text[-3000:])
    summary = check_dataset(out)
    assert summary["episodes"] == 2, summary
    # 3 s of sim time of hand motion each: 90 rows at 30 fps, plus the start and reset round
    # trips; never below the 1 s an episode needs.
    assert all(30 <= n <= 200 for n in summary["episode_lengths"]), summary["episode_lengths"]
    assert sorted(summary["video_keys"]) == ["observation.images.front", "observation.images.wrist"]
    # Every data file (one per episode).
    data = pq.read_table(out / "data").to_pydict()
    actions = np.array(data["action"], dtype=float)
    episodes = np.array(data["episode_index"])
    for k in (0, 1):
        swing = np.ptp(actions[episodes == k], axis=0).max()
        assert swing > 0.1, f"episode {k}: the joint targets barely moved ({swing:.3f} rad)"
    assert_images_show_the_scene(out, tmp_path)


def image_save(img, path):
    """Keeps a decoded frame for a person to look at (PNG through PyAV, no extra package)."""
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream("png")
        s.width, s.height, s.pix_fmt = img.shape[1], img.shape[0], "rgb24"
        for packet in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            c.mux(packet)


def _xvfb():
    """A fresh Xvfb server of this test's own, ready for clients; the process and its display.

    Xvfb picks a free display itself and writes its number to the pipe (`-displayfd`) only once
    it takes clients, so no guessed number can collide with another server, and no check of the
    socket file can pass before the server listens."""
    import select
    import shutil
    import subprocess

    exe = shutil.which("Xvfb")
    assert exe, "Xvfb is needed for the window's cameras (Debian: apt-get install xvfb)"
    proc = subprocess.Popen([exe, "-displayfd", "1", "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp", "-noreset"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    number = proc.stdout.readline().decode().strip() if ready else ""
    if not number.isdigit():
        _stop_xvfb(proc)
        raise RuntimeError("no display for the window test: Xvfb named no display within 60 s "
                           f"(exit {proc.returncode}); not an armsim failure")
    return proc, f":{number}"


def _stop_xvfb(proc):
    """SIGTERM, so the server removes its socket and lock files; SIGKILL if it lingers."""
    import subprocess

    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _ignore_hangup_and_interrupt():
    import signal

    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_window_records_its_cameras_as_video(armsim_exe, tmp_path):
    """The window (under Xvfb, Mesa's software Vulkan) records the default scene's front and
    wrist cameras while the scripted policy drives it through `armsim.connect` for 2 episodes;
    the videos load by LeRobot's rules and show the table and the three cubes."""
    import os
    import signal
    import subprocess

    import av
    import numpy as np
    import armsim
    from lerobot_dataset import drive, free_ports, wait_port

    xvfb, display = _xvfb()
    out = tmp_path / "dataset"
    agent, monitor = free_ports(2)
    log = open(tmp_path / "armsim.log", "w")
    proc = subprocess.Popen(
        [str(armsim_exe), "--no-teleop", "--xr-port", "0", "--agent-port", str(agent), "--monitor-port",
         str(monitor), "--render-profile", "lite", "--record-lerobot", str(out)],
        env=dict(os.environ, DISPLAY=display, RUST_LOG="info"), stdout=log, stderr=subprocess.STDOUT,
        # As under `nohup` or in a script's background job: SIGHUP and SIGINT arrive ignored. Bevy's
        # own handler then refused to install and SIGTERM killed the window with its dataset.
        preexec_fn=_ignore_hangup_and_interrupt)
    try:
        wait_port(agent, proc)
        wait_port(monitor, proc)
        outcomes = drive(armsim, f"127.0.0.1:{agent}", f"127.0.0.1:{monitor}", 2, 120)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        _stop_xvfb(xvfb)
        log.close()
    text = (tmp_path / "armsim.log").read_text(errors="replace")
    assert "LeRobot dataset written" in text, text[-3000:]
    assert code == 0, (code, text[-3000:])
    assert len(outcomes) == 2
    summary = check_dataset(out)
    assert summary["episodes"] == 2, summary
    assert sorted(summary["video_keys"]) == ["observation.images.front", "observation.images.wrist"]
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["features"]["observation.images.front"]["shape"] == [256, 256, 3]
    assert_images_show_the_scene(out, tmp_path)


def assert_images_show_the_scene(out, tmp_path):
    """Frame 60 of the front camera shows the wooden table and the three cubes, and the wrist
    camera looks down at the table (2 s in: the first images may lack meshes whose shaders still
    compile). The frames are kept as PNGs beside the test's files."""
    import av

    def frame(key, n=60):
        """Frame n of the recording (2 s in: the first images may lack meshes whose shaders
        still compile), counted across the episodes' mp4s (one per episode)."""
        k = 0
        for path in sorted((out / "videos" / key).glob("chunk-*/file-*.mp4")):
            with av.open(str(path)) as c:
                for f in c.decode(video=0):
                    if k == n:
                        img = f.to_ndarray(format="rgb24")
                        image_save(img, tmp_path / f"{key}.png")
                        return img.astype(int)
                    k += 1
        raise AssertionError(f"{key}'s videos have under {n + 1} frames")

    def count(img, pred):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        return int(pred(r, g, b).sum())

    front = frame("observation.images.front")
    red = count(front, lambda r, g, b: (r > 120) & (g < 70) & (b < 70))
    green = count(front, lambda r, g, b: (g > 100) & (r < 80) & (b < 90))
    blue = count(front, lambda r, g, b: (b > 120) & (r < 70) & (g < 90))
    wood = count(front, lambda r, g, b: (r > 100) & (r > g + 20) & (g > b + 10))
    assert min(red, green, blue) > 20, (red, green, blue)
    assert wood > 0.15 * 256 * 256, wood
    wrist = frame("observation.images.wrist")
    assert count(wrist, lambda r, g, b: (r > 100) & (r > g + 20) & (g > b + 10)) > 0.2 * 256 * 256
