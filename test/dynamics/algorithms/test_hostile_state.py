"""Joint states that used to become NaN, inf or a wrong finite value (issue 13, items 3 and 4).

Each case failed on the main of 2026-11-22 (fd19fec): a huge finger position
gave NaN M and g (g is finite now: it no longer goes through the rotational
inertias), velocities of 1e85 gave coriolis_norm = inf with C finite,
1e200 gave coriolis_norm = 0.0, inverse dynamics returned inf, and complex
q or qd were accepted with the imaginary part dropped. Now the kernels check
every output's finiteness and refuse what overflowed, and complex input is a
StateError; a good call afterwards still matches Pinocchio.
"""
import numpy as np
import pytest

from robots import rel_err

from robot_dynamics_ros.dynamics import (
    DynamicsError, StateError, all_terms, christoffel_symbols, coriolis_bounds, coriolis_matrix,
    forward_dynamics, gravity_torques, inverse_dynamics, load_urdf, mass_matrix, puma_urdf, simulate)


@pytest.fixture(scope="module")
def panda(model_and_oracle):
    return model_and_oracle("panda")


def _still_serves(model, oracle):
    q = np.linspace(-0.5, 0.5, model.nv)
    assert rel_err(mass_matrix(model, q), oracle.mass_matrix(q)) <= 1e-12
    assert rel_err(gravity_torques(model, q), oracle.gravity_torques(q)) <= 1e-12


def test_huge_finger_position_is_an_error_not_nan(panda):
    model, oracle = panda
    q = np.zeros(model.nv)
    q[model.joint_names.index("panda_finger_joint1")] = 1e160
    for call in (lambda: mass_matrix(model, q), lambda: all_terms(model, q, np.zeros(model.nv))):
        with pytest.raises(DynamicsError, match="not finite"):
            call()
    # g needs only masses and first moments (m x, about 1e160 N m): finite, so served
    assert np.all(np.isfinite(gravity_torques(model, q)))
    _still_serves(model, oracle)


@pytest.mark.parametrize("speed", [1e85, 1e160, 1e200])
def test_huge_velocities_are_an_error_not_a_wrong_bound(panda, speed):
    model, oracle = panda
    q, qd = np.full(model.nv, 0.3), np.full(model.nv, speed)
    for call in (lambda: all_terms(model, q, qd), lambda: coriolis_bounds(model, q, qd)):
        with pytest.raises(DynamicsError, match="not finite"):
            call()
    if speed >= 1e160:  # C and tau overflow too (their squares of qd)
        with pytest.raises(DynamicsError, match="not finite"):
            inverse_dynamics(model, q, qd, np.zeros(model.nv))
    _still_serves(model, oracle)


def test_huge_velocities_in_a_batch_name_the_sample(panda):
    model, _ = panda
    q, qd = np.zeros((100, model.nv)), np.zeros((100, model.nv))
    qd[71] = 1e200
    with pytest.raises(DynamicsError, match="sample 71"):
        inverse_dynamics(model, q, qd, qd * 0)


def _calls(model, q, qd):
    zero = np.zeros(model.nv) if model is not None else None
    return {
        "mass_matrix": lambda: mass_matrix(model, q),
        "gravity_torques": lambda: gravity_torques(model, q),
        "inverse_dynamics": lambda: inverse_dynamics(model, q, qd, zero),
        "coriolis_matrix": lambda: coriolis_matrix(model, q, qd),
        "christoffel_symbols": lambda: christoffel_symbols(model, q),
        "forward_dynamics": lambda: forward_dynamics(model, q, qd, zero),
        "coriolis_bounds": lambda: coriolis_bounds(model, q, qd),
        "all_terms": lambda: all_terms(model, q, qd),
        "simulate": lambda: simulate(model, q, qd, lambda t, q, qd: zero, 0.01),
    }


TAKE_NO_QD = ("mass_matrix", "gravity_torques", "christoffel_symbols")


@pytest.mark.parametrize("function,which", [
    (function, which) for function in _calls(None, 0, 0) for which in ("q", "qd")
    if which == "q" or function not in TAKE_NO_QD])
def test_complex_values_are_refused(function, which):
    model = load_urdf(puma_urdf())
    real = np.full(model.nv, 0.2)
    args = {"q": real, "qd": real, which: 1j * np.ones(model.nv)}
    with pytest.raises(StateError, match="complex"):
        _calls(model, args["q"], args["qd"])[function]()
