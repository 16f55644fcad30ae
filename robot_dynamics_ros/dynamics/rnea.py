"""Inverse dynamics and gravity torques: the recursive Newton-Euler algorithm."""
import numpy as np
from numba import njit

from .batch import run_kernel
from .kinematics import KINEMATICS_SIZE, kinematics_views, world_kinematics
from .spatial import cross_force, cross_motion, dot6, mat6_vec
from .state import joint_array, to_all_joints, vector_result


def _work_size(nb):
    return nb * (KINEMATICS_SIZE + 18) + 12


@njit(cache=True, nogil=True)
def _inverse_dynamics(parent, joint_type, joint_placement, joint_axis, inertia,
                      gravity, Q, QD, QDD, work, out):
    """Recursive Newton-Euler in world coordinates, per sample.

    Outward pass (parents first): body velocity ``v_i = v_p + S_i qd_i`` and
    acceleration ``a_i = a_p + S_i qdd_i + (v_i x S_i) qd_i``, the base
    accelerating at ``-g`` so that gravity needs no separate term; body force
    ``f_i = I_i a_i + v_i x* I_i v_i``. Inward pass (children first):
    ``tau_i = S_i . f_i`` and ``f_p += f_i``. Featherstone, "Rigid Body
    Dynamics Algorithms" (2008), Sec. 5.3 and Table 5.1; Mata, Provenzano,
    Valero and Cuadrado, "Serial-robot dynamics algorithms for moderately
    large numbers of joints" (Mech. Mach. Theory 37, 2002), Sec. 3, derive
    the same O(n) recursion from the Gibbs-Appell equations. Cost: O(n).
    """
    nb = parent.shape[0]
    rot, pos, S, I = kinematics_views(work, nb)
    base = nb * KINEMATICS_SIZE
    v = work[base:base + 6 * nb].reshape((nb, 6))
    a = work[base + 6 * nb:base + 12 * nb].reshape((nb, 6))
    f = work[base + 12 * nb:base + 18 * nb].reshape((nb, 6))
    tmp = work[base + 18 * nb:base + 18 * nb + 6]
    tmp2 = work[base + 18 * nb + 6:base + 18 * nb + 12]
    for s in range(Q.shape[0]):
        world_kinematics(parent, joint_type, joint_placement, joint_axis,
                         inertia, Q[s], rot, pos, S, I)
        qd = QD[s]
        qdd = QDD[s]
        # at rest (gravity torques, M qdd + g) the velocity terms are all zero
        moving = False
        for i in range(nb):
            moving = moving or qd[i] != 0.0
        for i in range(nb):
            p = parent[i]
            for k in range(6):
                if p >= 0:
                    v[i, k] = v[p, k] + S[i, k] * qd[i]
                    a[i, k] = a[p, k] + S[i, k] * qdd[i]
                else:
                    v[i, k] = S[i, k] * qd[i]
                    a[i, k] = S[i, k] * qdd[i] - (gravity[k - 3] if k >= 3 else 0.0)
            if moving:
                cross_motion(v[i], S[i], tmp)
                for k in range(6):
                    a[i, k] += tmp[k] * qd[i]
            mat6_vec(I[i], a[i], f[i])
            if moving:
                mat6_vec(I[i], v[i], tmp)
                cross_force(v[i], tmp, tmp2)
                for k in range(6):
                    f[i, k] += tmp2[k]
        for i in range(nb - 1, -1, -1):
            out[s, i] = dot6(S[i], f[i])
            p = parent[i]
            if p >= 0:
                for k in range(6):
                    f[p, k] += f[i, k]


def inverse_dynamics(model, q, qd, qdd):
    """Joint torques tau = M(q) qdd + C(q, qd) qd + g(q), gravity included.

    Shapes (n,) or (N, n); returns (n,) or (N, n).
    """
    q = joint_array(model, q, "q")
    qd = joint_array(model, qd, "qd", like=q)
    qdd = joint_array(model, qdd, "qdd", like=q)
    return _rnea(model, q, to_all_joints(model, qd, offset=False),
                 to_all_joints(model, qdd, offset=False))


def gravity_torques(model, q):
    """Generalized gravity torques g(q): (n,) or (N, n) for q (N, n)."""
    q = joint_array(model, q, "q")
    zeros = np.zeros((len(q) if q.ndim == 2 else 1, model.nb))
    return _rnea(model, q, zeros, zeros)


def _rnea(model, q, qd_all, qdd_all):
    qa = to_all_joints(model, q, offset=True)
    out = np.empty((qa.shape[0], model.nb))
    run_kernel(_inverse_dynamics, model, (qa, qd_all, qdd_all), out, _work_size)
    return vector_result(model, out, q.ndim == 1)
