"""Checking q, qd, qdd, tau and mapping them to and from all joints.

Every public algorithm takes one sample ``(n,)`` or a batch ``(N, n)``; the
compiled kernels see the values of all joints of the tree (``nb``), and for
``mimic="reduce"`` models the coordinate change of docs/math.md is applied here.

Shapes and types are checked in Python (one float64 sample by
``calls.sample_entry``, anything else here), finiteness in the compiled kernels:
they check every input before a sample and every output after it, and
return the first sample that failed, which ``raise_failure`` then explains.
That is one pass over values that are in the cache anyway, where a separate
compiled check would cost a dispatcher call per argument.
"""
import numpy as np

from ..errors import DynamicsError, StateError, not_a_model
from .model import QUATERNION_TOLERANCE, Model

F64 = np.dtype(np.float64)


def configuration_array(model, value, name="q", dtype=F64):
    """``value`` as a C-contiguous ``dtype`` array (nq,) or (N, nq): a
    configuration q. Raises ``StateError`` naming the argument, and
    DynamicsError when ``model`` is no ``Model``; the kernels find
    non-finite values and bad base quaternions (``raise_failure``)."""
    if not isinstance(model, Model):
        raise not_a_model(model)
    return _checked(model, value, name, model.nq, None, dtype)


def joint_array(model, value, name, like=None, dtype=F64):
    """``value`` as a C-contiguous ``dtype`` array (nv,) or (N, nv): qd,
    qdd, tau and the like (nv = nq but for a floating base).

    ``like``: an already checked array (q or another) whose batch shape
    ``value`` must have. Raises ``StateError`` naming the argument.
    Non-finite values are found by the kernels (``raise_failure``).
    """
    return _checked(model, value, name, model.nv, like, dtype)


def _checked(model, value, name, n, like, dtype):
    want = None if like is None else like.shape[:-1] + (n,)
    if (type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous
            and (value.shape == want if want is not None
                 else value.shape == (n,) or (value.ndim == 2 and value.shape[1] == n))):
        return value  # the hot path: nothing to convert
    try:
        raw = np.asarray(value)
        if raw.dtype.kind == "c":
            raise TypeError("complex values: the imaginary part would be lost")
        if raw.dtype.kind not in "biuf":
            raise TypeError(f"dtype {raw.dtype}")
        arr = np.ascontiguousarray(raw, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise StateError(f"{name} is not an array of numbers ({exc})") from None
    shape = arr.shape
    if len(shape) not in (1, 2) or shape[-1] != n or (want is not None and shape != want):
        expected = f"{want}" if want is not None else f"({n},) or (N, {n})"
        layout = ""
        if model.floating:
            layout = (f" (floating base: q holds the base position (3), its quaternion "
                      f"(x, y, z, w) and the {len(model.joint_names)} joints, nq = "
                      f"{model.nq}; qd, qdd and tau the base's linear and angular "
                      f"velocity (6) and the joints, nv = {model.nv})")
        raise StateError(f"{name} must have shape {expected} for model "
                         f"'{model.name}', got {shape}{layout}")
    return arr


def check_out(out, shape, dtype=F64):
    """A caller's ``out=`` array, or a new one: C-contiguous, ``shape``, ``dtype``."""
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not (type(out) is np.ndarray and out.shape == shape and out.dtype == dtype
            and out.flags.c_contiguous and out.flags.writeable):
        got = (f"{out.shape} {out.dtype}" if isinstance(out, np.ndarray)
               else type(out).__name__)
        raise DynamicsError(f"out must be a writable C-contiguous {dtype} array "
                            f"of shape {shape}, got {got}")
    return out


def kernel_out(model, out, shape, dtype=F64):
    """Where a kernel writes a result over all joints: the caller's ``out``
    (checked), or a new array when there is none or the model is reduced."""
    return check_out(None if model.reduced else out, shape, dtype)


def into(out, value):
    """``value`` in the caller's ``out`` when there is one."""
    if out is None or value is out:
        return value
    check_out(out, value.shape, value.dtype)[...] = value
    return out


def raise_failure(model, sample, inputs, what):
    """Raise for the first failed ``sample`` that a kernel reported.

    ``inputs``: (name, array) of the caller's arrays in q order. A
    non-finite input is named with its joint (``StateError``); otherwise the
    result ``what`` overflowed (``DynamicsError``).
    """
    raise_bad_input(model, sample, inputs)
    where = f" in sample {sample}" if inputs[0][1].ndim == 2 else ""
    raise DynamicsError(
        f"{what} of model '{model.name}' is not finite{where}: the state or the "
        "model's numbers are too large for floating point")


def raise_bad_input(model, sample, inputs):
    """Raise ``StateError`` naming the first non-finite input of ``sample``
    (by its joint or base coordinate), or a floating base's quaternion in q
    that is not of unit length (``model.QUATERNION_TOLERANCE``)."""
    for name, arr in inputs:
        row = arr[sample] if arr.ndim == 2 else arr
        configuration = row.shape[-1] == model.nq
        names = model.configuration_names if configuration else model.velocity_names
        base = len(names) - len(model.joint_names)
        bad = np.flatnonzero(~np.isfinite(row))
        if bad.size:
            k = int(bad[0])
            where = f"[{sample}, {k}]" if arr.ndim == 2 else f"[{k}]"
            kind = "base coordinate" if k < base else "joint"
            raise StateError(f"{name}{where} ({kind} '{names[k]}') is {row[k]}")
        if model.floating and configuration:
            quaternion = row[3:7].astype(float)
            norm = float(np.sqrt(quaternion @ quaternion))
            if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
                where = f"[{sample}, 3:7]" if arr.ndim == 2 else "[3:7]"
                raise StateError(
                    f"{name}{where}, the base orientation quaternion (x, y, z, w) = "
                    f"{quaternion.tolist()}, has norm {norm:.9g}: it must be a unit "
                    f"quaternion (within {QUATERNION_TOLERANCE:g}; it is normalized)")


def at_identity_base(model, joint_q):
    """Configurations q (N, nq) for joint values (N, joints): a floating
    base at the identity pose (position 0, quaternion (0, 0, 0, 1)) before
    them; ``joint_q`` itself for a fixed base."""
    if not model.floating:
        return joint_q
    pose = np.zeros((len(joint_q), model.nq - len(model.joint_names)))
    pose[:, -1] = 1.0
    return np.concatenate((pose, joint_q), axis=1)


def to_all_joints(model, arr, offset):
    """Values of all joints, (nb,) or (N, nb), from q-order values: q
    (``offset``: with the mimic offsets, a floating base's 7 pose numbers
    passed on) or a velocity-space array (a floating base's 6 speeds
    passed on, the identity block of ``coordinate_map``)."""
    if not model.reduced:
        return arr
    base = model.nq - model.nv + model.base_bodies if offset else model.base_bodies
    body = model.base_bodies
    full = arr[..., base:] @ model.coordinate_map[body:, body:].T
    if offset:
        full += model.coordinate_offset[body:]
    if base:
        full = np.concatenate((arr[..., :base], full), axis=-1)
    return np.ascontiguousarray(full, dtype=arr.dtype)


def vector_result(model, out):
    """Torque-like results over all joints back in q coordinates: J^T out."""
    return out @ model.coordinate_map if model.reduced else out


def matrix_result(model, out):
    """Matrix results over all joints back in q coordinates: J^T out J."""
    if model.reduced:
        jmap = model.coordinate_map
        out = np.einsum("ai,...ab,bj->...ij", jmap, out, jmap)
    return out


def tensor_result(model, out):
    """3-tensor results back in q coordinates:
    ``out_r[i, j, k] = sum J[a, i] J[b, j] J[c, k] out[a, b, c]``."""
    if model.reduced:
        jmap = model.coordinate_map
        # optimize: one index at a time, O(nb^4) instead of O(nb^6)
        out = np.einsum("ai,bj,ck,...abc->...ijk", jmap, jmap, jmap, out,
                        optimize=True)
    return out
