"""Frames: the pose, the Jacobian and the acceleration bias of any URDF link.

A frame is a link of the URDF by its name, the links that fixed joints fold
into their parent body included (``Model.link_frames``: tool0, flange,
camera links). Conventions (docs/math.md, "Frames"): the pose is the link's
frame in the world (the root link's frame for a fixed base); the Jacobian's
rows are [linear; angular], in world-aligned axes at the frame's origin
(Pinocchio's LOCAL_WORLD_ALIGNED); the bias is the classical acceleration
of the frame at ``qdd = 0``, so that ``[a; alpha] = J qdd + J̇v``.
"""
import numpy as np
from numba import njit

from ..calls import entry_point, is_sample, run, sample_entry
from ..errors import FrameError, not_a_model
from .finite import all_finite
from .kinematics import body_poses, body_velocities, is_floating, valid_configuration
from ..model.records import FRAME_FIELDS, axis_frame
from .samples import sample, sample_count
from ..model.state import (configuration_array, into, joint_array, kernel_out, raise_failure,
                           to_all_joints)


def frame_of(model, frame):
    """(body, placement) of the link named ``frame``: its body (-1 for a link
    fixed to the world) and its pose in that body's kernel frame as a (3, 4)
    array ``[R | t]`` (the body frames of ``records.model_fields``, turned
    so that each joint axis is z); for body -1 its pose in the world.
    Made once per model. ``FrameError`` listing the known frames for any
    other name."""
    try:
        return model.cache["frames"][frame]
    except (AttributeError, KeyError, TypeError):
        pass  # a first call, or no model, or no frame: the checks below say which
    try:
        table = model.cache.get("frames")
    except AttributeError:
        raise not_a_model(model) from None
    if table is None:
        table = model.cache.setdefault("frames", _frame_table(model))
    found = table.get(frame) if isinstance(frame, str) else None
    if found is None:
        raise FrameError(f"frame {frame!r} is not a link of model '{model.name}'; its frames "
                         f"are the links: {', '.join(table)}")
    return found


def _frame_table(model):
    table = {}
    for name, (body, pose) in model.link_frames.items():
        axes = (np.eye(3) if body < model.base_bodies
                else axis_frame(model.joint_axis[body]))
        placement = np.empty((3, 4))
        placement[:, :3] = axes.T @ pose[:3, :3]
        placement[:, 3] = axes.T @ pose[:3, 3]
        table[name] = (int(body), placement)
    return table


@njit(cache=True, nogil=True, inline="always")
def frame_origin(data, body, placement):
    """The frame's origin, in world axes, from the origin of the positions
    ``data.pos`` (``kinematics.body_poses``): ``pos_b + R_b t``."""
    rot, pos = data.rot[body], data.pos[body]
    t0, t1, t2 = placement[0, 3], placement[1, 3], placement[2, 3]
    return (pos[0] + (rot[0, 0] * t0 + rot[0, 1] * t1 + rot[0, 2] * t2),
            pos[1] + (rot[1, 0] * t0 + rot[1, 1] * t1 + rot[1, 2] * t2),
            pos[2] + (rot[2, 0] * t0 + rot[2, 1] * t1 + rot[2, 2] * t2))


@njit(cache=True, nogil=True, inline="always")
def positions_origin(model, q, body):
    """Where ``data.pos`` is measured from, in the world: a floating base's
    root link origin ``P_p + P_R q[0:3]`` (the free-flyer's placement P);
    for a fixed base, the origin of the joint on the world above ``body``."""
    if is_floating(model):
        R, t = model.placement_rotation[0], model.placement_translation[0]
        return (t[0] + (R[0, 0] * q[0] + R[0, 1] * q[1] + R[0, 2] * q[2]),
                t[1] + (R[1, 0] * q[0] + R[1, 1] * q[1] + R[1, 2] * q[2]),
                t[2] + (R[2, 0] * q[0] + R[2, 1] * q[1] + R[2, 2] * q[2]))
    root = body
    while model.parent[root] >= 0:
        root = model.parent[root]
    t = model.placement_translation[root]
    return t[0], t[1], t[2]


@njit(cache=True, nogil=True)
def frame_placement_of(model, data, q, body, placement, X):
    """X (4, 4): the frame in the world, ``[R_b P_R, o + pos_b + R_b P_t]``
    with ``(R_b, pos_b)`` its body's pose (``body_poses``), ``P`` its
    placement in the body and o the origin of the positions
    (``positions_origin``); ``P`` itself for a link fixed to the world. O(1)
    after the forward pass."""
    if body < 0:
        for r in range(3):
            for c in range(4):
                X[r, c] = placement[r, c]
    else:
        rot = data.rot[body]
        p0, p1, p2 = frame_origin(data, body, placement)
        o0, o1, o2 = positions_origin(model, q, body)
        for r in range(3):
            for c in range(3):
                X[r, c] = (rot[r, 0] * placement[0, c] + rot[r, 1] * placement[1, c]
                           + rot[r, 2] * placement[2, c])
        X[0, 3], X[1, 3], X[2, 3] = o0 + p0, o1 + p1, o2 + p2
    zero = placement[0, 0] - placement[0, 0]  # a zero of the model's precision
    X[3, 0] = X[3, 1] = X[3, 2] = zero
    X[3, 3] = zero + 1


@njit(cache=True, nogil=True)
def frame_jacobian_of(model, data, body, placement, J):
    """J (6, nb): column j is joint j's motion subspace ``S_j = [w; v_O]``
    (``data.S``, world coordinates) moved to the frame's origin p,
    ``[v_O + w x p; w]``, for the joints on the path from the frame's body
    to the root; 0 for the others (and all of J for a link fixed to the
    world). Featherstone, "Rigid Body Dynamics Algorithms" (2008), Chapters
    3 and 4: the velocity of body b is ``sum_j S_j qd_j`` over the joints
    that support it, so these are the columns of its Jacobian; Sec. 2.2: a
    motion vector's linear part at the point p is ``v_O + w x p``. Cost:
    O(d) after the forward pass, d the depth of the body.
    """
    parent, S = model.parent, data.S
    zero = S[0, 0] - S[0, 0]  # a zero of the model's precision
    for r in range(6):
        for c in range(J.shape[1]):
            J[r, c] = zero
    if body < 0:
        return
    p0, p1, p2 = frame_origin(data, body, placement)
    j = body
    while j >= 0:
        w0, w1, w2 = S[j, 0], S[j, 1], S[j, 2]
        J[0, j] = S[j, 3] + (w1 * p2 - w2 * p1)
        J[1, j] = S[j, 4] + (w2 * p0 - w0 * p2)
        J[2, j] = S[j, 5] + (w0 * p1 - w1 * p0)
        J[3, j] = w0
        J[4, j] = w1
        J[5, j] = w2
        j = parent[j]


@njit(cache=True, nogil=True)
def frame_bias_of(model, data, qd, body, placement, out):
    """out (6,): ``J̇ qd``, the classical acceleration of the frame's origin
    and the angular acceleration at ``qdd = 0``, rows [linear; angular].

    Velocities ``v_i = v_p + S_i qd_i`` and axis rates ``Sdot_i = v_i x S_i``
    (``kinematics.body_velocities``; a floating base's columns all turn with
    the root link's twist), then the spatial accelerations at qdd = 0,
    parents first, ``a_i = a_p + Sdot_i qd_i`` (Featherstone, "Rigid Body
    Dynamics Algorithms" (2008), Sec. 5.3 and Table 5.1, without gravity).
    The classical acceleration of the point p from the spatial ``[alpha;
    a_O]`` and ``[w; v_O]``: ``a_p = a_O + alpha x p + w x v_p`` with ``v_p =
    v_O + w x p`` (ibid., Sec. 2.11). Cost: O(n).
    """
    if body < 0:
        zero = data.S[0, 0] - data.S[0, 0]  # a zero of the model's precision
        for k in range(6):
            out[k] = zero
        return
    bias_accelerations(model, data, qd)
    frame_bias_at(data, body, placement, out)


@njit(cache=True, nogil=True)
def bias_accelerations(model, data, qd):
    """``data.v``, ``data.Sd`` and ``data.a``: every body's velocity, axis
    rate and spatial acceleration at qdd = 0, parents first (the first part
    of ``frame_bias_of``). O(n)."""
    body_velocities(model, data, qd)
    accelerations(model, data, qd)


@njit(cache=True, nogil=True, inline="always")
def accelerations(model, data, qd):
    """``data.a``: ``a_i = a_p + Sdot_i qd_i``, parents first, from the axis
    rates of ``body_velocities``. O(n)."""
    parent, Sd, a = model.parent, data.Sd, data.a
    for i in range(parent.shape[0]):
        p = parent[i]
        if p >= 0:
            for k in range(6):
                a[i, k] = a[p, k] + Sd[i, k] * qd[i]
        else:
            for k in range(6):
                a[i, k] = Sd[i, k] * qd[i]


@njit(cache=True, nogil=True, inline="always")
def frame_bias_at(data, body, placement, out):
    """The frame's classical acceleration from the accelerations of
    ``bias_accelerations`` (the second part of ``frame_bias_of``). O(1)."""
    v, a = data.v, data.a
    p0, p1, p2 = frame_origin(data, body, placement)
    w0, w1, w2, u0, u1, u2 = v[body, 0], v[body, 1], v[body, 2], v[body, 3], v[body, 4], v[body, 5]
    al0, al1, al2 = a[body, 0], a[body, 1], a[body, 2]
    # the velocity of the point p, then its classical acceleration
    vp0 = u0 + (w1 * p2 - w2 * p1)
    vp1 = u1 + (w2 * p0 - w0 * p2)
    vp2 = u2 + (w0 * p1 - w1 * p0)
    out[0] = a[body, 3] + (al1 * p2 - al2 * p1) + (w1 * vp2 - w2 * vp1)
    out[1] = a[body, 4] + (al2 * p0 - al0 * p2) + (w2 * vp0 - w0 * vp2)
    out[2] = a[body, 5] + (al0 * p1 - al1 * p0) + (w0 * vp1 - w1 * vp0)
    out[3], out[4], out[5] = al0, al1, al2


@njit(cache=True, nogil=True)
def _frame_placement(data, body, placement, Q, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, X = sample(Q, s, Q), sample(out, s, Q)
        if not valid_configuration(model, q):
            return s
        if body >= 0:
            body_poses(model, data, q)
        frame_placement_of(model, data, q, body, placement, X)
        if not all_finite(X):
            return s
    return -1


@njit(cache=True, nogil=True)
def _frame_jacobian(data, body, placement, Q, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, J = sample(Q, s, Q), sample(out, s, Q)
        if not valid_configuration(model, q):
            return s
        body_poses(model, data, q)
        frame_jacobian_of(model, data, body, placement, J)
        if not all_finite(J):
            return s
    return -1


@njit(cache=True, nogil=True)
def _frame_jacobian_dot_v(data, body, placement, Q, QD, out):
    model = data.model
    for s in range(sample_count(Q)):
        q, qd, bias = sample(Q, s, Q), sample(QD, s, Q), sample(out, s, Q)
        if not (valid_configuration(model, q) and all_finite(qd)):
            return s
        body_poses(model, data, q)
        frame_bias_of(model, data, qd, body, placement, bias)
        if not all_finite(bias):
            return s
    return -1


@njit(cache=True, nogil=True)
def frames_at(model, data, q, qd, bodies, placements, poses, J, bias):
    """One sample's frames after its body poses and velocities
    (``body_poses``, ``body_velocities``): the accelerations at qdd = 0,
    then each frame's pose (as ``pose_vector`` gives it), Jacobian and bias.
    False when a value is not finite. O(n + sum d_f), d_f the depth of
    frame f's body."""
    accelerations(model, data, qd)
    X = np.empty((4, 4), dtype=poses.dtype)
    zero = data.S[0, 0] - data.S[0, 0]  # a zero of the model's precision
    for f in range(bodies.shape[0]):
        body = bodies[f]
        frame_placement_of(model, data, q, body, placements[f], X)
        pose_vector(X, poses[f])
        frame_jacobian_of(model, data, body, placements[f], J[f])
        if body < 0:
            for k in range(6):
                bias[f, k] = zero
        else:
            frame_bias_at(data, body, placements[f], bias[f])
    return all_finite(poses) and all_finite(J) and all_finite(bias)


@njit(cache=True, nogil=True)
def _frame_terms(data, bodies, placements, Q, QD, poses, J, bias):
    """Per sample: the body poses and velocities once, then every frame
    (``frame_sample``)."""
    for s in range(sample_count(Q)):
        if not frame_sample(data, bodies, placements, sample(Q, s, Q), sample(QD, s, Q), sample(poses, s, Q),
                            sample(J, s, Q), sample(bias, s, Q)):
            return s
    return -1


@njit(cache=True, nogil=True)
def _frame_terms_in_data(data, q, qd):
    """One sample's frames into the ``frame_*`` arrays of a ``Data`` made
    with them (``Model.data_with_frames``): ``frame_terms``' hot path, whose
    compiled call then takes two arrays instead of seven."""
    return -1 if frame_sample(data, data.frame_body, data.frame_placement, q, qd, data.frame_pose,
                              data.frame_jacobian, data.frame_bias) else 0


@njit(cache=True, nogil=True, inline="always")
def frame_sample(data, bodies, placements, q, qd, poses, J, bias):
    """One sample: q and qd checked, the body poses and velocities, then
    every frame (``frames_at``). False when a value is not finite. Inlined
    into its two kernels: a call with eight array arguments is a visible
    part of one sample's frames."""
    model = data.model
    if not (valid_configuration(model, q) and all_finite(qd)):
        return False
    body_poses(model, data, q)
    body_velocities(model, data, qd)
    return frames_at(model, data, q, qd, bodies, placements, poses, J, bias)


def frame_table(model, frames):
    """(bodies, placements) of the named frames as arrays (``frame_of``),
    made once per model and tuple of names."""
    key = ("frame_table", tuple(frames))
    try:
        return model.cache[key]
    except KeyError:
        pass
    found = [frame_of(model, frame) for frame in key[1]]
    table = (np.array([body for body, _ in found], dtype=np.int64),
             np.array([placement for _, placement in found]).reshape(len(found), 3, 4))
    return model.cache.setdefault(key, table)


def frame_terms(model, q, qd, frames):
    """``(poses, J, bias)`` of several frames at once, what a DynamicsState
    carries: ``frame_placement`` as a pose ``[x y z qx qy qz qw]``
    (``pose_vector``), ``frame_jacobian`` and ``frame_jacobian_dot_v`` of
    each name in ``frames``, stacked along an axis after the samples' ((k,
    7), (k, 6, nv), (k, 6), or with a leading N for a batch), from one
    forward pass: the body poses, velocities and accelerations at qdd = 0
    once (O(n)), then each frame (O(d) for its Jacobian). Equal to the
    three functions called frame by frame (tested). ``FrameError`` for a
    name that is no link."""
    if is_sample(model, q, qd):
        key = frames if type(frames) is tuple else tuple(frames)
        entry, data, poses, J, bias = model._local.frame_terms.get(key) or _bind_frame_terms(model, key, q, qd)
        if entry(data, q, qd) < 0:
            return poses.copy(), J.copy(), bias.copy()
    bodies, placements = frame_table(model, frames)
    k = len(bodies)
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    out = frame_outputs(model, k, qa.shape[:-1])
    failed = run(_frame_terms, model, (qa, qda), out, settings=(bodies, placements))
    if failed >= 0:
        raise_failure(model, failed, (("q", q), ("qd", qd)), f"the frames {', '.join(frames)}")
    return frame_result(model, out)


def _bind_frame_terms(model, key, q, qd):
    """(``_frame_terms_in_data``'s entry point, a new ``Data`` with the
    frames ``key``, a tuple of names, its poses, J and J̇v arrays), kept for
    this thread by ``key``. The entry point is called with the ``Data``
    rather than bound to it (``calls.bind``): in a call this short, the
    ``partial``'s own call is a visible part."""
    data, arrays = frames_data(model, key)
    bound = (entry_point(_frame_terms_in_data, data, q, qd), data) + arrays
    return model._local.frame_terms.setdefault(key, bound)


def frames_data(model, frames, arrays=None):
    """(a float64 ``Data`` made with the named frames, its ``(poses, J,
    bias)`` arrays): ``arrays``, the caller's own, or new ones of one
    sample (``frame_outputs``). What a kernel bound to it computes the
    frames into (``frame_terms``, ``terms.state_terms``)."""
    bodies, placements = frame_table(model, frames)
    arrays = frame_outputs(model, len(bodies), ()) if arrays is None else tuple(arrays)
    return model.data_with_frames(dict(zip(FRAME_FIELDS, (bodies, placements) + arrays))), arrays


def frame_outputs(model, k, batch):
    """Where the kernels write k frames' terms ``(poses, J, bias)``, with a
    leading ``batch`` shape: J over every joint (nb columns, nv but for a
    mimic-reduced model, ``frame_result``)."""
    return np.empty(batch + (k, 7)), np.empty(batch + (k, 6, model.nb)), np.empty(batch + (k, 6))


def frame_result(model, out):
    """The kernels' ``(poses, J, bias)`` in the model's coordinates: a
    mimic-reduced model's J through its coordinate map."""
    poses, J, bias = out
    return poses, (J @ model.coordinate_map if model.reduced else J), bias


def frame_placement(model, q, frame, *, out=None):
    """The pose of the frame (a URDF link name) in the world, (4, 4), or
    (N, 4, 4) for q (N, nq): homogeneous, ``[[R, p], [0, 1]]``; for a fixed
    base the world is the root link's frame, for a floating base the frame
    q's base pose is given in (docs/floating_base.md).

    Body poses (one pass over the bodies, O(n)), then the link's placement
    in its body (``frame_placement_of``). ``FrameError`` for a name that is
    no link, listing the links.
    """
    body, placement = frame_of(model, frame)
    call = sample_entry(_frame_placement, model, q) if out is None else None
    if call is not None:
        X = np.empty((4, 4))
        if call(body, placement, q, X) < 0:
            return X
    q = configuration_array(model, q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (4, 4))
    failed = run(_frame_placement, model, (qa,), (result,), settings=(body, placement))
    if failed >= 0:
        raise_failure(model, failed, (("q", q),), f"the placement of frame '{frame}'")
    return into(out, result)


def frame_jacobian(model, q, frame, *, out=None):
    """The frame's Jacobian J(q), (6, nv), or (N, 6, nv) for q (N, nq).

    Rows [linear; angular]: ``J v`` is the frame's origin's linear velocity
    and its angular velocity, both in world axes (Pinocchio's
    ``getFrameJacobian(..., LOCAL_WORLD_ALIGNED)``); columns in v's order (a
    floating base's six speeds first, in the root link's frame). Body poses
    (O(n)), then the motion subspaces of the joints on the frame's path to
    the root moved to its origin (``frame_jacobian_of``, O(d)). For
    ``mimic="reduce"`` models, ``J_r = J coordinate_map``.
    """
    body, placement = frame_of(model, frame)
    call = sample_entry(_frame_jacobian, model, q) if out is None else None
    if call is not None:
        J = np.empty((6, model.nv))
        if call(body, placement, q, J) < 0:
            return J
    q = configuration_array(model, q)
    qa = to_all_joints(model, q, offset=True)
    result = kernel_out(model, out, qa.shape[:-1] + (6, model.nb))
    failed = run(_frame_jacobian, model, (qa,), (result,), settings=(body, placement))
    if failed >= 0:
        raise_failure(model, failed, (("q", q),), f"the Jacobian of frame '{frame}'")
    return into(out, result @ model.coordinate_map if model.reduced else result)


def frame_jacobian_dot_v(model, q, qd, frame, *, out=None):
    """``J̇(q, qd) qd``, (6,), or (N, 6) for q (N, nq): the frame's classical
    acceleration at ``qdd = 0``, so that ``[a; alpha] = J(q) qdd +
    frame_jacobian_dot_v(q, qd)``, a the classical (not the spatial)
    linear acceleration of the frame's origin and alpha the angular one,
    both in world axes (Pinocchio's ``getFrameClassicalAcceleration(...,
    LOCAL_WORLD_ALIGNED)`` after ``forwardKinematics(q, qd, 0)``).

    Body poses and velocities, accelerations at qdd = 0 (one pass each,
    O(n)), then the acceleration of the frame's origin
    (``frame_bias_of``). A floating base: qd in v's space, the base's
    speeds in the root link's frame.
    """
    body, placement = frame_of(model, frame)
    call = sample_entry(_frame_jacobian_dot_v, model, q, qd) if out is None else None
    if call is not None:
        bias = np.empty(6)
        if call(body, placement, q, qd, bias) < 0:
            return bias
    q = configuration_array(model, q)
    qd = joint_array(model, qd, "qd", like=q)
    qa = to_all_joints(model, q, offset=True)
    qda = to_all_joints(model, qd, offset=False)
    result = kernel_out(model, out, qa.shape[:-1] + (6,))
    failed = run(_frame_jacobian_dot_v, model, (qa, qda), (result,), settings=(body, placement))
    if failed >= 0:
        raise_failure(model, failed, (("q", q), ("qd", qd)),
                      f"the acceleration bias of frame '{frame}'")
    return into(out, result)


@njit(cache=True, nogil=True, inline="always")
def pose_vector(X, p):
    """p (7,) = [origin, unit quaternion (x, y, z, w)] of the transform X
    (4, 4). The quaternion by Shepperd's method (Shepperd, "Quaternion from
    rotation matrix", J. Guidance and Control 1(3), 1978): the component of
    largest magnitude from the largest of 1 + trace and 1 + 2 R_ii - trace
    (4 w^2, 4 x^2, 4 y^2, 4 z^2), the others from sums and differences of
    the off-diagonal entries divided by it, so that no division is by a
    small number. O(1)."""
    r00, r01, r02 = X[0, 0], X[0, 1], X[0, 2]
    r10, r11, r12 = X[1, 0], X[1, 1], X[1, 2]
    r20, r21, r22 = X[2, 0], X[2, 1], X[2, 2]
    p[0], p[1], p[2] = X[0, 3], X[1, 3], X[2, 3]
    trace = r00 + r11 + r22
    zero = trace - trace  # a zero of the transform's precision
    if trace >= r00 and trace >= r11 and trace >= r22:
        s = 2 * np.sqrt(max(1 + trace, zero))
        p[3], p[4], p[5], p[6] = (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, s / 4
    elif r00 >= r11 and r00 >= r22:
        s = 2 * np.sqrt(max(1 + 2 * r00 - trace, zero))
        p[3], p[4], p[5], p[6] = s / 4, (r10 + r01) / s, (r02 + r20) / s, (r21 - r12) / s
    elif r11 >= r22:
        s = 2 * np.sqrt(max(1 + 2 * r11 - trace, zero))
        p[3], p[4], p[5], p[6] = (r10 + r01) / s, s / 4, (r21 + r12) / s, (r02 - r20) / s
    else:
        s = 2 * np.sqrt(max(1 + 2 * r22 - trace, zero))
        p[3], p[4], p[5], p[6] = (r02 + r20) / s, (r21 + r12) / s, s / 4, (r10 - r01) / s
