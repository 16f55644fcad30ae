"""robot_dynamics_replay --residuals and --identify-payload on ground-truth bags.

The bags come from bench/make_payload_bag.py: a closed-form trajectory and
efforts from Pinocchio's inverse dynamics of the robot with a known payload,
plus Gaussian noise of 1% of each joint's effort range. So the truth (the
payload, the noise level) is known without our dynamics, and the replay
sees the URDF without the payload, as a team would.
"""
import os
import re
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
pin = pytest.importorskip("pinocchio", reason="the ground-truth bags need Pinocchio: pip install pin")
from make_payload_bag import write_payload_bag  # noqa: E402

import robots  # noqa: E402
from bag_files import Trajectory, write_joint_state_bag  # noqa: E402
from robot_dynamics_ros.replay.cli import main as replay_main  # noqa: E402
from robot_dynamics_ros.replay.cli import parse_args  # noqa: E402
from robot_dynamics_ros.replay.run import replay  # noqa: E402

# The acceptance cases of issue 23: 60 s at 500 Hz, 1-3 kg, CoM 2-10 cm off the flange.
CASES = {
    "panda": dict(robot="panda", mass=2.5, com=(0.04, -0.03, 0.08), seed=1),
    "ur5": dict(robot="ur5", mass=1.5, com=(0.02, 0.05, 0.03), seed=2),
}
NO_KC = ["--kc-time-budget", "0", "--quiet"]


@pytest.fixture(scope="module", params=sorted(CASES))
def exciting_bag(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("exciting") / request.param
    truth = write_payload_bag(path, duration=60.0, rate=500.0, noise=0.01, **CASES[request.param])
    return path, truth


@pytest.fixture(scope="module", params=sorted(CASES))
def still_bag(request, tmp_path_factory):
    """A robot held still: gravity alone, which cannot show the CoM along it
    (ur5's zero pose also hides two first moments' columns below round-off)."""
    path = tmp_path_factory.mktemp("still") / f"{request.param}_still"
    return path, write_payload_bag(path, robot=request.param, mass=2.0, com=(0.03, 0.02, 0.06), duration=10.0,
                                   kind="still", seed=3)


@pytest.fixture(scope="module")
def bare_replay(exciting_bag):
    """The replay of the bag with the URDF alone (no payload in the model):
    --residuals and --identify-payload at once, as a team would ask."""
    path, truth = exciting_bag
    return replay(parse_args([str(path), "--residuals", "--identify-payload", truth["link"], *NO_KC]))


def printed_payload(out: str, link: str):
    """mass and CoM from the printed `ros2 param set` lines, None where not printed."""
    assert f"ros2 param set /robot_dynamics payload.link {link}" in out, out
    mass = re.search(r"^ros2 param set /robot_dynamics payload\.mass (\S+)$", out, re.M)
    com = re.search(r'^ros2 param set /robot_dynamics payload\.com "\[(.*)\]"$', out, re.M)
    return (float(mass.group(1)) if mass else None,
            np.array([float(x) for x in com.group(1).split(",")]) if com else None)


@pytest.mark.slow
def test_payload_identified_within_targets(exciting_bag, bare_replay):
    """Mass within 2% and CoM within 5 mm, in the lines that apply it (what
    the command prints: test_non_exciting_trajectory runs the command)."""
    _, truth = exciting_bag
    out = bare_replay["payload"].report()
    mass, com = printed_payload(out, truth["link"])
    assert mass is not None and com is not None, out
    assert abs(mass - truth["mass"]) <= 0.02 * truth["mass"], out
    assert np.max(np.abs(com - truth["com"])) <= 0.005, out
    # the same as YAML
    assert f"    payload.link: {truth['link']}" in out and re.search(r"^    payload\.mass: \S+$", out, re.M), out


@pytest.mark.slow
def test_residuals_at_noise_level_with_the_true_model_and_not_without(exciting_bag, bare_replay, tmp_path):
    path, truth = exciting_bag
    inertia = np.array(truth["inertia"])
    six = [inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]]
    payload = ["--payload", truth["link"], str(truth["mass"]), *map(str, truth["com"]), *map(str, six)]
    csv_path = tmp_path / "t.csv"
    right = replay(parse_args([str(path), "--residuals", "--csv", str(csv_path), *payload, *NO_KC]))
    sigma = dict(zip(truth["joints"], truth["noise_sigma"]))
    expected = np.array([sigma[j] for j in right["residuals"].joints])
    ratio = right["residuals"].rms / expected
    assert np.all((ratio > 0.9) & (ratio < 1.1)), ratio
    worst = bare_replay["residuals"].rms / expected  # the payload left out of the model
    assert worst.max() > 3.0, worst
    # the per-joint statistics beside the CSV
    table = (tmp_path / "t_residuals.csv").read_text().splitlines()
    assert table[0] == "joint,rms,p50,p95,p99,max,measured_rms"
    assert len(table) == 1 + len(expected)


def test_non_exciting_trajectory_says_com_not_identifiable(still_bag, capsys):
    path, truth = still_bag
    assert replay_main([str(path), "--identify-payload", truth["link"], *NO_KC]) == 0
    out = capsys.readouterr().out
    mass, com = printed_payload(out, truth["link"])
    assert com is None, out
    assert "# payload.com: not identifiable: " in out, out
    assert "payload.inertia: not identifiable" in out, out
    if mass is not None:  # gravity alone sees the mass
        assert abs(mass - truth["mass"]) <= 0.02 * truth["mass"], out


def test_bag_without_efforts_says_so_and_goes_on(tmp_path, capsys):
    traj = Trajectory(robots.example_robot_urdf("panda"), 0.5, 200.0, seed=5)
    path = tmp_path / "no_effort"
    write_joint_state_bag(path, "mcap", traj)
    plot = tmp_path / "p.png"
    assert replay_main([str(path), "--residuals", "--identify-payload", "panda_link8", "--plot", str(plot),
                        *NO_KC]) == 0
    captured = capsys.readouterr()
    assert "warning: no efforts in the joint states on /joint_states" in captured.err, captured.err
    assert plot.exists()
    assert "ros2 param set" not in captured.out


def test_bad_savitzky_golay_settings_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse_args([str(tmp_path), "--residuals", "--sg-window", "30"])
    assert "odd number of samples" in capsys.readouterr().err


@pytest.mark.slow
def test_node_window_gives_the_replays_estimate(exciting_bag, bare_replay):
    """~/identify_payload's window, fed one joint state at a time, gives the
    replay's estimate on the same data."""
    from rosbags.rosbag2 import Reader

    from make_payload_bag import TYPESTORE
    from robot_dynamics_ros.dynamics import load_urdf
    from robot_dynamics_ros.node.effort_window import EffortWindow, identify, payload_to_apply

    path, truth = exciting_bag
    offline = bare_replay["payload"]
    model = load_urdf(truth["urdf"])
    window = EffortWindow(model.nv, capacity=40_000)
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic == "/joint_states"]
        for _, _, raw in reader.messages(connections=connections):
            msg = TYPESTORE.deserialize_cdr(raw, "sensor_msgs/msg/JointState")
            take = [list(msg.name).index(j) for j in model.joint_names]
            window.add(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec,
                       msg.position[take], msg.velocity[take], msg.effort[take])
    live = identify(model, window, truth["link"], seconds=3600.0)
    np.testing.assert_allclose(live.phi, offline.phi, rtol=1e-9, atol=1e-12)
    # a joint state the node refused (NaN position) leaves the estimate as it was
    last = window.latest(0.0)
    window.add(int(last[0][-1]) + 2_000_000, np.full(model.nv, np.nan), last[2][-1], last[3][-1])
    again = identify(model, window, truth["link"], seconds=3600.0)
    np.testing.assert_allclose(again.phi, offline.phi, rtol=1e-9, atol=1e-12)
    link, mass, com, inertia = payload_to_apply(live)
    assert link == truth["link"] and abs(mass - truth["mass"]) <= 0.02 * truth["mass"]


def test_projection_gives_parameters_the_payload_check_accepts():
    """Projected parameters pass the triangle-inequality check of
    Model.with_payload (a second formulation of physical consistency), and
    consistent parameters are left as they are."""
    from robot_dynamics_ros.dynamics import load_urdf
    from robot_dynamics_ros.identification.payload import from_payload, project_physical, to_payload

    model = load_urdf(robots.example_robot_urdf("panda"))
    rng = np.random.default_rng(4)
    for _ in range(200):
        phi = rng.normal(size=10) * [1.0, 0.1, 0.1, 0.1, 0.01, 0.005, 0.005, 0.01, 0.005, 0.01]
        mass, com, inertia = to_payload(project_physical(phi))
        if mass > 1e-6:
            model.with_payload("panda_link8", mass, com, inertia + 1e-12 * np.eye(3))
        else:
            assert mass >= -1e-12
    box = np.diag([0.002, 0.003, 0.004])
    phi = from_payload(1.5, [0.02, -0.01, 0.05], box)
    np.testing.assert_allclose(project_physical(phi), phi, atol=1e-14)
