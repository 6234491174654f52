"""Atomic file writes: a reader never sees half a file, a crash never leaves one."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tfdash.errors import TfdashError


def current_umask() -> int:
    """The process umask (read from /proc where it can be, so no other thread sees it change)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable_dir(directory, what: str) -> None:
    """`directory` is, or can be made, a writable folder: checked before a run, so that nothing
    measured is lost to a typo at the end of it."""
    d = Path(directory).expanduser()
    if d.exists() and not d.is_dir():
        raise TfdashError(f"{what} {d}: exists and is not a directory")
    parent = next((p for p in (d, *d.parents) if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise TfdashError(f"{what} {d}: cannot write there ({parent} is not a writable directory)")


def is_stream(path) -> bool:
    """`path` is (or links to) a device, pipe or terminal (/dev/stdout, /dev/null, a FIFO): written
    in place, since there is no file to replace."""
    try:
        mode = os.stat(Path(path).expanduser()).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable_file(path, what: str) -> None:
    """`path` can be written as a file (checked before a run, so nothing measured is lost to it);
    None (an output not asked for) passes."""
    if path is None:
        return
    f = Path(path).expanduser()
    if is_stream(f):
        if not os.access(f, os.W_OK):
            raise TfdashError(f"{what} {f}: cannot write there (permission denied)")
        return
    if f.is_dir():
        raise TfdashError(f"{what} {f}: is a directory; give a file name")
    if str(path).endswith(("/", os.sep)):  # Path drops the slash: the file would take the folder's name
        raise TfdashError(f"{what} {path}: names a folder (it ends in /); give a file name")
    parent = next((p for p in (f.parent, *f.parent.parents) if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise TfdashError(f"{what} {f}: cannot write there ({parent} is not a writable directory)")


def fresh_directory(directory) -> Path:
    """A new empty folder beside `directory`, to write a set of files into before they are moved
    into place together (see `move_into`). The caller removes it on failure."""
    d = Path(directory).expanduser()
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
        os.chmod(tmp, 0o777 & ~current_umask())
    except OSError as e:
        raise TfdashError(f"cannot write {d}: {e.strerror or e}") from None
    return tmp


def move_into(tmp: Path, directory) -> None:
    """Move every file of `tmp` into `directory` (renamed whole when it does not exist yet)."""
    d = Path(directory).expanduser()
    try:
        if not d.exists():
            os.rename(tmp, d)
            return
        if not d.is_dir():
            raise TfdashError(f"cannot write {d}: not a directory")
        for f in sorted(tmp.iterdir()):
            os.replace(f, d / f.name)
        tmp.rmdir()
    except OSError as e:
        raise TfdashError(f"cannot write {d}: {e.strerror or e}") from None


@contextmanager
def atomic_writer(path):
    """`write(text)` into a file that appears at `path` whole when the block ends, or not at all
    if it raises: written to a temporary beside it, then renamed. Long outputs are written as they
    are made (a sweep of thousands of points), never held; only the file's own write errors
    become "cannot write PATH" (an error of the block's other work stays what it is). A leading
    `~` is the user's home, as the checks before the work read it (`--json=~/x` reaches us unexpanded
    by the shell). A symlink keeps pointing where it did, at the new file; a device, pipe or
    terminal (`--json /dev/stdout`) is written in place, never replaced by a file."""
    path = Path(path).expanduser()
    if is_stream(path):
        with _stream_writer(path) as write:
            yield write
        return
    target = Path(os.path.realpath(path))  # a symlink's file, so the link stays one
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as e:
        raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:

            def write(text: str) -> None:
                try:
                    f.write(text)
                except OSError as e:
                    raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None

            yield write
            try:
                os.fchmod(f.fileno(), 0o666 & ~current_umask())  # mkstemp makes 0600; files follow the umask
                f.flush()
                os.fsync(f.fileno())
            except OSError as e:
                raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
        try:
            os.replace(tmp, target)
        except OSError as e:
            raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextmanager
def _stream_writer(path: Path):
    try:
        f = open(path, "w", encoding="utf-8")
    except OSError as e:
        raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None

    def write(text: str) -> None:
        try:
            f.write(text)
        except OSError as e:
            raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None

    try:
        yield write
        try:
            f.flush()
        except OSError as e:
            raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        try:
            f.close()
        except OSError:
            pass  # its error, if any, was the flush's


def write_text_atomic(path, text: str) -> Path:
    with atomic_writer(path) as write:
        write(text)
    return Path(path).expanduser()


def write_json_atomic(path, payload) -> Path:
    return write_text_atomic(path, json.dumps(payload, indent=1, sort_keys=False) + "\n")
