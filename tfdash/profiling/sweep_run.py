"""`analyze --sweep`: each point priced, printed as a table row and (with --json) written into the
file as it is priced, so a sweep holds one point in memory however long it is. A point's JSON is
every launch's cost, operands and geometry: about 260 KB at qwen3-1.7b, ~20 ms to price.

Before the first row the first point is priced and its JSON measured, and the sweep's time and file
size estimated from them. A JSON past MAX_JSON_BYTES, or past the free space where it goes, is
refused with that estimate and a STEP that fits; a sweep estimated past LONG_S says its points,
time and size up front, then a line every PROGRESS_S on stderr: points done, left, time to go.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Sequence

from tfdash.errors import TfdashError
from tfdash.profiling.analyze import analyze, render_sweep, sweep_points, to_json
from tfdash.units import fmt_bytes

SCHEMA = "tfdash.analysis-sweep/1"
MAX_JSON_BYTES = 10**9  # past 1 GB, json.load of the file wants ~10 GB of memory: refused
LONG_S = 10.0  # a sweep estimated past this says so before it starts
PROGRESS_S = 30.0  # and then how far it is, this often


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min" if s < 5400 else f"{s / 3600:.1f} h"


def _point_json(report) -> str:
    """One point as `json.dumps({"reports": [...]}, indent=1)` writes it inside the list."""
    return "  " + json.dumps(to_json(report), indent=1).replace("\n", "\n  ")  # no line of it is empty


def _narrower(a: int, b: int, per_point: int, fits: int) -> str:
    """The smallest STEP whose points' JSON fits in `fits` bytes, as the user would type it."""
    n = max(2, fits // per_point)
    step = max(1, -(-(b - a) // (n - 1)))
    count = len(sweep_points(a, b, step))
    return f"ctx_len={a}:{b}:{step}: {count} points, about {fmt_bytes(count * per_point)}"


def _check_size(path: str, a: int, b: int, step: int, n: int, per_point: int) -> None:
    total = n * per_point
    where = next((p for p in (Path(path).expanduser().parent, *Path(path).expanduser().parents) if p.exists()))
    free = shutil.disk_usage(where).free
    limit, why = min((MAX_JSON_BYTES, "the most a JSON reader loads"), (free, f"free in {where}"))
    if total > limit:
        narrower = (f"take a larger STEP ({_narrower(a, b, per_point, limit)}) or " if limit >= 2 * per_point
                    else "free some space there or ")  # not even two points fit
        raise TfdashError(f"--json {path}: the sweep ctx_len={a}:{b}:{step} is {n} points of about "
                          f"{fmt_bytes(per_point)} each, about {fmt_bytes(total)} of JSON (over {fmt_bytes(limit)}, "
                          f"{why}); {narrower}drop --json for the table alone")


def run_sweep(plan, target, a: int, b: int, step: int, json_path: str | None,
              out=None, err=None, clock=time.monotonic) -> None:
    """Price ctx_len = a, a+step, ..., b: rows to `out`, notes to `err`, points into `json_path`."""
    out, err = out or sys.stdout, err or sys.stderr
    points = sweep_points(a, b, step)
    n = len(points)
    t0 = clock()
    head = [analyze(plan, target, points[0])]  # the first pays one-time set-up: the estimate times the second
    head_json = [_point_json(head[0])] if json_path else [""]
    t1 = clock()
    if n > 1:
        head.append(analyze(plan, target, points[1]))
        head_json.append(_point_json(head[1]) if json_path else "")
    per_s, per_point = clock() - t1 if n > 1 else t1 - t0, max(len(j) for j in head_json) + 2
    if json_path:
        _check_size(json_path, a, b, step, n, per_point)
    if n * per_s > LONG_S:
        size = f", about {fmt_bytes(n * per_point)} of JSON" if json_path else ""
        print(f"# sweep: {n} points, about {_duration(n * per_s)}{size}; progress every {PROGRESS_S:.0f} s",
              file=err, flush=True)
    if not json_path:
        _rows(plan, target, points, head, out, err, clock, t0, None)
        return
    stopped = None
    with _json_writer(Path(json_path).expanduser()) as write:
        write(f'{{\n "schema": "{SCHEMA}",\n "reports": [\n' + ",\n".join(head_json))
        try:
            _rows(plan, target, points, head, out, err, clock, t0, write)
        except KeyboardInterrupt as e:  # Ctrl-C keeps the points priced so far, a whole file
            stopped = e
        write("\n ]" + (',\n "interrupted": true' if stopped else "") + "\n}\n")
    if stopped is not None:
        print(f"# sweep interrupted: {json_path} has the points priced before it", file=err, flush=True)
        raise stopped


@contextmanager
def _json_writer(path: Path):
    """`write(text)` into the --json file as files.atomic_writer does (whole, or not at all), gzip-compressed
    as it goes where the name says so (gz_name), as every report is: the points are streamed, never held."""
    from tfdash.profiling.export_files import gz_name
    from tfdash.profiling.files import atomic_writer

    if not gz_name(path):
        with atomic_writer(path) as write:
            yield write
        return
    deflate = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)  # 16: a gzip header and trailer, as gzip.compress
    with atomic_writer(path, binary=True) as write:
        yield lambda text: write(deflate.compress(text.encode("utf-8")))
        write(deflate.flush())


def _rows(plan, target, points: Sequence[int], head: list, out, err, clock, t0: float, write) -> None:
    """The rows under the header (render_sweep's first two lines): `head`'s, already priced and
    written, then each further point's, its JSON written after the others' (with `write`)."""
    out.write(render_sweep(head))
    out.flush()
    n, shown = len(points), t0 + PROGRESS_S
    for done, c in enumerate(points[len(head):], start=len(head) + 1):
        report = analyze(plan, target, c)
        if write is not None:
            write(",\n" + _point_json(report))
        out.write(render_sweep([report]).split("\n", 2)[2])
        out.flush()
        now = clock()
        if now >= shown and done < n:
            shown = now + PROGRESS_S
            eta = (now - t0) / done * (n - done)
            print(f"# sweep: {done}/{n} points done, {n - done} left, about {_duration(eta)} to go",
                  file=err, flush=True)
