"""The embedded default robot: the 6-joint PUMA of Mohan and Saha (2007).

Mohan and Saha, "A recursive, numerically stable, and efficient simulation
algorithm for serial robots" (Multibody System Dynamics 17, 2007), Table 2:
DH parameters, link masses and hub inertias. As in the paper (Sec. 3, item 1,
Fig. 2), each link is a bent slender rod of uniform density: a piece of length
b_i along Z_i from O_i, then a piece of length a_i along X_{i+1}; a slender
rod has no inertia about its own axis. Links 4-6 are massless and carry only
the hub inertia I_zz about their joint axis. The URDF is generated from the
table here, so the numbers are written once.
"""
import numpy as np

# a_i (m), b_i (m), alpha_i (rad), m_i (kg), hub I_zz (kg m^2)
PUMA_TABLE = (
    (0.0, 0.20, -np.pi / 2, 10.521, 0.0),
    (0.432, 0.149, 0.0, 15.7612, 0.0),
    (0.02, 0.0, np.pi / 2, 8.767, 0.0),
    (0.0, 0.432, -np.pi / 2, 0.0, 0.181),
    (0.0, 0.0, np.pi / 2, 0.0, 0.0735),
    (0.0, 0.056, 0.0, 0.0, 0.0141),
)


def _rod(mass, start, end):
    """Mass, CoM and inertia about the CoM of a slender rod start -> end."""
    axis = np.asarray(end, float) - np.asarray(start, float)
    length = np.linalg.norm(axis)
    com = (np.asarray(start, float) + np.asarray(end, float)) / 2
    if length == 0.0:
        return mass, com, np.zeros((3, 3))
    u = axis / length
    return mass, com, mass * length ** 2 / 12 * (np.eye(3) - np.outer(u, u))


def _link_inertia(a, b, mass, hub):
    """Bent rod (b along z, then a along x) plus a hub about z, link frame."""
    total = a + b
    parts = []
    if mass > 0 and total > 0:
        parts = [_rod(mass * b / total, (0, 0, 0), (0, 0, b)),
                 _rod(mass * a / total, (0, 0, b), (a, 0, b))]
    com = (sum(m * c for m, c, _ in parts) / mass) if mass > 0 else np.zeros(3)
    inertia = np.diag([0.0, 0.0, hub])
    for m, c, i_c in parts:
        d = c - com
        inertia = inertia + i_c + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def puma_urdf() -> str:
    """URDF text of the PUMA of Table 2 (joints joint1..joint6, DH frames).

    Link i's frame is DH frame i turned by theta_i, so joint i turns about
    its z axis and joint i+1 sits at (a_i, 0, b_i) rotated by alpha_i about
    x. Joint limits are left out: the paper's trajectory turns every joint
    through pi and all six are modelled as continuous.
    """
    lines = ['<?xml version="1.0"?>', '<robot name="puma560_mohan_saha">',
             '  <link name="base_link"/>']
    parent, origin = "base_link", ((0.0, 0.0, 0.0), 0.0)
    for i, (a, b, alpha, mass, hub) in enumerate(PUMA_TABLE, start=1):
        m, com, inertia = _link_inertia(a, b, mass, hub)
        xyz, roll = origin
        lines += [
            f'  <joint name="joint{i}" type="continuous">',
            f'    <parent link="{parent}"/><child link="link{i}"/>',
            f'    <origin xyz="{float(xyz[0])!r} {float(xyz[1])!r} {float(xyz[2])!r}" rpy="{float(roll)!r} 0 0"/>',
            '    <axis xyz="0 0 1"/>',
            '  </joint>',
            f'  <link name="link{i}">',
            '    <inertial>',
            f'      <origin xyz="{float(com[0])!r} {float(com[1])!r} {float(com[2])!r}" rpy="0 0 0"/>',
            f'      <mass value="{float(m)!r}"/>',
            f'      <inertia ixx="{float(inertia[0, 0])!r}" ixy="{float(inertia[0, 1])!r}" '
            f'ixz="{float(inertia[0, 2])!r}" iyy="{float(inertia[1, 1])!r}" '
            f'iyz="{float(inertia[1, 2])!r}" izz="{float(inertia[2, 2])!r}"/>',
            '    </inertial>',
            '  </link>',
        ]
        parent, origin = f"link{i}", ((a, 0.0, b), alpha)
    lines += ['  <link name="tool"/>',
              '  <joint name="tool_joint" type="fixed">',
              '    <parent link="link6"/><child link="tool"/>',
              f'    <origin xyz="{float(origin[0][0])!r} 0 {float(origin[0][2])!r}" rpy="{float(origin[1])!r} 0 0"/>',
              '  </joint>', '</robot>']
    return "\n".join(lines) + "\n"
