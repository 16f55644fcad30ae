"""A small valid URDF made from named pieces, for tests that break one piece
at a time, and the check that a description is refused with a message naming
what is wrong."""
import re

import pytest

from robot_dynamics_ros.dynamics import DynamicsError, load_urdf

INERTIAL = ('<inertial><origin xyz="0.1 0 0.05" rpy="0 0 0"/><mass value="1.5"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>')


def urdf(links=None, joints=None, extra=""):
    """A valid 3-joint robot; ``links``/``joints`` override pieces by name."""
    base_links = {
        "base": "",
        "upper_arm": INERTIAL,
        "forearm": INERTIAL,
        "hand": INERTIAL,
    }
    base_joints = {
        "shoulder": ('revolute', 'base', 'upper_arm',
                     '<origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 0 1"/>'
                     '<limit lower="-2" upper="2" effort="10" velocity="1"/>'),
        "elbow": ('revolute', 'upper_arm', 'forearm',
                  '<origin xyz="0.4 0 0" rpy="0.1 0 0"/><axis xyz="0 1 0"/>'
                  '<limit lower="-2" upper="2" effort="10" velocity="1"/>'),
        "wrist": ('continuous', 'forearm', 'hand',
                  '<origin xyz="0.3 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/>'),
    }
    base_links.update(links or {})
    base_joints.update(joints or {})
    parts = [f'<link name="{n}">{body}</link>' for n, body in base_links.items()
             if body is not None]
    parts += [f'<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/>{b}</joint>'
              for n, (t, p, c, b) in base_joints.items() if t is not None]
    return '<?xml version="1.0"?>\n<robot name="arm">\n' + "\n".join(parts) + extra + "\n</robot>\n"


def inertial(mass="1.5", ixx="0.02", ixy="0", iyy="0.03", izz="0.04",
             xyz="0.1 0 0.05", rpy="0 0 0"):
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def elbow(origin='<origin xyz="0.4 0 0" rpy="0.1 0 0"/>', axis="0 1 0",
          kind="revolute", parent="upper_arm", child="forearm"):
    return {"elbow": (kind, parent, child, f'{origin}<axis xyz="{axis}"/>'
                      '<limit lower="-2" upper="2" effort="10" velocity="1"/>')}


def assert_rejected(text, *needles):
    """load_urdf raises DynamicsError whose message contains every needle
    (a str is matched case-insensitively as a substring, a Pattern as regex)."""
    with pytest.raises(DynamicsError) as info:
        load_urdf(text)
    msg = str(info.value)
    for needle in needles:
        if isinstance(needle, re.Pattern):
            assert needle.search(msg), f"{needle.pattern!r} not in message: {msg}"
        else:
            assert needle.lower() in msg.lower(), f"{needle!r} not in message: {msg}"
    return msg
