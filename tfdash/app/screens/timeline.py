"""The timeline screen (`T` from the dashboard): one profiled step of the snapshot on a time axis.

One row per device kernel in start order, so with programmatic dependent launch a kernel's bar
starts under its predecessor's tail (▒), and idle time between kernels shows as dots. The
summary line says the step's span, the time overlapped and the gaps. Keys (bindings.TIMELINE):
zoom (+ -), pan (← →), fit (0), another of the recorded steps ([ ], stopping at the first and the
last with a notice), Enter drills into the
launch under the cursor. The spans are the snapshot's, the same ones its Chrome trace holds, so
a recorded snapshot (`tfdash open`) draws the same picture.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from tfdash.app import bindings
from tfdash.app.screens.main import TopBar
from tfdash.app.layout import FitsBeforeDraw, ProfileKeys, profile_keys, wrap_pairs
from tfdash.app.timeline_model import StepTimeline, step_ctx, step_timeline, steps
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.widgets.panes import set_content
from tfdash.app.widgets.timeline import TimelineView, fmt_us

WIDE = 118  # from here the summary names its numbers in full


def summary(tl: StepTimeline | None, held: list[int], scale_ns: float, width: int = 200, direct: bool = False,
            profiled: bool = True, ended: bool = False, *, keys: ProfileKeys, ctx: int | None = None) -> Content:
    """The step's numbers, each with its label and unit on one line (wrap_pairs), then the key to
    the glyphs. Narrower than WIDE, the long labels go. `direct`: host timing, whose spaces between
    kernels are the timer's, not the device's idle, so no gap is given as one (as the roofline
    says). `ctx`: the ctx_len the step ran at, where the snapshot says (timeline_model.step_ctx);
    the step's number is its place in its window. Without spans, why: nothing profiled yet (and the keys that profile: r first where the
    live run has `ended`; `keys` names them, layout.profile_keys), or a snapshot kept none."""
    if tl is None:
        if not profiled:
            hint = profile_keys(True, keys) if ended else \
                [(keys.profile, "bold $accent"), (" profiles a window", "italic $text-muted")]
            return Content.assemble(("not profiled yet · ", "italic $text-muted"), *hint)
        return Content.styled("no kernel spans in this snapshot", "italic $text-muted")
    wide = width >= WIDE
    where = f" ({held.index(tl.step) + 1} of {len(held)} kept)" if len(held) > 1 else ""
    count = [("  kernels ", "$text-muted"), (f"{len(tl.bars)}", "bold")] if wide else \
        [(" · ", "$text-muted"), (f"{len(tl.bars)}", "bold"), (" kernels", "$text-muted")]
    gaps = [("n/a: direct timing", "italic $text-muted")] if direct else \
        [(f"{fmt_us(tl.gap_ns)} µs", "bold $text-warning")]
    at = [(" at ctx_len ", "$text-muted"), (f"{ctx:,}", "bold")] if ctx is not None else []
    pairs = [[("step ", "$text-muted"), (f"{tl.step}", "bold"), *at, (where, "$text-muted"), *count],
             [("span ", "$text-muted"), (f"{fmt_us(tl.span_ns)} µs", "bold")],
             [("overlapped ", "$text-muted"), (f"{fmt_us(tl.overlap_ns)} µs", "bold $accent"),
              (f" ({tl.overlapped} kernels start under the one before)" if wide else "", "$text-muted")],
             [("gaps ", "$text-muted"), *gaps],
             [("zoom " if wide else "", "$text-muted"), (f"{fmt_us(scale_ns)} µs/cell", "bold")]]
    idle = [] if direct else [("· ", "bold $text-warning"), ("idle", "$text-muted")]  # the view draws none
    return Content.assemble(wrap_pairs(pairs, width), ("\n█ ", "bold $text-primary"), ("alone  ", "$text-muted"),
                            ("▒ ", "bold $accent"), ("overlapping the kernel before (PDL)  ", "$text-muted"), *idle)


def empty_line(live: bool, profiled: bool, ended: bool, keys: ProfileKeys) -> str:
    """The view's line without spans, as the summary words why: the keys that profile only where
    they can (the user's keymap's names); a saved snapshot is read-only, so it names none."""
    if not live:
        return "no profiled step: this snapshot kept none"
    if profiled:
        return "no profiled step: the profile window kept no kernel spans"
    if ended:
        return f"no profiled step: {keys.after_run_text(' profiles a window')}"
    return f"no profiled step yet: {keys.profile} profiles a window"


class TimelineScreen(FitsBeforeDraw, Screen):
    BINDINGS = bindings.TIMELINE
    AUTO_FOCUS = "#timeline-view"
    DEFAULT_CSS = """
    TimelineScreen #timeline-summary { height: auto; padding: 0 1; }
    TimelineScreen #timeline-view {
        border: round $primary-muted;
        border-title-color: $text-primary;  /* the border's own colour left it unreadable in every theme */
        border-title-style: bold;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.step: int | None = None
        self._fitted_to = None  # the widths the summary's scale and wrapping were worded for

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield Static(id="timeline-summary")
        yield TimelineView(id="timeline-view")
        yield FitFooter()

    def on_mount(self) -> None:
        self.query_one(TimelineView).border_title = "the step's kernels on a time axis"
        self.watch(self.app, "snapshot", self.render_snapshot, init=True)

    @property
    def view(self) -> TimelineView:
        return self.query_one(TimelineView)

    def render_snapshot(self, snap) -> None:
        if not self.is_current:
            return
        held = steps(snap)
        if self.step not in held:
            self.step = held[-1] if held else None
        tl = step_timeline(snap, self.step)
        v = self.app.theme_variables
        roof = getattr(snap, "roofline", None)
        self.view.show(tl, {"run": v.get("primary", ""), "overlap": v.get("accent", ""),
                            "gap": v.get("warning", "")}, direct=roof is not None and roof.timing == "direct")
        self._summary()
        state = self.app.state
        label = f"snapshot · {self.app.source_label}" if state == "snapshot" else state
        self.query_one(TopBar).show("timeline · one profiled step", label, "bold $background on $primary")

    def _summary(self) -> None:
        snap = self.app.snapshot
        roof = getattr(snap, "roofline", None)
        # "not profiled yet" only where p can profile: a saved snapshot without spans kept none
        live = self.app.source.live
        profiled = roof is not None or bool(getattr(snap, "timeline", ())) or not live
        ended, keys = live and not self.app.offers("profile"), bindings.profile_hint(self.app)
        set_content(self.query_one("#timeline-summary", Static),
                    summary(self.view.timeline, steps(snap), self.view.scale, self.size.width - 2,
                            direct=self.view.direct, profiled=profiled, ended=ended, keys=keys,
                            ctx=step_ctx(snap, self.view.timeline.step if self.view.timeline else None)))
        if self.view.empty != (empty := empty_line(live, profiled, ended, keys)):
            self.view.empty = empty
            self.view.refresh()

    def fit_laid_out(self) -> None:
        """The summary's µs/cell and its wrapping for the view's laid-out width (layout.FitsBeforeDraw):
        worded before the first layout, they were the 8-cell fallback's ("218 µs/cell") for a frame."""
        widths = (self.size.width, self.view.content_size.width)
        if widths != self._fitted_to and self.view.content_size.width:
            self._fitted_to = widths
            self._summary()

    # -- actions (ids in bindings.TIMELINE) -------------------------------------------------------
    def action_back(self) -> None:
        self.app.pop_screen()

    def action_move(self, delta: int) -> None:
        self.view.move(delta * (self.view.rows_shown if abs(delta) > 1 else 1))

    def action_zoom(self, factor: float) -> None:
        self.view.zoom(factor)
        self._summary()

    def action_pan(self, quarters: int) -> None:
        self.view.pan(quarters)

    def action_fit(self) -> None:
        self.view.fit()
        self._summary()

    def action_step(self, delta: int) -> None:
        held = steps(self.app.snapshot)
        if len(held) < 2 or self.step not in held:
            self.notify("the snapshot keeps one step's spans", timeout=2)
            return
        at = held.index(self.step) + delta
        if not 0 <= at < len(held):  # the ends stop, as a list does: wrapping round read as a step further on
            self.notify(f"step {self.step} is the {'last' if at >= len(held) else 'first'} kept step "
                        f"({held.index(self.step) + 1} of {len(held)})", timeout=3)
            return
        self.step = held[at]
        self.render_snapshot(self.app.snapshot)

    def action_drill(self) -> None:
        from tfdash.app.model import group_rows
        from tfdash.app.screens.drill import DrillScreen

        bar, snap = self.view.current, self.app.snapshot
        if bar is None or snap is None:
            return
        row = next((r for r in group_rows(snap.kernels, "op") if bar.launch in r.members), None)
        if row is not None:
            self.app.push_screen(DrillScreen(row, "op", current=bar.launch))
