"""Dask distributed against Ray for the K_c certificate search (issue 20):
start-up of a local cluster, overhead per task, memory.

Each engine starts a local cluster of ``--workers`` worker processes (one
thread each), runs ``--tasks`` empty tasks one after another (round trip)
and then all at once (throughput), and reports the resident memory of the
whole process tree (this process, scheduler, workers) with the cluster idle.

    python bench/bench_engines.py dask [--workers 2] [--tasks 2000]
    python bench/bench_engines.py ray  [--workers 2] [--tasks 2000]

Ray is not a dependency of the package: it was measured from a venv of its
own (``pip install ray==2.60.0``). Figures: docs/benchmarks.md.
"""
import argparse
import time

import psutil


def tree_rss_mb():
    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total / 1e6


def noop(x):
    return x


def run_dask(workers, tasks):
    from dask.distributed import Client, LocalCluster
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.submit(noop, 0).result()
    startup = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(tasks):
        client.submit(noop, i, pure=False).result()
    serial = (time.perf_counter() - start) / tasks
    start = time.perf_counter()
    client.gather(client.map(noop, range(tasks), pure=False))
    batch = (time.perf_counter() - start) / tasks
    memory = tree_rss_mb()
    client.close()
    cluster.close()
    return startup, serial, batch, memory


def run_ray(workers, tasks):
    import ray
    start = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(noop)
    ray.get(remote.remote(0))
    startup = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(tasks):
        ray.get(remote.remote(i))
    serial = (time.perf_counter() - start) / tasks
    start = time.perf_counter()
    ray.get([remote.remote(i) for i in range(tasks)])
    batch = (time.perf_counter() - start) / tasks
    memory = tree_rss_mb()
    ray.shutdown()
    return startup, serial, batch, memory


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("engine", choices=("dask", "ray"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=2000)
    options = parser.parse_args()
    run = run_dask if options.engine == "dask" else run_ray
    startup, serial, batch, memory = run(options.workers, options.tasks)
    print(f"{options.engine}: {options.workers} workers, start-up {startup:.2f} s, "
          f"per task {serial * 1e3:.2f} ms round trip, {batch * 1e3:.3f} ms in a batch of {options.tasks}, "
          f"memory {memory:.0f} MB (process tree, idle)")


if __name__ == "__main__":
    main()
