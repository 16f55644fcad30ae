"""Coriolis matrix C(q, qd): the Christoffel-consistent factorization."""
import numpy as np
from numba import njit

from ..calls import run, sample_entry
from .finite import all_finite
from .kinematics import body_velocities, composite_inertias, forward_kinematics, valid_configuration
from .samples import sample, sample_count
from .spatial import add_into, cross_force, dot6, inertia_matrix, inertia_times, mat6_vec
from ..model.state import (configuration_array, into, joint_array, kernel_out, matrix_result,
                    raise_failure, to_all_joints)


@njit(cache=True, nogil=True, inline="always")
def body_factorization(I, v, h, B):
    """B <- B(I, v), the Niemeyer-Slotine factorization of ``v x* I v``.

    ``B(I, v) = 1/2 (crf(v) I - I crm(v) + icrf(I v))`` with
    ``icrf(f) u = u x* f`` (Echeandia and Wensing 2021, eq. (10)), so that
    ``B(I, v) v = v x* I v`` and ``B + B^T = d/dt I``. Since
    ``crf(v) = -crm(v)^T``, the first two terms are ``X + X^T`` with
    ``X = crf(v) I``; ``h`` (6,) is scratch for the momentum ``I v``.
    """
    # I is symmetric, so its row c is its column c: B[c, :] <- X[:, c]
    for c in range(6):
        cross_force(v, I[c], B[c])
    for r in range(6):
        for c in range(r + 1, 6):
            s = 0.5 * (B[r, c] + B[c, r])
            B[r, c] = s
            B[c, r] = s
    mat6_vec(I, v, h)
    # + 1/2 icrf(h) = 1/2 [[-skew(h_n), -skew(h_f)], [-skew(h_f), 0]]
    n0, n1, n2 = 0.5 * h[0], 0.5 * h[1], 0.5 * h[2]
    f0, f1, f2 = 0.5 * h[3], 0.5 * h[4], 0.5 * h[5]
    B[0, 1] += n2
    B[0, 2] -= n1
    B[1, 0] -= n2
    B[1, 2] += n0
    B[2, 0] += n1
    B[2, 1] -= n0
    for off_r, off_c in ((0, 3), (3, 0)):
        B[off_r + 0, off_c + 1] += f2
        B[off_r + 0, off_c + 2] -= f1
        B[off_r + 1, off_c + 0] -= f2
        B[off_r + 1, off_c + 2] += f0
        B[off_r + 2, off_c + 0] += f1
        B[off_r + 2, off_c + 1] -= f0


@njit(cache=True, nogil=True, inline="always")
def mat6t_vec(A, x, out):
    """out = A^T x for a 6x6 matrix A, each sum over A's column in order,
    the six of them along A's rows (independent: they vectorize)."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    for c in range(6):
        out[c] = (A[0, c] * x0 + A[1, c] * x1 + A[2, c] * x2
                  + A[3, c] * x3 + A[4, c] * x4 + A[5, c] * x5)


@njit(cache=True, nogil=True)
def coriolis(model, data, qd, C):
    """C from ``data.S``, ``data.I`` and the composites ``data.Ic``.

    Algorithm 1 of Echeandia and Wensing (2021), world frame. Forward pass:
    body velocity ``v_i = v_p + S_i qd_i``, the rate of the joint axis
    ``Sdot_i = v_i x S_i`` (S_i is fixed in body i) and the body-level
    factorization ``B_i = B(I_i, v_i)`` (their eq. (10)). Backward pass,
    children first: with the composites ``Ic_j`` and ``Bc_j`` of body j and
    its descendants, ``f1 = Ic_j Sdot_j + Bc_j S_j``, ``f2 = Ic_j S_j``,
    ``f3 = Bc_j^T S_j``, then for every ancestor i of j (and i = j)
    ``C[i, j] = S_i . f1`` and ``C[j, i] = Sdot_i . f2 + S_i . f3`` (their
    eqs. (18)-(21)). In world coordinates the forces need no transform on the
    way down to the root, so the inner loop is three dot products. Cost:
    O(n d) for a tree of depth d (O(n^2) for a chain).
    """
    parent, S, Ic = model.parent, data.S, data.Ic
    v, Sd, Bc, I6 = data.v, data.Sd, data.Bc, data.I6
    f1, f2, f3, t = data.f1, data.f2, data.f3, data.t
    nb = parent.shape[0]
    body_velocities(model, data, qd)
    for i in range(nb):
        inertia_matrix(data.I[i], I6)
        body_factorization(I6, v[i], t, Bc[i])
    for j in range(nb - 1, -1, -1):
        inertia_times(Ic[j], Sd[j], f1)
        mat6_vec(Bc[j], S[j], t)
        for k in range(6):
            f1[k] += t[k]
        inertia_times(Ic[j], S[j], f2)
        mat6t_vec(Bc[j], S[j], f3)
        C[j, j] = dot6(S[j], f1)
        i = parent[j]
        while i >= 0:
            C[i, j] = dot6(S[i], f1)
            C[j, i] = dot6(Sd[i], f2) + dot6(S[i], f3)
            i = parent[i]
        # entries of unrelated joints
        k = j - 1
        ancestor = parent[j]
        while k >= 0:
            if k == ancestor:
                ancestor = parent[k]
            else:
                C[j, k] = C[k, j] = f1[0] - f1[0]
            k -= 1
        if parent[j] >= 0:
            add_into(Bc, parent[j], j)


@njit(cache=True, nogil=True)
def _coriolis_matrix(data, Q, QD, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, qd, C = sample(Q, s, Q), sample(QD, s, Q), sample(out, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        coriolis(model, data, qd, C)
        if not all_finite(C):
            return s
    return -1


def coriolis_matrix(model, q, qd, *, out=None):
    """Christoffel-consistent Coriolis matrix C(q, qd), (n, n) or (N, n, n).

    ``C[i, j] = sum_k Gamma[i, j, k] qd[k]`` (docs/math.md), so ``Mdot - 2 C`` is
    skew-symmetric and ``C qd`` are the velocity-product torques. Computed by
    Algorithm 1 of S. Echeandia and P. M. Wensing, "Numerical Methods to
    Compute the Coriolis Matrix and Christoffel Symbols for Rigid-Body
    Systems", J. Comput. Nonlinear Dynam. 16(9), 091004 (2021), with
    the Niemeyer-Slotine body-level factorization (their eq. (10)), which
    makes the result the Christoffel-consistent one (their Prop. 2). Cost:
    O(n d), d the depth of the tree (O(n^2) for a serial chain). For
    ``mimic="reduce"`` models, ``C_r = J^T C(J qd) J`` (their Theorem 1).
    A floating base: Algorithm 1 with the base twist as generalized speeds
    (Echeandia and Wensing 2021, Remarks 5 and 6), still with
    ``Mdot = C + C^T``: Pinocchio's ``computeCoriolisMatrix`` of a
    free-flyer model (docs/floating_base.md).
    ``out``: an array of the result's shape to write into.
    """
    call = sample_entry(_coriolis_matrix, model, q, qd) if out is None else None
    if call is not None:
        C = np.empty(model.matrix_shape)
        if call(q, qd, C) < 0:
            return C
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    result = kernel_out(model, out, qa.shape[:-1] + (model.nb,) * 2)
    failed = run(_coriolis_matrix, model, (qa, qda), (result,))
    if failed >= 0:
        raise_failure(model, failed, (("q", q), ("qd", qd)), "C(q, qd)")
    return into(out, matrix_result(model, result))
