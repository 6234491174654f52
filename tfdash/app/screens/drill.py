"""The kernel drill-down: one row of the kernel table opened up.

    instances      every launch in the row, across layers: predicted vs measured (drill_tables)
    operands       bytes by operand at the profiled ctx_len (drill_tables)
    ctx_len sweep  predicted (analyze over ctx_len) everywhere, measured where profiled
    tabs           tilelang source · generated CUDA (sm_90a, compiled on demand: drill_code) ·
                   marginal cost (m measures it: drill_marginal) ·
                   Nsight Compute's counters (n measures them: drill_counters)

With a baseline snapshot (`app.baseline`) the summary and every instance show its time and Δ too.
The instance under the cursor is the "current launch": the source, CUDA and marginal follow it.
Anything slow (compiling CUDA, measuring a marginal) runs in a thread worker; the screen stays live.
"""

from __future__ import annotations

import time

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from tfdash.app import baseline as basemod, bindings, drill_model
from tfdash.app.layout import SHORT_H, FitsBeforeDraw, wrap_pairs
from tfdash.app.model import TableRow, fmt_gap, fmt_ns, fmt_num, gap_level, group_key, make_row
from tfdash.app.screens.drill_code import CodeTabs
from tfdash.app.screens.drill_counters import CountersTab
from tfdash.app.screens.drill_tables import DrillTables
from tfdash.app.screens.drill_marginal import MarginalTab
from tfdash.app.screens.main import TopBar
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.widgets.row_list import RowList
from tfdash.app.widgets.chart import Chart, Figure, Line
from tfdash.app.widgets.code import CodeView
from tfdash.app.widgets.kernel_table import DRIFT_REDRAW_S
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import KEEP_LAYOUT, visible_content

DRILL_NARROW_W = 140  # below this the instances, operands and sweep panes do not fit side by side

def summary_pairs(r: TableRow, group: str, filter_text: str = "", whole: int = 0) -> list[list[tuple[str, str]]]:
    """The summary's label-value pairs: the row, its family and kernel, its times and share. `whole`:
    the launches of the row's group, unfiltered; a row opened under a filter that left some out holds
    only those that match, and the summary says how many of the group's and which filter."""
    head = [(r.label, "bold $text-primary"), (f"  {group}", "$text-muted")]
    fam = [("family ", "$text-muted"), (", ".join(r.families), "bold")]
    if group == "family":  # "family attention", not "attention  family  family attention"
        head, fam = [("family ", "$text-muted"), (r.label, "bold $text-primary")], []
    count = [(f"{r.count} launch{'es' if r.count != 1 else ''}/step", "$text-muted")]
    if filter_text.split() and whole > r.count:  # a part of the group: which part
        count = [(f"{r.count} of {whole} launches/step", "$text-muted"), ("  matching ", "$text-muted"),
                 (filter_text, "bold $text-warning")]
    pairs = [head, *([fam] if fam else []), [("kernel ", "$text-muted"), (", ".join(r.kernels), "bold")], count,
             [("predicted ", "$text-muted"), (fmt_ns(r.predicted), "bold")],
             [("measured ", "$text-muted"), (fmt_ns(r.measured), "bold")]]
    if r.gap is not None:
        pairs.append([("gap ", "$text-muted"), (fmt_gap(r.gap), f"bold $tf-{gap_level(r.gap)}")])
    if r.share is not None:
        pairs.append([(fmt_num(r.share * 100, 1, " %"), "bold"), (" of the step", "$text-muted")])
    return pairs


CAPTION_POINTS = 3  # measured points the sweep's caption names; past it, the first and the last


def sweep_caption(xs, ys, mx, my) -> Content:
    """The sweep's caption: the prediction from ctx 0 to the last ctx_len, and the measured points:
    each of a few, else the first and the last and how many (a continuous run measures one a ctx_len
    bucket: 65 of them filled the pane and left the chart, which draws them all, no room)."""
    lo, hi = fmt_ns(ys[0]), fmt_ns(ys[-1])  # scaled as everywhere else (ms from 1,000 µs)
    if lo.split(" ")[-1] == hi.split(" ")[-1]:
        lo = lo.rsplit(" ", 1)[0]  # "330.3 → 330.3 µs"
    points = [f"{fmt_ns(y)} @ {x:,}" for x, y in zip(mx, my)]
    many = len(points) > CAPTION_POINTS
    shown = f"{points[0]} … {points[-1]}" if many else ", ".join(points)
    return Content.assemble(
        ("predicted ", "$text-muted"), (lo, "bold $text-primary"), (" → ", "$text-muted"),
        (hi, "bold $text-primary"), (f" over ctx 0…{xs[-1]:,}", "$text-muted"),
        ("\nmeasured ", "$text-muted"),
        (shown or "not profiled yet", "bold $text-accent" if mx else "italic $text-muted"),
        (f" ({len(points)} points)" if many else "", "$text-muted"))


def show_counted(summary: Static, content: Content, width: int) -> None:
    """`content` in `summary`, its height the rows the text wraps to at `width`, counted here rather
    than measured by Textual (height: auto): under a dialog, shrunk below 80x24 and grown back,
    Textual 8.2 kept the box it had laid out at 60 columns (three rows, one blank over the panes)
    for the text set on the way back, as it did the dashboard's summary line."""
    shown = visible_content(content, KEEP_LAYOUT)  # its control characters shown, as they take cells
    summary.update(shown)
    rows = len(shown.wrap(width))
    if summary.styles.height is None or summary.styles.height.cells != rows:  # a setting lays it out
        summary.styles.height = rows


def tab_pane(app, name: str, label: str) -> TabPane:
    """A source tab, named with the key that shows it under the keymap (as text: a key is no markup)."""
    return TabPane(Content(f"{bindings.key_name(app, 'drill.tab.' + name)} {label}"), id=name)


class DrillScreen(FitsBeforeDraw, DrillTables, CodeTabs, MarginalTab, CountersTab, Screen):
    BINDINGS = bindings.DRILL
    AUTO_FOCUS = "#instances-table"

    def __init__(self, row: TableRow, group: str, current: int | None = None, filter_text: str = "") -> None:
        super().__init__()
        self.row = row
        self.group = group
        self.filter_text = filter_text  # the kernel table's: the row holds only its launches that match
        self.current: int = current if current in row.members else row.members[0]
        self._tl_cache: dict[str, str] = {}
        self._cuda_cache: dict[tuple, str] = {}
        self._marginal: dict[str, dict] = {}
        self._sweep_key = None
        self._sweep: tuple[list[int], list[float]] = ([], [])
        self._members_shown = None
        self._shown_at = 0.0
        self._operands_key = None
        self._plan_key = None
        self._plan = None

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield Static(id="drill-summary")
        with Horizontal(id="drill-top"):
            with Vertical(id="instances"):
                yield RowList(id="instances-table", cursor_type="row", zebra_stripes=True)
            with Vertical(id="operands"):
                yield Static(id="operands-caption", classes="caption")
                yield DataTable(id="operands-table", cursor_type="none", zebra_stripes=True)
            with Vertical(id="sweep"):
                yield Static(id="sweep-caption", classes="caption")
                yield Chart(id="sweep-chart")
        with TabbedContent(id="drill-tabs", initial="tilelang"):
            with tab_pane(self.app, "tilelang", "tilelang source"):
                yield CodeView(id="tilelang-code")
            with tab_pane(self.app, "cuda", "generated CUDA"):
                yield CodeView(id="cuda-code")
            with tab_pane(self.app, "marginal", "marginal cost"):
                yield Static(id="marginal-body")
            with tab_pane(self.app, "counters", "counters"):
                yield Static(id="counters-body")
        yield FitFooter()

    def _size_classes(self, width: int, height: int) -> None:
        """"-narrow" and "-short" for a terminal of `width` x `height`."""
        if self.has_class("-narrow") != (width < DRILL_NARROW_W):
            self.set_class(width < DRILL_NARROW_W, "-narrow")
            self.refresh_bindings()  # `v` comes into the footer, or leaves it
        self.set_class(height < SHORT_H, "-short")

    def on_resize(self, event: events.Resize) -> None:
        self._size_classes(event.size.width, event.size.height)
        snap = self.app.snapshot
        if snap is not None and self.is_current:
            self._summary(snap)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`v` (swap) only where the sweep and the operands share a place: in a narrow terminal."""
        return self.has_class("-narrow") if action == "swap" else True

    def action_swap(self) -> None:
        self.toggle_class("-swap")  # the operands, shown, are filled to their width as laid out

    def on_mount(self) -> None:
        # The first layout comes before the first Resize: at 80x24 it would be the wide one.
        self._size_classes(*self.app.size)
        self.query_one("#instances").border_title = "instances"
        self.query_one("#operands").border_title = "cost by operand"
        self.query_one("#sweep").border_title = "ctx_len sweep"
        self.watch(self.app, "snapshot", self.render_snapshot, init=True)
        # a pause or the run's end sends no snapshot: the top bar's state and the counters tab's words follow it
        self.watch(self.app, "state", lambda _state: self.render_snapshot(self.app.snapshot), init=False)
        self._load_source()
        self._show_marginal()
        self._show_counters()

    def on_screen_resume(self) -> None:
        """A dialog (the picker, help, the A/B) closed over this screen: what changed under it is
        drawn now, not at the next snapshot (a finished run or a saved one sends none)."""
        self.render_snapshot(self.app.snapshot)

    # -- data ------------------------------------------------------------------------------
    @property
    def plan(self):
        snap = self.app.snapshot
        if snap is None:
            return None
        key = (id(snap.meta), len(snap.kernels))  # a live session keeps one RunMeta
        if key != self._plan_key:
            self._plan_key, self._plan = key, drill_model.plan_of(snap)
        return self._plan

    def _members(self, snap: ProfileSnapshot):
        want = set(self.row.members)
        return [k for k in snap.kernels if k.index in want]

    def render_snapshot(self, snap: ProfileSnapshot | None) -> None:
        if snap is None or not self.is_current:
            return
        members = self._members(snap)
        if members:
            self.row = make_row(self.row.key, self.row.label, members)
        # New measurements (a profile window) redraw at once; predictions that drift with the
        # live context, every few seconds.
        # A baseline chosen or dropped (b, here or under a dialog) redraws at once too.
        measured = tuple(k.measured_p50_ns for k in members)
        shown, base = self._members_shown, getattr(self.app, "baseline", None)
        if shown is None or shown[2] is not base or (members != shown[1] and (
                measured != shown[0] or time.monotonic() - self._shown_at >= DRIFT_REDRAW_S)):
            self._members_shown, self._shown_at = (measured, members, base), time.monotonic()
            self._summary(snap)
            self._instances(members)
            self._sweep_chart(snap)
        self._operands(snap)
        self._counters_snapshot(snap)
        self._offer_marginal()
        state = self.app.state
        label = f"snapshot · {self.app.source_label}" if state == "snapshot" else state
        self.query_one(TopBar).show(f"drill-down · {self.group} {self.row.label}", label,
                                    "bold $background on $primary")

    def _summary(self, snap: ProfileSnapshot) -> None:
        r = self.row
        whole = sum(1 for k in snap.kernels if group_key(k, self.group)[0] == r.key)  # the group unfiltered
        pairs = summary_pairs(r, self.group, self.filter_text, whole)
        width = max(20, self.size.width - 2)  # its padding
        content = wrap_pairs(pairs, width)
        base = getattr(self.app, "baseline", None)
        if base is not None:
            line = wrap_pairs(basemod.summary_parts(base, snap.kernels, self.group, r.members, self.filter_text),
                              width)
            content = Content.assemble(content, "\n", line)
        show_counted(self.query_one("#drill-summary", Static), content, width)

    def _sweep_chart(self, snap: ProfileSnapshot) -> None:
        caption = self.query_one("#sweep-caption", Static)
        chart = self.query_one("#sweep-chart", Chart)
        plan = self.plan
        if plan is None:
            caption.update(Content.styled("no step plan: no sweep", "italic $text-muted"))
            return
        target = drill_model.target_of(snap)
        key = (id(plan), target.name, target.bandwidth, self.row.members)
        if key != self._sweep_key:
            self._sweep_key = key
            self._sweep = drill_model.predicted_sweep(plan, target, self.row.members)
        xs, ys = self._sweep
        mx, my = drill_model.measured_points(self.app.windows, self.row.members)
        caption.update(sweep_caption(xs, ys, mx, my))
        lines = [Line(tuple(float(x) for x in xs), tuple(y / 1e3 for y in ys), "primary")]
        if mx:
            lines.append(Line(tuple(float(x) for x in mx), tuple(y / 1e3 for y in my), "accent", scatter=True))
        chart.show(Figure(lines=tuple(lines), xlabel="ctx_len (tokens)", ylabel="µs", y_from_zero=True))

    # -- the current launch: source, CUDA, marginal, counters follow it ------------------------
    @on(DataTable.RowHighlighted, "#instances-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None or event.row_key.value is None:
            return
        index = int(event.row_key.value)
        if index == self.current:
            return
        self.current = index
        snap = self.app.snapshot
        if snap is not None:
            self._operands(snap)
        self._load_source()
        if self.query_one(TabbedContent).active == "cuda":
            self._load_cuda()
        self._show_marginal()
        self._show_counters()

    @on(TabbedContent.TabActivated, "#drill-tabs")
    def _tab(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "cuda":
            self._load_cuda()

    # -- actions (ids in bindings.DRILL) --------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_step_tab(self, step: int) -> None:
        tabs = self.query_one(TabbedContent)
        ids = [pane.id for pane in tabs.query(TabPane)]
        tabs.active = ids[(ids.index(tabs.active) + step) % len(ids)]

