#!/usr/bin/env bash
# Makes .venv with uv in it, once: what scripts/run.sh and .ci/run install
# with. uv (pinned in requirements/constraints.txt) fetches and unpacks
# wheels in parallel (docs/benchmarks-archive.md, "A lighter cold start").
# The machine's pip puts uv into a venv made without pip (ensurepip's pip
# costs 5 s more); without it, the venv gets pip to do so.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
[ -x "$venv/bin/uv" ] && exit 0
[ -x "$venv/bin/python" ] || python3 -m venv --without-pip "$venv"
uv_pin="uv==$(sed -n 's/^uv==//p' requirements/constraints.txt)"
python3 -m pip --python "$venv/bin/python" install --quiet --disable-pip-version-check "$uv_pin" 2>/dev/null ||
  { "$venv/bin/python" -m pip --version >/dev/null 2>&1 || "$venv/bin/python" -m ensurepip --default-pip >/dev/null
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$uv_pin"; }
