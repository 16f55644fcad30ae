"""K_c over a payload range: every payload on one link whose matter lies in a
box B of the link's frame, of mass at most ``mass_max``
(docs/coriolis_constant.md, "Payload ranges").

Why finitely many models suffice. Gamma is linear in each body's inertial
parameters ``pi = integral (1, x, x x^T) dmu`` (mass, first moment, second
moment about the link's origin), so for fixed q, ``pi -> k_c(q, pi) = N(Gamma(q,
pi))`` is a norm of an affine map of pi, hence convex, and ``K_c(pi) =
sup_q k_c(q, pi)``, a supremum of convex functions, is convex in pi for
every pi, physical or not. A payload in the range is a measure on B of mass
at most ``mass_max``: a mixture of 0 and point masses ``mass_max`` at x in
B, whose parameters ``mass_max (1, x, x x^T)`` lie in the polytope P below.
So K_c of every payload in the range is at most the largest K_c at P's
vertices, each an ordinary model (``vertex_model``) certified on its own.

The polytope. Per axis a, the arc ``(x_a, x_a^2)``, x_a in [lo_a, hi_a],
lies in the triangle T_a with vertices ``(lo, lo^2)``, ``(hi, hi^2)`` (the
chord above) and ``((lo + hi) / 2, lo hi)`` (where the tangents at both
ends meet, below). ``(1, x, x x^T)`` is multilinear in the three points
``(x_a, x_a^2)`` of T_x, T_y, T_z (the products x_a x_b take one factor from
each), so over T_x x T_y x T_z its convex hull is spanned by the 27
combinations of the triangles' vertices. With the zero payload: 28 vertices.
A vertex is a point mass ``mass_max`` at u (the three first coordinates)
with a "variance" ``s_a - u_a^2`` per axis: 0 on the arc, ``-((hi - lo) /
2)^2`` at the tangents' vertex: not a physical body, which convexity does
not need (the first bound and the box search hold for any parameters: the
first bound takes the inertia's absolute row sums). The 8 vertices with
every axis on the arc are point masses at B's corners, physical: with the
zero payload, they give the certificate's lower end.

Which payloads a range certificate serves (``covers``): those whose
parameters are found, exactly, to be a combination of the vertices with
nonnegative weights summing to at most 1: a linear program (scipy's HiGHS)
finds the weights, and its basis is solved again in rational arithmetic, so
rounding cannot let a payload outside P through; a payload it cannot
confirm gets the first bound.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ..errors import PayloadError
from ..calls import PerThread
from ..model.inertia import combine_inertias


class PayloadRange(NamedTuple):
    """Payloads on ``link`` of mass at most ``mass_max`` whose matter lies in
    the box ``low`` <= x <= ``high`` (3,) of the link's frame."""

    link: str
    mass_max: float
    low: tuple
    high: tuple

    def as_document(self):
        return {"link": self.link, "mass_max": self.mass_max, "low": list(self.low), "high": list(self.high)}


def payload_range(model, link, mass_max, low, high) -> PayloadRange:
    """A checked ``PayloadRange`` of ``model``, or ``PayloadError`` naming
    the problem (unknown link, a mass that is not positive and finite, a box
    that is not finite or whose low end is above its high end)."""
    if link not in model.link_frames:
        raise PayloadError(f"payload range: '{link}' is not a link of model '{model.name}'")
    mass_max = float(mass_max)
    if not (np.isfinite(mass_max) and mass_max > 0.0):
        raise PayloadError(f"payload range: MASS_MAX {mass_max} is not a positive finite mass")
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if low.shape != (3,) or high.shape != (3,) or not np.all(np.isfinite(low) & np.isfinite(high)):
        raise PayloadError("payload range: the box needs finite XMIN XMAX YMIN YMAX ZMIN ZMAX")
    if np.any(low > high):
        raise PayloadError(f"payload range: the box's low end {low.tolist()} is above its high end {high.tolist()}")
    return PayloadRange(link, mass_max, tuple(low.tolist()), tuple(high.tolist()))


def _axis_points(low, high):
    """The vertices (x, s) of the triangle around the arc (x, x^2) on [low, high]
    as (x, s - x^2): 0 on the arc, negative at the tangents' vertex (one
    point when the interval is one value)."""
    if low == high:
        return [(low, 0.0)]
    middle = 0.5 * (low + high)
    return [(low, 0.0), (high, 0.0), (middle, low * high - middle * middle)]


class Vertex(NamedTuple):
    """A vertex of the range's polytope: a point mass ``mass`` at ``com``
    with second moments ``variance`` (3,) about it along the link's axes
    (negative: not physical), ``physical`` when all are 0."""

    mass: float
    com: tuple
    variance: tuple
    physical: bool


def vertices(payload: PayloadRange):
    """The vertices of the polytope around the range (module docstring), the
    zero payload first."""
    found = [Vertex(0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), True)]
    per_axis = [_axis_points(lo, hi) for lo, hi in zip(payload.low, payload.high)]
    for points in itertools.product(*per_axis):
        com = tuple(x for x, _ in points)
        variance = tuple(v for _, v in points)
        found.append(Vertex(payload.mass_max, com, variance, all(v == 0.0 for v in variance)))
    return found


def without_payload(model, link):
    """``model`` without its payload on ``link`` (itself when it has none)."""
    if link not in model.payloads:
        return model
    return model.with_payload(link, 0.0, np.zeros(3), np.zeros((3, 3)))


def vertex_model(model, payload: PayloadRange, vertex: Vertex):
    """``model`` with ``vertex`` as the payload of the range's link (on top of
    the model's own payloads elsewhere; any payload on that link replaced),
    not checked for physical validity: the search needs the non-physical
    vertices too."""
    body, pose = model.link_frames[payload.link]
    base = without_payload(model, payload.link)
    if vertex.mass == 0.0 or body < 0:
        return base
    variance = np.diag(vertex.variance) * vertex.mass
    inertia_c = np.trace(variance) * np.eye(3) - variance  # the rotational inertia of these second moments
    rotation = pose[:3, :3]
    inertia = base.inertia.copy()
    inertia[body] = combine_inertias(inertia[body], vertex.mass, rotation @ np.asarray(vertex.com) + pose[:3, 3],
                                     rotation @ inertia_c @ rotation.T)
    return replace(base, inertia=inertia, _local=PerThread())


def _parameters(mass, com, second):
    """(10,) mass, first moment, second moments (xx, xy, xz, yy, yz, zz) about
    the link's origin, in any number type."""
    return [mass, mass * com[0], mass * com[1], mass * com[2],
            second[0][0], second[0][1], second[0][2], second[1][1], second[1][2], second[2][2]]


def _vertex_parameters(vertex: Vertex, exact=False):
    number = Fraction if exact else float
    mass = number(vertex.mass)
    com = [number(c) for c in vertex.com]
    second = [[mass * (com[a] * com[b] + (number(vertex.variance[a]) if a == b else 0)) for b in range(3)]
              for a in range(3)]
    return _parameters(mass, com, second)


def covers(payload: PayloadRange, mass, com, inertia) -> bool:
    """Whether the payload (``mass``, ``com`` (3,), ``inertia`` (3, 3) about
    the CoM, in the link's frame) has parameters in the range's polytope,
    confirmed in rational arithmetic (module docstring)."""
    mass = float(mass)
    if mass == 0.0:
        return True
    if not 0.0 < mass <= payload.mass_max:
        return False
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    spread = 0.5 * np.trace(inertia) * np.eye(3) - inertia  # second moments about the CoM
    target = np.array(_parameters(mass, com, spread + mass * np.outer(com, com)), dtype=float)
    corners = [v for v in vertices(payload) if v.mass > 0.0]
    columns = np.array([_vertex_parameters(v) for v in corners], dtype=float).T
    from scipy.optimize import linprog
    scale = np.maximum(np.abs(columns).max(axis=1), np.abs(target))
    scale[scale == 0.0] = 1.0
    result = linprog(np.zeros(len(corners)), A_ub=np.ones((1, len(corners))), b_ub=[1.0],
                     A_eq=columns / scale[:, None], b_eq=target / scale, bounds=(0, None), method="highs")
    if result.status != 0:
        return False
    support = [k for k in np.argsort(-result.x) if result.x[k] > 0.0][:11]
    exact_target = [Fraction(x) for x in _parameters(
        Fraction(mass), [Fraction(c) for c in com],
        [[Fraction(spread[a, b]) + Fraction(mass) * Fraction(com[a]) * Fraction(com[b]) for b in range(3)]
         for a in range(3)])]
    weights = _solve_exactly([_vertex_parameters(corners[k], exact=True) for k in support], exact_target,
                             with_sum=len(support) > 10)
    return weights is not None and all(w >= 0 for w in weights) and sum(weights) <= 1


def _solve_exactly(columns, target, with_sum):
    """The unique rational solution w of sum_k w_k columns[k] = target (and
    sum w = 1 when ``with_sum``), or None when there is none or more than
    one. Gauss-Jordan elimination in fractions."""
    rows = [[column[r] for column in columns] + [target[r]] for r in range(len(target))]
    if with_sum:
        rows.append([Fraction(1)] * len(columns) + [Fraction(1)])
    count = len(columns)
    pivot_row = 0
    for col in range(count):
        pivot = next((r for r in range(pivot_row, len(rows)) if rows[r][col] != 0), None)
        if pivot is None:
            return None  # a free weight: not unique
        rows[pivot_row], rows[pivot] = rows[pivot], rows[pivot_row]
        head = rows[pivot_row][col]
        rows[pivot_row] = [x / head for x in rows[pivot_row]]
        for r in range(len(rows)):
            if r != pivot_row and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[pivot_row])]
        pivot_row += 1
    if any(row[-1] != 0 for row in rows[pivot_row:]):
        return None  # inconsistent
    return [rows[k][-1] for k in range(count)]
