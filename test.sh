#!/usr/bin/env bash
# The one test command (see README): every Rust test, then the browser page's tests (web/), then
# the Python package's tests (python/). Before it builds anything it checks the system packages
# those suites need, and stops naming the missing ones. Each suite prints the load average it
# starts under and how long it took; the first failing suite stops the run with its exit code.
set -euo pipefail
cd "$(dirname "$0")"

# What the suites need beyond the Rust toolchain, found by command or file (no dpkg needed), so
# that a fresh machine learns it in a second rather than as a failed test after a 20-minute build:
# - the window tests (tests/gui*.rs): Xvfb, xdotool, Mesa's software Vulkan driver (lavapipe)
#   with the Vulkan loader, and the X client libraries winit loads at run time; the headless
#   camera tests need the Vulkan driver too;
# - web/test.sh: node and npm (npm ci), and Debian's chromium ($CHROMIUM, default
#   /usr/bin/chromium);
# - python/test.sh: python3 ($PYTHON) with venv and ensurepip (Debian's python3-venv);
# - the exposure and ROS 2 tests: unshare (util-linux) and ip (iproute2) for their private
#   network namespaces; the ROS 2 interop test builds a Fast DDS subscriber with fastddsgen, g++
#   and Debian's Fast DDS headers (g++ also builds OpenH264's bundled C++ for armsim-lerobot).
# .ci/run installs the same packages on a fresh Debian machine.
missing_what=()
missing_packages=()
need() { # need PACKAGE WHAT TEST...: PACKAGE provides WHAT, present when TEST succeeds
  local package=$1 what=$2
  shift 2
  if ! "$@" >/dev/null 2>&1; then
    missing_what+=("$what ($package)")
    missing_packages+=("$package")
  fi
}
ld_cache=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null || true)
has_lib() { # has_lib FILE: a shared library the dynamic loader finds
  [[ $ld_cache == *"$1 ("* ]] && return 0
  compgen -G "/usr/lib/*/$1" || compgen -G "/lib/*/$1" || [ -e "/usr/lib/$1" ] ||
    [ -e "/usr/lib64/$1" ]
}
lavapipe() { # Mesa's software Vulkan driver: its ICD file
  compgen -G '/usr/share/vulkan/icd.d/lvp*.json' || compgen -G '/etc/vulkan/icd.d/lvp*.json'
}
has_ip() { command -v ip || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ]; }

precheck() {
  need xvfb "Xvfb" command -v Xvfb
  need xdotool "xdotool" command -v xdotool
  need mesa-vulkan-drivers "the Vulkan driver lavapipe" lavapipe
  need libvulkan1 "the Vulkan loader libvulkan.so.1" has_lib libvulkan.so.1
  need libx11-6 "libX11" has_lib libX11.so.6
  need libx11-xcb1 "libX11-xcb" has_lib libX11-xcb.so.1
  need libxcursor1 "libXcursor" has_lib libXcursor.so.1
  need libxrandr2 "libXrandr" has_lib libXrandr.so.2
  need libxi6 "libXi" has_lib libXi.so.6
  need libxkbcommon-x11-0 "libxkbcommon-x11" has_lib libxkbcommon-x11.so.0
  need chromium "chromium" test -x "${CHROMIUM:-/usr/bin/chromium}"
  need nodejs "node" command -v node
  need npm "npm" command -v npm
  need python3 "python3" command -v "${PYTHON:-python3}"
  need python3-venv "python3's venv and ensurepip" "${PYTHON:-python3}" -c 'import ensurepip, venv'
  need g++ "g++" command -v g++
  need util-linux "unshare" command -v unshare
  need iproute2 "ip" has_ip
  need fastddsgen "fastddsgen" command -v fastddsgen
  need libfastrtps-dev "the Fast DDS headers" \
    test -e /usr/include/fastdds/dds/domain/DomainParticipant.hpp
  need libfastcdr-dev "the Fast CDR headers" test -d /usr/include/fastcdr
  if ((${#missing_packages[@]})); then
    local what sudo=""
    printf -v what '%s, ' "${missing_what[@]}"
    ((EUID == 0)) || sudo="sudo "
    echo "test.sh: missing system packages: ${what%, }; install them with:" \
      "${sudo}apt-get install -y ${missing_packages[*]}" >&2
    exit 1
  fi
}

suite() {
  local name=$1
  shift
  echo "test.sh: $name (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  local start=$SECONDS
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}

precheck
suite "rust (cargo test)" cargo test
# The browser and Python suites live beside their code, each with its own test.sh that sets up
# what it needs (node_modules from the lockfile, a virtualenv) and runs its tests.
for dir in web python; do
  if [ -x "$dir/test.sh" ]; then
    suite "$dir ($dir/test.sh)" "$dir/test.sh"
  fi
done
