#!/usr/bin/env bash
# One entry point for a fresh machine: makes .venv (once), installs into it
# what the command needs (the pinned requirements, then the package itself,
# whose messages build_messages.py builds), again only when something it depends on
# changed, then runs
#   demo    the package's main job on the embedded PUMA (the light install:
#           numpy, numba, urdf-parser-py, scipy, rosbags, rclpy and messages)
#   replay  robot_dynamics_replay (adds matplotlib and Dask)
#   certify robot_dynamics_certify, K_c certificates (the same)
#   test    the test suite (adds the oracles: Pinocchio, example-robot-data, ...);
#           test --quick: all but the tests marked colcon or slow (pytest.ini)
#   bench   the benchmarks in bench/ (adds MuJoCo)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
cmd=${1:-test}
shift || true
case "$cmd" in
  demo)   sets="dynamics build runtime ros" ;;
  replay|certify) sets="dynamics build runtime ros replay" ;;
  test)   sets="dynamics build runtime ros replay test" ;;
  bench)  sets="dynamics build runtime ros replay test bench" ;;
  *) echo "usage: scripts/run.sh demo|replay|certify|test|bench [args]" >&2; exit 2 ;;
esac
# The requirements go in with uv, in a venv made once (scripts/venv.sh).
bash scripts/venv.sh
# Bytecode is written as modules are first imported, as Python does by
# default (uv's --compile-bytecode would compile all of site-packages).
unset PYTHONDONTWRITEBYTECODE
mkdir -p "$venv/.installed"
# Installs the requirement files named whose stamp (a hash of the file and the
# constraints) is not in .venv/.installed, in one uv call: a later command
# installs only what it adds.
install_sets() {
  local set want files=() done=()
  for set in "$@"; do
    want=$(cat requirements/constraints.txt "requirements/$set.txt" | sha256sum | cut -d' ' -f1)
    if [ "$(cat "$venv/.installed/$set" 2>/dev/null)" != "$want" ]; then
      files+=(-r "requirements/$set.txt")
      done+=("$set=$want")
    fi
  done
  [ ${#files[@]} -gt 0 ] || return 0
  "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" -c requirements/constraints.txt "${files[@]}"
  for set in "${done[@]}"; do echo "${set#*=}" > "$venv/.installed/${set%%=*}"; done
}
install_sets dynamics
# The package: a normal install (the generated robot_dynamics_ros.msg is not
# reachable through an editable one), redone when its sources change; the
# compiled messages stay in build/ until the interfaces change.
want=$(cat setup.py build_messages.py pyproject.toml package.xml msg/*.msg srv/*.srv \
  $(find launch config robot_dynamics_ros -type f ! -path '*/__pycache__/*' ! -name '*.py[co]' | sort) \
  | sha256sum | cut -d' ' -f1)
stale=$([ "$(cat "$venv/.installed/package" 2>/dev/null)" != "$want" ] && echo yes || true)
# numba compiles from this checkout while the rest installs and the messages
# build, and the installed copy then gets a copy of the kernels (below): for
# the demo, which runs from here, its own kernels (demo.puma.compile_kernels,
# in two processes) when the package changed; for the other commands, what an
# installed node's first output runs (dynamics.precompile), unless the
# installed copy already has it for these sources (.installed/kernels; a demo
# before them installed the package but compiled only its own kernels). The
# build compiles no kernels of its own.
compile= compiling= build=(env)  # build: what runs the package's build
if [ "$cmd" = demo ]; then
  [ -z "$stale" ] || compile=robot_dynamics_ros.demo.puma
elif [ "$(cat "$venv/.installed/kernels" 2>/dev/null)" != "$want" ]; then
  compile=robot_dynamics_ros.dynamics.precompile
fi
if [ -n "$compile" ]; then
  PYTHONPATH="$PWD" "$venv/bin/python" -m "$compile" &
  compiling=$! build=(env ROBOT_DYNAMICS_PRECOMPILE=0 nice -n 10)
fi
install_sets $sets
if [ -n "$stale" ]; then
  "${build[@]}" "$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --no-deps --no-build-isolation \
    --reinstall-package robot_dynamics_ros .
  echo "$want" > "$venv/.installed/package"
fi
if [ -n "$compiling" ]; then
  # if the compile failed, an installed node's first start compiles: not an error
  wait "$compiling" && compiled=yes || compiled=
  # The installed copy's kernel cache gets this checkout's kernels of the
  # same sources, added to any it has; the kernels of sources no longer
  # installed go. Without them an installed node's first start compiles.
  "$venv/bin/python" -I - "$PWD" <<'EOF' || compiled=
import shutil, sys
from pathlib import Path
import robot_dynamics_ros.dynamics  # the installed copy (-I: not this checkout)
from robot_dynamics_ros.dynamics.kernel_cache import INSTALLED, KernelCacheLocator
folder = KernelCacheLocator.folder  # None when numba's compiler is off
if folder is not None and folder.parent == INSTALLED:
    source = Path(sys.argv[1], "robot_dynamics_ros", "dynamics", "__kernel_cache__", folder.name)
    if source.is_dir():
        shutil.copytree(source, folder, dirs_exist_ok=True)
    for other in INSTALLED.iterdir():
        if other != folder:
            shutil.rmtree(other, ignore_errors=True)
EOF
  [ -z "$compiled" ] || [ "$cmd" = demo ] || echo "$want" > "$venv/.installed/kernels"
  [ -n "$compiled" ] || echo "run.sh: the installed copy's kernels were not all made" >&2
fi
export PATH="$PWD/$venv/bin:$PATH"
case "$cmd" in
  # from this checkout, whose kernels the compile above cached (the package
  # finds its generated messages in the installed copy, __init__.py)
  demo)   export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
          exec "$venv/bin/python" -m robot_dynamics_ros.demo.cli "$@" ;;
  replay) exec "$venv/bin/python" -m robot_dynamics_ros.replay.cli "$@" ;;
  certify) exec "$venv/bin/python" -m robot_dynamics_ros.certify.cli "$@" ;;
  # with a file or folder first (scripts/run.sh test test/node), only that
  # the files spread over both cores (-n 2; a module's fixtures stay in one process)
  test)   options=(-q -n 2 --dist loadfile)
          if [ "${1:-}" = --quick ]; then shift; options+=(-m "not colcon and not slow"); fi
          if [ $# -gt 0 ] && [ -e "$1" ]; then exec "$venv/bin/python" -m pytest "${options[@]}" "$@"; fi
          exec "$venv/bin/python" -m pytest "${options[@]}" test "$@" ;;
  bench)  for b in bench/bench_*.py; do "$venv/bin/python" "$b" "$@"; done ;;
esac
