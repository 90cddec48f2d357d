#!/usr/bin/env bash
# The Python package's tests: a virtualenv at python/.venv (made once, reused), the package built
# from source into it with its test and Ray extras (`pip install ./python[test,ray]`; maturin
# builds the extension into the workspace's target/ so a rebuild is incremental), then pytest.
# Each part prints how long it took. The integration tests drive target/debug/armsim (built by
# `cargo test`, which ./test.sh runs first) or $ARMSIM_BIN.
set -euo pipefail
cd "$(dirname "$0")"

part() {
  local name=$1
  shift
  echo "python/test.sh: $name"
  local start=$SECONDS
  "$@"
  echo "python/test.sh: $name took $((SECONDS - start)) s"
}

PYTHON=${PYTHON:-python3}
venv() {
  if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --upgrade pip
}

install() {
  # Cargo's output dir of the workspace, so maturin reuses what `cargo` built.
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(cd .. && pwd)/target}" \
    .venv/bin/python -m pip install -q ".[test,ray]"
}

run_pytest() {
  local rc=0
  # The pytest script, not `python -m pytest`: that would put python/ (the sources, without the
  # built extension) on sys.path ahead of the installed package.
  .venv/bin/pytest -q tests "$@" || rc=$?
  # Exit code 5 means pytest collected no tests: a broken suite, not a pass.
  if [ "$rc" -eq 5 ]; then
    echo "python/test.sh: pytest collected no tests"
    return 1
  fi
  return "$rc"
}

part "virtualenv (python/.venv)" venv
part "pip install ./python[test,ray] (builds the extension)" install
part "pytest" run_pytest "$@"
