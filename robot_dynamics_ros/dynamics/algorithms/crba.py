"""Joint-space inertia matrix M(q): the composite-rigid-body algorithm."""
import numpy as np
from numba import njit

from ..calls import run, sample_entry
from .finite import all_finite
from .kinematics import composite_inertias, forward_kinematics, valid_configuration
from .samples import sample, sample_count
from .spatial import dot6, inertia_times
from ..model.state import (configuration_array, into, kernel_out, matrix_result,
                    raise_failure, to_all_joints)


@njit(cache=True, nogil=True)
def crba(model, data, M):
    """M from ``data.S`` and the composites ``data.Ic``, in world coordinates.

    ``M[i, j] = S_i^T Ic_j S_j`` for i an ancestor of j (or j itself), and 0
    for unrelated joints (docs/math.md). This is the product that Safeea, Neto and
    Bearee, "Reducing the Computational Complexity of Mass-Matrix Calculation
    for High DOF Robots" (IROS 2018), eqs. (30)-(31), write with 3-vectors as
    ``A_ij = k_i^T mu_ij`` (the GDAHJ), and Featherstone, "Rigid Body
    Dynamics Algorithms" (2008), Table 6.2, with spatial vectors. In world
    coordinates ``F = Ic_i S_i`` needs no transform on its way to the root,
    so every entry is one dot product. Cost: O(n d) entries for a tree of
    depth d (O(n^2) for a serial chain).
    """
    parent, S, F = model.parent, data.S, data.f1
    for i in range(parent.shape[0]):
        inertia_times(data.Ic[i], S[i], F)
        M[i, i] = dot6(S[i], F)
        j = i - 1
        ancestor = parent[i]
        while j >= 0:  # ancestors get M[i, j] = S_j . F, the rest 0
            if j == ancestor:
                M[i, j] = M[j, i] = dot6(S[j], F)
                ancestor = parent[j]
            else:
                M[i, j] = M[j, i] = F[0] - F[0]  # a zero of M's precision
            j -= 1


@njit(cache=True, nogil=True)
def _mass_matrix(data, Q, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, M = sample(Q, s, Q), sample(out, s, Q)
        if not valid_configuration(model, q):
            return s
        forward_kinematics(model, data, q)
        composite_inertias(model, data)
        crba(model, data, M)
        if not all_finite(M):
            return s
    return -1


def mass_matrix(model, q, *, out=None):
    """Joint-space inertia matrix M(q), (n, n), or (N, n, n) for q (N, n).

    Forward kinematics (O(n)), composite inertias (O(n)) and ``crba``
    (O(n d), d the depth of the tree). ``out``: an array of the result's
    shape to write into, for callers in a loop. For ``mimic="reduce"``
    models, ``M_r = J^T M J``. A floating base: q (nq,), M (nv, nv),
    independent of the base pose (docs/floating_base.md).
    """
    call = sample_entry(_mass_matrix, model, q) if out is None else None
    if call is not None:
        M = np.empty(model.matrix_shape)
        if call(q, M) < 0:
            return M
    q = configuration_array(model, q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (model.nb,) * 2)
    failed = run(_mass_matrix, model, (qa,), (result,))
    if failed >= 0:
        raise_failure(model, failed, (("q", q),), "M(q)")
    return into(out, matrix_result(model, result))
