"""Forward dynamics qdd = M(q)^-1 (tau - C(q, qd) qd - g(q)), two ways.

- ``"recursive"``: the articulated-body recursion, which never forms M. It is
  the UDU^T factorization of M done body by body: Mohan and Saha, "A
  recursive, numerically stable, and efficient simulation algorithm for
  serial robots" (Multibody System Dynamics 17, 2007), Sec. 4, eqs. (30)-(37);
  Featherstone, "Rigid Body Dynamics Algorithms" (2008), Table 7.1, writes the
  same recursion with spatial vectors. Cost O(n).
- ``"cholesky"``: M by the composite-rigid-body algorithm, the bias torques
  by Newton-Euler, then a Cholesky solve: the "nonrecursive" algorithm that
  Mohan and Saha (Sec. 5) and Mata, Provenzano, Valero and Cuadrado,
  "Serial-robot dynamics algorithms for moderately large numbers of joints"
  (Mech. Mach. Theory 37, 2002), Sec. 5.1, compare against. Cost O(n^3).

Both compute in float64, or entirely in float32 when every input is float32:
the kernels are then compiled for the float32 ``ModelRecord`` and ``Data``
of the model, so each stored intermediate is rounded to float32 (the reference
experiments of both papers compare single with double precision).
"""
import numpy as np
from numba import njit

from ..calls import run, sample_entry
from .crba import _mass_matrix
from ..errors import DynamicsError
from .finite import all_finite
from .kinematics import (body_velocities, composite_inertias, forward_kinematics,
                         valid_configuration)
from .rnea import _inverse_dynamics
from .samples import sample, sample_count
from .spatial import cross_force, dot6, inertia_matrix, inertia_times, mat6_vec
from ..model.state import (configuration_array, joint_array, matrix_result, raise_bad_input,
                    raise_failure, to_all_joints, vector_result)

METHODS = ("recursive", "cholesky")

# A pivot (D_i of the UDU^T factors, or a Cholesky pivot squared) at or below
# this many rounding units of M_ii, the largest value it can have, is
# indistinguishable from zero: M is singular to working precision.
_SINGULAR_ULPS = 32


def forward_dynamics(model, q, qd, tau, method=None):
    """Joint accelerations qdd for torques tau: (n,), or (N, n) for a batch.

    ``method``: ``"recursive"`` (O(n), never forms or inverts M) or
    ``"cholesky"`` (M and a Cholesky solve, O(n^3)); by default the
    recursive one, and the Cholesky one for ``mimic="reduce"`` models (the
    tree recursion cannot impose a mimic joint's coupling; the reduced
    ``J^T M J`` can). All of q, qd, tau float32 arrays: computed in float32
    and returned as float32; otherwise float64. A floating base: tau and
    qdd (nv,) with the base's wrench and twist rate first (tau[:6] is the
    external wrench on the root link, zero for a free robot); the recursion
    factors the base's 6 x 6 articulated inertia through its six bodies
    (Featherstone (2008), Chapter 9).
    Raises ``StateError`` for wrong shapes or non-finite inputs and
    ``DynamicsError`` naming the joint where M is singular (a chain without
    mass or inertia) or where a result is not finite.
    """
    # a mimic-reduced model is never a sample (is_sample), and defaults to cholesky
    call = (sample_entry(_articulated_body, model, q, qd, tau)
            if method is None or method == "recursive" else None)
    if call is not None:
        status, qdd = np.empty(1, dtype=np.int64), np.empty(qd.shape)
        if call(q, qd, tau, status, qdd) < 0:
            return qdd
    if method is None:
        method = "cholesky" if model.reduced else "recursive"
    if method not in METHODS:
        raise DynamicsError(f"forward dynamics method must be one of {METHODS}, "
                            f"got {method!r}")
    dtype = np.float32 if _all_float32(q, qd, tau) else np.float64
    q = configuration_array(model, q, dtype=dtype)
    qd = joint_array(model, qd, "qd", like=q, dtype=dtype)
    tau = joint_array(model, tau, "tau", like=q, dtype=dtype)
    inputs = (("q", q), ("qd", qd), ("tau", tau))
    if method == "recursive":
        if model.reduced:
            # qdd_full = J qdd is a constraint the tree recursion cannot
            # impose; the reduced M = J^T M J needs the matrix method.
            raise DynamicsError(
                f"model '{model.name}' has mimic joints reduced out of q: use "
                "method='cholesky' for its forward dynamics")
        status = np.empty(len(q) if q.ndim == 2 else 1, dtype=np.int64)
        out = np.empty(qd.shape, dtype=dtype)
        failed = run(_articulated_body, model, (q, qd, tau), (status, out))
        names = model.body_joint_names
    else:
        out, status, failed = _mass_matrix_solve(model, inputs, dtype)
        names = model.velocity_names
    if failed >= 0:
        if status[failed] < 0:
            raise_failure(model, failed, inputs, "forward dynamics")
        raise_bad_input(model, failed, inputs)  # the Cholesky route checks tau last
        _raise_failure(model, failed, int(status[failed]), names, q.ndim == 2)
    return out


def _all_float32(*arrays):
    # a loop, not all(<generator>): this runs on every call, and making a generator
    # would be a sizeable part of a single sample's call
    for x in arrays:
        if not (isinstance(x, np.ndarray) and x.dtype.char == "f"):
            return False
    return True


def _mass_matrix_solve(model, inputs, dtype):
    """qdd from M(q) (CRBA), the bias C qd + g (RNEA) and a Cholesky solve.

    Mimic-reduced models get ``J^T M J`` and ``J^T (C qd + g)`` (docs/math.md).
    Returns (qdd, status per sample, the first failed sample or -1).
    """
    (_, q), (_, qd), (_, tau) = inputs
    # the mimic map is float64: its products come back in the kernel dtype
    qa = np.ascontiguousarray(to_all_joints(model, q, True), dtype=dtype)
    qda = np.ascontiguousarray(to_all_joints(model, qd, False), dtype=dtype)
    mass = np.empty(qda.shape + (model.nb,), dtype=dtype)
    bias = np.empty(qda.shape, dtype=dtype)
    status = np.full(len(q) if q.ndim == 2 else 1, -1, dtype=np.int64)
    failed = run(_mass_matrix, model, (qa,), (mass,))
    if failed < 0:
        failed = run(_inverse_dynamics, model, (qa, qda, np.zeros_like(qda)), (bias,))
    if failed >= 0:
        return None, status, failed
    n = model.nv
    mass = matrix_result(model, mass).astype(dtype, copy=False).reshape(-1, n, n)
    bias = vector_result(model, bias).astype(dtype, copy=False)
    out = np.empty(qd.shape, dtype=dtype)
    _cholesky_solve(np.ascontiguousarray(mass), (tau - bias).reshape(-1, n), status,
                    out.reshape(-1, n))
    failed = np.flatnonzero(status >= 0)
    return out, status, int(failed[0]) if failed.size else -1


def _raise_failure(model, sample, code, names, batch):
    """``code``: i (singular at joint i) or n + i (qdd_i not finite)."""
    where = f" in sample {sample}" if batch else ""
    if code < len(names):
        raise DynamicsError(
            f"M(q) of model '{model.name}' is singular{where}: its pivot at joint "
            f"'{names[code]}' is zero to working precision, so no mass or inertia "
            "resists some motion of that joint (massless links at the end of a "
            "chain, or joints whose motions cancel)")
    raise DynamicsError(
        f"forward dynamics of model '{model.name}' overflowed{where}: the "
        f"acceleration of joint '{names[code - len(names)]}' is not finite")


# -- the articulated-body recursion --------------------------------------------


@njit(cache=True, nogil=True)
def articulated_body(model, data, qd, tau, qdd):
    """Recursive forward dynamics in world coordinates; returns a status.

    Mohan and Saha (2007) factor M = U D U^T analytically (eqs. 30-37): the
    articulated inertia of body i and everything beyond it is
    ``IA_i = I_i + sum_children (IA_c - U_c U_c^T / D_c)`` (their M-hat_i,
    eq. 34), ``U_i = IA_i S_i`` and ``D_i = S_i^T U_i`` are a column of U D
    and a diagonal entry of D (eq. 33), and the inward pass solves U phi-hat
    = phi (eqs. 31-32), the outward pass D and U^T (eqs. 35-37). Here with
    world-frame spatial vectors, as Featherstone (2008), Table 7.1:

    1. outward: ``v_i = v_p + S_i qd_i``, velocity-product acceleration
       ``c_i = (v_i x S_i) qd_i``, bias force ``pA_i = v_i x* I_i v_i``;
    2. inward: ``u_i = tau_i - S_i . pA_i``, then the parent receives
       ``IA_i - U_i U_i^T / D_i`` and ``pA_i + Ia_i c_i + U_i u_i / D_i``;
    3. outward, the base accelerating at -g: ``a'_i = a_p + c_i``,
       ``qdd_i = (u_i - U_i . a'_i) / D_i``, ``a_i = a'_i + S_i qdd_i``.

    Needs ``forward_kinematics`` and ``composite_inertias``. Returns -1, or
    i when D_i is zero to working precision (at most a few rounding units of
    M_ii = S_i^T Ic_i S_i, Ic_i the composite inertia: D_i <= M_ii since the
    articulated body is the composite one with joints free), or nb + i when
    qdd_i is not finite. Cost: O(n).
    """
    parent, gravity = model.parent, model.gravity
    S, I, Ic = data.S, data.I, data.Ic
    v, Sd, c, pA, U, a = data.v, data.Sd, data.c, data.pA, data.U, data.a
    IA, D, u = data.IA, data.D, data.u
    tmp, Ud = data.t, data.h
    nb = parent.shape[0]
    eps = np.finfo(D.dtype).eps
    # 1. velocities, velocity-product accelerations, rigid-body bias forces
    body_velocities(model, data, qd)
    for i in range(nb):
        for k in range(6):
            c[i, k] = Sd[i, k] * qd[i]
        inertia_times(I[i], v[i], tmp)
        cross_force(v[i], tmp, pA[i])
        inertia_matrix(I[i], IA[i])
    # 2. articulated inertias and bias forces, children first
    for i in range(nb - 1, -1, -1):
        mat6_vec(IA[i], S[i], U[i])
        D[i] = dot6(S[i], U[i])
        inertia_times(Ic[i], S[i], tmp)
        if not D[i] > _SINGULAR_ULPS * eps * dot6(S[i], tmp):  # also NaN
            return i
        u[i] = tau[i] - dot6(S[i], pA[i])
        p = parent[i]
        if p < 0:
            continue
        # Ia = IA - U U^T / D and pa = pA + Ia c + U u / D, with Ia c
        # taken as IA c - U (U/D . c) so that Ia is never stored
        for k in range(6):
            Ud[k] = U[i, k] / D[i]
        mat6_vec(IA[i], c[i], tmp)
        w = u[i] / D[i] - dot6(Ud, c[i])
        for r in range(6):
            pA[p, r] += pA[i, r] + tmp[r] + U[i, r] * w
            for k in range(6):
                IA[p, r, k] += IA[i, r, k] - U[i, r] * Ud[k]
    # 3. accelerations, parents first
    for i in range(nb):
        p = parent[i]
        if p >= 0:
            for k in range(6):
                a[i, k] = a[p, k] + c[i, k]
        else:
            for k in range(3):
                a[i, k] = c[i, k]
                a[i, k + 3] = c[i, k + 3] - gravity[k]
        qdd[i] = (u[i] - dot6(U[i], a[i])) / D[i]
        if not np.isfinite(qdd[i]):
            return nb + i
        for k in range(6):
            a[i, k] += S[i, k] * qdd[i]
    return -1


@njit(cache=True, nogil=True)
def _articulated_body(data, Q, QD, TAU, status, out):
    """``articulated_body`` per sample; status[s] its result (-1 for a
    sample whose input is not finite, which is also returned)."""
    model = data.model
    for s in range(sample_count(Q)):
        q, qd, tau = sample(Q, s, Q), sample(QD, s, Q), sample(TAU, s, Q)
        status[s] = -1
        if not (valid_configuration(model, q) and all_finite(qd) and all_finite(tau)):
            return s
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        status[s] = articulated_body(model, data, qd, tau, sample(out, s, Q))
        if status[s] >= 0:
            return s
    return -1


# -- mass matrix and Cholesky --------------------------------------------------


@njit(cache=True, nogil=True)
def _cholesky_solve(M, b, status, out):
    """out[s] = M[s]^-1 b[s] by M = L L^T, in place in M's lower triangle.

    Golub and Van Loan, "Matrix Computations", Alg. 4.2.1 (column by column),
    then forward and back substitution. ``status`` as for the recursion, with
    i the column whose pivot vanishes. Cost: O(n^3).
    """
    n = M.shape[1]
    eps = np.finfo(M.dtype).eps
    for s in range(M.shape[0]):
        A = M[s]
        x = out[s]
        status[s] = -1
        for j in range(n):
            pivot = A[j, j]
            for k in range(j):
                pivot -= A[j, k] * A[j, k]
            # pivot = M_jj minus a sum of squares: its terms are at most M_jj
            if not pivot > _SINGULAR_ULPS * eps * abs(A[j, j]):
                status[s] = j
                break
            pivot = np.sqrt(pivot)
            A[j, j] = pivot
            for i in range(j + 1, n):
                acc = A[i, j]
                for k in range(j):
                    acc -= A[i, k] * A[j, k]
                A[i, j] = acc / pivot
        if status[s] >= 0:
            continue
        for i in range(n):
            acc = b[s, i]
            for k in range(i):
                acc -= A[i, k] * x[k]
            x[i] = acc / A[i, i]
        for i in range(n - 1, -1, -1):
            acc = x[i]
            for k in range(i + 1, n):
                acc -= A[k, i] * x[k]
            x[i] = acc / A[i, i]
            if not np.isfinite(x[i]):
                status[s] = n + i
                break
