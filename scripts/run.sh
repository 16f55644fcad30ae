#!/usr/bin/env bash
# One entry point for a fresh machine: makes .venv (once), installs the pinned
# requirements into it (again only when a requirements file changed), then runs
#   demo   the package's main job on the embedded PUMA
#   test   the full test suite
#   bench  the benchmarks in bench/
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.requirements.sha"
want=$(cat requirements/*.txt setup.py | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet -c requirements/constraints.txt \
    -r requirements/build.txt -r requirements/runtime.txt -r requirements/ros.txt -r requirements/test.txt \
    -r requirements/bench.txt
  "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi
export PATH="$PWD/$venv/bin:$PATH"
# numba's cache notices a change to a kernel's own file only, not to the files
# of the functions it calls: key the cache by the sources of dynamics/
export NUMBA_CACHE_DIR="$PWD/$venv/numba-cache/$(cat robot_dynamics_ros/dynamics/*.py | sha256sum | cut -c1-16)"
cmd=${1:-test}
shift || true
case "$cmd" in
  demo)  exec "$venv/bin/python" -m robot_dynamics_ros.demo "$@" ;;
  test)  exec "$venv/bin/python" -m pytest -q test "$@" ;;
  bench) for b in bench/bench_*.py; do "$venv/bin/python" "$b" "$@"; done ;;
  *) echo "usage: scripts/run.sh demo|test|bench [args]" >&2; exit 2 ;;
esac
