"""The replay, paused at a named point until SIGTERM arrives: lets a test end
it at a known stage instead of after a guessed delay (a delay that a faster
machine outruns).

    python replay_paused.py POINT MARKER REPLAY_ARGUMENTS...

At POINT the replay creates the file MARKER and waits up to 60 s for SIGTERM,
then goes on. POINT is one of:

- ``recording``: the staged bag folder exists but is not yet recorded for
  removal (SIGTERM must be held off until it is);
- ``writing``: the first chunk of the bag and the CSV is written;
- ``plot``: the bag and the CSV are complete, the plot is being written;
- ``commit``: every output is staged, none moved into place yet.
"""

import sys
import tempfile
import time
import types
from pathlib import Path

# The repository's package, as `python -m robot_dynamics_ros.replay.cli` run from it imports.
sys.path.insert(0, str(Path(__file__).absolute().parents[2]))
from robot_dynamics_ros.replay import cli as replay, run as replay_run, staging as replay_staging  # noqa: E402


def pause():
    MARKER.touch()
    deadline = time.monotonic() + 60
    # SIGTERM either raises here, or (held off) marks itself pending.
    while time.monotonic() < deadline and not replay_staging.TERMINATION.pending:
        time.sleep(0.005)


def paused_after(function):
    def wrapped(*args, **kwargs):
        result = function(*args, **kwargs)
        pause()
        return result
    return wrapped


def paused_before(function):
    def wrapped(*args, **kwargs):
        pause()
        return function(*args, **kwargs)
    return wrapped


if __name__ == "__main__":
    point, MARKER, argv = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    if point == "recording":
        replay_staging.tempfile = types.SimpleNamespace(mkdtemp=paused_after(tempfile.mkdtemp),
                                                        mkstemp=tempfile.mkstemp)
    elif point == "writing":
        replay_run.OutputStreams.write = paused_after(replay_run.OutputStreams.write)
    elif point == "plot":
        replay_run.PlotSeries.save = paused_before(replay_run.PlotSeries.save)
    elif point == "commit":
        replay_staging.StagedOutputs.commit = paused_before(replay_staging.StagedOutputs.commit)
    else:
        sys.exit(f"unknown point {point!r}")
    sys.exit(replay.main(argv))
