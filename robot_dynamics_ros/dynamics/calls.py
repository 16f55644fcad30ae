"""Calling the compiled kernels: each overload resolved once, batches on all cores.

A call through numba's dispatcher types every argument before it runs
(about 0.5 us for a kernel's four arguments here); the compiled overload's
own entry point only unboxes them. So each (kernel, precision, single or
batch) is resolved once, through the dispatcher (which compiles or loads it
from the cache), and its entry point is called from then on.

Every kernel loops over a leading sample axis and releases the GIL
(``nogil=True``), so a batch is cut into one contiguous chunk per core and
the chunks run on a thread pool, each thread with its own ``Data``.
"""
from concurrent.futures import ThreadPoolExecutor
from functools import partial
import os

import numba
import numpy as np

_THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)
# below this many samples the thread hand-off costs more than it saves
_PARALLEL_FROM = 64
_pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="dynamics")
_entries = {}
_F64 = np.dtype(np.float64)


def _entry(kernel, args):
    """The entry point of ``kernel``'s overload for these arguments' types."""
    if numba.config.DISABLE_JIT:
        return kernel
    return kernel.compile(tuple(numba.typeof(a) for a in args))


def _call(kernel, model, settings, inputs, outs):
    first = inputs[0]
    args = (model.record(first.dtype), model.data(first.dtype), *settings, *inputs, *outs)
    key = (kernel, first.ndim, first.dtype.char)
    entry = _entries.get(key)
    if entry is None:
        entry = _entries[key] = _entry(kernel, args)
    return entry(*args)


def single(kernel, model, args):
    """``kernel(model record, data, *args)`` for one float64 sample: the hot path.

    The kernel's entry point is bound to this thread's record and data once
    per model, so a call costs two look-ups before the compiled code: what
    keeps a 9-joint mass matrix within 2x of Pinocchio's C++ call. The
    caller has checked that ``args`` are float64, C-contiguous and of the
    model's shapes (``state.is_sample``).
    """
    try:
        bound = model._local.bound[kernel]
    except (AttributeError, KeyError):
        local = model._local.__dict__
        leading = (model.record(_F64), model.data(_F64))
        bound = local.setdefault("bound", {})[kernel] = partial(
            _entry(kernel, leading + args), *leading)
    return bound(*args)


def run(kernel, model, inputs, outs, settings=()):
    """``kernel(model record, data, *settings, *inputs, *outs)`` over all samples.

    ``inputs`` and ``outs``: arrays with the same leading sample axis, or
    single samples (``inputs[0]`` one-dimensional: a batch of q has two dimensions,
    of Gamma four); ``settings`` go to every
    chunk as they are. Returns the first failed sample that the kernel
    reported, or -1.
    """
    samples = len(inputs[0]) if inputs[0].ndim >= 2 else 0
    if samples < _PARALLEL_FROM or _THREADS == 1:
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
