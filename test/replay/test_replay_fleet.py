"""robot_dynamics_replay on a fleet of bags: a real Dask LocalCluster, a corrupt
bag among good ones reported while the others finish, per-bag outputs and
the summary (joint states and residuals checked against the generator's
truth, not against another replay)."""
import csv
import os
import shutil
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
pytest.importorskip("pinocchio", reason="the ground-truth bags need Pinocchio: pip install pin")
pytest.importorskip("distributed", reason="fleets run on Dask: pip install distributed")
from make_payload_bag import write_payload_bag  # noqa: E402

from robot_dynamics_ros.replay.cli import main as replay_main  # noqa: E402

# a Dask cluster replaying a fleet of bags
pytestmark = pytest.mark.slow

# 19 good bags of different lengths and a corrupt one: 20 in one command
DURATIONS = (1.0, 1.5, 2.0) * 6 + (1.0,)
CORRUPT = "run19"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """19 good bags (every third sqlite3, the others MCAP) and a corrupt one in a folder."""
    root = tmp_path_factory.mktemp("fleet") / "bags"
    root.mkdir()
    truths = {}
    for k, duration in enumerate(DURATIONS):
        name = f"run{k:02d}"
        truths[name] = write_payload_bag(root / name, robot="panda", mass=2.0, com=(0.03, 0.0, 0.05),
                                         duration=duration, rate=500.0, seed=10 + k,
                                         storage="sqlite3" if k % 3 == 1 else "mcap")
    corrupt = root / CORRUPT
    shutil.copytree(root / "run00", corrupt)
    for data in corrupt.glob("*.mcap"):
        data.write_bytes(b"\x89MCAP0\r\n" + os.urandom(512))  # a damaged file
        data.rename(corrupt / f"{CORRUPT}.mcap")
    return root, truths


def test_fleet_reports_the_corrupt_bag_and_finishes_the_others(fleet, tmp_path, capsys):
    root, truths = fleet
    out = tmp_path / "out"
    rc = replay_main([str(root), str(out), "--residuals", "--kc-time-budget", "0", "--workers", "2",
                      "--csv", "table.csv"])
    captured = capsys.readouterr()
    assert rc == 1, captured.err  # one bag failed
    assert "1 of 20 bags failed" in captured.err
    with open(out / "summary.csv") as handle:
        rows = {os.path.basename(r["bag"]): r for r in csv.DictReader(handle)}
    assert sorted(rows) == sorted([*truths, CORRUPT])
    assert rows[CORRUPT]["error"].startswith("cannot "), rows[CORRUPT]
    for name, truth in truths.items():
        row = rows[name]
        assert row["error"] == "", row
        assert int(row["joint_states"]) == truth["samples"]
        assert float(row["duration_s"]) == pytest.approx((truth["samples"] - 1) / truth["rate"], abs=0.05)
        # the model has no payload: the residuals must show the 2 kg it
        # carries. With the true model each joint's RMS is its noise sigma
        # to a few percent (500+ samples), so 1.5 times the largest sigma is
        # out of the noise's reach.
        assert float(row["residual_rms_max"]) > 1.5 * max(truth["noise_sigma"]), row
        assert (out / name / "dynamics" / "metadata.yaml").exists()
        assert (out / name / "table.csv").exists() and (out / name / "table_residuals.csv").exists()
    assert not (out / CORRUPT).exists()
    # the printed table has a line per bag, the corrupt one with its error
    lines = captured.out.splitlines()
    assert len(lines) == 21 and any(line.startswith(CORRUPT) and "ERROR: cannot" in line for line in lines)


def test_glob_on_a_given_scheduler(fleet, capsys):
    """A quoted glob makes a fleet; --scheduler runs it on a cluster started elsewhere."""
    import logging

    from distributed import LocalCluster

    root, truths = fleet
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:
        rc = replay_main([str(root / "run0[01]"), "--residuals", "--kc-time-budget", "0",
                          "--scheduler", cluster.scheduler_address])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["run00", "run01"]
    counts = [int(line.split()[2]) for line in lines[1:]]
    assert counts == [truths["run00"]["samples"], truths["run01"]["samples"]]
