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
the kernels are then compiled for float32 model copies and float32 work
arrays, so each stored intermediate is rounded to float32 (the reference
experiments of both papers compare single with double precision).
"""
import threading

import numpy as np
from numba import njit

from . import crba, rnea
from .batch import run_kernel
from .errors import DynamicsError
from .kinematics import KINEMATICS_SIZE, kinematics_views, world_kinematics
from .spatial import cross_force, cross_motion, dot6, mat6_vec
from .state import joint_array, matrix_result, to_all_joints, vector_result

METHODS = ("recursive", "cholesky")

# A pivot (D_i of the UDU^T factors, or a Cholesky pivot squared) at or below
# this many rounding units of M_ii, the largest value it can have, is
# indistinguishable from zero: M is singular to working precision.
_SINGULAR_ULPS = 32


def forward_dynamics(model, q, qd, tau, method="recursive"):
    """Joint accelerations qdd for torques tau: (n,), or (N, n) for a batch.

    ``method``: ``"recursive"`` (O(n), never forms or inverts M) or
    ``"cholesky"`` (M and a Cholesky solve, O(n^3)). All of q, qd, tau float32
    arrays: computed in float32 and returned as float32; otherwise float64.
    Raises ``StateError`` for wrong shapes or non-finite inputs and
    ``DynamicsError`` naming the joint where M is singular (a chain without
    mass or inertia) or where a result is not finite.
    """
    if method not in METHODS:
        raise DynamicsError(f"forward dynamics method must be one of {METHODS}, "
                            f"got {method!r}")
    dtype = np.float32 if _all_float32(q, qd, tau) else np.float64
    q = joint_array(model, q, "q", dtype=dtype)
    qd = joint_array(model, qd, "qd", like=q, dtype=dtype)
    tau = joint_array(model, tau, "tau", like=q, dtype=dtype)
    if method == "recursive":
        if model.reduced:
            # qdd_full = J qdd is a constraint the tree recursion cannot
            # impose; the reduced M = J^T M J needs the matrix method.
            raise DynamicsError(
                f"model '{model.name}' has mimic joints reduced out of q: use "
                "method='cholesky' for its forward dynamics")
        samples = q.reshape(-1, model.nv)
        status = np.empty(len(samples), dtype=np.int64)
        out = np.empty(samples.shape, dtype=dtype)
        run_kernel(_articulated_body, _kernel_model(model, dtype),
                   (samples, qd.reshape(samples.shape), tau.reshape(samples.shape),
                    status), out, _work_size)
        names = model.body_joint_names
    else:
        out, status = _mass_matrix_solve(model, q, qd, tau, dtype)
        names = model.joint_names
    failed = _first_failure(status)
    if failed >= 0:
        _raise_failure(model, failed, int(status[failed]), names, q.ndim == 2)
    return out[0] if q.ndim == 1 else out


def _all_float32(*arrays):
    # a loop, not all(<generator>): this runs on every call of a 10 us function
    for x in arrays:
        if not (isinstance(x, np.ndarray) and x.dtype.char == "f"):
            return False
    return True


def _mass_matrix_solve(model, q, qd, tau, dtype):
    """qdd from M(q) (CRBA), the bias C qd + g (RNEA) and a Cholesky solve.

    Mimic-reduced models get ``J^T M J`` and ``J^T (C qd + g)`` (MATH.md).
    """
    kernel_model = _kernel_model(model, dtype)
    # the mimic map is float64: its products come back in the kernel dtype
    qa = np.ascontiguousarray(to_all_joints(model, q, True), dtype=dtype)
    qda = np.ascontiguousarray(to_all_joints(model, qd, False), dtype=dtype)
    mass = np.empty((len(qa), model.nb, model.nb), dtype=dtype)
    run_kernel(crba._mass_matrix, kernel_model, (qa,), mass, crba._work_size)
    bias = np.empty(qa.shape, dtype=dtype)
    run_kernel(rnea._inverse_dynamics, kernel_model,
               (qa, qda, np.zeros_like(qda)), bias, rnea._work_size)
    mass = matrix_result(model, mass, False).astype(dtype, copy=False)
    bias = vector_result(model, bias, False).astype(dtype, copy=False)
    out = np.empty_like(bias)
    status = np.empty(len(out), dtype=np.int64)
    _cholesky_solve(mass, tau.reshape(bias.shape) - bias, status, out)
    return out, status


@njit(cache=True)
def _first_failure(status):
    for s in range(status.shape[0]):
        if status[s] >= 0:
            return s
    return -1


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


# -- float32 copies of the model ---------------------------------------------


class _Float32Model:
    """What ``run_kernel`` needs of a model, with float32 arrays."""

    def __init__(self, model):
        self.nb = model.nb
        self.arrays = tuple(
            np.array(a, dtype=np.float32) if a.dtype.kind == "f" else np.array(a)
            for a in model.arrays)
        self._local = threading.local()

    def workspace(self, key, size_fn):
        """Per-thread float32 work array for ``key`` (as ``Model.workspace``)."""
        cache = self._local.__dict__
        work = cache.get(key)
        if work is None:
            work = cache[key] = np.zeros(size_fn(self.nb), dtype=np.float32)
        return work


def _kernel_model(model, dtype):
    if dtype == np.float64:
        return model
    # model.cache dies with the model (a payload swap makes a new one); two
    # threads racing here build equal copies, and either may win
    copy = model.cache.get(_Float32Model)
    if copy is None:
        copy = model.cache.setdefault(_Float32Model, _Float32Model(model))
    return copy


# -- the articulated-body recursion --------------------------------------------


def _work_size(nb):
    # kinematics, then per body v, c, pA, U, a (6 each), IA, Ic (36), D, u
    return nb * (KINEMATICS_SIZE + 104) + 12


@njit(cache=True, nogil=True)
def _articulated_body(parent, joint_type, joint_placement, joint_axis, inertia,
                      gravity, Q, QD, TAU, status, work, out):
    """Recursive forward dynamics in world coordinates, per sample.

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

    ``status[s]``: -1, or i when D_i is zero to working precision (at most
    a few rounding units of M_ii = S_i^T Ic_i S_i, Ic_i the composite
    inertia: D_i <= M_ii since the articulated body is the composite one
    with joints free), or nb + i when qdd_i is not finite. Cost: O(n).
    """
    nb = parent.shape[0]
    eps = np.finfo(work.dtype).eps
    rot, pos, S, I = kinematics_views(work, nb)
    base = nb * KINEMATICS_SIZE
    v = work[base:base + 6 * nb].reshape((nb, 6))
    c = work[base + 6 * nb:base + 12 * nb].reshape((nb, 6))
    pA = work[base + 12 * nb:base + 18 * nb].reshape((nb, 6))
    U = work[base + 18 * nb:base + 24 * nb].reshape((nb, 6))
    a = work[base + 24 * nb:base + 30 * nb].reshape((nb, 6))
    IA = work[base + 30 * nb:base + 66 * nb].reshape((nb, 6, 6))
    Ic = work[base + 66 * nb:base + 102 * nb].reshape((nb, 6, 6))
    D = work[base + 102 * nb:base + 103 * nb]
    u = work[base + 103 * nb:base + 104 * nb]
    tmp = work[base + 104 * nb:base + 104 * nb + 6]
    Ud = work[base + 104 * nb + 6:base + 104 * nb + 12]
    for s in range(Q.shape[0]):
        world_kinematics(parent, joint_type, joint_placement, joint_axis,
                         inertia, Q[s], rot, pos, S, I)
        qd = QD[s]
        tau = TAU[s]
        status[s] = -1
        # 1. velocities, velocity-product accelerations, rigid-body bias forces
        # (separate branches rather than a 0.0 default keep float32 in float32)
        for i in range(nb):
            p = parent[i]
            if p >= 0:
                for k in range(6):
                    v[i, k] = v[p, k] + S[i, k] * qd[i]
            else:
                for k in range(6):
                    v[i, k] = S[i, k] * qd[i]
            cross_motion(v[i], S[i], c[i])
            for k in range(6):
                c[i, k] *= qd[i]
            mat6_vec(I[i], v[i], tmp)
            cross_force(v[i], tmp, pA[i])
            for r in range(6):
                for k in range(6):
                    IA[i, r, k] = I[i, r, k]
                    Ic[i, r, k] = I[i, r, k]
        # 2. articulated inertias and bias forces, children first
        for i in range(nb - 1, -1, -1):
            mat6_vec(IA[i], S[i], U[i])
            D[i] = dot6(S[i], U[i])
            mat6_vec(Ic[i], S[i], tmp)
            if not D[i] > _SINGULAR_ULPS * eps * dot6(S[i], tmp):  # also NaN
                status[s] = i
                break
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
                    Ic[p, r, k] += Ic[i, r, k]
        if status[s] >= 0:
            continue
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
            qdd = (u[i] - dot6(U[i], a[i])) / D[i]
            if not np.isfinite(qdd):
                status[s] = nb + i
                break
            out[s, i] = qdd
            for k in range(6):
                a[i, k] += S[i, k] * qdd


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
