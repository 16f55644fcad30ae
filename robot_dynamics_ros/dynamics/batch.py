"""Running a compiled kernel over a batch of samples on all cores.

Every kernel loops over a leading sample axis and releases the GIL
(``nogil=True``), so a batch is cut into one contiguous chunk per core and the
chunks run on a thread pool: each thread has its own work array, and a kernel
with a different body does not need a parallel wrapper of its own (numba
cannot cache ``prange`` functions that take other functions as arguments).
"""
from concurrent.futures import ThreadPoolExecutor
import os

import numpy as np

_THREADS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else os.cpu_count() or 1)
# below this many samples the thread hand-off costs more than it saves
_PARALLEL_FROM = 64
_pool = ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="dynamics")


def run_kernel(kernel, model, inputs, out, work_size, model_arrays=True, settings=()):
    """``kernel(*model.arrays, *settings, *inputs, work, *outs)`` over all samples.

    ``inputs`` are (N, ...) arrays; ``out`` is one (N, ...) array or a tuple
    of them (kernels with several results); ``settings`` go to every chunk
    as they are; ``work_size(nb)`` is the length of one work row.
    ``model_arrays=False``: kernels that work on results only (no tree)
    get ``kernel(*settings, *inputs, work, *outs)``.
    """
    leading = (model.arrays if model_arrays else ()) + tuple(settings)
    outs = out if isinstance(out, tuple) else (out,)
    samples = len(outs[0])
    if samples < _PARALLEL_FROM or _THREADS == 1:
        kernel(*leading, *inputs, model.workspace(kernel, work_size), *outs)
        return out
    bounds = np.linspace(0, samples, _THREADS + 1).astype(int)
    futures = [
        _pool.submit(kernel, *leading, *(x[a:b] for x in inputs),
                     np.zeros(work_size(model.nb), dtype=outs[0].dtype), *(y[a:b] for y in outs))
        for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    for future in futures:
        future.result()
    return out
