"""Bounds on Gamma's mixed second derivatives, and on the effect of frozen
coordinates, from the Fourier coefficients of their squared norms, for the
offline certificate search.

The box bound's only global parts are ``H_lp >= N(d2 Gamma/dq_l dq_p)``
over the whole domain (``boxes.box_bounds``, docs/coriolis_constant.md) and
the frozen coordinates' bound, ``N(F)`` for combinations ``F = sum_w w
Gamma(q + offset)`` (``search._frozen_term``: a gripper's finger moved from
its mid-range). From the exact expansion ``sum_alpha C_alpha e^{i alpha .
q}`` (revolute coordinates, orders -2..2), ``boxes.fourier_derivative_bounds``
takes them as ``sum_alpha |alpha_l alpha_p| nu(C_alpha)`` and ``sum_alpha
nu(C_alpha)``: the triangle inequality over 5^m terms, which loses every
cancellation between them, and on a wrist most of the terms cancel
(docs/coriolis_constant.md, "Certificates (computed once, offline)").

Here instead: ``P(q) = ||D(q)||_F^2`` with ``D = d2 Gamma/dq_l dq_p`` (a
*target* ``(l, p)``: the axes differentiated once each) or ``D = F`` (the
target ``()``) is a trigonometric polynomial of degree <= 4 in every angle,
so its values on the grid of 9 angles per coordinate (``2 pi j / 9``) give
its Fourier coefficients ``A_gamma`` exactly (a 9-point DFT per axis, no
aliasing), and ``sup_q P(q) <= sum_gamma |A_gamma|``, or tighter, exact
along two axes on a finer grid (``_sup_along_two_axes``). Then ``N(D) <=
||D||_F <= sqrt(sup P)``: the coefficients of the square keep the
cancellations (how close both come to the sampled maxima:
bench/diag_mixed_derivative_bounds.py, docs/coriolis_constant.md). The
slice of a joint on the world is skew and counts half in P
(``boxes._gamma_entries``): then ``N(D)^2 <= P``.

A target may also keep, along one of its axes l, the terms of order +-a
alone (a *band*, ``mixed_targets``): ``W[p, l, a - 1] >= N(g_a)`` for g_a
the derivative along l of those terms of ``dGamma/dq_p``, whose squared
norm is of degree <= 4 as well; a side most of a turn wide bounds its
mixed terms with them (``boxes._band_change``).

Rounding (docs/coriolis_constant.md, "Rounding"): each coefficient of Gamma
is off by at most ``entry_margin`` per entry, so D by at most ``W
sqrt(n^3) entry_margin`` in Frobenius norm (W = sum_alpha |alpha_l
alpha_p|, or 5^m for a value), added after the square root. Each grid
value of an entry of D is a sum of 5^m terms formed in m stages, off by at
most about ``5 m eps`` times the sum of the terms' sizes; P adds the
squares of E <= n^3 entries (through their Gram matrices, below) and 25
products, so each value of P is off by at most ``(10 m + n^3 + 30) eps
T^2`` (T, the triangle bound in Frobenius form: by Minkowski's inequality
the terms' sizes summed per entry, squared and added over the entries, are
at most T^2); the DFT of P adds a few eps log2(9^m) in 2-norm (Higham,
"Accuracy and Stability of Numerical Algorithms", 2nd ed., Thm. 24.2), and
the l1 norm of an error in A is at most ``9^(m/2)`` times its 2-norm, which
is the grid errors' root mean square. Ten times ``9^(m/2) (10 m + n^3 +
30 + 5 log2(9^m)) eps T^2`` is added (``_grid_margin``): 1.5e-9 T^2 for
panda (m = 6, n = 9).

Cost: per group of targets that share them (a pair, and its bands along one
axis: ``_groups``) and per entry, m - 1 products of a real 9 x 5 matrix along the
axes of Gamma's samples (``sum_k 9^(k+1) 5^(m-k)`` over k < m - 1, about 56
(9^(m-1) - 5^(m-1)) products), then the last axis through the entries'
Gram matrices: ``sum_e (M v_e)_j^2 = (M G M^T)_jj`` with ``G = sum_e v_e
v_e^T`` (5 x 5 per point of the other axes' grid: 25 9^(m-1) products per
entry), so the 9^m values of each entry are never formed; then one DFT of
9^m points per target.
"""
import numpy as np

GRID = 9
# the orders of the expansion's coefficients along a revolute axis (boxes._axis_transforms)
ORDERS = np.array([0, 1, 2, -2, -1])
# bytes of one block of entries on the grid of 9^(m-1) x 5 points (doubles)
_BLOCK_BYTES = 256e6
_EPS = np.finfo(float).eps
# an entry whose mixed terms reach less than this share of the largest entry's is left out of a pair's grid
_LEFT_OUT = 1e-6
# angles per axis of the finer grid along two axes of P (``_sup_along_two_axes``):
# Szegő's factor cos(4 pi / 48)^-2 = 1.07 on P
FINE = 48


def mixed_pairs(m):
    """The pairs (l, p), l < p, of m coordinates: the targets of the mixed derivatives."""
    return [(l, p) for l in range(m) for p in range(l + 1, m)]


def mixed_targets(m, wide):
    """The targets (``new_squares``) of the mixed derivatives of m
    coordinates: every pair, and for a pair with a coordinate in ``wide``
    (a revolute side that can stay wide), the bands of ``d2 Gamma/dq_l
    dq_p`` along it (``mixed_bounds``)."""
    pairs = mixed_pairs(m)
    return [(pair, None) for pair in pairs] + [
        (pair, (axis, band)) for pair in pairs for axis in pair if axis in wide for band in BANDS]


def _axis_matrix(derivatives, band=None):
    """(9, 5), real: the ``derivatives``-th derivative at q = 2 pi j / 9 of
    the trigonometric interpolant of degree 2 through samples at 2 pi s / 5
    (the DFT of ``boxes._axis_transforms``, then the expansion's terms; real
    data have a real interpolant, so the imaginary part is rounding); with
    ``band`` a, of its terms of order +-a alone."""
    samples = 2.0 * np.pi * np.arange(5) / 5
    angles = 2.0 * np.pi * np.arange(GRID) / GRID
    transform = np.exp(-1j * np.outer(ORDERS, samples)) / 5
    kept = np.ones(5) if band is None else (np.abs(ORDERS) == band).astype(float)
    return (np.exp(1j * np.outer(angles, ORDERS)) * (1j * ORDERS) ** derivatives * kept @ transform).real


# the values on the grid of 9 (index 0) and their derivatives (index 1) along an axis;
# the derivatives of the terms of order +-1 and +-2 alone (bands)
_AXIS_MATRICES = (_axis_matrix(0), _axis_matrix(1))
_BAND_MATRICES = {1: _axis_matrix(1, 1), 2: _axis_matrix(1, 2)}
# the bands of a wide side's mixed terms: the orders along it
BANDS = (1, 2)


def _matrix(target, axis):
    """The axis matrix of ``target`` (``new_squares``) along ``axis``."""
    axes, band = target
    if band is not None and band[0] == axis:
        return _BAND_MATRICES[band[1]]
    return _AXIS_MATRICES[axis in axes]


def new_squares(m, targets):
    """Zeroed accumulators for ``add_squares`` over m coordinates:
    ``targets``, each (axes, band) (module docstring: the axes
    differentiated once each, ``()`` for the value; band None, or (axis, a)
    for the terms of order +-a along that axis alone: ``mixed_targets``),
    the grids of ``P`` of every target, the squared Frobenius norms
    of the coefficients (for the triangle bound) and, per target, the bound
    on the squared norm of the entries left out."""
    count = len(targets)
    return list(targets), np.zeros((count,) + (GRID,) * m), np.zeros((5,) * m), np.zeros(count)


def _factor(m, target):
    """(5,) * m: prod over the target's axes of |alpha_l| for every term of
    the expansion, 0 for the terms outside its band."""
    axes, band = target
    factor = np.ones((5,) * m)
    for axis in axes:
        shape = [1] * m
        shape[axis] = 5
        factor = factor * np.abs(ORDERS).reshape(shape).astype(float)
    if band is not None:
        shape = [1] * m
        shape[band[0]] = 5
        factor = factor * (np.abs(ORDERS) == band[1]).reshape(shape)
    return factor


def _groups(m, targets):
    """The targets that share one Gram matrix G (``_gram_on_grid``): (the
    axis taken last, their indices), ordered by that axis. G takes the
    matrices of every axis but the last, and a pair's targets differ only
    along a band's axis, so a pair and its bands along one axis share the G
    of the axis order that puts that axis last (its bands along the other
    axis take a second)."""
    by_pair = {}
    for index, (axes, band) in enumerate(targets):
        by_pair.setdefault(axes, {}).setdefault(None if band is None else band[0], []).append(index)
    groups = []
    for by_axis in by_pair.values():
        plain = by_axis.pop(None, [])
        if not by_axis:
            groups.append((m - 1, plain))
        for number, (last, indices) in enumerate(sorted(by_axis.items())):
            groups.append((last, (plain if number == 0 else []) + indices))
    return sorted(groups, key=lambda group: group[0])


def add_squares(samples, coefficients, weights, squares):
    """Adds one block of entries to ``squares`` (``new_squares``): for each
    target, ``P(grid) += sum_e weights[e] |D_e(grid)|^2``, and the
    coefficients' own squared Frobenius norms.

    ``samples`` (5^m, E): E entries of Gamma (or F) on the tensor grid of 5 angles
    per coordinate (C order), ``coefficients`` (5^m, E) their expansion
    (``boxes._transform_grid``); ``weights`` (E,): how often each entry
    counts (Gamma[i, j, k] = Gamma[i, k, j]). An entry whose D is small
    next to the largest for every target of its group (``_groups``; on a
    chain, half of panda's for a pair: an entry depends on the joints below
    its rows and columns only) is left out of the group's grids: ``|D_e|
    <= t_e = sum_alpha |c_e,alpha| prod_l |alpha_l|`` (l over the target's
    axes) everywhere, and ``weights[e] t_e^2`` is added to the target's
    last accumulator instead (the entries are disjoint, so the squared
    norms add). A group's grids hold P with its last axis moved to the
    end (``sum_gamma |A_gamma|`` is the same in any order of the axes)."""
    targets, grids, frobenius, left_out = squares
    m = frobenius.ndim
    step = max(1, int(_BLOCK_BYTES // (8 * 5 * GRID ** (m - 1))))
    magnitudes = np.abs(coefficients)
    frobenius += ((magnitudes * magnitudes) @ weights).reshape(frobenius.shape)
    buffers = np.empty((2, 5 * GRID ** (m - 1) * min(step, samples.shape[1])))
    moved, moved_last = samples, m - 1
    for last, indices in _groups(m, targets):
        if last != moved_last:  # the samples with the group's last axis moved to the end, once per axis
            moved = np.ascontiguousarray(np.moveaxis(samples.reshape((5,) * m + (-1,)), last, m - 1)).reshape(
                samples.shape)
            moved_last = last
        reaches = [_factor(m, targets[index]).reshape(-1) @ magnitudes for index in indices]
        kept = np.any([reach > _LEFT_OUT * reach.max() for reach in reaches], axis=0)
        for index, reach in zip(indices, reaches):
            left_out[index] += float(weights[~kept] @ (reach[~kept] * reach[~kept]))
        order = [axis for axis in range(m) if axis != last]
        matrices = [_matrix(targets[indices[0]], axis) for axis in order]
        gram = np.zeros((GRID ** (m - 1), 5, 5))
        for weight in np.unique(weights[kept]):  # the entries of each weight together: no scaled copies
            columns = np.flatnonzero(kept & (weights == weight))
            for start in range(0, len(columns), step):
                gram += weight * _gram_on_grid(moved[:, columns[start:start + step]], matrices, buffers)
        for index in indices:
            # (M G M^T)_jj = sum_kl G_kl M_jk M_jl, M the last axis's matrix
            matrix = _matrix(targets[index], last)
            products = (matrix[:, :, None] * matrix[:, None, :]).reshape(GRID, 25)
            grids[index] += (gram.reshape(-1, 25) @ products.T).reshape((GRID,) * m)


def _gram_on_grid(values, matrices, buffers):
    """(9^(m-1), 5, 5): ``G = sum_e v_e v_e^T``, v_e the E entries sampled
    in ``values`` (5^m, E) carried to the grid of 9 angles in the first m - 1
    coordinates (by ``matrices``, one per axis), at the last coordinate's 5
    samples; then ``sum_e D_e^2 = (M G M^T)_jj`` at its 9 angles j, M its
    axis matrix (module docstring). Axis by axis in C order ((grid so far,
    5, the rest) -> (grid so far, 9, the rest)), stacked products into the
    two ``buffers`` in turn."""
    m = len(matrices) + 1
    count = values.shape[1]
    for axis, matrix in enumerate(matrices):
        out = buffers[axis % 2][:GRID ** (axis + 1) * 5 ** (m - axis - 1) * count]
        out = out.reshape(GRID ** axis, GRID, -1)
        np.matmul(matrix, values.reshape(GRID ** axis, 5, -1), out=out)
        values = out
    values = values.reshape(GRID ** (m - 1), 5, count)
    return np.matmul(values, values.transpose(0, 2, 1))


def _grid_margin(m, n):
    """The rounding of P's grid values and of its DFT, relative to T^2 (T
    the triangle bound in Frobenius form): the module docstring's estimate,
    ten times."""
    return 10.0 * GRID ** (m / 2) * (10 * m + n ** 3 + 30 + 5 * np.log2(GRID ** m)) * _EPS


def _along(coefficients, axes, points):
    """(points,) * len(axes): ``sum over the other axes' orders of |sum over
    the orders gamma of ``axes`` A_gamma e^{i gamma . y}|`` at the grid of
    ``points`` equispaced angles y per axis of ``axes`` (the polynomial's
    coefficients ``A`` (9,) * m, as ``np.fft.fftn`` orders them), its
    values exact along ``axes`` and bounded by the triangle inequality
    along the others. A real polynomial's coefficients are Hermitian
    (``A_-gamma = conj(A_gamma)``), so the inner sums of opposite orders of
    the other axes are conjugate: those whose last order is 1..4 are
    counted twice, for their opposites (-1..-4), and those whose last order
    is 0 once each."""
    k = len(axes)
    moved = np.moveaxis(coefficients, axes, range(k))
    if moved.ndim == k:  # no other axis
        moved, weights = moved[..., None], np.ones(1)
    else:
        moved = moved.reshape((GRID,) * k + (-1, GRID))[..., :5].reshape((GRID,) * k + (-1,))
        weights = np.tile([1.0, 2.0, 2.0, 2.0, 2.0], moved.shape[-1] // 5)
    orders = np.fft.fftfreq(GRID, 1.0 / GRID).astype(int) % points
    total = np.zeros((points,) * k)
    step = max(1, int(4e6 // points ** k))
    for start in range(0, moved.shape[-1], step):
        stop = min(moved.shape[-1], start + step)
        padded = np.zeros((points,) * k + (stop - start,), dtype=complex)
        padded[np.ix_(*([orders] * k))] = moved[..., start:stop]
        values = np.fft.ifftn(padded, axes=tuple(range(k))) * points ** k
        total += np.abs(values) @ weights[start:stop]
    return total


def _sup_along_two_axes(coefficients):
    """An upper bound on ``sup_q P(q)``, P >= 0 a trigonometric polynomial
    of degree <= 4 per angle with coefficients ``A`` (9,) * m, tighter than
    ``sum |A_gamma|``: exact along the two axes S where that helps most,
    on a grid of ``FINE`` angles, the triangle inequality along the
    others (``_along``). Why it holds: at a maximiser x* of P, P restricted to
    the line through x* along an axis of S is a real nonnegative
    polynomial of degree <= 4 whose maximum is P(x*), and within pi / FINE
    of its maximiser it is at least cos(4 pi / FINE) times that (Szegő's
    inequality, ``T'^2 + 4^2 T^2 <= 4^2 ||T||^2``); from that grid point
    along the second axis of S the same, so some grid point y of S has
    ``P(y, x*_rest) >= cos(4 pi / FINE)^2 P(x*)``, and ``P(y, x*_rest) <=
    _along(y)``. The axes: those of the two smallest such bounds along one
    axis alone (on a grid of ``FINE // 2``). Rounding: the inverse DFTs are
    off by at most ``5 log2(N) eps sqrt(N)`` times their input's l1 norm
    (N points; Higham 2002, Thm. 24.2, and ||.||_2 <= ||.||_1), the sums
    of absolute values by ``9^m eps`` relative; both added."""
    m = coefficients.ndim
    if m == 0:
        return float(abs(coefficients))
    single = [(_along(coefficients, (axis,), FINE // 2).max(), axis) for axis in range(m)]
    axes = tuple(sorted(axis for _, axis in sorted(single)[:2]))
    points = FINE ** len(axes)
    top = float(_along(coefficients, axes, FINE).max())
    l1 = float(np.abs(coefficients).sum())
    rounding = 5.0 * np.log2(points) * np.sqrt(points) * _EPS * l1 + GRID ** m * _EPS * top
    return (top + rounding) / (np.cos(4.0 * np.pi / FINE) * (1.0 - 4.0 * _EPS)) ** len(axes)


def squared_bounds(squares, n, entry_margin):
    """(targets,): ``N(D) <= ||D||_F <= bound`` for every q, per target
    (module docstring), from the accumulated ``squares``: P's supremum
    the smaller of ``sum |A_gamma|`` and ``_sup_along_two_axes``."""
    targets, grids, frobenius, left_out = squares
    m = frobenius.ndim
    norms = np.sqrt(frobenius)
    bounds = np.empty(len(targets))
    for index, target in enumerate(targets):
        factor = _factor(m, target)
        triangle = float((factor * norms).sum())
        coefficients = np.fft.fftn(grids[index]) / GRID ** m
        top = min(float(np.abs(coefficients).sum()), _sup_along_two_axes(coefficients))
        total = (top + left_out[index]) * (1.0 + 1e-12) + _grid_margin(m, n) * triangle * triangle
        error = float(factor.sum()) * np.sqrt(n ** 3) * entry_margin
        bounds[index] = np.sqrt(total) + error
    return bounds


def mixed_bounds(squares, n, entry_margin):
    """(H, W) for every q from the squares of the targets ``mixed_targets``:
    (m, m) ``H_lp >= N(d2 Gamma/dq_l dq_p)``, the diagonal inf (not computed
    here); (m, m, 2) ``W[p, l, a - 1] >= N`` of the terms of order +-a along
    l of ``d2 Gamma/dq_p dq_l`` (``boxes.box_bounds``: a wide side's mixed
    terms), inf where not computed."""
    targets, _, frobenius, _ = squares
    m = frobenius.ndim
    second = np.full((m, m), np.inf)
    bands = np.full((m, m, len(BANDS)), np.inf)
    for ((l, p), band), bound in zip(targets, squared_bounds(squares, n, entry_margin)):
        if band is None:
            second[l, p] = second[p, l] = bound
        else:
            axis, order = band
            bands[p + l - axis, axis, order - 1] = bound
    return second, bands
