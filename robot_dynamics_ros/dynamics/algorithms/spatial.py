"""Spatial vector products in world coordinates, written out for numba.

Motion vectors are ``[w; v_O]``, force vectors ``[n_O; f]`` (docs/math.md). The
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
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    for r in range(6):
        out[r] = (A[r, 0] * x0 + A[r, 1] * x1 + A[r, 2] * x2
                  + A[r, 3] * x3 + A[r, 4] * x4 + A[r, 5] * x5)


@njit(cache=True, inline="always")
def dot6(a, b):
    """a . b for 6-vectors (a force on a motion: power)."""
    return (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
            + a[3] * b[3] + a[4] * b[4] + a[5] * b[5])


@njit(cache=True, inline="always")
def add_into(A, target, source):
    """A[target] += A[source] for 6x6 blocks (composite Coriolis factors,
    children into parents). Explicit loops, which compile to plain scalar
    code: numba's ``+=`` on sub-array views goes through its array
    expressions and is slower."""
    for r in range(6):
        for c in range(6):
            A[target, r, c] += A[source, r, c]


# Spatial inertias about the world origin are kept as 10 numbers,
# ``[m, h (3), Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` with h = m c (c the CoM) and
# the rotational inertia about the origin: the 6 x 6 matrix
# ``[[I_O, skew(h)], [-skew(h), m 1]]`` has only these independent entries,
# so composites sum 10 numbers instead of 36 and a product costs 24
# multiplications instead of 36 (Featherstone, "Rigid Body Dynamics
# Algorithms" (2008), Sec. 2.13; Pinocchio's InertiaTpl does the same).


@njit(cache=True, inline="always")
def inertia_times(J, x, out):
    """out = I x for the inertia I of 10 numbers J and a motion vector x:
    ``[I_O w + h x v; m v - h x w]`` for ``x = [w; v]``."""
    m, h0, h1, h2 = J[0], J[1], J[2], J[3]
    w0, w1, w2, v0, v1, v2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = J[4] * w0 + J[5] * w1 + J[6] * w2 + (h1 * v2 - h2 * v1)
    out[1] = J[5] * w0 + J[7] * w1 + J[8] * w2 + (h2 * v0 - h0 * v2)
    out[2] = J[6] * w0 + J[8] * w1 + J[9] * w2 + (h0 * v1 - h1 * v0)
    out[3] = m * v0 - (h1 * w2 - h2 * w1)
    out[4] = m * v1 - (h2 * w0 - h0 * w2)
    out[5] = m * v2 - (h0 * w1 - h1 * w0)


@njit(cache=True, inline="always")
def inertia_matrix(J, out):
    """The 6 x 6 matrix of the inertia of 10 numbers J, for the recursions
    that need its rows (Coriolis factorizations, articulated inertias)."""
    m, h0, h1, h2 = J[0], J[1], J[2], J[3]
    out[0, 0], out[0, 1], out[0, 2] = J[4], J[5], J[6]
    out[1, 0], out[1, 1], out[1, 2] = J[5], J[7], J[8]
    out[2, 0], out[2, 1], out[2, 2] = J[6], J[8], J[9]
    zero = m - m  # not 0.0: a float64 literal would lift float32 arrays' sums
    for r in range(3):
        for c in range(3):
            out[3 + r, 3 + c] = m if r == c else zero
    # skew(h) upper right, -skew(h) = skew(h)^T lower left
    out[0, 3], out[0, 4], out[0, 5] = zero, -h2, h1
    out[1, 3], out[1, 4], out[1, 5] = h2, zero, -h0
    out[2, 3], out[2, 4], out[2, 5] = -h1, h0, zero
    for r in range(3):
        for c in range(3):
            out[3 + c, r] = out[r, 3 + c]


@njit(cache=True, inline="always")
def add_inertia(J, target, source):
    """J[target] += J[source] (composites: children into parents)."""
    for k in range(10):
        J[target, k] += J[source, k]
