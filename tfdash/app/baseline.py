"""A baseline snapshot beside the one on screen (`tfdash open B.json --baseline A.json`): what the
kernel table's Δ columns, the drill-down and the roofline pane show of it. Plain functions, no
widgets; the alignment itself is `tfdash.profiling.diff` (the same as `tfdash diff`), so a row's
Δ here is the Δ that `tfdash diff` prints for it.

    Baseline(snapshot, label, path)  held by the app
    index(base, kernels, group)      an Index: the kernel table's rows -> DiffRow (Δ = shown − baseline)
    sort_rows(rows, idx, key, d)     the table's rows by a Δ column, unmatched rows last
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tfdash.app.model import TableRow, filter_launches, fmt_ns, fmt_num
from tfdash.errors import TfdashError
from tfdash.profiling.diff import DiffRow, align, differences, shown_differences
from tfdash.profiling.snapshot import KernelRow, ProfileSnapshot

# The kernel table's extra columns (key, header), after its own.
COLUMNS = (("base", "baseline"), ("delta", "Δ"), ("delta_pct", "Δ %"))
SORT_KEYS = tuple(k for k, _ in COLUMNS)
SORT_CYCLE = ("delta", "delta_pct", "base")  # `s` after measured: Δ first
QUIET_PCT = 1.0  # |Δ %| under this is drawn without colour, so small moves do not shout


@dataclass(frozen=True)
class Baseline:
    snapshot: ProfileSnapshot
    label: str  # the file name, for the captions (with its folders where the shown file has its name)
    path: Path | None = None  # its file: the header names the shown one beside it (snapshot_labels)


def check_comparable(base: ProfileSnapshot, snap: ProfileSnapshot, base_name: str, name: str) -> None:
    """One TfdashError line when the two runs are not of one shape and dtype."""
    diffs = differences(base, snap)
    if diffs:
        raise TfdashError(f"--baseline {base_name} is another run than {name} ({shown_differences(diffs)}); "
                          f"`tfdash diff --force` compares such runs by op")


def table_group(group: str) -> str:
    """The kernel table's grouping in `tfdash.profiling.diff`'s names ("none" is per launch)."""
    return "launch" if group == "none" else group


@dataclass(frozen=True)
class Index:
    """The shown snapshot's rows, by their members (launch indices), to their DiffRow against the
    baseline; and the rows only the baseline has."""

    rows: dict[tuple[int, ...], DiffRow]
    removed: tuple[DiffRow, ...]

    def get(self, members: tuple[int, ...]) -> DiffRow | None:
        return self.rows.get(tuple(members))


def index(base: Baseline, kernels: Sequence[KernelRow], group: str, text: str = "") -> Index:
    """Align the shown kernels with the baseline's, grouped as the kernel table is; under the filter
    `text`, the launches it keeps on both sides (model.filter_launches), as the table's rows sum them."""
    mine, theirs = filter_launches(kernels, group, text), filter_launches(base.snapshot.kernels, group, text)
    rows, gone = {}, []
    for r in align(theirs, mine, table_group(group)):
        if r.b is None:
            gone.append(r)
        else:
            rows[r.b.members] = r
    return Index(rows, tuple(gone))


def value(r: DiffRow | None, key: str) -> float | None:
    if r is None:
        return None
    if key == "base":
        return r.a.measured_ns if r.a else None
    if key == "delta":
        return r.delta_ns  # an added row's is its whole time (the baseline's side counts 0), as in diff
    if key == "delta_pct":
        return r.delta_pct
    raise ValueError(f"baseline column {key!r} is not one of {', '.join(SORT_KEYS)}")


def sort_rows(rows: Sequence[TableRow], idx: Index, key: str, descending: bool) -> list[TableRow]:
    """By a Δ column; rows without a value (unmeasured; added ones for baseline and Δ %) last whichever
    the direction."""
    present = [r for r in rows if value(idx.get(r.members), key) is not None]
    missing = [r for r in rows if value(idx.get(r.members), key) is None]
    present.sort(key=lambda r: value(idx.get(r.members), key), reverse=descending)
    return present + missing


def level(r: DiffRow | None) -> str:
    """'good' (faster than the baseline), 'poor' (slower), '' (within QUIET_PCT or unmatched)."""
    pct = r.delta_pct if r is not None else None
    if pct is None or abs(pct) < QUIET_PCT:
        return ""
    return "good" if pct < 0 else "poor"


def cells(r: DiffRow | None) -> list[tuple[str, str]]:
    """(text, level) of the extra columns for one row. An added row's Δ is its own time, as `tfdash
    diff` counts it, so the column adds up to the kernel sums' Δ; it has no Δ %."""
    if r is None:
        return [("added", "fair"), ("—", ""), ("—", "")]
    d = r.delta_ns
    pct = r.delta_pct
    delta = "—" if d is None else ("+" if d > 0 else "") + fmt_ns(d)
    if r.a is None:
        return [("added", "fair"), (delta, "poor" if d else ""), ("—", "")]
    return [(fmt_ns(r.a.measured_ns), ""), (delta, level(r)),
            ("—" if pct is None else fmt_num(pct, 1, " %") if pct <= 0 else "+" + fmt_num(pct, 1, " %"), level(r))]


def baseline_only(base: Baseline, kernels: Sequence[KernelRow], group: str,
                  members: tuple[int, ...], text: str = "") -> tuple[DiffRow, ...]:
    """The launches of the row `members` (grouped as `group`) that only the baseline has: a layer
    row's q/k norm launch the shown plan fused away. The row's Δ counts them (as `tfdash diff`
    does), so the drill-down names them beside instances whose Δs would not add up to it. `text`: the
    filter the row was opened under."""
    row = index(base, kernels, group, text).get(members)
    if row is None or row.a is None:
        return ()
    theirs = set(row.a.members)
    return tuple(r for r in index(base, kernels, "none").removed if set(r.a.members) <= theirs)


def baseline_only_caption(gone: Sequence[DiffRow], room: int = 0) -> str:
    """"baseline only: L5.qk_norm_rope Δ -3.1 µs" (several: their count and summed Δ), or a shorter
    form that fits `room` cells (0: any), the Δ kept whole; "" for none."""
    if not gone:
        return ""
    deltas = [r.delta_ns for r in gone]
    delta = "—" if any(d is None for d in deltas) else fmt_ns(sum(deltas))
    count = f"{len(gone)} launch{'es' if len(gone) != 1 else ''}"
    name = gone[0].label if len(gone) == 1 else count
    forms = [f"baseline only: {name} Δ {delta}", f"baseline only: {name} {delta}",
             f"baseline only: {count} {delta}", f"baseline only: {delta}"]
    return next((f for f in forms if not room or len(f) <= room), forms[-1])


def step_delta(base: ProfileSnapshot, snap: ProfileSnapshot) -> tuple[float, float] | None:
    """(baseline's measured step ns, Δ %) of the profile windows, None unless both have one."""
    a, b = base.roofline, snap.roofline
    if a is None or b is None or not a.measured_step_ns:
        return None
    return a.measured_step_ns, 100.0 * (b.measured_step_ns - a.measured_step_ns) / a.measured_step_ns


def summary_parts(base: Baseline, kernels: Sequence[KernelRow], group: str,
                  members: tuple[int, ...], text: str = "") -> list[list[tuple[str, str]]]:
    """The drill-down summary's baseline line: the row's numbers in the baseline, and Δ, as groups
    of styled parts that wrap_pairs keeps whole ("predicted" beside its value, Δ with its %); `text`:
    the filter the row was opened under (its launches that match, on both sides)."""
    d = index(base, kernels, group, text).get(members)
    pairs = [[("baseline ", "$text-muted"), (base.label, "bold")]]
    if d is None or d.a is None:
        return pairs + [[("not in the baseline (added)", "italic $text-warning")]]
    (delta, _), (pct, _) = cells(d)[1:]
    pairs += [[(f"{d.a.count} launch{'es' if d.a.count != 1 else ''}/step", "$text-muted")],
              [("predicted ", "$text-muted"), (fmt_ns(d.a.predicted_ns), "bold")],
              [("measured ", "$text-muted"), (fmt_ns(d.a.measured_ns), "bold")],
              [("Δ ", "$text-muted"), (f"{delta} ({pct})" if d.delta_ns is not None else "—", "bold")]]
    if d.kernel_changed:
        pairs += [[("kernel ", "$text-muted"), (", ".join(d.a.kernels), "bold")]]
    return pairs
