"""Where numba keeps the compiled kernels of this package, so that a start
finds them wherever the package is installed.

numba's own cache (``@njit(cache=True)``) sits beside each source file, or
under ``NUMBA_CACHE_DIR`` in a folder named after the source's absolute path,
and it is stale only when the kernel's own file changes. Both miss what a
deployment needs: an install compiles the kernels once (``precompile``) and
every later process, in whatever folder the package now lives, should load
them; and a change to a function a kernel calls, in another file, must
compile the kernel again. So the kernels of ``dynamics`` are cached by this
locator, registered with numba before any kernel is defined (this package's
``__init__`` imports this module first):

- the folder is ``<root>/<key>/<module's folder below dynamics>``, where
  ``key`` hashes the contents of every source file of ``dynamics``: a change
  anywhere in it starts a new, empty folder, and the same sources find the
  same folder from any path;
- ``root`` is ``$ROBOT_DYNAMICS_KERNEL_CACHE`` when set (where a container
  image bakes its cache; an empty one for a test or a benchmark), else
  ``__kernel_cache__`` inside this package when the user may write there (a
  venv, a colcon install, a checkout), else ``robot_dynamics_ros/kernels``
  in the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``: a
  read-only install under ``/opt`` or in an image);
- in the last two, a folder that does not exist yet starts as a copy of the
  same key's kernels in another copy of the package on ``sys.path``: the
  read-only install's, the installed copy that a checkout shadows, or the
  last install's when the install compiles again.

numba itself still checks, per kernel, its Python and numba versions, the
source file's content and the CPU it was compiled for, and compiles again on
any mismatch.

numba saves a kernel's new overload by reading the kernel's index, taking
the first free data file name, writing the index and then the data; two
processes saving two overloads of one kernel at once (the install's two
compiling processes, the test workers) can both take the same name, and the
index then points one signature at the other's machine code. ``register``
makes that sequence exclusive across processes for these kernels (an
``flock`` on a lock file beside the index).
"""

import fcntl
import hashlib
import os
import shutil
import sys
from pathlib import Path

from numba.core.caching import CacheImpl, IndexDataCacheFile, _CacheLocator, _SourceFileBackedLocatorMixin

DYNAMICS = Path(__file__).resolve().parent
ENVIRONMENT = "ROBOT_DYNAMICS_KERNEL_CACHE"
INSTALLED = DYNAMICS / "__kernel_cache__"


def source_key(folder: Path = DYNAMICS) -> str:
    """16 hex digits of the SHA-256 of every ``.py`` file below ``folder``,
    by relative path and content."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    """True if ``folder``, or the nearest folder above it that exists, may be
    written by this user."""
    while not folder.exists():
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def user_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "robot_dynamics_ros" / "kernels"


def compiled_copies(key: str):
    """The folders of this ``key`` that other copies of the package on
    ``sys.path`` hold (an install's, seen from a checkout that shadows it)."""
    for entry in sys.path:
        folder = Path(entry or ".") / "robot_dynamics_ros" / "dynamics" / "__kernel_cache__" / key
        if folder.is_dir():
            yield folder


def seed(folder: Path, key: str) -> None:
    """Fill a missing ``folder`` with a copy of another install's kernels of
    ``key``, if there is one: copied to a temporary name and renamed, so that
    a process starting meanwhile sees all of the copy or none of it."""
    if folder.exists():
        return
    source = next((copy for copy in compiled_copies(key) if copy.resolve() != folder.resolve()), None)
    if source is None:
        return
    partial = folder.with_name(f"{key}.{os.getpid()}.partial")
    try:
        shutil.copytree(source, partial)
        partial.rename(folder)
    except OSError:  # another process renamed its copy first, or no room: compile
        shutil.rmtree(partial, ignore_errors=True)


def cache_folder(key: str) -> Path:
    """The folder of this source ``key``'s kernels (see the module's docstring)."""
    if os.environ.get(ENVIRONMENT):
        return Path(os.environ[ENVIRONMENT]) / key  # as the user made it: no copies
    folder = INSTALLED / key if _writable(INSTALLED) else user_root() / key
    seed(folder, key)
    return folder


class KernelCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """numba's locator for the kernels of ``dynamics`` (the module's docstring)."""

    folder = None  # cache_folder(source_key()), found at the first kernel

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        relative = Path(py_file).resolve().parent.relative_to(DYNAMICS)
        self._cache_path = str(KernelCacheLocator.folder.joinpath(relative))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(DYNAMICS):
            return None  # numba's own locators cache everything else
        if cls.folder is None:
            cls.folder = cache_folder(source_key())
        return super().from_function(py_func, py_file)


_numba_save = IndexDataCacheFile.save


def _exclusive_save(cache_file, key, data):
    """numba's ``IndexDataCacheFile.save``, one process at a time per kernel
    for the kernels of this package (the module's docstring)."""
    folder = KernelCacheLocator.folder
    if folder is None or not Path(cache_file._cache_path).is_relative_to(folder):
        return _numba_save(cache_file, key, data)
    with open(os.path.join(cache_file._cache_path, cache_file._index_name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _numba_save(cache_file, key, data)


def register():
    """Put the locator first in numba's list, and make its saves exclusive (once)."""
    if KernelCacheLocator not in CacheImpl._locator_classes:
        CacheImpl._locator_classes.insert(0, KernelCacheLocator)
        IndexDataCacheFile.save = _exclusive_save
