"""examples/python/ray_collect.py on a local Ray with 2 actors: the episodes it writes load back
as MetaSim v2 trajectories of scripted successes."""

import subprocess
import sys

import pytest

import armsim
from conftest import EXAMPLES

pytest.importorskip("ray", reason="Ray is the [ray] extra; python/test.sh installs it")


def test_ray_collect_two_actors(tmp_path):
    out = tmp_path / "episodes"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "ray_collect.py"), "--actors", "2", "--episodes", "1",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        # Ray puts the driver's working directory on its workers' path; python/ would shadow the
        # installed package with its sources.
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2/2 Success" in proc.stdout, proc.stdout
    files = sorted(out.glob("*.pkl.gz"))
    assert [f.name for f in files] == ["actor000-w0-ep00000.pkl.gz", "actor001-w0-ep00000.pkl.gz"]
    assert not list(out.glob("*.journal*")), "no half-written episode is left behind"
    for f in files:
        demos = armsim.load_trajectory(f)["arm6"]
        assert len(demos) == 1
        demo = demos[0]
        assert len(demo["actions"]) > 100
        assert len(demo["states"]) == len(demo["actions"]) // 8
        # The last state has every cube in the goal zone (centre 0.45, 0.3; half size 0.08).
        last = demo["states"][-1]
        for cube in ("cube_red", "cube_green", "cube_blue"):
            x, y, _ = last[cube]["pos"]
            assert abs(x - 0.45) <= 0.08 and abs(y - 0.3) <= 0.08, (f.name, cube, last[cube])
