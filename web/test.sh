#!/usr/bin/env bash
# The headset page's tests: node's test runner on the page's pure logic (mapping, clutch, jump
# guard, envelopes, heartbeats, latency, mesh buffers), then the browser tests: web/test/browser.mjs
# (a headless armsim, Debian's chromium through playwright-core, IWER as the Quest 3) and
# web/test/browser-robots.mjs (real robots drawn from their meshes: the Menagerie Panda, the URDF
# Panda, the SO-101 as MJCF and URDF). node_modules comes from the committed lockfile (npm ci)
# when it is missing or older than the lockfile.
# ARMSIM_BIN overrides the binary (default: target/debug/armsim, which `cargo test` builds).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null; then
  echo "web/test.sh: node is not installed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  start=$SECONDS
  npm ci --no-audit --no-fund --loglevel=error
  echo "web/test.sh: npm ci took $((SECONDS - start)) s"
fi

start=$SECONDS
node --test test/*.test.js
echo "web/test.sh: node unit tests took $((SECONDS - start)) s"

bin=${ARMSIM_BIN:-../target/debug/armsim}
if [ ! -x "$bin" ]; then
  echo "web/test.sh: $bin is missing; build it first (cargo build, or cargo test)" >&2
  exit 1
fi
start=$SECONDS
ARMSIM_BIN=$(realpath "$bin") node test/browser.mjs
echo "web/test.sh: browser test took $((SECONDS - start)) s"
# Real robots drawn from their meshes: the Pandas and SO-101s (scripts/robot-fixtures caches them).
start=$SECONDS
ARMSIM_BIN=$(realpath "$bin") node test/browser-robots.mjs
echo "web/test.sh: robots browser test took $((SECONDS - start)) s"
