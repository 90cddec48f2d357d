"""Cameras (MetaSim's CameraState): poses and intrinsics in `Sim.state()`, the in-process Sim's
clear refusal to give images, and `armsim.connect(...).camera(name)` / `.cameras()` against a
real `armsim --headless` (no renderer: states and the reason there is no image; with
`--cameras`: a rendered image)."""

import subprocess
import time

import numpy as np
import pytest

import armsim
from armsim.remote import CameraError

FRONT_POS = np.array([1.3, -0.6, 1.5])
FRONT_TARGET = np.array([0.5, 0.0, 1.05])


def rotate(q, v):
    """Vector v rotated by the unit quaternion q = (w, x, y, z)."""
    w, u = q[0], np.asarray(q[1:], dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    return 2.0 * np.dot(u, v) * u + (w * w - np.dot(u, u)) * v + 2.0 * w * np.cross(u, v)


def check_front(pos, quat, k, width=256, height=256):
    np.testing.assert_allclose(pos, FRONT_POS, atol=1e-4)
    q = np.asarray(quat, dtype=np.float64)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-4, q
    forward = (FRONT_TARGET - FRONT_POS) / np.linalg.norm(FRONT_TARGET - FRONT_POS)
    assert np.dot(rotate(q, [1, 0, 0]), forward) > 0.99999, "+X forward looks at the target"
    assert abs(rotate(q, [0, 1, 0])[2]) < 1e-4, "+Y left is level"
    assert rotate(q, [0, 0, 1])[2] > 0, "+Z is up"
    f = (height / 2) / np.tan(np.radians(30.0))
    np.testing.assert_allclose(np.asarray(k, dtype=np.float64),
                               [[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]], atol=1e-3)


def test_state_has_the_scene_cameras():
    cams = armsim.Sim().state()["cameras"]
    assert sorted(cams) == ["front", "wrist"]
    front = cams["front"]
    check_front(front["pos"], front["quat_world"], front["intrinsics"])
    assert (front["width"], front["height"]) == (256, 256)
    assert front["has_rgb"] is False and "image_step" not in front
    # The wrist camera rides on the arm: above the table.
    assert cams["wrist"]["pos"][2] > 0.9


def test_in_process_sim_has_no_images_and_says_where_to_get_them():
    sim = armsim.Sim()
    with pytest.raises(RuntimeError, match="no render stack") as err:
        sim.camera("front")
    assert "armsim.connect" in str(err.value) and "--headless --cameras" in str(err.value)
    with pytest.raises(KeyError, match="front, wrist"):
        sim.camera("nope")


def test_remote_camera_states_and_errors(server):
    agent, monitor = server()
    local = armsim.Sim().state()["cameras"]
    with armsim.connect(agent=agent, monitor=monitor) as remote:
        cams = remote.cameras()
        assert sorted(cams) == ["front", "wrist"]
        front = cams["front"]
        check_front(front["pos"], front["quat_world"], front["intrinsics"])
        assert front["image_step"] is None and "--headless --cameras" in front["no_image"]

        cam = remote.camera("front")
        check_front(cam["pos"], cam["quat_world"], cam["intrinsics"])
        assert cam["pos"].shape == (3,) and cam["quat_world"].shape == (4,)
        assert cam["intrinsics"].shape == (3, 3)
        assert cam["rgb"] is None and cam["depth"] is None
        assert "rendered only in the window or with `--headless --cameras`" in cam["no_image"]
        assert isinstance(cam["step"], int) and cam["sim_time"] >= 0.0
        np.testing.assert_allclose(cam["quat_world"], local["front"]["quat_world"], atol=1e-5)

        with pytest.raises(CameraError, match="front, wrist"):
            remote.camera("nope")
        with pytest.raises(KeyError):
            remote.camera("nope")
        # The connection survives: the next query works.
        assert remote.camera("wrist")["name"] == "wrist"


def has_cameras_flag(exe):
    out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    return "--cameras" in out.stdout


def test_remote_camera_image_with_a_renderer(server, armsim_exe):
    """Fails (never skips) where `armsim --headless --cameras` cannot render: the Rust tests and
    the datasets need Mesa's lavapipe (`apt install mesa-vulkan-drivers`) too."""
    assert has_cameras_flag(armsim_exe), "this armsim binary has no `--headless --cameras`"
    agent, monitor = server("--cameras")
    with armsim.connect(agent=agent, monitor=monitor) as remote:
        deadline = time.monotonic() + 120
        cam = remote.camera("front")
        while cam["rgb"] is None:
            if "rendered only in the window" in (cam["no_image"] or ""):
                pytest.fail(f"--cameras runs but has no renderer: {cam['no_image']}")
            assert time.monotonic() < deadline, f"no image of camera front in 120 s: {cam['no_image']}"
            time.sleep(0.5)
            cam = remote.camera("front")
        assert cam["rgb"].shape == (256, 256, 3) and cam["rgb"].dtype == np.uint8
        assert cam["rgb"].std() > 1.0, "the image shows something"
        check_front(cam["pos"], cam["quat_world"], cam["intrinsics"])
        assert cam["depth"] is None or (cam["depth"].shape == (256, 256)
                                        and cam["depth"].dtype == np.float32)
        assert cam["no_image"] is None
        assert remote.cameras()["front"]["image_step"] >= cam["step"]
