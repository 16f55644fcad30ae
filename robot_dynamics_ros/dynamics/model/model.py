"""The immutable robot model: tree topology, joint geometry and body inertias.

A plain record of arrays in the spirit of Featherstone's spatial_v2 and of
Pinocchio's ``Model``: the algorithms are functions ``f(model, q, ...)``. The
compiled kernels see it as one ``records.ModelRecord`` and write into the
named arrays of a ``records.Data`` (Pinocchio's Model/Data split). Bodies are numbered
in topological order (every parent before its children); body ``i`` is moved by
joint ``i``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..errors import DynamicsError, PayloadError
from .inertia import check_inertia, combine_inertias
from ..calls import PerThread
from .limits import MAX_GRAVITY, bounded, real_numbers
from .records import model_record, new_data
from .slices import slice_layout

REVOLUTE = 0
PRISMATIC = 1

# A floating base (``base="floating"``) is six massless bodies at the head of
# the tree, three prismatic then three revolute joints along the root link's
# axes, whose speeds are the root link's twist in its own frame (Pinocchio's
# free-flyer v, linear first); the root link is the sixth body. Its
# configuration is the root link's pose, 7 numbers of q.
BASE_BODIES = 6
# the first of the base's bodies of the angular speeds (3, 4, 5; 0, 1, 2 translate)
BASE_ANGULAR = 3
BASE_VELOCITY_NAMES = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
BASE_CONFIGURATION_NAMES = ("base_x", "base_y", "base_z", "base_qx", "base_qy", "base_qz",
                            "base_qw")
# A base quaternion is normalized on input; one further than this from unit
# length is refused (StateError) rather than silently rescaled.
QUATERNION_TOLERANCE = 1e-3


def replace_payload(payloads, link, mass, payload):
    """``payloads`` (link -> payload) after a request for ``link``: the one
    payload rule of the package, for the model and for whoever queues requests.

    Mass 0 removes the payload on ``link``; any other mass replaces it (at
    most one payload per link). Returns a new dict.
    """
    updated = dict(payloads)
    if mass == 0.0:
        updated.pop(link, None)
    else:
        updated[link] = payload
    return updated


def check_gravity(gravity, error=DynamicsError):
    """Gravity (3,) as floats, each component finite and within MAX_GRAVITY."""
    vector = real_numbers(gravity, "gravity", error).reshape(-1)
    if vector.shape != (3,):
        raise error(f"gravity must be 3 numbers, got {gravity!r}")
    return bounded(vector, MAX_GRAVITY, "gravity", error)


@dataclass(frozen=True, eq=False)
class Model:
    """A kinematic tree of 1-DoF joints, fixed to the world or floating.

    ``base``: ``"fixed"`` (the root link is the world) or ``"floating"``
    (bodies 0-5 are the free-flyer, ``BASE_BODIES``; docs/floating_base.md).
    ``base_link``: the link the base is (fixed) or the free-flyer moves.

    Arrays (nb = number of moving bodies = number of joints in ``q_full``):

    - ``parent`` (nb,) int64: parent body, -1 for the world.
    - ``joint_type`` (nb,) int64: ``REVOLUTE`` or ``PRISMATIC``.
    - ``joint_placement`` (nb, 4, 4): pose of joint i's frame in its parent
      body's frame at q = 0 (fixed joints on the way already folded in).
    - ``joint_axis`` (nb, 3): unit axis in the joint frame.
    - ``inertia`` (nb, 10): body inertia in its own frame as
      ``[m, cx, cy, cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]``, rotational inertia
      about the CoM; links merged by fixed joints and payloads included.
    - ``gravity`` (3,): gravity acceleration in the world frame (the
      URDF's root frame).
    - ``lower``, ``upper`` (nb,): joint limits (+-inf where there are none).
    - ``coordinate_map`` (nb, nv), ``coordinate_offset`` (nb,):
      ``q_full = coordinate_map @ q + coordinate_offset`` (identity unless
      mimic joints are reduced, docs/math.md "Mimic joints"); for a
      floating base, rows and columns 0-5 are the base speeds (an identity
      block) and the 7 numbers of the base pose pass into q_full unchanged.
    - ``joint_placement[0]`` of a floating base: the pose of the free-flyer's
      frame in the world at q's identity pose (the origin of a URDF
      ``floating`` joint; the identity otherwise); the root link's pose in
      the world is that pose times q's pose, as in Pinocchio.
    """

    name: str
    joint_names: tuple
    link_names: tuple
    body_joint_names: tuple
    parent: np.ndarray
    joint_type: np.ndarray
    joint_placement: np.ndarray
    joint_axis: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    coordinate_map: np.ndarray
    coordinate_offset: np.ndarray
    # link name -> (body index or -1 for the fixed root, 4x4 pose of the link
    # frame in that body's frame)
    link_frames: dict
    # inertia of the URDF links alone, per body, before payloads
    link_inertia: np.ndarray
    base: str = "fixed"
    base_link: str = ""
    # link name -> (mass, com (3,), inertia (3,3)) of the payload on that link
    payloads: dict = field(default_factory=dict)
    _local: PerThread = field(default_factory=PerThread, repr=False)
    # True when mimic joints were removed from q (``mimic="reduce"``)
    reduced: bool = field(init=False, default=False)
    # True for a floating base (``base == "floating"``)
    floating: bool = field(init=False, default=False)
    # bodies of the floating base at the head of the tree: 6, or 0
    base_bodies: int = field(init=False, default=0)
    # length of qd, qdd and tau: the actuated joints, plus 6 for a floating base
    nv: int = field(init=False, default=0)
    # length of q: nv, plus 1 for a floating base (4 quaternion numbers for 3 speeds)
    nq: int = field(init=False, default=0)
    q_shape: tuple = field(init=False, default=None, repr=False)
    sample_shape: tuple = field(init=False, default=None, repr=False)
    matrix_shape: tuple = field(init=False, default=None, repr=False)
    # values computed once per model, such as the compiled records and the
    # K_c refinement; a new dict for every new model, so a payload swap
    # never sees stale ones
    cache: dict = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self):
        for value in self.__dict__.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        # sizes as plain attributes: the hot paths and the node read them per sample
        floating = self.base == "floating"
        object.__setattr__(self, "floating", floating)
        object.__setattr__(self, "base_bodies", BASE_BODIES if floating else 0)
        object.__setattr__(self, "nv", len(self.joint_names) + self.base_bodies)
        object.__setattr__(self, "nq", self.nv + (1 if floating else 0))
        # checked on every call, so computed once
        object.__setattr__(self, "reduced", self.nb != self.nv or not np.array_equal(
            self.coordinate_map, np.eye(self.nb)))
        # the shapes of q, of qd (and qdd, tau, g) and of M that the kernels
        # take as they are (the hot path)
        object.__setattr__(self, "q_shape", None if self.reduced else (self.nq,))
        object.__setattr__(self, "sample_shape", None if self.reduced else (self.nv,))
        object.__setattr__(self, "matrix_shape", None if self.reduced else (self.nv, self.nv))

    @property
    def velocity_names(self) -> tuple:
        """Names of the entries of qd, qdd, tau, g and of M's rows: the six
        base speeds (``BASE_VELOCITY_NAMES``) then ``joint_names`` for a
        floating base, ``joint_names`` alone for a fixed one."""
        return (BASE_VELOCITY_NAMES if self.floating else ()) + self.joint_names

    @property
    def configuration_names(self) -> tuple:
        """Names of the entries of q: the base position and quaternion
        (``BASE_CONFIGURATION_NAMES``) then ``joint_names`` for a floating
        base, ``joint_names`` alone for a fixed one."""
        return (BASE_CONFIGURATION_NAMES if self.floating else ()) + self.joint_names

    @property
    def nb(self) -> int:
        """Number of moving bodies (joints before any mimic reduction)."""
        return len(self.parent)

    def joint_limits(self):
        """(lower, upper, joint type) of the joints of q, in q's order
        (+-inf where a joint has no limit); a floating base's pose is not
        among them."""
        body = [self.body_joint_names.index(name) for name in self.joint_names]
        return self.lower[body], self.upper[body], self.joint_type[body]

    @property
    def slice_layout(self):
        """Where Gamma's slices can be nonzero (``slices.SliceLayout``), made on first use."""
        layout = self.cache.get("slices")
        if layout is None:
            layout = self.cache.setdefault("slices", slice_layout(self.parent, self.base_bodies))
        return layout

    def record(self, dtype):
        """The compiled model (``records.ModelRecord``) in precision ``dtype``,
        made on first use."""
        key = dtype.char
        record = self.cache.get(key)
        if record is None:
            # two threads racing here build equal records, and either may win
            record = self.cache.setdefault(key, model_record(self, dtype))
        return record

    def data(self, dtype):
        """This thread's work arrays (``records.Data``) in precision ``dtype``.

        Models are shared between threads (the node computes while a payload
        swap builds a new model), so each thread gets its own.
        """
        data = self._local.data.get(dtype.char)
        if data is None:
            data = self._local.data[dtype.char] = new_data(self.record(dtype), self.nb, self.nv,
                                                                 self.slice_layout.total, dtype)
        return data

    def data_with_frames(self, frames):
        """A new float64 ``Data`` whose ``frame_*`` arrays are ``frames`` (by
        name, ``records.DATA_SHAPES``): ``all_terms``' kernel computes those
        frames into them too (``terms.state_terms``, one thread)."""
        dtype = np.dtype(np.float64)
        return new_data(self.record(dtype), self.nb, self.nv, self.slice_layout.total, dtype, frames)

    def __reduce__(self):
        """Pickled as its constructor's arguments: the copy makes its own
        caches and per-thread data (the node sends its models to the K_c
        refinement's process)."""
        arguments = {f.name: getattr(self, f.name) for f in fields(self) if f.init and f.name != "_local"}
        return functools.partial(type(self), **arguments), ()

    def with_payload(self, link, mass, com, inertia) -> "Model":
        """A new model with a rigid payload on ``link``; this one is unchanged.

        ``com`` (3,) is in the link frame, ``inertia`` (3, 3) about the CoM in
        link axes; the payload replaces any earlier payload on the same link,
        and ``mass == 0`` removes it. Raises ``PayloadError`` naming the
        problem (unknown link, non-finite numbers, negative mass, an inertia
        that is not symmetric positive semidefinite or violates the triangle
        inequalities of its principal moments).
        """
        if not isinstance(link, str) or link not in self.link_frames:
            raise PayloadError(
                f"payload link '{link}' is not a link of model '{self.name}'")
        mass, com, inertia = check_inertia(
            mass, com, inertia, where=f"payload on link '{link}'",
            triangle=True)
        payloads = replace_payload(self.payloads, link, mass, (mass, com, inertia))
        body_inertia = self.link_inertia.copy()
        for name, (m, c, inertia_c) in payloads.items():
            body, pose = self.link_frames[name]
            if body < 0:
                continue  # fixed to the base: moves nothing
            rot = pose[:3, :3]
            body_inertia[body] = combine_inertias(
                body_inertia[body],
                m, rot @ c + pose[:3, 3], rot @ inertia_c @ rot.T)
        return replace(self, inertia=body_inertia, payloads=payloads,
                       _local=PerThread())

    def with_gravity(self, gravity) -> "Model":
        """A new model with another gravity vector (3,), in the root frame."""
        return replace(self, gravity=check_gravity(gravity), _local=PerThread())
