"""Hostile arguments to the dynamics API: a typed DynamicsError naming the argument.

Grouped by function: ``load_urdf`` (mimic joints, limits, the source),
``coriolis_bounds`` (an empty batch, a caller's Gamma and M), ``simulate``
(every argument it hands to scipy), payloads (complex numbers) and a first
argument that is no Model. Nothing is silently changed or truncated: a
refused call leaves the model as it was.
"""
import warnings

import numpy as np
import pytest

from robots import pin
from urdf_snippets import assert_rejected, urdf

from robot_dynamics_ros.dynamics import (CoriolisConstantRefinement, DynamicsError, PayloadError,
                                         StateError, URDFError, all_terms, coriolis_bounds,
                                         coriolis_constant_interval, coriolis_matrix,
                                         christoffel_symbols, forward_dynamics, gravity_torques,
                                         inverse_dynamics, load_urdf, mass_matrix, puma_urdf, simulate)
from robot_dynamics_ros.dynamics.kc import global_coriolis_constant
from robot_dynamics_ros.dynamics.model.urdf import read_urdf_file

PUMA = load_urdf(puma_urdf())
N = PUMA.nv
ZERO = np.zeros(N)


def no_torque(t, q, qd):
    return ZERO


# ---------------------------------------------------------------------------
# load_urdf


def mimic_elbow(master):
    return {"elbow": ("revolute", "upper_arm", "forearm",
                      '<origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>'
                      '<limit lower="-2" upper="2" effort="10" velocity="1"/>'
                      f'<mimic joint="{master}" multiplier="2"/>')}


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_a_base_speed_is_no_joint_to_mimic(base):
    """With a floating base, 'base_vx' named a free-flyer body, and the
    elbow followed the base's x speed instead of being refused."""
    with pytest.raises(URDFError) as info:
        load_urdf(urdf(joints=mimic_elbow("base_vx")), base=base, mimic="reduce")
    assert str(info.value) == "joint 'elbow' mimics unknown joint 'base_vx'"


def test_mimic_of_a_joint_still_reduces_with_a_floating_base():
    model = load_urdf(urdf(joints=mimic_elbow("shoulder")), base="floating", mimic="reduce")
    assert model.joint_names == ("shoulder", "wrist")


def limited_elbow(lower, upper):
    return {"elbow": ("revolute", "upper_arm", "forearm",
                      '<origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>'
                      f'<limit lower="{lower}" upper="{upper}" effort="10" velocity="1"/>')}


@pytest.mark.parametrize("lower, upper", [
    ("inf", "inf"), ("-inf", "-inf"), ("inf", "2"), ("-2", "-inf"), ("2e6", "3e6"), ("1e16", "1e16"),
], ids=["inf-inf", "minus-inf-minus-inf", "inf-2", "minus-2-minus-inf", "beyond-the-angle-limit",
        "1e16-1e16"])
def test_limits_that_admit_no_position(lower, upper):
    assert_rejected(urdf(joints=limited_elbow(lower, upper)), "joint 'elbow'", "limits")


@pytest.mark.parametrize("lower, upper, want", [
    ("-inf", "inf", (-np.inf, np.inf)), ("-1e16", "1e16", (-np.inf, np.inf)),
    ("0", "0", (-np.inf, np.inf)), ("-1e16", "1", (-np.inf, 1.0)), ("0.5", "0.5", (0.5, 0.5)),
], ids=["inf", "1e16", "zero-zero", "one-sided", "locked"])
def test_unlimited_and_one_point_limits_still_load(lower, upper, want):
    model = load_urdf(urdf(joints=limited_elbow(lower, upper)))
    elbow = model.body_joint_names.index("elbow")
    assert (model.lower[elbow], model.upper[elbow]) == want


BOM = "\ufeff"


@pytest.mark.parametrize("source", [
    lambda text: b"\xef\xbb\xbf" + text.encode(),
    lambda text: BOM + text,
], ids=["bytes", "str"])
def test_a_byte_order_mark_does_not_make_xml_a_path(source):
    model = load_urdf(source(urdf()))
    assert model.joint_names == load_urdf(urdf()).joint_names


def test_a_file_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "bom.urdf"
    path.write_bytes(b"\xef\xbb\xbf" + urdf().encode())
    assert load_urdf(str(path)).joint_names == load_urdf(urdf()).joint_names
    assert read_urdf_file(path).lstrip(BOM) == urdf()


def test_bytes_that_are_not_utf8_are_refused_not_replaced():
    with pytest.raises(URDFError, match="not UTF-8"):
        load_urdf(urdf().encode()[:-12] + b"\xff\xfe</robot>")


# ---------------------------------------------------------------------------
# coriolis_bounds


def test_coriolis_bounds_of_an_empty_batch():
    empty = np.zeros((0, N))
    bounds = coriolis_bounds(PUMA, empty, empty)
    for name in ("coriolis_norm", "kc_config", "m_eig_min", "m_eig_max"):
        assert getattr(bounds, name).shape == (0,), name
    one = coriolis_bounds(PUMA, ZERO, ZERO)
    assert bounds.kc_global == one.kc_global and bounds.kc_global_lower == one.kc_global_lower


Q = np.linspace(-1.0, 1.0, N)
QD = np.linspace(0.5, -1.5, N)
GAMMA = christoffel_symbols(PUMA, Q)
M = mass_matrix(PUMA, Q)


@pytest.mark.slow
def test_given_christoffel_and_mass_give_the_computed_bounds():
    assert coriolis_bounds(PUMA, Q, QD, christoffel=GAMMA, mass=M) == coriolis_bounds(PUMA, Q, QD)
    batch = coriolis_bounds(PUMA, Q[None], QD[None], christoffel=GAMMA[None], mass=M[None])
    np.testing.assert_array_equal(batch.kc_config, [coriolis_bounds(PUMA, Q, QD).kc_config])


def with_value(array, index, value):
    bad = array.copy()
    bad[index] = value
    return bad


@pytest.mark.parametrize("name, value, match", [
    ("christoffel", GAMMA[:2], r"christoffel must have shape \(6, 6, 6\)"),
    ("christoffel", GAMMA[None], r"christoffel must have shape \(6, 6, 6\)"),
    ("christoffel", GAMMA.ravel(), r"christoffel must have shape"),
    ("christoffel", "abc", "christoffel is not an array of numbers"),
    ("christoffel", GAMMA * (1 + 1j), "christoffel .*complex"),
    ("christoffel", with_value(GAMMA, (1, 2, 3), np.nan), r"christoffel\[1, 2, 3\] is nan"),
    ("christoffel", with_value(GAMMA, (0, 1, 2), -np.inf), r"christoffel\[0, 1, 2\] is -inf"),
    ("mass", M[:, :5], r"mass must have shape \(6, 6\)"),
    ("mass", object(), "mass is not an array of numbers"),
    ("mass", M * 1j, "mass .*complex"),
    ("mass", with_value(M, (0, 5), np.nan), r"mass\[0, 5\] is nan"),
], ids=["christoffel-short", "christoffel-batch-for-one-q", "christoffel-flat", "christoffel-text",
        "christoffel-complex", "christoffel-nan", "christoffel-inf", "mass-short", "mass-object",
        "mass-complex", "mass-nan-in-the-upper-triangle"])
def test_given_christoffel_and_mass_are_checked(name, value, match):
    given = {"christoffel": GAMMA, "mass": M, name: value}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning is not a refusal
        with pytest.raises(StateError, match=match):
            coriolis_bounds(PUMA, Q, QD, **given)


def test_given_christoffel_of_another_batch_is_refused():
    q = np.stack([Q, Q, Q])
    with pytest.raises(StateError, match=r"christoffel must have shape \(3, 6, 6, 6\).*got \(2, 6, 6, 6\)"):
        coriolis_bounds(PUMA, q, q, christoffel=np.stack([GAMMA, GAMMA]))


# ---------------------------------------------------------------------------
# simulate: every argument that goes to scipy is checked first


@pytest.mark.parametrize("arguments, name", [
    ({"t_end": "abc"}, "t_end"),
    ({"t_end": None}, "t_end"),
    ({"t_end": np.array([1.0, 2.0])}, "t_end"),
    ({"t_end": np.inf}, "t_end"),
    ({"integrator": "bogus"}, "integrator"),
    ({"method": "bogus"}, "method"),
    ({"max_step": 0}, "max_step"),
    ({"max_step": np.nan}, "max_step"),
    ({"t_eval": [0.0, 2.0]}, "t_eval"),
    ({"t_eval": [0.5, 0.1]}, "t_eval"),
    ({"t_eval": [np.nan]}, "t_eval"),
    ({"t_eval": [[0.1]]}, "t_eval"),
    ({"t_eval": ["a"]}, "t_eval"),
    ({"atol": "x"}, "atol"),
    ({"atol": -1e-9}, "atol"),
    ({"atol": np.ones(3)}, "atol"),
    ({"rtol": np.nan}, "rtol"),
    ({"rtol": 1e-17}, "rtol"),
    ({"rtol": 1e-6j}, "rtol"),
    ({"torque": None}, "torque"),
], ids=lambda value: repr(value) if isinstance(value, dict) else None)
def test_simulate_settings_are_checked_before_integrating(arguments, name):
    calls = []

    def torque(t, q, qd):
        calls.append(t)
        return ZERO

    given = {"torque": torque, "t_end": 1.0, **arguments}
    with pytest.raises(DynamicsError, match=f"simulate: {name} ") as info:
        simulate(PUMA, ZERO, ZERO, given.pop("torque"), given.pop("t_end"), **given)
    assert not isinstance(info.value, StateError)
    assert calls == []


@pytest.mark.parametrize("q0, match", [
    (np.where(np.arange(N) == 2, np.nan, 0.0), r"q0\[2\] \(joint 'joint3'\) is nan"),
    (np.full(N, 1e300), r"q0\[0\] \(joint 'joint1'\) is 1e\+300, beyond the limit"),
], ids=["nan", "1e300"])
def test_simulate_names_a_bad_initial_position(q0, match):
    with pytest.raises(StateError, match=match):
        simulate(PUMA, q0, ZERO, no_torque, 1.0)


def test_simulate_names_a_bad_initial_velocity():
    with pytest.raises(StateError, match=r"qd0\[5\] \(joint 'joint6'\) is inf"):
        simulate(PUMA, ZERO, np.where(np.arange(N) == 5, np.inf, 0.0), no_torque, 1.0)


def test_simulate_still_takes_array_tolerances_and_times():
    times = np.linspace(0.0, 0.1, 5)
    sim = simulate(PUMA, ZERO, ZERO, no_torque, 0.1, atol=np.full(2 * N, 1e-9), rtol=1e-8,
                   max_step=0.05, t_eval=times)
    np.testing.assert_array_equal(sim.t, times)


# ---------------------------------------------------------------------------
# payloads: complex numbers are refused like complex q


@pytest.mark.parametrize("mass, com, inertia, what", [
    (1.0, np.array([1j, 0, 0]), np.eye(3) * 0.01, "CoM"),
    (1.0, np.zeros(3), np.eye(3) * (0.01 + 0.01j), "inertia"),
    (1.0 + 1j, np.zeros(3), np.eye(3) * 0.01, "mass"),
    (np.complex128(1.0), np.zeros(3), np.eye(3) * 0.01, "mass"),
    (1.0, np.array([np.complex128(1j), 0.0, 0.0], dtype=object), np.eye(3) * 0.01, "CoM"),
    (1.0, ["0", "0", "0"], np.eye(3) * 0.01, "CoM"),
    (10**400, np.zeros(3), np.eye(3) * 0.01, "mass"),
], ids=["com", "inertia", "mass", "numpy-complex-mass", "complex-objects", "text", "int-overflow"])
def test_payload_numbers_must_be_real(mass, com, inertia, what):
    before = mass_matrix(PUMA, Q)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning is not a refusal
        with pytest.raises(PayloadError, match=f"payload on link 'link6': {what} is not real numbers"):
            PUMA.with_payload("link6", mass, com, inertia)
    assert PUMA.payloads == {}
    np.testing.assert_array_equal(mass_matrix(PUMA, Q), before)


def test_payload_mass_must_be_one_number():
    with pytest.raises(PayloadError, match="mass must be one number"):
        PUMA.with_payload("link6", [1.0, 2.0], np.zeros(3), np.eye(3) * 0.01)


# ---------------------------------------------------------------------------
# A first argument that is no Model


@pytest.mark.parametrize("call", [
    lambda model: coriolis_bounds(model, ZERO, ZERO),
    lambda model: simulate(model, ZERO, ZERO, no_torque, 1.0),
    lambda model: mass_matrix(model, ZERO),
    lambda model: mass_matrix(model, [0.0] * 9),
    lambda model: gravity_torques(model, ZERO),
    lambda model: inverse_dynamics(model, ZERO, ZERO, ZERO),
    lambda model: coriolis_matrix(model, ZERO, ZERO),
    lambda model: christoffel_symbols(model, ZERO),
    lambda model: forward_dynamics(model, ZERO, ZERO, ZERO),
    lambda model: forward_dynamics(model, ZERO, ZERO, ZERO, method="cholesky"),
    lambda model: all_terms(model, ZERO, ZERO),
    lambda model: CoriolisConstantRefinement(model),
    lambda model: coriolis_constant_interval(model),
    lambda model: global_coriolis_constant(model),
], ids=["coriolis_bounds", "simulate", "mass_matrix", "mass_matrix-list", "gravity_torques", "inverse_dynamics", "coriolis_matrix",
        "christoffel_symbols", "forward_dynamics", "forward_dynamics-cholesky", "all_terms",
        "CoriolisConstantRefinement", "coriolis_constant_interval", "global_coriolis_constant"])
@pytest.mark.parametrize("model", [None, "panda", puma_urdf(), pin.Model()],
                         ids=["None", "name", "urdf-text", "pinocchio-model"])
def test_every_public_function_expects_a_model(call, model):
    with pytest.raises(DynamicsError, match="the first argument must be a Model"):
        call(model)
