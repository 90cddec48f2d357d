#!/usr/bin/env bash
# The one test command (see README): every Rust test, then the browser page's tests (web/), then
# the Python package's tests (python/). Each suite prints the load average it starts under and
# how long it took; the first failing suite stops the run with its exit code.
set -euo pipefail
cd "$(dirname "$0")"

suite() {
  local name=$1
  shift
  echo "test.sh: $name (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  local start=$SECONDS
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}

suite "rust (cargo test)" cargo test
# The browser and Python suites live beside their code, each with its own test.sh that sets up
# what it needs (node_modules from the lockfile, a virtualenv) and runs its tests.
for dir in web python; do
  if [ -x "$dir/test.sh" ]; then
    suite "$dir ($dir/test.sh)" "$dir/test.sh"
  fi
done
