"""Forward kinematics to world-frame spatial quantities (docs/math.md conventions).

For each body: its world pose, the joint's motion subspace
``S_i = [z_i; p_i x z_i]`` (revolute) or ``[0; z_i]`` (prismatic) and the
body's spatial inertia, all in world coordinates with moments about the world
origin. Every recursion in this package starts from these arrays, which
``forward_kinematics`` writes into the named arrays of a ``records.Data``.
"""
import numpy as np
from numba import njit, types
from numba.extending import overload

from .finite import all_finite
from ..model.model import BASE_BODIES, PRISMATIC, QUATERNION_TOLERANCE
from .spatial import add_inertia, cross_motion


def is_floating(model):
    """True for the record (``records.ModelRecord``) of a floating base."""
    return model.floating is not None


def floating_record(model_type) -> bool:
    """``is_floating`` of a model record's numba type, when a kernel is compiled."""
    return not isinstance(model_type.field_dict["floating"], types.NoneType)


@overload(is_floating, inline="always")
def _is_floating(model):
    # A constant of the record's type: the compiler drops the floating-base
    # branches of a fixed-base kernel, which then runs the fixed-base code
    # alone (a runtime flag would be tested in every loop of calls as short as
    # an arm's M and g).
    value = floating_record(model)
    return lambda model: value


@njit(cache=True, nogil=True)
def forward_kinematics(model, data, q):
    """Fill ``data.rot, pos, S, I``: world pose, joint motion subspace and
    world inertia (10 numbers, ``spatial.inertia_times``) of every body.

    One pass over the bodies, parents before children: O(n). The shared
    first pass of every algorithm (``all_terms`` runs it once per sample).
    """
    body_poses(model, data, q)
    for i in range(model.parent.shape[0]):
        _world_inertia(model.inertia[i], data.rot[i], data.pos[i], data.I[i])


@njit(cache=True, nogil=True)
def body_poses(model, data, q):
    """Fill ``data.rot, pos, S``: world pose and joint motion subspace of
    every body, parents before children: O(n).

    Each body frame has its joint axis as z (``records.model_record``), so
    turning it by q is a plane rotation of two columns (12 multiplications
    rather than a Rodrigues matrix and a 3 x 3 product), its world axis is
    its third column, and it is exact for any q: the rounding of a deep
    chain stays additive. A floating base's six bodies are placed by q's
    first 7 numbers (``free_flyer_poses``), and body i >= 6 turns by
    q[i + 1].

    Positions are taken from the origin of each joint on the world (of
    the root link for a floating base), not from the world's: a rigid
    translation of a subtree changes no ``S_a^T I S_b`` and gravity is
    uniform, so every output is the same, while a robot placed 5e6 m from
    the world origin (odometry in a UTM map frame) would lose most digits of
    every ``p x z`` to the size of p (M off by 6e-4 at 1e6 m).
    """
    parent, joint_type = model.parent, model.joint_type
    placement_rot, placement_pos = model.placement_rotation, model.placement_translation
    rot, pos, S = data.rot, data.pos, data.S
    first = shift = 0
    if is_floating(model):
        first, shift = BASE_BODIES, 1
    base_poses(model, data, q)
    for i in range(first, parent.shape[0]):
        p = parent[i]
        qi = q[i + shift]
        if joint_type[i] == PRISMATIC:
            s = qi - qi  # not 0.0 and 1.0: keeps float32 models in float32
            c = np.cos(s)
        else:
            c = np.cos(qi)
            s = np.sin(qi)
        for r in range(3):
            if p < 0:  # turned as placed in the world, at the origin (see above)
                x0, x1, x2 = placement_rot[i, r, 0], placement_rot[i, r, 1], placement_rot[i, r, 2]
                pos[i, r] = 0.0
            else:
                a0, a1, a2 = rot[p, r, 0], rot[p, r, 1], rot[p, r, 2]
                x0 = a0 * placement_rot[i, 0, 0] + a1 * placement_rot[i, 1, 0] + a2 * placement_rot[i, 2, 0]
                x1 = a0 * placement_rot[i, 0, 1] + a1 * placement_rot[i, 1, 1] + a2 * placement_rot[i, 2, 1]
                x2 = a0 * placement_rot[i, 0, 2] + a1 * placement_rot[i, 1, 2] + a2 * placement_rot[i, 2, 2]
                pos[i, r] = pos[p, r] + (a0 * placement_pos[i, 0] + a1 * placement_pos[i, 1]
                                         + a2 * placement_pos[i, 2])
            rot[i, r, 0] = x0 * c + x1 * s
            rot[i, r, 1] = x1 * c - x0 * s
            rot[i, r, 2] = x2
        z0, z1, z2 = rot[i, 0, 2], rot[i, 1, 2], rot[i, 2, 2]
        if joint_type[i] == PRISMATIC:
            pos[i, 0] += z0 * qi
            pos[i, 1] += z1 * qi
            pos[i, 2] += z2 * qi
            S[i, 0] = s
            S[i, 1] = s
            S[i, 2] = s
            S[i, 3] = z0
            S[i, 4] = z1
            S[i, 5] = z2
        else:
            S[i, 0] = z0
            S[i, 1] = z1
            S[i, 2] = z2
            S[i, 3] = pos[i, 1] * z2 - pos[i, 2] * z1
            S[i, 4] = pos[i, 2] * z0 - pos[i, 0] * z2
            S[i, 5] = pos[i, 0] * z1 - pos[i, 1] * z0


def floating_only(function):
    """A function that kernels call as ``function(model, data, x)``: that
    for a floating base, nothing for a fixed one (``base_poses``,
    ``christoffel.base_symbols``).

    Chosen from the model record's type when the calling kernel is compiled,
    as ``bounds.tree_bound_values``: a branch on ``is_floating`` is dropped
    from the machine code but its callees are compiled all the same, which
    would give a fixed-base kernel's first start the free-flyer code to
    compile (docs/benchmarks-archive.md, "The compile beside the build").
    ``function`` is a constant of the compiled code, not an argument, which
    numba could not cache.
    """
    def call(model, data, x):
        if is_floating(model):
            function(model, data, x)

    @overload(call)
    def _call(model, data, x):
        if floating_record(model):
            return lambda model, data, x: function(model, data, x)
        return lambda model, data, x: None

    return call


@njit(cache=True, nogil=True)
def free_flyer_poses(model, data, q):
    """World pose and motion subspace of a floating base's six bodies.

    The root link's orientation is the free-flyer's placement P (body 0's)
    times q's: ``R = P_R R(quat)``, with the quaternion (x, y, z, w) =
    q[3:7] divided by its norm (``valid_configuration`` has refused one far
    from unit length). Its position, ``P_p + P_R q[0:3]``, is the origin of
    the positions (``body_poses``: no output depends on it). All six bodies
    sit there; their columns are the root link's unit twists in the world's
    axes, ``S_k = [0; R e_k]`` (linear speeds, k < 3) and ``[R e_k; 0]``
    (angular, about the root link's origin), so ``sum_k S_k v_k`` is the
    root link's twist for Pinocchio's free-flyer v (Featherstone, "Rigid
    Body Dynamics Algorithms" (2008), Chapter 9, floating bases). O(1).
    """
    rot, pos, S = data.rot, data.pos, data.S
    placement_rot = model.placement_rotation[0]
    norm = np.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])
    x, y, z, w = q[3] / norm, q[4] / norm, q[5] / norm, q[6] / norm
    base = data.B  # scratch: R(quat), then R
    base[0, 0], base[0, 1], base[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    base[1, 0], base[1, 1], base[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    base[2, 0], base[2, 1], base[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    for r in range(3):
        a0, a1, a2 = placement_rot[r, 0], placement_rot[r, 1], placement_rot[r, 2]
        for c in range(3):
            rot[0, r, c] = a0 * base[0, c] + a1 * base[1, c] + a2 * base[2, c]
    for k in range(BASE_BODIES):
        for r in range(3):
            pos[k, r] = 0.0
            for c in range(3):
                rot[k, r, c] = rot[0, r, c]
    for k in range(3):
        z0, z1, z2 = rot[0, 0, k], rot[0, 1, k], rot[0, 2, k]
        S[k, 0] = S[k, 1] = S[k, 2] = z0 - z0  # a zero of the model's precision
        S[k, 3], S[k, 4], S[k, 5] = z0, z1, z2
        S[k + 3, 0], S[k + 3, 1], S[k + 3, 2] = z0, z1, z2
        S[k + 3, 3] = S[k + 3, 4] = S[k + 3, 5] = z0 - z0


base_poses = floating_only(free_flyer_poses)


@njit(cache=True, nogil=True, inline="always")
def valid_configuration(model, q):
    """q finite and, for a floating base, its quaternion q[3:7] within
    ``QUATERNION_TOLERANCE`` of unit length (``state.raise_bad_input`` says
    which). The kernels' check of q before a sample."""
    if not all_finite(q):
        return False
    if is_floating(model):
        norm = np.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])
        return abs(norm - 1) <= QUATERNION_TOLERANCE
    return True


@njit(cache=True, nogil=True)
def body_velocities(model, data, qd):
    """``data.v``: body velocities ``v_i = v_p + S_i qd_i``, and ``data.Sd``:
    the rates of the joint axes ``Sdot_i = v_i x S_i`` (S_i is fixed in body
    i), parents first: O(n). The velocity pass of Newton-Euler, of the
    Coriolis matrix and of the articulated bodies. Needs ``body_poses``.

    A floating base's six columns are all fixed in the root link (body 5),
    so each turns with its whole twist: ``Sdot_k = v_5 x S_k`` for k < 6,
    and ``sum_k Sdot_k v_k = v_5 x v_5 = 0``: the root link accelerates at
    ``S qdd`` with no velocity product, as Pinocchio's free-flyer (paper
    003, Remark 5: Algorithm 1 with the base's generalized speeds)."""
    parent, S, v, Sd = model.parent, data.S, data.v, data.Sd
    for i in range(parent.shape[0]):
        p = parent[i]
        # separate branches rather than a 0.0 default keep float32 in float32
        if p >= 0:
            for k in range(6):
                v[i, k] = v[p, k] + S[i, k] * qd[i]
        else:
            for k in range(6):
                v[i, k] = S[i, k] * qd[i]
        cross_motion(v[i], S[i], Sd[i])
    if is_floating(model):
        for k in range(BASE_BODIES - 1):
            cross_motion(v[BASE_BODIES - 1], S[k], Sd[k])


@njit(cache=True, nogil=True)
def composite_inertias(model, data):
    """``data.Ic[i]``: inertia of body i and all its descendants, children
    first: O(n). Needs ``forward_kinematics``."""
    parent, I, Ic = model.parent, data.I, data.Ic
    nb = parent.shape[0]
    for i in range(nb):
        for k in range(10):
            Ic[i, k] = I[i, k]
    for i in range(nb - 1, -1, -1):
        if parent[i] >= 0:
            add_inertia(Ic, parent[i], i)


@njit(cache=True, nogil=True)
def composite_mass_moments(model, data):
    """``data.Ic[i, :4]``: mass and first moment ``h = m c`` of body i and
    all its descendants, what gravity acts on (``rnea.gravity``); the same
    sums as ``composite_inertias`` makes, without the rotational inertias.
    Needs ``body_poses``. O(n)."""
    parent, Ic = model.parent, data.Ic
    nb = parent.shape[0]
    for i in range(nb):
        _mass_moment(model.inertia[i], data.rot[i], data.pos[i], Ic[i])
    for i in range(nb - 1, -1, -1):
        p = parent[i]
        if p >= 0:
            for k in range(4):
                Ic[p, k] += Ic[i, k]


@njit(cache=True, inline="always")
def _mass_moment(params, rot, pos, out):
    """out[:4] = mass and first moment about the world origin ``m c`` of a
    body (``Model.inertia`` params); returns its world CoM c."""
    m = params[0]
    cx = pos[0] + rot[0, 0] * params[1] + rot[0, 1] * params[2] + rot[0, 2] * params[3]
    cy = pos[1] + rot[1, 0] * params[1] + rot[1, 1] * params[2] + rot[1, 2] * params[3]
    cz = pos[2] + rot[2, 0] * params[1] + rot[2, 1] * params[2] + rot[2, 2] * params[3]
    out[0] = m
    out[1] = m * cx
    out[2] = m * cy
    out[3] = m * cz
    return cx, cy, cz


@njit(cache=True, inline="always")
def _world_inertia(params, rot, pos, out):
    """The 10 numbers of a body's inertia about the world origin, from its
    own (``Model.inertia``): mass, ``h = m c`` with c the CoM in world, and
    ``R I_c R^T + m (|c|^2 1 - c c^T)`` (the parallel-axis theorem)."""
    cx, cy, cz = _mass_moment(params, rot, pos, out)
    mx, my, mz = out[1], out[2], out[3]
    ixx, ixy, ixz, iyy, iyz, izz = params[4], params[5], params[6], params[7], params[8], params[9]
    # rows of R I_c, then (R I_c) R^T for the upper triangle
    b00 = rot[0, 0] * ixx + rot[0, 1] * ixy + rot[0, 2] * ixz
    b01 = rot[0, 0] * ixy + rot[0, 1] * iyy + rot[0, 2] * iyz
    b02 = rot[0, 0] * ixz + rot[0, 1] * iyz + rot[0, 2] * izz
    b10 = rot[1, 0] * ixx + rot[1, 1] * ixy + rot[1, 2] * ixz
    b11 = rot[1, 0] * ixy + rot[1, 1] * iyy + rot[1, 2] * iyz
    b12 = rot[1, 0] * ixz + rot[1, 1] * iyz + rot[1, 2] * izz
    b20 = rot[2, 0] * ixx + rot[2, 1] * ixy + rot[2, 2] * ixz
    b21 = rot[2, 0] * ixy + rot[2, 1] * iyy + rot[2, 2] * iyz
    b22 = rot[2, 0] * ixz + rot[2, 1] * iyz + rot[2, 2] * izz
    out[4] = b00 * rot[0, 0] + b01 * rot[0, 1] + b02 * rot[0, 2] + (my * cy + mz * cz)
    out[5] = b00 * rot[1, 0] + b01 * rot[1, 1] + b02 * rot[1, 2] - mx * cy
    out[6] = b00 * rot[2, 0] + b01 * rot[2, 1] + b02 * rot[2, 2] - mx * cz
    out[7] = b10 * rot[1, 0] + b11 * rot[1, 1] + b12 * rot[1, 2] + (mx * cx + mz * cz)
    out[8] = b10 * rot[2, 0] + b11 * rot[2, 1] + b12 * rot[2, 2] - my * cz
    out[9] = b20 * rot[2, 0] + b21 * rot[2, 1] + b22 * rot[2, 2] + (mx * cx + my * cy)
