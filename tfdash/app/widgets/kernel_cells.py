"""What the kernel table (kernel_table.py) draws, as pure functions of plain values: a row's
cells, the width each column wants, the column headers with the sort mark, the order `s` walks
the sort keys in, the caption line above the table (with how the measured columns were timed)
and the Σ line under it.

`color(level)` gives a style for a gap level ("good", "fair", …; the theme's $tf-* variables).
"""

from __future__ import annotations

from typing import Callable

from rich.cells import cell_len
from rich.text import Text
from textual.content import Content

from tfdash.app import baseline as basemod
from tfdash.app.counters_view import meas_cell
from tfdash.app.layout import ProfileKeys
from tfdash.app.model import (COLUMNS, GROUP_LABEL, SORT_KEYS, TableRow, bar, fit_columns, fmt_gap, fmt_gbps, fmt_ns,
                              fmt_num, gap_level, own_window)
from tfdash.textsafe import visible

SORT_CYCLE = SORT_KEYS  # `s` walks the columns left to right, as the header shows them
ASCENDING_FIRST = {"label", "bound", "kernel"}
LEFT = ("label", "bound", "share", "kernel")  # the columns read from the left; numbers align right
BAR_W = 6  # the % of step bar's least cells; the table's spare width widens it (KernelTable)

Color = Callable[[str], str]
Forms = str | tuple[str, ...]  # one line, or its wordings, the preferred first: the first that fits is shown


def cells(r: TableRow, group: str, color: Color, step_share_max: float, columns: tuple[str, ...],
          bar_w: int = BAR_W) -> list:
    """The row's cells for `columns`, in that order (share's bar, `bar_w` cells, is scaled to `step_share_max`)."""
    right = dict(justify="right")
    gap = r.gap
    gap_cell = Text(fmt_gap(gap), style=color(gap_level(gap)), **right)
    share = r.share
    share_cell = Text.assemble((fmt_num(share * 100 if share is not None else None, 1).rjust(5), ""),
                               " ", (bar((share or 0.0) / step_share_max, bar_w), color("fair") or ""))
    by_key = {
        "label": Text(visible(r.label), style="bold" if group != "none" else ""),
        "count": Text(f"{r.count}", **right),
        "predicted": Text(fmt_ns(r.predicted), **right),
        "measured": Text(fmt_ns(r.measured), **right),
        "p90": Text(fmt_ns(r.p90), **right),
        "gap": gap_cell,
        "gbps": Text(fmt_gbps(r.gbps, ""), **right),
        "meas_bytes": Text(meas_cell(r.meas_bytes, r.meas_count, r.count), **right),
        "share": share_cell,
        "bound": Text(visible(r.bound), style="dim" if r.bound == "memory" else ""),
        "kernel": Text(visible(r.kernel), style="dim" if len(r.kernels) != 1 else ""),
    }
    return [by_key[k] for k in columns]


def widths(rows: list[TableRow], group: str, sort_key: str, color: Color) -> dict[str, int]:
    """Each column's width: its header (with padding and the sort mark) or its widest cell."""
    out = {key: cell_len(str(header)) + 2 + (2 if key == sort_key else 0)  # padding, sort mark
           for key, header in COLUMNS}
    out["label"] = max(out["label"], cell_len(GROUP_LABEL[group]) + 4)
    for r in rows:
        for key, cell in zip(SORT_KEYS, cells(r, group, color, 1.0, SORT_KEYS)):
            out[key] = max(out[key], cell.cell_len + 2)
    return out


def layout(width: int | None, widths: dict[str, int], hide: set[str],
           sort_key: str | None = None) -> tuple[tuple[str, ...], int]:
    """The columns that fit `width` cells (None: not laid out yet, all of them), dropped by priority
    (model.COLUMN_PRIORITY; the `sort_key` column is kept before any other), the `hide` ones left
    out; and the % of step bar's cells: BAR_W and the width the columns leave over (a wide terminal
    had drawn a six-cell bar beside a band of empty columns)."""
    widths = {k: 0 if k in hide else w for k, w in widths.items()}
    shown = tuple(k for k in fit_columns(10_000 if width is None else width, widths, sort_key) if k not in hide)
    spare = width - sum(widths[k] for k in shown) if width is not None and "share" in shown else 0
    return shown, BAR_W + max(0, spare)


def baseline_width(against, rows: list[TableRow], sort_key: str) -> int:
    """The cells the baseline's Δ columns take (padding and sort mark included), 0 without one: the
    table's own columns fit in what is left, so a narrow terminal drops those, never the Δ."""
    if against is None:
        return 0
    out = [cell_len(header) + 2 + (2 if key == sort_key else 0) for key, header in basemod.COLUMNS]
    for r in rows:
        out = [max(w, cell_len(text) + 2) for w, (text, _) in zip(out, basemod.cells(against.get(r.members)))]
    return sum(out)


def headers(shown: tuple[str, ...], group: str, sort: tuple[str, bool], with_baseline: bool) -> list:
    """(column key, header Text) of the shown columns, then the baseline's Δ columns."""
    key, desc = sort
    base_columns = basemod.COLUMNS if with_baseline else ()
    out = []
    for col_key, header in COLUMNS + base_columns:
        if col_key not in shown and not any(col_key == c for c, _ in base_columns):
            continue
        label = GROUP_LABEL[group] if col_key == "label" else header
        if col_key == key:
            label += " ▼" if desc else " ▲"
        out.append((col_key, Text(label, justify="left" if col_key in LEFT else "right")))
    return out


def hidden(kernels: tuple) -> set[str]:
    """The columns with nothing to show yet: meas bytes until Nsight Compute measured a launch,
    p90 until the launches have one. They take no width and `s` skips them."""
    out = set()
    if not any(k.counters is not None for k in kernels):
        out.add("meas_bytes")
    if not any(k.measured_p90_ns is not None for k in kernels):
        out.add("p90")
    return out


def next_sort_key(key: str, hide: set[str], with_baseline: bool) -> str:
    """The sort key after `key` in the order `s` walks (the `hide` columns left out): Δ right
    after measured with a baseline."""
    cycle = tuple(k for k in SORT_CYCLE if k not in hide)
    if with_baseline:  # Δ right after measured: the column a comparison is about
        at = cycle.index("measured") + 1
        cycle = cycle[:at] + basemod.SORT_CYCLE + cycle[at:]
    return cycle[(cycle.index(key) + 1) % len(cycle)] if key in cycle else cycle[0]


def fit(forms: Forms, room: int) -> str:
    """The first of `forms` (wordings, the preferred first) within `room` cells, else the shortest."""
    if isinstance(forms, str):
        return forms
    return next((f for f in forms if cell_len(f) <= room), min(forms, key=cell_len, default=""))


def timing_label(snap) -> Forms:
    """The caption's word on how the measured columns were timed: every step (continuous CUPTI
    records); the window the dashboard took on its own (a CPU run's first numbers, with no key
    pressed), in wordings longest first; else nothing (a window asked for with p: the roofline
    pane says which)."""
    t, r = getattr(snap, "timing", None), getattr(snap, "roofline", None)
    if t is not None and t.method == "continuous" and t.steps_measured:
        return f"every step measured · p50/p90 over the last {t.range_steps:,} steps"
    if own_window(snap) and r is not None:
        return (f"a {r.steps}-step window at ctx_len {r.ctx_len:,}, taken by the dashboard on its own",
                f"a {r.steps}-step window the dashboard took on its own", f"auto window, {r.steps} steps")
    return ""


Part = tuple[str, str]  # (text, style), as Content.assemble takes them
MIN_NAME = 12  # cells: a file name cut shorter than "…043207.json" says too little to be worth its room


def span(parts: list[Part]) -> int:
    """The cells `parts` take on screen."""
    return sum(cell_len(text) for text, _ in parts)


def first_fit(wordings, room: int) -> list[Part]:
    """The first of `wordings` (each a list of parts) within `room` cells; none (no parts) if none fits."""
    return next((w for w in wordings if span(w) <= room), [])


def _wordings(forms: Forms) -> tuple[str, ...]:
    return (forms,) if isinstance(forms, str) else forms


def _names(labels: list[str], most: int) -> str:
    """Up to `most` of `labels`, then how many more."""
    return ", ".join(labels[:most]) + (f" +{len(labels) - most}" if len(labels) > most else "")


def tail(name: str, room: int) -> str:
    """`name` whole within `room` cells, else its end after an ellipsis ("…043207.json": a file name's
    tail tells one export from the next); "" when not even MIN_NAME cells are left."""
    if cell_len(name) <= room:
        return name
    if room < MIN_NAME:
        return ""
    out = ""
    for ch in reversed(name):
        if cell_len(ch + out) > room - 1:
            break
        out = ch + out
    return "…" + out


def head(text: str, room: int) -> str:
    """`text` whole within `room` cells, else its start and an ellipsis; "" below MIN_NAME cells."""
    if cell_len(text) <= room:
        return text
    if room < MIN_NAME:
        return ""
    out = ""
    for ch in text:
        if cell_len(out + ch) > room - 1:
            break
        out += ch
    return out.rstrip() + "…"


def flow(units: list[list[Part]], width: int, indent: int) -> list[Part]:
    """`units` two spaces apart on a line; one that would pass `width` starts a new line `indent`
    cells in, so a line breaks between units ("gap 1.95×"), never inside one."""
    out: list[Part] = []
    used = 0
    for unit in units:
        gap = ""
        if out and used + 2 + span(unit) > width:
            gap, used = "\n" + " " * indent, indent
        elif out:
            gap, used = "  ", used + 2
        (text, style), *rest = unit
        out += [(gap + text, style), *rest]  # the gap in its label's style
        used += span(unit)
    return out


def caption(group: str, sort: tuple[str, bool], filter_text: str, rows: list, kernels: tuple, against,
            baseline, unavailable: str, timing: Forms = "", width: int = 10_000) -> Content:
    """The line above the table: grouping, sort, filter, counts, the baseline, what is missing,
    and how the measured columns were timed (timing_label). The line is one row high, so it is
    built to fit `width`: each part after the row count (under a filter, first how many launches the
    rows sum) takes the first of its wordings that fits what is left (a file name by its tail), or
    is left out with its separator: no "vs" or "·" is left dangling at the edge, nor a part wrapped
    out of sight."""
    key, desc = sort
    header = dict(COLUMNS + basemod.COLUMNS)[key] if key != "label" else GROUP_LABEL[group]
    measured = sum(1 for k in kernels if k.measured_p50_ns is not None)
    parts = [("group ", "$text-muted"), (GROUP_LABEL[group], "bold $text-accent"),
             ("  sort ", "$text-muted"), (f"{header} {'▼' if desc else '▲'}", "bold $text-accent")]
    if filter_text:
        parts += [("  filter ", "$text-muted"), (filter_text, "bold $text-warning")]
    counts = f"{len(rows)} row{'' if len(rows) == 1 else 's'}"
    parts.append(("  ", ""))

    def add(*wordings: list[Part]) -> None:
        parts.extend(first_fit(wordings, width - span(parts)))

    empty = bool(filter_text and not rows and kernels)  # the hint below says why, in the room "0 of N" would take
    if filter_text.split() and not empty:  # the rows sum only the launches that match (model.filter_launches)
        of = f"{counts} · {sum(r.count for r in rows)} of {len(kernels)} launches"
        parts.extend(first_fit([[(of + " match", "$text-muted")], [(of, "$text-muted")]], width - span(parts))
                     or [(counts, "$text-muted")])
    else:
        parts.append((counts if empty else f"{counts} · {len(kernels)} launches", "$text-muted"))

    if empty:  # the table is empty: why, before anything else, in what fits
        no = [("  · no ", "$text-warning"), (GROUP_LABEL[group], "$text-warning")]
        names = [("  · no launch's names hold every word of the filter", "$text-warning")]  # matched launch by launch
        add(names + [(" (/ edits it, esc in it clears)", "$text-warning")], names,
            no + [(" row matches", "$text-warning")], [("  · no match", "$text-warning")])

    if against is not None:
        name = tail(baseline.label, width - span(parts) - 5)  # 5: "  vs "
        add([("  vs ", "$text-muted"), (name, "bold")] if name else [])
        if not any(k.measured_p50_ns is not None for k in baseline.snapshot.kernels):  # every Δ is "—": why
            add([("  · baseline not profiled: no Δ", "$text-warning")], [("  · baseline not profiled", "$text-warning")])
        gone = [r.label for r in against.removed]
        if gone:
            add([("  baseline only: ", "$text-muted"), (_names(gone, 4), "$text-warning")],
                [("  baseline only: ", "$text-muted"), (_names(gone, 1), "$text-warning")])
    if kernels and not measured:
        why = unavailable or "not profiled yet"
        cut = head(why, width - span(parts) - 4)  # 4: "  · "
        add([("  · ", "$text-muted"), (why, "italic $text-muted")],
            [("  · ", "$text-muted"), (cut, "italic $text-muted")] if cut else [])
    elif measured and timing:
        add(*[[("  · ", "$text-muted"), (form, "$text-success")] for form in _wordings(timing)])
    return Content.assemble(*parts)


def total(kernels: tuple, baseline, warning: Forms, width: int = 10_000, live: bool = True,
          ended: bool = False, *, keys: ProfileKeys) -> Content | str:
    """The Σ line under the table: the step predicted and measured, the gap, the baseline's Δ;
    or the warning (a contended host) in its place, in the wording that fits `width`. Where the
    numbers pass `width` they go on a second line, broken between "label value" pairs. Unmeasured,
    it says how to measure: p where the run is `live`, ProfileKeys.after_run's advice once it has
    `ended`, none in a saved snapshot (p cannot profile); `keys` names r and p as the keymap binds
    them (bindings.profile_hint)."""
    if not kernels:
        return ""
    pred = sum(k.predicted_ns for k in kernels)
    meas = [k.measured_p50_ns for k in kernels]
    lead = ("Σ step  ", "$text-muted")
    units = [[lead, ("predicted ", "$text-muted"), (fmt_ns(pred), "bold")]]
    if all(m is not None for m in meas):
        measured = sum(meas)
        gap = measured / pred if pred else None
        units += [[("kernels measured ", "$text-muted"), (fmt_ns(measured), "bold")],
                  [("gap ", "$text-muted"), (fmt_gap(gap), f"bold $tf-{gap_level(gap) or 'fair'}")]]
    else:
        how = keys.after_run_text() if live and ended else \
            f"press {keys.profile} to profile a window" if live else \
            "this snapshot kept no profile window"
        units += [[("measured ", "$text-muted"), ("— " + how, "italic $text-muted")]]
    if baseline is not None and all(m is not None for m in meas):
        theirs = [k.measured_p50_ns for k in baseline.snapshot.kernels]
        if theirs and all(m is not None for m in theirs):
            d = sum(meas) - sum(theirs)
            units += [[("baseline ", "$text-muted"), (fmt_ns(sum(theirs)), "bold"),
                       ("  Δ ", "$text-muted"), (("+" if d > 0 else "") + fmt_ns(d), "bold")]]
    if warning:
        return Content.assemble(("⚠ ", "bold $text-warning"), (fit(warning, width - 2), "$text-warning"))
    return Content.assemble(*flow(units, width, cell_len(lead[0])))
