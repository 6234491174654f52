"""The dashboard: continuation, throughput, roofline, kernels and NVML, all from one snapshot.

    ┌ continuation ───────────┐┌ throughput ─┐┌ roofline ──┐
    └─────────────────────────┘└─────────────┘└────────────┘
    ┌ kernels ─────────────────────────────┐┌ NVML ────────┐
    └──────────────────────────────────────┘└──────────────┘
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from tfdash.app import bindings
from tfdash.app.layout import (BOTTOM_MIN_H, NVML_MIN_H, ROOFLINE_W, TOP_MIN_H, FitsBeforeDraw, ProfileKeys,
                               pane_summary, size_classes, summary_rows)
from tfdash.app.model import contention_note
from tfdash.app.widgets.chart import Chart
from tfdash.app.widgets.continuation import Continuation
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.widgets.kernel_cells import MIN_NAME, tail, timing_label
from tfdash.app.widgets.kernel_table import KernelTable
from tfdash.app.widgets.nvml import NVML_CHART_ONLY_H, NvmlPane
from tfdash.app.widgets.panes import RooflinePane, ThroughputPane, set_content
from tfdash.profiling.snapshot import ProfileSnapshot


SHORT_DTYPE = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}


def describe_run(snap: ProfileSnapshot, data=str) -> str:
    """The header: the model once (random weights: the preset's name; a checkpoint: its path, whose
    last part is its name), the engine, the dtype it runs in (and the weights' own when they differ),
    torch's CPU threads. Random weights are made in the dtype they run in. `data` spells the file's
    own text (the model's name, the checkpoint's path) for the stream it goes to."""
    m = snap.meta
    model = m.model if isinstance(m.model, dict) else {}
    name = str(model.get("name", "model"))
    src = f"{data(name)} · random weights" if m.checkpoint == "random" else data(str(m.checkpoint))
    where = data(str(m.gpu or m.device))
    stored = str(model.get("dtype", m.dtype))
    dtype = m.dtype if stored == m.dtype or m.checkpoint == "random" else (
        f"{m.dtype} ({SHORT_DTYPE.get(stored, stored)} weights run as {SHORT_DTYPE.get(m.dtype, m.dtype)})")
    threads = getattr(m, "threads", None)
    cpu = f" · {threads} thread{'s' if threads != 1 else ''}" if threads else ""
    return f"{src} · {m.backend} on {where} · {dtype}{cpu} · {m.launches_per_step} launches/step"


TITLE_KEPT = 32  # a top bar's first title item up to this long is kept whole beside a long state


def fit_state(state: str, room: int) -> str:
    """The state label within `room` cells: a snapshot's file names ("snapshot · A.json vs B.json")
    each cut to its end after "…", alike, rather than the whole clipped at the right edge, which
    took the baseline's timestamp (what tells one kept run from the next) at 80 columns."""
    if cell_len(state) <= room or " · " not in state:
        return state
    lead, names = state.split(" · ", 1)[0], state.split(" · ", 1)[1].split(" vs ")
    # the longest names are cut first, to one length, so a short name does not keep the room a
    # long one needs ("…200.json.gz" beside a whole 41-cell name took the model off the top bar)
    rest = room - cell_len(state) + sum(cell_len(n) for n in names)  # cells the names may have
    cap = max((cell_len(n) for n in names), default=0)
    while cap > MIN_NAME and sum(min(cell_len(n), cap) for n in names) > rest:
        cap -= 1
    cut = [tail(n, cap) if cell_len(n) > cap else n for n in names]  # a narrower one is clipped still
    return f"{lead} · " + " vs ".join(cut)


class TopBar(Horizontal):
    """One line: what is running, and its state. No clock: a recorded snapshot renders the same."""

    DEFAULT_CSS = """
    TopBar { height: 1; }
    TopBar > #topbar-title { width: 1fr; height: 1; }
    TopBar > #topbar-state { width: auto; height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="topbar-title")
        yield Static(id="topbar-state")

    _shown: tuple[str, str, str] | None = None

    def show(self, title: str, state: str, state_style: str) -> None:
        """`title`'s " · " items that fit beside the state, whole: one that does not fit is left
        out with those after it, never cut (a "143" without its "launches/step"). Before its first
        layout it fits the screen's width, which it spans: fitted to none, its first frame was cut."""
        self._shown = (title, state, state_style)
        width = self.size.width or self.screen.size.width
        items = title.split(" · ")
        if width:  # the lead and the title's first item (the model, the screen) keep their cells
            first = cell_len(items[0]) if cell_len(items[0]) <= TITLE_KEPT else 0
            state = fit_state(state, width - 2 - len(" tfdash │ ") - first - 1)
        room = width - len(" tfdash │ ") - cell_len(f" {state} ") - 1
        while len(items) > 1 and width and cell_len(" · ".join(items)) > room:
            items.pop()
        set_content(self.query_one("#topbar-title", Static), Content.assemble(
            (" tfdash ", "bold $text-primary"), ("│ ", "$text-muted"), (" · ".join(items), "")))
        set_content(self.query_one("#topbar-state", Static), Content.styled(f" {state} ", state_style))

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)


class MainScreen(FitsBeforeDraw, Screen):
    """The dashboard. Its panes are placed for the terminal at mount (_size_classes); the widgets that
    fit their size (the kernel table's columns, the continuation's subtitle, the charts' ticks) are
    fitted in the layout that gives it, before its frame is drawn (fit_laid_out)."""

    BINDINGS = bindings.MAIN
    AUTO_FOCUS = "#kernel-table"
    _top_min: int | None = None  # the top row's least height as last set (None: the stylesheet's)
    _no_snap = True  # no snapshot yet, as the footer was last fitted to
    _summary_rows: int | None = None  # the summary line's rows as last set (None: the stylesheet's)

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield Static(id="pane-summary")
        with Horizontal(id="top-row"):
            yield Continuation(id="continuation")
            yield ThroughputPane(id="throughput")
            yield RooflinePane(id="roofline")
        with Horizontal(id="bottom-row"):
            yield KernelTable(id="kernels")
            yield NvmlPane(id="nvml")
        yield FitFooter()

    def on_resize(self, event: events.Resize) -> None:
        self._size_classes(event.size)
        self._fit_panes(self.app.snapshot, event.size)  # what fits the new size, the line for the rest

    def fit_laid_out(self) -> None:
        """Each widget that fits its size, where that size changed (layout.FitsBeforeDraw): fitted on
        their own Resize, after the frame, at 120x40 the kernel table showed a "count" column and a cut
        "% of s" for a frame, the continuation's subtitle "stand-in vo…", the charts' ticks spaced for
        another width. Each compares its size first: this runs at every layout, a live refresh's too."""
        self.table.fit_size()
        self.query_one(Continuation).fit_size()
        for chart in self.query(Chart):
            chart.fit_size()

    def _size_classes(self, size) -> None:
        for c, is_on in size_classes(size.width, size.height).items():
            self.set_class(is_on, c)

    def _refocus_table(self) -> None:
        """The kernel table takes the focus back once it is shown again (`v` back, or a terminal wide
        enough for every pane): hidden, it lost the focus, and ⏎, s and / would do nothing."""
        def focus() -> None:
            if self.focused is None and self._table_shown():
                self.query_one("#kernel-table").focus()
        self.call_after_refresh(focus)

    def _table_shown(self) -> bool:
        """The kernel table is on the screen: not put aside by `v`, or kept under the roofline pane."""
        return not (self.has_class("-fold") and self.has_class("-aside")) or self.has_class("-aside-table")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`v` (panes) only where it swaps something: where the roofline pane steps aside; the
        table's keys (sort, filter, group, drill) only while the table is on the screen (`v` can
        put the roofline and NVML in its place). Elsewhere a key is neither in the footer nor in the
        palette, and is left unbound rather than changing what no one sees; before the first snapshot
        (an engine being built) neither `v` nor the table's keys have anything to act on. In the
        filter, `/` (a priority key) is the filter's: typed, not reopening it."""
        fold = self.has_class("-fold")
        if action == "panes":  # nothing to show before the first snapshot (an engine being built)
            return fold and self.app.snapshot is not None
        if action == "filter" and getattr(self.focused, "id", None) == "kernel-filter":
            return False
        if action in ("sort", "reverse", "filter", "group", "drill"):  # and a row to act on: not while building
            return self._table_shown() and self.app.snapshot is not None
        return True

    def _fit_panes(self, snap: ProfileSnapshot | None, size=None) -> None:
        """The hidden panes in one line, and the top row's height. The roofline pane is shown with
        every row it has, its row made tall enough, or steps aside (-fold: `v` shows it): in a
        terminal too narrow for every pane (NVML steps aside with it), too short for the top row to
        hold it, or where the kernel table would keep fewer than BOTTOM_MIN_H rows under it. NVML is
        a line when it has nothing, and beside the roofline pane `v` shows when fewer than NVML_MIN_H
        rows are left under it (an NVML pane cut short, or none at all, would take the roofline's).
        `v` gives the roofline pane its rows and no more (app.tcss), less the blank line over its gap
        bar, NVML the rest: too few for NVML's numbers, its DRAM chart alone where that fits (the
        numbers in the line); where NVML has nothing to show, the kernel table keeps the rest if they
        are BOTTOM_MIN_H or more (-aside-table), and otherwise the screen under the pane is left bare
        rather than drawn as empty rows inside it."""
        width, height = size or self.size or self.app.size  # the app's before a layout sizes the screen
        narrow, short = self.has_class("-narrow"), self.has_class("-short")
        nvml_off = snap is not None and bool(snap.unavailable.get("nvml")) and not snap.nvml
        self.query_one(NvmlPane).set_class(nvml_off, "-unavailable")
        roof = self.query_one(RooflinePane)
        line_w = max(20, width - 2)  # the summary line's padding

        def rows_left(panes: tuple[str, ...]) -> int:  # under the header and over the footer
            return height - 2 - summary_rows(pane_summary(snap, panes, line_w, self.app.source.live, self._ended,
                                                          keys=self._profile_keys), line_w)

        was_fold = self.has_class("-fold")
        fold = narrow or short or roof.rows(ROOFLINE_W, tight=False) > \
            rows_left(("nvml",) if nvml_off else ()) - BOTTOM_MIN_H
        self.set_class(fold, "-fold")
        aside = fold and self.has_class("-aside")
        roof.set_tight(aside)  # over NVML, its gap bar gives the line over it to the DRAM chart
        table = chart = False
        if aside:  # the roofline pane over NVML, as wide as the screen, with its rows and no more
            need = roof.rows(width)
            nvml_line = nvml_off or rows_left(("throughput",)) - need < NVML_MIN_H
            table = nvml_off and rows_left(("throughput",)) - need >= BOTTOM_MIN_H  # NVML has nothing: the table
            panes = ("throughput", "nvml") if nvml_line else ("throughput",)
            # too few rows for NVML's numbers, which the line then holds: its DRAM chart alone if that fits
            chart = nvml_line and not nvml_off and rows_left(panes) - need >= NVML_CHART_ONLY_H
        else:
            need, nvml_line = 0 if fold else roof.rows(ROOFLINE_W), False
            panes = ("roofline", "nvml") if narrow else ("roofline",) * fold + ("nvml",) * nvml_off
        was_table = self.has_class("-aside-table")
        self.set_class(table, "-aside-table")
        self.set_class(nvml_line and not chart, "-nvml-line")  # `v` then shows no NVML pane under the roofline's
        nvml = self.query_one(NvmlPane)
        if nvml.has_class("-chart-only") != chart:
            nvml.set_class(chart, "-chart-only")
            nvml.fit_charts(nvml.content_region.height)
        top = max(need, 0 if short or aside else TOP_MIN_H) or None  # None: the stylesheet's
        if top != self._top_min:  # set only on a change: each setting lays the screen out
            self._top_min = top
            self.query_one("#top-row").styles.min_height = top
        line = pane_summary(snap, panes, line_w, self.app.source.live, self._ended, keys=self._profile_keys)
        summary = self.query_one("#pane-summary", Static)
        set_content(summary, line)
        rows = summary_rows(line, line_w) or None  # None: the stylesheet's (hidden with no line)
        if rows != self._summary_rows:  # set only on a change: each setting lays the screen out
            # Its rows as counted above, not measured by Textual (height: auto): a resize's reflow
            # caches the box of the old text (two rows, wrapped at 60 columns), and the new text set
            # while that reflow's layout request is pending does not invalidate it (Textual 8.2);
            # under a dialog, grown back from below 80x24, the summary had kept the two rows.
            self._summary_rows = rows
            summary.styles.height = rows
        self.set_class(bool(line.plain), "-summary")
        if (fold, table, snap is None) != (was_fold, was_table, self._no_snap):
            self._no_snap = snap is None
            self.refresh_bindings()  # `v` comes into the footer, or leaves it; the table's keys with the table
            self._refocus_table()

    def action_panes(self) -> None:
        self.toggle_class("-aside")
        self.refresh_bindings()  # the table's keys leave the footer with it, and come back
        self._refocus_table()
        self._fit_panes(self.app.snapshot)

    def on_mount(self) -> None:
        for pane_id, title in (("continuation", "continuation"), ("throughput", "throughput"),
                               ("roofline", "roofline"), ("kernels", "kernels"), ("nvml", "NVML")):
            self.query_one(f"#{pane_id}").border_title = title
        # The terminal's size classes and what fits it, before the first layout: set on the first
        # Resize, which comes after the first frame, that frame was laid out for no size (at 80x24
        # the kernel table cut to 34 columns beside the NVML pane, the summary line without NVML's).
        self._size_classes(self.app.size)
        self.watch(self.app, "snapshot", self.render_snapshot, init=True)
        self.watch(self.app, "state", self._state_changed, init=True)

    @property
    def table(self) -> KernelTable:
        return self.query_one(KernelTable)

    def on_screen_resume(self) -> None:
        self.render_snapshot(self.app.snapshot)
        self.call_after_refresh(self._unfocus_hidden_table)

    def _unfocus_hidden_table(self) -> None:
        """A dialog closed over `v`'s panes hands the focus back by AUTO_FOCUS to the kernel table put
        aside: ⏎ would then drill into a row no one can see. Nothing is focused until it is shown."""
        if not self._table_shown() and getattr(self.focused, "id", None) == "kernel-table":
            self.set_focus(None)

    def render_snapshot(self, snap: ProfileSnapshot | None) -> None:
        if not self.is_current:
            return  # a drill-down or help is on top: rendered again on resume
        app = self.app
        live = app.state in ("running", "paused", "starting", "stopping")
        cont = self.query_one(Continuation)
        cont.show(snap, running=app.state == "running", note=app.status_note)
        if snap is not None:
            cont.set_source(snap.meta.checkpoint)
        self.query_one(ThroughputPane).show(snap, app.max_new_tokens, final=not live)
        base = getattr(app, "baseline", None)
        self.query_one(RooflinePane).show(snap, base.snapshot if base is not None else None, live=app.source.live,
                                          ended=self._ended)
        self.query_one(NvmlPane).show(snap, final=not live)
        if snap is not None:
            self.table.show(snap.kernels, snap.unavailable.get("kernels", ""), final=not live,
                            warning=contention_note(snap, app.source.live), timing=timing_label(snap),
                            live=app.source.live, ended=self._ended)
        self._fit_panes(snap)
        self._state_changed(app.state)

    @property
    def _ended(self) -> bool:
        """A live run that is over: p has no step left to time, so the hints that name it say r first."""
        return self.app.source.live and not self.app.offers("profile")

    @property
    def _profile_keys(self) -> ProfileKeys:
        """The re-run and profile keys as the hints name them (the user's keymap applied)."""
        return bindings.profile_hint(self.app)

    def _state_changed(self, state: str) -> None:
        app = self.app
        snap = app.snapshot
        title = describe_run(snap) if snap is not None else (app.status_note or "starting…")
        style = {"running": "bold $background on $success", "paused": "bold $background on $warning",
                 "error": "bold $background on $error"}.get(state, "bold $background on $primary")
        label = {"snapshot": f"snapshot · {app.source_label}"}.get(state, state)
        self.query_one(TopBar).show(title, label, style)

    @on(KernelTable.Drill)
    def _drill(self, event: KernelTable.Drill) -> None:
        self.app.open_drill(event.row)

    # -- actions (ids in bindings.MAIN) ---------------------------------------------------------
    def action_sort(self) -> None:
        self.table.next_sort()

    def action_reverse(self) -> None:
        self.table.reverse()

    def action_filter(self) -> None:
        self.table.open_filter()

    def action_group(self) -> None:
        self.table.next_group()  # the table's caption names the grouping

    def action_timeline(self) -> None:
        from tfdash.app.screens.timeline import TimelineScreen

        self.app.push_screen(TimelineScreen())

    def action_drill(self) -> None:
        row = self.table.selected_row()
        if row is not None:
            self.app.open_drill(row)
