"""The kernel cache: every kernel the node runs can be cached, the cache is
keyed by the sources and found from any copy of them, and what the install
compiles is all a node's first output needs.

A kernel that cannot be cached (numba: "uses dynamic globals", as when a
compiled function is handed to another as an argument) is compiled again by
every process that runs it: a minute per floating robot.

The fast tests check the locator's rules on folders of their own; the slow
one compiles the chain shape into a copy of the package (as an install does)
and shows that a second copy elsewhere, which finds the first on
``sys.path`` as a checkout finds its install, computes a panda's first
outputs without compiling a single kernel of ours.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from paths import REPO
from robots import example_robot_urdf

from robot_dynamics_ros import dynamics
from robot_dynamics_ros.dynamics import kernel_cache
from robot_dynamics_ros.dynamics.algorithms.christoffel import _christoffel
from robot_dynamics_ros.dynamics.bounds.terms_kernel import compute_all_terms
from robot_dynamics_ros.dynamics.kernel_cache import KernelCacheLocator


@pytest.mark.parametrize("base", ["fixed", "floating"])
def test_the_kernels_can_be_cached(base):
    model = dynamics.load_urdf(dynamics.puma_urdf(), base=base)
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-0.5, 0.5, model.nq), rng.uniform(-1.0, 1.0, model.nv)
    if model.nq > model.nv:
        q[3:7] /= np.linalg.norm(q[3:7])
    dynamics.all_terms(model, q, qd, christoffel=True)
    dynamics.christoffel_symbols(model, q)
    for kernel in (compute_all_terms, _christoffel):
        assert kernel.overloads, f"{kernel.py_func.__name__} was not compiled"
        for signature, compiled in kernel.overloads.items():
            assert not compiled.library.has_dynamic_globals, (kernel.py_func.__name__, signature)


@pytest.mark.parametrize("robot, base", [("puma", "fixed"), ("puma", "floating"), ("tree", "floating")])
@pytest.mark.parametrize("precision", [np.float64, np.float32])
def test_the_type_of_a_model_s_data_is_known_before_it_is_made(robot, base, precision):
    """``records.data_type``, which the demo's compile gives the kernels before
    the records' constructors are compiled, is the type of the data itself."""
    import numba

    from robots import random_urdf
    from robot_dynamics_ros.dynamics.model.records import data_type

    urdf = dynamics.puma_urdf() if robot == "puma" else random_urdf(np.random.default_rng(5), 7, tree=True)
    model = dynamics.load_urdf(urdf, base=base)
    dtype = np.dtype(precision)
    assert data_type(model, dtype) == numba.typeof(model.data(dtype))


def copy_of_the_package(folder: Path) -> Path:
    """The package's sources in ``folder`` (no caches), as an install has them."""
    shutil.copytree(REPO / "robot_dynamics_ros", folder / "robot_dynamics_ros",
                    ignore=shutil.ignore_patterns("__pycache__", "__kernel_cache__", "msg", "srv", "*.so"))
    return folder


def test_the_key_follows_every_source_file_of_dynamics_and_nothing_else(tmp_path):
    sources = copy_of_the_package(tmp_path) / "robot_dynamics_ros" / "dynamics"
    key = kernel_cache.source_key(sources)
    assert key == kernel_cache.source_key(REPO / "robot_dynamics_ros" / "dynamics"), "the same sources, one key"
    callee = sources / "algorithms" / "spatial.py"
    callee.write_text(callee.read_text() + "\n# an edit to a callee\n")
    assert kernel_cache.source_key(sources) != key, "a callee's file is part of every kernel's key"
    (sources / "algorithms" / "notes.txt").write_text("not a source")
    (sources.parent / "node" / "extra.py").write_text("# outside dynamics/")
    assert kernel_cache.source_key(sources) == kernel_cache.source_key(sources)


def test_the_environment_names_the_cache_and_nothing_is_copied_into_it(tmp_path, monkeypatch):
    other = tmp_path / "other" / "robot_dynamics_ros" / "dynamics" / "__kernel_cache__" / "k1"
    other.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "other"))
    monkeypatch.setenv(kernel_cache.ENVIRONMENT, str(tmp_path / "mine"))
    assert kernel_cache.cache_folder("k1") == tmp_path / "mine" / "k1"
    assert not (tmp_path / "mine").exists(), "an empty cache asked for stays empty"


def test_a_missing_folder_starts_as_a_copy_of_another_install_s(tmp_path, monkeypatch):
    baked = tmp_path / "site" / "robot_dynamics_ros" / "dynamics" / "__kernel_cache__" / "k2"
    (baked / "algorithms").mkdir(parents=True)
    (baked / "algorithms" / "crba.crba-40.py311.nbi").write_bytes(b"index")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    target = tmp_path / "user" / "k2"
    kernel_cache.seed(target, "k2")
    assert (target / "algorithms" / "crba.crba-40.py311.nbi").read_bytes() == b"index"
    assert not list(target.parent.glob("*.partial")), "the copy is renamed into place whole"
    (target / "algorithms" / "crba.crba-40.py311.nbi").write_bytes(b"newer")
    kernel_cache.seed(target, "k2")
    assert (target / "algorithms" / "crba.crba-40.py311.nbi").read_bytes() == b"newer", \
        "a folder that exists is never overwritten"
    kernel_cache.seed(tmp_path / "user" / "k3", "k3")
    assert not (tmp_path / "user" / "k3").exists(), "no copy of a key: numba compiles into an empty folder"


def test_a_read_only_install_caches_in_the_user_s_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(kernel_cache.ENVIRONMENT, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(kernel_cache, "_writable", lambda folder: False)
    assert kernel_cache.cache_folder("k4") == tmp_path / "xdg" / "robot_dynamics_ros" / "kernels" / "k4"


def test_the_locator_takes_the_kernels_of_dynamics_only():
    from robot_dynamics_ros.dynamics.algorithms import crba

    locator = crba.crba._cache._impl.locator
    assert isinstance(locator, KernelCacheLocator)
    assert Path(locator.get_cache_path()).relative_to(KernelCacheLocator.folder) == Path("algorithms")

    @numba.njit(cache=True)
    def elsewhere(x):  # a kernel of this test file: numba's own locators
        return x

    assert not isinstance(elsewhere._cache._impl.locator, KernelCacheLocator)


def test_two_saves_of_one_kernel_s_overloads_never_interleave(monkeypatch):
    """numba's save reads the index, takes a free data file name and writes
    both: two at once could take the same name and point one signature at
    the other's code. With the lock, the second starts when the first ends."""
    import tempfile
    import threading
    import time

    from numba.core.caching import IndexDataCacheFile

    spans = []

    def slow_save(cache_file, key, data):
        begin = time.monotonic()
        time.sleep(0.2)
        spans.append((begin, time.monotonic()))

    monkeypatch.setattr(kernel_cache, "_numba_save", slow_save)
    with tempfile.TemporaryDirectory(dir=KernelCacheLocator.folder) as folder:
        files = [IndexDataCacheFile(cache_path=folder, filename_base="kernel-1.py311", source_stamp=0)
                 for _ in range(2)]
        threads = [threading.Thread(target=f.save, args=(("signature", k), b"code")) for k, f in enumerate(files)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    (first_begin, first_end), (second_begin, _) = sorted(spans)
    assert second_begin >= first_end, spans


FIRST_OUTPUTS = """
import sys
import threading
from numba.core import event

compiled = []

class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__module__)
    def on_end(self, ev):
        pass

event.register("numba:compile", Listener())
from robot_dynamics_ros.messages.outputs import compute_first_outputs
from robot_dynamics_ros.served.model import load_description
from robot_dynamics_ros.dynamics.kc import refinement_for
from robot_dynamics_ros.dynamics.kernel_cache import KernelCacheLocator

served = load_description(open(sys.argv[1]).read(), frames=["panda_hand"])
refinement_for(served.model)
compute_first_outputs(served)
ours = sorted({module for module in compiled if module.startswith("robot_dynamics_ros")})
print(KernelCacheLocator.folder)
print(" ".join(ours) or "none")
"""


@pytest.mark.slow
def test_what_an_install_compiled_serves_a_first_output_from_another_copy(tmp_path):
    """An install (copy A) compiles the chain shape; a checkout elsewhere
    (copy B, first on sys.path, A behind it as site-packages is) seeds its
    empty cache from A's and computes everything the node computes before a
    panda's first output without compiling any kernel of ours."""
    install, checkout = copy_of_the_package(tmp_path / "install"), copy_of_the_package(tmp_path / "checkout")
    cache = install / "robot_dynamics_ros" / "dynamics" / "__kernel_cache__"
    env = dict(os.environ, PYTHONPATH=str(install))
    env[kernel_cache.ENVIRONMENT] = str(cache)  # exactly there: nothing copied in from this venv's install
    subprocess.run([sys.executable, "-c", "from robot_dynamics_ros.dynamics import precompile as p; "
                    "p.compile_shapes(p.SHAPES[0][:1])"], cwd=install, env=env, check=True, timeout=900)
    assert list(cache.glob("*/bounds/*.nbc"))
    del env[kernel_cache.ENVIRONMENT]
    # the generated messages come from the installed package (REPO's __init__ extends the path)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), str(install), *sys.path])
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(FIRST_OUTPUTS), example_robot_urdf("panda")],
                         cwd=checkout, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    folder, compiled = run.stdout.split("\n")[-3:-1]
    assert Path(folder).parent == checkout / "robot_dynamics_ros" / "dynamics" / "__kernel_cache__"
    assert compiled == "none", f"compiled at the first output: {compiled}"
