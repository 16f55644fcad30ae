"""What the node publishes and the replay writes, as serialized messages.

One ``DynamicsState`` per joint state (``~/state``), one ``DynamicsModel`` per
served model (``~/model``), ``~/gravity_torques`` (sensor_msgs/JointState) and,
as an option, the older std_msgs/Float64MultiArray topics. Every per-joint-
state stream is a ``cdr.CdrTemplate`` made once per model, so a message costs
a few copies; the node and the replay share these functions, so their
messages agree byte for byte.

A DynamicsState comes entirely from one model: the template bakes in that
model's revision, coordinate names and frame, and the values come from one
``compute_outputs`` call on that model (one compiled call, its frames
included).
"""

import array
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from geometry_msgs.msg import InertiaStamped, Pose
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.messages.cdr import CdrTemplate
from robot_dynamics_ros.dynamics import BOUNDS_FIELDS
from robot_dynamics_ros.served.model import ServedModel
from robot_dynamics_ros.msg import DynamicsModel, DynamicsState

MATRIX_LABELS = ("row", "column")
CHRISTOFFEL_LABELS = ("i", "j", "k")
# DynamicsState's scalar fields, in message order, and where each lies in
# the bounds vector of ``all_terms`` (BOUNDS_FIELDS order)
STATE_SCALARS = ("coriolis_norm", "kc_config", "coriolis_bound", "kc_global", "kc_global_lower",
                 "m_eig_min", "m_eig_max")
STATE_SCALAR_INDEX = np.array([BOUNDS_FIELDS.index(name) for name in STATE_SCALARS], dtype=np.intp)
# The optional std_msgs/Float64MultiArray topics (parameter publish_arrays)
ARRAY_TOPICS = ("mass_matrix", "coriolis_matrix", "coriolis_bounds", "christoffel_symbols")
# K_c interval sources, as DynamicsModel.kc_source names them
KC_SOURCES = ("first_bound", "refining", "refined", "certificate")


def compute_outputs(model, q: np.ndarray, qd: np.ndarray, christoffel: bool = True,
                    frames: Sequence[str] = (), frames_out: Optional[tuple] = None
                    ) -> Tuple[dynamics.AllTerms, Optional[tuple]]:
    """Every published quantity at (q, qd), one sample or a batch, in model
    joint order: the one computation the node and the offline replay share,
    so that they agree bit for bit. ``christoffel``: also the n^3 tensor
    Gamma (the bounds are the same without it, computed from its blocks).
    Returns the terms and the ``frames``' (poses, J, J̇v) from the same
    forward pass (``dynamics.state_terms``): None without frames, or when
    they were written into ``frames_out`` (``frames_in_place``)."""
    if not frames:
        return dynamics.all_terms(model, q, qd, christoffel=christoffel), None
    if frames_out is None:
        return dynamics.state_terms(model, q, qd, frames, christoffel=christoffel)
    return dynamics.state_terms(model, q, qd, frames, christoffel=christoffel, out=frames_out)[0], None


def frames_in_place(template: CdrTemplate, served: ServedModel) -> Optional[tuple]:
    """The frame fields of a ``state_template``'s message as the
    ``frames_out`` of ``compute_outputs``, shaped (k, 7), (k, 6, nv), (k,
    6): the kernel writes the frames straight into the message, with no
    copy. None without frames, or when the ``joints`` parameter reorders
    J's columns (``state_values`` then reorders a copy)."""
    k, nv = len(served.frames), served.model.nv
    if not k or served.perm is not None:
        return None
    poses, jacobians, bias = template.field_views()[-3:]
    return poses.reshape(k, 7), jacobians.reshape(k, 6, nv), bias.reshape(k, 6)


def compute_first_outputs(served: ServedModel) -> None:
    """Every output of ``served`` once, at its neutral configuration and unit
    speeds, with and without Gamma (``publish_christoffel`` may change at run
    time): the node runs it before it serves a model, so that its kernels
    load (or compile) there, off the hot path (``dynamics.precompile``)."""
    q, qd = served.neutral_configuration(), np.ones(served.model.nv)
    for christoffel in (False, True):
        compute_outputs(served.model, q, qd, christoffel, served.frames)


def state_values(served: ServedModel, q: np.ndarray, qd: np.ndarray, outputs, christoffel: bool,
                 batch: bool = False) -> tuple:
    """The arrays of a DynamicsState, in output order, for ``state_template``,
    from ``compute_outputs``' ``(terms, frame terms)``; ``batch``: every
    array has a leading axis of samples. The frames' terms: poses (k, 7) [x
    y z qx qy qz qw], Jacobians (k, 6, nv) with columns in output order,
    J̇v (k, 6)."""
    terms, frames = outputs
    values = (served.reorder_configuration(q), served.reorder(qd, batch),
              served.reorder(terms.mass_matrix, batch), served.reorder(terms.coriolis_matrix, batch),
              served.reorder(terms.gravity_torques, batch), terms.coriolis_bounds[..., STATE_SCALAR_INDEX])
    if christoffel:
        values += (served.reorder(terms.christoffel_symbols, batch),)
    if frames is not None:
        poses, jacobians, bias = frames
        values += (poses, jacobians if served.perm is None else jacobians[..., served.perm], bias)
    return values


def state_template(served: ServedModel, revision: int, frame_id: str, christoffel: bool) -> CdrTemplate:
    """The CdrTemplate of ``~/state`` for one served model and frame; its
    fields are those ``state_values`` gives. ``frame_id``: the world frame
    (odometry) of a floating base, the root link of a fixed one."""
    nq, nv = served.model.nq, served.model.nv
    names = list(served.coordinates)
    frames = len(served.frames)

    def make(values, stamp):
        position, velocity, mass, coriolis, gravity, scalars = values[:6]
        msg = DynamicsState(model_revision=revision, names=names, position=_doubles(position),
                            velocity=_doubles(velocity), mass_matrix=_doubles(mass),
                            coriolis_matrix=_doubles(coriolis), gravity=_doubles(gravity),
                            **dict(zip(STATE_SCALARS, scalars.tolist())))
        if christoffel:
            msg.christoffel_symbols = _doubles(values[6])
        if frames:
            poses, jacobians, bias = values[-3:]
            msg.frame_names = list(served.frames)
            msg.frame_poses = [_pose(p) for p in np.asarray(poses).reshape(frames, 7)]
            msg.frame_jacobians = _doubles(jacobians)
            msg.frame_jacobian_dot_v = _doubles(bias)
        msg.header.stamp = stamp
        msg.header.frame_id = frame_id
        return msg

    sizes = (nq, nv, nv * nv, nv * nv, nv, len(STATE_SCALARS)) + ((nv ** 3,) if christoffel else ())
    if frames:
        # a Pose[] is 7 float64 per pose after its length: one field of 7k values
        sizes += (7 * frames, 6 * nv * frames, 6 * frames)
    return CdrTemplate(make, sizes, stamped=True)


def _pose(values) -> Pose:
    pose = Pose()
    p, o = pose.position, pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = map(float, values)
    return pose


def state_frame(served: ServedModel, odometry_frame: str = "") -> str:
    """DynamicsState's ``header.frame_id``: the odometry's frame for a
    floating base, the root link for a fixed one."""
    return odometry_frame if served.base else served.root_link


def model_message(served: ServedModel, revision: int, kc_interval,
                  kc_source: str, kc_certificate: str = "", stamp=None) -> DynamicsModel:
    """``~/model`` for a served model: what every DynamicsState with this
    ``revision`` was computed with. ``kc_interval``: (lower, upper)."""
    if kc_source not in KC_SOURCES:
        raise ValueError(f"kc_source {kc_source!r} is not one of {', '.join(KC_SOURCES)}")
    model = served.model
    lower, upper, _ = model.joint_limits()
    limited = [i for i in range(len(model.joint_names))
               if np.isfinite(lower[i]) or np.isfinite(upper[i])]
    order = [model.joint_names.index(name) for name in served.joints]
    limited = [i for i in order if i in limited]
    msg = DynamicsModel(
        revision=revision, robot_name=model.name, base="floating" if served.base else "fixed",
        nq=model.nq, nv=model.nv, names=list(served.coordinates),
        position_names=list(served.position_names),
        limited_joints=[model.joint_names[i] for i in limited],
        lower_limits=_doubles(np.array([lower[i] for i in limited], dtype=float)),
        upper_limits=_doubles(np.array([upper[i] for i in limited], dtype=float)),
        gravity=np.asarray(model.gravity, dtype=np.float64),
        payloads=[_payload_message(p) for p in served.payloads.values()],
        description_sha256=served.description_sha256,
        kc_global_lower=float(kc_interval[0]), kc_global=float(kc_interval[1]),
        kc_source=kc_source, kc_certificate=kc_certificate, frames=list(served.frames))
    msg.header.frame_id = state_frame(served)
    if stamp is not None:
        msg.header.stamp = stamp
    return msg


def _payload_message(payload) -> InertiaStamped:
    msg = InertiaStamped()
    msg.header.frame_id = payload.link
    inertia = msg.inertia
    inertia.m = payload.mass
    inertia.com.x, inertia.com.y, inertia.com.z = payload.com
    (inertia.ixx, inertia.ixy, inertia.ixz), (_, inertia.iyy, inertia.iyz), (_, _, inertia.izz) = payload.inertia
    return msg


def _doubles(values) -> array.array:
    return array.array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


# The optional array topics (parameter publish_arrays) and ~/gravity_torques


def multiarray_layout(shape: Sequence[int], labels: Sequence[str]) -> MultiArrayLayout:
    """Row-major layout; ``labels[i]`` names axis i."""
    if len(shape) != len(labels):
        raise ValueError(f"{len(labels)} labels for an array of {len(shape)} dimensions")
    strides = np.cumprod(list(shape)[::-1])[::-1]
    return MultiArrayLayout(
        dim=[
            MultiArrayDimension(label=label, size=int(size), stride=int(stride))
            for label, size, stride in zip(labels, shape, strides)
        ],
        data_offset=0,
    )


def bounds_layout() -> MultiArrayLayout:
    """Layout of ``~/coriolis_bounds``: one labelled dimension naming every field."""
    n = len(BOUNDS_FIELDS)
    return MultiArrayLayout(
        dim=[MultiArrayDimension(label=",".join(BOUNDS_FIELDS), size=n, stride=n)],
        data_offset=0,
    )


def array_templates(joints: Sequence[str], base: Sequence[str] = ()) -> Dict[str, CdrTemplate]:
    """A CdrTemplate per optional array topic ("mass_matrix", "coriolis_matrix",
    "coriolis_bounds", "christoffel_symbols") and for "gravity_torques", for
    outputs in the order of ``base`` + ``joints``; each takes one array, the
    ``AllTerms`` field of its name.

    ``base``: the base coordinates of a floating-base model (``base_vx`` ...
    ``base_wz``). Its arrays say which coordinate is which: each axis label
    is followed by the names of v, ``row:base_vx,...,joint``, and
    ``~/gravity_torques`` names every coordinate, the base's included (their
    efforts are the force and moment on the root link, in its frame, that
    hold the robot up against gravity). Fixed-base labels stay "row",
    "column", "i", "j", "k".
    """
    joints = tuple(base) + tuple(joints)
    n = len(joints)
    names = ":" + ",".join(joints) if base else ""
    matrix = multiarray_layout((n, n), [label + names for label in MATRIX_LABELS])
    gamma = multiarray_layout((n, n, n), [label + names for label in CHRISTOFFEL_LABELS])

    def multiarray(layout, size):
        return CdrTemplate(lambda v, s: Float64MultiArray(layout=layout, data=_doubles(v[0])),
                           (size,), stamped=False)

    return {
        "mass_matrix": multiarray(matrix, n * n),
        "coriolis_matrix": multiarray(matrix, n * n),
        "coriolis_bounds": multiarray(bounds_layout(), len(BOUNDS_FIELDS)),
        "christoffel_symbols": multiarray(gamma, n ** 3),
        "gravity_torques": CdrTemplate(lambda v, s: gravity_msg(s, joints, v[0]), (n,), stamped=True),
    }


def gravity_msg(stamp, joints: Sequence[str], torques: np.ndarray) -> JointState:
    """``~/gravity_torques``: the input's stamp, joint names in output order, effort = g(q)."""
    msg = JointState(name=list(joints), effort=_doubles(torques))
    msg.header.stamp = stamp
    return msg


def from_multiarray(msg: Float64MultiArray) -> np.ndarray:
    """The array a Float64MultiArray holds, shaped by its layout."""
    shape = tuple(d.size for d in msg.layout.dim)
    data = np.asarray(msg.data, dtype=np.float64)[msg.layout.data_offset:]
    return data.reshape(shape) if shape else data
