"""The subtrees on a fixed base as models of their own.

On a fixed base, the bodies hanging from each joint on the world (a leg, an
arm, a torso) form a subtree that shares no body with the others, so the
mass matrix is block diagonal (docs/math.md: M_ab = 0 when a and b are in
different root subtrees) and each block depends on its own subtree's joints
only. The K_c refinement uses this to refine each block on its own
(``search``).
"""
from dataclasses import replace

import numpy as np

from ..calls import PerThread
from ..errors import DynamicsError


def root_subtrees(model):
    """[(submodel, coordinates)], one per joint on the world of a fixed-base
    model without mimic reduction (q is then in body order): the submodel
    holds that joint's subtree (its joints, inertias, payloads and limits,
    its links' frames), ``coordinates`` the indices of its joints in q
    (ascending). Its mass matrix, Gamma and k_c at q[coordinates] are the
    blocks of the model's at q."""
    if model.floating or model.reduced:
        raise DynamicsError(f"root_subtrees: model '{model.name}' has a floating base or reduced mimic "
                            "joints; its subtrees are not independent models")
    parent = np.asarray(model.parent)
    root = np.empty(model.nb, dtype=np.int64)
    for body in range(model.nb):  # parents come first
        root[body] = body if parent[body] < 0 else root[parent[body]]
    parts = []
    for top in np.flatnonzero(parent < 0):
        bodies = np.flatnonzero(root == top)
        renumber = {int(body): index for index, body in enumerate(bodies)}
        frames = {link: (renumber[body], pose) for link, (body, pose) in model.link_frames.items()
                  if body in renumber}
        names = tuple(model.body_joint_names[body] for body in bodies)
        submodel = replace(
            model,
            name=f"{model.name}/{model.body_joint_names[top]}",
            joint_names=names,
            link_names=tuple(link for link in model.link_names if link in frames),
            body_joint_names=names,
            parent=np.array([renumber.get(int(parent[body]), -1) for body in bodies], dtype=np.int64),
            joint_type=model.joint_type[bodies],
            joint_placement=model.joint_placement[bodies],
            joint_axis=model.joint_axis[bodies],
            inertia=model.inertia[bodies],
            lower=model.lower[bodies],
            upper=model.upper[bodies],
            coordinate_map=np.eye(len(bodies)),
            coordinate_offset=np.zeros(len(bodies)),
            link_frames=frames,
            link_inertia=model.link_inertia[bodies],
            payloads={link: payload for link, payload in model.payloads.items() if link in frames},
            _local=PerThread(),
        )
        parts.append((submodel, bodies))
    return parts
