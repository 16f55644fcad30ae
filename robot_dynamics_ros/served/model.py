"""Where the served model comes from: checked robot descriptions and payloads.

No ROS import here, so the node and the offline replay tool build the model the
same way. Validation of the payload itself (finite numbers, mass >= 0, inertia
positive semidefinite with the triangle inequalities, link present) belongs to
``Model.with_payload``; this module only converts parameter-shaped input.
"""

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property
from os import PathLike
from types import MappingProxyType
from typing import Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.served.base_state import BaseFrames, base_frames
from robot_dynamics_ros.dynamics.algorithms.frames import frame_of
from robot_dynamics_ros.dynamics.model.model import replace_payload
from robot_dynamics_ros.dynamics.model.limits import MAX_URDF_BYTES, real_numbers
from robot_dynamics_ros.dynamics.model.urdf import is_xml_text, read_urdf_file

# robot_state_publisher descriptions of large robots stay far below this; a
# limit keeps a hostile or corrupted message from costing a long parse.
MAX_DESCRIPTION_BYTES = MAX_URDF_BYTES

# Entities are how "billion laughs" and external-file inclusion attacks get in;
# a URDF never needs a DOCTYPE, the only place where entities can be declared.
_DTD_PATTERN = re.compile(rb"<!\s*(ENTITY|DOCTYPE)", re.IGNORECASE)


class DescriptionError(dynamics.URDFError):
    """A robot description refused before it reaches the URDF parser."""


def check_description(text: str) -> None:
    """Raise DescriptionError when ``text`` is not a string, is too large or
    declares XML entities."""
    if not isinstance(text, str):
        raise DescriptionError(
            f"robot description must be URDF XML text (str), got {type(text).__name__}")
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_DESCRIPTION_BYTES:
        raise DescriptionError(
            f"robot description has {len(data)} bytes, more than the limit of "
            f"{MAX_DESCRIPTION_BYTES} bytes"
        )
    match = _DTD_PATTERN.search(data)
    if match:
        raise DescriptionError(
            f"robot description contains an XML {match.group(1).decode().upper()} "
            f"declaration at byte {match.start()}; entity declarations are not accepted"
        )
    if not is_xml_text(text):
        # load_urdf would take such a string as a file path to read.
        raise DescriptionError(
            "robot description is not URDF XML text (it does not start with '<'): "
            + repr(text[:40]))


def read_description_file(path: Union[str, PathLike]) -> str:
    """The text of a URDF file (a regular file within the size limit), checked."""
    text = read_urdf_file(path, MAX_DESCRIPTION_BYTES)
    check_description(text)
    return text


def inertia_matrix(six: Sequence[float]) -> np.ndarray:
    """3x3 inertia from [ixx, ixy, ixz, iyy, iyz, izz] (the URDF / ROS order)."""
    values = real_numbers(six, "payload inertia", dynamics.PayloadError)
    if values.shape != (6,):
        raise dynamics.PayloadError(
            f"payload inertia needs 6 values [ixx ixy ixz iyy iyz izz], got {values.size}"
        )
    ixx, ixy, ixz, iyy, iyz, izz = values
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass(frozen=True)
class Payload:
    """A rigid payload attached to ``link``: CoM in the link frame, inertia about the CoM."""

    link: str
    mass: float
    com: Tuple[float, float, float]
    inertia: Tuple[Tuple[float, ...], ...]

    @classmethod
    def create(cls, link: str, mass: float, com: Sequence[float], inertia) -> "Payload":
        """From a 3-vector CoM and a 3x3 inertia (or its 6 unique values).

        Raises PayloadError naming the field that is not real numbers of
        its shape (complex ones too: the imaginary part would be lost).
        """
        mass = real_numbers(mass, "payload mass", dynamics.PayloadError, shape=())
        inertia = real_numbers(inertia, "payload inertia", dynamics.PayloadError)
        if inertia.shape != (3, 3):
            inertia = inertia_matrix(inertia.ravel())
        com = real_numbers(com, "payload CoM", dynamics.PayloadError)
        if com.shape != (3,):
            raise dynamics.PayloadError(f"payload CoM needs 3 values [x y z], got {com.size}")
        return cls(
            link=str(link),
            mass=float(mass),
            com=tuple(com.tolist()),
            inertia=tuple(map(tuple, inertia.tolist())),
        )

    def apply_to(self, model):
        """``model.with_payload`` for this payload (it validates and may raise)."""
        return model.with_payload(self.link, self.mass, np.array(self.com), np.array(self.inertia))


# A command line's --payload (robot_dynamics_replay, robot_dynamics_certify)
PAYLOAD_ARGUMENTS = ("LINK", "MASS", "X", "Y", "Z", "IXX", "IXY", "IXZ", "IYY", "IYZ", "IZZ")
PAYLOAD_HELP = ("rigid payload on LINK: kg, CoM in the link frame (m), inertia about the CoM in link "
                "axes (kg m^2), as the node's payload.* parameters take it")


def payload_from_arguments(values: Sequence[str]) -> Payload:
    """The Payload of a command line's ``--payload`` (``PAYLOAD_ARGUMENTS``),
    built as the node builds its payload parameters', so that both give the
    same model; PayloadError naming a value that is no number."""
    link, *numbers = values
    try:
        mass, *rest = (float(x) for x in numbers)
    except ValueError as error:
        raise dynamics.PayloadError(f"--payload {link}: {error}") from None
    return Payload.create(link, mass, rest[:3], rest[3:])


@dataclass(frozen=True)
class ServedModel:
    """One immutable model as the node serves it: every output comes from one of these.

    ``model`` carries ``payloads`` (at most one per link, kept here to re-apply
    them to a new description). ``joints`` is the output joint order and
    ``perm[i]`` the model index (in v) of output coordinate i (None when the
    output order is the model order). A floating-base model's outputs have
    its ``base`` coordinates first, then ``joints``; a fixed-base model has
    no ``base`` coordinates. ``frames``: the links whose pose, Jacobian and
    J̇v every DynamicsState carries (the node's ``frames`` parameter), checked
    against the model by ``serve``.
    """

    payloads: Mapping[str, Payload]
    model: object
    joints: Tuple[str, ...]
    perm: Optional[np.ndarray]
    description_sha256: str = ""  # of the description's text, hexadecimal
    frames: Tuple[str, ...] = ()

    @cached_property  # read per joint state
    def base(self) -> Tuple[str, ...]:
        """Names of the base coordinates of v (``base_vx`` ... ``base_wz``), () when fixed."""
        model = self.model
        return tuple(model.velocity_names[:model.nv - len(model.joint_names)])

    @cached_property
    def coordinates(self) -> Tuple[str, ...]:
        """Names of the coordinates of every output, in output order: the base's, then ``joints``."""
        return self.base + self.joints

    @property
    def root_link(self) -> str:
        """The link whose pose and twist the base coordinates are."""
        return self.model.base_link

    @cached_property
    def base_frames(self) -> BaseFrames:
        """What a floating base's odometry is read against (``base_state.BaseFrames``):
        the links fixed to the root link, and the free-flyer's placement."""
        body, root_pose = self.model.link_frames[self.root_link]
        to_root = np.linalg.inv(root_pose)
        return base_frames(self.root_link, {
            name: to_root @ pose for name, (other, pose) in self.model.link_frames.items()
            if other == body}, self.model.joint_placement[0])

    def neutral_configuration(self) -> np.ndarray:
        """A valid q: zero joints, and for a floating base the identity orientation."""
        q = np.zeros(self.model.nq)
        if self.base:
            q[6] = 1.0  # quaternion (x, y, z, w)
        return q

    def with_payload(self, payload: Payload) -> "ServedModel":
        """A new ServedModel where ``payload`` replaces the one on its link.

        Raises DynamicsError (from Model.with_payload) with the reason when the
        payload is invalid; self is left untouched.
        """
        model = payload.apply_to(self.model)
        payloads = replace_payload(self.payloads, payload.link, payload.mass, payload)
        return replace(self, model=model, payloads=MappingProxyType(payloads))

    def reorder(self, array: np.ndarray, batch: bool = False) -> np.ndarray:
        """Put every axis over v of a model-order array into the output joint
        order; ``batch``: the first axis counts samples and stays."""
        if self.perm is None:
            return array
        axes = [self.perm] * (array.ndim - batch)
        if batch:
            axes.insert(0, np.arange(len(array)))
        return array[np.ix_(*axes)]

    @cached_property
    def _configuration_perm(self) -> Optional[np.ndarray]:
        """``perm`` for q: the base's position and quaternion first, then the joints."""
        if self.perm is None:
            return None
        extra = self.model.nq - self.model.nv
        base = len(self.base)
        return np.concatenate((np.arange(base + extra), self.perm[base:] + extra))

    @cached_property
    def position_names(self) -> Tuple[str, ...]:
        """Names of q's coordinates in output order (a floating base's first)."""
        names = self.model.configuration_names
        perm = self._configuration_perm
        return tuple(names) if perm is None else tuple(names[i] for i in perm)

    def reorder_configuration(self, q: np.ndarray) -> np.ndarray:
        """q (one sample or a batch (N, nq)) in output order."""
        perm = self._configuration_perm
        return q if perm is None else q[..., perm]


def output_order(model, joints: Optional[Sequence[str]]) -> Tuple[Tuple[str, ...], Optional[np.ndarray]]:
    """Check the ``joints`` parameter against the model; empty means model order.

    Returns the joint order and the permutation of v it makes (the base
    coordinates of a floating base stay first, in their order), or None.
    """
    names = tuple(model.joint_names)
    if not joints:
        return names, None
    joints = tuple(joints)
    known, wanted = set(names), set(joints)
    unknown = [j for j in joints if j not in known]
    missing = [j for j in names if j not in wanted]
    repeated = sorted(j for j, count in Counter(joints).items() if count > 1)
    if unknown or missing or repeated:
        problems = []
        if unknown:
            problems.append(f"not in the model: {', '.join(unknown)}")
        if missing:
            problems.append(f"missing: {', '.join(missing)}")
        if repeated:
            problems.append(f"repeated: {', '.join(repeated)}")
        raise ValueError(
            "the joints parameter must list every actuated joint of the model once ("
            + "; ".join(problems) + ")"
        )
    base = model.nv - len(names)
    index = {name: base + i for i, name in enumerate(names)}
    perm = np.array(list(range(base)) + [index[j] for j in joints], dtype=np.intp)
    if np.array_equal(perm, np.arange(model.nv)):
        return joints, None
    return joints, perm


def checked_frames(model, frames: Optional[Sequence[str]]) -> Tuple[str, ...]:
    """The ``frames`` parameter checked against the model: each a link of its
    URDF, once. FrameError (a DynamicsError) naming the frame and listing the
    known frames, ValueError for a name given twice."""
    frames = tuple(frames or ())
    for frame in frames:
        try:
            frame_of(model, frame)
        except dynamics.FrameError as error:
            raise dynamics.FrameError(f"the frames parameter: {error}") from None
    repeated = sorted(f for f, count in Counter(frames).items() if count > 1)
    if repeated:
        raise ValueError(f"the frames parameter names a frame more than once: {', '.join(repeated)}")
    return frames


def serve(base, joints: Optional[Sequence[str]], payloads=(), description_sha256: str = "",
          frames: Optional[Sequence[str]] = None) -> ServedModel:
    """Apply ``payloads`` to ``base``, fix the output joint order and the frames.

    Raises DynamicsError for an invalid payload or a frame the model lacks,
    ValueError for a bad ``joints``.
    """
    order, perm = output_order(base, joints)
    served = ServedModel(payloads=MappingProxyType({}), model=base, joints=order, perm=perm,
                         description_sha256=description_sha256, frames=checked_frames(base, frames))
    for payload in payloads:
        served = served.with_payload(payload)
    return served


def load_description(
    text: str,
    *,
    gravity=(0.0, 0.0, -9.81),
    mimic: str = "independent",
    base: str = "auto",
    joints: Optional[Sequence[str]] = None,
    payloads=(),
    frames: Optional[Sequence[str]] = None,
) -> ServedModel:
    """Check, parse and serve a URDF text; raises a ValueError with the reason.

    ``base``: "fixed", "floating" or "auto", as ``dynamics.load_urdf`` takes it;
    ``frames``: the links every DynamicsState gives the pose, J and J̇v of.
    """
    check_description(text)
    model = dynamics.load_urdf(text, gravity=gravity, mimic=mimic, base=base)
    digest = hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
    return serve(model, joints, payloads, digest, frames)
