"""Coriolis bounds built from the Christoffel symbols (docs/math.md, last section).

``C(q, x) y = sum_k x[k] Gamma_k(q) y`` with ``Gamma_k = Gamma[:, :, k]``, so
by Cauchy-Schwarz over k, ``||C(q, x) y|| <= k_c(q) ||x|| ||y||`` with
``k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2)``. Controller tuning rules ask for
the global constant ``K_c = sup_q k_c(q)`` over the joint limits (Safeea,
Neto and Bearee 2019, reference [18]).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from ..calls import run
from ..algorithms.christoffel import christoffel_tree, dense_layout, dense_record
from .cores import christoffel_cores, core_size, shifted_spans, slice_core
from ..errors import StateError
from .eigen import (end_bracket, end_eigenvalues, gram_one, largest_eigenvalue, largest_eigenvalues,
                    largest_singular_value, lower_triangles_finite, tridiagonal_bands, tridiagonalize,
                    tridiagonalize_one)
from ..algorithms.finite import all_finite
from ..algorithms.kinematics import floating_record, is_floating
from .lanczos import top_singular_value
from ..model.model import BASE_BODIES
from ..model.records import LOCKSTEP_CORE
from ..model.state import joint_array, raise_failure
from .subspace import certified_top_singular_value

# Groups of fewer slices than this are reduced one by one (``eigen.tridiagonalize_one``):
# the lockstep of ``eigen.tridiagonalize`` vectorizes over the slices, which needs a few
# of them to fill the vector lanes
LOCKSTEP_FROM = 4
# A floating tree's small cores (the largest of size P) are reduced side by side when their
# arithmetic, the sum of their cubed sizes, is at least this many P^3: enough cores to fill
# the lanes, whose shared steps side by side then pay; fewer go one at a time. Where 5
# comes from: docs/benchmarks-archive.md, "Fifth pass: the small reductions side by side"
LOCKSTEP_WORK = 5
# Cores, slices and C of at least this size get a certified norm by the Lanczos
# method (``lanczos.top_singular_value``; should it not certify one, the Gram
# matrix is reduced as for the others): about 14 c^2 of arithmetic against 1.5 c^3,
# but the short loops of its few steps cost more than the reduction below this
LANCZOS_FROM = 30

# What the node publishes on ~/coriolis_bounds, in order (docs/design.md):
# the CoriolisBounds fields and coriolis_bound = kc_config ||qd||.
# New fields are only ever appended, so index-based consumers keep working.
BOUNDS_FIELDS = ("coriolis_norm", "kc_config", "kc_global", "coriolis_bound", "m_eig_min", "m_eig_max",
                 "kc_global_lower")


class CoriolisBounds(NamedTuple):
    """Bounds on the Coriolis terms at (q, qd); arrays of length N for batches.

    - ``coriolis_norm``: ``||C(q, qd)||_2``, the instantaneous value.
    - ``kc_config``: ``k_c(q)``, so ``||C(q, x) y|| <= k_c ||x|| ||y||``.
    - ``kc_global``: a guaranteed upper bound on ``K_c`` over the joint
      limits, the model's current one (``inf`` for a prismatic joint without
      limits); see ``coriolis_constant``.
    - ``m_eig_min``, ``m_eig_max``: extreme eigenvalues of M(q).
    - ``kc_global_lower``: the largest k_c(q) computed at a configuration
      found within the limits: K_c lies in ``[kc_global_lower, kc_global]``.
    """

    coriolis_norm: float | np.ndarray
    kc_config: float | np.ndarray
    kc_global: float
    m_eig_min: float | np.ndarray
    m_eig_max: float | np.ndarray
    kc_global_lower: float


@njit(cache=True, nogil=True)
def gram_matrices(gamma, grams, lanes=None):
    """``grams[r, c, k]`` (lower triangles, k < count) = the Gram matrices
    ``X_k^T X_k`` of the m x m matrices ``X_k = gamma[:, :, k]`` (gamma
    (m, m, count)): ``Gamma_k^T Gamma_k`` of a dense Gamma (n, n, n), or of
    a group of slices' blocks, stored the same way (``group_slice_norms``).

    The innermost loop runs over k, contiguous in memory: the matrices are
    built side by side, ready to be reduced in lockstep. ``lanes``: matrices
    of different sizes in the bottom-right corners, as
    ``eigen.tridiagonalize`` takes them; each entry and each row of a sum is
    then taken over the matrices that reach it (``lanes[i]`` of them reach
    row i; what lies above and left of a corner must be zeros, as a sum
    over four rows may start above it), and a Gram entry outside a matrix's
    corner is 0.
    """
    m, count = gamma.shape[0], gamma.shape[2]
    for r in range(m):
        for c in range(r + 1):
            g = grams[r, c]
            for k in range(count):
                g[k] = 0.0
            reach = count if lanes is None else lanes[c]  # c <= r: the matrices with column c
            i = 0
            while i + 3 < m:  # four rows of X per pass over g, each sum in the order of i
                a1, b1, a2, b2 = gamma[i, r], gamma[i, c], gamma[i + 1, r], gamma[i + 1, c]
                a3, b3, a4, b4 = gamma[i + 2, r], gamma[i + 2, c], gamma[i + 3, r], gamma[i + 3, c]
                # the matrices that reach row i + 3: a row above a corner is zeros
                for k in range(reach if lanes is None else min(reach, lanes[i + 3])):
                    g[k] = (((g[k] + a1[k] * b1[k]) + a2[k] * b2[k]) + a3[k] * b3[k]) + a4[k] * b4[k]
                i += 4
            while i < m:
                a1, b1 = gamma[i, r], gamma[i, c]
                for k in range(reach if lanes is None else min(reach, lanes[i])):
                    g[k] += a1[k] * b1[k]
                i += 1


@njit(cache=True, nogil=True)
def kc_of_reduced(grams, n):
    """sqrt of the sum over k < n of the largest eigenvalue of the reduced
    Gram matrices ``grams[:, :, k]``: k_c once they are tridiagonal."""
    size = grams.shape[0]
    return np.sqrt(_sum_of_largest_reduced(grams, n, np.empty((2, size, n)), np.empty(n)))


@njit(cache=True, nogil=True)
def _sum_of_largest_reduced(grams, count, bands, values):
    """``_sum_of_largest`` of the matrices ``grams[:, :, s]``, s < count,
    reduced in lockstep (``eigen.tridiagonalize``), copied into ``bands``
    (2, >= n, >= count) first."""
    n = grams.shape[0]
    for s in range(count):
        tridiagonal_bands(grams[:, :, s], n, n, bands, s)
    return _sum_of_largest(bands, n, count, values)


@njit(cache=True, nogil=True)
def _sum_of_largest(bands, n, m, values):
    """The sum of the largest eigenvalues (0 at least) of the first m
    tridiagonal Gram matrices in ``bands``, of up to n rows, searched side by
    side (``eigen.largest_eigenvalues``) into ``values`` (>= m)."""
    largest_eigenvalues(bands, n, m, 0.0, values)
    total = 0.0
    for s in range(m):
        total += max(0.0, values[s])
    return total


@njit(cache=True, nogil=True)
def massive_speeds(model, kept):
    """The speeds of a tree whose joints move some mass into ``kept``
    (increasing); returns how many. A joint whose subtree holds no mass at
    all (``model.holds_mass``; romeo's fingers) moves nothing: its row and
    column of M and C and every symbol with it as an index are zero at every
    q (each is linear in the composite inertia ``Ic`` of the subtree of one of
    the three joints, Echeandia and Wensing (2021), eqs. (36)-(40), which is
    zero below such a joint), so its slice of Gamma vanishes and dropping
    its rows and columns changes no singular value but zeros. M then has the
    eigenvalue 0 exactly. Cost: n."""
    count = 0
    for j in range(model.holds_mass.shape[0]):
        if model.holds_mass[j]:
            kept[count] = j
            count += 1
    return count


@njit(cache=True, nogil=True)
def core_massive_rows(model, k, kept):
    """The rows of slice k's core (``cores``: the six of its ancestors, then
    its descendants in body order) that hold mass into ``kept``; returns how
    many (``massive_speeds``: a massless descendant's row and column of the
    core are zero). Cost: n."""
    local = model.slice_local
    for r in range(6):
        kept[r] = r
    count, row = 6, 6
    for d in range(k + 1, local.shape[0]):
        if local[k, d] >= 0:  # a descendant: the next row of the core
            if model.holds_mass[d]:
                kept[count] = row
                count += 1
            row += 1
    return count


@njit(cache=True, nogil=True)
def kept_square(X, kept, count, out):
    """``X[kept][:, kept]`` of the first ``count`` of ``kept``, into the
    start of ``out`` (flat), as a C-contiguous (count, count) matrix."""
    square = out[:count * count].reshape((count, count))
    for r in range(count):
        row = X[kept[r]]
        for c in range(count):
            square[r, c] = row[kept[c]]
    return square


@njit(cache=True, nogil=True)
def bound_values(data, gamma, mass, qd, out):
    """The BOUNDS_FIELDS of one sample into out (7,), all but kc_global and
    kc_global_lower (0 here: the caller sets them).

    ``C = sum_k qd[k] Gamma_k`` and ``k_c = sqrt(sum_k ||Gamma_k||_2^2)``
    (docs/math.md). The n + 2 symmetric eigenproblems, the Gram matrices of the
    n ``Gamma_k`` and of C for the spectral norms and M itself for its
    extreme eigenvalues, are reduced to tridiagonal form in lockstep in
    ``data.grams`` (eigen.py), and their extreme eigenvalues searched in
    lockstep too. Cost: O(n^4).
    """
    n = qd.shape[0]
    coriolis, grams = data.coriolis, data.grams
    speed = 0.0
    for k in range(n):
        speed += qd[k] * qd[k]
    for i in range(n):
        for j in range(n):
            acc = 0.0
            for k in range(n):
                acc += gamma[i, j, k] * qd[k]
            coriolis[i, j] = acc
    gram_matrices(gamma, grams)
    for r in range(n):
        for c in range(r + 1):
            acc = 0.0
            for i in range(n):
                acc += coriolis[i, r] * coriolis[i, c]
            grams[r, c, n] = acc
            grams[r, c, n + 1] = mass[r, c]
    if not lower_triangles_finite(grams):
        out[:] = np.nan  # too large to square: an overflow, not a bound
        return
    tridiagonalize(grams)
    # n + 3 searches side by side (``eigen.end_eigenvalues``): the largest
    # eigenvalues of the n slices' and C's Gram matrices, then M's largest
    # and smallest (its lane twice)
    m = n + 3
    bands, brackets, values = np.empty((2, n, m)), np.empty((3, m)), np.empty(m)
    for s in range(m):
        T = grams[:, :, min(s, n + 1)]
        largest = s < n + 2
        brackets[0, s], brackets[1, s] = end_bracket(T, -np.inf if s == n + 1 else 0.0, largest)
        brackets[2, s] = 1.0 if largest else 0.0
        tridiagonal_bands(T, n, n, bands, s)
    end_eigenvalues(bands, n, m, brackets, values)
    total = 0.0
    for k in range(n):
        total += max(0.0, values[k])
    kc = np.sqrt(total)
    out[0] = np.sqrt(max(0.0, values[n]))
    out[1] = kc
    out[2] = 0.0
    out[6] = 0.0
    out[3] = kc * np.sqrt(speed)
    out[4] = values[n + 2]
    out[5] = values[n + 1]


@njit(cache=True, nogil=True)
def base_slice_norms(model, data, blocks):
    """``sum_k ||Gamma_k||_2^2`` over a floating base's six slices (group 0
    of the blocks, slot k for speed k).

    The three slices of the base's linear speeds are zero (docs/tree_bounds.md,
    "The three linear speeds": a uniform translation has no Coriolis terms), so
    they add nothing; what ``christoffel_tree`` leaves in them is rounding.
    Each slice of an angular speed k has a top singular pair standing far
    above the rest (the whole robot's mass turning the linear momentum about
    axis k: a singular value of about the total mass, twice, where the next
    are a small fraction of it on a humanoid), with right singular
    vectors near the two linear speeds across axis k. Subspace iteration
    from those two coordinates certifies an upper bound of its norm in 3-5
    steps (``subspace.certified_top_singular_value``), within 1e-14 of it;
    should it not, the Gram matrix's largest eigenvalue
    (``eigen.largest_singular_value``). Over the speeds that move mass
    (``massive_speeds``). Cost: 4 n^2 per step, 3 slices.
    """
    n = model.group_size[0]
    kept = data.kept
    count = massive_speeds(model, kept)
    # contiguous iterates of the speeds kept (the base's six among them)
    iterates = data.iterates.reshape(-1)
    X = iterates[:2 * count].reshape((2, count))
    work = iterates[2 * count:(6 + count) * count].reshape((4 + count, count))
    gram = data.gram.reshape(-1)[:count * count].reshape((count, count))
    eig_work = data.eig_work.reshape(-1)[:count * count].reshape((count, count))
    total = 0.0
    for k in range(3, BASE_BODIES):
        G = blocks[k * n * n:(k + 1) * n * n].reshape((n, n))
        if count < n:
            G = kept_square(G, kept, count, data.grams.reshape(-1))  # unused by a tree
        X[:] = 0.0
        X[0, (k - 2) % 3] = 1.0
        X[1, (k - 1) % 3] = 1.0
        norm = certified_top_singular_value(G, X, work)
        if norm < 0.0:
            norm = largest_singular_value(G, gram, eig_work)
        total += norm * norm
    return total


@njit(cache=True, nogil=True)
def skew_symmetric(X):
    """Whether the square X is skew-symmetric to rounding: over the pairs
    r >= c, the sum of ``(X[r, c] + X[c, r])^2`` at most ``(n eps)^2`` times
    that of ``X[r, c]^2 + X[c, r]^2``. Cost: n^2."""
    n = X.shape[0]
    both = size = 0.0
    for r in range(n):
        for c in range(r + 1):
            a, b = X[r, c], X[c, r]
            both += (a + b) * (a + b)
            size += a * a + b * b
    return both <= (n * 2.220446049250313e-16) ** 2 * size


@njit(cache=True, nogil=True)
def group_slice_norms(model, data, blocks):
    """``sum_k ||Gamma_k||_2^2`` over a fixed-base tree's slices, each the
    largest singular value of its block: the Gram matrices of the blocks of
    one size built and reduced to tridiagonal form in lockstep
    (``eigen.tridiagonalize``), groups of fewer than ``LOCKSTEP_FROM`` one
    by one (``eigen.tridiagonalize_one``). Slices of ``LANCZOS_FROM`` rows
    or more, however many of one size, get a certified norm by the Lanczos
    method (``lanczos``; the chain-preferring tree of 100 joints of
    ``bench_tree_scaling`` has groups of 4 and 5 slices of 95 and 50 rows,
    and takes a third of the time) unless skew-symmetric: the slice of a joint
    on the fixed base, on which M does not depend (``Gamma_k + Gamma_k^T =
    dM/dq_k``), has every singular value twice, and a Krylov space holds
    one of each pair, so no certificate would pass. NaN when a Gram matrix
    overflows. Cost: about 2 m_k^3 per slice, 14 m_k^2 by Lanczos."""
    grams = data.block_grams
    total = 0.0
    for g in range(model.group_size.shape[0]):
        m, count, offset = model.group_size[g], model.group_count[g], model.group_offset[g]
        size = m * m * count
        block = blocks[offset:offset + size].reshape((m, m, count))
        if count < LOCKSTEP_FROM or m >= LANCZOS_FROM:
            for s in range(count):
                one = data.eig_work.reshape(-1)[:m * m].reshape((m, m))
                gram = data.gram.reshape(-1)[:m * m].reshape((m, m))
                for r in range(m):
                    for c in range(m):
                        one[r, c] = block[r, c, s]
                if m >= LANCZOS_FROM and not skew_symmetric(one):
                    norm = top_singular_value(one, data.grams.reshape(-1))  # unused by a tree
                    if norm >= 0.0:
                        total += norm * norm
                        continue
                gram_one(one, gram)
                if not all_finite(gram):
                    return np.nan  # too large to square: an overflow, not a bound
                tridiagonalize_one(gram, data.householder)
                total += max(0.0, largest_eigenvalue(gram, 0.0))
            continue
        gram = grams[offset:offset + size].reshape((m, m, count))
        gram_matrices(block, gram)
        if not lower_triangles_finite(gram):
            return np.nan
        tridiagonalize(gram)
        total += _sum_of_largest_reduced(gram, count, data.bands, data.lockstep[1])
    return total


@njit(cache=True, nogil=True)
def core_slice_norms(model, data, blocks, cores):
    """``sum_k ||Gamma_k||_2^2`` over a floating tree's slices but the base's,
    each the largest singular value of its core (``cores``: the block of size
    ``m_k = depth(k) + |subtree(k)|`` made ``6 + |subtree(k)| - 1``): the
    largest eigenvalue of the core's Gram matrix, reduced to tridiagonal
    form. Cores of up to ``LOCKSTEP_CORE`` (a limb's joints and the base)
    are put aside and reduced side by side (``_lockstep_core_norms``) when
    there are enough of them (``LOCKSTEP_WORK``), larger ones one at a time
    (``_reduce_core``), and those of ``LANCZOS_FROM`` or more get a
    certified norm by the Lanczos method instead (``lanczos``); the largest
    eigenvalues of each kind are then searched side by side
    (``eigen.largest_eigenvalues``). ``cores``: the
    blocks hold the cores already (``cores.christoffel_cores``); otherwise
    they hold the slices, whose cores are made here (``cores.slice_core``).
    Slices of joints that move nothing are zero and skipped, and each core
    keeps the rows of the descendants that hold mass (``massive_speeds``).
    NaN when a Gram matrix overflows. Cost: about ``c_k^3 / 2 + c_k^3`` per
    slice for its core's size c_k (the small ones side by side, each at its
    own size), about ``14 c_k^2`` from ``LANCZOS_FROM`` on, and
    ``12 m_k depth(k)`` to make a core from its block.
    """
    if not cores:
        shifted_spans(model, data)
    # the rows of the cores are looked through only when some joint moves nothing
    every_speed = massive_speeds(model, data.kept) == model.parent.shape[0]
    staged = data.lockstep[0]  # the small cores, one after another
    sizes = data.lockstep_sizes
    # int64 from the start, not the literal 0: numba would compile the
    # callees for both (CONTRIBUTING.md, "Kernels")
    count = used = largest = cubes = np.int64(0)
    reduced = widest = np.int64(0)  # the larger cores, reduced, in ``data.bands``
    certified = 0.0  # the largest cores' squared norms by ``lanczos``
    for k in range(BASE_BODIES, model.parent.shape[0]):
        if not model.holds_mass[k]:
            continue  # a joint that moves nothing: its slice is zero (``massive_speeds``)
        core = True
        if cores:
            c, _ = core_size(model, k)
            one = blocks[model.slice_start[k]:model.slice_start[k] + c * c].reshape((c, c))
        else:
            c = slice_core(model, data, blocks, k, data.eig_work)
            if c < 0:  # no core smaller than the block: the block itself
                m = model.slice_row[k]  # a floating base's blocks are m x m, C-contiguous
                one = blocks[model.slice_start[k]:model.slice_start[k] + m * m].reshape((m, m))
                c = m
                core = False
            else:
                one = data.eig_work.reshape(-1)[:c * c].reshape((c, c))
        if core and not every_speed:  # without the rows of descendants that move nothing
            rows = core_massive_rows(model, k, data.kept)
            if rows < c:
                one = kept_square(one, data.kept, rows, data.block_grams)
                c = rows
        if c <= LOCKSTEP_CORE:
            flat = one.reshape(-1)
            for i in range(c * c):
                staged[used + i] = flat[i]
            sizes[count] = c
            count += 1
            used += c * c
            largest = max(largest, c)
            cubes += c * c * c
            continue
        if c >= LANCZOS_FROM:
            norm = top_singular_value(one, data.grams.reshape(-1))  # unused by a tree
            if norm >= 0.0:
                certified += norm * norm
                continue
        if not _reduce_core(data, one, reduced):
            return np.nan
        reduced += 1
        widest = max(widest, c)
    # the larger cores' eigenvalues first: the small cores' bands take their place
    total = certified + _sum_of_largest(data.bands, widest, reduced, data.lockstep[1])
    if cubes >= LOCKSTEP_WORK * largest ** 3:
        return total + _lockstep_core_norms(data, count, largest)
    used = 0  # too few, or too unequal: one at a time
    for s in range(count):
        c = sizes[s]
        if not _reduce_core(data, staged[used:used + c * c].reshape((c, c)), s):
            return np.nan
        used += c * c
    return total + _sum_of_largest(data.bands, largest, count, data.lockstep[1])


@njit(cache=True, nogil=True)
def _reduce_core(data, one, s):
    """The Gram matrix of a core (c, c), C-contiguous, reduced to tridiagonal
    form (``eigen.tridiagonalize_one``), into ``data.bands[:, :, s]``; False
    when it overflows."""
    c = one.shape[0]
    gram = data.gram.reshape(-1)[:c * c].reshape((c, c))
    gram_one(one, gram)
    if not all_finite(gram):
        return False  # too large to square: an overflow, not a bound
    tridiagonalize_one(gram, data.householder)
    tridiagonal_bands(gram, c, data.bands.shape[1], data.bands, s)
    return True


@njit(cache=True, nogil=True)
def _lockstep_core_norms(data, count, size):
    """``sum ||K||_2^2`` over the ``count`` cores that ``core_slice_norms``
    put aside: their Gram matrices (``gram_matrices``) and reductions
    (``eigen.tridiagonalize``) in lockstep, each core in the bottom-right
    corner of a ``size`` x ``size`` lane, the largest in the first lane, so
    that each step runs over the cores that reach it (``lanes``) and a core
    costs its own size, not the largest. NaN on overflow. Cost: 1.5 c^3
    per core of size c, each step over the cores side by side."""
    staged, sizes = data.lockstep[0], data.lockstep_sizes
    order = np.argsort(-sizes[:count], kind="mergesort")  # lane t holds core order[t]
    lane = np.empty(count, dtype=np.int64)
    lanes = np.zeros(size, dtype=np.int64)  # lanes[k]: the cores of size >= size - k
    for t in range(count):
        lane[order[t]] = t
        lanes[size - sizes[order[t]]:] += 1
    padded = data.lockstep[1][:size * size * count].reshape((size, size, count))
    padded[:] = 0.0  # zeros above and left of the corners
    used = 0
    for s in range(count):
        c, t = sizes[s], lane[s]
        corner = size - c
        for r in range(c):
            for col in range(c):
                padded[corner + r, corner + col, t] = staged[used + r * c + col]
        used += c * c
    grams = staged[:size * size * count].reshape((size, size, count))  # the staged cores are read
    gram_matrices(padded, grams, lanes)
    if not lower_triangles_finite(grams):
        return np.nan
    tridiagonalize(grams, lanes)
    bands, values = data.bands, data.lockstep[1]
    for t in range(count):
        corner = size - sizes[order[t]]
        tridiagonal_bands(grams[corner:, corner:, t], size - corner, size, bands, t)
    largest_eigenvalues(bands, size, count, 0.0, values)
    total = 0.0
    for s in range(count):  # summed in the order staged
        total += max(0.0, values[lane[s]])
    return total


def tree_bound_values(model, data, blocks, cores, coriolis, mass, qd, out):
    """The BOUNDS_FIELDS of one sample into out (7,), all but kc_global and
    kc_global_lower (0 here: the caller sets them), from the slices of
    Gamma as blocks (``christoffel.christoffel_tree``), C and M; with
    ``cores``, the blocks of a floating tree's slices but the base's are
    their cores already (``bound_symbols``).

    ``k_c = sqrt(sum_k ||Gamma_k||_2^2)`` (docs/tree_bounds.md) with each
    ``||Gamma_k||_2`` the largest singular value of its block alone, of
    size ``m_k = depth(k) + |subtree(k)|`` (``slices``): a fixed base's by
    ``group_slice_norms``; a floating base's six slices, related to every
    joint, by ``base_slice_norms``, and its others through their smaller
    cores (``core_slice_norms``). ``||C||_2`` is certified by the Lanczos
    method from ``LANCZOS_FROM`` speeds on (``lanczos``); otherwise C's Gram
    matrix is reduced, as M is, one matrix at a time
    (``eigen.tridiagonalize_one``), then ``||C||_2`` and the extreme
    eigenvalues of M searched side by side (``eigen.end_eigenvalues``).
    A chain, whose blocks are the dense Gamma (``christoffel.dense_layout``),
    gets ``bound_values``, the n + 2 matrices in lockstep being faster at its
    sizes. A tree's speeds that move no mass are left out of C and M, and a
    floating tree's also out of its slices (``massive_speeds``). Cost: about
    2 m_k^3 per slice (1.5 c_k^3 for a core of size c_k = 5 + |subtree(k)|,
    counting the descendants that hold mass, 14 c_k^2 from ``LANCZOS_FROM``
    on) and 4 n^3 (3 n^3 with C's norm by Lanczos), plus 60 n^2 for a
    floating base's slices: O(n^4) for a serial chain, as the dense bounds;
    for a tree, whose slices are small but for those of joints near the
    root, far less.

    Which of the three is chosen from the model record's type when the
    calling kernel is compiled (``_tree_bound_values``), so a kernel compiles
    only its own: a branch on ``dense_layout`` or ``is_floating`` is dropped
    from the machine code but its callees are compiled all the same
    (docs/benchmarks-archive.md, "Where a first start's time goes"). With
    ``NUMBA_DISABLE_JIT=1`` this body makes the same choice at run time.
    """
    if dense_layout(model):
        _chain_bound_values(model, data, blocks, cores, coriolis, mass, qd, out)
    elif is_floating(model):
        _floating_bound_values(model, data, blocks, cores, coriolis, mass, qd, out)
    else:
        _fixed_tree_bound_values(model, data, blocks, cores, coriolis, mass, qd, out)


def bound_symbols(model, data, blocks):
    """What ``tree_bound_values`` needs of Gamma, into ``blocks``; True when
    they then hold a floating tree's cores (``cores.christoffel_cores``: the
    base's slices and the cores of the others, made without the symbols
    of the cores' coordinates), False when the slices
    (``christoffel.christoffel_tree``). Chosen when the caller compiles, as
    ``tree_bound_values``."""
    if is_floating(model):
        return _core_symbols(model, data, blocks)
    return _slice_symbols(model, data, blocks)


@overload(bound_symbols)
def _bound_symbols(model, data, blocks):
    return _core_symbols if floating_record(model) else _slice_symbols


def _core_symbols(model, data, blocks):
    christoffel_cores(model, data, blocks)
    return True


def _slice_symbols(model, data, blocks):
    christoffel_tree(model, data, blocks)
    return False


@overload(tree_bound_values)
def _tree_bound_values(model, data, blocks, cores, coriolis, mass, qd, out):
    if dense_record(model):
        return _chain_bound_values
    if floating_record(model):
        return _floating_bound_values
    return _fixed_tree_bound_values


def _chain_bound_values(model, data, blocks, cores, coriolis, mass, qd, out):
    n = qd.shape[0]
    bound_values(data, blocks.reshape((n, n, n)), mass, qd, out)


def _floating_bound_values(model, data, blocks, cores, coriolis, mass, qd, out):
    total = base_slice_norms(model, data, blocks) + core_slice_norms(model, data, blocks, cores)
    _slice_bound_values(model, data, total, coriolis, mass, qd, out)


def _fixed_tree_bound_values(model, data, blocks, cores, coriolis, mass, qd, out):
    _slice_bound_values(model, data, group_slice_norms(model, data, blocks), coriolis, mass, qd, out)


@njit(cache=True, nogil=True)
def _slice_bound_values(model, data, total, coriolis, mass, qd, out):
    """``tree_bound_values`` of a tree from ``total = sum_k ||Gamma_k||_2^2``."""
    if not np.isfinite(total):
        out[:] = np.nan  # too large to square: an overflow, not a bound
        return
    n = qd.shape[0]
    kc = np.sqrt(total)
    speed = 0.0
    for k in range(n):
        speed += qd[k] * qd[k]
    # C and M over the speeds that move mass (``massive_speeds``)
    kept = data.kept
    count = massive_speeds(model, kept)
    if count < n:
        spare = data.grams.reshape(-1)  # the dense bounds' matrices, unused by a tree
        coriolis = kept_square(coriolis, kept, count, spare)
        mass = kept_square(mass, kept, count, spare[count * count:])
    # ||C||_2 certified by the Lanczos method where that is cheaper, else from C's Gram matrix
    norm = -1.0
    if count >= LANCZOS_FROM:
        norm = top_singular_value(coriolis, data.grams.reshape(-1)[2 * count * count:])
    with_gram = norm < 0.0
    gram = data.gram.reshape(-1)[:count * count].reshape((count, count))
    work = data.eig_work.reshape(-1)[:count * count].reshape((count, count))
    if with_gram:
        gram_one(coriolis, gram)
    for r in range(count):
        for c in range(r + 1):  # M's lower triangle, as the dense bounds read it
            work[r, c] = work[c, r] = mass[r, c]
    if not ((not with_gram or all_finite(gram)) and all_finite(work)):
        out[:] = np.nan
        return
    if with_gram:
        tridiagonalize_one(gram, data.householder)
    tridiagonalize_one(work, data.householder)
    # ||C||^2 (unless certified) and M's largest and smallest eigenvalues, searched
    # side by side; a speed that moves nothing is an eigenvector of M for 0, exactly
    first = 1 if with_gram else 0  # the lane of M's largest
    m = first + (2 if count == n else 1)
    brackets, values = np.empty((3, 3)), np.empty(3)
    for s in range(m):
        lane = s + 1 - first  # 0: C's Gram matrix, 1: M from above, 2: M from below
        T = gram if lane == 0 else work
        floor = -np.inf if lane == 1 else 0.0
        brackets[0, s], brackets[1, s] = end_bracket(T, floor, lane < 2)
        brackets[2, s] = 1.0 if lane < 2 else 0.0
        tridiagonal_bands(T, count, count, data.bands, s)
    end_eigenvalues(data.bands, count, m, brackets, values)
    out[0] = np.sqrt(max(0.0, values[0])) if with_gram else norm
    out[1] = kc
    out[2] = 0.0
    out[6] = 0.0
    out[3] = kc * np.sqrt(speed)
    out[4] = values[first + 1] if count == n else 0.0
    out[5] = values[first]


@njit(cache=True, nogil=True)
def _bound_vectors(data, gamma, mass, QD, out):
    for s in range(QD.shape[0]):
        bound_values(data, gamma[s], mass[s], QD[s], out[s])
        if not all_finite(out[s]):
            return s
    return -1


def bound_vectors(model, christoffel, mass, qd, inputs):
    """(N, 7) BOUNDS_FIELDS from Gamma (N, n, n, n), M (N, n, n) and qd (N, n),
    but kc_global and kc_global_lower (0 here: the caller sets them).

    ``inputs``: the caller's (name, array) pairs, to name a bad one.
    """
    values = np.empty((len(qd), len(BOUNDS_FIELDS)))
    # contiguous: a mimic-reduced Gamma or M comes out of einsum with other
    # strides, and the kernels' entry points are resolved once per layout-blind key
    inputs_c = tuple(np.ascontiguousarray(x) for x in (christoffel, mass, qd))
    failed = run(_bound_vectors, model, inputs_c, (values,))
    if failed >= 0:
        raise_failure(model, failed, inputs, "the Coriolis bounds")
    return values


def given(model, value, name, q, dims):
    """A caller's Gamma (``dims`` 3) or M (``dims`` 2) for the checked ``q``:
    shape (n,) * dims after q's batch axis, finite real numbers, or
    ``StateError`` naming ``name`` and the first non-finite element."""
    shape = q.shape[:-1] + (model.nv,) * dims
    # joint_array wants ``like``'s shape with its last axis made nv: a view of
    # one zero in the wanted shape (no memory) asks for exactly that shape
    array = joint_array(model, value, name, like=np.broadcast_to(0.0, shape))
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        where = tuple(int(k) for k in bad[0])
        raise StateError(f"{name}{list(where)} is {array[where]}")
    return array
