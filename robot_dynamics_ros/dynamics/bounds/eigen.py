"""Extreme eigenvalues of small symmetric matrices, for the Coriolis bounds.

LAPACK through numpy pays a Python call and its checks for every matrix,
more than a small matrix's arithmetic, and the bounds need n + 2 of them per
sample. Only the smallest and
largest eigenvalue are wanted, so: Householder reduction to tridiagonal form,
then Laguerre's method on the characteristic polynomial from the outside of the
spectrum, kept in a Sturm-count bracket (Golub and Van Loan, "Matrix
Computations", 4th ed., Sec. 8.3.1 and 8.4.1). The reduction is backward
stable and the bracket is exact: the results are good to about 1e-15 ||A||.
The bounds reduce their n + 2 matrices in lockstep (``tridiagonalize``), and
a floating tree's small cores too; the extreme eigenvalues of the reduced
matrices are then searched in lockstep as well (``end_eigenvalues``).
"""
import numpy as np
from numba import njit

from ..algorithms.finite import all_finite

_EPS = 2.220446049250313e-16
MAX_STEPS = 200  # Laguerre's steps per eigenvalue, far more than any takes
# The kernels divide as IEEE does, not as Python does (error_model="numpy"): every
# division here has a divisor kept off zero (a zero pivot is moved off it, a zero
# column makes no reflector), and the ZeroDivisionError check Python's model puts
# on each one keeps LLVM from vectorizing the loops over matrices side by side.
_KERNEL = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_KERNEL)
def tridiagonalize(work, lanes=None):
    """Householder reduction in place of the m symmetric matrices
    ``work[:, :, s]`` (work (n, n, m)), in lockstep: each ends as its
    tridiagonal T.

    In lockstep because at n ~ 10 one reduction is bound by its dependent
    steps: the innermost loops run over the m matrices, contiguous in
    memory, and the compiler vectorizes them (the n spectral norms of k_c
    are m = n reductions). Reads and updates the lower triangle only. The
    diagonal of T is work's diagonal, its off-diagonal work[k + 1, k]. Each
    step applies H = I - 2 v v^T to both sides of the trailing block as
    ``A - 2 (v w^T + w v^T)`` with ``w = A v - (v^T A v) v``; v is kept in
    column k below the subdiagonal and w in row k (the upper triangle is
    never read). Cost: 2/3 n^3 per matrix.

    ``lanes`` (n,), for matrices of different sizes c_s: each in the
    bottom-right corner of its ``work[:, :, s]`` (rows and columns from
    n - c_s; what is above and left of it is neither read nor written), in
    order of decreasing size, and ``lanes[k]`` the number of them with
    ``c_s >= n - k``. Step k then runs over those alone: for the others it
    would reduce a zero column. So each matrix costs its own 2/3 c_s^3, the
    same numbers as alone, not that of the largest.
    """
    n, count = work.shape[0], work.shape[2]
    # per matrix: ||x||^2, alpha, and v^T A v of the current step
    scalars = np.empty((3, count))
    squares, alpha, vav = scalars[0], scalars[1], scalars[2]
    for k in range(n - 2):
        m = count if lanes is None else lanes[k]
        for s in range(m):
            squares[s] = 0.0
        for i in range(k + 1, n):
            for s in range(m):
                squares[s] += work[i, k, s] * work[i, k, s]
        for s in range(m):
            norm = np.sqrt(squares[s])
            x1 = work[k + 1, k, s]
            alpha[s] = -norm if x1 > 0.0 else norm
            # v = (x - alpha e_1) / ||x - alpha e_1||, with ||x - alpha e_1||^2
            # = 2 (||x||^2 - alpha x_1), a sum of two positive terms by the
            # sign of alpha; x = 0 (nothing to reduce) gives v = 0, no change
            inverse = 1.0 / np.sqrt(2.0 * (squares[s] - alpha[s] * x1)) if squares[s] > 0.0 else 0.0
            work[k + 1, k, s] = x1 - alpha[s]
            for i in range(k + 1, n):
                work[i, k, s] *= inverse
        # p = A22 v in row k
        for i in range(k + 1, n):
            for s in range(m):
                work[k, i, s] = 0.0
        for i in range(k + 1, n):
            for j in range(k + 1, i):
                for s in range(m):
                    aij = work[i, j, s]
                    work[k, i, s] += aij * work[j, k, s]
                    work[k, j, s] += aij * work[i, k, s]
            for s in range(m):
                work[k, i, s] += work[i, i, s] * work[i, k, s]
        for s in range(m):
            vav[s] = 0.0
        for i in range(k + 1, n):
            for s in range(m):
                vav[s] += work[i, k, s] * work[k, i, s]
        for i in range(k + 1, n):
            for s in range(m):
                work[k, i, s] -= vav[s] * work[i, k, s]  # w = p - (v^T p) v
        for i in range(k + 1, n):
            for j in range(k + 1, i + 1):
                for s in range(m):
                    work[i, j, s] -= 2.0 * (work[i, k, s] * work[k, j, s]
                                            + work[k, i, s] * work[j, k, s])
        for s in range(m):
            work[k + 1, k, s] = alpha[s]


@njit(**_KERNEL)
def tridiagonalize_one(A, scratch):
    """Householder reduction in place of one symmetric A (n, n), C-contiguous,
    both triangles: the same steps as ``tridiagonalize`` and its result
    layout (diagonal in A's diagonal, off-diagonal in ``A[k + 1, k]``).

    Both triangles are kept so that every inner loop runs along a row
    without a running sum (``w += A[i] v_i``, ``A[i] -= 2 (v_i w + w_i v)``):
    independent updates the compiler vectorizes, where sums of products
    wait on each other and the lockstep of a few matrices is too short.
    Four rows go through each such loop together (``_product_of_rows``,
    ``_update_of_rows``), so that w and v are loaded once for four rows,
    with each sum in the order of one row at a time. The update is exactly
    symmetric (the same two products, added in either order). ``scratch``
    (2, n): v and w. Cost: n^3 multiply-adds.
    """
    n = A.shape[0]
    for k in range(n - 2):
        # every inner loop runs from 0 over views of the trailing block: a loop
        # from k + 1 keeps numba's negative-index wraparound in its indices,
        # which stops LLVM from vectorizing it
        m = n - k - 1
        x = A[k, k + 1:]  # column k below the diagonal, as row k (symmetric)
        v, w = scratch[0, k + 1:], scratch[1, k + 1:]
        squares = 0.0
        for i in range(m):
            squares += x[i] * x[i]
        norm = np.sqrt(squares)
        x1 = x[0]
        alpha = -norm if x1 > 0.0 else norm
        # v = (x - alpha e_1) / ||x - alpha e_1||, as in ``tridiagonalize``
        inverse = 1.0 / np.sqrt(2.0 * (squares - alpha * x1)) if squares > 0.0 else 0.0
        for i in range(m):
            v[i] = x[i] * inverse
        v[0] = (x1 - alpha) * inverse
        _product_of_rows(A, k + 1, m, v, w)
        vav = 0.0
        for i in range(m):
            vav += v[i] * w[i]
        for i in range(m):
            w[i] -= vav * v[i]  # w = A22 v - (v^T A22 v) v
        _update_of_rows(A, k + 1, m, v, w)
        A[k + 1, k] = alpha
        A[k, k + 1] = alpha


@njit(**_KERNEL, inline="always")
def _product_of_rows(A, s, m, v, w):
    """w (m,) = A[s:s + m, s:s + m] v, as the sum of the rows ``A[s + i] v_i``
    in the order of i, four rows per pass over w."""
    for j in range(m):
        w[j] = 0.0
    i = 0
    while i + 3 < m:
        v1, v2, v3, v4 = v[i], v[i + 1], v[i + 2], v[i + 3]
        r1, r2, r3, r4 = A[s + i, s:], A[s + i + 1, s:], A[s + i + 2, s:], A[s + i + 3, s:]
        for j in range(m):
            w[j] = (((w[j] + r1[j] * v1) + r2[j] * v2) + r3[j] * v3) + r4[j] * v4
        i += 4
    while i < m:
        vi, r1 = v[i], A[s + i, s:]
        for j in range(m):
            w[j] += r1[j] * vi
        i += 1


@njit(**_KERNEL, inline="always")
def _update_of_rows(A, s, m, v, w):
    """``A[s + i, s:s + m] -= 2 (v_i w + w_i v)`` for every i < m, four rows
    per pass over v and w."""
    i = 0
    while i + 3 < m:
        a1, b1, a2, b2 = 2.0 * v[i], 2.0 * w[i], 2.0 * v[i + 1], 2.0 * w[i + 1]
        a3, b3, a4, b4 = 2.0 * v[i + 2], 2.0 * w[i + 2], 2.0 * v[i + 3], 2.0 * w[i + 3]
        r1, r2, r3, r4 = A[s + i, s:], A[s + i + 1, s:], A[s + i + 2, s:], A[s + i + 3, s:]
        for j in range(m):
            wj, vj = w[j], v[j]
            r1[j] -= a1 * wj + b1 * vj
            r2[j] -= a2 * wj + b2 * vj
            r3[j] -= a3 * wj + b3 * vj
            r4[j] -= a4 * wj + b4 * vj
        i += 4
    while i < m:
        a1, b1, r1 = 2.0 * v[i], 2.0 * w[i], A[s + i, s:]
        for j in range(m):
            r1[j] -= a1 * w[j] + b1 * v[j]
        i += 1


@njit(**_KERNEL)
def gram_one(X, gram):
    """gram (m, m) = X^T X for X (m, m) C-contiguous, both triangles: the
    lower one row by row, ``gram[r, :r + 1] += X[i, r] X[i, :r + 1]`` over the
    rows i of X in order, four rows per pass over ``gram[r]`` (each sum still
    in the order of i; four zeros of column r skip their pass), vectorized:
    every loop from 0 (``tridiagonalize_one``), 2-d indices into X and gram
    (not a view per row, which the loop would make on every pass). Then
    mirrored. Cost: m^3 / 2."""
    m = X.shape[0]
    for r in range(m):
        for c in range(r + 1):
            gram[r, c] = 0.0
        i = 0
        while i + 3 < m:
            a1, a2, a3, a4 = X[i, r], X[i + 1, r], X[i + 2, r], X[i + 3, r]
            if not (a1 == 0.0 and a2 == 0.0 and a3 == 0.0 and a4 == 0.0):
                for c in range(r + 1):
                    gram[r, c] = ((((gram[r, c] + a1 * X[i, c]) + a2 * X[i + 1, c]) + a3 * X[i + 2, c])
                                  + a4 * X[i + 3, c])
            i += 4
        while i < m:
            a = X[i, r]
            if a != 0.0:
                for c in range(r + 1):
                    gram[r, c] += a * X[i, c]
            i += 1
    for r in range(m):
        for c in range(r):
            gram[c, r] = gram[r, c]


@njit(**_KERNEL)
def _end_eigenvalue(work, lo, hi, rank):
    """The eigenvalue of T with ``rank`` smaller ones (0 or n - 1), in [lo, hi].

    Laguerre's method on p(x) = det(T - x I), started at the end of the
    interval beyond the wanted eigenvalue: with only real roots it converges
    monotonically from there, cubically near a simple root (Wilkinson, "The
    Algebraic Eigenvalue Problem", 1965, Sec. 7.10; Newton's method needs
    about n log(distance) steps from far away). The pivots d_i of the
    LDL^T factorization of T - x I give p'/p = sum d_i'/d_i and
    -(p'/p)' = sum (d_i'/d_i)^2 - d_i''/d_i through the recurrence
    d_i = a_i - x - e_i^2 / d_{i-1}, and the Sturm count (how many
    eigenvalues lie below x, the negative pivots), which keeps [lo, hi] a
    bracket; a step leaving the bracket is replaced by bisection (Golub and
    Van Loan, "Matrix Computations", Sec. 8.4.1). About 3-5 steps of O(n).

    At a double root Laguerre converges only linearly, each step leaving
    0.28-0.29 of the distance (n = 6 to large n), and the bounds meet one
    on every sample: Gamma_k of a joint on the fixed base is skew-symmetric
    (M does not depend on that joint), so the eigenvalues of its Gram matrix
    come in pairs, and plain steps would crawl on every sample. So a step more
    than 0.2 of the one before is taken as for a root of multiplicity 2,
    which lands on an exact double root in one step (the same formula with
    (n - 2) / 2 for n - 1); once a step has passed the wanted root (a
    near-double pair), the plain steps finish inside the bracket. One
    reciprocal per pivot: the divisions chained through the pivots are what
    a step costs.
    """
    n = work.shape[0]
    from_above = rank == n - 1
    x = hi if from_above else lo
    previous = 0.0
    overshot = np.bool_(False)  # not literals (CONTRIBUTING.md, "Kernels")
    for _ in range(MAX_STEPS):
        count = np.int64(0)
        g = h = 0.0  # p'(x) / p(x) and -(p'/p)'(x)
        inverse = u = w = 0.0  # 1 / the previous pivot, its d'/d and d''/d
        for i in range(n):
            # i = 0 reads no off-diagonal: inverse = 0 makes it vanish
            inverse, u, w = _pivot(work[i, i], work[i, i - 1] if i > 0 else 0.0, x, inverse, u, w)
            g += u
            h += u * u - w
            if inverse < 0.0:
                count += 1
        x, lo, hi, previous, overshot, done = _laguerre_update(n, rank, count, g, h, x, lo, hi, previous,
                                                               overshot)
        if done:
            break
    return x


@njit(**_KERNEL)
def tridiagonal_bands(T, c, n, bands, s):
    """Copy the tridiagonal T (its leading c x c, ``tridiagonalize``'s result,
    any strides) into the first n rows of ``bands[:, :, s]`` (bands (2, N, M),
    c <= n <= N): its diagonal in ``bands[0]``, ``T[i, i - 1]`` in ``bands[1, i]``
    (0 for i = 0), zeros from c to n, so that the leading n x n of it is
    blockdiag(T, 0), with T's eigenvalues and zeros."""
    for i in range(n):
        bands[0, i, s] = T[i, i] if i < c else 0.0
        bands[1, i, s] = T[i, i - 1] if 0 < i < c else 0.0


@njit(**_KERNEL)
def largest_eigenvalues(bands, n, m, floor, out):
    """``out[s]`` = the largest eigenvalue above ``floor`` of the tridiagonal
    matrices ``bands[:, :n, s]`` for s < m (``end_eigenvalues``, each
    searched in its Gershgorin interval, as ``largest_eigenvalue`` does)."""
    diagonal, off = bands[0], bands[1]
    brackets = np.empty((3, m))
    for s in range(m):
        bottom, top = np.inf, -np.inf
        for i in range(n):  # as ``_spectrum_interval``: off[0, s] is 0
            bottom, top = _gershgorin(bottom, top, diagonal[i, s], off[i, s],
                                      off[i + 1, s] if i < n - 1 else 0.0)
        bottom, top = _widened(bottom, top)
        brackets[0, s], brackets[1, s], brackets[2, s] = max(bottom, floor), top, 1.0
    end_eigenvalues(bands, n, m, brackets, out)


@njit(**_KERNEL)
def end_eigenvalues(bands, n, m, brackets, out):
    """``out[s]`` = the largest eigenvalue (``brackets[2, s]`` = 1) or the
    smallest (0) in ``[brackets[0, s], brackets[1, s]]`` (``end_bracket``)
    of the tridiagonal matrices ``bands[:, :n, s]`` for s < m (bands
    (2, N, M), C-contiguous, ``tridiagonal_bands``): the steps of
    ``_end_eigenvalue`` on the m matrices in lockstep, the same numbers.

    One pivot recurrence is a chain of divisions, each waiting on the one
    before; m of them side by side, contiguous in memory, fill the vector
    lanes instead (0.21 of the time per matrix for 26 matrices of 12, 0.46
    for 12 of 8, 0.50 for 3 of 22). Matrices that have converged ride along
    unchanged until the last has. Cost: that of the one needing the most
    steps, m times.
    """
    diagonal, off = bands[0], bands[1]
    state = np.empty((12, m))
    x, lo, hi, previous, g, h, inverse, u, w, count, overshot, rank = (
        state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7], state[8],
        state[9], state[10], state[11])
    done = np.zeros(m, dtype=np.bool_)
    for s in range(m):
        above = brackets[2, s] != 0.0
        lo[s], hi[s] = brackets[0, s], brackets[1, s]
        x[s] = hi[s] if above else lo[s]
        rank[s] = n - 1 if above else 0
    previous[:] = 0.0
    overshot[:] = 0.0
    remaining = m
    for _ in range(MAX_STEPS):
        for s in range(m):  # row 0, as in ``_end_eigenvalue``
            inv, us, ws = _pivot(diagonal[0, s], 0.0, x[s], 0.0, 0.0, 0.0)
            inverse[s], u[s], w[s] = inv, us, ws
            g[s] = us
            h[s] = us * us - ws
            count[s] = 1.0 if inv < 0.0 else 0.0
        for i in range(1, n):
            for s in range(m):
                inv, us, ws = _pivot(diagonal[i, s], off[i, s], x[s], inverse[s], u[s], w[s])
                inverse[s], u[s], w[s] = inv, us, ws
                g[s] += us
                h[s] += us * us - ws
                count[s] += 1.0 if inv < 0.0 else 0.0
        for s in range(m):
            if done[s]:
                continue
            x[s], lo[s], hi[s], previous[s], once, done[s] = _laguerre_update(
                n, int(rank[s]), int(count[s]), g[s], h[s], x[s], lo[s], hi[s], previous[s],
                overshot[s] != 0.0)
            overshot[s] = 1.0 if once else 0.0
            if done[s]:
                remaining -= 1
        if remaining == 0:
            break
    out[:m] = x


@njit(**_KERNEL, inline="always")
def _pivot(a, e, x, inverse, u, w):
    """The next pivot d = a - x - e^2 / d_prev of the LDL^T factorization of
    T - x I, as (1 / d, d'/d, d''/d) from the previous pivot's: see
    ``_end_eigenvalue``. (e^2 / d) first: d * d can underflow to zero; a zero
    pivot is moved off zero."""
    r = e * e * inverse
    pivot = a - x - r
    slope = -1.0 + r * u
    curve = r * (w - 2.0 * u * u)
    if pivot == 0.0:
        pivot = -_EPS * (abs(x) + 1e-300)
    inverse = 1.0 / pivot
    return inverse, slope * inverse, curve * inverse


@njit(**_KERNEL)
def _laguerre_update(n, rank, count, g, h, x, lo, hi, previous, overshot):
    """One step of ``_end_eigenvalue`` after its pivots at x: the bracket
    narrowed by the Sturm count, then Laguerre's step or bisection. Returns
    (x, lo, hi, previous, overshot, done)."""
    from_above = rank == n - 1
    above = count > rank
    if above:
        hi = min(hi, x)
    else:
        lo = max(lo, x)
    overshot = overshot or (previous != 0.0 and above != from_above)
    if hi - lo <= 2.0 * _EPS * max(abs(lo), abs(hi)):
        return x, lo, hi, previous, overshot, True
    spread = max(0.0, n * h - g * g)
    step = _laguerre_step(n, g, (n - 1) * spread)
    if previous != 0.0 and not overshot and n > 2 and abs(step) > 0.2 * abs(previous):
        step = _laguerre_step(n, g, 0.5 * (n - 2) * spread)
    if step != 0.0 and abs(step) <= 2.0 * _EPS * abs(x):
        return x, lo, hi, previous, overshot, True  # the next iterate would round back onto x
    x -= step
    if not (lo < x < hi) or step == 0.0:
        x = 0.5 * (lo + hi)
    return x, lo, hi, step, overshot, False


@njit(**_KERNEL)
def _laguerre_step(n, g, square):
    """Laguerre's step n / (g +- sqrt(square)), the sign that makes it shortest."""
    root = np.sqrt(square)
    denominator = g + root if g >= 0.0 else g - root
    return n / denominator if denominator != 0.0 else 0.0


@njit(**_KERNEL)
def _spectrum_interval(T):
    """Strict bounds (lo, hi) on the spectrum of the tridiagonal T (its
    diagonal and subdiagonal): the Gershgorin interval, slightly widened,
    or the one eigenvalue of a multiple of the identity."""
    n = T.shape[0]
    lo = np.inf
    hi = -np.inf
    for i in range(n):
        lo, hi = _gershgorin(lo, hi, T[i, i], T[i, i - 1] if i > 0 else 0.0,
                             T[i + 1, i] if i < n - 1 else 0.0)
    return _widened(lo, hi)


@njit(**_KERNEL, inline="always")
def _gershgorin(lo, hi, diagonal, left, right):
    """(lo, hi) widened to the Gershgorin disc of a row of a tridiagonal
    matrix: its diagonal entry and the two off-diagonal ones beside it."""
    radius = abs(left) + abs(right)
    return min(lo, diagonal - radius), max(hi, diagonal + radius)


@njit(**_KERNEL, inline="always")
def _widened(lo, hi):
    """A Gershgorin interval made strict against rounding, or the one
    eigenvalue of a multiple of the identity."""
    if lo == hi:
        return lo, hi  # T = lo I, C(q, 0) = 0 of a robot at rest among them
    pad = 4.0 * _EPS * max(abs(lo), abs(hi)) + 1e-300
    return lo - pad, hi + pad


@njit(**_KERNEL)
def _reduce_one(A, work):
    """Copy the lower triangle of A into work (n, n) and reduce it to
    tridiagonal form there."""
    n = A.shape[0]
    for r in range(n):
        for c in range(r + 1):
            work[r, c] = A[r, c]
    tridiagonalize(work.reshape((n, n, 1)))


@njit(**_KERNEL)
def largest_singular_value(A, gram, work):
    """||A||_2 = sqrt(largest eigenvalue of A^T A); gram and work (n, n).

    Through the Gram matrix, so norms below ~1e-154 underflow to 0 (no
    robot's Coriolis terms are that small) and above ~1e154 give NaN.
    """
    n = A.shape[0]
    if n == 0:
        return 0.0
    for r in range(n):
        for c in range(r + 1):
            acc = 0.0
            for k in range(n):
                acc += A[k, r] * A[k, c]
            gram[r, c] = acc
    if not lower_triangles_finite(gram.reshape((n, n, 1))):
        return np.nan  # A too large to square: an overflow, not a norm
    _reduce_one(gram, work)
    return np.sqrt(max(0.0, largest_eigenvalue(work, 0.0)))


@njit(**_KERNEL)
def lower_triangles_finite(work):
    """True when the lower triangles of the matrices ``work[:, :, s]`` are
    finite (work (n, n, m), any strides: ``kc.constant`` passes the first n
    of a longer row of lanes)."""
    for r in range(work.shape[0]):
        for c in range(r + 1):
            if not all_finite(work[r, c]):
                return False
    return True


@njit(**_KERNEL)
def largest_eigenvalue(T, floor):
    """The largest eigenvalue of the tridiagonal T (``tridiagonalize``'s
    result, any strides), searched above ``floor`` (0 for a Gram matrix)."""
    lo, hi = end_bracket(T, floor, np.bool_(True))  # not a literal (CONTRIBUTING.md, "Kernels")
    return _end_eigenvalue(T, lo, hi, T.shape[0] - 1)


@njit(**_KERNEL)
def largest_eigenvalue_within(T, lo, hi):
    """The largest eigenvalue of the tridiagonal T (any strides), known to
    lie in [lo, hi]: searched from hi down, in fewer steps than from the
    top of the Gershgorin interval when hi is close above it."""
    return _end_eigenvalue(T, lo, hi, T.shape[0] - 1)


@njit(**_KERNEL)
def next_eigenvalue_below(T, above, r):
    """The (r + 1)-th largest eigenvalue of the tridiagonal T (m, m), m > r,
    whose r largest are ``above[:r]`` (decreasing), or NaN when it is too
    close to the r-th to part.

    Laguerre's method on p(x) / prod_i (x - above[i]), whose largest root it
    is (the deflation subtracts sum_i 1 / (x - above[i]) from p'/p and
    sum_i 1 / (x - above[i])^2 from -(p'/p)', ``_end_eigenvalue``), started
    between it and the r-th: at the farthest of ``above[r - 1] - (above[r -
    1] - lo) / 2^i`` that has m - r eigenvalues below it (a Sturm count,
    ``count_below``), where the deflation is accurate; from there it
    descends monotonically. To about 1e-13 of ``|above[0]|``. Cost: about
    10 m."""
    m = T.shape[0]
    lo, _ = _spectrum_interval(T)
    last = above[r - 1]
    x = np.nan
    step = last - lo
    for _ in range(20):
        step *= 0.5
        if count_below(T, last - step) == m - r:
            x = last - step
            break
    if not np.isfinite(x):
        return np.nan
    degree = m - r
    for _ in range(MAX_STEPS):
        g = h = 0.0
        inverse = u = w = 0.0
        for i in range(m):
            inverse, u, w = _pivot(T[i, i], T[i, i - 1] if i > 0 else 0.0, x, inverse, u, w)
            g += u
            h += u * u - w
        for i in range(r):
            d = 1.0 / (x - above[i])
            g -= d
            h -= d * d
        step = _laguerre_step(degree, g, (degree - 1) * max(0.0, degree * h - g * g))
        if not step > 1e-13 * abs(above[0]):
            break
        x -= step
    return x


@njit(**_KERNEL)
def smallest_eigenvalue(T, floor):
    """The smallest eigenvalue of the tridiagonal T (``tridiagonalize``'s
    result), searched from ``floor`` up when no eigenvalue lies below it
    (``end_bracket``): one matrix alone, what each lane of
    ``end_eigenvalues`` searching from below computes (the bounds search
    M's smallest eigenvalue in those lanes; the tests compare them)."""
    # not literals, for which numba would compile second overloads (CONTRIBUTING.md, "Kernels")
    lo, hi = end_bracket(T, floor, np.bool_(False))
    return _end_eigenvalue(T, lo, hi, np.int64(0))


@njit(**_KERNEL)
def end_bracket(T, floor, largest):
    """The interval (lo, hi) in which the largest (``largest``) or smallest
    eigenvalue of the tridiagonal T is searched: its Gershgorin interval
    (``_spectrum_interval``), for the largest cut below at ``floor``, for
    the smallest from ``floor`` up when no eigenvalue lies below it (a
    Sturm count). A mass matrix has none below 0, where its smallest
    eigenvalue is near: G1's is 1e-5 of its largest, the bottom of its
    Gershgorin interval far below 0, and the search from 0 takes 0.36 of
    the time."""
    lo, hi = _spectrum_interval(T)
    if largest:
        return max(lo, floor), hi
    if lo < floor < hi and count_below(T, floor) == 0:
        lo = floor
    return lo, hi


@njit(**_KERNEL)
def count_below(T, x):
    """How many eigenvalues of the tridiagonal T lie below x: the negative
    pivots of T - x I (``_pivot``)."""
    count = 0
    inverse = u = w = 0.0
    for i in range(T.shape[0]):
        inverse, u, w = _pivot(T[i, i], T[i, i - 1] if i > 0 else 0.0, x, inverse, u, w)
        if inverse < 0.0:
            count += 1
    return count
