"""One kernel for one sample and for a batch.

Every kernel takes its inputs either as one sample (q of shape (nb,)) or as a
batch (Q of shape (N, nb)), with outputs shaped to match. ``sample_count``
and ``sample`` hide the difference, and numba compiles each case on its
own, so a single call needs no batch axis (no view made in Python for each
array of each call) and a batch no Python loop.

A single call's one-dimensional arrays are typed with any strides
(``calls``), so a batch's rows are handed on typed the same way
(``x[s, ::1]``): the functions a kernel calls on one sample are then
compiled once for both cases, not once per case, and a first start
compiles each once (docs/benchmarks-archive.md, "A lighter cold start").
"""
from numba.extending import overload


def sample_count(Q):
    """1 for a single sample, else the length of the batch."""
    return 1 if Q.ndim == 1 else Q.shape[0]


def sample(x, s, Q):
    """Sample s of ``x``: ``x`` itself when ``Q`` is a single sample; a row
    of a batch's two-dimensional ``x`` typed with any strides, as a single
    call's one-dimensional arrays are."""
    return x if Q.ndim == 1 else x[s]


@overload(sample_count, inline="always")
def _sample_count(Q):
    if Q.ndim == 1:
        return lambda Q: 1
    return lambda Q: Q.shape[0]


@overload(sample, inline="always")
def _sample(x, s, Q):
    if Q.ndim == 1:
        return lambda x, s, Q: x
    if x.ndim == 2:
        return lambda x, s, Q: x[s, ::1]
    return lambda x, s, Q: x[s]
