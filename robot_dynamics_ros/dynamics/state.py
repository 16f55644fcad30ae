"""Checking q, qd, qdd, tau and mapping them to and from all joints.

Every public algorithm takes one sample ``(n,)`` or a batch ``(N, n)``; the
compiled kernels always see a batch over all joints of the tree (``nb``), and
for ``mimic="reduce"`` models the coordinate change of MATH.md is applied here.
"""
import numpy as np
from numba import njit

from .errors import StateError


@njit(cache=True)
def _first_nonfinite(values):
    flat = values.ravel()
    for i in range(flat.shape[0]):
        if not np.isfinite(flat[i]):
            return i
    return -1


def joint_array(model, value, name, like=None, dtype=np.float64):
    """``value`` as a ``dtype`` array of shape (n,) or (N, n), checked.

    ``like``: an already checked array whose shape ``value`` must have.
    ``dtype``: float64, or float32 for the single-precision kernels.
    Raises ``StateError`` naming the argument, and for a non-finite entry
    the joint.
    """
    try:
        arr = np.ascontiguousarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise StateError(f"{name} is not an array of numbers ({exc})") from None
    n = model.nv
    shape = arr.shape
    if (len(shape) not in (1, 2) or shape[-1] != n
            or (like is not None and shape != like.shape)):
        want = f"{like.shape}" if like is not None else f"({n},) or (N, {n})"
        raise StateError(f"{name} must have shape {want} for model "
                         f"'{model.name}', got {shape}")
    bad = _first_nonfinite(arr)
    if bad >= 0:
        sample, joint = divmod(bad, n)
        where = f"[{sample}, {joint}]" if arr.ndim == 2 else f"[{joint}]"
        raise StateError(f"{name}{where} (joint '{model.joint_names[joint]}') "
                         f"is {arr.reshape(-1)[bad]}")
    return arr


def to_all_joints(model, arr, offset):
    """(N, nb) values of all joints from q-order values (n,) or (N, n)."""
    batch = arr if arr.ndim == 2 else arr[None]
    if not model.reduced:
        return batch
    full = batch @ model.coordinate_map.T
    if offset:
        full += model.coordinate_offset
    return np.ascontiguousarray(full)


def vector_result(model, out, single):
    """Torque-like results (N, nb) back in q coordinates: J^T out."""
    if model.reduced:
        out = out @ model.coordinate_map
    return out[0] if single else out


def matrix_result(model, out, single):
    """Matrix results (N, nb, nb) back in q coordinates: J^T out J."""
    if model.reduced:
        jmap = model.coordinate_map
        out = np.einsum("ai,nab,bj->nij", jmap, out, jmap)
    return out[0] if single else out


def tensor_result(model, out, single):
    """3-tensor results (N, nb, nb, nb) back in q coordinates:
    ``out_r[i, j, k] = sum J[a, i] J[b, j] J[c, k] out[a, b, c]``."""
    if model.reduced:
        jmap = model.coordinate_map
        # optimize: one index at a time, O(nb^4) instead of O(nb^6)
        out = np.einsum("ai,bj,ck,nabc->nijk", jmap, jmap, jmap, out,
                        optimize=True)
    return out[0] if single else out
