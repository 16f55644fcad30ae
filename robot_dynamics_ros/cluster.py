"""The distributed engine: a Dask client on a local cluster or on an existing scheduler.

One place that starts Dask, for every use of it in the package (the fleet
replay; the K_c certificate search can share it): a ``LocalCluster`` of
worker processes, one thread each (the numerics release the GIL, but
rosbags' reading and writing is Python), or ``Client(address)`` for a
cluster that someone else runs.
"""

import contextlib
import logging
import os
from typing import Iterator, Optional


@contextlib.contextmanager
def client(scheduler: Optional[str] = None, workers: Optional[int] = None) -> Iterator["distributed.Client"]:  # noqa: F821
    """A ``distributed.Client``: on ``scheduler`` (an address such as
    ``tcp://host:8786``) when given, else on a local cluster of ``workers``
    processes (default: one per core), closed on exit."""
    from distributed import Client

    if scheduler:
        with Client(scheduler) as connected:
            yield connected
        return
    with local_cluster(workers or os.cpu_count() or 1) as cluster, Client(cluster) as local:
        yield local


def local_cluster(workers: int) -> "distributed.LocalCluster":  # noqa: F821
    """A LocalCluster of ``workers`` processes of one thread each, quiet when
    healthy: no log lines below ERROR, and its HTTP server (and dashboard,
    when bokeh is installed) on a free port: with ``dashboard_address=None``
    the scheduler still takes port 8787 and warns when another cluster (a
    second fleet, a certificate search) holds it. The workers' statistical
    profiler is off: it interrupts the worker thread many times a second to
    sample its stack for the dashboard, time the search's units lose, and
    nothing here reads those profiles (docs/benchmarks-archive.md, "K_c
    certificates (archive)")."""
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.profile.enabled": False}):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                            silence_logs=logging.ERROR)
