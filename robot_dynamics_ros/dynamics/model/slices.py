"""Where the Christoffel symbols of a tree can be nonzero: one block per slice.

``Gamma[i, j, k]`` is zero unless the joints i, j and k lie pairwise on one
path from the root (``M[i, j]`` and its derivatives vanish for unrelated
joints: the partial order of Echeandia and Wensing (2021), "Numerical
Methods to Compute the Coriolis Matrix and Christoffel Symbols for
Rigid-Body Systems", Section 2, which their Algorithm 2 follows). So the
slice ``Gamma_k = Gamma[:, :, k]`` lives on the rows and columns of
``related(k)``: the ancestors of k, k itself and its descendants, of size
``m_k = depth(k) + |subtree(k)|``. For a leg joint of a humanoid that is the
base and the leg, 12 of 35 coordinates; a serial chain's slices are dense.

``slice_layout`` stores every slice as an ``m_k x m_k`` block, and slices of
one size side by side, ``(m, m, count)`` with the slice index last, so that
their Gram matrices and eigenproblems run in lockstep (``eigen.tridiagonalize``);
a floating base's slices one after the other (``slice_layout``).
Entry ``Gamma[a, b, k]`` is ``blocks[start[k] + local[k, a] * row[k] +
local[k, b] * col[k]]`` (``local[k, a] = -1`` when a is not related to k).
Memory: ``sum_k m_k^2`` numbers instead of ``n^3``.
"""
from typing import NamedTuple

import numpy as np


# A fixed-base tree whose blocks would hold this fraction of n^3 numbers or
# more gets the dense layout (every slice n x n, ``christoffel.dense_layout``):
# writing Gamma straight into the tensor is then cheaper than the blocks.
DENSE_FROM = 0.5


class SliceLayout(NamedTuple):
    """The block layout of the slices of Gamma (module docstring)."""

    local: np.ndarray        # (nb, nb) int64: local[k, a], or -1
    start: np.ndarray        # (nb,) int64: where slice k's entry (0, 0) is
    row: np.ndarray          # (nb,) int64: step of one local row of slice k
    col: np.ndarray          # (nb,) int64: step of one local column (its group's count)
    group_size: np.ndarray   # (groups,) int64: m of the slices of each group
    group_count: np.ndarray  # (groups,) int64: how many slices
    group_offset: np.ndarray  # (groups,) int64: where each group starts
    slice_group: np.ndarray  # (nb,) int64: the group of slice k
    slice_slot: np.ndarray   # (nb,) int64: its place in the group
    total: int               # numbers in all blocks
    dense: bool              # the blocks are the dense tensor (one group of nb slices of nb)


def related_sets(parent):
    """For each body k, the sorted bodies related to it (ancestors, k,
    descendants). parent[i] < i, -1 for the root. O(n d)."""
    nb = len(parent)
    sets = [set() for _ in range(nb)]
    for k in range(nb):
        a = k
        while a >= 0:  # k and its ancestors are related both ways
            sets[k].add(a)
            sets[a].add(k)
            a = parent[a]
    return [np.array(sorted(s), dtype=np.int64) for s in sets]


def slice_layout(parent, base_bodies=0):
    """The ``SliceLayout`` of a tree given by ``parent`` (topological order).

    A fixed-base tree that is nearly a chain (``DENSE_FROM``) gets every
    slice over all joints: the dense tensor. The slices of a floating
    base's ``base_bodies`` bodies (related to every
    joint) make group 0 on their own, slot k for body k; the others are
    grouped by size, largest first. A fixed base's groups are stored side
    by side (``(m, m, count)``, for ``eigen.tridiagonalize`` in lockstep); a
    floating base's slices one after the other, each C-contiguous, in body
    order (their cores are found one by one, ``cores``).
    """
    nb = len(parent)
    members = related_sets(parent)
    if not base_bodies and sum(len(m) ** 2 for m in members) >= DENSE_FROM * nb ** 3:
        # hardly a tree (an arm with two fingers): the dense tensor is the layout
        members = [np.arange(nb, dtype=np.int64)] * nb
    sizes = np.array([len(m) for m in members], dtype=np.int64)
    local = np.full((nb, nb), -1, dtype=np.int64)
    for k, m in enumerate(members):
        local[k, m] = np.arange(len(m))
    keys = [(0 if k < base_bodies else 1, -int(sizes[k])) for k in range(nb)]
    order = sorted(set(keys))
    slice_group = np.array([order.index(key) for key in keys], dtype=np.int64)
    group_size = np.array([-size for _, size in order], dtype=np.int64)
    group_count = np.bincount(slice_group, minlength=len(order)).astype(np.int64)
    group_offset = np.concatenate(([0], np.cumsum(group_size ** 2 * group_count)[:-1])).astype(np.int64)
    slice_slot = np.zeros(nb, dtype=np.int64)
    seen = np.zeros(len(order), dtype=np.int64)
    for k in range(nb):
        slice_slot[k] = seen[slice_group[k]]
        seen[slice_group[k]] += 1
    col = group_count[slice_group]
    row = group_size[slice_group] * col
    start = group_offset[slice_group] + slice_slot
    if base_bodies:
        # a floating base's slices one after the other, in body order, each an
        # m_k x m_k C-contiguous matrix: their norms are found one by one
        # (``bounds.base_slice_norms``, ``cores``)
        col[:] = 1
        row[:] = sizes
        start[:] = np.concatenate(([0], np.cumsum(sizes ** 2)[:-1]))
    total = int(np.sum(group_size ** 2 * group_count))
    dense = len(group_size) == 1 and group_size[0] == nb and not base_bodies
    return SliceLayout(local, start, row, col, group_size, group_count, group_offset,
                       slice_group, slice_slot, total, dense)
