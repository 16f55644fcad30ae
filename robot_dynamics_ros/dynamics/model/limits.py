"""Largest magnitudes accepted where numbers enter a model (URDF, payloads, gravity).

A finite number can still overflow in the arithmetic it goes through: an
origin of 1e155 m squared in a parallel-axis term, a mass of 1e308 times a
lever arm. Each limit below is far beyond any real robot yet leaves room for
that arithmetic over the largest accepted tree (``MAX_LINKS`` links, each
``MAX_LENGTH`` from its parent, each of ``MAX_MASS``): lever arms stay below
1e10 m and body inertias below 1e40 kg m^2, so even the squares that norms and
eigenvalue solvers form stay far from overflow (1.8e308).
"""
import numbers

import numpy as np

MAX_LENGTH = 1e6        # m: origins, centres of mass, prismatic limits
MAX_ANGLE = 1e6         # rad: rpy angles, revolute limits (beyond, cos and sin lose all digits)
MAX_MASS = 1e9          # kg
MAX_INERTIA = 1e15      # kg m^2, each inertia matrix entry
MAX_GRAVITY = 1e6       # m/s^2, each component
MAX_MIMIC = 1e6         # |multiplier| and |offset| of a mimic joint, also along a chain of mimics
MAX_URDF_BYTES = 10 * 1024 * 1024  # a description: large robots' stay an order of magnitude below
MAX_LINKS = 10_000      # links, and joints, in one description
MAX_DOF = 200           # moving joints: Gamma alone holds n^3 doubles (8 n^3 bytes)
# A joint limit beyond the length or angle limit means "no limit": real URDFs
# write +-1e16 for it.
NO_LIMIT_BEYOND = max(MAX_LENGTH, MAX_ANGLE)


def bounded(values, limit, what, error):
    """``values`` as a float array, or ``error`` naming ``what`` when any
    element is non-finite or beyond ``limit`` in magnitude."""
    array = np.asarray(values, dtype=float)
    if not np.all(np.abs(array) <= limit):  # also false for NaN
        raise error(f"{what}: {array.tolist()} is not finite or exceeds the limit "
                    f"of {limit:g} in magnitude")
    return array


def real_numbers(values, what, error, shape=None):
    """``values`` as a new float array, or ``error`` naming ``what`` when they
    are not real numbers: complex (the imaginary part would be lost), text,
    other objects, or integers beyond the range of a float. ``shape``: the
    one shape accepted (``()``: one number), when given."""
    try:
        raw = np.asarray(values)
        kind = raw.dtype.kind
        if kind == "c":
            raise TypeError("complex values: the imaginary part would be lost")
        # objects: Python integers too large for int64, or anything else
        if kind not in "biufO" or (kind == "O" and not all(
                isinstance(x, numbers.Real) for x in raw.flat)):
            raise TypeError(f"dtype {raw.dtype}")
        array = raw.astype(float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise error(f"{what} is not real numbers ({exc})") from None
    if shape is not None and array.shape != shape:
        expected = "one number" if shape == () else f"of shape {shape}"
        raise error(f"{what} must be {expected}, got shape {array.shape}")
    return array
