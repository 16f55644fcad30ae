"""The command a skip reason gives to install into the tests' Python: uv's
where ``scripts/run.sh`` made the venv (without pip), else pip."""
import sys
from pathlib import Path


def pip_install() -> str:
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        return f"{uv} pip install --python {sys.executable}"
    return f"{sys.executable} -m pip install"
