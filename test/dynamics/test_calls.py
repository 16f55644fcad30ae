"""The hot path's check (``calls.sample_entry``, ``calls.is_sample``): which
arguments a kernel bound to a ``Data`` takes as they are. The two spell the
same rule; here they must agree, on what passes and on what does not."""
import numpy as np
import pytest

from robot_dynamics_ros.dynamics import DynamicsError, load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.algorithms.crba import _mass_matrix
from robot_dynamics_ros.dynamics.calls import is_sample, sample_entry

from robots import example_robot_urdf


def _cases():
    model = load_urdf(puma_urdf())
    floating = load_urdf(puma_urdf(), base="floating")
    q, qd = np.zeros(model.nq), np.zeros(model.nv)
    qf = np.zeros(floating.nq)
    qf[6] = 1.0
    yield model, (q, qd), True
    yield model, (q[::-1], qd[::-1]), True  # any strides
    yield floating, (qf, np.zeros(floating.nv)), True
    yield model, (q.astype(np.float32), qd), False
    yield model, (q, qd.astype(np.float32)), False
    yield model, (list(q), qd), False
    yield model, (q[None], qd), False  # a batch of one
    yield model, (np.zeros(model.nq + 1), qd), False
    yield floating, (np.zeros(floating.nv), np.zeros(floating.nv)), False  # v's size for q
    yield model, (q, np.zeros(model.nv + 1)), False


def test_sample_entry_and_is_sample_agree():
    for model, arrays, expected in _cases():
        assert is_sample(model, *arrays) is expected
        assert (sample_entry(_mass_matrix, model, *arrays) is not None) is expected


def test_a_mimic_reduced_model_is_never_a_sample():
    model = load_urdf(example_robot_urdf("pr2"), mimic="reduce")
    q, qd = np.zeros(model.nq), np.zeros(model.nv)
    assert model.reduced and not is_sample(model, q, qd)
    assert sample_entry(_mass_matrix, model, q, qd) is None


@pytest.mark.parametrize("check", [is_sample, lambda *a: sample_entry(_mass_matrix, *a)])
def test_not_a_model_is_refused(check):
    with pytest.raises(DynamicsError, match="must be a Model"):
        check("panda", np.zeros(7), np.zeros(7))
