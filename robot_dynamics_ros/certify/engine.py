"""The distributed engine of the certificate search: Dask distributed (its
local cluster started by ``robot_dynamics_ros.distributed.local_cluster``, as the
fleet replay's).

Chosen over Ray by measurement on this 2-core machine (``bench/bench_engines.py``,
docs/benchmarks.md): a local cluster of 2 workers starts in about 4 s
against 17 s, and the process tree idles at about 260 MB against 770 MB;
Ray's overhead per task is lower (2.7 ms against 9 ms in a batch), but a
unit of the search works for seconds, so either overhead is below 1% of
it. Dask is also a pure-Python wheel. ``--scheduler ADDRESS`` connects to
a running ``dask scheduler`` (workers started with ``dask worker
ADDRESS --nthreads 1``) instead of starting a local cluster.
"""
import os
from pathlib import Path

from dask.distributed import Client

from robot_dynamics_ros.distributed import local_cluster

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
