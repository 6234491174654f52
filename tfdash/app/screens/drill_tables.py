"""The drill-down's two tables: the row's instances (every launch, predicted vs measured, and the
baseline's time and Δ), and the row's cost by operand (summed over its launches) under the current
launch's dims and grid (named where the row's launches differ in them).

Each shows the columns that fit its pane whole (layout.fill_whole). The operands' caption is cut
at its end ("…") where it would leave the table fewer than TOP_OPERANDS rows: whole, attention's
dims and grid take every line of an 80x24 pane, which then shows no operand at all. What they hold
is kept, and they are filled once a layout has given them their width, before that frame is drawn
(layout.FitsBeforeDraw): a table filled at the screen's mount, before it had a width, was drawn
for a frame with every column (headers cut mid-word, the Δ scrolled off, a horizontal scrollbar).
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.widgets import DataTable, Static

from tfdash.app import baseline as basemod, drill_model
from tfdash.app.layout import fill_whole
from tfdash.app.model import fmt_bytes, fmt_gap, fmt_gbps, fmt_ns, fmt_num, gap_level
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import KEEP_LAYOUT, visible, visible_content

KIND_SHORT = {"activation": "act", "weight": "weight", "cache": "KV cache", "table": "table"}
# The columns that go first when a pane is too narrow for all (the last listed first): ← → switch
# the tabs, so a table here is never scrolled sideways and a column is shown whole or not at all.
INSTANCE_PRIORITY = ("role", "meas", "pred", "base", "delta", "gap", "p90", "gbps")
# Against a baseline, Δ outlasts every other number but the measured time, as in the kernel table.
INSTANCE_PRIORITY_VS = ("role", "meas", "delta", "pred", "base", "gap", "p90", "gbps")
OPERAND_PRIORITY = ("op", "pct", "read", "written", "kind", "buf")
TOP_OPERANDS = 3  # rows of the costliest operands (listed first) kept under the header: the caption is cut for them
OPERAND_COLUMNS = tuple((key, Text(label, justify="right" if key in ("read", "written", "pct") else "left"))
                        for key, label in (("op", "operand"), ("kind", "kind"), ("read", "read"),
                                           ("written", "written"), ("pct", "%"), ("buf", "buffer")))


def operands_shown(room: int, n: int) -> str:
    """The cost-by-operand pane's subtitle where its table's `room` rows (its header's among them)
    show fewer than its `n` operands (80x24: the TOP_OPERANDS the caption is cut to leave), the
    rest scrolled."""
    return f"{max(0, room - 1)} of {n} operands shown" if room - 1 < n else ""


def cut_caption(caption: Content, width: int, lines: int) -> Content:
    """`caption` as wrapped to `width` cells, cut to its first `lines` lines, the last ending in "…"
    where any are left out (the same caption whole where it fits)."""
    wrapped = caption.wrap(width)
    if len(wrapped) <= lines or width < 2:
        return caption
    kept = wrapped[:max(1, lines)]
    kept[-1] = kept[-1].truncate(width - 1) + Content.styled("…", "$text-muted")
    return Content("\n").join(kept)


def instance_cells(k, against, colors) -> list[Text]:
    """One launch's row: its role, times, gap and GB/s, and against a baseline its time there and Δ."""
    g = k.gap
    extra = []
    if against is not None:
        extra = [Text(v, justify="right", style=colors.get(f"tf-{lv}", "") if lv else "")
                 for v, lv in basemod.cells(against.get((k.index,)))[:2]]
    return [Text(visible(k.role)), Text(fmt_ns(k.predicted_ns), justify="right"),
            Text(fmt_ns(k.measured_p50_ns), justify="right"), Text(fmt_ns(k.measured_p90_ns), justify="right"),
            Text(fmt_gap(g), justify="right", style=colors.get(f"tf-{gap_level(g)}", "") if g else ""),
            Text(fmt_gbps(k.achieved_gbps, ""), justify="right"), *extra]


class DrillTables:
    """Mixed into DrillScreen: the instances and operands tables, refilled to their panes' sizes."""

    _instance_rows = None  # (columns, rows, keys, priority, launches only the baseline has) as last built
    _operand_rows: list[list[Text]] | None = None  # as last built, for the current launch
    _operand_caption: Content | None = None  # the caption over them, whole (cut_caption fits it to the pane)
    _fitted_to = None  # the panes' sizes the tables were last filled to

    def fit_laid_out(self) -> None:
        """Both tables refilled where their panes' sizes changed (layout.FitsBeforeDraw)."""
        pane, caption = self.query_one("#operands"), self.query_one("#operands-caption")
        sizes = (self.query_one("#instances").size, pane.content_size, caption.outer_size)
        if sizes != self._fitted_to:
            self._fitted_to = sizes
            self._fill_instances()
            self._fill_operands()

    def _instances(self, members) -> None:
        base, snap = getattr(self.app, "baseline", None), self.app.snapshot
        against = basemod.index(base, snap.kernels, "none") if base is not None and snap is not None else None
        columns = (("role", "launch"), ("pred", "predicted"), ("meas", "measured"), ("p90", "p90"),
                   ("gap", "gap ×"), ("gbps", "GB/s"))
        if against is not None:
            columns += basemod.COLUMNS[:2]  # baseline, Δ
        columns = tuple((key, Text(label, justify="left" if key == "role" else "right")) for key, label in columns)
        rows = [instance_cells(k, against, self.app.theme_variables) for k in members]
        gone = basemod.baseline_only(base, snap.kernels, self.group, self.row.members, self.filter_text) \
            if against is not None else ()
        self._instance_rows = (columns, rows, [str(k.index) for k in members],
                               INSTANCE_PRIORITY if against is None else INSTANCE_PRIORITY_VS, gone)
        self._fill_instances()

    def _fill_instances(self) -> None:
        """The instances with the columns that fit the pane, the cursor on the current launch, and
        the launches only the baseline has (whose Δ the summary counts and no instance shows) named
        in the room the pane's border leaves."""
        if self._instance_rows is None:
            return
        t = self.query_one("#instances-table", DataTable)
        columns, rows, keys, priority, gone = self._instance_rows
        fill_whole(t, columns, rows, keys, priority)
        pane = self.query_one("#instances")
        pane.border_subtitle = Content(visible(basemod.baseline_only_caption(gone, max(0, pane.size.width - 6))))
        if keys:  # the cursor stays on the current launch across rebuilds
            t.move_cursor(row=keys.index(str(self.current)) if str(self.current) in keys else 0, animate=False)

    def _operands(self, snap: ProfileSnapshot) -> None:
        caption = self.query_one("#operands-caption", Static)
        plan = self.plan
        if plan is None:
            caption.update(Content.styled(visible(drill_model.no_plan_why(snap)), "italic $text-muted"))
            return
        ctx = drill_model.ctx_of(snap)
        key = (ctx, self.current)
        if key == self._operands_key:
            return
        self._operands_key = key
        ops = drill_model.operand_costs(plan, self.row.members, ctx)
        total = sum(o.read + o.written for o in ops) or 1
        launch = plan.launches[self.current]
        dims = " ".join(f"{k}={v}" for k, v in launch.dims.items() if k not in ("dtype", "eps"))
        geometry = drill_model.geometry_text(launch, ctx) if snap.meta.backend.startswith("tilelang") else None
        # A row whose launches differ in dims (a layer, a family): the Σ is theirs, the dims and grid
        # are one launch's (the current one), so the caption names it; an op's launches share them.
        mixed = any(plan.launches[i].dims != launch.dims for i in self.row.members)
        n = len(self.row.members)
        self._operand_caption = visible_content(Content.assemble(
            ("at ctx_len ", "$text-muted"), (f"{ctx:,}", "bold"), ("  Σ ", "$text-muted"),
            (fmt_bytes(total), "bold"), (f" over {n} launches" if mixed else "", "$text-muted"), ("\n", ""),
            *((("launch ", "$text-muted"), (launch.role, "bold"), (": " if dims else "", "$text-muted")) if mixed else ()),
            (dims, "$text-muted"), *((("\n", ""), (geometry, "")) if geometry else ())), KEEP_LAYOUT)
        self._operand_rows = [
            [Text(visible(o.role), style="bold"), Text(KIND_SHORT.get(o.kind, o.kind)),
             Text(fmt_bytes(o.read) if o.read else "—", justify="right"),
             Text(fmt_bytes(o.written) if o.written else "—", justify="right"),
             Text(fmt_num(100 * (o.read + o.written) / total, 1), justify="right"),
             Text(visible(o.buffers), style="dim")] for o in ops]
        self._fill_operands()

    def _fill_operands(self) -> None:
        """The caption, cut to leave the table its header and TOP_OPERANDS rows; the operands with
        the columns that fit the pane (less a scrollbar where the rows under the caption are fewer
        than the operands), and how many of them show."""
        rows = self._operand_rows
        if rows is None:
            return
        pane, caption = self.query_one("#operands"), self.query_one("#operands-caption", Static)
        width, height = caption.content_size.width, pane.content_size.height
        if width and height:  # laid out: the caption's lines as drawn, which the table's rows are under
            shown = cut_caption(self._operand_caption, width, height - 1 - min(len(rows), TOP_OPERANDS))
            room = height - len(shown.wrap(width))  # rows with a header
        else:
            shown, room = self._operand_caption, height - caption.outer_size.height
        caption.update(shown)
        if width and caption.content_size.height != len(shown.wrap(width)):
            # filled mid-layout (a resize under the help, or its pop): the caption's new height may
            # be left unlaid-out, so a layout follows, and fit_laid_out sees its new outer size
            self.call_after_refresh(caption.refresh, layout=True)
        fill_whole(self.query_one("#operands-table", DataTable), OPERAND_COLUMNS, rows, [None] * len(rows),
                   OPERAND_PRIORITY, int(len(rows) + 1 > room))
        pane.border_subtitle = operands_shown(room, len(rows)) if pane.content_size.height else ""
