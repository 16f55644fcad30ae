"""Rigid-body inertia parameters: validation and combination of bodies.

A body inertia is stored as the 10-vector ``[m, c (3), Ixx, Ixy, Ixz, Iyy,
Iyz, Izz]`` with ``c`` the CoM in the body frame and the rotational inertia
about the CoM in body axes.
"""
import numpy as np

from ..errors import PayloadError
from .limits import MAX_INERTIA, MAX_LENGTH, MAX_MASS, real_numbers

_UPPER = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def pack_inertia(mass, com, inertia_c):
    """The 10-vector of a body from mass, CoM (3,) and inertia (3, 3)."""
    return np.concatenate(([mass], com, [inertia_c[i, j] for i, j in _UPPER]))


def unpack_inertia(params):
    """Mass, CoM (3,) and inertia about the CoM (3, 3) of a 10-vector."""
    ixx, ixy, ixz, iyy, iyz, izz = params[4:]
    inertia_c = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return params[0], np.array(params[1:4]), inertia_c


def combine_inertias(params, mass, com, inertia_c):
    """The 10-vector of a body with a second rigid body attached to it.

    Masses add, the CoM is the mass-weighted mean, and each rotational
    inertia moves to the common CoM by the parallel-axis theorem.
    """
    m1, c1, i1 = unpack_inertia(params)
    total = m1 + mass
    if total == 0.0:
        return pack_inertia(0.0, np.zeros(3), i1 + inertia_c)
    c = (m1 * c1 + mass * com) / total
    return pack_inertia(total, c, i1 + _shift(m1, c1 - c) + inertia_c
                        + _shift(mass, com - c))


def _shift(mass, d):
    """Parallel-axis term: inertia of a point mass at offset d."""
    return mass * (np.dot(d, d) * np.eye(3) - np.outer(d, d))


def check_inertia(mass, com, inertia, *, where, triangle=False, moves=True,
                  error=PayloadError):
    """Validated (mass, com, inertia) as floats, or ``error`` naming ``where``.

    Checks: finite numbers within the limits of ``limits`` (mass, CoM,
    inertia entries), mass >= 0, inertia symmetric and positive
    semidefinite and, when ``triangle``, the triangle inequalities of its
    principal moments (what a real rigid body satisfies). A body that never
    moves (``moves=False``: fixed to a fixed base) is checked for its numbers
    and mass only: its inertia matrix enters nothing, and real URDFs carry
    slightly indefinite ones there (tiago's antennas). The tolerance is
    relative to the largest moment, so that inertias written with a few
    digits (as in URDF files) pass, plus 1e-12 kg m^2 for inertias that are
    rounding noise around zero.
    """
    mass = float(real_numbers(mass, f"{where}: mass", error, shape=()))
    com = real_numbers(com, f"{where}: CoM", error).reshape(-1)
    inertia = real_numbers(inertia, f"{where}: inertia", error)
    if com.shape != (3,):
        raise error(f"{where}: CoM must have 3 elements, got {com.size}")
    if inertia.shape != (3, 3):
        raise error(f"{where}: inertia must be 3x3, got shape {inertia.shape}")
    for what, values, limit in (("mass", mass, MAX_MASS), ("CoM", com, MAX_LENGTH),
                                ("inertia", inertia, MAX_INERTIA)):
        if not np.all(np.abs(values) <= limit):  # also false for NaN
            raise error(f"{where}: {what} {np.asarray(values).tolist()} is not "
                        f"finite or exceeds the limit of {limit:g} in magnitude")
    if mass < 0.0:
        raise error(f"{where}: negative mass {mass}")
    if not moves:
        return mass, com, inertia
    scale = max(1e-300, float(np.max(np.abs(inertia))))
    tol = 1e-9 * scale + 1e-12
    if np.max(np.abs(inertia - inertia.T)) > tol:
        raise error(f"{where}: inertia is not symmetric: {inertia.tolist()}")
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if moments[0] < -tol:
        raise error(f"{where}: inertia is not positive semidefinite "
                    f"(principal moments {moments.tolist()})")
    if triangle and moments[0] + moments[1] < moments[2] - tol:
        raise error(f"{where}: principal moments {moments.tolist()} violate "
                    "the triangle inequality (no rigid body has them)")
    return mass, com, inertia


def subtree_holds_mass(parent, inertia):
    """(nb,) int64: 1 where the subtree of body k (k and its descendants)
    has a mass or a rotational inertia that is not zero, 0 where every body
    of it is massless (romeo's fingers). The joint of such a subtree moves
    nothing: its row and column of M, C and Gamma and its slice of Gamma
    vanish at every q (``bounds.massive_speeds``). Children after their
    parent (``parent[i] < i``). Cost: 10 n."""
    # a zero mass with zero rotational inertia is no body, wherever its CoM
    holds = np.array([params[0] != 0.0 or np.any(np.asarray(params[4:]) != 0.0)
                      for params in inertia], dtype=np.int64)
    for i in range(len(parent) - 1, -1, -1):
        if parent[i] >= 0 and holds[i]:
            holds[parent[i]] = 1
    return holds
