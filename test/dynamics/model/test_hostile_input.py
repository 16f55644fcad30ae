"""Hostile input to the library: refused with a DynamicsError naming the element, never a NaN.

Grouped by where the data enter: the URDF (structure, then numbers), the
URDF file reader, gravity, payloads. Numbers beyond the documented limits
(``dynamics.limits``) are refused; numbers within them give finite outputs
equal to Pinocchio's.
"""
import os
import threading
import time

import numpy as np
import pytest

from robots import PinocchioOracle, add_payload_pinocchio, load_pinocchio, rel_err
from urdf_snippets import assert_rejected, elbow, inertial, urdf

from robot_dynamics_ros.dynamics import (DynamicsError, PayloadError, URDFError, all_terms,
                                         load_urdf, mass_matrix, puma_urdf)
from robot_dynamics_ros.dynamics.model.urdf import read_urdf_file
from robot_dynamics_ros.served.model import read_description_file

Q = np.array([0.3, -0.7, 1.1])
QD = np.array([0.5, 1.5, -2.0])


def assert_equals_pinocchio(text, model=None, tolerance=1e-10):
    """all_terms of ``text`` (or of ``model``) at (Q, QD) against Pinocchio's."""
    model = model or load_urdf(text)
    oracle = PinocchioOracle(load_pinocchio(text), model.joint_names)
    terms = all_terms(model, Q, QD)
    assert rel_err(terms.mass_matrix, oracle.mass_matrix(Q)) < tolerance
    assert rel_err(terms.gravity_torques, oracle.gravity_torques(Q)) < tolerance
    assert rel_err(terms.coriolis_matrix, oracle.coriolis_matrix(Q, QD)) < tolerance
    assert np.all(np.isfinite(terms.coriolis_bounds))


# ---------------------------------------------------------------------------
# URDF structure


@pytest.mark.parametrize("text", [
    '<robot name="r"><link name="a"/></robot>',
    '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
    '<parent link="a"/><child link="b"/></joint></robot>',
], ids=["one-link", "fixed-joints-only"])
def test_no_moving_joints(text):
    assert_rejected(text, "no moving joints")


def test_no_links_is_not_called_a_cycle():
    msg = assert_rejected('<robot name="r"/>', "no links")
    assert "cycle" not in msg


def test_30000_links_refused_without_parsing_them_all():
    """The number of links is checked before the names are, and every check
    is linear: the bound below only catches a return to quadratic work, with
    room for a loaded machine."""
    text = ('<robot name="big">' + "".join(f'<link name="l{i}"/>' for i in range(30_000))
            + "</robot>")
    start = time.perf_counter()
    assert_rejected(text, "30000", "link")
    assert time.perf_counter() - start < 10.0


# ---------------------------------------------------------------------------
# URDF numbers: refused beyond the limits, naming the element


@pytest.mark.parametrize("text, name", [
    (urdf(joints=elbow(origin='<origin xyz="1e155 0 0"/>')), "elbow"),
    (urdf(joints=elbow(origin='<origin xyz="0 0 0" rpy="1e300 0 0"/>')), "elbow"),
    (urdf(links={"forearm": inertial(xyz="0 1e155 0")}), "forearm"),
    (urdf(links={"forearm": inertial(mass="1e308")}), "forearm"),
    (urdf(links={"forearm": inertial(ixx="1e308", iyy="1e308", izz="1e308")}), "forearm"),
    (urdf(links={"base": inertial(mass="-3")}), "base"),
], ids=["joint-origin", "joint-rpy", "inertial-origin", "mass", "inertia-diagonal",
        "negative-mass-on-the-fixed-root"])
def test_number_beyond_its_limit(text, name):
    assert_rejected(text, name)


def mimic_urdf(multiplier, second_multiplier=None):
    """A 3-joint chain; the elbow mimics the shoulder, and optionally the
    wrist mimics the elbow (a chain of mimics)."""
    wrist = ('<mimic joint="elbow" multiplier="%s"/>' % second_multiplier
             if second_multiplier else "")
    return urdf(joints={
        "elbow": ("revolute", "upper_arm", "forearm",
                  '<origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>'
                  f'<mimic joint="shoulder" multiplier="{multiplier}"/>'),
        "wrist": ("revolute", "forearm", "hand", f'<origin xyz="0.3 0 0"/><axis xyz="1 0 0"/>{wrist}'),
    })


@pytest.mark.parametrize("text, name", [
    (mimic_urdf("1e308"), "elbow"),
    (mimic_urdf("1e4", "1e4"), "wrist"),  # each within the limit, their product not
], ids=["multiplier", "chain-product"])
def test_mimic_multiplier_beyond_its_limit(text, name):
    with pytest.raises(URDFError, match=name):
        load_urdf(text, mimic="reduce")


def test_huge_axis_is_a_direction():
    """Only the axis direction matters: 1e200 is the x axis, not an overflow to zero."""
    text = urdf(joints=elbow(axis="1e200 0 0"))
    assert_equals_pinocchio(urdf(joints=elbow(axis="1 0 0")), model=load_urdf(text))


def test_huge_limits_mean_no_limits():
    """Real URDFs write +-1e16 for "no limit"; +-1e308 made all_terms overflow."""
    limits = '<limit lower="-1e308" upper="1e308" effort="10" velocity="1"/>'
    text = urdf(joints={"elbow": ("revolute", "upper_arm", "forearm",
                                  f'<origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>{limits}')})
    model = load_urdf(text)
    assert model.lower[1] == -np.inf and model.upper[1] == np.inf
    assert_equals_pinocchio(text, model=model)


# ---------------------------------------------------------------------------
# Gravity


@pytest.mark.parametrize("gravity", [("a", "b", "c"), None, (0.0, 0.0, -1e300), (0.0, 0.0, -9.81 + 1j)],
                         ids=["text", "none", "huge", "complex"])
def test_bad_gravity(gravity):
    with pytest.raises(DynamicsError, match="gravity"):
        load_urdf(urdf(), gravity=gravity)
    with pytest.raises(DynamicsError, match="gravity"):
        load_urdf(urdf()).with_gravity(gravity)


# ---------------------------------------------------------------------------
# The URDF file reader (load_urdf, the node's urdf_file and the replay's --urdf)


def read_with_timeout(read, path, timeout=5.0):
    """The exception ``read(path)`` raises, failing the test if it blocks."""
    outcome = []

    def run():
        try:
            read(path)
        except Exception as error:  # noqa: BLE001 -- returned for the test to inspect
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert outcome, f"reading {path} blocked for {timeout:.0f} s"
    return outcome[0]


@pytest.mark.parametrize("read", [read_urdf_file, read_description_file, load_urdf],
                         ids=["read_urdf_file", "read_description_file", "load_urdf"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_only_regular_files_are_read(read, kind, tmp_path):
    if kind == "fifo":
        path = tmp_path / "robot.urdf"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = "/dev/zero"
    else:
        path = tmp_path
    error = read_with_timeout(read, str(path))
    assert isinstance(error, DynamicsError), repr(error)
    assert "regular file" in str(error)


def test_oversized_file_is_refused_after_reading_limit_plus_one_bytes(tmp_path):
    path = tmp_path / "big.urdf"
    path.write_text(puma_urdf() + " " * 200)
    with pytest.raises(URDFError, match="limit of 100 bytes"):
        read_urdf_file(path, limit=100)
    assert read_urdf_file(path, limit=path.stat().st_size) == path.read_text()


# ---------------------------------------------------------------------------
# Payloads


@pytest.fixture(scope="module")
def puma():
    return load_urdf(puma_urdf())


@pytest.mark.parametrize("link, mass, com, inertia", [
    (["link6"], 1.0, np.zeros(3), np.eye(3) * 1e-3),
    ("link6", 1.0, np.zeros(3), np.eye(3) * 1e308),
    ("link6", 1e200, np.zeros(3), np.eye(3) * 1e-3),
    ("link6", 1.0, np.array([1e200, 0.0, 0.0]), np.eye(3) * 1e-3),
    ("link6", 1.0, np.zeros(3), np.eye(3) * 1e200),
], ids=["link-as-list", "inertia-1e308", "mass-1e200", "com-1e200", "inertia-1e200"])
def test_bad_payload_is_a_payload_error(puma, link, mass, com, inertia):
    with pytest.raises(PayloadError, match="link6"):
        puma.with_payload(link, mass, com, inertia)


def test_payload_at_the_limits_gives_pinocchio_outputs(puma):
    """The largest accepted payload still gives finite outputs equal to Pinocchio's."""
    from robot_dynamics_ros.dynamics.model.limits import MAX_INERTIA, MAX_LENGTH, MAX_MASS

    com = np.array([MAX_LENGTH, 0.0, 0.0])
    inertia = np.diag([MAX_INERTIA / 2, MAX_INERTIA / 2, MAX_INERTIA])
    model = puma.with_payload("link6", MAX_MASS, com, inertia)
    oracle = PinocchioOracle(add_payload_pinocchio(load_pinocchio(puma_urdf()), "link6",
                                                   MAX_MASS, com, inertia), model.joint_names)
    q, qd = np.linspace(-1, 1, model.nv), np.linspace(0.5, -0.5, model.nv)
    terms = all_terms(model, q, qd)
    assert rel_err(terms.mass_matrix, oracle.mass_matrix(q)) < 1e-9
    assert rel_err(terms.gravity_torques, oracle.gravity_torques(q)) < 1e-9
    assert np.all(np.isfinite(terms.coriolis_bounds))
    assert np.all(np.isfinite(mass_matrix(model, q)))
