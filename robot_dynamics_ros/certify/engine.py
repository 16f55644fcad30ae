"""The distributed engine of the certificate search: Dask distributed (its
local cluster started by ``robot_dynamics_ros.cluster.local_cluster``, as the
fleet replay's).

Dask rather than Ray: a unit of the search works for seconds, so either
engine's overhead per task is small beside it, while the start of a local
cluster and the memory its idle processes hold count on a small machine,
and Dask's are the smaller (``bench/bench_engines.py``; docs/benchmarks.md,
"Engines"). Dask is also a pure-Python wheel. ``--scheduler ADDRESS`` connects to
a running ``dask scheduler`` (workers started with ``dask worker
ADDRESS --nthreads 1``) instead of starting a local cluster.
"""
import os
from pathlib import Path

from dask.distributed import Client

from robot_dynamics_ros.cluster import local_cluster

PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def start_client(workers=None, scheduler=None):
    """(Dask client, local cluster or None, number of workers): connected
    to ``scheduler`` when given, else a local cluster of ``workers``
    processes (default: one per core) of one thread each."""
    if scheduler:
        client = Client(scheduler)
        count = len(client.scheduler_info().get("workers", {}))
        return client, None, max(1, count)
    count = workers or os.cpu_count() or 1
    # the workers import this package as the caller does (a source checkout too)
    paths = [PACKAGE_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    cluster = local_cluster(count)
    return Client(cluster), cluster, count
