"""Offline bag replay (robot_dynamics_replay) against Pinocchio, and its bad-input handling.

The input bags are real rosbag2 bags written here with rosbags (metadata.yaml
plus db3 or mcap): 60 s of joint states at 500 Hz (30,000 messages) of panda
and of the embedded PUMA, a formula trajectory (sines within the joint
limits), with the joint names shuffled and one extra name, header stamps that
differ from the bag times, and the URDF on /robot_description. Each bag is
written and replayed once per module.
"""

import csv
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import robots
import ros_harness as harness
from bag_files import (BAG_DELAY_NS, BASE_TOPICS, BOUNDS, PREFIX, STAMP0, STORAGES, TYPESTORE, Trajectory,  # noqa: F401
                       decode_outputs, read_bag, write_joint_state_bag)
from robot_dynamics_ros.dynamics import load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.kc import refinement_for
from robot_dynamics_ros.replay.cli import main as replay_main

DURATION, RATE = 60.0, 500.0
PINOCCHIO_STRIDE = 10  # 10% of the messages get every field compared with Pinocchio
TOLERANCE = 1e-10


# No K_c refinement where K_c is not under test: the replay's default waits up to a
# minute for a tight interval, and what a time budget reaches varies from run to run.
FAST_KC = ["--kc-time-budget", "0"]


def replay(*args) -> int:
    return replay_main([str(a) for a in args] + ["--quiet"] + FAST_KC)


# ---------------------------------------------------------------------------
# Fixtures: each long bag written and replayed once


ROBOTS = {"panda": lambda: robots.example_robot_urdf("panda"), "puma": puma_urdf}


@pytest.fixture(scope="module")
def trajectories():
    return {name: Trajectory(source(), DURATION, RATE, seed=i) for i, (name, source) in enumerate(ROBOTS.items())}


@pytest.fixture(scope="module")
def long_replays(trajectories, tmp_path_factory):
    """(robot, storage) -> decoded output of the replay of its 60 s bag."""
    root = tmp_path_factory.mktemp("long")
    out = {}
    for robot, traj in trajectories.items():
        for storage in STORAGES:
            source, target = root / f"{robot}_{storage}", root / f"{robot}_{storage}_out"
            write_joint_state_bag(source, storage, traj)
            assert replay(source, target) == 0
            bag = read_bag(target)
            out[robot, storage] = (bag, decode_outputs(bag), target)
    return out


def check_against_pinocchio(out: dict, oracle, q, qd, rows, tolerance=TOLERANCE) -> float:
    """Max relative error over ``rows`` of the decoded outputs against Pinocchio.

    Each row goes through the node tests' check (ros_harness.check_outputs),
    which asserts every value within ``tolerance`` and the bound inequalities.
    """
    n = len(oracle.joint_names)
    (joints,) = out["joints"]
    worst = 0.0
    for i in rows:
        row = {"joints": list(joints),
               "mass_matrix": out["mass_matrix"][i].reshape(n, n),
               "coriolis_matrix": out["coriolis_matrix"][i].reshape(n, n),
               "coriolis_bounds": out["coriolis_bounds"][i],
               "gravity_torques": out["gravity_torques"][i]}
        if "christoffel_symbols" in out:
            row["christoffel_symbols"] = out["christoffel_symbols"][i].reshape(n, n, n)
        try:
            errors = harness.check_outputs(row, oracle, q[i], qd[i], tolerance)
        except AssertionError as error:
            raise AssertionError(f"output message {i}: {error}") from None
        worst = max(worst, *errors.values())
    return worst


# ---------------------------------------------------------------------------
# The 60 s bags


@pytest.mark.parametrize("storage", list(STORAGES))
@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.slow
def test_replay_equals_pinocchio(robot, storage, trajectories, long_replays):
    traj = trajectories[robot]
    bag, out, target = long_replays[robot, storage]
    count = len(traj.t)
    n = len(traj.joints)
    # A real rosbag2 bag of the requested storage, with exactly the node's topics and types.
    assert (target / "metadata.yaml").is_file()
    assert list(target.glob("*.db3" if storage == "sqlite3" else "*.mcap"))
    assert {topic: msgtype for topic, (msgtype, _, _) in bag.items()} == BASE_TOPICS
    # Every DynamicsState: bag time and header stamp of its input, the joint
    # order, the model and frame, the q and qd it was computed from; one
    # DynamicsModel before the first.
    assert len(out["state_times"]) == count
    np.testing.assert_array_equal(out["state_times"], traj.bag_ns)
    np.testing.assert_array_equal(out["stamps"], traj.stamp_ns)
    assert out["joints"] == {tuple(traj.joints)}
    assert out["revisions"] == {1} and out["frames"] == {traj.root_link}
    np.testing.assert_array_equal(out["position"], traj.q)
    np.testing.assert_array_equal(out["velocity"], traj.qd)
    (model,) = out["models"]
    assert out["model_times"][0] == traj.bag_ns[0]
    assert (model.revision, model.nv, list(model.names), model.payloads) == (1, n, traj.joints, [])
    # M, C and g of every message against Pinocchio's crba, computeCoriolisMatrix
    # and computeGeneralizedGravity (relative to each message's own scale).
    oracle, worst_every = traj.oracle, 0.0
    for i in range(count):
        q, qd = traj.q[i], traj.qd[i]
        for name, want in (("mass_matrix", oracle.mass_matrix(q)),
                           ("coriolis_matrix", oracle.coriolis_matrix(q, qd)),
                           ("gravity_torques", oracle.gravity_torques(q))):
            err = robots.rel_err(out[name][i].reshape(want.shape), want)
            assert err <= TOLERANCE, f"message {i} {name}: relative error {err:.2e}"
            worst_every = max(worst_every, err)
    # Every field, bounds included (their oracle needs n Pinocchio calls and n
    # SVDs per message), on every PINOCCHIO_STRIDE-th message.
    rows = range(PINOCCHIO_STRIDE // 2 if storage == "mcap" else 0, count, PINOCCHIO_STRIDE)
    worst = check_against_pinocchio(out, traj.oracle, traj.q, traj.qd, rows)
    print(f"{robot} {storage}: M, C, g of all {count} messages vs Pinocchio, max rel err "
          f"{worst_every:.1e}; all fields of {len(rows)}: {worst:.1e}")
    # The replay refines K_c's interval before the first message: every message
    # has the same one; K_c bounds every k_c(q), and ||C|| <= k_c ||qd|| everywhere.
    bounds = dict(zip(BOUNDS, out["coriolis_bounds"].T))
    assert np.all(bounds["kc_global"] == bounds["kc_global"][0])
    assert np.all(bounds["kc_global_lower"] == bounds["kc_global_lower"][0])
    assert 0.0 < bounds["kc_global_lower"][0] <= bounds["kc_global"][0]
    assert np.all(bounds["kc_global"] >= bounds["kc_config"] * (1 - 1e-9))
    assert np.all(bounds["coriolis_norm"] <= bounds["coriolis_bound"] * (1 + 1e-9) + 1e-12)


# ---------------------------------------------------------------------------
# Options on a short bag: Christoffel symbols, payload, --urdf, CSV, plot

HAND_PAYLOAD = ("panda_hand", 1.5, (0.01, -0.02, 0.05), (0.004, 0.0002, 0.0, 0.005, -0.0001, 0.003))


@pytest.fixture(scope="module")
def options_replay(short_bag, tmp_path_factory):
    """Replay with --christoffel, a payload, --csv and --plot, sqlite3 output from an MCAP input."""
    root = tmp_path_factory.mktemp("options")
    link, mass, com, six = HAND_PAYLOAD
    target, csv_path, plot = root / "out", root / "table.csv", root / "plot.png"
    assert replay(short_bag, target, "--christoffel", "--storage", "sqlite3", "--csv", csv_path,
                  "--plot", plot, "--payload", link, mass, *com, *six) == 0
    return target, csv_path, plot


def test_christoffel_and_payload_equal_pinocchio(short_panda, options_replay):
    target, _, _ = options_replay
    assert list(target.glob("*.db3")), "--storage sqlite3 was asked for"
    bag = read_bag(target)
    assert {t: m for t, (m, _, _) in bag.items()} == BASE_TOPICS
    out = decode_outputs(bag)
    n = len(short_panda.joints)
    link, mass, com, six = HAND_PAYLOAD
    # the model names the payload every state was computed with
    (payload,) = out["models"][0].payloads
    assert (payload.header.frame_id, payload.inertia.m) == (link, mass)
    assert (payload.inertia.com.x, payload.inertia.com.y, payload.inertia.com.z) == com
    assert (payload.inertia.ixx, payload.inertia.ixy, payload.inertia.ixz, payload.inertia.iyy,
            payload.inertia.iyz, payload.inertia.izz) == six
    oracle = robots.PinocchioOracle(
        robots.add_payload_pinocchio(short_panda.pin_model, link, mass, com, robots.inertia3(six)),
        short_panda.joints)
    count = len(short_panda.t)
    assert len(out["christoffel_symbols"]) == count
    check_against_pinocchio(out, oracle, short_panda.q, short_panda.qd, range(count))
    # The payload must show: without it, the mass matrix is off by far more than the tolerance.
    assert robots.rel_err(out["mass_matrix"][0].reshape(n, n),
                          short_panda.oracle.mass_matrix(short_panda.q[0])) > 1e-3


def test_csv_table(short_panda, options_replay):
    target, csv_path, _ = options_replay
    n = len(short_panda.joints)
    with open(csv_path) as handle:
        header = handle.readline().strip().split(",")
    table = np.loadtxt(csv_path, delimiter=",", skiprows=1, dtype=np.float64)
    times = np.loadtxt(csv_path, delimiter=",", skiprows=1, usecols=(0, 1, 2), dtype=np.int64)
    assert table.shape == (len(short_panda.t), 3 + 2 * n + len(BOUNDS) + n + 2 * n * n) == (table.shape[0], len(header))
    assert header[:4] == ["bag_time_ns", "stamp_sec", "stamp_nanosec", f"q[{short_panda.joints[0]}]"]
    np.testing.assert_array_equal(times[:, 0], short_panda.bag_ns)
    np.testing.assert_array_equal(times[:, 1] * 10**9 + times[:, 2], short_panda.stamp_ns)
    column = {name: i for i, name in enumerate(header)}
    np.testing.assert_array_equal(table[:, [column[f"q[{j}]"] for j in short_panda.joints]], short_panda.q)
    np.testing.assert_array_equal(table[:, [column[f"qd[{j}]"] for j in short_panda.joints]], short_panda.qd)
    # Same numbers as the bag, to the last bit (%.17g round-trips float64).
    out = decode_outputs(read_bag(target))
    first_mass = column["mass_matrix[0][0]"]
    np.testing.assert_array_equal(table[:, first_mass:first_mass + n * n], out["mass_matrix"])
    np.testing.assert_array_equal(table[:, [column[b] for b in BOUNDS]], out["coriolis_bounds"])
    np.testing.assert_array_equal(
        table[:, [column[f"gravity_torques[{j}]"] for j in short_panda.joints]], out["gravity_torques"])


def test_plot_is_a_png(options_replay):
    _, _, plot = options_replay
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_urdf_option_replaces_the_bag_description(short_panda, tmp_path):
    bare = tmp_path / "no_description"
    write_joint_state_bag(bare, "sqlite3", short_panda, description=False)
    urdf = tmp_path / "panda.urdf"
    urdf.write_text(short_panda.urdf)
    assert replay(bare, tmp_path / "out", "--urdf", urdf) == 0
    out = decode_outputs(read_bag(tmp_path / "out"))
    check_against_pinocchio(out, short_panda.oracle, short_panda.q, short_panda.qd, range(0, len(short_panda.t), 7))


def test_replay_refines_kc_before_the_first_message(short_panda, short_bag, tmp_path, capsys):
    """With a K_c budget, every message carries the one refined interval: no
    looser than a fresh model's first one, and a bound on every k_c(q) seen."""
    assert replay_main([str(short_bag), str(tmp_path / "out"), "--kc-time-budget", "3"]) == 0
    assert "K_c in [" in capsys.readouterr().out
    bounds = dict(zip(BOUNDS, decode_outputs(read_bag(tmp_path / "out"))["coriolis_bounds"].T))
    first = refinement_for(load_urdf(short_panda.urdf)).interval
    upper, lower = bounds["kc_global"][0], bounds["kc_global_lower"][0]
    assert np.all(bounds["kc_global"] == upper) and np.all(bounds["kc_global_lower"] == lower)
    assert first.lower < lower <= upper <= first.upper
    assert np.all(bounds["kc_config"] <= upper * (1 + 1e-12))


def test_single_storage_file_as_input(short_bag, options_replay, tmp_path):
    """INPUT_BAG may be the .mcap (or .db3) file itself; the output is the same bag."""
    (storage_file,) = short_bag.glob("*.mcap")
    assert replay(storage_file, tmp_path / "out", "--christoffel", "--storage", "sqlite3",
                  "--payload", HAND_PAYLOAD[0], HAND_PAYLOAD[1], *HAND_PAYLOAD[2], *HAND_PAYLOAD[3]) == 0
    from_file, from_folder = read_bag(tmp_path / "out"), read_bag(options_replay[0])
    assert from_file.keys() == from_folder.keys()
    for topic, (msgtype, times, raws) in from_folder.items():
        assert from_file[topic][0] == msgtype
        np.testing.assert_array_equal(from_file[topic][1], times)
        assert from_file[topic][2] == raws, topic


def test_help_names_the_output_topics():
    result = subprocess.run([sys.executable, "-m", "robot_dynamics_ros.replay.cli", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    for topic in BASE_TOPICS:
        assert topic in text


def test_irregular_joint_states_follow_the_node_rules(short_panda, tmp_path, capsys):
    """Odd messages among regular ones: kept or dropped exactly as the node would.

    They also leave the array path of the decoder (other names, sizes, frame_id)
    or are sent from it to the per-message path (non-finite values).
    """
    traj = short_panda
    nan_joint = traj.bag_names.index(traj.joints[2])
    reordered = list(reversed(traj.bag_names))

    def edit(i, msg):
        if i == 10:  # NaN for a modelled joint: dropped
            position = msg.position.copy()
            position[nan_joint] = np.nan
            return replace(msg, position=position)
        if i == 20:  # NaN for the unmodelled joint only: kept
            position = msg.position.copy()
            position[-1] = np.nan
            return replace(msg, position=position)
        if 30 <= i < 40:  # another name order: kept
            return replace(msg, name=reordered, position=msg.position[::-1].copy(),
                           velocity=msg.velocity[::-1].copy())
        if i == 50:  # no velocities: kept with qd = 0
            return replace(msg, velocity=np.array([], dtype=np.float64))
        if i == 60:  # one position too few: dropped
            return replace(msg, position=msg.position[:-1].copy())
        if i == 70:  # a frame_id: kept
            return replace(msg, header=replace(msg.header, frame_id="base"))
        if i == 80:  # a modelled joint missing: dropped
            keep = [k for k, name in enumerate(msg.name) if name != traj.joints[0]]
            return replace(msg, name=[msg.name[k] for k in keep], position=msg.position[keep],
                           velocity=msg.velocity[keep])
        return msg

    source, target = tmp_path / "irregular", tmp_path / "out"
    write_joint_state_bag(source, "sqlite3", traj, edit=edit)
    assert replay_main([str(source), str(target)] + FAST_KC) == 0
    err = capsys.readouterr().err
    for kind in ("non_finite", "length_mismatch", "missing_joint"):
        assert f"dropped 1 ({kind})" in err, err
    kept = np.setdiff1d(np.arange(len(traj.t)), [10, 60, 80])
    out = decode_outputs(read_bag(target))
    np.testing.assert_array_equal(out["state_times"], traj.bag_ns[kept])
    np.testing.assert_array_equal(out["stamps"], traj.stamp_ns[kept])
    qd = traj.qd.copy()
    qd[50] = 0.0
    check_against_pinocchio(out, traj.oracle, traj.q[kept], qd[kept], range(len(kept)))


# ---------------------------------------------------------------------------
# Bad input: a clear message, exit status 1, nothing left at the output paths


def corrupt_file_middle(bag: Path):
    """Overwrite 64 KiB in the middle of the bag's storage file with a byte pattern."""
    (storage_file,) = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
    data = bytearray(storage_file.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 65536] = b"\xa5" * 65536
    storage_file.write_bytes(bytes(data))


def corrupt_late_message(bag: Path):
    """Replace the CDR of a joint state after the first replay chunk with a broken one.

    The replay has written outputs by then, so this checks they are removed.
    """
    (db,) = bag.glob("*.db3")
    with sqlite3.connect(db) as connection:
        (row,) = connection.execute(
            "SELECT m.id FROM messages m JOIN topics t ON m.topic_id = t.id "
            "WHERE t.name = '/joint_states' ORDER BY m.timestamp LIMIT 1 OFFSET 3000").fetchall()
        # A header, then a frame_id string claiming 4 GB.
        connection.execute("UPDATE messages SET data = ? WHERE id = ?",
                           (b"\x00\x01\x00\x00" + bytes(8) + b"\xff\xff\xff\xff", row[0]))


def fifo_instead_of_storage(bag: Path):
    """The storage file replaced by a FIFO: opening it waited for a writer forever."""
    (storage_file,) = [p for p in bag.iterdir() if p.suffix in (".db3", ".mcap")]
    storage_file.unlink()
    os.mkfifo(storage_file)


def unknown_storage(bag: Path):
    metadata = bag / "metadata.yaml"
    metadata.write_text(metadata.read_text().replace("storage_identifier: sqlite3",
                                                     "storage_identifier: rosbag_v3_tape"))


@pytest.fixture(scope="module")
def bad_input_panda():
    """3,500 panda joint states: two replay chunks, so a late failure comes after output."""
    return Trajectory(robots.example_robot_urdf("panda"), 7.0, 500.0, seed=3)


BAD_INPUTS = {
    # name: (storage, bag writer keyword arguments, damage, expected message fragment)
    "no_joint_states": ("sqlite3", {"topic": "/arm/joint_states"}, None,
                        "no /joint_states topic in"),
    "no_description": ("mcap", {"description": False}, None,
                       "no /robot_description message in"),
    "foreign_joint_names": ("mcap", {"names": [f"wheel_{i}" for i in range(10)]}, None,
                            "none of the 3500 joint states on /joint_states matches the model 'panda' "
                            "(missing_joint: no value for 9 modelled joint(s): panda_joint1"),
    "corrupted_sqlite3": ("sqlite3", {}, corrupt_file_middle, "database disk image is malformed"),
    "corrupted_mcap": ("mcap", {}, corrupt_file_middle, "cannot read input bag"),
    "corrupted_message": ("sqlite3", {}, corrupt_late_message, "cannot read input bag"),
    "unknown_storage": ("sqlite3", {}, unknown_storage, "Storage plugin 'rosbag_v3_tape' not supported"),
    "fifo_sqlite3": ("sqlite3", {}, fifo_instead_of_storage, "is not a regular file (a FIFO"),
    "fifo_mcap": ("mcap", {}, fifo_instead_of_storage, "is not a regular file (a FIFO"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_fails_cleanly(case, bad_input_panda, tmp_path, capsys):
    storage, kwargs, damage, message = BAD_INPUTS[case]
    source = tmp_path / "input"
    write_joint_state_bag(source, storage, bad_input_panda, **kwargs)
    if damage:
        damage(source)
    before = sorted(os.listdir(tmp_path))
    outputs = [tmp_path / "out", tmp_path / "table.csv", tmp_path / "plot.png"]
    rc = replay_main([str(source), str(outputs[0]), "--csv", str(outputs[1]), "--plot", str(outputs[2])]
                     + FAST_KC)
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("robot_dynamics_replay: error: ") and message in err, err
    assert "Traceback" not in err
    # Neither the outputs nor hidden partial files are left behind.
    assert sorted(os.listdir(tmp_path)) == before


def test_existing_output_is_not_overwritten(short_bag, tmp_path, capsys):
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep").write_text("mine")
    assert replay_main([str(short_bag), str(target)]) == 1
    assert "exists already" in capsys.readouterr().err
    assert os.listdir(target) == ["keep"]


def test_unknown_plot_format_is_refused_before_any_work(short_bag, tmp_path, capsys):
    assert replay_main([str(short_bag), str(tmp_path / "out"), "--plot", str(tmp_path / "plot.xyz")]) == 1
    assert "no image format 'xyz'" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_numerics_failure_is_reported_and_leaves_nothing(short_bag, tmp_path, capsys, monkeypatch):
    """A failure inside the dynamics (a bug, not bad input) ends the replay cleanly too."""
    def failing(model, q, qd, christoffel=True):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("robot_dynamics_ros.dynamics.all_terms", failing)
    assert replay_main([str(short_bag), str(tmp_path / "out"), "--csv", str(tmp_path / "t.csv")]
                       + FAST_KC) == 1
    assert "the dynamics failed on the joint states at bag times" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_command_line_exit_status(tmp_path, short_panda):
    """The module entry point itself returns the status (not only main())."""
    source = tmp_path / "input"
    write_joint_state_bag(source, "mcap", short_panda, topic="/other")
    result = subprocess.run([sys.executable, "-m", "robot_dynamics_ros.replay.cli", str(source), str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "no /joint_states topic in" in result.stderr
    assert not (tmp_path / "out").exists()


def test_csv_alone_needs_no_output_bag(short_panda, short_bag, tmp_path):
    csv_path = tmp_path / "table.csv"
    assert replay(short_bag, "--csv", csv_path) == 0
    assert os.listdir(tmp_path) == ["table.csv"]
    n = len(short_panda.joints)
    with open(csv_path) as handle:
        column = {name: i for i, name in enumerate(handle.readline().strip().split(","))}
    table = np.loadtxt(csv_path, delimiter=",", skiprows=1, dtype=np.float64)
    first_mass = column["mass_matrix[0][0]"]
    for row in (0, len(table) - 1):
        mass = table[row, first_mass:first_mass + n * n].reshape(n, n)
        assert robots.rel_err(mass, short_panda.oracle.mass_matrix(short_panda.q[row])) <= TOLERANCE


def test_nothing_to_write_is_a_usage_error(short_bag, capsys):
    with pytest.raises(SystemExit) as exit_:
        replay_main([str(short_bag)])
    assert exit_.value.code == 2
    assert "give OUTPUT_BAG, --csv or --plot" in capsys.readouterr().err


def test_csv_quotes_joint_names_with_commas_and_quotes(tmp_path):
    """A URDF may name a joint 'j,1' or 'j"2': the header is quoted as CSV
    quotes (it was joined with bare commas: a table of ragged rows)."""
    urdf = puma_urdf()
    first, second = load_urdf(urdf).joint_names[:2]
    urdf = (urdf.replace(f'name="{first}"', 'name="j,1"')
            .replace(f'name="{second}"', 'name="j&quot;2"'))
    traj = Trajectory(urdf, 0.2, 100.0)
    assert {"j,1", 'j"2'} <= set(traj.joints)
    source, table = tmp_path / "input", tmp_path / "table.csv"
    write_joint_state_bag(source, "sqlite3", traj)
    assert replay(source, "--csv", table) == 0
    with open(table, newline="") as handle:
        rows = list(csv.reader(handle))
    assert {len(row) for row in rows} == {len(rows[0])} and len(rows) == len(traj.t) + 1
    column = {name: i for i, name in enumerate(rows[0])}
    values = np.array(rows[1:], dtype=float)
    np.testing.assert_array_equal(values[:, column["q[j,1]"]], traj.q[:, traj.joints.index("j,1")])
    np.testing.assert_array_equal(values[:, column['qd[j"2]']], traj.qd[:, traj.joints.index('j"2')])
