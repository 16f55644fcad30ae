"""k_c(q) = sqrt(sum_k ||Gamma_k(q)||_2^2) at given configurations: what every
part of the K_c search evaluates (docs/math.md, "Coriolis bounds built from
the Christoffel symbols").

``C(q, x) y = sum_k x[k] Gamma_k(q) y`` with ``Gamma_k = Gamma[:, :, k]``, so
by Cauchy-Schwarz over k, ``||C(q, x) y|| <= k_c(q) ||x|| ||y||``.
"""
import numpy as np
from numba import njit

from ..calls import run
from ..algorithms.christoffel import christoffel_symbols
from ..bounds.coriolis_bounds import BOUNDS_FIELDS, gram_matrices, kc_of_reduced
from ..bounds.eigen import lower_triangles_finite, tridiagonalize
from ..model.state import configuration_array, to_all_joints
from ..bounds.terms_kernel import compute_all_terms

_EPS = np.finfo(float).eps


@njit(cache=True, nogil=True)
def config_constant_kernel(gamma, grams):
    """k_c = sqrt(sum_k ||Gamma_k||_2^2) of one sample's Gamma (n, n, n)."""
    n = gamma.shape[0]
    gram_matrices(gamma, grams)
    work = grams[:, :, :n]
    if not lower_triangles_finite(work):
        return np.nan  # too large to square: an overflow, not a norm
    tridiagonalize(work)
    return kc_of_reduced(work, n)


@njit(cache=True, nogil=True)
def _config_constants(data, gamma, out):
    """k_c per sample into out (N,): what the search for K_c evaluates."""
    for s in range(gamma.shape[0]):
        out[s] = config_constant_kernel(gamma[s], data.grams)
    return -1


def config_coriolis_constant(model, q):
    """k_c(q) for q (nq,) or (N, nq): the configuration Coriolis constant."""
    q = configuration_array(model, q)
    batch = q if q.ndim == 2 else q[None]
    values = symbols_coriolis_constant(model, christoffel_symbols(model, batch))
    return values if q.ndim == 2 else values[0]


def kc_at(model, q):
    """k_c(q) at one configuration q (nq,), NaN where it overflows.

    Through the kernel of ``all_terms`` (its bounds at qd = 0, without
    Gamma), called as the node calls it, so that the first K_c interval of a
    new model (``search.CoriolisConstantRefinement``: k_c at one witness)
    compiles nothing the node's first joint state does not run; the dense
    route of ``config_coriolis_constant``, which the search evaluates in
    bulk, compiled only when a search runs. The two agree to rounding
    (``test_coriolis_constant.py``). A mimic-reduced model's k_c is that of its
    reduced Gamma, which only the dense route has.
    """
    if model.reduced:
        return config_coriolis_constant(model, q[None])[0]
    qa = to_all_joints(model, configuration_array(model, q), offset=True)
    qda = to_all_joints(model, np.zeros(model.nv), offset=False)
    nb = model.nb
    outs = (np.empty((nb, nb)), np.empty((nb, nb)), np.empty(len(BOUNDS_FIELDS)), np.empty((0, 0, 0)),
            np.empty(nb))
    if run(compute_all_terms, model, (qa, qda), outs, settings=(True, False)) >= 0:
        return np.nan
    return float(outs[2][BOUNDS_FIELDS.index("kc_config")])


def symbols_coriolis_constant(model, gamma):
    """sqrt(sum_k ||Gamma_k||_2^2) of each tensor of ``gamma`` (N, n, n, n)."""
    values = np.empty(len(gamma))
    # contiguous: a mimic-reduced Gamma comes out of einsum with other
    # strides, and the kernel's entry point is resolved once per layout-blind key
    run(_config_constants, model, (np.ascontiguousarray(gamma),), (values,))
    return values


def value_margin(model, first):
    """Absolute margin added to a computed k_c(c) before it enters an upper
    bound. Every Gamma entry is a sum of O(nb) bilinear terms in S and Ic
    whose sizes the first bound ``first`` dominates, each computed with
    relative error O(nb eps); the eigenvalues of the Gram matrices are
    backward stable (eigen.py, error O(n eps ||Gamma_k||^2)). So
    |k_c computed - k_c| <= c nb eps ``first`` with a small c;
    4096 (nb + 16) eps ``first`` is far above it."""
    return 4096.0 * (model.nb + 16) * _EPS * first
