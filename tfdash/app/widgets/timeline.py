"""The step's timeline: one row per device kernel, bars placed on a time axis in microseconds
from the step's first kernel start.

    █  the kernel running alone        ▒  running while an earlier kernel still runs (PDL overlap)
    ·  the GPU idle before it (gap)

The view is a window of `ns_per_cell` nanoseconds a cell from `t0_ns`: zoom halves or doubles
`ns_per_cell` about the cursor's bar, pan moves `t0_ns` by a quarter of the width; the rows
scroll with the cursor. Everything drawn is a pure function of the StepTimeline and that state.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from tfdash.app.timeline_model import StepTimeline, cell_kind, frontiers, nice_step
from tfdash.textsafe import visible

LABEL_W = 15  # the role column
INFO_W = 24  # "   13.9 µs ovl 1.80 µs"
TIME_W = 11  # "   13.9 µs": the column where no bar of the step has an overlap or a gap to say
GLYPH = {"run": "█", "overlap": "▒", "gap": "·", "": " "}
MIN_NS_PER_CELL = 10.0  # zooming stops at 10 ns a cell


def fmt_us(ns: float) -> str:
    us = ns / 1e3
    return f"{us:,.0f}" if abs(us) >= 100 else f"{us:,.1f}" if abs(us) >= 10 else f"{us:,.2f}"


def tick_label(t_ns: float, step_ns: float) -> str:
    """A tick's µs with as many decimals as the tick interval needs (0, 0.5, 1.0 ... or 0, 200, 400)."""
    import math

    decimals = max(0, -math.floor(math.log10(step_ns / 1e3))) if step_ns > 0 else 0
    return f"{t_ns / 1e3:,.{decimals}f}"


def info_text(bar, direct: bool = False) -> str:
    """A row's right-hand words: the bar's time, and its overlap or (not under host timing) its gap."""
    info = f"{fmt_us(bar.dur_ns):>7} µs"
    if bar.overlap_ns:
        info += f" ovl {fmt_us(bar.overlap_ns)} µs"
    elif bar.gap_ns and not direct:
        info += f" gap {fmt_us(bar.gap_ns)} µs"
    return info


def info_width(tl: StepTimeline | None, direct: bool = False) -> int:
    """The right-hand column's width: each bar's time, and its overlap or gap where one bar of the
    step has either to say (the same width as the rows scroll); where none has (host timing, whose
    spaces are no device idle, and no overlap), the time alone, and the bars take the rest. Wider
    where a row's words need it (a kernel of a second or more is "1,234,567 µs"): no row loses its unit."""
    if tl is None:
        return TIME_W
    base = INFO_W if any(b.overlap_ns or (b.gap_ns and not direct) for b in tl.bars) else TIME_W
    return max([base] + [1 + len(info_text(b, direct)) for b in tl.bars])


class TimelineView(Widget, can_focus=True):
    DEFAULT_CSS = """
    TimelineView { height: 1fr; width: 1fr; padding: 0 1; }
    """

    cursor: reactive[int] = reactive(0)
    top: reactive[int] = reactive(0)
    t0_ns: reactive[float] = reactive(0.0)
    ns_per_cell: reactive[float] = reactive(0.0)  # 0: fit the step to the width

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.timeline: StepTimeline | None = None
        self.palette: dict[str, str] = {}
        self.direct = False
        self.empty = "no profiled step"  # the line without spans: the screen words why (and any key)
        self.info_w = TIME_W  # the right-hand column's width (info_width)

    # -- state -------------------------------------------------------------------------------
    def show(self, tl: StepTimeline | None, colors: dict[str, str], direct: bool = False) -> None:
        """`direct`: host timing, whose spaces between kernels are no device idle: no row names or draws one a gap."""
        changed = tl is None or self.timeline is None or tl.step != self.timeline.step
        self.timeline, self.palette, self.direct = tl, colors, direct
        self.info_w = info_width(tl, direct)
        if changed:
            self.cursor, self.top, self.t0_ns, self.ns_per_cell = 0, 0, 0.0, 0.0
        self.refresh()

    @property
    def bar_cells(self) -> int:
        # Before its first layout: the screen's width less the view's border and padding, which it
        # spans, so the summary worded then (its µs a cell) is the one the first frame needs.
        width = self.content_size.width or (self.app.size.width - 4 if self.is_attached else 0)
        return max(8, width - LABEL_W - self.info_w)

    @property
    def rows_shown(self) -> int:
        return max(1, self.content_size.height - 1)  # the axis takes a line

    @property
    def scale(self) -> float:
        """ns a cell now (the fit when not zoomed)."""
        if self.ns_per_cell > 0:
            return self.ns_per_cell
        span = self.timeline.span_ns if self.timeline else 0
        return max(MIN_NS_PER_CELL, span / self.bar_cells) if span else 1000.0

    @property
    def current(self):
        tl = self.timeline
        return tl.bars[self.cursor] if tl and tl.bars and 0 <= self.cursor < len(tl.bars) else None

    def move(self, delta: int) -> None:
        tl = self.timeline
        if not tl or not tl.bars:
            return
        self.cursor = max(0, min(len(tl.bars) - 1, self.cursor + delta))
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + self.rows_shown:
            self.top = self.cursor - self.rows_shown + 1

    def zoom(self, factor: float) -> None:
        """ns a cell times `factor`, keeping the cursor's bar start where it was on screen (or at a
        quarter of the width when it was off screen); never wider than the fit."""
        fit = self.timeline.span_ns / self.bar_cells if self.timeline and self.timeline.span_ns else 1000.0
        old = self.scale
        new = max(MIN_NS_PER_CELL, old * factor)
        if new >= fit:
            self.ns_per_cell, self.t0_ns = 0.0, 0.0
            return
        bar = self.current
        anchor = bar.start_ns if bar is not None else self.t0_ns
        col = (anchor - self.t0_ns) / old
        if not 0 <= col < self.bar_cells:
            col = self.bar_cells / 4
        self.ns_per_cell, self.t0_ns = new, max(0.0, anchor - col * new)

    def pan(self, quarters: int) -> None:
        span = self.timeline.span_ns if self.timeline else 0
        view = self.scale * self.bar_cells
        self.t0_ns = max(0.0, min(max(0.0, span - view / 2), self.t0_ns + quarters * view / 4))

    def fit(self) -> None:
        self.ns_per_cell, self.t0_ns = 0.0, 0.0

    # -- drawing ------------------------------------------------------------------------------
    def axis(self) -> Text:
        """The time axis: tick marks and µs labels over the bars' columns."""
        w, scale = self.bar_cells, self.scale
        step = nice_step(w * scale)
        cells = ["─"] * w
        t = (self.t0_ns // step) * step
        while t <= self.t0_ns + w * scale:
            c = int(round((t - self.t0_ns) / scale))
            label = "┼" + tick_label(t, step)
            if 0 <= c and c + len(label) <= w:
                cells[c:c + len(label)] = list(label)
            t += step
        return Text.assemble(("µs from start".ljust(LABEL_W)[:LABEL_W], "dim"), ("".join(cells), "dim"),
                             (" " * self.info_w, ""))

    def row(self, i: int, frontier: int) -> Text:
        bar = self.timeline.bars[i]
        w, scale, t0 = self.bar_cells, self.scale, self.t0_ns
        style = {"run": self.palette.get("run", ""), "overlap": self.palette.get("overlap", ""),
                 "gap": self.palette.get("gap", ""), "": ""}
        label = visible(bar.role)
        label = (label if len(label) < LABEL_W else label[:LABEL_W - 2] + "…").ljust(LABEL_W)
        out = Text()
        out.append(label, "reverse bold" if i == self.cursor else "bold")
        run, prev = [], None
        for c in range(w):
            kind = cell_kind(bar, frontier, t0 + c * scale, t0 + (c + 1) * scale)
            kind = "" if kind == "gap" and self.direct else kind  # the host's time between launches: no idle
            if kind != prev and run:
                out.append("".join(run), style[prev])
                run = []
            run.append(GLYPH[kind])
            prev = kind
        if run:
            out.append("".join(run), style[prev])
        info = info_text(bar, self.direct)
        out.append(" " + info.ljust(self.info_w - 1)[:self.info_w - 1], "dim" if i != self.cursor else "bold")
        return out

    def render(self) -> Text:
        tl = self.timeline
        if tl is None or not tl.bars:
            return Text(self.empty, style="italic")
        fr = frontiers(tl)
        lines = [self.axis()]
        for i in range(self.top, min(len(tl.bars), self.top + self.rows_shown)):
            lines.append(self.row(i, fr[i]))
        return Text("\n").join(lines)
