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
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
pytest.importorskip("pinocchio", reason="the ground-truth bags need Pinocchio: pip install pin")
pytest.importorskip("distributed", reason="fleets run on Dask: pip install distributed")
from make_payload_bag import write_payload_bag  # noqa: E402

from robot_dynamics_ros.replay import main as replay_main  # noqa: E402

DURATIONS = (1.0, 2.0, 3.0)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three good bags (two MCAP, one sqlite3) and a corrupt one in a folder."""
    root = tmp_path_factory.mktemp("fleet") / "bags"
    root.mkdir()
    truths = {}
    for k, duration in enumerate(DURATIONS):
        name = f"run{k}"
        truths[name] = write_payload_bag(root / name, robot="panda", mass=2.0, com=(0.03, 0.0, 0.05),
                                         duration=duration, rate=500.0, seed=10 + k,
                                         storage="sqlite3" if k == 1 else "mcap")
    corrupt = root / "run9"
    shutil.copytree(root / "run0", corrupt)
    for data in corrupt.glob("*.mcap"):
        data.write_bytes(b"\x89MCAP0\r\n" + os.urandom(512))  # a damaged file
        data.rename(corrupt / "run9.mcap")
    return root, truths


def test_fleet_reports_the_corrupt_bag_and_finishes_the_others(fleet, tmp_path, capsys):
    root, truths = fleet
    out = tmp_path / "out"
    rc = replay_main([str(root), str(out), "--residuals", "--kc-time-budget", "0", "--workers", "2",
                      "--csv", "table.csv"])
    captured = capsys.readouterr()
    assert rc == 1, captured.err  # one bag failed
    assert "1 of 4 bags failed" in captured.err
    with open(out / "summary.csv") as handle:
        rows = {os.path.basename(r["bag"]): r for r in csv.DictReader(handle)}
    assert sorted(rows) == ["run0", "run1", "run2", "run9"]
    assert rows["run9"]["error"].startswith("cannot "), rows["run9"]
    for name, truth in truths.items():
        row = rows[name]
        assert row["error"] == "", row
        assert int(row["joint_states"]) == truth["samples"]
        assert float(row["duration_s"]) == pytest.approx((truth["samples"] - 1) / truth["rate"], abs=0.05)
        # the model has no payload: the residuals must show the 2 kg it carries
        assert float(row["residual_rms_max"]) > 3 * max(truth["noise_sigma"]), row
        assert (out / name / "dynamics" / "metadata.yaml").exists()
        assert (out / name / "table.csv").exists() and (out / name / "table_residuals.csv").exists()
    assert not (out / "run9").exists()
    # the printed table has a line per bag, the corrupt one with its error
    lines = captured.out.splitlines()
    assert len(lines) == 5 and any(line.startswith("run9") and "ERROR: cannot" in line for line in lines)


def test_glob_on_a_given_scheduler(fleet, capsys):
    """A quoted glob makes a fleet; --scheduler runs it on a cluster started elsewhere."""
    import logging

    from distributed import LocalCluster

    root, truths = fleet
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:
        rc = replay_main([str(root / "run[01]"), "--residuals", "--kc-time-budget", "0",
                          "--scheduler", cluster.scheduler_address])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    lines = captured.out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["run0", "run1"]
    counts = [int(line.split()[2]) for line in lines[1:]]
    assert counts == [truths["run0"]["samples"], truths["run1"]["samples"]]
