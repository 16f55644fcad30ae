"""Calling the compiled kernels: each overload resolved once, batches on all cores.

A call through numba's dispatcher types every argument before it runs (a
structref through Python code), where the compiled overload's own entry
point only unboxes them (docs/benchmarks-archive.md, "Calling a compiled
kernel").
So each (kernel, precision, single or batch) is resolved once, through the
dispatcher (which compiles it or loads it from the cache), and its entry
point is called from then on; the hot path binds it to the thread's
``Data`` (``sample_entry``).

Every kernel loops over a leading sample axis and releases the GIL
(``nogil=True``), so a batch is cut into one contiguous chunk per core and
the chunks run on a thread pool, each thread with its own ``Data``.
"""
from concurrent.futures import ThreadPoolExecutor
from functools import partial
import os
import threading

import numba
import numpy as np

from .errors import not_a_model

_THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)
# below this many samples the thread hand-off costs more than it saves
PARALLEL_FROM = 64
_pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="dynamics")
_entries = {}
_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray


def _entry(kernel, args):
    """The entry point of ``kernel``'s overload for these arguments' types,
    its one-dimensional arrays of any strides (so the hot path need not check
    that q is contiguous; a batch's arrays are C-contiguous)."""
    if numba.config.DISABLE_JIT:
        return kernel
    types = [numba.typeof(a) for a in args]
    return kernel.compile(tuple(
        t.copy(layout="A") if isinstance(t, numba.types.Array) and t.ndim == 1 else t
        for t in types))


def _call(kernel, model, settings, inputs, outs):
    first = inputs[0]
    args = (model.data(first.dtype), *settings, *inputs, *outs)
    # a floating base's record is of another type (``kinematics.is_floating``),
    # and so is a chain's (``christoffel.dense_layout``)
    key = (kernel, first.ndim, first.dtype.char, model.floating, model.slice_layout.dense)
    entry = _entries.get(key)
    if entry is None:
        entry = _entries[key] = _entry(kernel, args)
    return entry(*args)


class PerThread(threading.local):
    """What each thread keeps of a model: its ``Data`` per precision, the
    hot path's kernels bound to it (``sample_entry``), and by the tuple of
    frame names, the kernels bound to a ``Data`` with those frames
    (``terms.state_terms`` in ``frames``, ``frames.frame_terms`` in
    ``frame_terms``)."""

    def __init__(self):
        self.data = {}
        self.bound = {}
        self.frames = {}
        self.frame_terms = {}


def sample_entry(kernel, model, q, *arrays):
    """The one way from a public function's hot path to its compiled code:
    ``kernel``'s entry point bound to this thread's float64 data, to call
    with the kernel's arguments after ``data``, when q and the arrays are one
    float64 sample (``is_sample``); None otherwise, and the caller takes the
    general path (``run``), which checks and converts its arguments.

    One function call and one dictionary look-up before the compiled code
    (the entry point is bound on the first call), so that even a small
    model's call is mostly the compiled code's (docs/benchmarks.md, "Single
    samples against Pinocchio and MuJoCo"). The check is ``is_sample``'s,
    written out rather than called, as this is every public function's hot
    path (the two are tested equal, ``test/dynamics/test_calls.py``).
    """
    try:
        shape = model.q_shape
    except AttributeError:
        raise not_a_model(model) from None
    if not (type(q) is _NDARRAY and q.dtype is _F64 and q.shape == shape):
        return None
    shape = model.sample_shape
    for x in arrays:
        if not (type(x) is _NDARRAY and x.dtype is _F64 and x.shape == shape):
            return None
    return model._local.bound.get(kernel) or partial(_bind_and_call, kernel, model)


def is_sample(model, q, qd):
    """True when q is one float64 sample of q's shape and qd one of qd's
    (of any strides), for a model without mimic reduction: what a kernel
    bound to a ``Data`` takes as it is (``sample_entry``, and the paths that
    bind a ``Data`` of their own: ``frame_terms``, ``state_terms``).
    DynamicsError when ``model`` is no ``Model`` (a ``try`` costs nothing
    until it catches). Two arrays, named, and one expression: this is a
    hot path of its own."""
    try:
        shape = model.q_shape
    except AttributeError:
        raise not_a_model(model) from None
    return (type(q) is _NDARRAY and type(qd) is _NDARRAY and q.dtype is _F64 and qd.dtype is _F64
            and q.shape == shape and qd.shape == model.sample_shape)


def _bind_and_call(kernel, model, *args):
    """The first call of ``kernel`` on this thread: its entry point for these
    arguments' types, bound to the thread's data and kept for the next."""
    bound = model._local.bound[kernel] = bind(kernel, model.data(_F64), *args)
    return bound(*args)


def entry_point(kernel, data, *args):
    """``kernel``'s entry point for ``data`` and these arguments' types (one
    float64 sample), to call as ``entry(data, *args)``."""
    return _entry(kernel, (data,) + args)


def bind(kernel, data, *args):
    """``kernel``'s entry point (``entry_point``) bound to ``data``: what
    ``sample_entry`` keeps."""
    return partial(entry_point(kernel, data, *args), data)


def run(kernel, model, inputs, outs, settings=()):
    """``kernel(data, *settings, *inputs, *outs)`` over all samples.

    ``inputs`` and ``outs``: arrays with the same leading sample axis (a batch
    of q has two dimensions, of Gamma four), or one sample (``inputs[0]``
    one-dimensional); ``settings`` go to every chunk as they are. Returns the
    first failed sample that the kernel reported, or -1.
    """
    samples = len(inputs[0]) if inputs[0].ndim >= 2 else 0
    if samples < PARALLEL_FROM or _THREADS == 1:
        return _call(kernel, model, settings, inputs, outs)
    bounds = np.linspace(0, samples, _THREADS + 1).astype(int)
    futures = [(a, _pool.submit(_call, kernel, model, settings, tuple(x[a:b] for x in inputs),
                                tuple(y[a:b] for y in outs)))
               for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    for start, future in futures:
        failed = future.result()
        if failed >= 0:
            return start + failed
    return -1


def in_chunks(function, count):
    """``function(start, stop)`` over ``count`` items, one contiguous chunk
    per core on the pool (a nogil kernel over slices of its arrays)."""
    bounds = np.linspace(0, count, _THREADS + 1).astype(int)
    for future in [_pool.submit(function, a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]:
        future.result()
