"""Spatial vector products in world coordinates, written out for numba.

Motion vectors are ``[w; v_O]``, force vectors ``[n_O; f]`` (MATH.md). The
functions write into ``out`` so that the recursions allocate nothing.
"""
from numba import njit


@njit(cache=True, inline="always")
def cross_motion(v, m, out):
    """out = crm(v) m = v x m for motion vectors v, m."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = w1 * b2 - w2 * b1 + u1 * a2 - u2 * a1
    out[4] = w2 * b0 - w0 * b2 + u2 * a0 - u0 * a2
    out[5] = w0 * b1 - w1 * b0 + u0 * a1 - u1 * a0


@njit(cache=True, inline="always")
def cross_force(v, f, out):
    """out = crf(v) f = v x* f for a motion vector v and a force vector f."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
    out[1] = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
    out[2] = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


@njit(cache=True, inline="always")
def mat6_vec(A, x, out):
    """out = A x for a 6x6 matrix A."""
    for r in range(6):
        acc = A[r, 0] * x[0]  # not 0.0: a float64 literal would lift float32 sums
        for c in range(1, 6):
            acc += A[r, c] * x[c]
        out[r] = acc


@njit(cache=True, inline="always")
def dot6(a, b):
    """a . b for 6-vectors (a force on a motion: power)."""
    return (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
            + a[3] * b[3] + a[4] * b[4] + a[5] * b[5])


@njit(cache=True, inline="always")
def add_into(A, target, source):
    """A[target] += A[source] for 6x6 blocks (composite inertias, children
    into parents). Explicit loops: numba's ``+=`` on sub-array views is
    several times slower."""
    for r in range(6):
        for c in range(6):
            A[target, r, c] += A[source, r, c]
