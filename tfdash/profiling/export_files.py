"""The files an export writes, by name, and what each one is.

    tfdash --headless --export DIR    DIR/snapshot.json, DIR/trace.json, DIR/kernels.csv
    the dashboard's e, t and c        STEM.json, STEM.trace.json, STEM.csv (app.exports: STEM is
                                      the model and the second of the key press, so the three
                                      share one only when pressed in the same second)

A trace or CSV given where a snapshot is wanted (`tfdash open out/trace.json`) is said as what it
is, with the snapshot written beside it named: the schema error alone left the user to guess.
A --save that is one of the files (or the folder) the --export writes is refused before the run.

A file named .gz, in any case (RUN.JSON.GZ too), is written gzip-compressed (gz_name), a snapshot
(--save, counters --snapshot) or a report (--json of analyze, bench, counters and diff, diff's
--markdown) alike, so that run.json.gz is what its name says; a reader tells gzip by its first bytes,
whatever the name, and the picker lists a snapshot named .json.gz in any case (GZ_GLOB).
"""

from __future__ import annotations

import glob
import os
import re
import zlib
from pathlib import Path

from tfdash.errors import TfdashError
from tfdash.profiling.csv_export import ROW_COLUMNS

EXPORT_SNAPSHOT, EXPORT_TRACE, EXPORT_CSV = "snapshot.json", "trace.json", "kernels.csv"  # in every export folder
SNAPSHOT_SUFFIX, TRACE_SUFFIX, CSV_SUFFIX = ".json", ".trace.json", ".csv"  # the dashboard's (app.exports.KINDS)

_TRACE_HEAD = re.compile(r'\s*\{\s*"traceEvents"\s*:')  # how chrome_trace's JSON opens
_CSV_HEAD = ",".join(ROW_COLUMNS[:3]) + ","  # kernel_csv's header, with or without the counter columns


GZ_GLOB = ".[gG][zZ]"  # the .gz suffix in any case, in a glob pattern (Path.glob tells case apart)


def gz_name(path) -> bool:
    """Whether the file `path` is written gzip-compressed: its name ends in .gz, in any case."""
    return str(path).lower().endswith(".gz")


def without_gz(name: str) -> str:
    """A file name less its .gz suffix (in any case), where it has one: what the file holds, compressed."""
    return name[:-len(".gz")] if gz_name(name) else name


def snapshot_label(path) -> str:
    """How a snapshot file is named beside another (diff, the dashboard's baseline): its file name,
    with its folder where that name is an export's own (gzip-compressed or not), which every export shares."""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if without_gz(p.name) == EXPORT_SNAPSHOT and p.parent.name else p.name


def snapshot_labels(a, b) -> tuple[str, str]:
    """Two snapshot files named beside each other (`tfdash diff A B`, `open B --baseline A`): each
    its snapshot_label, and where those are one name (dashboard/snapshot-h200.json and
    dashboard-after-engine/snapshot-h200.json), each with as many of its folders as tell them apart;
    one file given twice keeps its label."""
    la, lb = snapshot_label(a), snapshot_label(b)
    pa, pb = Path(os.path.abspath(a)).parts, Path(os.path.abspath(b)).parts
    if la != lb or pa == pb:
        return la, lb
    n = la.count("/") + 1
    while pa[-n:] == pb[-n:]:
        n += 1
    return str(Path(*pa[-n:])), str(Path(*pb[-n:]))  # a path shorter than n parts: whole, from its root


def export_files(directory) -> tuple[Path, ...]:
    """The files `--export DIR` writes (a leading ~ expanded, as the export expands it)."""
    d = Path(directory).expanduser()
    return tuple(d / n for n in (EXPORT_SNAPSHOT, EXPORT_TRACE, EXPORT_CSV))


def check_export_folder(directory) -> None:
    """No file `--export DIR` writes is a folder there: checked before the run, as the export, after
    it, could replace none of them and the run's files were lost."""
    for f in export_files(directory):
        if os.path.isdir(f) and not os.path.islink(f):
            raise TfdashError(f"--export {directory}: {f} is a folder, and the export writes a file of that name")


def present(snap: Path) -> Path | None:
    """`snap` where it is a file, else the same name gzip-compressed (`.gz` in any case) where that
    is: a snapshot kept compressed is the one a hint names, not the plain name that is not there."""
    if os.path.isfile(snap):
        return snap
    try:
        packed = sorted(p for p in snap.parent.glob(glob.escape(snap.name) + GZ_GLOB) if p.is_file())
    except OSError:
        return None
    return packed[0] if packed else None


def snapshot_in(directory) -> Path | None:
    """The snapshot an export folder holds (snapshot.json, or snapshot.json.gz), where it holds one."""
    return present(Path(directory) / EXPORT_SNAPSHOT)


def snapshot_beside(path: Path) -> Path | None:
    """The snapshot written with `path`, an export's trace or CSV, where it is there (plain or gzip)."""
    name = path.name
    if name in (EXPORT_TRACE, EXPORT_CSV):
        snap = path.with_name(EXPORT_SNAPSHOT)
    elif name.endswith(TRACE_SUFFIX) and len(name) > len(TRACE_SUFFIX):
        snap = path.with_name(name[:-len(TRACE_SUFFIX)] + SNAPSHOT_SUFFIX)
    elif name.endswith(CSV_SUFFIX) and len(name) > len(CSV_SUFFIX):
        snap = path.with_name(name[:-len(CSV_SUFFIX)] + SNAPSHOT_SUFFIX)
    else:
        return None
    return present(snap)


def file_head(path, n: int = 256) -> bytes:
    """The first `n` bytes of `path`'s contents, a gzip-compressed file's uncompressed (so a
    `.json.gz` snapshot opens with its schema as a plain one does); what does not inflate is
    returned as it is on disk. OSError where the file cannot be read."""
    with open(Path(path).expanduser(), "rb") as f:
        head = f.read(max(n, 4096))  # 4 KiB of deflate holds far more than n bytes of JSON
    if head[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(head, n)  # 16: gzip's header
        except zlib.error:
            pass
    return head[:n]


def export_kind(text: str) -> str | None:
    """"Chrome trace" or "kernel table (CSV)" where `text` (a file's start) opens as an export's trace
    or CSV does, else None."""
    return "Chrome trace" if _TRACE_HEAD.match(text) else "kernel table (CSV)" if text.startswith(_CSV_HEAD) else None


def not_the_snapshot(path, text: str) -> str | None:
    """"PATH: is an export's Chrome trace, not a tfdash snapshot; DIR/snapshot.json is the snapshot beside it"
    where `text` (the file's) is an export's trace or kernel CSV, told by how each opens; else None."""
    what = export_kind(text)
    if what is None:
        return None
    snap = snapshot_beside(Path(path))
    where = f"{snap} is the snapshot beside it" if snap else "give the snapshot (.json) written with it"
    return f"{path}: is an export's {what}, not a tfdash snapshot; {where}"


def check_save_beside_export(save, export) -> None:
    """--save (written after the export) is neither the --export folder, which the export makes a
    folder so that the save failed after the run, nor a file the export writes: the save replaced
    the export's trace or CSV with a snapshot, unsaid. The same file through a link or a `..` is
    the same file; checked before the run."""
    if not save:
        return
    if export:
        _check_save_not_in_export(save, export)
    check_not_an_exports_snapshot(save)


def _check_save_not_in_export(save, export) -> None:
    s, d = os.path.realpath(os.path.expanduser(save)), os.path.realpath(os.path.expanduser(export))
    if s == d:
        raise TfdashError(f"--save {save}: is the --export folder too; give --save a file name "
                          f"(the export writes {os.path.join(export, EXPORT_SNAPSHOT)} anyway)")
    for f, what in zip(export_files(d), ("its snapshot", "its Chrome trace", "its kernel table")):
        if s == str(f):
            also = f" (the export's {f} is this run's snapshot)" if f.name == EXPORT_SNAPSHOT else ""
            raise TfdashError(f"--save {save}: is a file the --export writes ({what}); give --save another name{also}")


def check_not_an_exports_snapshot(save) -> None:
    """--save over an earlier export's snapshot.json left that export's trace and CSV beside a
    snapshot of another run, a folder mixing two runs that nothing said; an export replaces all
    three at once (export_all), so --export is the way to replace one. Nor is --save a run's Chrome
    trace or kernel CSV, whatever its name (`--save e1/trace.json`, the dashboard's STEM.trace.json),
    told by how the file opens: the snapshot replaced it unsaid, where --json refuses it."""
    _check_not_a_trace_or_csv(save)
    s = Path(os.path.realpath(os.path.expanduser(save)))
    if s.name != EXPORT_SNAPSHOT:
        return
    beside = [n for n in (EXPORT_TRACE, EXPORT_CSV) if (s.parent / n).is_file()]
    if beside:
        raise TfdashError(f"--save {save}: is an export's snapshot, with its {' and '.join(beside)} beside it; "
                          f"--export {os.path.dirname(save) or '.'} replaces all three, or give --save another name")


def _check_not_a_trace_or_csv(save) -> None:
    from tfdash.profiling.files import is_stream, own_fd

    if own_fd(save) is not None or is_stream(save):  # a device or pipe is never read
        return
    try:
        kind = export_kind(file_head(save).decode("utf-8", "replace"))
    except OSError:  # not there, or not readable: no run's file to lose
        return
    if kind:
        raise TfdashError(f"--save {save}: is a run's {kind}; a snapshot never replaces one: give --save another name")


def recorded_run(path) -> str | None:
    """When the run whose snapshot `path` holds was recorded ("an earlier run" where the file does
    not say), or None where it holds no snapshot: asked before a write over it (--save, --export's
    snapshot.json), so that the line naming the write says which run's results it replaced."""
    import json

    from tfdash.profiling.files import _SNAPSHOT_HEAD

    p = Path(path).expanduser()
    try:
        if not p.is_file():
            return None
        with open(p, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if data[:2] == b"\x1f\x8b":  # a .json.gz snapshot (--save run.json.gz writes one), read as load_snapshot does
        from tfdash.profiling.export import _gunzip

        try:
            data = _gunzip(p, data)
        except TfdashError:
            return None
    if not _SNAPSHOT_HEAD.match(data[:256]):
        return None
    try:
        when = json.loads(data)["meta"]["started_at"]
    except (ValueError, KeyError, TypeError):
        when = None
    return f"the run recorded {when}" if isinstance(when, str) and when else "an earlier run"
