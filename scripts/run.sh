#!/usr/bin/env bash
# One entry point for a fresh machine: makes .venv (once), installs into it
# what the command needs (the pinned requirements, then the package itself,
# whose messages CMake builds), again only when something it depends on
# changed, then runs
#   demo    the package's main job on the embedded PUMA (the light install:
#           numpy, numba, urdf-parser-py, scipy, rclpy and messages)
#   replay  robot_dynamics_replay (adds matplotlib and Dask)
#   certify robot_dynamics_certify, K_c certificates (the same)
#   test    the test suite (adds the oracles: Pinocchio, example-robot-data, ...)
#   bench   the benchmarks in bench/ (adds MuJoCo)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
cmd=${1:-test}
shift || true
case "$cmd" in
  demo)   sets="build runtime ros" ;;
  replay|certify) sets="build runtime ros replay" ;;
  test)   sets="build runtime ros replay test" ;;
  bench)  sets="build runtime ros replay test bench" ;;
  *) echo "usage: scripts/run.sh demo|replay|certify|test|bench [args]" >&2; exit 2 ;;
esac
# The requirements go in with uv (pinned in constraints.txt), which fetches
# and unpacks wheels in parallel: 18 s instead of pip's 47 s for the demo's
# (docs/benchmarks.md, "The newcomer's first hour"). pip stays for the
# package itself, whose setup.py build runs CMake.
if [ ! -x "$venv/bin/uv" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "uv==$(sed -n 's/^uv==//p' requirements/constraints.txt)"
fi
uv_install() { "$venv/bin/uv" pip install --quiet --compile-bytecode --python "$venv/bin/python" "$@"; }
mkdir -p "$venv/.installed"
# a stamp per requirements file: a later command installs only what it adds
for set in $sets; do
  want=$(cat requirements/constraints.txt "requirements/$set.txt" | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$venv/.installed/$set" 2>/dev/null)" != "$want" ]; then
    uv_install -c requirements/constraints.txt -r "requirements/$set.txt"
    echo "$want" > "$venv/.installed/$set"
  fi
done
# The package: a normal install (the generated robot_dynamics_ros.msg is not
# reachable through an editable one), redone when its sources change; CMake
# keeps its build folder in build/, so a rebuild takes seconds.
want=$(cat setup.py pyproject.toml CMakeLists.txt package.xml msg/*.msg srv/*.srv launch/* config/* \
  $(find robot_dynamics_ros -name '*.py' | sort) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.installed/package" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation .
  echo "$want" > "$venv/.installed/package"
fi
export PATH="$PWD/$venv/bin:$PATH"
# numba's cache notices a change to a kernel's own file only, not to the files
# of the functions it calls: key the cache by the sources of dynamics/
export NUMBA_CACHE_DIR="$PWD/$venv/numba-cache/$(find robot_dynamics_ros/dynamics -name '*.py' | sort | xargs cat | sha256sum | cut -c1-16)"
case "$cmd" in
  demo)   exec "$venv/bin/python" -m robot_dynamics_ros.demo "$@" ;;
  replay) exec "$venv/bin/python" -m robot_dynamics_ros.replay "$@" ;;
  certify) exec "$venv/bin/python" -m robot_dynamics_ros.certify.cli "$@" ;;
  # with a file or folder first (scripts/run.sh test test/test_node.py), only that
  test)   if [ $# -gt 0 ] && [ -e "$1" ]; then exec "$venv/bin/python" -m pytest -q "$@"; fi
          exec "$venv/bin/python" -m pytest -q test "$@" ;;
  bench)  for b in bench/bench_*.py; do "$venv/bin/python" "$b" "$@"; done ;;
esac
