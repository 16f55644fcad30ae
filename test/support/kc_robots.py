"""Robots made for the K_c tests and benchmarks: an arm with a gripper (a
tree whose fingers hang off the palm), as URDF text."""
import numpy as np


def _link(name, mass, size, rng):
    inertia = mass * size ** 2 / 6 * (1 + 0.2 * rng.random(3))
    return (f'<link name="{name}"><inertial><origin xyz="{0.3 * size:.4f} 0 {0.5 * size:.4f}"/>'
            f'<mass value="{mass:.4f}"/><inertia ixx="{inertia[0]:.6f}" ixy="0" ixz="0" '
            f'iyy="{inertia[1]:.6f}" iyz="0" izz="{inertia[2]:.6f}"/></inertial></link>')


def _joint(name, parent, child, xyz, axis, limit, kind="revolute"):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]:.4f} {xyz[1]:.4f} {xyz[2]:.4f}"/><axis xyz="{axis}"/>'
            f'<limit lower="{-limit:.4f}" upper="{limit:.4f}" effort="10" velocity="1"/></joint>')


def arm_with_gripper(seed=5, arm_joints=6, fingers=3, finger_joints=2, finger_kind="revolute"):
    """An arm of ``arm_joints`` revolute joints (alternating z and y axes,
    seeded lengths and masses) and a gripper: a palm (the last arm link)
    with ``fingers`` fingers of ``finger_joints`` light links each, a tree
    (the default: 12 joints). ``finger_kind="prismatic"``: fingers that
    slide 4 cm along their axis (a parallel gripper's, panda's)."""
    rng = np.random.default_rng(seed)
    parts = ['<robot name="arm_with_gripper">', _link("base", 4.0, 0.2, rng)]
    parent = "base"
    for i in range(arm_joints):
        length = 0.1 + 0.25 * rng.random()
        child = f"link{i}"
        parts += [_link(child, 3.0 - 0.4 * i, length, rng),
                  _joint(f"joint{i}", parent, child, (0, 0, length), "0 0 1" if i % 2 == 0 else "0 1 0",
                         2.5)]
        parent = child
    for f in range(fingers):
        angle = 2 * np.pi * f / fingers
        finger_parent = parent
        for k in range(finger_joints):
            child = f"finger{f}_{k}"
            xyz = (0.04 * np.cos(angle), 0.04 * np.sin(angle), 0.05) if k == 0 else (0, 0, 0.04)
            axis = (f"{-np.sin(angle):.4f} {np.cos(angle):.4f} 0" if finger_kind == "revolute"
                    else f"{np.cos(angle):.4f} {np.sin(angle):.4f} 0")
            parts += [_link(child, 0.05, 0.03, rng),
                      _joint(f"finger{f}_joint{k}", finger_parent, child, xyz, axis,
                             0.8 if finger_kind == "revolute" else 0.02, finger_kind)]
            finger_parent = child
    parts.append("</robot>")
    return "\n".join(parts)
