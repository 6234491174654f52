"""The kernel table: one row per op, family, layer or launch; sorted, filtered, drillable.

Rows are rebuilt only when the snapshot's kernels, the grouping, the sort or the filter change
(a profile window, a key), never per token. The cursor stays on the same row across rebuilds.
With a baseline snapshot (`app.baseline`) the table gains its Δ columns (tfdash.app.baseline),
sortable like the others; `s` goes from measured to Δ next.
"""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from tfdash.app import baseline as basemod
from tfdash.app import bindings
from tfdash.app.counters_view import meas_cell
from tfdash.app.model import (COLUMNS, DEFAULT_SORT, GROUP_LABEL, GROUPS, SORT_KEYS, TableRow, bar, fit_columns,
                              fmt_gap, fmt_gbps, fmt_ns, fmt_num, gap_level, table_rows)
from tfdash.app.widgets.panes import set_content
from tfdash.textsafe import visible

DRIFT_REDRAW_S = 2.0  # live: how often drifting predictions redraw the table
SORT_CYCLE = SORT_KEYS  # `s` walks the columns left to right, as the header shows them
ASCENDING_FIRST = {"label", "bound"}


class KernelDataTable(DataTable):
    """The DataTable with Enter bound to "drill" (shown in the footer, remappable by id)."""

    BINDINGS = bindings.TABLE

    def action_drill(self) -> None:
        table = self.parent
        while table is not None and not isinstance(table, KernelTable):
            table = table.parent
        if table is not None:
            table.drill_selected()


def timing_label(snap) -> str:
    """The caption's word on how the measured columns were timed: every step (continuous CUPTI
    records), else nothing (a profile window's steps, as the roofline pane says)."""
    t = getattr(snap, "timing", None)
    if t is None or t.method != "continuous" or not t.steps_measured:
        return ""
    return f"every step measured · p50/p90 over the last {t.range_steps:,} steps"


class KernelTable(Vertical):
    class Drill(Message):
        """The user opened a row (Enter)."""

        def __init__(self, row: TableRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.group = "op"
        self.sort: tuple[str, bool] = DEFAULT_SORT
        self.filter_text = ""
        self.kernels: tuple = ()
        self.rows: list[TableRow] = []
        self.unavailable = ""
        self.timing = ""
        self._measured: tuple = ()
        self._built_at = 0.0
        self.against = None  # the baseline Index of the rows shown (None without a baseline)
        self._built_for = None  # the baseline the table was last built against
        self._shown_columns: tuple[str, ...] = ()
        self.warning = ""  # e.g. a contended host: said under the table

    def compose(self):
        yield Static(id="kernel-caption")
        yield Input(placeholder="filter: op, family or kernel name (esc clears)", id="kernel-filter")
        yield KernelDataTable(id="kernel-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="kernel-total")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.rebuild())
        self.rebuild()

    @property
    def table(self) -> DataTable:
        return self.query_one("#kernel-table", DataTable)

    # -- data ------------------------------------------------------------------------------
    def show(self, kernels: tuple, unavailable: str = "", final: bool = True, warning: str = "",
             timing: str = "") -> None:
        """New rows. While live (`final=False`) only new measurements rebuild the table at once;
        predictions that drift with the context (attention) are redrawn every few seconds.
        `warning`: one line under the table (a contended host). `timing`: how the measured
        columns were timed, in the caption (timing_label)."""
        if warning != self.warning:
            self.warning = warning
            self._total()
        if timing != self.timing:
            self.timing = timing
            self._caption()
        same_base = self.baseline is self._built_for  # a baseline chosen (b) or dropped: the Δ columns change
        if same_base and (kernels is self.kernels or (kernels == self.kernels and unavailable == self.unavailable)):
            return
        measured = tuple((k.measured_p50_ns, k.counters) for k in kernels)  # counters redraw at once too
        now = time.monotonic()
        if (not final and same_base and measured == self._measured and len(kernels) == len(self.kernels)
                and unavailable == self.unavailable and now - self._built_at < DRIFT_REDRAW_S):
            return
        self.kernels, self.unavailable, self._measured = kernels, unavailable, measured
        self.rebuild()

    def set_group(self, group: str) -> None:
        assert group in GROUPS
        self.group = group
        self.rebuild()

    def next_group(self) -> str:
        self.set_group(GROUPS[(GROUPS.index(self.group) + 1) % len(GROUPS)])
        return self.group

    def set_sort(self, key: str, descending: bool | None = None) -> None:
        if descending is None:
            descending = key not in ASCENDING_FIRST
        self.sort = (key, descending)
        self.rebuild()

    @property
    def baseline(self):
        return getattr(self.app, "baseline", None)

    def next_sort(self) -> str:
        key = self.sort[0]
        cycle = SORT_CYCLE if self.has_counters else tuple(k for k in SORT_CYCLE if k != "meas_bytes")
        if self.baseline is not None:  # Δ right after measured: the column a comparison is about
            at = cycle.index("measured") + 1
            cycle = cycle[:at] + basemod.SORT_CYCLE + cycle[at:]
        nxt = cycle[(cycle.index(key) + 1) % len(cycle)] if key in cycle else cycle[0]
        self.set_sort(nxt)
        return nxt

    def reverse(self) -> None:
        self.set_sort(self.sort[0], not self.sort[1])

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self.rebuild()

    def selected_row(self) -> TableRow | None:
        t = self.table
        if not self.rows or t.row_count == 0:
            return None
        i = max(0, min(t.cursor_row, len(self.rows) - 1))
        return self.rows[i]

    # -- rendering -------------------------------------------------------------------------
    def _color(self, level: str) -> str:
        return self.app.theme_variables.get(f"tf-{level}", "") if level else ""

    def _cells(self, r: TableRow, step_share_max: float, columns: tuple[str, ...] | None = None) -> list:
        right = dict(justify="right")
        gap = r.gap
        gap_cell = Text(fmt_gap(gap), style=self._color(gap_level(gap)), **right)
        share = r.share
        share_cell = Text.assemble((fmt_num(share * 100 if share is not None else None, 1).rjust(5), ""),
                                   " ", (bar((share or 0.0) / step_share_max, 6), self._color("fair") or ""))
        cells = {
            "label": Text(visible(r.label), style="bold" if self.group != "none" else ""),
            "count": Text(f"{r.count}", **right),
            "predicted": Text(fmt_ns(r.predicted), **right),
            "measured": Text(fmt_ns(r.measured), **right),
            "gap": gap_cell,
            "gbps": Text(fmt_gbps(r.gbps, ""), **right),
            "meas_bytes": Text(meas_cell(r.meas_bytes, r.meas_count, r.count), **right),
            "share": share_cell,
            "bound": Text(visible(r.bound), style="dim" if r.bound == "memory" else ""),
        }
        return [cells[k] for k in (columns or self._shown_columns)]

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns that fit the pane, dropped by priority (model.COLUMN_PRIORITY)."""
        width = self.size.width - 2 if self.size.width else 10_000  # its scrollbar
        widths = {key: cell_len(str(header)) + 2 + (2 if key == self.sort[0] else 0)  # padding, sort mark
                  for key, header in COLUMNS}
        widths["label"] = max(widths["label"], cell_len(GROUP_LABEL[self.group]) + 4)
        share_max = 1.0
        for r in self.rows:
            for key, cell in zip(SORT_KEYS, self._cells(r, share_max, SORT_KEYS)):
                widths[key] = max(widths[key], cell.cell_len + 2)
        if not self.has_counters:  # the column exists once Nsight Compute measured a launch
            widths["meas_bytes"] = 0
            return tuple(k for k in fit_columns(width, widths) if k != "meas_bytes")
        return fit_columns(width, widths)

    @property
    def has_counters(self) -> bool:
        return any(k.counters is not None for k in self.kernels)

    def on_resize(self) -> None:
        if self.columns != self._shown_columns:
            self.rebuild()

    def rebuild(self) -> None:
        if not self.is_mounted:
            return
        self._built_at = time.monotonic()
        t = self.table
        keep = None
        if t.row_count and self.rows:
            sel = self.selected_row()
            keep = sel.key if sel else None
        key, desc = self.sort
        base = self._built_for = self.baseline
        if key not in SORT_KEYS and base is None:
            key, desc = self.sort = DEFAULT_SORT
        self.rows = table_rows(self.kernels, self.group, self.sort if key in SORT_KEYS else DEFAULT_SORT,
                               self.filter_text)
        self.against = basemod.index(base, self.kernels, self.group) if base is not None else None
        if self.against is not None and key in basemod.SORT_KEYS:
            self.rows = basemod.sort_rows(self.rows, self.against, key, desc)
        t.clear(columns=True)
        self._shown_columns = self.columns
        base_columns = basemod.COLUMNS if self.against is not None else ()
        for col_key, header in COLUMNS + base_columns:
            if col_key not in self._shown_columns and not any(col_key == c for c, _ in base_columns):
                continue
            label = GROUP_LABEL[self.group] if col_key == "label" else header
            if col_key == key:
                label += " ▼" if desc else " ▲"
            justify = "left" if col_key in ("label", "bound", "share") else "right"
            t.add_column(Text(label, justify=justify), key=col_key)
        share_max = max((r.share or 0.0 for r in self.rows), default=0.0) or 1.0
        for r in self.rows:
            extra = []
            if self.against is not None:
                extra = [Text(v, style=self._color(lv), justify="right")
                         for v, lv in basemod.cells(self.against.get(r.members))]
            t.add_row(*self._cells(r, share_max), *extra, key=r.key)
        if keep is not None:
            for i, r in enumerate(self.rows):
                if r.key == keep:
                    t.move_cursor(row=i, animate=False)
                    break
        self._caption()

    def _caption(self) -> None:
        key, desc = self.sort
        header = dict(COLUMNS + basemod.COLUMNS)[key] if key != "label" else GROUP_LABEL[self.group]
        measured = sum(1 for k in self.kernels if k.measured_p50_ns is not None)
        parts = [("group ", "$text-muted"), (GROUP_LABEL[self.group], "bold $text-accent"),
                 ("  sort ", "$text-muted"), (f"{header} {'▼' if desc else '▲'}", "bold $text-accent")]
        if self.filter_text:
            parts += [("  filter ", "$text-muted"), (self.filter_text, "bold $text-warning")]
        parts += [("  ", ""), (f"{len(self.rows)} rows · {len(self.kernels)} launches", "$text-muted")]
        if self.against is not None:
            parts += [("  vs ", "$text-muted"), (self.baseline.label, "bold")]
            gone = self.against.removed
            if gone:
                names = ", ".join(r.label for r in gone[:4]) + (f" +{len(gone) - 4}" if len(gone) > 4 else "")
                parts += [("  baseline only: ", "$text-muted"), (names, "$text-warning")]
        if self.filter_text and not self.rows and self.kernels:
            parts += [("  · no ", "$text-warning"), (GROUP_LABEL[self.group], "$text-warning"),
                      (" row's names hold every word of the filter (/ edits it, esc in it clears)",
                       "$text-warning")]
        if self.kernels and not measured:
            parts += [("  · ", "$text-muted"), (self.unavailable or "not profiled yet", "italic $text-muted")]
        elif measured and self.timing:
            parts += [("  · ", "$text-muted"), (self.timing, "$text-success")]
        set_content(self.query_one("#kernel-caption", Static), Content.assemble(*parts))
        self._total()

    def _total(self) -> None:
        ks = self.kernels
        if not ks:
            set_content(self.query_one("#kernel-total", Static), "")
            return
        pred = sum(k.predicted_ns for k in ks)
        meas = [k.measured_p50_ns for k in ks]
        parts = [("Σ step  ", "$text-muted"), ("predicted ", "$text-muted"), (fmt_ns(pred), "bold")]
        if all(m is not None for m in meas):
            total = sum(meas)
            gap = total / pred if pred else None
            parts += [("  kernels measured ", "$text-muted"), (fmt_ns(total), "bold"),
                      ("  gap ", "$text-muted"), (fmt_gap(gap), f"bold $tf-{gap_level(gap) or 'fair'}")]
        else:
            parts += [("  measured ", "$text-muted"), ("— press p to profile a window", "italic $text-muted")]
        base = self.baseline
        if base is not None and all(m is not None for m in meas):
            theirs = [k.measured_p50_ns for k in base.snapshot.kernels]
            if theirs and all(m is not None for m in theirs):
                d = sum(meas) - sum(theirs)
                parts += [("  baseline ", "$text-muted"), (fmt_ns(sum(theirs)), "bold"),
                          ("  Δ ", "$text-muted"), (("+" if d > 0 else "") + fmt_ns(d), "bold")]
        if self.warning:
            parts = [("⚠ ", "bold $text-warning"), (self.warning, "$text-warning")]
        set_content(self.query_one("#kernel-total", Static), Content.assemble(*parts))

    # -- events ----------------------------------------------------------------------------
    def drill_selected(self) -> None:
        row = self.selected_row()
        if row is not None:
            self.post_message(self.Drill(row))

    @on(DataTable.RowSelected, "#kernel-table")
    def _selected(self, event: DataTable.RowSelected) -> None:  # a mouse click on a row
        event.stop()
        self.drill_selected()

    @on(DataTable.HeaderSelected, "#kernel-table")
    def _header(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = str(event.column_key.value)
        if key == self.sort[0]:
            self.reverse()
        else:
            self.set_sort(key)

    def open_filter(self) -> None:
        box = self.query_one("#kernel-filter", Input)
        box.value = self.filter_text
        box.add_class("-open")
        box.focus()

    @on(Input.Changed, "#kernel-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.filter_text:
            self.set_filter(event.value)

    @on(Input.Submitted, "#kernel-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.close_filter(clear=False)

    def close_filter(self, clear: bool) -> None:
        box = self.query_one("#kernel-filter", Input)
        if clear:
            box.value = ""
            self.set_filter("")
        box.remove_class("-open")
        self.table.focus()

    def key_escape(self, event) -> None:
        box = self.query_one("#kernel-filter", Input)
        if box.has_focus:
            event.stop()
            self.close_filter(clear=True)
