"""The kernel table: one row per op, family, layer or launch; sorted, filtered, drillable.

Rows are rebuilt only when the snapshot's kernels, the grouping, the sort or the filter change
(a profile window, a key), never per token. A cursor the user moved off the top stays on its row
across rebuilds; one on the top row stays on the top row, so on a fresh dashboard ⏎ opens the
costliest op whatever the last profile window re-sorted.
With a baseline snapshot (`app.baseline`) the table gains its Δ columns (tfdash.app.baseline),
sortable like the others; `s` goes from measured to Δ next.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import on
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from tfdash.app import baseline as basemod
from tfdash.app import bindings
from tfdash.app.layout import cell_widths
from tfdash.app.model import DEFAULT_SORT, GROUPS, SORT_KEYS, TableRow, table_rows
from tfdash.app.widgets import kernel_cells as cellsmod
from tfdash.app.widgets.kernel_cells import ASCENDING_FIRST
from tfdash.app.widgets.panes import set_content
from tfdash.app.widgets.row_list import RowList

DRIFT_REDRAW_S = 2.0  # live: how often drifting predictions redraw the table


class KernelDataTable(RowList):
    """The table with Enter bound to "drill" (shown in the footer, remappable by id), and RowList's
    Home and End."""

    BINDINGS = bindings.TABLE

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter is offered over a row to open: not over the empty table of an engine being built, nor
        of a filter that matches nothing."""
        return action != "drill" or (self.app.snapshot is not None and self.row_count > 0)

    def action_drill(self) -> None:
        table = self.parent
        while table is not None and not isinstance(table, KernelTable):
            table = table.parent
        if table is not None:
            table.drill_selected()


class FilterInput(Input):
    """The filter box, with its two ways out bound (bindings.FILTER) so the footer names them: while
    it has the focus the dashboard's letter keys type, and the footer had shown no way out."""

    BINDINGS = bindings.FILTER

    def action_keep(self) -> None:
        self.query_ancestor(KernelTable).close_filter(clear=False)

    def action_clear(self) -> None:
        self.query_ancestor(KernelTable).close_filter(clear=True)


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
        self.timing: cellsmod.Forms = ""
        self._measured: tuple = ()
        self._built_at = 0.0
        self.against = None  # the baseline Index of the rows shown (None without a baseline)
        self._built_for = None  # the baseline the table was last built against
        self._shown_columns: tuple[str, ...] = ()
        self._fitted_w = -1  # the pane's width the columns and lines were last fitted to
        self._bar_w = cellsmod.BAR_W  # the % of step bar's cells (_layout)
        self.warning: cellsmod.Forms = ""  # e.g. a contended host: said under the table
        self.live = True  # p can profile a window: a saved snapshot's Σ line does not name it
        self.ended = False  # the live run is over: the Σ line says what profiles then (layout.ProfileKeys)

    def compose(self):
        yield Static(id="kernel-caption")
        yield FilterInput(placeholder="filter: op, family or kernel name (esc clears)", id="kernel-filter")
        yield KernelDataTable(id="kernel-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="kernel-total")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self.rebuild())
        self.rebuild()

    @property
    def table(self) -> DataTable:
        return self.query_one("#kernel-table", DataTable)

    # -- data ------------------------------------------------------------------------------
    def show(self, kernels: tuple, unavailable: str = "", final: bool = True, warning: cellsmod.Forms = "",
             timing: cellsmod.Forms = "", live: bool = True, ended: bool = False) -> None:
        """New rows. While live (`final=False`) only new measurements rebuild the table at once;
        predictions that drift with the context (attention) are redrawn every few seconds.
        `warning`: one line under the table (a contended host). `timing`: how the measured
        columns were timed, in the caption (kernel_cells.timing_label). Either may be wordings,
        the preferred first: the first that fits the pane is shown, again on a resize. `live`: p
        can profile (the Σ line of an unmeasured table names it only then); `ended`: the live run
        is over, so r comes first."""
        if warning != self.warning or live != self.live or ended != self.ended:
            self.warning, self.live, self.ended = warning, live, ended
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
        """The next column `s` sorts by: one on the screen (the caption names it), not one left out
        for want of values or of width."""
        shown = self._shown_columns or SORT_KEYS
        off = cellsmod.hidden(self.kernels) | {k for k in SORT_KEYS if k not in shown}
        nxt = cellsmod.next_sort_key(self.sort[0], off, self.baseline is not None)
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

    def _cells(self, r: TableRow, step_share_max: float) -> list:
        """The row's cells for the shown columns, then its Δ cells against the baseline (if any)."""
        extra = [] if self.against is None else [Text(v, style=self._color(lv), justify="right")
                                                 for v, lv in basemod.cells(self.against.get(r.members))]
        return cellsmod.cells(r, self.group, self._color, step_share_max, self._shown_columns, self._bar_w) + extra

    def _layout(self) -> tuple[tuple[str, ...], int]:
        """The columns that fit the pane beside the baseline's Δ columns, dropped by priority
        (model.COLUMN_PRIORITY), and the % of step bar's cells (kernel_cells.layout)."""
        width = self.size.width - 2 - cellsmod.baseline_width(self.against, self.rows, self.sort[0]) \
            if self.size.width else None  # its scrollbar and the Δ columns; None: not laid out yet
        widths = cellsmod.widths(self.rows, self.group, self.sort[0], self._color)
        return cellsmod.layout(width, widths, cellsmod.hidden(self.kernels), self.sort[0])

    def fit_size(self) -> None:
        """The columns, bar and lines' wordings for the width a layout gave, in that layout (the dashboard's
        fit_laid_out, layout.FitsBeforeDraw); only where the width changed: it runs at every layout."""
        if self.size.width == self._fitted_w or not self.is_mounted:
            return
        self._fitted_w = self.size.width
        if self._layout() != (self._shown_columns, self._bar_w):
            self.rebuild()
        else:
            self._caption()  # the caption's and the Σ line's wordings fit the new width

    def on_resize(self) -> None:  # after the layout, where Textual no longer calls the screen's hook
        self.call_after_refresh(self.fit_size)

    def rebuild(self) -> None:
        if not self.is_mounted:
            return
        self._built_at = time.monotonic()
        t = self.table
        keep = None
        if t.row_count and self.rows and t.cursor_row > 0:
            sel = self.selected_row()
            keep = sel.key if sel else None
        key, desc = self.sort
        base = self._built_for = self.baseline
        if (key not in SORT_KEYS and base is None) or key in cellsmod.hidden(self.kernels):
            key, desc = self.sort = DEFAULT_SORT  # a re-run's first steps have no p90 to sort by
        had_rows = t.row_count > 0
        self.rows = table_rows(self.kernels, self.group, self.sort if key in SORT_KEYS else DEFAULT_SORT,
                               self.filter_text)
        self.against = basemod.index(base, self.kernels, self.group, self.filter_text) if base is not None else None
        if self.against is not None and key in basemod.SORT_KEYS:
            self.rows = basemod.sort_rows(self.rows, self.against, key, desc)
        t.clear(columns=True)
        self._shown_columns, self._bar_w = self._layout()
        self._fitted_w = self.size.width
        columns = cellsmod.headers(self._shown_columns, self.group, (key, desc), self.against is not None)
        share_max = max((r.share or 0.0 for r in self.rows), default=0.0) or 1.0
        cells = [self._cells(r, share_max) for r in self.rows]
        # Widths given: a DataTable measures new columns only when idle, till then as wide as headers ("ga")
        widths = cell_widths(tuple(columns), cells)
        for col_key, header in columns:
            t.add_column(header, key=col_key, width=widths[col_key])
        for r, row in zip(self.rows, cells):
            t.add_row(*row, key=r.key)
        for i, r in enumerate(self.rows):
            if r.key == keep:
                t.move_cursor(row=i, animate=False)
                break
        self._caption()
        if (t.row_count > 0) != had_rows:
            self.screen.refresh_bindings()  # ⏎ (drill in) comes into the footer, or leaves it

    def _caption(self) -> None:
        set_content(self.query_one("#kernel-caption", Static), cellsmod.caption(
            self.group, self.sort, self.filter_text, self.rows, self.kernels, self.against, self.baseline,
            self.unavailable, self.timing, self._line_width))
        self._total()

    @property
    def _line_width(self) -> int:
        """Cells of text the caption and the Σ line hold (their padding off); unlimited before layout."""
        return self.size.width - 2 if self.size.width else 10_000

    def _total(self) -> None:
        set_content(self.query_one("#kernel-total", Static),
                    cellsmod.total(self.kernels, self.baseline, self.warning, self._line_width, self.live,
                                   self.ended, keys=bindings.profile_hint(self.app)))

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
        # Focused now, not after the keys already queued (`focus()` waits its turn): what is typed
        # straight after `/`, esc included, is the filter's, not the table's s, g, e, a or ⏎.
        self.screen.set_focus(box)

    @on(Input.Changed, "#kernel-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != self.filter_text:
            self.set_filter(event.value)

    def close_filter(self, clear: bool) -> None:
        box = self.query_one("#kernel-filter", Input)
        if clear:
            box.value = ""
            self.set_filter("")
        box.remove_class("-open")
        self.table.focus()

