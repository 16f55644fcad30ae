"""Build a ``Model`` from URDF text or a URDF file, with urdf-parser-py.

Only the elements that matter for dynamics reach urdf-parser-py (links with
their inertials, joints): real URDFs carry materials without colour,
transmissions, gazebo tags and unnamed visuals that it rejects or warns about.
Fixed joints are merged into their parent body; each revolute, continuous or
prismatic joint starts a new body, and a floating base six (``_free_flyer``).
"""
from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections import Counter
import xml.etree.ElementTree as ET

import numpy as np
import urdf_parser_py.xml_reflection as xml_reflection
from urdf_parser_py.urdf import URDF, Joint
from urdf_parser_py.xml_reflection import core as xml_reflection_core

from ..errors import URDFError
from .inertia import check_inertia, combine_inertias
from .limits import (MAX_ANGLE, MAX_DOF, MAX_LENGTH, MAX_LINKS, MAX_MIMIC,
                     MAX_URDF_BYTES, NO_LIMIT_BEYOND, bounded)
from .model import (BASE_BODIES, BASE_VELOCITY_NAMES, PRISMATIC, REVOLUTE, Model,
                    check_gravity)

_MOVING = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}
_KEEP_IN_JOINT = ("parent", "child", "origin", "axis", "limit", "mimic")


def load_urdf(source, *, base="auto", gravity=(0.0, 0.0, -9.81), mimic="independent"):
    """The ``Model`` of a URDF given as XML text or as a file path.

    ``base``: ``"fixed"`` bolts the root link to the world (a ``floating``
    joint at the root is welded at its origin); ``"floating"`` puts a 6-DoF
    free-flyer between the world and the root link, or makes the URDF's
    ``floating`` joint at the root one; ``"auto"`` is floating exactly when
    the URDF has a ``floating`` joint at its root (docs/floating_base.md).
    A ``floating`` joint anywhere but at the root is refused.
    ``mimic="independent"`` keeps mimic joints as ordinary joints of q;
    ``"reduce"`` removes them from q (``q_mimic = multiplier * q_master +
    offset``). Raises ``URDFError`` naming the element at fault, also for
    numbers beyond the limits of ``limits``, for a fixed robot without
    moving joints, and for one whose moving links carry no inertia at all (a
    visual-only description, as some vendors ship: every output would be
    zero). Every check costs time linear in the size of the description.
    """
    if base not in ("auto", "fixed", "floating"):
        raise URDFError(f"base must be 'auto', 'fixed' or 'floating', got {base!r}")
    if mimic not in ("independent", "reduce"):
        raise URDFError(f"mimic must be 'independent' or 'reduce', got {mimic!r}")
    gravity = check_gravity(gravity, URDFError)
    robot = _parse(_read(source))
    links = {link.name: link for link in robot.links}
    _check_unique_names(robot)
    children = _check_tree(robot, links)
    root = next(iter(set(links) - {j.child for j in robot.joints}))
    root_joint = _floating_root_joint(robot, root)
    floating = base == "floating" or (base == "auto" and root_joint is not None)
    bodies, link_frames, base_link = _bodies(robot, children, root, root_joint, floating)
    nb = len(bodies)
    link_inertia = _body_inertias(robot, links, link_frames, nb)
    names = [joint.name for joint, _, _ in bodies]
    base_bodies = BASE_BODIES if floating else 0
    coordinate_map, offset, actuated = _coordinates(bodies, names, mimic, base_bodies)
    return Model(
        name=robot.name or "robot",
        joint_names=tuple(actuated[base_bodies:]),
        link_names=tuple(links),
        body_joint_names=tuple(names),
        parent=np.array([p for _, p, _ in bodies], dtype=np.int64),
        joint_type=np.array([_MOVING[j.type] for j, _, _ in bodies], dtype=np.int64),
        joint_placement=np.array([x for _, _, x in bodies]).reshape(nb, 4, 4),
        joint_axis=np.array([_axis(j) for j, _, _ in bodies]).reshape(nb, 3),
        inertia=link_inertia,
        gravity=gravity,
        lower=np.array([_limits(j)[0] for j, _, _ in bodies]),
        upper=np.array([_limits(j)[1] for j, _, _ in bodies]),
        coordinate_map=coordinate_map,
        coordinate_offset=offset,
        link_frames=link_frames,
        link_inertia=link_inertia.copy(),
        base="floating" if floating else "fixed",
        base_link=base_link,
    )


def _check_unique_names(robot):
    """``URDFError`` naming the links, or the joints, that share a name."""
    for kind, items in (("link", robot.links), ("joint", robot.joints)):
        twice = sorted(name for name, count in Counter(item.name for item in items).items()
                       if count > 1)
        if twice:
            raise URDFError(f"duplicate {kind} names: {_some(twice)}")


def _bodies(robot, children, root, root_joint, floating):
    """The kinematic tree of bodies: (bodies, link_frames, base_link).

    ``bodies``: per moving joint (the free-flyer's six first, when
    ``floating``), (joint, parent body, placement in the parent body's
    frame), every parent before its children (depth first, in URDF order).
    Fixed joints start no body: their child link is merged into the parent
    body, and ``link_frames`` maps every link to (its body, its pose in that
    body's frame), -1 for the world. ``URDFError`` for a joint type other
    than revolute, continuous, prismatic and fixed (and floating at the
    root), and for a floating-base robot with a joint moving a link
    relative to the world link; at most ``MAX_DOF`` bodies, at least one.
    """
    bodies = []          # (joint, parent body, placement)
    link_frames = {root: (-1, np.eye(4))}
    base_link = root
    if floating:
        base_link = root_joint.child if root_joint is not None else root
        bodies.extend(_free_flyer(robot, root_joint))
        link_frames[base_link] = (BASE_BODIES - 1, np.eye(4))
    stack = list(reversed(children.get(root, [])))
    while stack:  # depth first, in URDF order: every parent before its children
        joint = stack.pop()
        body, pose = link_frames[joint.parent]
        placement = pose @ _origin(joint.origin, f"joint '{joint.name}'")
        if joint is root_joint and floating:
            pass  # the free-flyer's bodies, made above
        elif joint.type == "fixed" or joint is root_joint:
            link_frames[joint.child] = (body, placement)
        elif joint.type in _MOVING:
            if floating and body < 0:
                raise URDFError(
                    f"joint '{joint.name}' moves link '{joint.child}' relative to the "
                    f"world link '{root}', not to the floating base '{base_link}': a "
                    "floating-base robot is one tree under its root link")
            link_frames[joint.child] = (len(bodies), np.eye(4))
            bodies.append((joint, body, placement))
        else:
            raise URDFError(
                f"joint '{joint.name}' is of type '{joint.type}': only "
                "revolute, continuous, prismatic and fixed joints are "
                "supported, and one floating joint at the root")
        stack.extend(reversed(children.get(joint.child, [])))
    nb = len(bodies)
    if nb == 0:
        raise URDFError(f"robot '{robot.name}' has no moving joints (revolute, "
                        "continuous or prismatic): there are no dynamics to compute")
    if nb > MAX_DOF:
        raise URDFError(f"robot '{robot.name}' has {nb} moving joints, more than "
                        f"the limit of {MAX_DOF}")
    return bodies, link_frames, base_link


def _body_inertias(robot, links, link_frames, nb):
    """(nb, 10) spatial inertias of the bodies: every link's <inertial>
    expressed in its body's frame (``link_frames``) and summed per body
    (``combine_inertias``). ``URDFError`` when no moving body has any: a
    visual-only description, whose every output would be zero."""
    link_inertia = np.zeros((nb, 10))
    for name, (body, pose) in link_frames.items():
        inertial = links[name].inertial
        if inertial is None:
            continue
        # Checked even where it moves nothing: a link of negative mass makes
        # the description invalid wherever it is.
        mass, com, inertia_c = _inertial(inertial, name, moves=body >= 0)
        if body < 0:
            continue
        rot = pose[:3, :3]
        link_inertia[body] = combine_inertias(
            link_inertia[body], mass, rot @ com + pose[:3, 3],
            rot @ inertia_c @ rot.T)
    if not link_inertia.any():
        raise URDFError(
            f"robot '{robot.name}': no link that a joint moves has inertia (an <inertial> "
            "with a mass or a rotational inertia), so every mass matrix, Coriolis term and "
            "torque would be zero: a visual-only description needs its links' <inertial> "
            "elements")
    return link_inertia


def _floating_root_joint(robot, root):
    """The URDF's ``floating`` joint, or None; ``URDFError`` unless it is
    the only one and its parent is the root link."""
    floating = [j for j in robot.joints if j.type == "floating"]
    if len(floating) > 1:
        raise URDFError(f"the URDF has {len(floating)} floating joints "
                        f"({_some([j.name for j in floating])}): at most one, at the root")
    if floating and floating[0].parent != root:
        raise URDFError(
            f"floating joint '{floating[0].name}' joins link '{floating[0].parent}' to "
            f"'{floating[0].child}': a floating joint must hang off the root link "
            f"'{root}' (a floating base), not inside the tree")
    return floating[0] if floating else None


def _free_flyer(robot, root_joint):
    """The six massless bodies of a floating base (``model.BASE_BODIES``):
    prismatic along x, y, z, then revolute about x, y, z, a chain from the
    world, the first placed by the floating joint's origin (if any)."""
    taken = sorted(set(BASE_VELOCITY_NAMES) & {j.name for j in robot.joints})
    if taken:
        raise URDFError(f"joint names {_some(taken)} are reserved for the floating "
                        "base's speeds")
    placement = (np.eye(4) if root_joint is None else
                 _origin(root_joint.origin, f"joint '{root_joint.name}'"))
    axes = np.eye(3)
    return [(Joint(name=name, joint_type="prismatic" if k < 3 else "continuous",
                   axis=axes[k % 3]), k - 1, placement if k == 0 else np.eye(4))
            for k, name in enumerate(BASE_VELOCITY_NAMES)]


def read_urdf_file(path, limit=MAX_URDF_BYTES):
    """The text of the URDF file at ``path``: a regular file of at most
    ``limit`` bytes, else ``URDFError``.

    Reads at most ``limit + 1`` bytes whatever the file claims to be: a FIFO
    would block the reader forever, and /dev/zero or /proc files report a
    size of 0 and never end.
    """
    try:
        # Non-blocking: opening a FIFO without a writer would wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, TypeError, ValueError) as exc:
        raise URDFError(f"cannot read URDF file {str(path)!r}: {exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise URDFError(f"URDF file {str(path)!r} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise URDFError(f"cannot read URDF file {str(path)!r}: {exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise URDFError(f"URDF file {str(path)!r} has more than the limit of {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise URDFError(f"URDF file {str(path)!r} is not UTF-8 text: {exc}") from None


_BOM = "\ufeff"


def is_xml_text(text):
    """True when the string ``text`` is XML rather than a file path: after a
    UTF-8 byte order mark (which XML parsers skip) and white space, it
    starts with '<'."""
    return text.lstrip(_BOM).lstrip().startswith("<")


def _read(source):
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise URDFError(f"URDF source bytes are not UTF-8 text: {exc}") from None
    if isinstance(source, os.PathLike):
        return read_urdf_file(source)
    if not isinstance(source, str):
        raise URDFError(f"URDF source must be text or a path, got {type(source).__name__}")
    if is_xml_text(source):
        return source
    return read_urdf_file(source)


def _parse(text):
    """The robot, with everything but links' inertials and joints dropped."""
    if len(text) > MAX_URDF_BYTES:
        raise URDFError(f"URDF has {len(text)} characters, more than the limit of "
                        f"{MAX_URDF_BYTES}")
    if "<!ENTITY" in text or "<!DOCTYPE" in text:
        raise URDFError("URDF contains a DOCTYPE or entity declaration: refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f"malformed URDF XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"URDF root element is <{root.tag}>, expected <robot>")
    # Rebuilt rather than removed one by one: each removal costs a list scan.
    root[:] = [element for element in root if element.tag in ("link", "joint")]
    for tag in ("link", "joint"):
        count = sum(1 for element in root if element.tag == tag)
        if count > MAX_LINKS:
            raise URDFError(f"URDF has {count} <{tag}> elements, more than the "
                            f"limit of {MAX_LINKS}")
    for element in root:
        _keep_only(element, ("inertial",) if element.tag == "link" else _KEEP_IN_JOINT)
    for element in root:
        if not element.get("name"):
            raise URDFError(f"a <{element.tag}> element has no name")
        _check_numbers(element)
    with _quiet_parser():
        try:
            return URDF.from_xml_string(ET.tostring(root, encoding="unicode"))
        except Exception as exc:  # urdf-parser-py raises bare exceptions
            raise URDFError(f"invalid URDF: {exc}") from None


_quiet_lock = threading.Lock()
# urdf-parser-py reports through the module-level hook ``on_error`` (which
# writes to stderr), looked up in its core module and in the package.
_ERROR_HOOKS = (xml_reflection, xml_reflection_core)


def _ignore(message):
    pass


@contextlib.contextmanager
def _quiet_parser():
    """Keep urdf-parser-py's warnings off the user's terminal.

    Through its own hook, not by swapping ``sys.stderr``: that is process-wide,
    and a node parses on its builder thread while the executor thread may be
    using stderr (rclpy's EventsExecutor calls ``faulthandler.enable()``,
    which failed on the swapped-in stream and ended the node).
    """
    with _quiet_lock:
        saved = [module.on_error for module in _ERROR_HOOKS]
        for module in _ERROR_HOOKS:
            module.on_error = _ignore
        try:
            yield
        finally:
            for module, hook in zip(_ERROR_HOOKS, saved):
                module.on_error = hook


_NUMERIC = {"value", "xyz", "rpy", "ixx", "ixy", "ixz", "iyy", "iyz", "izz",
            "lower", "upper", "effort", "velocity", "multiplier", "offset"}


def _check_numbers(element):
    """Name the element whose number does not parse (urdf-parser-py does not)."""
    for child in element.iter():
        for attribute, text in child.attrib.items():
            if attribute not in _NUMERIC:
                continue
            try:
                [float(token) for token in text.split()]
            except ValueError:
                raise URDFError(
                    f"{element.tag} '{element.get('name')}': <{child.tag} "
                    f"{attribute}=\"{text}\"> is not a number") from None


def _keep_only(element, tags):
    element[:] = [child for child in element if child.tag in tags]


def _check_tree(robot, links):
    """Children per link; raises unless the joints form one tree."""
    children = {}
    seen_child = {}
    for joint in robot.joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise URDFError(
                    f"joint '{joint.name}': {role} link '{link}' does not exist")
        if joint.child in seen_child:
            raise URDFError(
                f"link '{joint.child}' is the child of two joints "
                f"('{seen_child[joint.child]}' and '{joint.name}')")
        seen_child[joint.child] = joint.name
        children.setdefault(joint.parent, []).append(joint)
    if not links:
        raise URDFError("the URDF has no links")
    roots = sorted(set(links) - set(seen_child))
    if not roots:
        raise URDFError("the joints form a cycle: no link is the root")
    if len(roots) > 1:
        raise URDFError(f"the URDF has {len(roots)} roots (links that are no "
                        f"joint's child): {_some(roots)}; expected one tree")
    reached, stack = set(), roots[:]
    while stack:
        link = stack.pop()
        reached.add(link)
        stack.extend(j.child for j in children.get(link, []))
    if reached != set(links):
        raise URDFError("the joints form a cycle through links "
                        f"{_some(sorted(set(links) - reached))}")
    return children


def _some(names, shown=10):
    """The first names of a list for a message that stays readable."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _vector(values, where, limit):
    vec = np.array(values if values is not None else np.zeros(3), dtype=float)
    if vec.shape != (3,):
        raise URDFError(f"{where}: expected 3 numbers, got {vec.tolist()}")
    return bounded(vec, limit, where, URDFError)


def _origin(origin, where):
    """4x4 pose of a URDF <origin> (rpy: fixed-axis roll, pitch, yaw)."""
    xyz = _vector(origin.xyz if origin is not None else None, f"{where} origin xyz", MAX_LENGTH)
    rpy = _vector(origin.rpy if origin is not None else None, f"{where} origin rpy", MAX_ANGLE)
    pose = np.eye(4)
    pose[:3, :3] = _rpy_matrix(*rpy)
    pose[:3, 3] = xyz
    return pose


def _rpy_matrix(roll, pitch, yaw):
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis(joint):
    """The unit axis; only its direction matters, so any finite size is accepted."""
    axis = _vector(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0),
                   f"joint '{joint.name}' axis", np.finfo(float).max)
    # Scaled before the norm: squaring components of 1e200 overflows.
    scale = np.max(np.abs(axis))
    if scale == 0.0 or scale * np.linalg.norm(axis / scale) < 1e-12:
        raise URDFError(f"joint '{joint.name}' has a zero axis")
    unit = axis / scale
    return unit / np.linalg.norm(unit)


def _limits(joint):
    if joint.type == "continuous" or joint.limit is None:
        return -np.inf, np.inf
    lower = joint.limit.lower if joint.limit.lower is not None else -np.inf
    upper = joint.limit.upper if joint.limit.upper is not None else np.inf
    if np.isnan(lower) or np.isnan(upper):
        raise URDFError(f"joint '{joint.name}': limit is NaN")
    if lower == upper == 0.0:  # urdf convention: no limit given
        return -np.inf, np.inf
    if lower > NO_LIMIT_BEYOND or upper < -NO_LIMIT_BEYOND:
        # +-inf on the wrong side (or lower = upper = inf) is not "no limit":
        # no position of the joint lies within such limits
        raise URDFError(f"joint '{joint.name}': limits [{lower}, {upper}] admit no "
                        f"position within {NO_LIMIT_BEYOND:g} of zero")
    lower = -np.inf if lower < -NO_LIMIT_BEYOND else lower
    upper = np.inf if upper > NO_LIMIT_BEYOND else upper
    if lower > upper:
        raise URDFError(f"joint '{joint.name}': lower limit {lower} > upper {upper}")
    return float(lower), float(upper)


def _inertial(inertial, link, moves):
    where = f"link '{link}' inertial"
    pose = _origin(inertial.origin, where)
    inertia = inertial.inertia
    matrix = (np.zeros((3, 3)) if inertia is None else
              np.array(inertia.to_matrix(), dtype=float))
    mass, _, matrix = check_inertia(
        inertial.mass if inertial.mass is not None else 0.0, pose[:3, 3],
        matrix, where=where, moves=moves, error=URDFError)
    rot = pose[:3, :3]
    return mass, pose[:3, 3], rot @ matrix @ rot.T


def _coordinates(bodies, names, mimic, base_bodies):
    """Coordinate map and offset from q to all joints, and q's joint names.

    ``base_bodies``: the free-flyer's bodies at the head of ``bodies``; their
    names are the base's speeds, not joints of the URDF, so no joint mimics
    them.
    """
    nb = len(bodies)
    index = {name: i for i, name in enumerate(names) if i >= base_bodies}
    master = {}
    if mimic == "reduce":
        for i, (joint, _, _) in enumerate(bodies):
            if joint.mimic is None:
                continue
            if joint.mimic.joint not in index:
                raise URDFError(f"joint '{joint.name}' mimics unknown joint "
                                f"'{joint.mimic.joint}'")
            mult = 1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier)
            off = 0.0 if joint.mimic.offset is None else float(joint.mimic.offset)
            bounded([mult, off], MAX_MIMIC, f"joint '{joint.name}' mimic multiplier and offset",
                    URDFError)
            master[i] = (index[joint.mimic.joint], mult, off)
    actuated = [i for i in range(nb) if i not in master]
    column = {i: c for c, i in enumerate(actuated)}
    coordinate_map = np.zeros((nb, len(actuated)))
    offset = np.zeros(nb)
    for i in range(nb):
        row, add, mult, seen = i, 0.0, 1.0, set()
        while row in master:  # follow chains of mimics to an actuated joint
            if row in seen:
                raise URDFError(f"mimic joints form a cycle at '{names[i]}'")
            seen.add(row)
            row, m, o = master[row]
            add += mult * o
            mult *= m
            # A chain of mimics multiplies: bound the product, not each factor.
            bounded([mult, add], MAX_MIMIC, f"joint '{names[i]}' mimic chain multiplier "
                    "and offset", URDFError)
        coordinate_map[i, column[row]] = mult
        offset[i] = add
    return coordinate_map, offset, [names[i] for i in actuated]
