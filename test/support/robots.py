"""Shared test helpers: the robots the tests run on and the Pinocchio oracle.

Reused by every test file that compares the dynamics with an independent
reference (mass matrix, gravity, inverse dynamics, Coriolis, node, replay):

- ``example_robot_urdfs()``: every URDF shipped by the PyPI package
  ``example-robot-data``, as ``(name, path)`` pairs.
- ``random_urdf(rng, n_joints, tree=...)``: random chains and trees as URDF
  text, with the awkward cases real files have (arbitrary axes, rotated joint
  and inertial origins, fixed joints to merge, massless links, branches).
- ``load_pinocchio(urdf)`` and ``PinocchioOracle``: the fixed-base Pinocchio
  model and its results reordered into *our* joint order, by joint name.
- ``random_configurations(model, rng, count)``: q within the joint limits.
- ``rel_err(ours, ref)``: ``max|ours - ref| / max(1, max|ref|)``.

Nothing here imports ``robot_dynamics_ros``: the helpers read URDFs themselves
(ElementTree) so that they stay independent of the code under test.
"""
from __future__ import annotations

import glob
import importlib.metadata
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

try:  # Pinocchio is the oracle: a test dependency only.
    import pinocchio as pin
except ImportError:  # pragma: no cover - reported by the tests that need it
    pin = None

GRAVITY = np.array([0.0, 0.0, -9.81])
# Range for prismatic joints without usable limits: a few tens of centimetres,
# what real linear axes (grippers, torso lifts) travel.
PRISMATIC_RANGE = (-0.5, 0.5)


# ---------------------------------------------------------------------------
# Errors


def rel_err(ours, ref) -> float:
    """``max|ours - ref| / max(1, max|ref|)``: absolute for small values,
    relative for large ones (torques of a 100 kg humanoid are ~1e3)."""
    ours = np.asarray(ours, dtype=float)
    ref = np.asarray(ref, dtype=float)
    assert ours.shape == ref.shape, f"shape {ours.shape} != reference {ref.shape}"
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref)) / max(1.0, float(np.max(np.abs(ref)))))


# ---------------------------------------------------------------------------
# example-robot-data


def example_robot_data_dir() -> str | None:
    """The ``robots`` folder of example-robot-data, or None if not installed.

    The wheel is a cmeel package: its files live under
    ``<site-packages>/cmeel.prefix/share/example-robot-data/robots`` and
    version 6 ships no Python module, so the folder is found from the
    installed distribution's file list, then from Pinocchio's cmeel prefix,
    then from ``$EXAMPLE_ROBOT_DATA_MODEL_DIR`` or an older Python module.
    """
    candidates = []
    env = os.environ.get("EXAMPLE_ROBOT_DATA_MODEL_DIR")
    if env:
        candidates.append(env)
    try:
        dist = importlib.metadata.distribution("example-robot-data")
        for f in dist.files or ():
            parts = f.parts
            if f.name.endswith(".urdf") and "robots" in parts:
                i = parts.index("robots")
                candidates.append(str(dist.locate_file(os.path.join(*parts[:i + 1]))))
                break
    except importlib.metadata.PackageNotFoundError:
        pass
    if pin is not None:
        # .../cmeel.prefix/lib/pythonX.Y/site-packages/pinocchio/__init__.py
        prefix = os.path.abspath(os.path.join(os.path.dirname(pin.__file__),
                                              *[os.pardir] * 4))
        candidates.append(os.path.join(prefix, "share", "example-robot-data", "robots"))
    for site in sys.path:
        candidates.append(os.path.join(site, "cmeel.prefix", "share",
                                       "example-robot-data", "robots"))
    try:  # example-robot-data < 5 had a Python module with the path
        from example_robot_data.path import EXAMPLE_ROBOT_DATA_MODEL_DIR
        candidates.append(EXAMPLE_ROBOT_DATA_MODEL_DIR)
    except ImportError:
        pass
    for c in candidates:
        if c and os.path.isdir(c) and glob.glob(os.path.join(c, "**", "*.urdf"),
                                                recursive=True):
            return os.path.abspath(c)
    return None


def example_robot_urdfs() -> list[tuple[str, str]]:
    """Every URDF of example-robot-data as sorted ``(name, path)`` pairs.

    ``name`` is the file name without ``.urdf`` (``panda``, ``ur5_robot``);
    where two packages ship the same file name (``anymal.urdf``) it is
    prefixed with the package folder minus ``_description``
    (``anymal_b_simple/anymal``) so that names stay unique as test ids.
    Empty when the package is not installed.
    """
    root = example_robot_data_dir()
    if root is None:
        return []
    paths = sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True))
    stems = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    out = []
    for path, stem in zip(paths, stems):
        name = stem
        if stems.count(stem) > 1:
            pkg = os.path.relpath(path, root).split(os.sep)[0]
            name = pkg.removesuffix("_description") + "/" + stem
        out.append((name, path))
    return out


def example_robot_urdf(name: str) -> str:
    """Path of one example-robot-data URDF by its name in ``example_robot_urdfs``."""
    for n, p in example_robot_urdfs():
        if n == name:
            return p
    raise KeyError(f"no example-robot-data URDF named {name!r}")


# ---------------------------------------------------------------------------
# Reading URDFs (independently of the code under test)


def urdf_text(urdf: str) -> str:
    """URDF XML text from text or a file path (same rule as ``load_urdf``)."""
    if urdf.lstrip().startswith("<"):
        return urdf
    with open(urdf, encoding="utf-8") as f:
        return f.read()


def urdf_root_link(urdf: str) -> str:
    """The link of a URDF that is no joint's child."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    children = {j.find("child").get("link") for j in root.iter("joint")}
    (link,) = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    return link


def urdf_joints(urdf: str) -> dict[str, dict]:
    """Joint name -> ``{"type", "lower", "upper", "mimic"}`` read from the XML.

    ``lower``/``upper`` are None where the URDF gives no such attribute;
    ``mimic`` is the master joint's name or None. Comments are not joints
    (g1's URDF has a floating joint commented out).
    """
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    joints = {}
    for j in root.iter("joint"):
        if j.get("name") is None or j.get("type") is None:
            continue  # <joint> inside <transmission> has no type
        info = {"type": j.get("type"), "lower": None, "upper": None, "mimic": None}
        lim = j.find("limit")
        if lim is not None:
            for key in ("lower", "upper"):
                if lim.get(key) is not None:
                    info[key] = float(lim.get(key))
        mim = j.find("mimic")
        if mim is not None:
            info["mimic"] = mim.get("joint")
        joints[j.get("name")] = info
    return joints


def urdf_indefinite_inertias(urdf: str, rtol=1e-6, atol=1e-12) -> list[str]:
    """Links whose ``<inertia>`` has a principal moment clearly below zero.

    "Clearly": below ``-(rtol * largest |moment| + atol)`` kg m^2, so that
    rounding noise in files (icub writes all-zero inertias as +-1e-20) does
    not count, while romeo_laas_small's -0.0027 kg m^2 hip does.
    """
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    bad = []
    for link in root.findall("link"):
        it = link.find("inertial/inertia")
        if it is None:
            continue
        g = {k: float(it.get(k, 0.0)) for k in
             ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        inertia = np.array([[g["ixx"], g["ixy"], g["ixz"]],
                            [g["ixy"], g["iyy"], g["iyz"]],
                            [g["ixz"], g["iyz"], g["izz"]]])
        if not np.all(np.isfinite(inertia)):
            bad.append(link.get("name"))
            continue
        moments = np.linalg.eigvalsh(inertia)
        if moments[0] < -(rtol * np.max(np.abs(moments)) + atol):
            bad.append(link.get("name"))
    return bad


def has_unsupported_joints(urdf: str) -> list[str]:
    """Names of floating or planar joints (we model 1-DoF joints only)."""
    return [n for n, j in urdf_joints(urdf).items()
            if j["type"] in ("floating", "planar")]


# ---------------------------------------------------------------------------
# Pinocchio oracle


def load_pinocchio(urdf: str, free_flyer: bool = False):
    """The Pinocchio model of a URDF (text or path), or None.

    Fixed-base, or with ``free_flyer`` a ``JointModelFreeFlyer`` between
    the world and the root link (a URDF's own ``floating`` joint becomes
    one anyway). None when Pinocchio is missing or cannot parse the file
    (for instance example-robot-data's ``ur3.urdf`` has no robot name,
    which urdfdom rejects). Mimic joints stay independent joints
    (Pinocchio's default, our ``mimic="independent"``).
    """
    if pin is None:
        return None
    root = (pin.JointModelFreeFlyer(),) if free_flyer else ()
    try:
        if urdf.lstrip().startswith("<"):
            return pin.buildModelFromXML(urdf, *root)
        return pin.buildModelFromUrdf(urdf, *root)
    except (RuntimeError, ValueError):
        return None


def pinocchio_joint_names(pin_model) -> list[str]:
    """Names of Pinocchio's joints, universe excluded, in Pinocchio's order."""
    return [pin_model.names[i] for i in range(1, pin_model.njoints)]


class PinocchioOracle:
    """Pinocchio's dynamics, taking and returning arrays in *our* joint order.

    Pinocchio orders joints depth-first and stores a continuous joint as
    (cos, sin) in q; ours is ``model.joint_names``. The map is built from the
    joint names (Pinocchio's ``idx_q``/``idx_v`` per joint), so no test
    assumes both libraries number joints alike. Only 1-DoF joints are mapped:
    a Pinocchio model with any other joint, or whose joint names differ from
    ``joint_names``, raises AssertionError saying which. A model whose first
    joint is a free-flyer (``load_pinocchio(..., free_flyer=True)``) takes
    and gives the base's 7 configuration numbers and 6 speeds first, as
    they are: the same conventions as ours (docs/floating_base.md).
    """

    def __init__(self, pin_model, joint_names):
        self.model = pin_model
        self.data = pin_model.createData()
        self.joint_names = tuple(joint_names)
        floating = (pin_model.njoints > 1
                    and pin_model.joints[1].shortname() == "JointModelFreeFlyer")
        self.base_q, self.base_v = (7, 6) if floating else (0, 0)
        theirs = pinocchio_joint_names(pin_model)[1 if floating else 0:]
        missing = sorted(set(self.joint_names) - set(theirs))
        extra = sorted(set(theirs) - set(self.joint_names))
        assert not missing and not extra, (
            f"joint sets differ: only ours {missing}, only Pinocchio's {extra}")
        idx_q, idx_v, unbounded = [], [], []
        for name in self.joint_names:
            jm = pin_model.joints[pin_model.getJointId(name)]
            assert jm.nv == 1 and jm.nq in (1, 2), (
                f"joint {name!r} is {jm.shortname()} (nq={jm.nq}, nv={jm.nv}): "
                "not a 1-DoF joint")
            idx_q.append(jm.idx_q)
            idx_v.append(jm.idx_v)
            unbounded.append(jm.nq == 2)  # continuous: q stored as (cos, sin)
        self.idx_q = np.array(idx_q, dtype=int)
        self.idx_v = np.array(idx_v, dtype=int)
        self.unbounded = np.array(unbounded, dtype=bool)
        # Pinocchio's velocity index of each of our v's entries
        self.order_v = np.concatenate((np.arange(self.base_v), self.idx_v)).astype(int)
        self.nv = len(self.order_v)

    @property
    def gravity(self) -> np.ndarray:
        """Pinocchio's linear gravity vector (3,)."""
        return np.array(self.model.gravity.linear)

    def q(self, q) -> np.ndarray:
        """Pinocchio's configuration vector for our ``q`` (n,)."""
        q = np.asarray(q, dtype=float)
        out = np.zeros(self.model.nq)
        out[:self.base_q] = q[:self.base_q]
        for k, i in enumerate(self.idx_q):
            value = q[self.base_q + k]
            if self.unbounded[k]:
                out[i], out[i + 1] = math.cos(value), math.sin(value)
            else:
                out[i] = value
        return out

    def v(self, v) -> np.ndarray:
        """Pinocchio's velocity-space vector (qd, qdd) for ours."""
        out = np.zeros(self.model.nv)
        out[self.order_v] = np.asarray(v, dtype=float)
        return out

    def ours_vec(self, x) -> np.ndarray:
        """A Pinocchio velocity-space vector (tau, g) in our order."""
        return np.asarray(x)[self.order_v]

    def ours_mat(self, m) -> np.ndarray:
        """A Pinocchio nv x nv matrix in our order."""
        return np.asarray(m)[np.ix_(self.order_v, self.order_v)]

    def mass_matrix(self, q) -> np.ndarray:
        """M(q) from ``pin.crba``, symmetrised from its upper triangle."""
        m = np.array(pin.crba(self.model, self.data, self.q(q)))
        m = np.triu(m) + np.triu(m, 1).T
        return self.ours_mat(m)

    def gravity_torques(self, q) -> np.ndarray:
        """g(q) from ``pin.computeGeneralizedGravity``."""
        return self.ours_vec(pin.computeGeneralizedGravity(
            self.model, self.data, self.q(q)).copy())

    def inverse_dynamics(self, q, qd, qdd) -> np.ndarray:
        """tau from ``pin.rnea`` (gravity included)."""
        return self.ours_vec(pin.rnea(self.model, self.data, self.q(q),
                                      self.v(qd), self.v(qdd)).copy())

    def coriolis_matrix(self, q, qd) -> np.ndarray:
        """C(q, qd) from ``pin.computeCoriolisMatrix`` (Christoffel-consistent)."""
        return self.ours_mat(np.array(pin.computeCoriolisMatrix(
            self.model, self.data, self.q(q), self.v(qd))))

    def christoffel_symbols(self, q) -> np.ndarray:
        """Gamma[i, j, k] (MATH.md): column k is C(q, e_k)."""
        n = self.nv
        gamma = np.zeros((n, n, n))
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            gamma[:, :, k] = self.coriolis_matrix(q, e)
        return gamma


def add_payload_pinocchio(pin_model, link, mass, com, inertia):
    """A copy of ``pin_model`` with a rigid payload on ``link``.

    ``com`` in the link frame, ``inertia`` about the CoM in link axes (our
    ``with_payload`` contract). The payload goes to the body of the joint
    that moves the link, placed by the link's frame in that joint's frame
    (for a link behind fixed joints, the fixed transforms are in there); a
    link fixed to the root lands on the universe and moves nothing.
    """
    out = pin_model.copy()
    fid = out.getFrameId(link, pin.BODY)
    assert fid < len(out.frames), f"Pinocchio has no body frame {link!r}"
    frame = out.frames[fid]
    payload = pin.Inertia(float(mass), np.asarray(com, dtype=float),
                          np.asarray(inertia, dtype=float))
    out.inertias[frame.parentJoint] = (out.inertias[frame.parentJoint]
                                       + frame.placement.act(payload))
    return out


# ---------------------------------------------------------------------------
# Configurations


def joint_ranges(model, urdf: str | None = None):
    """Sampling range ``(lo, hi)`` per joint of ``model.joint_names``.

    Limits come from the URDF when given (independent of the code under
    test), else from ``model.lower``/``model.upper`` when the model has
    them. Continuous joints get [-pi, pi], prismatic joints without limits
    ``PRISMATIC_RANGE``, revolute ones without limits [-pi, pi]. Limits
    lower = upper = 0 (both attributes missing default to 0 in URDF), or
    lower > upper, are treated as no limit, and the dynamics are defined
    for every q; lower = upper otherwise holds the joint at that value.
    """
    info = {}
    if urdf is not None:
        for name, j in urdf_joints(urdf).items():
            info[name] = (j["type"], j["lower"], j["upper"])
    elif hasattr(model, "lower") and hasattr(model, "upper"):
        names = getattr(model, "body_joint_names", model.joint_names)
        types = getattr(model, "joint_type", [None] * len(names))
        for name, lo, hi, t in zip(names, model.lower, model.upper, types):
            kind = "prismatic" if t == 1 else "revolute"
            info[name] = (kind,
                          float(lo) if np.isfinite(lo) else None,
                          float(hi) if np.isfinite(hi) else None)
    ranges = []
    for name in model.joint_names:
        kind, lo, hi = info.get(name, ("revolute", None, None))
        if kind == "continuous":
            lo, hi = None, None
        if lo is None or hi is None or lo > hi or lo == hi == 0.0:
            lo, hi = PRISMATIC_RANGE if kind == "prismatic" else (-math.pi, math.pi)
        ranges.append((lo, hi))
    return np.array(ranges, dtype=float).reshape(-1, 2)


def random_configurations(model, rng, count, urdf: str | None = None):
    """``count`` random q (count, n) inside the joint limits of ``model``.

    See ``joint_ranges`` for where limits come from; pass the URDF so that
    they come from the file rather than from the code under test.
    """
    r = joint_ranges(model, urdf)
    return r[:, 0] + (r[:, 1] - r[:, 0]) * rng.random((count, len(r)))


# ---------------------------------------------------------------------------
# Random URDFs


def _f(x) -> str:
    """Exact decimal text for a float: both parsers must read the same number."""
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_f(x) for x in v)


def random_rotation(rng) -> np.ndarray:
    """A uniformly random rotation matrix (QR of a Gaussian matrix)."""
    qm, r = np.linalg.qr(rng.standard_normal((3, 3)))
    qm = qm * np.sign(np.diag(r))
    if np.linalg.det(qm) < 0:
        qm[:, 0] = -qm[:, 0]
    return qm


def inertia3(six) -> np.ndarray:
    """The 3x3 inertia of ``[ixx, ixy, ixz, iyy, iyz, izz]`` (the node's
    ``payload.inertia`` parameter order), written out independently of the
    package's own conversion."""
    ixx, ixy, ixz, iyy, iyz, izz = six
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def random_inertia(rng, mass, size=0.2) -> np.ndarray:
    """A physically valid rotational inertia about the CoM (3, 3).

    Principal moments from positive second moments ``x, y, z`` of the mass
    distribution (``I1 = y + z``, ...), so they satisfy the triangle
    inequalities strictly, rotated by a random rotation.
    """
    second = mass * size ** 2 * rng.uniform(0.02, 1.0, 3)
    moments = np.array([second[1] + second[2], second[0] + second[2],
                        second[0] + second[1]])
    rot = random_rotation(rng)
    inertia = rot @ np.diag(moments) @ rot.T
    return 0.5 * (inertia + inertia.T)


def _origin(rng, scale):
    xyz = rng.uniform(-scale, scale, 3)
    rpy = rng.uniform(-math.pi, math.pi, 3)
    return f'<origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>'


def _inertial(rng):
    mass = rng.uniform(0.1, 5.0)
    i = random_inertia(rng, mass)
    return (f'<inertial>{_origin(rng, 0.15)}<mass value="{_f(mass)}"/>'
            f'<inertia ixx="{_f(i[0, 0])}" ixy="{_f(i[0, 1])}" ixz="{_f(i[0, 2])}" '
            f'iyy="{_f(i[1, 1])}" iyz="{_f(i[1, 2])}" izz="{_f(i[2, 2])}"/></inertial>')


def random_urdf(rng, n_joints, tree=False, *, fixed_fraction=0.25,
                massless_fraction=0.2, prismatic_fraction=0.25,
                continuous_fraction=0.2, limit_fraction=0.5,
                root_fixed_links=1, name="random_robot") -> str:
    """A random fixed-base robot as URDF text with ``n_joints`` moving joints.

    - Joints: revolute, continuous and prismatic, axes in random directions
      with random (non-unit) lengths, origins with random xyz and rpy.
    - Fixed joints (about ``fixed_fraction`` of all joints) sit between
      moving ones, their child links carry inertias that a loader must merge
      into the parent body. ``root_fixed_links`` links hang off the root by
      fixed joints only (a table, a camera stand): they move nothing.
    - Links: random mass, CoM and rotated inertial frame; about
      ``massless_fraction`` have no ``<inertial>``. Leaves always have mass,
      so every moving joint carries some inertia and M stays positive
      definite.
    - ``tree``: each new joint hangs off a random earlier link (branches);
      otherwise off the last link (a chain).
    - Revolute joints get tight limits with probability ``limit_fraction``,
      else [-pi, pi]; prismatic joints always have limits (urdfdom requires
      them), tight or loose.
    - Joint and link names are random-ish and the elements are written in a
      shuffled order, so that no code can rely on file order matching the
      tree order.
    """
    links = ["base_link"]
    children = {"base_link": []}
    joints = []  # (name, type, parent, child, xml body)
    moving = 0
    counter = 0

    def new_link(parent):
        nonlocal counter
        counter += 1
        child = f"l{counter}_{rng.integers(1000):03d}"
        links.append(child)
        children[child] = []
        children[parent].append(child)
        return child

    for _ in range(root_fixed_links):
        child = new_link("base_link")
        joints.append((f"fix_root_{child}", "fixed", "base_link", child, _origin(rng, 0.5)))

    last = "base_link"
    while moving < n_joints:
        parent = links[rng.integers(len(links))] if tree else last
        child = new_link(parent)
        last = child
        if rng.random() < fixed_fraction:
            joints.append((f"fixed_{counter}", "fixed", parent, child, _origin(rng, 0.3)))
            continue
        moving += 1
        u = rng.random()
        if u < prismatic_fraction:
            kind = "prismatic"
        elif u < prismatic_fraction + continuous_fraction:
            kind = "continuous"
        else:
            kind = "revolute"
        axis = rng.standard_normal(3)
        axis *= rng.uniform(0.2, 3.0) / np.linalg.norm(axis)
        body = _origin(rng, 0.3) + f'<axis xyz="{_vec(axis)}"/>'
        tight = rng.random() < limit_fraction
        if kind == "revolute":
            lo, hi = (sorted(rng.uniform(-2.5, 2.5, 2)) if tight else (-math.pi, math.pi))
        elif kind == "prismatic":
            lo, hi = (sorted(rng.uniform(-0.3, 0.3, 2)) if tight else (-1.0, 1.0))
        if kind != "continuous":
            body += (f'<limit lower="{_f(lo)}" upper="{_f(hi)}" '
                     f'effort="100" velocity="2"/>')
        joints.append((f"j{moving}_{kind[:3]}_{rng.integers(1000):03d}",
                       kind, parent, child, body))

    parts = []
    for link in links:
        massive = not children[link] or rng.random() >= massless_fraction
        parts.append(f'<link name="{link}">{_inertial(rng) if massive else ""}</link>')
    for jname, kind, parent, child, body in joints:
        parts.append(f'<joint name="{jname}" type="{kind}"><parent link="{parent}"/>'
                     f'<child link="{child}"/>{body}</joint>')
    order = rng.permutation(len(parts))
    return (f'<?xml version="1.0"?>\n<robot name="{name}">\n'
            + "\n".join(parts[i] for i in order) + "\n</robot>\n")


def topology_urdf(parents, seed=0):
    """URDF of revolute joints with random axes and inertias; parents[i] < i or -1."""
    rng = np.random.default_rng(seed)
    lines = ['<robot name="topology">', '<link name="root"/>']
    for i, p in enumerate(parents):
        axis = rng.normal(size=3)
        rpy = rng.uniform(-np.pi, np.pi, 3)
        com = rng.uniform(-0.1, 0.1, 3)
        mass = rng.uniform(0.5, 3.0)
        inertia = random_inertia(rng, mass)
        lines += [
            f'<link name="l{i}"><inertial><origin xyz="{com[0]} {com[1]} {com[2]}"/>'
            f'<mass value="{mass}"/><inertia ixx="{inertia[0, 0]}" ixy="{inertia[0, 1]}" '
            f'ixz="{inertia[0, 2]}" iyy="{inertia[1, 1]}" iyz="{inertia[1, 2]}" '
            f'izz="{inertia[2, 2]}"/></inertial></link>',
            f'<joint name="j{i}" type="continuous"><parent link="{"root" if p < 0 else f"l{p}"}"/>'
            f'<child link="l{i}"/><origin xyz="0.3 0.05 0.1" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
            f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/></joint>',
        ]
    return "\n".join(lines + ["</robot>"])


def named_urdf(name: str) -> str:
    """A robot by its test id: ``chain-SEED-N`` or ``tree-SEED-N`` is the text
    of ``random_urdf`` with that seed and N moving joints, any other name the
    path of that example-robot-data URDF (``example_robot_urdf``)."""
    kind, _, rest = name.partition("-")
    if kind in ("chain", "tree") and rest:
        seed, n = rest.split("-")
        return random_urdf(np.random.default_rng(int(seed)), int(n), tree=kind == "tree")
    return example_robot_urdf(name)


def urdf_links(urdf: str) -> list[str]:
    """Names of all links, in file order."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    return [l.get("name") for l in root.findall("link")]


def root_links(urdf: str) -> list[str]:
    """Links that are no joint's child (a valid robot has exactly one)."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    children = {j.find("child").get("link") for j in root.findall("joint")}
    return [l for l in urdf_links(urdf) if l not in children]


def fixed_to_root_links(urdf: str) -> list[str]:
    """Links joined to the root link by fixed joints only (they never move)."""
    root = ET.fromstring(urdf_text(urdf).encode("utf-8"))
    joints = [j for j in root.findall("joint")]
    child_of = {j.find("child").get("link"): j for j in joints}
    all_links = [l.get("name") for l in root.findall("link")]
    out = []
    for link in all_links:
        cur, ok = link, True
        if cur not in child_of:
            continue  # the root itself
        while cur in child_of:
            j = child_of[cur]
            if j.get("type") != "fixed":
                ok = False
                break
            cur = j.find("parent").get("link")
        if ok:
            out.append(link)
    return out


# ---------------------------------------------------------------------------
# Without numba's compiler (DESIGN.md: NUMBA_DISABLE_JIT=1 must stay correct)


def worst_error_without_jit(script: str) -> float:
    """Run ``script`` in a fresh Python with NUMBA_DISABLE_JIT=1 and return
    the number it prints after ``WORST``.

    The script can use numpy as ``np`` and import these helpers and the
    calling test file's module; it runs with the repository, this folder
    and the caller's on the path.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    caller = os.path.dirname(os.path.abspath(sys._getframe(1).f_code.co_filename))  # its test file's folder
    header = ("import sys\n"
              f"sys.path[:0] = [{here!r}, {caller!r}]\n"
              "import numba, numpy as np\n"
              "assert numba.config.DISABLE_JIT, 'NUMBA_DISABLE_JIT did not take effect'\n")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(here))] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-c", header + script], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return float(proc.stdout.split("WORST")[-1])
