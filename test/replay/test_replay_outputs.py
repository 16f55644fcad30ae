"""The replay's own failures outside the bag reader: one error line, exit 1, nothing left.

Output paths that cannot be written, outputs that collide, URDF paths that
are not regular files, payloads beyond the limits, a replay that loses a race
for its output, and SIGTERM: each must end with ``robot_dynamics_replay:
error: ...`` (no traceback) and leave the file system as it was.
"""
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robot_dynamics_ros.replay.staging import StagedOutputs
from robot_dynamics_ros.replay.cli import main as replay_main
from test_replay import HAND_PAYLOAD

REPO = Path(__file__).absolute().parents[2]


def snapshot(*folders):
    """Every path under ``folders`` (hidden ones included) with its kind and content."""
    found = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for name in dirs + files:
                path = os.path.join(root, name)
                found[path] = (os.readlink(path) if os.path.islink(path)
                               else open(path, "rb").read() if os.path.isfile(path) else "dir")
    return found


def fails_cleanly(capsys, argv, *needles):
    rc = replay_main([str(a) for a in argv] + ["--quiet", "--kc-time-budget", "0"])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.startswith("robot_dynamics_replay: error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def test_dangling_symlink_output(short_bag, tmp_path, capsys):
    (tmp_path / "out").symlink_to(tmp_path / "nowhere")
    before = snapshot(tmp_path)
    fails_cleanly(capsys, [short_bag, tmp_path / "out", "--csv", tmp_path / "t.csv",
                           "--plot", tmp_path / "p.png"], "exists already")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_two_outputs_on_one_path(short_bag, tmp_path, capsys, option):
    target = tmp_path / "out.png"
    fails_cleanly(capsys, [short_bag, target, option, target], "same file")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("where", ["missing-parent", "parent-is-a-file", "proc"])
@pytest.mark.parametrize("which", ["output", "csv", "plot"])
def test_unwritable_output_folder(short_bag, tmp_path, capsys, where, which):
    (tmp_path / "file").write_text("x")
    bad = {"missing-parent": tmp_path / "missing" / "x.png",
           "parent-is-a-file": tmp_path / "file" / "x.png",
           "proc": Path("/proc/x.png")}[where]
    paths = {"output": tmp_path / "out", "csv": tmp_path / "t.csv", "plot": tmp_path / "p.png"}
    paths[which] = bad
    before = snapshot(tmp_path)
    fails_cleanly(capsys, [short_bag, paths["output"], "--csv", paths["csv"], "--plot", paths["plot"]],
                  str(bad.parent) if where != "proc" else "x.png")
    assert snapshot(tmp_path) == before


def replay_process(*argv, preexec=None):
    return subprocess.Popen([sys.executable, "-m", "robot_dynamics_ros.replay.cli", *map(str, argv), "--quiet",
                             "--kc-time-budget", "0"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec)


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_full_file_system(short_bag, tmp_path, storage):
    """A file size limit makes every write past 64 kB fail as a full disk would."""
    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    out = tmp_path / "out"
    process = replay_process(short_bag, out, "--storage", storage, "--csv", out.with_suffix(".csv"),
                             preexec=small_files)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1, err
    assert err.startswith("robot_dynamics_replay: error: cannot write the outputs") and "Traceback" not in err
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_urdf_that_is_not_a_regular_file(short_bag, tmp_path, kind):
    urdf = {"fifo": tmp_path / "robot.urdf", "dev-zero": Path("/dev/zero"), "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(urdf)
    process = replay_process(short_bag, tmp_path / "out", "--urdf", urdf)
    try:
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 1 and "not a regular file" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("indices", [(1,), (2,), (5, 8, 10)], ids=["mass", "com", "inertia"])
def test_payload_beyond_the_limits(short_bag, tmp_path, capsys, indices):
    link, mass, com, six = HAND_PAYLOAD
    payload = [link, mass, *com, *six]
    for index in indices:
        payload[index] = "1e200"
    fails_cleanly(capsys, [short_bag, tmp_path / "out", "--payload", *payload], link)
    assert os.listdir(tmp_path) == []


def test_losing_the_race_for_the_output_leaves_the_winner_alone(short_bag, tmp_path, capsys, monkeypatch):
    """Another replay creates the same outputs while this one runs: this one
    must fail without touching them (it used to replace the winner's CSV and
    then fail with ENOTEMPTY on the bag)."""
    out, csv = tmp_path / "out", tmp_path / "t.csv"
    commit = StagedOutputs.commit

    def winner_first(staged):
        csv.write_text("the winner's table")
        out.mkdir()
        (out / "metadata.yaml").write_text("the winner's bag")
        commit(staged)

    monkeypatch.setattr(StagedOutputs, "commit", winner_first)
    before_race = {csv: "the winner's table", out / "metadata.yaml": "the winner's bag"}
    fails_cleanly(capsys, [short_bag, out, "--csv", csv], "not overwriting")
    assert {p: p.read_text() for p in before_race} == before_race
    assert sorted(os.listdir(tmp_path)) == ["out", "t.csv"] and os.listdir(out) == ["metadata.yaml"]


@pytest.mark.parametrize("point", ["recording", "writing", "plot", "commit"])
@pytest.mark.slow
def test_sigterm_midway_leaves_nothing(short_bag, tmp_path, point):
    """SIGTERM at each stage of writing the outputs (test/replay_paused.py
    holds the replay there): while the first staged folder exists but is not
    yet recorded for removal, while the bag and CSV are written, while the
    plot is written, and just before the outputs move into place."""
    outputs, marker = tmp_path / "outputs", tmp_path / "paused"
    outputs.mkdir()
    process = subprocess.Popen(
        [sys.executable, str(REPO / "test" / "support" / "replay_paused.py"), point, str(marker), str(short_bag),
         str(outputs / "out"), "--csv", str(outputs / "t.csv"), "--plot", str(outputs / "p.png"),
         "--quiet", "--kc-time-budget", "0"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline, \
                f"the replay never reached {point}: {process.communicate()[1]}"
            time.sleep(0.005)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "terminated" in err and "Traceback" not in err, err
    assert os.listdir(outputs) == []
