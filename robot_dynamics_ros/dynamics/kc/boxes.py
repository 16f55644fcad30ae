"""Bounds on k_c over boxes of configurations, for the branch and bound of
``search.CoriolisConstantRefinement``: the exact expansion of
Gamma (global derivative bounds), its exact restriction to the sides of a
box (``box_bounds``), and the list of boxes kept in place. Every kernel
releases the GIL (a node's outputs run beside the refinement). The method
and why each bound holds: docs/coriolis_constant.md.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..calls import in_chunks
from ..algorithms.christoffel import christoffel_symbols
from . import mixed
from .constant import config_constant_kernel

_EPS = np.finfo(float).eps
# a term of a box bound takes the Schatten bound (``_norm_bound``) when its cheap bound
# is above this share of k_c at the centre: below, the tighter norm would change little
_TIGHTEN = 0.01
# a revolute side whose range is at least this wide (rad) gets its mixed terms' bands
# (``box_bounds``); below it the bands cannot beat H (their sum is at least H)
WIDE = 4.0


def _axis_transforms(prismatic, lo, hi):
    """Per coordinate on which Gamma depends: (nodes q_j, matrix T with
    coefficients = T @ samples, w with w[d, a] >= sup |b_a^(d)| for the
    d-th derivative of each basis function b_a, d = 0, 1, 2). Revolute: 5
    equispaced angles, the discrete Fourier transform, b_a = e^{i a q} for
    a = 0, 1, 2, -2, -1 (|a|^d). Prismatic: the Chebyshev nodes mid +
    radius (1, 0, -1), b_a = T_a((q - mid) / radius) for a = 0, 1, 2 (1;
    a^2 / radius by Markov's inequality; T_2'' = 4 / radius^2). Both
    interpolations are exact for degree <= 2, and every row of T has l1
    norm 1 (so rounding in the samples is not amplified)."""
    transforms = []
    for is_prismatic, low, high in zip(prismatic, lo, hi):
        if is_prismatic:
            mid, radius = 0.5 * (low + high), 0.5 * (high - low)
            matrix = np.array([[0.25, 0.5, 0.25], [0.5, 0.0, -0.5], [0.25, -0.5, 0.25]], dtype=complex)
            transforms.append((mid + radius * np.array([1.0, 0.0, -1.0]), matrix,
                               np.array([[1.0, 1.0, 1.0], np.array([0.0, 1.0, 4.0]) / radius,
                                         np.array([0.0, 0.0, 4.0]) / radius ** 2])))
        else:
            angles = 2.0 * np.pi * np.arange(5) / 5
            orders = np.array([0, 1, 2, -2, -1])
            transforms.append((angles, np.exp(-1j * np.outer(orders, angles)) / 5,
                               np.abs(orders)[None].astype(float) ** np.arange(3)[:, None]))
    return transforms


@njit(cache=True, nogil=True)
def _transform_grid(values, sizes, matrices, out):
    """out (count, E) = the coefficients of ``values`` (count, E), sampled on
    the tensor grid of ``sizes`` (C order), transformed along each axis l by
    ``matrices[l, :sizes[l], :sizes[l]]`` (``_axis_transforms``). In place
    in ``out``, tiles of 256 columns at a time."""
    count, width = values.shape
    flat = out.reshape(count * width)
    source = values.reshape(count * width)
    for s in range(count * width):
        flat[s] = source[s]
    tile = np.empty((5, 256), dtype=np.complex128)
    after = count * width
    before = 1
    for axis in range(len(sizes)):
        size = sizes[axis]
        after //= size
        for b in range(before):
            base = b * size * after
            for a0 in range(0, after, 256):
                span = min(256, after - a0)
                for k in range(size):
                    for a in range(span):
                        tile[k, a] = flat[base + k * after + a0 + a]
                for j in range(size):
                    row = base + j * after + a0
                    for a in range(span):
                        flat[row + a] = 0.0
                    for k in range(size):
                        weight = matrices[axis, j, k]
                        for a in range(span):
                            flat[row + a] += weight * tile[k, a]
        before *= size


@njit(cache=True, nogil=True)
def _add_squares(coefficients, weights, squares):
    """squares[s] += sum_e weights[e] |coefficients[s, e]|^2."""
    for s in range(coefficients.shape[0]):
        acc = 0.0
        for e in range(coefficients.shape[1]):
            c = coefficients[s, e]
            acc += weights[e] * (c.real * c.real + c.imag * c.imag)
        squares[s] += acc


def fourier_derivative_bounds(model, free, prismatic, lo, hi, entry_margin, memory_bytes, base,
                              pace, combination=((None, 1.0),), squared_norms=False):
    """(V, L, H, W): for the coordinates l, m of ``free`` and every q (the
    other coordinates as in ``base``), V >= N(F), L_l >= N(dF/dq_l),
    H_lm >= N(d^2 F/dq_l dq_m) and, for a revolute l, W[m, l, a - 1] >= N
    of the terms of order +-a along l of d^2 F/dq_m dq_l (``box_bounds``:
    a wide side's mixed terms; inf on the diagonal and for a prismatic l)
    for F(q) = sum_w w Gamma(q + offset) over
    ``combination`` ((offset (nv,) or None, w) pairs; Gamma itself by
    default), with N(Gamma) = sqrt(sum_k ||Gamma_k||_2^2) (a generator: one
    step per chunk of Gamma evaluations, ``pace.chunk``; (V, L, H, W) is its
    return value).

    Gamma is a trigonometric polynomial of degree <= 2 in every revolute
    angle and a polynomial of degree <= 2 in every prismatic displacement
    (tested in test_coriolis_constant.py), so with P = 5^r 3^p samples on
    the tensor grid of ``_axis_transforms`` its expansion
    ``Gamma(q) = sum_alpha C_alpha prod_l b_alpha_l(q_l)`` is exact, and
    ``N(dGamma/dq_l) <= sum_alpha w[1, alpha_l] nu_alpha`` (|b| <= 1 on the
    domain), and likewise with w[1] w[1] or w[2] for the second derivatives, with
    ``nu_alpha = ||C_alpha||_F`` (>= N), or ``_pair_norms`` when all the
    coefficient tensors fit in ``memory_bytes`` at once. The entries of Gamma are
    transformed in blocks that fit ``memory_bytes`` (Gamma is evaluated
    once per block), by nogil kernels (``_transform_grid``): numpy's
    transforms of a large block would hold the GIL, which a node's
    callbacks wait for. ``squared_norms`` (the offline search, every
    coordinate revolute): H_lm for l != m and W (along the sides at least
    ``WIDE`` wide) of Gamma itself, and V of any
    other combination (a frozen coordinate's effect), are also bounded from
    the coefficients of their squared norms (``mixed``), several times
    tighter, with numpy holding the GIL (so offline only).
    Rounding: each coefficient is off by at most the
    samples' error plus a few eps per transform, ``entry_margin`` per
    entry, added to every ||C_alpha||_F. Cost: P evaluations of Gamma per
    block, P n^3 / 2 entries in all.
    """
    transforms = _axis_transforms(prismatic, lo, hi)
    sizes = tuple(len(t[0]) for t in transforms)
    grid = np.array(np.meshgrid(*[t[0] for t in transforms], indexing="ij")).reshape(len(free), -1).T
    count = len(grid)
    n = model.nv
    gamma_itself = len(combination) == 1 and combination[0][0] is None and combination[0][1] == 1.0
    wide = np.flatnonzero(~np.asarray(prismatic, dtype=bool) & (np.asarray(hi) - np.asarray(lo) >= WIDE))
    targets = (mixed.mixed_targets(len(free), wide) if gamma_itself else [((), None)]) if len(free) else []
    squared_norms = squared_norms and not np.any(prismatic) and len(targets) > 0
    # the slices of joints on a fixed world are skew (``_gamma_entries``)
    skew = np.zeros(n, dtype=bool) if model.floating or model.reduced else np.asarray(model.parent) < 0
    entries = _gamma_entries(n, count, memory_bytes, squared_norms, skew)
    target_squares = mixed.new_squares(len(free), targets) if squared_norms else None
    q = np.tile(base, (count, 1))
    q[:, free] = grid
    squares = yield from _coefficient_squares(model, q, combination, sizes, _transform_matrices(transforms),
                                              entries, pace, target_squares)
    norms = np.sqrt(squares) + np.sqrt(n ** 3) * entry_margin * sum(abs(w) for _, w in combination)
    m = len(free)
    inflate = 1.0 + 64 * (m + 2) * _EPS
    value, first, second, bands = _expansion_bounds(norms, transforms, sizes)
    if squared_norms and gamma_itself:
        squared_second, squared_bands = mixed.mixed_bounds(target_squares, n, entry_margin)
        second, bands = np.minimum(second, squared_second), np.minimum(bands, squared_bands)
    elif squared_norms:
        weight = sum(abs(w) for _, w in combination)
        value = min(value, mixed.squared_bounds(target_squares, n, weight * entry_margin)[0])
    return value * inflate, first * inflate, second * inflate, bands * inflate


class _Entries(NamedTuple):
    """Which entries of Gamma (flat, n^3) the expansion transforms, ``block``
    of them at a time, each counted ``weights`` times in the norms.
    ``whole``: every coefficient tensor at once (N itself rather than
    Frobenius, ``_pair_norms``). ``pair_entries``, ``pair_weights``: for
    ``mixed.add_squares`` in the whole case, each pair j <= k once (None
    without squared norms)."""

    entries: np.ndarray
    weights: np.ndarray
    whole: bool
    block: int
    pair_entries: np.ndarray
    pair_weights: np.ndarray


def _gamma_entries(n, count, memory_bytes, squared_norms, skew):
    """The ``_Entries`` of an expansion from ``count`` samples within
    ``memory_bytes``: all n^3 when 48 bytes each per sample fit, else the
    entries with j <= k (Gamma[i, j, k] = Gamma[i, k, j], the others
    counted twice) in blocks of 24 bytes per entry and sample. The squared
    Frobenius norms count a slice Gamma[:, :, k] of ``skew[k]`` half: a
    real skew matrix's singular values come in pairs, so ``||S||_2^2 <=
    ||S||_F^2 / 2``; a joint k on the fixed world has dM/dq_k = 0, so
    ``Gamma_ijk = (dM_ik/dq_j - dM_jk/dq_i) / 2`` is skew in (i, j) at every
    q, and so is every combination of its samples."""
    # Gamma[i, j, k] = Gamma[i, k, j]: the entries with j <= k, the others counted twice
    i, j, k = np.nonzero(np.ones((n, n, n), dtype=bool))
    share = np.where(skew, 0.5, 1.0)  # of a slice's squared Frobenius norm
    entries = np.flatnonzero(j <= k)
    weights = share[k[entries]] + np.where(j[entries] < k[entries], share[j[entries]], 0.0)
    whole = 48 * count * n ** 3 <= memory_bytes
    if whole:  # every coefficient tensor at once: N itself rather than Frobenius
        entries, weights = np.arange(n ** 3), np.ones(n ** 3)
    block = len(entries) if whole else max(1, int(memory_bytes // (24 * count)))
    pair_entries = pair_weights = None
    if squared_norms:
        pair_entries = np.flatnonzero(j[entries] <= k[entries])  # the whole case's entries: each pair once
        jp, kp = j[entries][pair_entries], k[entries][pair_entries]
        pair_weights = share[kp] + np.where(jp < kp, share[jp], 0.0)
    return _Entries(entries, weights, whole, block, pair_entries, pair_weights)


def _transform_matrices(transforms):
    """The axes' transforms of ``_axis_transforms`` as one (axes, 5, 5)
    array for ``_transform_grid`` (a prismatic axis's 3 x 3 in the corner)."""
    matrices = np.zeros((len(transforms), 5, 5), dtype=complex)
    for axis, (_, matrix, _) in enumerate(transforms):
        matrices[axis, :len(matrix), :len(matrix)] = matrix
    return matrices


def _coefficient_squares(model, q, combination, sizes, matrices, entries, pace, target_squares):
    """nu_alpha^2 (array of ``sizes``): the squared norms of the expansion's
    coefficient tensors C_alpha of F = sum_w w Gamma(q + offset) sampled at
    the grid ``q`` (count, nv), from the ``entries`` a block at a time (a
    generator: one step per chunk of samples and per block). With
    ``target_squares`` (squared norms, ``mixed``) each block's coefficients
    are also added to it, in place."""
    n = model.nv
    count = len(q)
    squares = np.zeros(sizes)
    for start in range(0, len(entries.entries), entries.block):
        picked = entries.entries[start:start + entries.block]
        values = np.zeros((count, len(picked)))
        chunk = pace.chunk(model)
        for first in range(0, count, chunk):
            for offset, weight in combination:
                some = q[first:first + chunk] if offset is None else q[first:first + chunk] + offset
                values[first:first + chunk] += weight * christoffel_symbols(model, some).reshape(-1, n ** 3)[:, picked]
                yield
        coefficients = np.empty(values.shape, dtype=complex)
        _transform_grid(values, np.array(sizes), matrices, coefficients)
        if target_squares is not None and entries.whole:
            mixed.add_squares(values[:, entries.pair_entries], coefficients[:, entries.pair_entries],
                              entries.pair_weights, target_squares)
        elif target_squares is not None:
            mixed.add_squares(values, coefficients, entries.weights[start:start + entries.block], target_squares)
        del values
        if entries.whole:
            _pair_norms(coefficients, n, squares.reshape(-1))
            squares **= 2
        else:
            _add_squares(coefficients, entries.weights[start:start + entries.block], squares.reshape(-1))
        yield
    return squares


def _expansion_bounds(norms, transforms, sizes):
    """(V, L, H, W) before the rounding's inflation: sum_alpha nu_alpha
    prod_l sup |b^(d_l)| (``norms`` = nu, the sups from ``_axis_transforms``)
    with d_l = 0 for every l, 1 for one l, or the derivative orders of each
    pair (l, p); W[p, l, a - 1] the same for the pair over the terms of
    order +-a along a revolute l (p != l)."""
    m = len(sizes)

    def bound(*axes, band=None):
        """sum_alpha nu_alpha prod_l sup |b^(d_l)|, d_l = how often l is in
        axes; with band (l, a) over the terms of order +-a along l"""
        weight = np.ones(sizes)
        for l in set(axes):
            shape = [1] * m
            shape[l] = sizes[l]
            weight = weight * transforms[l][2][axes.count(l)].reshape(shape)
        if band is not None:
            shape = [1] * m
            shape[band[0]] = 5
            weight = weight * (np.abs(mixed.ORDERS) == band[1]).reshape(shape)
        return (norms * weight).sum()

    value = bound()
    first = np.array([bound(l) for l in range(m)])
    second = np.array([[bound(l, p) for p in range(m)] for l in range(m)])
    bands = np.full((m, m, len(mixed.BANDS)), np.inf)
    for l in range(m):
        if sizes[l] == 5:  # revolute
            for p in range(m):
                if p != l:
                    bands[p, l] = [bound(p, l, band=(l, a)) for a in mixed.BANDS]
    return value, first, second, bands


@njit(cache=True, nogil=True)
def _pair_norms(coefficients, n, out):
    """out[s] = sqrt(N(Re C)^2 + N(Im C)^2) for each coefficient tensor C =
    coefficients[s] (n^3 entries), N(A) = sqrt(sum_k ||A[:, :, k]||_2^2)
    from the eigenvalues of the Gram matrices (``bounds``), inflated by
    1e-9 for their rounding (relative error O(n eps)).

    Each real term of the expansion is 2 Re(C e^{i phi}) T (a coefficient
    and its conjugate, T a product of Chebyshev polynomials) or C T (C
    real): its N is at most 2 sqrt(N(Re C)^2 + N(Im C)^2) |T| because
    N(A cos phi - B sin phi) <= N(A) |cos phi| + N(B) |sin phi|, and the sum
    over the pair counts each member once."""
    grams = np.empty((n, n, n + 2))
    part = np.empty(n * n * n)
    for s in range(coefficients.shape[0]):
        total = 0.0
        for imaginary in (False, True):
            for e in range(n * n * n):
                part[e] = coefficients[s, e].imag if imaginary else coefficients[s, e].real
            value = config_constant_kernel(part.reshape((n, n, n)), grams)
            total += value * value
        out[s] = np.sqrt(total) * (1.0 + 1e-9)


class _Lines(NamedTuple):
    """The exact restrictions of Gamma to the lines c + t e_l through a box's
    centre, one row per coordinate l, from samples at c + ``offsets[l, j]``
    e_l (j < ``samples[l]``): dGamma/dq_l(c) = sum_j ``derivative[l, j]``
    Gamma_j, and ``Gamma(c + t e_l) = Gamma(c) + t dGamma/dq_l(c) + sum_r
    phi_r(t) A_r`` (r < ``rests[l]``) with ``A_r = sum_j curvature[l, r,
    j] Gamma_j`` over the samples, the centre first (j = 0), and
    ``|phi_r(t)| <= min(scale[l, r] |t|^power[l, r], cap[l, r])``."""

    offsets: np.ndarray
    samples: np.ndarray
    derivative: np.ndarray
    rests: np.ndarray
    curvature: np.ndarray
    scale: np.ndarray
    power: np.ndarray
    cap: np.ndarray


def lines_through(prismatic, lo, hi):
    """The ``_Lines`` of the coordinates, exact for degree <= 2.

    Revolute: 5 equispaced angles s_j = 2 pi j / 5 (s_0 = 0, the centre),
    through which the trigonometric interpolant ``Gamma(c + t e_l) = E_0 +
    sum_{a=1,2} A_a cos(a t) + B_a sin(a t)`` passes, A_a = 2/5 sum_j
    Gamma_j cos(a s_j), B_a = 2/5 sum_j Gamma_j sin(a s_j); its derivative at
    t = 0 is sum_a a B_a, and the rest ``A_a (cos(a t) - 1) + B_a (sin(a t)
    - a t)`` with |cos x - 1| <= min(x^2 / 2, 2), |sin x - x| <= |x|^3 / 6.
    Prismatic: the parabola through c and c +- r (r the joint's half range):
    central difference and A = (Gamma_+ + Gamma_- - 2 Gamma(c)) / (2 r^2)
    times t^2."""
    m = len(prismatic)
    angles = 2.0 * np.pi * np.arange(5) / 5
    trig = 0.4 * np.array([np.cos(angles), np.sin(angles), np.cos(2 * angles), np.sin(2 * angles)])
    lines = _Lines(np.zeros((m, 4)), np.full(m, 4), np.zeros((m, 4)), np.full(m, 4),
                   np.zeros((m, 4, 5)), np.zeros((m, 4)), np.zeros((m, 4)), np.full((m, 4), np.inf))
    for l, (is_prismatic, low, high) in enumerate(zip(prismatic, lo, hi)):
        if is_prismatic:
            radius = 0.5 * (high - low)
            lines.samples[l] = 2
            lines.offsets[l, :2] = -radius, radius
            lines.derivative[l, :2] = np.array([-0.5, 0.5]) / radius
            lines.rests[l] = 1
            lines.curvature[l, 0, :3] = np.array([-2.0, 1.0, 1.0]) / (2.0 * radius ** 2)
            lines.scale[l, 0], lines.power[l, 0] = 1.0, 2.0
        else:
            lines.offsets[l] = angles[1:]
            lines.derivative[l] = (trig[1] + 2.0 * trig[3])[1:]
            lines.curvature[l] = trig
            lines.scale[l] = np.array([0.5, 1 / 6, 0.5 * 4, 8 / 6])
            lines.power[l] = 2.0, 3.0, 2.0, 3.0
            lines.cap[l] = 2.0, np.inf, 2.0, np.inf
    return lines


@njit(cache=True, nogil=True)
def _norm_bound(A, worth=0.0):
    """An upper bound on N(A) = sqrt(sum_k ||A[:, :, k]||_2^2) with no
    eigen-solver: per slice B, ||B||_2^2 is at most the smallest of
    ||B||_F^2, ||B||_1 ||B||_inf and, when the bound from those two is
    above ``worth`` and the slice holds more than 1% of it, ||B^T B||_F
    (the Schatten 4-norm squared: ||B||_2^4 = lambda_max(B^T B)^2 <=
    sum_i lambda_i(B^T B)^2; near ||B||_2^2 on Gamma's slopes and rests,
    where the Frobenius norm counts every singular value; it costs three
    times the other two). A slice skew to 1% (a joint on the world's:
    ``_gamma_entries``) has its singular values in pairs, where that is
    sqrt(2) too high: it takes ``(||S||_2 + ||E||_F)^2`` instead, S = (B -
    B^T) / 2 (computed exactly skew, off by eps |S| per entry), E = (B +
    B^T) / 2, ``||S||_2^2 <= ||S^T S||_F / sqrt(2)``. Rounding: each entry of the computed B^T B is
    off by at most gamma_n (|B|^T |B|)_ab (Higham 2002, eq. 3.13), so its
    Frobenius norm by at most gamma_n ||B||_F^2, added with a factor 2;
    the sums are inflated by 4 (n^2 + 2) eps. The Schatten term is taken
    where ||B||_F^2 is within 1e-140 and 1e140, so that no square of an
    entry of B^T B overflows or underflows."""
    n = A.shape[0]
    cheap = np.empty(n)
    squares = np.empty(n)  # ||B||_F^2 per slice
    total = 0.0
    for k in range(n):
        frobenius = 0.0
        rows = 0.0
        for i in range(n):
            row = 0.0
            for j in range(n):
                row += abs(A[i, j, k])
                frobenius += A[i, j, k] * A[i, j, k]
            rows = max(rows, row)
        columns = 0.0
        for j in range(n):
            column = 0.0
            for i in range(n):
                column += abs(A[i, j, k])
            columns = max(columns, column)
        squares[k] = frobenius
        cheap[k] = min(frobenius, rows * columns)
        total += cheap[k]
    if np.sqrt(total) > worth:
        cheap_total = total
        total = 0.0
        columns_of = np.empty((n, n))  # columns_of[a] = column a of the slice B
        for k in range(n):
            if cheap[k] <= 0.01 * cheap_total:  # a small slice: the tighter norm would change little
                total += cheap[k]
                continue
            frobenius = squares[k]
            symmetric = 0.0  # ||E||_F^2, E = (B + B^T) / 2
            for i in range(n):
                for j in range(n):
                    columns_of[j, i] = A[i, j, k]
                    part = 0.5 * (A[i, j, k] + A[j, i, k])
                    symmetric += part * part
            skew = symmetric <= 1e-4 * frobenius
            if skew:  # S = (B - B^T) / 2 in columns_of: computed exactly skew
                for i in range(n):
                    for j in range(n):
                        columns_of[j, i] = 0.5 * (A[i, j, k] - A[j, i, k])
            if 1e-140 <= frobenius <= 1e140:  # the squares of B^T B's entries neither overflow nor underflow
                gram = 0.0
                for a in range(n):
                    for b in range(a, n):
                        entry = 0.0
                        for i in range(n):
                            entry += columns_of[a, i] * columns_of[b, i]
                        gram += (2.0 if b > a else 1.0) * entry * entry
                schatten = np.sqrt(gram) * (1.0 + 4 * (n * n + 2) * _EPS) + 4 * (n + 2) * _EPS * frobenius
                if skew:  # ||S||_2 + ||E||_F, the computed S off by eps |S| per entry
                    root = np.sqrt(schatten / np.sqrt(2.0)) * (1.0 + 4 * _EPS) \
                        + np.sqrt(symmetric) * (1.0 + 4 * (n * n + 2) * _EPS) + 2 * _EPS * np.sqrt(frobenius)
                    schatten = root * root * (1.0 + 4 * _EPS)
                cheap[k] = min(cheap[k], schatten)
            total += cheap[k]
    return np.sqrt(total) * (1.0 + 4 * (n + 2) * _EPS)


@njit(cache=True, nogil=True)
def _whole_line_factor(r, x):
    """``sup_{|t| <= h} |phi|`` for the revolute line's rest row r of
    ``lines_through`` (A_1, B_1, A_2, B_2: cos, sin, cos, sin of a t, a = 1
    + r // 2) as a whole, the line's linear part included, at x = a h:
    ``1 - cos(min(x, pi)) = 2 sin^2(min(x, pi) / 2)`` (no cancellation at
    small x) or ``sin(min(x, pi / 2))``, widened for their rounding."""
    a = 1 + r // 2
    if r % 2 == 0:
        half = np.sin(0.5 * min(a * x, np.pi))
        return 2.0 * half * half * (1.0 + 8.0 * _EPS)
    return np.sin(min(a * x, 0.5 * np.pi)) * (1.0 + 4.0 * _EPS)


@njit(cache=True, nogil=True)
def _band_change(second, bands, h):
    """A bound on N(f(y + t e_l) - f(y)) for 0 <= t <= h <= 2 pi, f =
    dGamma/dq_p, ``second`` = H_pl and ``bands`` = W[p, l] of
    ``fourier_derivative_bounds`` (inf when a band is). With f_a the terms
    of order +-a along l and g_a = df_a/dq_l, ``f_a(y + t e_l) - f_a(y) =
    2 sin(a t / 2) / a g_a(z)``, z = y + t / 2 e_l, and ``sin t = 2 sin(t /
    2) cos(t / 2)``, so the change is ``2 sin(t / 2) (g_1 + cos(t / 2)
    g_2)(z)``: its N is at most both ``sum_a 2 sin(min(a h / 2, pi / 2)) /
    a W_a`` and ``2 sin(min(h / 2, pi / 2)) max(H, W_1 + |cos(h / 2)|
    W_2)`` (N of g_1 + c g_2 is convex in c, c = 1 gives d2 Gamma/dq_p
    dq_l)."""
    if not (np.isfinite(bands[0]) and np.isfinite(bands[1])):
        return np.inf
    one = 2.0 * np.sin(min(0.5 * h, 0.5 * np.pi))
    two = np.sin(min(h, 0.5 * np.pi))
    both = one * max(second, bands[0] + abs(np.cos(0.5 * h)) * bands[1])
    return min(one * bands[0] + two * bands[1], both) * (1.0 + 16.0 * _EPS)


@njit(cache=True, nogil=True)
def _linear_sides(size, along, whole, taken, linear):
    """The sides l not ``taken`` whose linear model (first order ``size``
    plus ``along``, its slope error and own rest) is below their ``whole``
    line, into ``linear[:count]``: (count, what the sides add besides their
    first order, their sizes summed) = (count, sum of ``along`` over them
    plus ``whole`` over the others, sum of ``size`` over them)."""
    count = 0
    rest = 0.0
    spread = 0.0
    for l in range(len(size)):
        if taken[l]:
            continue
        if size[l] + along[l] < whole[l]:
            linear[count] = l
            count += 1
            rest += along[l]
            spread += size[l]
        else:
            rest += whole[l]
    return count, rest, spread


@njit(cache=True, nogil=True)
def _sides_outside(slopes, n, h, size, along, apart, whole, taken, worth, margin, work, linear):
    """A bound on what the sides l outside the vertex search (not ``taken``)
    add to ``box_bounds``' second-order form: the smaller of each side's own
    ``apart[l]`` summed, and, the sides whose linear model beats their whole
    line taken together, ``max_t N'(sum_l t_l D_l)`` over their |t_l| <=
    h_l plus their ``along`` (slope error and own rest), the others' whole
    lines. N is convex in t, so that maximum is at a vertex of those sides;
    N' (``_norm_bound``) is even, so the last side's sign stays +: 2^(k-1)
    vertices for k sides. The sides' first-order parts can cancel in the
    sum, which their separate sizes h_l N'(D_l) cannot. Rounding of the
    sum: gamma_(k+1) per entry, and ||D||_F <= sqrt(n) N(D); ``margin`` per
    computed N. ``slopes`` (m, n^3); ``work`` (n^3,) and ``linear`` (m,) are scratch."""
    m, size3 = slopes.shape
    separate = 0.0
    for l in range(m):
        if not taken[l]:
            separate += apart[l]
    count, together, spread = _linear_sides(size, along, whole, taken, linear)
    if count < 2:
        return separate
    top = 0.0
    for v in range(1 << (count - 1)):
        work[:] = 0.0
        for i in range(count):
            l = linear[i]
            step = (-1.0 if (v >> i) & 1 else 1.0) * h[l]
            for e in range(size3):
                work[e] += step * slopes[l, e]
        top = max(top, _norm_bound(work.reshape((n, n, n)), worth))
    together += top + margin + 2.0 * (count + 2) * _EPS * np.sqrt(n) * spread
    return min(separate, together)


@njit(cache=True, nogil=True)
def _vertices_top(centre, slopes, n, h, sides, count, worth, work, signs):
    """``max_s N'(centre + sum_i s_i h_l D_l)`` over the 2^count sign vectors
    s of the sides ``sides[:count]`` (l = sides[i], D_l = slopes[l]), one
    side flipped per step (a Gray code: n^3 additions per vertex), and a
    bound on the rounding of the vertices so formed: each entry is a chain
    of at most J = 2^count + count sums and products of terms at most
    ``|centre| + 3 sum h |D|``, so off by J 2 eps times that, whose N is at
    most J 2 eps sqrt(n) (N(centre) + 3 sum h N(D)) (||X||_F <= sqrt(n)
    N(X)); returned as its factor ``J 2 eps sqrt(n)``. ``work`` (n^3,) and
    ``signs`` (m,) are scratch."""
    size3 = centre.shape[0]
    for e in range(size3):
        work[e] = centre[e]
    for i in range(count):
        l = sides[i]
        signs[i] = -1.0
        for e in range(size3):
            work[e] -= h[l] * slopes[l, e]
    top = _norm_bound(work.reshape((n, n, n)), worth)
    for v in range(1, 1 << count):
        i = 0
        while not (v >> i) & 1:  # the Gray code flips the side of v's lowest set bit
            i += 1
        l = sides[i]
        signs[i] = -signs[i]
        step = 2.0 * signs[i] * h[l]
        for e in range(size3):
            work[e] += step * slopes[l, e]
        top = max(top, _norm_bound(work.reshape((n, n, n)), worth))
    return top, 2.0 * ((1 << count) + count) * _EPS * np.sqrt(n)


@njit(cache=True, nogil=True)
def _box_kernel(gamma, halves, samples, derivative, rests, curvature, scale, power, cap,
                lipschitz, hessian, bands, margin, sampled, grams, bounds, excess, centre_values):
    """The bounds of ``box_bounds`` from the boxes' samples gamma (boxes,
    stride, n^3): the centre, then each line's samples in order. Writes
    bounds (boxes,), excess (boxes, m) and k_c at the centres."""
    count, m = halves.shape
    size3 = gamma.shape[2]
    n = grams.shape[0]
    slopes = np.empty((m, size3))
    rest = np.empty(size3)
    vertex = np.empty(size3)
    size = np.empty(m)
    along = np.empty(m)
    apart = np.empty(m)
    whole_of = np.empty(m)
    linear = np.empty(m, dtype=np.int64)
    signs = np.empty(m)
    corners = min(2, m)
    chosen = np.empty(corners, dtype=np.int64)
    taken = np.empty(m, dtype=np.bool_)
    none_taken = np.zeros(m, dtype=np.bool_)
    for b in range(count):
        centre = gamma[b, 0]
        h = halves[b]
        value = config_constant_kernel(centre.reshape((n, n, n)), grams)
        centre_values[b] = value
        row = 1
        for l in range(m):
            weight_sum = 0.0
            for j in range(samples[l]):
                weight_sum += abs(derivative[l, j])
            slopes[l] = 0.0
            for j in range(samples[l]):
                weight = derivative[l, j]
                for e in range(size3):
                    slopes[l, e] += weight * gamma[b, row + j, e]
            size[l] = _norm_bound(slopes[l].reshape((n, n, n)), _TIGHTEN * value / h[l]) * h[l]
            slope_error = h[l] * weight_sum * sampled
            own = 0.0
            revolute = samples[l] == 4  # ``lines_through``: its line as a whole, below
            whole = 0.0 if revolute else np.inf
            for r in range(rests[l]):
                weight_sum = abs(curvature[l, r, 0])
                for j in range(samples[l]):
                    weight_sum += abs(curvature[l, r, j + 1])
                weight = curvature[l, r, 0]
                for e in range(size3):
                    rest[e] = weight * centre[e]
                for j in range(samples[l]):
                    weight = curvature[l, r, j + 1]
                    for e in range(size3):
                        rest[e] += weight * gamma[b, row + j, e]
                factor = min(scale[l, r] * h[l] ** power[l, r], cap[l, r])
                line = _whole_line_factor(r, h[l]) if revolute else 0.0
                term = _norm_bound(rest.reshape((n, n, n)), _TIGHTEN * value / max(factor, line)) \
                    + margin + weight_sum * sampled
                own += factor * term
                if revolute:
                    whole += line * term
            own = min(own, 0.5 * hessian[l, l] * h[l] * h[l])
            # the side's terms: its own rest and slope error (a vertex side,
            # whose first-order part is in the vertices), or the line as a
            # whole when that is smaller (a wide side of a far box)
            along[l] = slope_error + own
            apart[l] = min(size[l] + slope_error + own, whole)
            whole_of[l] = whole
            excess[b, l] = apart[l]
            row += samples[l]
        mixed = 0.0
        for l in range(m):
            for k in range(l):
                term = h[k] * h[l] * hessian[k, l]
                # the side to halve is chosen by the product form, half to each side: the
                # bands' saturated form would leave a wide side unsplit
                excess[b, l] += 0.5 * term
                excess[b, k] += 0.5 * term
                mixed += min(term, h[k] * _band_change(hessian[k, l], bands[k, l], h[l]),
                             h[l] * _band_change(hessian[k, l], bands[l, k], h[k]))
        # the vertices of the linear model along the sides of largest size
        taken[:] = False
        for c in range(corners):
            best = -1
            for l in range(m):
                if not taken[l] and (best < 0 or size[l] > size[best]):
                    best = l
            chosen[c] = best
            taken[best] = True
        sides = _sides_outside(slopes, n, h, size, along, apart, whole_of, taken, _TIGHTEN * value, margin,
                               vertex, linear)
        for l in range(m):
            if taken[l]:
                sides += along[l]
        top = -np.inf
        for v in range(1 << corners):
            for e in range(size3):
                vertex[e] = centre[e]
            for c in range(corners):
                step = (1.0 if (v >> c) & 1 else -1.0) * h[chosen[c]]
                for e in range(size3):
                    vertex[e] += step * slopes[chosen[c], e]
            top = max(top, config_constant_kernel(vertex.reshape((n, n, n)), grams))
        second = top + margin + sides + mixed
        # every side whose linear model beats its whole line, at the vertices together (N')
        count, others, spread = _linear_sides(size, along, whole_of, none_taken, linear)
        if count > corners:
            every, rounding = _vertices_top(centre, slopes, n, h, linear, count, _TIGHTEN * value, vertex, signs)
            second = min(second, every + margin + rounding * (value + margin + 3.0 * spread) + others + mixed)
        first = value + margin
        for l in range(m):
            first += h[l] * lipschitz[l]
        bounds[b] = min(first, second)
        if np.isnan(first) or np.isnan(second) or np.isnan(top):
            bounds[b] = np.inf  # an overflow: no bound from this box


class BoxSetup(NamedTuple):
    """What the box bounds of one model need (``box_setup``).

    - ``free``: the coordinates the boxes span, over [``low``, ``high``];
      ``lines``: their ``_Lines``.
    - ``base``: q with every other coordinate at its value (0, or within the
      limits; frozen ones at their mid-range).
    - ``derivatives``: (V, L, H, W) of ``fourier_derivative_bounds`` over
      ``free`` at ``base``.
    - ``frozen_bound``: N(Gamma(q) - Gamma(q with the frozen coordinates at
      ``base``)) <= frozen_bound for every q within the limits.
    - ``margin``, ``entry_margin``: rounding (``constant.value_margin``).
    """

    free: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lines: _Lines
    base: np.ndarray
    derivatives: tuple
    frozen_bound: float
    margin: float
    entry_margin: float


def box_bounds(model, setup, centres, halves, offer, pace):
    """(Upper bounds on sup k_c over boxes, each box's excess per side) (a
    generator: that pair is its return value).

    Along each side the restriction of Gamma is known exactly (``_Lines``):
    ``Gamma(c + t_l e_l) = Gamma(c) + t_l D_l + R_l(t_l)``, and the rest is
    mixed: ``Gamma(c + t) - Gamma(c) - sum_l (Gamma(c + t_l e_l) - Gamma(c))``
    is, telescoping one coordinate at a time, a sum over pairs p < l of
    integrals of d^2 Gamma/dq_p dq_l, so its N is at most ``sum_{p<l} h_p
    h_l H_pl`` (``fourier_derivative_bounds``). A pair's integral is also
    ``int_0^t_p dGamma/dq_p(y + t_l e_l) - dGamma/dq_p(y) ds`` (y in the box), so
    at most h_p times the change of dGamma/dq_p along l, whose terms of
    order +-a along a revolute l change by ``2 sin(a t / 2) / a`` times
    their derivative along l at a shifted angle (``_band_change``), and the
    same with p and l swapped; the smallest of the three is taken, which
    saturates on a side most of a turn wide. N is convex, so
    N(Gamma(c) + sum_{l in S} t_l D_l) over the box is largest at one of its
    2^|S| vertices, computed for the (at most 2) sides S of largest h_l
    N'(D_l), N' the cheap ``_norm_bound`` >= N; the other sides add h_l
    N'(D_l); each side adds ``sum_r min(scale_r h^power_r, cap_r) N'(A_r)``
    for R_l (or H_ll h_l^2 / 2, the smaller). A revolute side outside S
    adds instead, when smaller, its whole change along the line,
    ``N(Gamma(c + t_l e_l) - Gamma(c)) <= sum_a N'(A_a) (1 - cos(min(a h_l,
    pi))) + N'(B_a) sin(min(a h_l, pi / 2))`` (``_whole_line_factor``):
    the linear model and its rest overstate a side most of a turn wide
    (docs/coriolis_constant.md). The sides outside S whose linear model is
    the smaller may instead add their first-order parts together,
    ``N'(sum_l t_l D_l)`` at a vertex of theirs (``_sides_outside``: their
    slopes can cancel), or all of them with the centre, ``N'(Gamma(c) +
    sum_l t_l D_l)`` at their 2^k vertices (``_vertices_top``), the other
    sides adding their whole lines. The bound is also at most the Lipschitz
    bound ``k_c(c) + sum_l L_l h_l`` (N is a norm). Rounding: ``margin``
    per computed N, and the samples' error ``entry_margin`` per entry
    through the l1 norm of the weights that combine them. A side's excess (its share of the bound above
    k_c(c): first-order and its own rest, or its whole line, and half its
    mixed terms) picks the side to halve. The setup's frozen coordinates
    stay at ``base`` and add ``frozen_bound`` (``BoxSetup``). ``offer(values,
    q)`` receives k_c at the centres. Cost per box: 4 (revolute) or 2
    (prismatic) evaluations of Gamma per side, 2^|S| + 1 evaluations of
    N, O(n^4) each, and up to 2^(m - |S| - 1) + 2^m of N', O(n^3) each.
    """
    free, lines, base, (_, lipschitz, hessian, bands) = setup.free, setup.lines, setup.base, setup.derivatives
    count, m = centres.shape
    n = model.nv
    stride = 1 + lines.samples.sum()
    points = np.repeat(centres, stride, axis=0).reshape(count, stride, m)
    row = 1
    for l in range(m):
        points[:, row:row + lines.samples[l], l] += lines.offsets[l, :lines.samples[l]]
        row += lines.samples[l]
    q = np.tile(base, (count * stride, 1))
    q[:, free] = points.reshape(-1, m)
    gamma = np.empty((len(q), n, n, n))
    chunk = pace.chunk(model)
    for start in range(0, len(q), chunk):
        # into place: a copy would hold the GIL, which a node's outputs wait for
        christoffel_symbols(model, q[start:start + chunk], out=gamma[start:start + chunk])
        yield
    gamma = gamma.reshape(count, stride, n ** 3)
    halves = np.ascontiguousarray(halves)
    bounds = np.empty(count)
    excess = np.empty((count, m))
    values = np.empty(count)

    def boxes(start, stop):
        _box_kernel(gamma[start:stop], halves[start:stop], *lines[1:], lipschitz, hessian, bands, setup.margin,
                    n ** 1.5 * setup.entry_margin, np.empty((n, n, n + 2)), bounds[start:stop],
                    excess[start:stop], values[start:stop])

    if pace.parallel:
        in_chunks(boxes, count)
    else:
        boxes(0, count)
    offer(values, q[::stride])
    yield
    return (bounds + setup.frozen_bound) * (1.0 + 64 * (m + 2) * _EPS), excess


@njit(cache=True, nogil=True)
def keep_boxes(centres, levels, bounds, axes, live, drop_below, settle_below, settled):
    """Keep, in place, the boxes among the first ``live`` whose bound is above
    ``settle_below``; one at most ``drop_below`` cannot hold K_c, one in
    between needs no more work and raises ``settled``. Returns (boxes kept,
    settled)."""
    kept = 0
    for b in range(live):
        bound = bounds[b]
        if bound <= settle_below:
            if bound > drop_below:
                settled = max(settled, bound)
            continue
        centres[kept] = centres[b]
        levels[kept] = levels[b]
        bounds[kept] = bound
        axes[kept] = axes[b]
        kept += 1
    return kept, settled


@njit(cache=True, nogil=True)
def largest_bound(bounds, live):
    """The largest of the first ``live`` bounds (-inf for none)."""
    top = -np.inf
    for b in range(live):
        top = max(top, bounds[b])
    return top


@njit(cache=True, nogil=True)
def largest_boxes(bounds, live, count, out):
    """out[:count] = the indices, ascending, of ``count`` of the first
    ``live`` boxes with no larger bound left out (a partition: O(live))."""
    threshold = np.partition(bounds[:live].copy(), live - count)[live - count]
    taken = 0
    for b in range(live):  # at most count - 1 are above the threshold
        if bounds[b] > threshold:
            out[taken] = b
            taken += 1
    for b in range(live):
        if taken < count and bounds[b] == threshold:
            out[taken] = b
            taken += 1
    out[:count].sort()


@njit(cache=True, nogil=True)
def replace_boxes(centres, levels, bounds, axes, live, parents, child_centres, child_levels,
                  child_bounds, child_axes, drop_below, settle_below, settled):
    """The split ``parents`` (ascending) leave the first ``live`` boxes and
    their children arrive, those above ``settle_below`` kept as in
    ``keep_boxes``: into the parents' slots first, then at the end; the
    parents' slots left over are filled from the end, highest first (so
    the box moved is never one that leaves). O(children). Returns (boxes,
    settled)."""
    filled = 0
    for c in range(len(child_bounds)):
        bound = child_bounds[c]
        if bound <= settle_below:
            if bound > drop_below:
                settled = max(settled, bound)
            continue
        if filled < len(parents):
            slot = parents[filled]
            filled += 1
        else:
            slot = live
            live += 1
        centres[slot] = child_centres[c]
        levels[slot] = child_levels[c]
        bounds[slot] = bound
        axes[slot] = child_axes[c]
    for i in range(len(parents) - 1, filled - 1, -1):
        slot = parents[i]
        last = live - 1
        if slot != last:
            centres[slot] = centres[last]
            levels[slot] = levels[last]
            bounds[slot] = bounds[last]
            axes[slot] = axes[last]
        live -= 1
    return live, settled
