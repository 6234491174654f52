"""What the panes show, computed from a ProfileSnapshot: plain functions, no widgets.

    group_rows     the kernel table's rows: one per op, family, layer, or launch
    sort_rows      by any column, unmeasured values last whichever the direction
    filter_launches  the launches whose names hold every word of the filter (case-insensitive);
                   the table groups only these, so a filtered row sums only its matching launches
    throughput     tok/s now and over the run, ms/step p50/p99, a downsampled ms/step line
    Everything here is deterministic in the snapshot: no clocks, so a recorded snapshot renders
    the same picture every time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from tfdash.profiling.diff import group_key as aligned_key
from tfdash.profiling.snapshot import KernelRow, ProfileSnapshot
from tfdash.units import fmt_bytes, fmt_gap  # noqa: F401  (the screens import them from here)

GROUPS = ("op", "family", "layer", "none")
GROUP_LABEL = {"op": "op", "family": "family", "layer": "layer", "none": "launch"}

# (key, header); the first column's header follows the grouping.
COLUMNS = (
    ("label", "launch"),
    ("count", "count"),
    ("predicted", "predicted"),
    ("measured", "measured"),
    ("p90", "p90"),  # Σ of the members' p90; shown once launches have one (continuous timing, windows)
    ("gap", "gap ×"),
    ("gbps", "GB/s"),
    ("meas_bytes", "meas bytes"),  # DRAM bytes Nsight Compute measured; shown once a launch has counters
    ("share", "% of step"),
    ("bound", "bound by"),
    ("kernel", "kernel"),  # the tilelang kernel the row runs (how many, for a row of several): where it fits
)
SORT_KEYS = tuple(k for k, _ in COLUMNS)
# Which columns go first when the table is too narrow for all (the last listed goes first).
COLUMN_PRIORITY = ("label", "measured", "gap", "share", "predicted", "gbps", "p90", "meas_bytes", "count", "bound",
                   "kernel")


def fit_columns(width: int, widths: dict[str, int], sort_key: str | None = None) -> tuple[str, ...]:
    """The columns (in table order) whose `widths` (cells, padding included) fit `width`,
    dropping by COLUMN_PRIORITY; the column the table is sorted by goes last, if at all: its sort
    mark widens it, and dropped it would leave rows ordered by a column no one can see (and `s`,
    which walks the columns on the screen, with nowhere to go on from it)."""
    keep = list(COLUMN_PRIORITY)
    if sort_key in keep[1:]:
        keep.remove(sort_key)
        keep.insert(1, sort_key)
    while len(keep) > 1 and sum(widths.get(k, 0) for k in keep) > width:
        keep.pop()
    return tuple(k for k in SORT_KEYS if k in keep)
DEFAULT_SORT = ("measured", True)  # the costliest first; predicted breaks ties while unmeasured


@dataclass(frozen=True)
class TableRow:
    key: str  # stable id of the row (also the drill-down's subject)
    label: str
    members: tuple[int, ...]  # launch indices, plan order
    count: int
    predicted: float
    measured: float | None  # sum of members' measured p50 (None until every member is measured)
    bytes: int
    share: float | None
    bound: str
    families: tuple[str, ...]
    kernels: tuple[str, ...]
    meas_bytes: int | None = None  # DRAM bytes (read + written) of the members with counters
    meas_count: int = 0  # how many members have counters
    p90: float | None = None  # sum of members' measured p90 (None unless every member has one)

    @property
    def gap(self) -> float | None:
        if self.measured is None or not self.predicted:
            return None
        return self.measured / self.predicted

    @property
    def gbps(self) -> float | None:
        return self.bytes / self.measured if self.measured else None

    def value(self, key: str):
        if key == "label":
            return self.label
        if key == "bound":
            return self.bound
        return getattr(self, key)

    @property
    def kernel(self) -> str:
        """The kernel the row's launches run, or how many kernels where they run several."""
        return self.kernels[0] if len(self.kernels) == 1 else f"{len(self.kernels)} kernels"


def group_key(row: KernelRow, group: str) -> tuple[str, str]:
    """(key, label) of the group a launch belongs to: the groups `tfdash diff` aligns by, except
    that ungrouped ("none") is one row per launch rather than per role."""
    if group == "none":
        return f"launch:{row.index}", row.role
    return aligned_key(row, group)


def _majority(values: Iterable[str]) -> str:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    if not counts:
        return ""
    best = max(counts.values())
    tied = [v for v, n in counts.items() if n == best]
    return tied[0] if len(tied) == 1 else "/".join(sorted(tied))


def make_row(key: str, label: str, members: Sequence[KernelRow]) -> TableRow:
    measured = [m.measured_p50_ns for m in members]
    p90s = [m.measured_p90_ns for m in members]
    shares = [m.share for m in members]
    got = [m.counters.dram_bytes for m in members if m.counters is not None and m.counters.dram_bytes is not None]
    return TableRow(
        key=key,
        label=label,
        members=tuple(m.index for m in members),
        count=len(members),
        predicted=float(sum(m.predicted_ns for m in members)),
        measured=None if any(v is None for v in measured) else float(sum(measured)),
        bytes=sum(m.bytes_read + m.bytes_written for m in members),
        share=None if any(v is None for v in shares) else float(sum(shares)),
        bound=_majority(m.bound_by for m in members),
        families=tuple(dict.fromkeys(m.family for m in members)),
        kernels=tuple(dict.fromkeys(m.kernel for m in members)),
        meas_bytes=sum(got) if got else None,
        meas_count=len(got),
        p90=None if any(v is None for v in p90s) else float(sum(p90s)),
    )


def group_rows(kernels: Sequence[KernelRow], group: str) -> list[TableRow]:
    """Rows in plan order of their first member."""
    if group not in GROUPS:
        raise ValueError(f"group {group!r} is not one of {', '.join(GROUPS)}")
    buckets: dict[str, tuple[str, list[KernelRow]]] = {}
    for k in sorted(kernels, key=lambda r: r.index):
        key, label = group_key(k, group)
        buckets.setdefault(key, (label, []))[1].append(k)
    return [make_row(key, label, members) for key, (label, members) in buckets.items()]


def sort_rows(rows: Sequence[TableRow], key: str, descending: bool) -> list[TableRow]:
    """Stable; None (unmeasured) sorts last either way; ties keep plan order."""
    if key not in SORT_KEYS:
        raise ValueError(f"sort key {key!r} is not one of {', '.join(SORT_KEYS)}")
    order = {r.key: i for i, r in enumerate(rows)}
    present = [r for r in rows if r.value(key) is not None]
    missing = [r for r in rows if r.value(key) is None]
    if key == "measured" and missing:
        missing.sort(key=lambda r: -r.predicted if descending else r.predicted)
    present.sort(key=lambda r: (r.value(key), -order[r.key] if descending else order[r.key]), reverse=descending)
    return present + missing


def launch_names(k: KernelRow, group: str) -> str:
    """What a filter reads of a launch: its group's label in `group` (L3, outside layers, its op or
    family), its role, family and kernel, lower-cased."""
    return " ".join((group_key(k, group)[1], k.role, k.family, k.kernel)).lower()


def filter_launches(kernels: Sequence[KernelRow], group: str, text: str) -> list[KernelRow]:
    """The launches whose names (launch_names) hold every word of `text`. Matched launch by launch,
    not row by row: a layer row holds the embed, lm_head and argmax together, and filtered for
    "lm_head" it must sum the lm_head alone, not the three."""
    words = text.lower().split()
    if not words:
        return list(kernels)
    return [k for k in kernels if all(w in launch_names(k, group) for w in words)]


def table_rows(kernels: Sequence[KernelRow], group: str, sort: tuple[str, bool], text: str) -> list[TableRow]:
    """The table's rows: the launches the filter keeps, grouped (a group with none has no row), sorted."""
    return sort_rows(group_rows(filter_launches(kernels, group, text), group), *sort)


# -- throughput ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Throughput:
    tokens: int
    tok_s_now: float | None  # over the last second of run time (time held left out), at least two tokens
    tok_s_run: float | None  # over the whole generation so far
    p50_ms: float | None
    p99_ms: float | None
    steps: int
    line_x: tuple[float, ...]  # step index (bucket centre)
    line_y: tuple[float, ...]  # ms/step (bucket mean)
    ttft_ms: float | None = None  # time to first token (run time, paused time left out)
    tok_s_decode: float | None = None  # decode only: the tokens after the first
    held_s: float = 0.0  # paused so far (not counted in tok_s_run)


def tok_s_now(snap: ProfileSnapshot, window_ns: int = 1_000_000_000) -> float | None:
    """Tokens a second over the last `window_ns` of run time (at least the last two tokens). Run
    time is each token's elapsed_ns less the time held before it, so a pause (space) inside the
    window is not read as slow decoding after a resume."""
    toks = snap.tokens
    if len(toks) < 2:
        return None
    last = toks[-1].run_ns
    i = len(toks) - 1
    while i > 0 and last - toks[i - 1].run_ns <= window_ns:
        i -= 1
    i = min(i, len(toks) - 2)
    span = last - toks[i].run_ns
    return (len(toks) - 1 - i) / (span / 1e9) if span > 0 else None


def throughput(snap: ProfileSnapshot, points: int = 240) -> Throughput:
    import numpy as np

    from tfdash.stats import rank

    steps = np.asarray(snap.step_ns, dtype=np.float64)
    n = int(steps.size)
    p50 = p99 = None
    xs: tuple[float, ...] = ()
    ys: tuple[float, ...] = ()
    if n:
        k50, k99 = rank(n, 50), rank(n, 99)  # the engine's percentile, in numpy (100k steps, twice a second)
        part = np.partition(steps, (k50, k99))
        p50, p99 = float(part[k50]) / 1e6, float(part[k99]) / 1e6
        buckets = max(1, min(points, n))
        edges = np.linspace(0, n, buckets + 1).astype(np.int64)
        sums = np.add.reduceat(steps, edges[:-1])
        widths = np.diff(edges)
        ys = tuple(float(v) for v in sums / widths / 1e6)
        first = max(0, int(getattr(snap, "steps", 0) or 0) - n)  # step_ns keeps only the last steps
        xs = tuple(float(v) for v in (first + edges[:-1] + widths / 2.0))
    run = snap.tok_per_s if snap.wall_ns else None
    ttft = getattr(snap, "ttft_ns", 0)
    return Throughput(snap.new_tokens, tok_s_now(snap), run, p50, p99, n, xs, ys, ttft / 1e6 if ttft else None,
                      getattr(snap, "decode_tok_per_s", None), getattr(snap, "held_ns", 0) / 1e9)


def own_window(snap) -> bool:
    """Whether the snapshot's one profile window was the dashboard's own (taken early in a CPU run,
    with no key pressed), not one asked for with p."""
    t = getattr(snap, "timing", None)
    return t is not None and t.method == "windows" and t.auto_window and snap.profile_windows == 1


CONTENDED_SPREAD = 3.0  # a CPU run whose p99 step is past this many p50s was waiting for the CPU


def contention_note(snap: ProfileSnapshot, live: bool = False) -> tuple[str, ...]:
    """On CPU, when the step times' spread says the decode waited for a core: one line of the spread,
    its cause and what to try, in wordings most explicit first (the table shows the first that fits).
    The dashboard draws in the engine's own process (its threads and the decode share one GIL), so a
    live run names that, and --headless, which times the engine alone; a recorded run may have had
    no dashboard, so it names one or another process (and a quieter host). Fewer --threads helps
    only a run with more than one."""
    import numpy as np

    if snap.meta.device != "cpu" or len(snap.step_ns) < 16:
        return ()
    p50, p99 = np.percentile(np.asarray(snap.step_ns, dtype=np.float64), [50, 99])
    if p50 <= 0 or p99 <= CONTENDED_SPREAD * p50:
        return ()
    spread = (f"step p99 is {p99 / p50:.1f}× p50", f"p99 {p99 / p50:.1f}× p50")
    one = getattr(snap.meta, "threads", None) == 1
    if live:  # this process draws the dashboard; --headless times the engine alone
        causes = ("the dashboard's own drawing shares this process", "the dashboard draws in this process",
                  "the dashboard draws in-process")
        remedies = (("--headless times the engine alone", "try --headless") if one else
                    ("fewer --threads, or --headless to time the engine alone",
                     "--threads N, or --headless to time it alone", "--threads N or --headless"))
    else:  # a recorded run: a dashboard's drawing, or another process (a quieter host's to cure)
        causes = ("steps waited for a dashboard's drawing or another process",
                  "a dashboard's drawing or another process", "a dashboard or another process")
        remedies = (("--headless, or a quieter host", "try --headless") if one else
                    ("fewer --threads, --headless, or a quieter host", "--threads N or --headless"))
    return tuple(f"{a}: {b}; {c}" for b in causes for c in remedies for a in spread)  # the cause's words first


# -- formatting ------------------------------------------------------------------------------
def fmt_int(v: float | None) -> str:
    """Whole numbers with separators; one decimal below 100 (a 0.5 ns prediction is not 0)."""
    if v is None:
        return "—"
    return f"{v:,.0f}" if abs(v) >= 100 or v == 0 else f"{v:.1f}"


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "—"
    a = abs(ns)
    if a < 10:
        return f"{ns:.1f} ns"  # a 0.5 ns prediction is not 0
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if a < 1e9:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e9:.2f} s"


def fmt_gbps(v: float | None, unit: str = " GB/s") -> str:
    """Bandwidth with the digits its size needs: 0.42, 8.1, 2,038 (never "0" for a nonzero rate)."""
    if v is None or v != v:
        return "—"
    a = abs(v)
    digits = 0 if a >= 100 or v == 0 else 1 if a >= 10 else 2 if a >= 0.01 else 4
    return f"{v:,.{digits}f}{unit}"


def fmt_num(v: float | None, digits: int = 1, suffix: str = "") -> str:
    if v is None or v != v or v in (float("inf"), float("-inf")):
        return "—"
    return f"{v:,.{digits}f}{suffix}"


def gap_level(gap: float | None) -> str:
    """'good' (<= 1.5x the ideal), 'fair' (<= 3x), 'poor', or '' when unmeasured."""
    if gap is None:
        return ""
    return "good" if gap <= 1.5 else "fair" if gap <= 3.0 else "poor"


def bar(fraction: float, width: int) -> str:
    """A left-aligned eighth-block bar of `width` cells for a fraction in 0..1."""
    fraction = max(0.0, min(1.0, fraction))
    eighths = int(round(fraction * width * 8))
    full, part = divmod(eighths, 8)
    s = "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")
    return s.ljust(width)
