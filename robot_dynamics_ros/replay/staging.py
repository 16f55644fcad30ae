"""Where the replay's outputs are staged and put in place, and how SIGTERM ends a replay.

Nothing is left at an output path unless the replay succeeds: each output is
written under a hidden temporary name beside its final one and moved there at
the end, never over an existing path (two replays to one output: one wins, the
other fails and leaves the winner's files alone). SIGTERM unwinds like
KeyboardInterrupt, except while a staged file is being recorded or the
outputs are moving into place, so nothing partial stays behind.
"""

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional, Sequence


class ReplayError(Exception):
    """Input the replay cannot use; the message says what and where."""


class Terminated(BaseException):
    """SIGTERM arrived: unwind like KeyboardInterrupt (past every `except Exception`),
    so the staged outputs are removed."""


class _Termination:
    """The SIGTERM handler, held off while a staged file exists but is not yet
    recorded (it would be left behind), or while outputs move into place."""

    def __init__(self):
        self.depth = 0
        self.pending = False

    def handler(self, signum, frame):
        if self.depth:
            self.pending = True
        else:
            raise Terminated()

    @contextlib.contextmanager
    def deferred(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth and self.pending:
                self.pending = False
                raise Terminated()


TERMINATION = _Termination()


class StagedOutputs:
    """Each output is written under a hidden temporary name beside it; commit() renames."""

    def __init__(self):
        self.outputs = []  # (temporary path, final path, folder to remove)

    def bag(self, final: Path) -> Path:
        # The bag keeps its final name inside a hidden folder, so its storage
        # file (named after the bag directory) is already named right.
        with TERMINATION.deferred():
            folder = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.absolute().parent))
            self.outputs.append((folder / final.name, final, folder))
        return folder / final.name

    def file(self, final: Path) -> Path:
        with TERMINATION.deferred():
            handle, name = tempfile.mkstemp(prefix=f".{final.name}.partial-", suffix=final.suffix,
                                            dir=final.absolute().parent)
            self.outputs.append((Path(name), final, None))
        os.close(handle)
        # mkstemp makes the file private (0600); the output gets the usual umask mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(name, 0o666 & ~umask)
        return Path(name)

    def commit(self):
        """Move the files first and the bag last (a complete bag means a complete
        replay), each only where nothing exists: a hard link for a file, an
        exclusive mkdir and a rename onto that empty folder for the bag. On a
        failure the outputs moved so far are taken back."""
        with TERMINATION.deferred():
            self._move_into_place()

    def _move_into_place(self):
        done = []
        try:
            for staged, final, folder in sorted(self.outputs, key=lambda o: o[2] is not None):
                if folder is None:
                    os.link(staged, final)
                    done.append(final)
                    os.unlink(staged)
                else:
                    os.mkdir(final)
                    done.append(final)
                    os.rename(staged, final)
        except OSError as error:
            for final in reversed(done):
                if final.is_dir():
                    shutil.rmtree(final, ignore_errors=True)
                else:
                    final.unlink()
            if error.errno == errno.EEXIST:
                raise ReplayError(f"{str(error.filename2 or error.filename)!r} was created by "
                                  "someone else during the replay; not overwriting it") from error
            raise

    def discard(self):
        with TERMINATION.deferred():
            for staged, _, folder in self.outputs:
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
                elif staged.exists():
                    staged.unlink()


def check_output_paths(paths: Sequence[Optional[Path]]):
    """Each output a new, distinct path in an existing folder, before any work."""
    given = [path for path in paths if path is not None]
    seen = {}
    for path in given:
        # lexists: a dangling symlink exists too, and writing through it is refused.
        if os.path.lexists(path):
            raise ReplayError(f"{str(path)!r} exists already; not overwriting it")
        parent = path.absolute().parent
        if not parent.is_dir():
            raise ReplayError(f"cannot write {str(path)!r}: {str(parent)!r} is not a directory")
        key = os.path.realpath(path)
        if key in seen:
            raise ReplayError(f"{str(seen[key])!r} and {str(path)!r} name the same file; "
                              "each output needs its own")
        seen[key] = path
