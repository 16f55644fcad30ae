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
the dense computation).

The cores are made from the blocks (``slice_core``) when Gamma itself is
wanted, and inside Algorithm 2 (``christoffel_cores``, with the frames
``W_k = S_A U`` of ``core_frames``) when it is not, so that the symbols
over A are never formed. Cost per slice: ``12 |A| m_k`` to make the core
from its block (about ``72 |D|`` inside Algorithm 2), then ``1.5 c^3`` for
its norm (``bounds.core_slice_norms``) instead of ``1.5 m_k^3``, c = 6 + |D|.
"""
import numpy as np
from numba import njit

from ..algorithms.christoffel import free_flyer_symbols
from ..algorithms.coriolis import body_factorization, mat6t_vec
from ..model.model import BASE_ANGULAR, BASE_BODIES
from ..algorithms.spatial import cross_force, dot6, inertia_matrix, mat6_vec


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
def _span_factor(span, L):
    """L (6, 6): the lower Cholesky factor of ``span`` (its upper triangle is
    not written); False when span is not positive definite."""
    for c in range(6):
        for r in range(c, 6):
            acc = span[r, c]
            for i in range(c):
                acc -= L[r, i] * L[c, i]
            if r == c:
                if not acc > 0.0:
                    return False
                L[c, c] = np.sqrt(acc)
            else:
                L[r, c] = acc / L[c, c]
    return True


@njit(cache=True, nogil=True)
def _basis(model, data, k, basis):
    """``basis`` (count, 6) = (L^-1 T S_A)^T = U for the ancestors of k and
    k (the first count = |A| local coordinates of its block); False when L
    does not exist (``spans[k]`` not positive definite: no floating base)."""
    L = data.factor
    if not _span_factor(data.spans[k], L):
        return False
    local, parent, shifted = model.slice_local[k], model.parent, data.shifted
    a = k
    while a >= 0:
        u = basis[local[a]]
        for r in range(6):  # forward substitution, L u = T S_a
            acc = shifted[a, r]
            for i in range(r):
                acc -= L[r, i] * u[i]
            u[r] = acc / L[r, r]
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


@njit(cache=True, nogil=True)
def core_frames(model, data):
    """``data.core_frames[k] = W_k = S_A U = T^-1 L`` (6 x 6) for every slice
    k but the base's: with ``U = (L^-1 T S_A)^T`` and ``L L^T = T S_A S_A^T
    T^T``, ``S_A U = T^-1 L``, so the core's rows over A are ``W_k^T`` times a
    6-vector and U itself (|A| x 6) is never formed. A frame of NaN where L
    does not exist (not a floating base). Parents before children (the
    spans, ``shifted_spans``), then 60 operations per slice."""
    shifted_spans(model, data)
    L, p = data.factor, data.pos[BASE_BODIES - 1]
    for k in range(BASE_BODIES, model.parent.shape[0]):
        W = data.core_frames[k]
        if not _span_factor(data.spans[k], L):
            W[:] = np.nan
            continue
        for c in range(6):
            for r in range(6):
                W[r, c] = L[r, c] if r >= c else 0.0
            # T^-1 [w; u] = [w; u - w x p]
            w0, w1, w2 = W[0, c], W[1, c], W[2, c]
            W[3, c] -= w1 * p[2] - w2 * p[1]
            W[4, c] -= w2 * p[0] - w0 * p[2]
            W[5, c] -= w0 * p[1] - w1 * p[0]


@njit(cache=True, nogil=True, inline="always")
def core_size(model, k):
    """c_k = 6 + |D_k|, the size of slice k's core, and ``6 - |A_k|``, what
    turns a descendant's place in the block into its place in the core."""
    shift = 5 - model.slice_local[k, k]  # |A_k| = local[k, k] + 1
    return model.slice_row[k] + shift, shift


@njit(cache=True, nogil=True, inline="always")
def _frame_products(W, a, b, K, r0, r1, stride):
    """``K[r0 + r * stride] = W[:, r] . a`` and ``K[r1 + r] = W[:, r] . b``
    for r < 6: the products of ``dot6`` in its order, over W's rows, so
    that the six sums of each are independent."""
    a0, a1, a2, a3, a4, a5 = a[0], a[1], a[2], a[3], a[4], a[5]
    b0, b1, b2, b3, b4, b5 = b[0], b[1], b[2], b[3], b[4], b[5]
    for r in range(6):
        K[r0 + r * stride] = (W[0, r] * a0 + W[1, r] * a1 + W[2, r] * a2
                              + W[3, r] * a3 + W[4, r] * a4 + W[5, r] * a5)
        K[r1 + r] = (W[0, r] * b0 + W[1, r] * b1 + W[2, r] * b2
                     + W[3, r] * b3 + W[4, r] * b4 + W[5, r] * b5)


@njit(cache=True, nogil=True)
def christoffel_cores(model, data, blocks):
    """What the bounds need of Gamma for a floating tree, into ``blocks``:
    the base's three angular slices as blocks (``christoffel.christoffel_tree``'s
    layout; the linear ones vanish identically, docs/tree_bounds.md, and are
    not read: only ``free_flyer_symbols`` writes there), every other
    slice k as its core K_k (module docstring), c_k x c_k C-contiguous at
    the start of its block (``core_size``). With ``W_k`` of ``core_frames``,
    D_k the descendants of k and d, e in D_k at ``6 + ...`` in the core:

        K_k[:6, :6] = W_k^T B_k W_k,    K_k[:6, d] = W_k^T f1(d, k),    K_k[d, :6] = W_k^T f3(d, k),
        K_k[d, e] = Gamma[d, e, k],

    from Algorithm 2 of Echeandia and Wensing (2021), eqs. (36)-(40), in
    ``christoffel_tree``'s order (children first, for k then its ancestors j,
    ``B = B(Ic_k, S_k)``, ``f1 = B S_j``, ``f2 = B^T S_j``, ``f3 = S_j x* Ic_k S_k - f1``):
    ``Gamma[a, b, k] = S_a . B_k S_b`` for a, b in A_k, ``Gamma[a, d, k] =
    S_a . f1(d, k)`` and ``Gamma[d, a, k] = S_a . f3(d, k)``, so the core's
    rows and columns over A are W^T times those 6-vectors, and the symbols
    with an index in A are never formed: of the triples (i, j, k) on one path,
    only those with i a strict ancestor of j are visited, for the slice of
    i (``Gamma[j, k, i] = S_i . f2``, ``Gamma[k, j, i] = S_i . f3``). The
    same numbers as the cores of ``slice_core`` to rounding. Cost: the
    triples' 2 products of 6 (against 3 and 6 stores in
    ``christoffel_tree``), 72 per pair (k, j) and 432 per slice for the
    frames' products: O(n d^2) for depth d.
    """
    parent, S = model.parent, data.S
    local, start, row = model.slice_local, model.slice_start, model.slice_row
    B, I6, F, f1, f2, f3 = data.B, data.I6, data.h, data.f1, data.f2, data.f3
    BW, frames = data.factor, data.core_frames
    nb = parent.shape[0]
    core_frames(model, data)
    blocks[:] = 0
    for k in range(nb - 1, -1, -1):
        if not model.holds_mass[k]:
            continue  # Ic_k = 0: B, f1, f2, f3 and all they write vanish (``bounds.massive_speeds``)
        inertia_matrix(data.Ic[k], I6)
        body_factorization(I6, S[k], F, B)
        if k >= BASE_BODIES:
            c, _ = core_size(model, k)
            K, W = blocks[start[k]:start[k] + c * c], frames[k]
            for r in range(6):
                b0, b1, b2, b3, b4, b5 = B[r, 0], B[r, 1], B[r, 2], B[r, 3], B[r, 4], B[r, 5]
                for s in range(6):
                    BW[r, s] = (((((b0 * W[0, s] + b1 * W[1, s]) + b2 * W[2, s]) + b3 * W[3, s])
                                 + b4 * W[4, s]) + b5 * W[5, s])
            for r in range(6):
                w0, w1, w2, w3, w4, w5 = W[0, r], W[1, r], W[2, r], W[3, r], W[4, r], W[5, r]
                for s in range(6):
                    K[r * c + s] = (((((w0 * BW[0, s] + w1 * BW[1, s]) + w2 * BW[2, s]) + w3 * BW[3, s])
                                     + w4 * BW[4, s]) + w5 * BW[5, s])
        j = k
        while j >= 0:
            if j < BASE_ANGULAR and not BASE_ANGULAR <= k < BASE_BODIES:
                break  # only linear slices above: nothing the bounds read
            mat6_vec(B, S[j], f1)
            mat6t_vec(B, S[j], f2)
            cross_force(S[j], F, f3)
            for r in range(6):
                f3[r] -= f1[r]
            if j >= BASE_BODIES:
                if j != k:
                    c, shift = core_size(model, j)
                    K, W, d = blocks[start[j]:start[j] + c * c], frames[j], local[j, k] + shift
                    _frame_products(W, f1, f3, K, r0=d, r1=d * c, stride=c)
                i = parent[j]
                while i >= BASE_ANGULAR:
                    if i >= BASE_BODIES:
                        c, shift = core_size(model, i)
                        a, b = local[i, j] + shift, local[i, k] + shift
                    else:
                        c, a, b = row[i], local[i, j], local[i, k]
                    blocks[start[i] + a * c + b] = dot6(S[i], f2)  # Gamma[j, k, i]
                    blocks[start[i] + b * c + a] = dot6(S[i], f3)  # Gamma[k, j, i]
                    i = parent[i]
            else:
                # the base's bodies, a chain: its slices as blocks, as christoffel_tree
                i = j
                while i >= 0:
                    ij, ik, di = local[i, j], local[i, k], local[k, i]  # di = local[j, i]
                    if BASE_ANGULAR <= k < BASE_BODIES:
                        n, kj = row[k], local[k, j]
                        blocks[start[k] + di * n + kj] = dot6(S[i], f1)  # Gamma[i, j, k]
                        blocks[start[k] + kj * n + di] = dot6(S[i], f2)  # Gamma[j, i, k]
                    if j >= BASE_ANGULAR:
                        n, jk = row[j], local[j, k]
                        blocks[start[j] + di * n + jk] = dot6(S[i], f1)  # Gamma[i, k, j]
                        blocks[start[j] + jk * n + di] = dot6(S[i], f3)  # Gamma[k, i, j]
                    if i >= BASE_ANGULAR:
                        n = row[i]
                        blocks[start[i] + ij * n + ik] = dot6(S[i], f2)  # Gamma[j, k, i]
                        blocks[start[i] + ik * n + ij] = dot6(S[i], f3)  # Gamma[k, j, i]
                    i = parent[i]
            j = parent[j]
    free_flyer_symbols(model, data, blocks)
