"""Joint-space inertia matrix M(q): the composite-rigid-body algorithm."""
import numpy as np
from numba import njit

from .batch import run_kernel
from .kinematics import KINEMATICS_SIZE, kinematics_views, world_kinematics
from .spatial import add_into, dot6, mat6_vec
from .state import joint_array, matrix_result, to_all_joints


@njit(cache=True, nogil=True)
def composite_inertias(parent, I, Ic):
    """Ic_i = inertia of body i and all its descendants, children first: O(n)."""
    nb = parent.shape[0]
    for i in range(nb):
        for r in range(6):
            for c in range(6):
                Ic[i, r, c] = I[i, r, c]
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            add_into(Ic, p, i)


def _work_size(nb):
    return nb * (KINEMATICS_SIZE + 36) + 6


@njit(cache=True, nogil=True)
def _mass_matrix(parent, joint_type, joint_placement, joint_axis, inertia,
                 gravity, Q, work, out):
    """Composite-rigid-body algorithm in world coordinates, per sample.

    ``M[i, j] = S_i^T Ic_j S_j`` for i an ancestor of j (or j itself), and 0
    for unrelated joints (MATH.md). This is the product that Safeea, Neto and
    Bearee, "Reducing the Computational Complexity of Mass-Matrix Calculation
    for High DOF Robots" (IROS 2018), eqs. (30)-(31), write with 3-vectors as
    ``A_ij = k_i^T mu_ij`` (the GDAHJ), and Featherstone, "Rigid Body
    Dynamics Algorithms" (2008), Table 6.2, with spatial vectors.
    Cost: O(n) kinematics and composite inertias, O(n d) entries for a tree
    of depth d (O(n^2) for a serial chain).
    """
    nb = parent.shape[0]
    rot, pos, S, I = kinematics_views(work, nb)
    Ic = work[nb * KINEMATICS_SIZE:nb * (KINEMATICS_SIZE + 36)].reshape((nb, 6, 6))
    F = work[nb * (KINEMATICS_SIZE + 36):nb * (KINEMATICS_SIZE + 36) + 6]
    for s in range(Q.shape[0]):
        world_kinematics(parent, joint_type, joint_placement, joint_axis,
                         inertia, Q[s], rot, pos, S, I)
        composite_inertias(parent, I, Ic)
        M = out[s]
        for i in range(nb):
            mat6_vec(Ic[i], S[i], F)
            M[i, i] = dot6(S[i], F)
            j = i - 1
            ancestor = parent[i]
            while j >= 0:  # ancestors get M[i, j] = S_j . F, the rest 0
                if j == ancestor:
                    M[i, j] = M[j, i] = dot6(S[j], F)
                    ancestor = parent[j]
                else:
                    M[i, j] = M[j, i] = 0.0
                j -= 1

def mass_matrix(model, q):
    """Joint-space inertia matrix M(q), (n, n), or (N, n, n) for q (N, n)."""
    q = joint_array(model, q, "q")
    qa = to_all_joints(model, q, offset=True)
    out = np.empty((qa.shape[0], model.nb, model.nb))
    run_kernel(_mass_matrix, model, (qa,), out, _work_size)
    return matrix_result(model, out, q.ndim == 1)
