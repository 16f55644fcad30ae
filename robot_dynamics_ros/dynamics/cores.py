"""The spectral norm of a floating tree's slice of Gamma from a smaller core.

For a joint k of a floating tree, the block of ``Gamma_k`` (``slices``) has
the rows and columns ``A = ancestors(k) + {k}`` (the six base speeds among
them) and ``D = descendants(k)``. Every symbol with an index b in A is
linear in ``S_b``: in Algorithm 2 of Echeandia and Wensing (2021),
"Numerical Methods to Compute the Coriolis Matrix and Christoffel Symbols
for Rigid-Body Systems", eqs. (36)-(40), with e the deepest of a, b and k,
``Gamma[a, b, k] = S_b . v`` for a 6-vector v fixed by a, k and e
(``B(Ic_k, S_k)^T S_a`` for a in A, ``S_k x* (Ic_a S_a) - B(Ic_a, S_a) S_k``
for a in D), and likewise ``Gamma[b, a, k]``. So with ``S_A`` the 6 x |A|
matrix of the world motion subspaces of A and U any |A| x 6 matrix with
orthonormal columns spanning the rows of ``S_A``,

    Gamma_k = diag(U, 1) K diag(U, 1)^T,   K = diag(U, 1)^T Gamma_k diag(U, 1),

and ``||Gamma_k||_2 = ||K||_2`` for the core K of size ``6 + |D|`` instead of
``|A| + |D|`` (a leg joint of a humanoid: 6-11 instead of 12; an arm joint:
6-12 instead of 16). U is ``S_A^T T^T L^-T`` with L the Cholesky factor of
``T S_A S_A^T T^T``, a 6 x 6 sum over A accumulated along the tree; T moves
the reference point of the motion vectors from the world origin to the
base, so that L's conditioning is the robot's own, not the distance the
base has walked. The identity holds to rounding (the symbols are computed
with it), so ``||K||_2`` is ``||Gamma_k||_2`` to about 1e-15 relative
(docs/tree_bounds.md, "Cores of the slices"; ``test_tree_bounds.py``, with
the base 10 km away too, and ``bench/diag_tree_bounds.py`` compare it with
the dense computation). Cost per slice: ``12 |A| m_k`` to make the core,
then ``1.5 c^3`` for its norm (``bounds.core_slice_norms``) instead of
``1.5 m_k^3``, c = 6 + |D|.
"""
import numpy as np
from numba import njit

from .model import BASE_BODIES


@njit(cache=True, nogil=True)
def shifted_spans(model, data):
    """``data.shifted[j]``: ``S_j`` about the base's origin, ``[w; u + w x p]``
    for ``S_j = [w; u]`` and the base at p; ``data.spans[j]``: the sum of
    ``s s^T`` of these over j and its ancestors (the Gram matrix of the
    motion subspaces of A). Parents before children. Cost: 45 n."""
    parent, S, shifted, spans = model.parent, data.S, data.shifted, data.spans
    p = data.pos[BASE_BODIES - 1]
    for j in range(parent.shape[0]):
        s = shifted[j]
        w0, w1, w2 = S[j, 0], S[j, 1], S[j, 2]
        s[0], s[1], s[2] = w0, w1, w2
        s[3] = S[j, 3] + w1 * p[2] - w2 * p[1]
        s[4] = S[j, 4] + w2 * p[0] - w0 * p[2]
        s[5] = S[j, 5] + w0 * p[1] - w1 * p[0]
        span, up = spans[j], parent[j]
        for r in range(6):
            for c in range(6):
                span[r, c] = s[r] * s[c] + (spans[up, r, c] if up >= 0 else 0.0)


@njit(cache=True, nogil=True)
def _basis(model, data, k, basis):
    """``basis`` (count, 6) = (L^-1 T S_A)^T = U for the ancestors of k and
    k (the first count = |A| local coordinates of its block); False when L
    does not exist (``spans[k]`` not positive definite: no floating base)."""
    L = data.factor  # the Cholesky factor, its diagonal as reciprocals
    span = data.spans[k]
    for c in range(6):
        for r in range(c, 6):
            acc = span[r, c]
            for i in range(c):
                acc -= L[r, i] * L[c, i]
            if r == c:
                if not acc > 0.0:
                    return False
                L[c, c] = 1.0 / np.sqrt(acc)
            else:
                L[r, c] = acc * L[c, c]
    local, parent, shifted = model.slice_local[k], model.parent, data.shifted
    a = k
    while a >= 0:
        u = basis[local[a]]
        for r in range(6):  # forward substitution, L u = T S_a
            acc = shifted[a, r]
            for i in range(r):
                acc -= L[r, i] * u[i]
            u[r] = acc * L[r, r]
        a = parent[a]
    return True


@njit(cache=True, nogil=True)
def slice_core(model, data, blocks, k, core):
    """The core K of slice k (module docstring) into ``core`` (its leading
    c x c, C-contiguous); returns c, or -1 when the slice has no core smaller
    than its block (a fixed base). Cost: about 12 |A| m + 36 m for the
    block's m = |A| + |D|."""
    m = model.slice_row[k]  # a floating base's blocks are m x m, C-contiguous
    count = model.slice_local[k, k] + 1  # |A|: ancestors come first in the block
    if count <= 6:
        return -1
    U = data.basis
    if not _basis(model, data, k, U):
        return -1
    d = m - count
    c = 6 + d
    G = blocks[model.slice_start[k]:model.slice_start[k] + m * m].reshape((m, m))
    K = core.reshape(-1)[:c * c].reshape((c, c))
    # every loop from 0 (no index wraparound: LLVM vectorizes them), no views
    top = data.core_rows  # (6, nb): U^T Gamma_k[A, :]
    for r in range(6):
        for j in range(m):
            top[r, j] = 0.0
    for a in range(count):
        for r in range(6):
            x = U[a, r]
            for j in range(m):
                top[r, j] += x * G[a, j]
    for r in range(6):
        for s in range(6):
            K[r, s] = 0.0
        for a in range(count):
            x = top[r, a]
            for s in range(6):
                K[r, s] += x * U[a, s]
        for j in range(d):
            K[r, 6 + j] = top[r, count + j]
    for i in range(d):
        for s in range(6):
            K[6 + i, s] = 0.0
        for a in range(count):
            x = G[count + i, a]
            for s in range(6):
                K[6 + i, s] += x * U[a, s]
        for j in range(d):
            K[6 + i, 6 + j] = G[count + i, count + j]
    return c
