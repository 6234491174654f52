"""Atomic file writes: a reader never sees half a file, a crash never leaves one."""

from __future__ import annotations

import errno
import fcntl
import gzip
import json
import os
import re
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tfdash.cache import expand_home
from tfdash.errors import TfdashError
from tfdash.pathstat import check_name_length, why_no_folder


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


def _can_create_in(parent: Path) -> bool:
    """Whether a file or folder can be made in `parent`, tried rather than read from its permission
    bits, which say yes to root on /proc and on a read-only mount, where the write at the end of a run
    then fails."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".tfdash-probe-", dir=parent))
    except OSError:
        return False
    return True


def check_writable_dir(directory, what: str, temp_beside: bool = False) -> None:
    """`directory` is, or can be made, a writable folder: checked before a run, so that nothing
    measured is lost to a typo at the end of it. Asked through os.path, which never raises: a path
    inside a folder that cannot be searched (chmod 000) reads as absent, and that folder, where no
    file can be made, is the one named, where Path.exists raised PermissionError. A leading ~user
    with no home is a TfdashError naming `what`, where Path.expanduser raised RuntimeError. `temp_beside`:
    the folder is first written as a temporary one beside it (--export), whose longer name must fit too."""
    d = Path(expand_home(str(directory), what))
    if os.path.exists(d) and not os.path.isdir(d):
        raise TfdashError(f"{what} {d}: exists and is not a directory")
    parent = next((p for p in (d, *d.parents) if os.path.exists(p)), None)
    if parent is None or not os.path.isdir(parent) or not _can_create_in(parent):
        raise TfdashError(f"{what} {d}: cannot write there ({parent} is not a writable directory)")
    check_name_length(d, what, temp=temp_beside)


def missing_folders(directory) -> list[Path]:
    """`directory` and those of its parents that do not exist yet, nearest first: asked before a write
    that makes them, so that the line that reports the write can say so (`created_note`), and a typo
    in a folder's name is seen rather than silently made."""
    d = Path(directory).expanduser()
    # os.path.exists never raises: a folder it cannot stat, no write gets into either
    return [p for p in (d, *d.parents) if not os.path.exists(p)]


def missing_folders_of_file(path) -> list[Path]:
    """`missing_folders` of the folder that writing the file `path` (`atomic_writer`) makes: a symlink's
    file's folder (the write follows the link), and a `..` taken as the write takes it (`new/../x`
    is ./x, no folder `new`); none for a device, pipe or descriptor, written in place."""
    p = Path(path).expanduser()
    if own_fd(p) is not None or is_stream(p):
        return []
    if os.path.islink(p) or ".." in p.parts:  # as atomic_writer writes it: the real path's folder
        return missing_folders(Path(os.path.realpath(p)).parent)
    return missing_folders(p.parent)


def created_note(missing: list[Path]) -> str:
    """" (its folder X was created)", X the nearest of `missing_folders`, or "" when none was missing."""
    return f" (its folder {missing[0]} was created)" if missing else ""


def wrote_line(path, missing: list[Path], replaced: bool = False) -> str:
    """"# wrote PATH", and `created_note(missing)`: the line a command prints once its OUT file is written
    (diff's --json/--markdown, analyze's, bench's and counters' --json), `missing` asked of the file's
    folder before the write made it, `replaced` (`replaces_file`) whether a file was there, so that a
    report written over another one (a `--markdown` given the `--json` file's name) is said, not silent.
    PATH as the write read it (a leading ~ expanded), its control characters shown rather than sent to
    the terminal."""
    from tfdash.textsafe import visible

    was = " (replacing the file there)" if replaced else ""
    return visible(f"# wrote {Path(path).expanduser()}{created_note(missing)}{was}")


def replaces_file(path) -> bool:
    """Whether writing the file `path` replaces a file with something in it: asked before the write,
    for `wrote_line`. A device, pipe or descriptor (/dev/stdout) is written in place, not replaced."""
    p = Path(path).expanduser()
    if own_fd(p) is not None or is_stream(p):
        return False
    try:
        return p.is_file() and p.stat().st_size > 0
    except OSError:
        return False


# a descriptor of this process named as a path: /dev/stdout leads to /proc/self/fd/1
_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|(\d+))/fd)/(\d+)")


def own_fd(path) -> int | None:
    """The descriptor of this process that `path` names, through its links (/dev/stdout, /dev/fd/1,
    /proc/self/fd/1), or None. Written through it, not reopened: a `> out.txt` redirection keeps
    the file the shell opened (and what was printed to it), at its offset, and `>>` keeps appending."""
    p = os.path.abspath(Path(path).expanduser())
    for _ in range(40):  # the kernel's own limit on links followed
        m = _FD_PATH.fullmatch(p)
        if m:
            return int(m.group(2)) if m.group(1) in (None, str(os.getpid())) else None
        try:
            p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
        except OSError:  # not a link (or not one that can be read): a path of its own
            return None
    return None


def table_stream(json_path):
    """Where a command prints its table: stderr where `--json` goes to this process's stdout
    (/dev/stdout), so stdout is the JSON alone, for a pipe into jq; else stdout."""
    return sys.stderr if json_path and own_fd(json_path) == 1 else sys.stdout


def out_arg(value: str) -> str:
    """An OUT argument's type (analyze's, bench's and counters' --json): `-` is stdout, as `diff --json -`
    takes it and as a pipe into jq expects; it wrote a file named `-` in the working directory."""
    from tfdash.argparsing import named

    return "/dev/stdout" if value == "-" else named(value)


def is_stream(path) -> bool:
    """`path` is (or links to) a device, pipe or terminal (/dev/null, a FIFO), or one of this
    process's descriptors (/dev/stdout): written in place, since there is no file to replace."""
    if own_fd(path) is not None:
        return True
    try:
        mode = os.stat(Path(path).expanduser()).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def check_writable_file(path, what: str) -> None:
    """`path` can be written as a file (checked before a run, so nothing measured is lost to it);
    None (an output not asked for) passes. Asked through os.path, as `check_writable_dir` is, so
    a file in a folder that cannot be searched is refused by that folder's name, not a traceback."""
    if path is None:
        return
    f = Path(path).expanduser()
    fd = own_fd(f)
    if fd is not None:
        try:
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
        except OSError:
            raise TfdashError(f"{what} {f}: cannot write there (descriptor {fd} is not open)") from None
        if not writable:
            raise TfdashError(f"{what} {f}: cannot write there (descriptor {fd} is open for reading only)")
        return
    if is_stream(f):
        if not os.access(f, os.W_OK):
            raise TfdashError(f"{what} {f}: cannot write there (permission denied)")
        return
    if os.path.islink(f):  # the file it names is the one written (atomic_writer): checked there
        try:
            os.stat(f)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise TfdashError(f"{what} {f}: cannot write there (a loop of symlinks)") from None
    target = Path(os.path.realpath(f)) if os.path.islink(f) else f
    if os.path.isdir(target):
        raise TfdashError(f"{what} {f}: is a directory; give a file name")
    if str(path).endswith(("/", os.sep)):  # Path drops the slash: the file would take the folder's name
        raise TfdashError(f"{what} {path}: names a folder (it ends in /); give a file name")
    parent = next((p for p in (target.parent, *target.parent.parents) if os.path.exists(p)), None)
    if parent is None or not os.path.isdir(parent) or not _can_create_in(parent):
        raise TfdashError(f"{what} {f}: cannot write there ({parent} is not a writable directory)")
    check_name_length(target, what, f)


def check_not_an_input(path, what: str, inputs: dict[str, object]) -> None:
    """`path`, an output, is none of the files the command reads (`inputs`: each file by what it is,
    "snapshot B"): a report written over its own snapshot replaced the snapshot, which was lost and
    then refused as "not a tfdash snapshot". The same file through a link or another spelling is the
    same file; a device, pipe or descriptor (`/dev/stdout`) is written in place and replaces nothing."""
    if path is None or own_fd(path) is not None or is_stream(path):
        return
    out = Path(path).expanduser()
    for role, src in inputs.items():
        if src is None:
            continue
        inp = Path(src).expanduser()
        try:
            same = os.path.samefile(out, inp)
        except OSError:  # one of them is not there (or cannot be looked at): compare where they lead
            same = os.path.realpath(out) == os.path.realpath(inp)
        if same:
            raise TfdashError(f"{what} {out}: is {role}, which this command reads; writing there would "
                              f"replace it: give another file name")


_SNAPSHOT_HEAD = re.compile(rb'\s*\{\s*"schema"\s*:\s*"tfdash\.snapshot"')  # how write_snapshot opens a file


def check_not_in_ckpt(path, what: str, ckpt) -> None:
    """`path`, an output, is no file of the `ckpt` folder the command reads: `--save D/config.json`
    (or a report's `--json D/config.json`) replaced the checkpoint's config with a snapshot, and the
    checkpoint no longer loaded."""
    if path is None or ckpt is None or own_fd(path) is not None or is_stream(path):
        return
    d = Path(ckpt).expanduser()
    if not os.path.isdir(d):
        return
    try:
        files = [p for p in d.iterdir() if p.is_file()]
    except OSError:  # searched but not listed (mode 311: analyze reads config.json by name): the OUT's own name
        out = Path(path).expanduser()
        files = [d / n for n in {out.name, Path(os.path.realpath(out)).name} if (d / n).is_file()]
    check_not_an_input(path, what, {f"the checkpoint's {p.name}": p for p in files})


def check_not_a_snapshot(path, what: str, ckpt=None) -> None:
    """`path`, a report's OUT file (a diff, an analysis, a bench's or counters' JSON), is not a run's
    snapshot, nor an export's Chrome trace or kernel CSV: one written over it replaced the run's. A misplaced flag does it: `diff --markdown old.json
    new.json extra.json` took old.json as its OUT. Told by the file's head, where a snapshot names its
    schema; a device, pipe or descriptor is never read. Nor is it a file of the `ckpt` folder the
    command reads (`--json D/config.json` replaced the checkpoint's config)."""
    if path is None or own_fd(path) is not None or is_stream(path):
        return
    check_not_in_ckpt(path, what, ckpt)
    from tfdash.profiling.export_files import export_kind, file_head

    try:
        head = file_head(path)  # a .json.gz snapshot's, uncompressed
    except OSError:  # not there (or not readable): nothing of a run's to lose
        return

    kind = "snapshot" if _SNAPSHOT_HEAD.match(head) else export_kind(head.decode("utf-8", "replace"))
    if kind:  # an export's trace or CSV is the run's too: `diff A B --json out/trace.json` replaced it
        raise TfdashError(f"{what} {Path(path).expanduser()}: is a run's {kind}; a report never replaces "
                          "one: give another file name")


def fresh_directory(directory) -> Path:
    """A new empty folder beside `directory`, to write a set of files into before they are moved
    into place together (see `move_into`). The caller removes it on failure."""
    d = Path(directory).expanduser()
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
        os.chmod(tmp, 0o777 & ~current_umask())
    except OSError as e:
        raise TfdashError(f"cannot write {d}: {why_no_folder(d.parent, e)}") from None
    return tmp


def move_into(tmp: Path, directory) -> None:
    """Move every file of `tmp` into `directory`. A missing one is claimed first (mkdir, which never
    takes a folder or file that is there), then `tmp` renamed whole over that empty claim: looked
    for and then renamed to, a folder made in between (with a file of someone's in it) failed the
    rename and lost the export, or (empty) was replaced. One there already takes the files."""
    d = Path(directory).expanduser()
    try:
        try:
            os.mkdir(d)
        except FileExistsError:
            pass
        else:
            try:
                os.rename(tmp, d)  # over our own empty folder: the files appear together
                return
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # not filled meanwhile: a real failure
                    _remove_empty(d)  # the claim, which holds nothing
                    raise
        if not d.is_dir():
            raise TfdashError(f"cannot write {d}: not a directory")
        for f in sorted(tmp.iterdir()):  # every one checked before any is moved: never half a set
            if os.path.isdir(d / f.name) and not os.path.islink(d / f.name):
                raise TfdashError(f"cannot write {d / f.name}: is a directory")
        for f in sorted(tmp.iterdir()):
            os.replace(f, d / f.name)
        tmp.rmdir()
    except OSError as e:
        raise TfdashError(f"cannot write {d}: {e.strerror or e}") from None


def _remove_empty(d: Path) -> None:
    try:
        os.rmdir(d)
    except OSError:  # not empty (someone's files came) or gone: left as it is
        pass


@contextmanager
def atomic_writer(path, binary: bool = False):
    """`write(text)` into a file that appears at `path` whole when the block ends, or not at all
    if it raises: written to a temporary beside it, then renamed. Long outputs are written as they
    are made (a sweep of thousands of points), never held; only the file's own write errors
    become "cannot write PATH" (an error of the block's other work stays what it is). A leading
    `~` is the user's home, as the checks before the work read it (`--json=~/x` reaches us unexpanded
    by the shell). A symlink keeps pointing where it did, at the new file; a device, pipe or
    terminal (`--json /dev/stdout`) is written in place, never replaced by a file. `binary`: write(bytes)."""
    path = Path(path).expanduser()
    own = own_fd(path)
    if own is not None or is_stream(path):
        with _stream_writer(path, own, binary) as write:
            yield write
        return
    target = Path(os.path.realpath(path))  # a symlink's file, so the link stays one
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as e:
        raise TfdashError(f"cannot write {path}: {why_no_folder(target.parent, e)}") from None
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            yield _writer(f, path)
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


def _writer(f, path):
    """`write(text)` into the open file `f`, its errors one line that names `path`."""

    def write(text: str) -> None:
        try:
            f.write(text)
        except BrokenPipeError:  # `--json - | head`: the reader went away; the CLI stops quietly, as on stdout
            raise
        except OSError as e:
            raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None

    return write


@contextmanager
def _stream_writer(path: Path, fd: int | None, binary: bool = False):
    """Write to `path` in place; through a copy of descriptor `fd` where it names one of ours. What
    was printed before goes first (sys.stdout may be holding it in its buffer)."""
    try:
        for std in (sys.stdout, sys.stderr):
            if std is not None:
                std.flush()
        mode = {"mode": "wb"} if binary else {"mode": "w", "encoding": "utf-8"}
        f = open(path, **mode) if fd is None else os.fdopen(os.dup(fd), **mode)
    except OSError as e:
        raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        yield _writer(f, path)
        try:
            f.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise TfdashError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        try:
            f.close()
        except OSError:
            pass  # its error, if any, was the flush's


def write_text_atomic(path, text: str, gz: bool = False) -> Path:
    """`text` written whole (atomic_writer); `gz`: gzip-compressed, as a snapshot named .json.gz is read."""
    with atomic_writer(path, binary=gz) as write:
        write(gzip.compress(text.encode("utf-8"), mtime=0) if gz else text)
    return Path(path).expanduser()


def write_json_atomic(path, payload, gz: bool = False) -> Path:
    return write_text_atomic(path, json.dumps(payload, indent=1, sort_keys=False) + "\n", gz)
