"""Inverse dynamics and gravity torques: the recursive Newton-Euler algorithm."""
import numpy as np
from numba import njit

from ..calls import run, sample_entry
from .finite import all_finite
from .kinematics import (body_poses, body_velocities, composite_mass_moments, forward_kinematics,
                         valid_configuration)
from .samples import sample, sample_count
from .spatial import cross_force, dot6, inertia_times
from ..model.state import (configuration_array, into, joint_array, kernel_out,
                    raise_failure, to_all_joints, vector_result)


@njit(cache=True, nogil=True)
def rnea(model, data, qd, qdd, tau):
    """tau from ``data.S`` and ``data.I`` (after ``forward_kinematics``).

    Outward pass (parents first): body velocity ``v_i = v_p + S_i qd_i``
    (``kinematics.body_velocities``) and acceleration ``a_i = a_p + S_i qdd_i + (v_i x S_i) qd_i``, the base
    accelerating at ``-g`` so that gravity needs no separate term; body force
    ``f_i = I_i a_i + v_i x* I_i v_i``. Inward pass (children first):
    ``tau_i = S_i . f_i`` and ``f_p += f_i``. Featherstone, "Rigid Body
    Dynamics Algorithms" (2008), Sec. 5.3 and Table 5.1; Mata, Provenzano,
    Valero and Cuadrado, "Serial-robot dynamics algorithms for moderately
    large numbers of joints" (Mech. Mach. Theory 37, 2002), Sec. 3, derive
    the same O(n) recursion from the Gibbs-Appell equations. Cost: O(n).
    """
    parent, gravity = model.parent, model.gravity
    S, I, v, Sd, a, f, t, h = data.S, data.I, data.v, data.Sd, data.a, data.f, data.t, data.h
    nb = parent.shape[0]
    # at rest (gravity torques, M qdd + g) the velocity terms are all zero
    moving = False
    for i in range(nb):
        moving = moving or qd[i] != 0
    if moving:
        body_velocities(model, data, qd)
    for i in range(nb):
        p = parent[i]
        if p >= 0:
            for k in range(6):
                a[i, k] = a[p, k] + S[i, k] * qdd[i]
        else:
            for k in range(3):
                a[i, k] = S[i, k] * qdd[i]
                a[i, k + 3] = S[i, k + 3] * qdd[i] - gravity[k]
        if moving:
            for k in range(6):
                a[i, k] += Sd[i, k] * qd[i]
        inertia_times(I[i], a[i], f[i])
        if moving:
            inertia_times(I[i], v[i], t)
            cross_force(v[i], t, h)
            for k in range(6):
                f[i, k] += h[k]
    for i in range(nb - 1, -1, -1):
        tau[i] = dot6(S[i], f[i])
        p = parent[i]
        if p >= 0:
            for k in range(6):
                f[p, k] += f[i, k]


@njit(cache=True, nogil=True)
def _inverse_dynamics(data, Q, QD, QDD, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, qd, qdd = sample(Q, s, Q), sample(QD, s, Q), sample(QDD, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd) and all_finite(qdd)):
            return s
        forward_kinematics(model, data, q)
        tau = sample(out, s, Q)
        rnea(model, data, qd, qdd, tau)
        if not all_finite(tau):
            return s
    return -1


@njit(cache=True, nogil=True)
def gravity(model, data, g):
    """g(q) from ``data.S`` and the composite masses and first moments
    ``data.Ic[:, :4]`` (``kinematics.composite_mass_moments``).

    ``rnea`` at rest: every body accelerates at ``[0; -gravity]``, so the
    force on the subtree of body i is its composite inertia times that,
    ``[h_i x (-gravity); -m_i gravity]``, and ``g_i = S_i . f_i``; the
    rotational inertias never enter (Pinocchio's computeGeneralizedGravity
    uses the same shortcut). Cost: O(n).
    """
    S, Ic = data.S, data.Ic
    g0, g1, g2 = -model.gravity[0], -model.gravity[1], -model.gravity[2]
    for i in range(model.parent.shape[0]):
        m, h0, h1, h2 = Ic[i, 0], Ic[i, 1], Ic[i, 2], Ic[i, 3]
        g[i] = (S[i, 0] * (h1 * g2 - h2 * g1) + S[i, 1] * (h2 * g0 - h0 * g2)
                + S[i, 2] * (h0 * g1 - h1 * g0)
                + S[i, 3] * (m * g0) + S[i, 4] * (m * g1) + S[i, 5] * (m * g2))


@njit(cache=True, nogil=True)
def _gravity_torques(data, Q, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, g = sample(Q, s, Q), sample(out, s, Q)
        if not valid_configuration(model, q):
            return s
        body_poses(model, data, q)
        composite_mass_moments(model, data)
        gravity(model, data, g)
        if not all_finite(g):
            return s
    return -1


def inverse_dynamics(model, q, qd, qdd, *, out=None):
    """Joint torques tau = M(q) qdd + C(q, qd) qd + g(q), gravity included.

    Shapes (n,) or (N, n); returns (n,) or (N, n), into ``out`` if given.
    Forward kinematics and ``rnea``: O(n). A floating base: q (nq,), qd, qdd
    and tau (nv,), the root link accelerating at ``S qdd`` (its twist's
    derivative in its own frame, Pinocchio's free-flyer).
    """
    call = sample_entry(_inverse_dynamics, model, q, qd, qdd) if out is None else None
    if call is not None:
        tau = np.empty(model.sample_shape)
        if call(q, qd, qdd, tau) < 0:
            return tau
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qdd = joint_array(model, qdd, "qdd", like=q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (model.nb,))
    qda, qdda = to_all_joints(model, qd, offset=False), to_all_joints(model, qdd, offset=False)
    failed = run(_inverse_dynamics, model, (qa, qda, qdda), (result,))
    if failed >= 0:
        raise_failure(model, failed, (("q", q), ("qd", qd), ("qdd", qdd)), "inverse dynamics")
    return into(out, vector_result(model, result))


def gravity_torques(model, q, *, out=None):
    """Generalized gravity torques g(q): (n,) or (N, n) for q (N, n).

    Body poses, composite masses and first moments, then ``gravity``: O(n).
    A floating base: (nv,), its first six the wrench on the root link in
    its own frame; depends on the base orientation, not on its position.
    """
    call = sample_entry(_gravity_torques, model, q) if out is None else None
    if call is not None:
        g = np.empty(model.sample_shape)
        if call(q, g) < 0:
            return g
    q = configuration_array(model, q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (model.nb,))
    failed = run(_gravity_torques, model, (qa,), (result,))
    if failed >= 0:
        raise_failure(model, failed, (("q", q),), "g(q)")
    return into(out, vector_result(model, result))
