"""Christoffel symbols of the first kind, Gamma[i, j, k] (docs/math.md)."""
import numpy as np
from numba import njit, types
from numba.extending import overload

from ..calls import run, sample_entry
from .coriolis import body_factorization, mat6t_vec
from ..errors import DynamicsError
from .finite import all_finite
from .kinematics import composite_inertias, floating_only, forward_kinematics, valid_configuration
from ..model.model import BASE_BODIES, REVOLUTE
from .samples import sample, sample_count
from .spatial import cross_force, cross_motion, dot6, inertia_matrix, inertia_times, mat6_vec
from ..model.state import (configuration_array, into, kernel_out, raise_failure,
                    tensor_result, to_all_joints)

METHODS = ("tree", "safeea")


@njit(cache=True, nogil=True, inline="always")
def slice_index(model, a, b, k):
    """Where ``Gamma[a, b, k]`` is in the blocks (``slices``): a and b
    related to k."""
    return (model.slice_start[k] + model.slice_local[k, a] * model.slice_row[k]
            + model.slice_local[k, b] * model.slice_col[k])


@njit(cache=True, nogil=True)
def christoffel_tree(model, data, blocks):
    """Gamma from ``data.S`` and the composites ``data.Ic``, into ``blocks``:
    one block per slice ``Gamma_k = Gamma[:, :, k]`` over the joints related
    to k (``slices``; ``christoffel_scatter`` makes the dense tensor).

    Algorithm 2 of Echeandia and Wensing (2021), world frame. Children
    first: for body k with its composite inertia ``Ic_k``,
    ``B = B(Ic_k, S_k)`` (the factorization of their eq. (10)) and
    ``F = Ic_k S_k``; for every ancestor j of k (and j = k)
    ``f1 = B S_j``, ``f2 = B^T S_j``, ``f3 = S_j x* F - f1``, and for every
    ancestor i of j (and i = j) ``Gamma[i, j, k] = S_i . f1``,
    ``Gamma[j, i, k] = S_i . f2``, ``Gamma[k, i, j] = S_i . f3``, each with
    its last two indices swapped as well (their eqs. (36)-(40)). Symbols of
    joints that are not all on one root-to-leaf path are zero and have no
    place in the blocks. World coordinates need no transforms along the
    paths. Cost: O(n d^2) for a tree of depth d (O(n^3) for a serial
    chain), and ``sum_k m_k^2`` to clear the blocks (m_k = depth(k) +
    |subtree(k)|). A floating base then gets ``free_flyer_symbols``.
    """
    parent, S = model.parent, data.S
    local, start, row, col = model.slice_local, model.slice_start, model.slice_row, model.slice_col
    B, I6, F, f1, f2, f3 = data.B, data.I6, data.h, data.f1, data.f2, data.f3
    nb = parent.shape[0]
    G = blocks.reshape((nb, nb, nb)) if dense_layout(model) else blocks.reshape((1, 1, 1 * blocks.size))
    blocks[:] = 0
    for k in range(nb - 1, -1, -1):
        inertia_matrix(data.Ic[k], I6)
        # also leaves F = Ic_k S_k, the momentum it needs
        body_factorization(I6, S[k], F, B)
        # slices k and j as (start, row step, column step); an ancestor i of
        # j has the same place in both, its depth: local[k, i] == local[j, i]
        sk, rk, ck, kk = start[k], row[k], col[k], local[k, k]
        j = k
        while j >= 0:
            mat6_vec(B, S[j], f1)
            mat6t_vec(B, S[j], f2)
            cross_force(S[j], F, f3)
            for r in range(6):
                f3[r] -= f1[r]
            sj, rj, cj, kj, jk = start[j], row[j], col[j], local[k, j], local[j, k]
            i = j
            while i >= 0:
                if dense_layout(model):
                    G[i, j, k] = G[i, k, j] = dot6(S[i], f1)
                    G[j, i, k] = G[j, k, i] = dot6(S[i], f2)
                    G[k, i, j] = G[k, j, i] = dot6(S[i], f3)
                    i = parent[i]
                    continue
                si, ri, ci, di = start[i], row[i], col[i], local[k, i]
                ij, ik = local[i, j], local[i, k]
                g = dot6(S[i], f1)
                blocks[sk + di * rk + kj * ck] = g  # Gamma[i, j, k]
                blocks[sj + di * rj + jk * cj] = g  # Gamma[i, k, j]
                g = dot6(S[i], f2)
                blocks[sk + kj * rk + di * ck] = g  # Gamma[j, i, k]
                blocks[si + ij * ri + ik * ci] = g  # Gamma[j, k, i]
                g = dot6(S[i], f3)
                blocks[sj + jk * rj + di * cj] = g  # Gamma[k, i, j]
                blocks[si + ik * ri + ij * ci] = g  # Gamma[k, j, i]
                i = parent[i]
            j = parent[j]
    base_symbols(model, data, blocks)


def dense_layout(model):
    """True when the blocks are the dense tensor itself (``slices``: a
    fixed-base chain, or a tree nearly one), ``Gamma[a, b, k]`` at
    ``(a * nb + b) * nb + k``: ``christoffel_tree`` then writes straight
    into Gamma."""
    return model.dense_slices is not None


def dense_record(model_type) -> bool:
    """``dense_layout`` of a model record's numba type, when a kernel is compiled."""
    return not isinstance(model_type.field_dict["dense_slices"], types.NoneType)


@overload(dense_layout, inline="always")
def _dense_layout(model):
    # a constant of the record's type, as ``kinematics.is_floating``: a
    # chain's kernels index Gamma directly, without the layout's look-ups
    value = dense_record(model)
    return lambda model: value


@njit(cache=True, nogil=True)
def christoffel_scatter(model, blocks, G):
    """The dense Gamma (nb, nb, nb) from the blocks of ``christoffel_tree``:
    zeros where joints are unrelated. O(n^3)."""
    nb = model.parent.shape[0]
    local = model.slice_local
    for a in range(nb):
        for b in range(nb):
            for k in range(nb):
                if local[k, a] >= 0 and local[k, b] >= 0:
                    G[a, b, k] = blocks[slice_index(model, a, b, k)]
                else:
                    G[a, b, k] = 0


@njit(cache=True, nogil=True)
def christoffel_gather(model, G, blocks):
    """The blocks of ``christoffel_tree`` from a dense Gamma (nb, nb, nb),
    such as a caller's (``coriolis_bounds(..., christoffel=...)``): the
    inverse of ``christoffel_scatter``, leaving out the symbols of unrelated
    joints (zero). O(n^3)."""
    nb = model.parent.shape[0]
    local = model.slice_local
    for a in range(nb):
        for b in range(nb):
            for k in range(nb):
                if local[k, a] >= 0 and local[k, b] >= 0:
                    blocks[slice_index(model, a, b, k)] = G[a, b, k]


@njit(cache=True, nogil=True)
def free_flyer_symbols(model, data, blocks):
    """Adds to the tree's symbols what a floating base's generalized speeds
    change: ``Gamma[r, i, k] += (Ic_r S_r) . (S_k x S_i)`` for base columns
    i < k and every body r.

    ``christoffel_tree`` sees the base's six bodies as a chain, in which
    column i turns with the speeds of columns k <= i only; fixed in the root
    link, each turns with all six (``kinematics.body_velocities``), so
    Algorithm 1's ``C[r, i]``, whose term in Sdot_i is ``(Ic S_r) . Sdot_i``
    (Ic the composite of the deeper of r and i, which is Ic_r as the base
    bodies are massless), gains ``(Ic_r S_r) . (S_k x S_i) v_k`` for k > i.
    With these the symbols are Pinocchio's ``computeCoriolisMatrix(q, e_k)``
    (Echeandia and Wensing (2021), Remark 5: generalized speeds;
    docs/floating_base.md); they are no longer symmetric in j and k. Needs
    the composites ``data.Ic``. Cost: O(n).
    """
    S, F, t = data.S, data.f, data.t  # F_r = Ic_r S_r, rnea's forces as scratch
    nb = model.parent.shape[0]
    for r in range(nb):
        inertia_times(data.Ic[r], S[r], F[r])
    for i in range(BASE_BODIES - 1):
        for k in range(i + 1, BASE_BODIES):
            cross_motion(S[k], S[i], t)
            for r in range(nb):
                blocks[slice_index(model, r, i, k)] += dot6(F[r], t)


base_symbols = floating_only(free_flyer_symbols)


@njit(cache=True, nogil=True)
def christoffel_safeea(model, data, G):
    """Safeea, Neto and Bearee (2019) for a serial chain of revolute joints.

    Joint m turns about the world unit axis ``k_m`` through ``o_m``; link l
    has mass ``m_l``, world CoM ``c_l`` and ``L_l = tr(I_l) 1 - 2 I_l`` from
    its rotational inertia about the CoM in world axes (their eq. (16)).
    For joints j <= i at unit velocity, link l >= i carries half the
    Coriolis force ``f = m_l k_j x (k_i x (c_l - o_i))`` and half the
    Coriolis moment ``h = 1/2 (L_l k_j) x k_i`` (their eqs. (26)-(27); for
    i = j these are the whole centrifugal force and moment). A backward
    recursion sums them over the links, ``F += f``, ``N += h + c_l x f``
    (moments about the world origin: their eqs. (28)-(29) with a fixed
    reference point), and the symbol is the torque about joint k's axis,
    ``Gamma[k, j, i] = k_k . (N - o_k x F)`` over links l >= max(i, k)
    (their eq. (30)). Needs ``forward_kinematics``. Cost: O(n^3).
    """
    inertia, rot, pos, S = model.inertia, data.rot, data.pos, data.S
    com, L = data.com, data.L
    nb = inertia.shape[0]
    for l in range(nb):
        for r in range(3):
            com[l, r] = (pos[l, r] + rot[l, r, 0] * inertia[l, 1]
                         + rot[l, r, 1] * inertia[l, 2]
                         + rot[l, r, 2] * inertia[l, 3])
        _world_l_matrix(inertia[l], rot[l], L[l])
    for j in range(nb):
        a0, a1, a2 = S[j, 0], S[j, 1], S[j, 2]
        for i in range(j, nb):
            b0, b1, b2 = S[i, 0], S[i, 1], S[i, 2]
            F0 = F1 = F2 = 0.0
            N0 = N1 = N2 = 0.0
            for l in range(nb - 1, i - 1, -1):
                m = inertia[l, 0]
                p0 = com[l, 0] - pos[i, 0]
                p1 = com[l, 1] - pos[i, 1]
                p2 = com[l, 2] - pos[i, 2]
                # u = k_i x p, f = m k_j x u
                u0 = b1 * p2 - b2 * p1
                u1 = b2 * p0 - b0 * p2
                u2 = b0 * p1 - b1 * p0
                f0 = m * (a1 * u2 - a2 * u1)
                f1 = m * (a2 * u0 - a0 * u2)
                f2 = m * (a0 * u1 - a1 * u0)
                # w = L k_j, h = 1/2 w x k_i
                w0 = L[l, 0, 0] * a0 + L[l, 0, 1] * a1 + L[l, 0, 2] * a2
                w1 = L[l, 1, 0] * a0 + L[l, 1, 1] * a1 + L[l, 1, 2] * a2
                w2 = L[l, 2, 0] * a0 + L[l, 2, 1] * a1 + L[l, 2, 2] * a2
                c0, c1, c2 = com[l, 0], com[l, 1], com[l, 2]
                F0 += f0
                F1 += f1
                F2 += f2
                N0 += 0.5 * (w1 * b2 - w2 * b1) + c1 * f2 - c2 * f1
                N1 += 0.5 * (w2 * b0 - w0 * b2) + c2 * f0 - c0 * f2
                N2 += 0.5 * (w0 * b1 - w1 * b0) + c0 * f1 - c1 * f0
                if l > i:
                    g = _axis_torque(S[l], pos[l], N0, N1, N2, F0, F1, F2)
                    G[l, j, i] = g
                    G[l, i, j] = g
            # joints k <= i see all links from i on
            for k in range(i + 1):
                g = _axis_torque(S[k], pos[k], N0, N1, N2, F0, F1, F2)
                G[k, j, i] = g
                G[k, i, j] = g


@njit(cache=True, nogil=True)
def _christoffel(data, safeea, Q, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, G = sample(Q, s, Q), sample(out, s, Q)
        if not valid_configuration(model, q):
            return s
        forward_kinematics(model, data, q)
        if safeea:
            christoffel_safeea(model, data, G)
        else:
            composite_inertias(model, data)
            if dense_layout(model):
                christoffel_tree(model, data, G.reshape(G.size))
            else:
                christoffel_tree(model, data, data.blocks)
                christoffel_scatter(model, data.blocks, G)
        if not all_finite(G):
            return s
    return -1


@njit(cache=True, nogil=True, inline="always")
def _axis_torque(Sk, o, N0, N1, N2, F0, F1, F2):
    """k . (N - o x F): the moment N about the world origin, of a system of
    forces with resultant F, about the axis k through o."""
    return (Sk[0] * (N0 - (o[1] * F2 - o[2] * F1))
            + Sk[1] * (N1 - (o[2] * F0 - o[0] * F2))
            + Sk[2] * (N2 - (o[0] * F1 - o[1] * F0)))


@njit(cache=True, nogil=True, inline="always")
def _world_l_matrix(params, rot, out):
    """out = R (tr(I) 1 - 2 I) R^T for the rotational inertia I about the CoM
    in body axes (``params`` as in ``Model.inertia``): Safeea et al. eq. (16)."""
    ixx, ixy, ixz = params[4], params[5], params[6]
    iyy, iyz, izz = params[7], params[8], params[9]
    trace = ixx + iyy + izz
    for r in range(3):
        for c in range(r, 3):
            acc = 0.0
            for a in range(3):
                if a == 0:
                    ia = ixx * rot[c, 0] + ixy * rot[c, 1] + ixz * rot[c, 2]
                elif a == 1:
                    ia = ixy * rot[c, 0] + iyy * rot[c, 1] + iyz * rot[c, 2]
                else:
                    ia = ixz * rot[c, 0] + iyz * rot[c, 1] + izz * rot[c, 2]
                acc += rot[r, a] * ia
            value = (trace if r == c else 0.0) - 2.0 * acc
            out[r, c] = value
            out[c, r] = value


def _check_serial_revolute(model):
    """Raise DynamicsError unless the model is a serial chain of revolute joints."""
    if model.floating:
        raise DynamicsError(
            f"christoffel_symbols(method='safeea') is for fixed-base serial chains of "
            f"revolute joints; model '{model.name}' has a floating base: use method='tree'")
    names = model.body_joint_names
    for i in range(model.nb):
        if model.joint_type[i] != REVOLUTE:
            raise DynamicsError(
                f"christoffel_symbols(method='safeea') needs revolute joints "
                f"only; joint '{names[i]}' of model '{model.name}' is prismatic")
        if model.parent[i] != i - 1:
            where = ("the root" if model.parent[i] < 0
                     else f"joint '{names[model.parent[i]]}'")
            raise DynamicsError(
                f"christoffel_symbols(method='safeea') needs a serial chain; "
                f"model '{model.name}' branches: joint '{names[i]}' hangs off "
                f"{where}, not off joint '{names[i - 1]}'")


def christoffel_symbols(model, q, method="tree", *, out=None):
    """Christoffel symbols of the first kind, (n, n, n) or (N, n, n, n).

    ``Gamma[i, j, k] = 1/2 (dM[i,j]/dq[k] + dM[i,k]/dq[j] - dM[j,k]/dq[i])``,
    torque index first (docs/math.md); ``C(q, qd)[i, j] = sum_k Gamma[i, j, k]
    qd[k]``.

    - ``method="tree"``: Algorithm 2 of S. Echeandia and P. M. Wensing,
      "Numerical Methods to Compute the Coriolis Matrix and Christoffel
      Symbols for Rigid-Body Systems", J. Comput. Nonlinear Dynam. 16(9),
      091004 (2021), eqs. (36)-(40): any tree of revolute and prismatic
      joints, cost O(n d^2) for depth d (O(n^3) for a serial chain).
    - ``method="safeea"``: M. Safeea, P. Neto and R. Bearee, "Robot
      dynamics: A recursive algorithm for efficient calculation of
      Christoffel symbols", Mech. Mach. Theory 142, 103589 (2019), eqs.
      (26)-(30): serial chains of revolute joints only (DynamicsError
      otherwise), cost O(n^3). An independent second method.

    A floating base: the tensor with ``C(q, v) = sum_k Gamma[:, :, k] v_k``
    for its generalized speeds (Echeandia and Wensing 2021, Remark 5), Pinocchio's
    ``computeCoriolisMatrix(q, e_k)``; not symmetric in j and k where both
    are base speeds (``free_flyer_symbols``); "safeea" refuses such models.
    For ``mimic="reduce"`` models the symbols transform as a tensor:
    ``Gamma_r[i,j,k] = sum J[a,i] J[b,j] J[c,k] Gamma[a,b,c]``. ``out``: an
    array of the result's shape to write into.
    """
    if method not in METHODS:
        raise DynamicsError(
            f"christoffel_symbols: method must be one of {METHODS}, got {method!r}")
    if method == "safeea":
        _check_serial_revolute(model)
    call = sample_entry(_christoffel, model, q) if out is None else None
    if call is not None:
        n = model.nv
        G = np.empty((n, n, n))
        if call(method == "safeea", q, G) < 0:
            return G
    q = configuration_array(model, q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (model.nb,) * 3)
    failed = run(_christoffel, model, (qa,), (result,), settings=(method == "safeea",))
    if failed >= 0:
        raise_failure(model, failed, (("q", q),), "Gamma(q)")
    return into(out, tensor_result(model, result))
