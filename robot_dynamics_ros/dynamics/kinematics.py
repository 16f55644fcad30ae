"""Forward kinematics to world-frame spatial quantities (MATH.md conventions).

For each body: its world pose, the joint's motion subspace
``S_i = [z_i; p_i x z_i]`` (revolute) or ``[0; z_i]`` (prismatic) and the
body's spatial inertia, all in world coordinates with moments about the world
origin. Every recursion in this package starts from these arrays.
"""
import numpy as np
from numba import njit

from .model import PRISMATIC

# Work array per body: rotation (9), position (3), S (6), spatial inertia (36)
POSE = 12
KINEMATICS_SIZE = POSE + 6 + 36


@njit(cache=True)
def world_kinematics(parent, joint_type, joint_placement, joint_axis, inertia,
                     q, rot, pos, S, I):
    """Fill world pose ``rot, pos``, subspace ``S`` and inertia ``I`` per body.

    One pass over the bodies, parents before children: O(n).
    """
    nb = parent.shape[0]
    for i in range(nb):
        p = parent[i]
        if p < 0:  # placed in the root frame, which is the world frame
            for r in range(3):
                for c in range(3):
                    rot[i, r, c] = joint_placement[i, r, c]
                pos[i, r] = joint_placement[i, r, 3]
        else:
            for r in range(3):
                a0, a1, a2 = rot[p, r, 0], rot[p, r, 1], rot[p, r, 2]
                for c in range(4):
                    value = (a0 * joint_placement[i, 0, c] + a1 * joint_placement[i, 1, c]
                             + a2 * joint_placement[i, 2, c])
                    if c < 3:
                        rot[i, r, c] = value
                    else:
                        pos[i, r] = pos[p, r] + value
        # axis in world, then the joint's own motion
        z0 = rot[i, 0, 0] * joint_axis[i, 0] + rot[i, 0, 1] * joint_axis[i, 1] + rot[i, 0, 2] * joint_axis[i, 2]
        z1 = rot[i, 1, 0] * joint_axis[i, 0] + rot[i, 1, 1] * joint_axis[i, 1] + rot[i, 1, 2] * joint_axis[i, 2]
        z2 = rot[i, 2, 0] * joint_axis[i, 0] + rot[i, 2, 1] * joint_axis[i, 1] + rot[i, 2, 2] * joint_axis[i, 2]
        if joint_type[i] == PRISMATIC:
            pos[i, 0] += z0 * q[i]
            pos[i, 1] += z1 * q[i]
            pos[i, 2] += z2 * q[i]
            S[i, 0] = 0.0
            S[i, 1] = 0.0
            S[i, 2] = 0.0
            S[i, 3] = z0
            S[i, 4] = z1
            S[i, 5] = z2
        else:
            _turn_about_local_axis(rot, i, joint_axis[i], q[i])
            S[i, 0] = z0
            S[i, 1] = z1
            S[i, 2] = z2
            S[i, 3] = pos[i, 1] * z2 - pos[i, 2] * z1
            S[i, 4] = pos[i, 2] * z0 - pos[i, 0] * z2
            S[i, 5] = pos[i, 0] * z1 - pos[i, 1] * z0
        _world_inertia(inertia[i], rot[i], pos[i], I[i])


@njit(cache=True)
def _turn_about_local_axis(rot, i, axis, angle):
    """rot[i] <- rot[i] @ Rodrigues(axis, angle), axis in the joint frame.

    Turning about the exact unit axis of the joint frame, not about the world
    axis computed from rot[i], keeps the rounding of deep chains additive:
    a world axis carries the parent's rounding into the Rodrigues matrix and
    the error doubles at every joint.
    """
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    r00 = c + t * x * x
    r01 = t * x * y - s * z
    r02 = t * x * z + s * y
    r10 = t * x * y + s * z
    r11 = c + t * y * y
    r12 = t * y * z - s * x
    r20 = t * x * z - s * y
    r21 = t * y * z + s * x
    r22 = c + t * z * z
    for row in range(3):
        a = rot[i, row, 0]
        b = rot[i, row, 1]
        d = rot[i, row, 2]
        rot[i, row, 0] = a * r00 + b * r10 + d * r20
        rot[i, row, 1] = a * r01 + b * r11 + d * r21
        rot[i, row, 2] = a * r02 + b * r12 + d * r22


@njit(cache=True)
def _world_inertia(params, rot, pos, out):
    """Spatial inertia about the world origin of a body (MATH.md formula)."""
    m = params[0]
    # CoM in world
    cx = pos[0] + rot[0, 0] * params[1] + rot[0, 1] * params[2] + rot[0, 2] * params[3]
    cy = pos[1] + rot[1, 0] * params[1] + rot[1, 1] * params[2] + rot[1, 2] * params[3]
    cz = pos[2] + rot[2, 0] * params[1] + rot[2, 1] * params[2] + rot[2, 2] * params[3]
    ixx, ixy, ixz, iyy, iyz, izz = params[4], params[5], params[6], params[7], params[8], params[9]
    # R I_c R^T, then the parallel-axis term -m skew(c)^2
    for r in range(3):
        b0 = rot[r, 0] * ixx + rot[r, 1] * ixy + rot[r, 2] * ixz
        b1 = rot[r, 0] * ixy + rot[r, 1] * iyy + rot[r, 2] * iyz
        b2 = rot[r, 0] * ixz + rot[r, 1] * iyz + rot[r, 2] * izz
        for col in range(r, 3):
            value = b0 * rot[col, 0] + b1 * rot[col, 1] + b2 * rot[col, 2]
            out[r, col] = value
            out[col, r] = value
    out[0, 0] += m * (cy * cy + cz * cz)
    out[1, 1] += m * (cx * cx + cz * cz)
    out[2, 2] += m * (cx * cx + cy * cy)
    out[0, 1] -= m * cx * cy
    out[1, 0] -= m * cx * cy
    out[0, 2] -= m * cx * cz
    out[2, 0] -= m * cx * cz
    out[1, 2] -= m * cy * cz
    out[2, 1] -= m * cy * cz
    # m skew(c) in the upper right, its transpose lower left, m 1 lower right
    for r in range(3):
        for col in range(3):
            out[r, 3 + col] = 0.0
            out[3 + r, col] = 0.0
            out[3 + r, 3 + col] = m if r == col else 0.0
    out[0, 4] = -m * cz
    out[0, 5] = m * cy
    out[1, 3] = m * cz
    out[1, 5] = -m * cx
    out[2, 3] = -m * cy
    out[2, 4] = m * cx
    for r in range(3):
        for col in range(3):
            out[3 + col, r] = out[r, 3 + col]


@njit(cache=True)
def kinematics_views(work, nb):
    """Views of a flat work row as (rot, pos, S, I) for ``nb`` bodies.

    The rest of the row, ``work[nb * KINEMATICS_SIZE:]``, is the algorithm's.
    """
    block = work[:nb * KINEMATICS_SIZE]
    rot = block[:9 * nb].reshape((nb, 3, 3))
    pos = block[9 * nb:12 * nb].reshape((nb, 3))
    S = block[12 * nb:18 * nb].reshape((nb, 6))
    I = block[18 * nb:54 * nb].reshape((nb, 6, 6))
    return rot, pos, S, I
