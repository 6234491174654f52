"""Snapshot files: JSON (with a validating loader), Chrome trace JSON (tfdash.profiling.chrome_trace),
CSV of the kernel table (tfdash.profiling.csv_export).

Snapshot JSON, schema "tfdash.snapshot" (version: `snapshot.VERSION`; older versions load): the ProfileSnapshot dataclass field by field
(tuples as arrays, nested dataclasses as objects, None as null, floats always finite), with
"schema" and "version" first:

    {"schema": "tfdash.snapshot", "version": 8,
     "meta": RunMeta, "tokens": [TokenRecord], "step_ns": [int], "prompt_tokens": int,
     "new_tokens": int, "wall_ns": int, "kernels": [KernelRow], "nvml": [Series],
     "roofline": Roofline | null, "marginal": [object], "unavailable": {panel: reason},
     "target": object | null, "steps": int, "paused_ns": int, "profile_windows": int,
     "timeline": [KernelSpan], "windows": [WindowRecord], "ttft_ns": int, "held_ns": int,
     "timing": TimingInfo | null, "ab": [object], "prefill_positions": int, "prefill_ns": int}

`schema_doc()` prints every field with its type, generated from the dataclasses themselves.
`load_snapshot(path)` checks the schema name, the version, every field's type, unknown and
missing fields, sizes, and measured times (finite, none over an hour); any problem is one `SnapshotError` line naming the file and the field
path (e.g. "run.json: kernels[3].measured_p50_ns: expected a number or null, got 'fast'").

The Chrome trace is tfdash.profiling.chrome_trace's; a trace or CSV given where a snapshot is
wanted is named as such, with the snapshot written beside it (tfdash.profiling.export_files).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import json
import math
import shutil
import stat
import types
import typing
import zlib
from pathlib import Path

from tfdash.errors import SnapshotError, TfdashError
from tfdash.profiling.chrome_trace import chrome_trace, write_chrome_trace  # noqa: F401  (re-exported)
from tfdash.profiling.csv_export import CSV_COLUMNS, kernel_csv, write_kernel_csv  # noqa: F401  (re-exported)
from tfdash.profiling.export_files import EXPORT_CSV, EXPORT_SNAPSHOT, EXPORT_TRACE, gz_name, not_the_snapshot, snapshot_in
from tfdash.profiling.export_files import snapshot_label, snapshot_labels  # noqa: F401  (re-exported)
from tfdash.profiling.files import fresh_directory, move_into, write_text_atomic
from tfdash.profiling.snapshot import SCHEMA, VERSION, ProfileSnapshot

MAX_FILE_BYTES = 1 << 30  # a snapshot is bounded by the session's ring buffers; 1 GiB is absurd
MAX_ITEMS = 2_000_000  # per array: more than any bounded session keeps

@functools.cache
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _short(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _where(path: str) -> str:
    return path or "(top level)"


# -- writing -------------------------------------------------------------------------------
def to_jsonable(obj, path: str = ""):
    """Plain JSON data from a snapshot (or any of its parts); non-finite floats are refused."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {}
        names = [f.name for f in dataclasses.fields(obj)]
        if isinstance(obj, ProfileSnapshot):  # schema and version first
            names = ["schema", "version"] + [n for n in names if n not in ("schema", "version")]
        for n in names:
            out[n] = to_jsonable(getattr(obj, n), f"{path}.{n}" if path else n)
        return out
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v, f"{path}.{k}") for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        raise SnapshotError(f"{_where(path)} is {obj}; a snapshot holds finite numbers only")
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise SnapshotError(f"{_where(path)}: {type(obj).__name__} is not JSON data")


def dumps_snapshot(snap: ProfileSnapshot) -> str:
    return json.dumps(to_jsonable(snap), indent=1, allow_nan=False) + "\n"


def write_snapshot(snap: ProfileSnapshot, path) -> Path:
    """Write atomically (a reader never sees half a file); gzip-compressed where the name ends in .gz (gz_name)."""
    return write_text_atomic(path, dumps_snapshot(snap), gz=gz_name(path))


# -- loading -------------------------------------------------------------------------------
def _fail(path: str, msg: str):
    raise SnapshotError(f"{_where(path)}: {msg}")


def _describe(tp) -> str:
    origin = typing.get_origin(tp)
    if tp is type(None):
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    if origin is tuple:
        return "an array"
    if tp is dict or origin is dict or dataclasses.is_dataclass(tp):
        return "an object"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _convert(tp, v, path: str):
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if v is None:
            if type(None) in args:
                return None
            _fail(path, f"expected {_describe(tp)}, got null")
        others = [a for a in args if a is not type(None)]
        for a in others:
            try:
                return _convert(a, v, path)
            except SnapshotError as e:
                here = str(e).startswith(f"{_where(path)}: expected ")
                if not here:
                    raise  # deeper inside a nested value: keep its own message
        _fail(path, f"expected {_describe(tp)}, got {_short(v)}")
    if tp is type(None):
        if v is not None:
            _fail(path, f"expected null, got {_short(v)}")
        return None
    if dataclasses.is_dataclass(tp):
        return _dataclass(tp, v, path)
    if origin is tuple:
        if not isinstance(v, list):
            _fail(path, f"expected an array, got {_short(v)}")
        if len(v) > MAX_ITEMS:
            _fail(path, f"{len(v)} items, more than the limit of {MAX_ITEMS}")
        (item, *_rest) = typing.get_args(tp)
        return tuple(_convert(item, x, f"{path}[{i}]") for i, x in enumerate(v))
    if tp is dict or origin is dict:
        if not isinstance(v, dict):
            _fail(path, f"expected an object, got {_short(v)}")
        return v
    if tp is bool:
        if not isinstance(v, bool):
            _fail(path, f"expected true or false, got {_short(v)}")
        return v
    if tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            _fail(path, f"expected an integer, got {_short(v)}")
        if abs(v) >= 1 << 63:
            _fail(path, f"integer {_short(v)} is out of range")
        return v
    if tp is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail(path, f"expected a number, got {_short(v)}")
        f = float(v)
        if not math.isfinite(f):
            _fail(path, f"number {_short(v)} is not finite")
        return f
    if tp is str:
        if not isinstance(v, str):
            _fail(path, f"expected a string, got {_short(v)}")
        return v
    _fail(path, f"unsupported field type {tp}")  # a bug in the schema, not in the file


def _dataclass(cls, v, path: str):
    if not isinstance(v, dict):
        _fail(path, f"expected an object ({cls.__name__}), got {_short(v)}")
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in v if k not in fields]
    if unknown:
        _fail(path, f"unknown field {unknown[0]!r} in {cls.__name__}")
    kw = {}
    for name, f in fields.items():
        sub = f"{path}.{name}" if path else name
        if name not in v:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                _fail(sub, "missing")
            continue
        kw[name] = _convert(hints[name], v[name], sub)
    obj = cls(**kw)
    _check(obj, path)
    return obj


MAX_FREE_DEPTH = 4  # free-form objects (marginal and A/B results, target) nest no deeper than this
NON_NEGATIVE = {  # times and sizes: a negative one is a corrupt file, not a measurement
    "KernelRow": ("predicted_ns", "measured_p50_ns", "measured_p90_ns", "measured_last_ns", "bytes_read",
                  "bytes_written", "flops", "samples"),
    "TokenRecord": ("elapsed_ns", "held_ns"),
    "KernelSpan": ("dur_ns",),
    "Counters": ("ctx_len", "dram_read", "dram_written", "predicted_read", "predicted_written", "registers",
                 "smem_static", "smem_dynamic", "ncu_ns"),
    "Roofline": ("steps", "bytes_per_step", "predicted_step_ns", "measured_step_ns", "kernel_sum_ns"),
    "TimingInfo": ("steps_measured", "steps_dropped", "range_steps", "records", "records_ignored",
                   "host_ns_per_step", "pauses", "bucket_steps"),
    "SlowStep": ("span_ns", "busy_ns"),
    "ProfileSnapshot": ("prompt_tokens", "new_tokens", "wall_ns", "steps", "paused_ns", "profile_windows", "ttft_ns",
                        "held_ns", "prefill_positions", "prefill_ns"),
}
MAX_MEASURED_NS = 3600e9  # an hour: no launch or step of a decode takes it; a time past it is a corrupt file
MEASURED_NS = {  # measured times (one value, or one per launch or step), each at most MAX_MEASURED_NS
    "KernelRow": ("measured_p50_ns", "measured_p90_ns", "measured_last_ns"),
    "Counters": ("ncu_ns",),
    "KernelSpan": ("dur_ns",),
    "Roofline": ("measured_step_ns", "kernel_sum_ns"),
    "WindowRecord": ("step_ns", "kernel_ns"),
    "SlowStep": ("span_ns", "busy_ns", "launch_ns"),
    "ProfileSnapshot": ("step_ns",),
}


def _depth(v, limit: int) -> int:
    """Nesting depth of a JSON value, counted without recursion and stopping past `limit`."""
    level, depth = [v], 0
    while level and depth <= limit:
        level = [x for node in level for x in (node.values() if isinstance(node, dict) else
                                               node if isinstance(node, list) else ())]
        depth += 1 if level else 0
    return depth


def _check(obj, path: str) -> None:
    """Cross-field rules the types cannot say."""
    from tfdash.profiling.snapshot import ProfileSnapshot, Series, TokenRecord

    if isinstance(obj, Series) and len(obj.t) != len(obj.values):
        _fail(path, f"series {obj.name!r} has {len(obj.t)} times and {len(obj.values)} values")
    for name in NON_NEGATIVE.get(type(obj).__name__, ()):
        v = getattr(obj, name)
        if v is not None and v < 0:
            _fail(f"{path}.{name}" if path else name, f"{_short(v)} is negative")
    for name in MEASURED_NS.get(type(obj).__name__, ()):
        v = getattr(obj, name)
        for i, x in enumerate(v) if isinstance(v, tuple) else [(None, v)]:
            if x is not None and x > MAX_MEASURED_NS:
                where = (f"{path}.{name}" if path else name) + ("" if i is None else f"[{i}]")
                _fail(where, f"{x:.4g} ns is over an hour, not a measured time")
    if isinstance(obj, TokenRecord) and obj.held_ns > obj.elapsed_ns:  # run time would be negative
        _fail(f"{path}.held_ns", f"{obj.held_ns} is more than the token's elapsed_ns ({obj.elapsed_ns})")
    if isinstance(obj, ProfileSnapshot):
        for i, v in enumerate(obj.step_ns):
            if v < 0:
                _fail(f"step_ns[{i}]", f"{_short(v)} is negative")
        for k, v in obj.unavailable.items():
            if not isinstance(v, str):
                _fail(f"unavailable[{_short(k)}]", f"expected a string (the reason), got {_short(v)}")
        for name in ("marginal", "ab"):
            for i, m in enumerate(getattr(obj, name)):
                if _depth(m, MAX_FREE_DEPTH) > MAX_FREE_DEPTH:
                    _fail(f"{name}[{i}]", f"nested deeper than {MAX_FREE_DEPTH} levels")
        if obj.target is not None and _depth(obj.target, MAX_FREE_DEPTH) > MAX_FREE_DEPTH:
            _fail("target", f"nested deeper than {MAX_FREE_DEPTH} levels")


def _parse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def loads_snapshot(text: str, source: str = "snapshot") -> ProfileSnapshot:
    """Validate and build a ProfileSnapshot from JSON text; SnapshotError names what is wrong."""
    try:
        raw = json.loads(text, parse_constant=_parse_constant)
    except RecursionError:
        raise SnapshotError(f"{source}: JSON nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, NaN/Infinity, integers past the digit limit
        raise SnapshotError(f"{source}: not valid JSON ({str(e).splitlines()[0][:120]})") from None
    if not isinstance(raw, dict):
        raise SnapshotError(f"{source}: expected a JSON object, got {json.dumps(raw)[:40]}")  # null, not NoneType
    if (schema := raw.get("schema")) != SCHEMA:
        what = "no 'schema' field" if "schema" not in raw else f"schema is {_short(schema)}"
        raise SnapshotError(f"{source}: not a tfdash snapshot ({what}; expected {SCHEMA!r})")
    version = raw.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        why = f"version: expected an integer, got {_short(version)}" if "version" in raw else "no 'version' field"
        raise SnapshotError(f"{source}: {why}")
    if version > VERSION:
        raise SnapshotError(f"{source}: snapshot version {version} is newer than this tfdash reads "
                            f"(version {VERSION}); upgrade tfdash")
    if version < 1:
        raise SnapshotError(f"{source}: version {version} is not a snapshot version (1..{VERSION})")
    try:
        return _dataclass(ProfileSnapshot, raw, "")
    except SnapshotError as e:
        raise SnapshotError(f"{source}: {e}") from None
    except RecursionError:
        raise SnapshotError(f"{source}: nested too deeply") from None


def check_snapshot_file(path, what: str = "") -> Path:
    """`path` if a snapshot can be read from it, else one SnapshotError line, in the same words for every command."""
    p = Path(path)
    try:
        st = p.stat()  # a FIFO or a device is refused before it is opened: opening one may block for ever
    except OSError as e:
        why = "no such snapshot file" if isinstance(e, FileNotFoundError) else f"cannot read ({e.strerror or e})"
        raise SnapshotError(f"{what}{p}: {why}") from None
    if stat.S_ISDIR(st.st_mode):  # an export folder, most likely: name the file it holds
        inside = snapshot_in(p)  # snapshot.json, or snapshot.json.gz where it was kept compressed
        raise SnapshotError(f"{what}{p}: is a directory, not a snapshot file"
                            + (f"; {inside} is the snapshot in it" if inside else ""))
    if not stat.S_ISREG(st.st_mode):
        raise SnapshotError(f"{what}{p}: not a regular file (a FIFO, device or socket); give a snapshot JSON file")
    if st.st_size > MAX_FILE_BYTES:
        raise SnapshotError(f"{what}{p}: {st.st_size} bytes, larger than any snapshot ({MAX_FILE_BYTES} bytes)")
    return p


GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(p: Path, data: bytes) -> bytes:
    """A gzip file's contents, at most MAX_FILE_BYTES of them (its size on disk says nothing of
    the size inside); a file that is not whole gzip is one SnapshotError line."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise SnapshotError(f"{p}: gzip-compressed, but cannot be read ({e})") from None
    if len(out) > MAX_FILE_BYTES:
        raise SnapshotError(f"{p}: more than {MAX_FILE_BYTES} bytes uncompressed, larger than any snapshot")
    return out


def load_snapshot(path) -> ProfileSnapshot:
    """Read and validate a snapshot file (see the module docstring)."""
    p = check_snapshot_file(path)
    try:
        data = p.read_bytes()
    except OSError as e:  # removed or made unreadable since the check
        raise SnapshotError(f"{p}: cannot read ({e.strerror or e})") from None
    if data[:2] == GZIP_MAGIC:  # a snapshot kept compressed (benchmarks/ keeps its large ones .json.gz)
        data = _gunzip(p, data)
    if not data.strip():
        raise SnapshotError(f"{p}: is empty, not a snapshot")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SnapshotError(f"{p}: not a snapshot: byte 0x{data[e.start]:02x} at offset {e.start} is not UTF-8 text") from None
    other = not_the_snapshot(p, text)  # an export's trace or CSV: the snapshot beside it is named
    if other:
        raise SnapshotError(other)
    return loads_snapshot(text, str(p))


def schema_doc() -> str:
    """Every snapshot field and its JSON type, from the dataclasses (so it cannot go stale)."""
    lines = [f"schema {SCHEMA!r}, version {VERSION}"]
    seen = set()

    def walk(cls, indent):
        if cls in seen:
            return
        seen.add(cls)
        lines.append(f"{'  ' * indent}{cls.__name__}:")
        for f in dataclasses.fields(cls):
            tp = _hints(cls)[f.name]
            opt = "" if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING else " (optional)"
            inner = [a for a in (typing.get_args(tp) or (tp,)) if dataclasses.is_dataclass(a)]
            for a in typing.get_args(tp):
                inner += [b for b in (typing.get_args(a) or (a,)) if dataclasses.is_dataclass(b)]
            name = inner[0].__name__ if inner else ""
            shape = f"[{name}]" if typing.get_origin(tp) is tuple and name else (name or _describe(tp))
            lines.append(f"{'  ' * (indent + 1)}{f.name}: {shape}{opt}")
            for a in dict.fromkeys(inner):
                walk(a, indent + 2)

    walk(ProfileSnapshot, 0)
    return "\n".join(lines)


# -- export folders ------------------------------------------------------------------------
def export_all(snap: ProfileSnapshot, directory) -> dict[str, Path]:
    """snapshot.json, trace.json and kernels.csv in `directory` (made if missing; a leading ~ expanded)."""
    d = Path(directory).expanduser()
    tmp = fresh_directory(d)  # all three are written, then moved in: a folder never mixes two runs
    try:
        write_snapshot(snap, tmp / EXPORT_SNAPSHOT)
        write_chrome_trace(snap, tmp / EXPORT_TRACE)
        write_kernel_csv(snap, tmp / EXPORT_CSV)
        move_into(tmp, d)
    except TfdashError as e:  # name the folder asked for, not the hidden one that is removed below
        raise TfdashError(str(e).replace(str(tmp), str(d))) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {"snapshot": d / EXPORT_SNAPSHOT, "trace": d / EXPORT_TRACE, "csv": d / EXPORT_CSV}
