"""The dashboard's number panes: throughput and roofline (NVML's is widgets/nvml.py), and the
parts every pane is made of (stat lines, chart keys, set_content). Each renders from a snapshot.

Values are right-aligned in a fixed column so they can be compared at a glance; a value that
could not be measured is "—" and the pane says why (the snapshot's `unavailable` reasons).
"""

from __future__ import annotations

import os
import time

from rich.cells import cell_len
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Static

from tfdash.app.bindings import profile_hint
from tfdash.app.layout import SHORT_H, profile_keys
from tfdash.app.model import fmt_bytes, fmt_gbps, fmt_ns, fmt_num, throughput, tok_s_now
from tfdash.app.widgets.chart import Chart, Figure, Line, rule_mark
from tfdash.stats import percentile
from tfdash.profiling.probe import ceiling_note
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import KEEP_LAYOUT, visible_content

VALUE_W = 10
LABEL_W = 14
SLOW_INTERVAL_S = 0.5  # charts and run-wide percentiles: at most twice a second while live


class Throttle:
    """`due(force)`: True at most once per interval (always when forced: the final frame)."""

    def __init__(self, interval: float = SLOW_INTERVAL_S) -> None:
        self.interval = interval
        self.last = None

    def due(self, force: bool = False) -> bool:
        now = time.monotonic()
        if force or self.last is None or now - self.last >= self.interval:
            self.last = now
            return True
        return False


def set_content(widget: Static, content: Content | str) -> None:
    """Update a Static only when what it shows changes, and reflow the layout only when its
    number of lines changes, wrapped lines counted at the widget's width (a one-line total that
    becomes a long warning wraps), or that width does (after a resize its height was laid out for
    the old text at the new width: a long wording that wrapped there, replaced by a short one that
    fits, kept two rows): a live refresh then repaints a few small regions, nothing more."""
    if isinstance(content, str):
        content = Content(content)
    content = visible_content(content, KEEP_LAYOUT)  # no control from a snapshot reaches the terminal
    key = (content.plain, repr(content.spans))
    old = getattr(widget, "_tf_key", None)
    if key == old:
        return
    width = widget.content_size.width
    lines = sum(max(1, -(-cell_len(line) // width)) for line in content.plain.split("\n")) if width \
        else content.plain.count("\n")
    layout = old is None or (lines, width) != getattr(widget, "_tf_lines", None)
    widget._tf_key, widget._tf_lines = key, (lines, width)
    widget.update(content, layout=layout)


def stat(value: str, label: str, value_style: str = "bold", note: str = "", value_w: int = VALUE_W,
         label_w: int = LABEL_W) -> Content:
    """One line: the value right-aligned in `value_w` cells, its label, and a note from `label_w`
    cells after the label's start (a label that long pushes its note a cell past the others')."""
    label = "  " + (label.ljust(label_w) + (" " if len(label) >= label_w else "") if note else label)
    parts = [(value.rjust(value_w), value_style), (label, "$text-muted")]
    if note:
        parts.append((note, "$text-muted italic"))
    return Content.assemble(*parts)


def lines(*items: Content | str) -> Content:
    return Content("\n").join(items)


def key(color: str, label: str, mark: str = "━") -> tuple[tuple[str, str], tuple[str, str]]:
    return (mark + " ", color), (label + "  ", "$text-muted")


class ThroughputPane(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._slow = Throttle()
        self._pct: tuple[float | None, float | None] = (None, None)
        self._run: tuple[str, int] = ("", 0)  # the run the percentiles are of (its start) and its steps then

    def compose(self):
        yield Static(id="throughput-stats", classes="stats")
        # the chart's key, a widget of its own so the stylesheet hides it with the chart (a short terminal)
        yield Static(Content.assemble(*key("$primary", "ms/step"), *key("$success", "p50", rule_mark())),
                     id="throughput-legend", classes="stats")
        yield Chart(id="throughput-chart")
        # in its place in a short terminal (app.tcss), so that it is not left out unsaid
        yield Static(Content.styled(f"ms/step chart from {SHORT_H} rows", "italic $text-muted"),
                     id="throughput-short", classes="stats")

    def show(self, snap: ProfileSnapshot | None, max_new: int | None = None, final: bool = True) -> None:
        """`final=False` while live: the percentiles and the chart update at most twice a second."""
        stats = self.query_one("#throughput-stats", Static)
        chart = self.query_one("#throughput-chart", Chart)
        if snap is None:
            set_content(stats, lines(stat("—", "tok/s now"), stat("—", "tok/s over the run"),
                                     stat("—", "tok/s decode only"), stat("—", "ms to first token"),
                                     stat("—", "ms/step p50"), stat("—", "ms/step p99"), stat("—", "tokens")))
            chart.show(Figure())
            if self.border_subtitle:  # setting it repaints the whole pane
                self.border_subtitle = ""
            return
        # the first step times are drawn at once, so no pane shows a p50 while this one says "—"; and
        # a frame of another run (r: a new start, its steps counted from 0), so none of the run before stays
        run = (snap.meta.started_at, snap.steps)
        other_run = run[0] != self._run[0] or run[1] < self._run[1]
        if self._slow.due(force=final or other_run or (self._pct[0] is None and bool(snap.step_ns))):
            t = throughput(snap, points=64)
            self._pct, self._run = (t.p50_ms, t.p99_ms), run
            hl = ((t.p50_ms, "success"),) if t.p50_ms is not None else ()
            chart.show(Figure(lines=(Line(t.line_x, t.line_y, "primary"),), hlines=hl, xlabel="step",
                              ylabel="ms"))
        p50, p99 = self._pct
        total = f" of {max_new:,}" if max_new else ""
        set_content(stats, lines(
            stat(fmt_num(tok_s_now(snap)), "tok/s now", "bold $text-primary"),
            stat(fmt_num(snap.tok_per_s if snap.wall_ns else None), "tok/s over the run", "bold"),
            stat(fmt_num(getattr(snap, "decode_tok_per_s", None)), "tok/s decode only"),
            stat(fmt_num(snap.ttft_ns / 1e6 if getattr(snap, "ttft_ns", 0) else None, 1), "ms to first token"),
            stat(fmt_num(p50, 3), "ms/step p50"),
            stat(fmt_num(p99, 3), "ms/step p99"),
            stat(f"{snap.new_tokens:,}", f"tokens{total}"),
        ))
        chunks = prompt_chunks(snap)
        if (self.border_subtitle or "") != chunks:  # setting it repaints the whole pane
            self.border_subtitle = chunks


def prompt_chunks(snap) -> str:
    """The pane's subtitle for a prompt taken in chunks (their time, part of the time to first token):
    in the border it costs no row, where a line of its own pushed the chart's legend out of an 80x24
    pane. Empty for a walked prompt or a snapshot from before it was kept."""
    if getattr(snap, "prefill_positions", 0) <= 0 or getattr(snap, "prefill_ns", 0) <= 0:
        return ""
    return f"{fmt_num(snap.prefill_ns / 1e6, 2)} ms prompt in chunks"


class GapBar(Widget):
    """One step drawn to scale: the memory floor, kernel time over the floor, and the gaps
    between kernels (launch ramp, bubbles)."""

    DEFAULT_CSS = """
    GapBar { height: 2; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.parts: tuple[float, float, float] | None = None

    def set_parts(self, floor_ns: float, over_ns: float, gap_ns: float) -> None:
        parts = (max(0.0, floor_ns), max(0.0, over_ns), max(0.0, gap_ns))
        if parts != self.parts:
            self.parts = parts
            self.refresh()

    def render(self) -> Content:
        w = max(4, self.size.width)
        # with NO_COLOR the three colours are three greys no one tells apart: three shades of block instead
        shades = ("█", "▒", "░")
        bar, key = (shades, shades) if os.environ.get("NO_COLOR") else (("▆",) * 3, ("■",) * 3)
        legend = Content.assemble((key[0], "$tf-good"), (" floor  ", "$text-muted"), (key[1], "$tf-fair"),
                                  (" kernels over it  ", "$text-muted"), (key[2], "$tf-poor"), (" gaps", "$text-muted"))
        if not self.parts or sum(self.parts) <= 0:
            return Content.assemble(("─" * w, "$text-muted"), "\n", legend)
        total = sum(self.parts)
        cells = [round(p / total * w) for p in self.parts]
        cells[0] = max(0, w - cells[1] - cells[2])
        return Content.assemble((bar[0] * cells[0], "$tf-good"), (bar[1] * cells[1], "$tf-fair"),
                                (bar[2] * cells[2], "$tf-poor"), "\n", legend)


GAP_OVER = 1  # the blank line over the roofline pane's gap bar (app.tcss #roofline-gap)


class RooflinePane(VerticalScroll):
    """The step against its floor. A step over its copy ceiling gets a note under its share
    (#roofline-over, a Static of its own so the stylesheet's left padding indents every line it
    wraps to, not only the first)."""

    tight = False  # the blank line over the gap bar given up (set_tight)

    def compose(self):
        yield Static(id="roofline-stats", classes="stats")
        yield Static(id="roofline-over", classes="stats")
        yield Static(id="roofline-datasheet", classes="stats")
        yield GapBar(id="roofline-gap")
        yield Static(id="roofline-note", classes="stats")

    def set_tight(self, tight: bool) -> None:
        """Without the blank line over the gap bar (`v`: the pane over NVML, whose DRAM chart takes
        that row; app.tcss draws the line otherwise). An inline margin, so rows() reads it at once."""
        self.tight = tight
        gap = self.query_one("#roofline-gap")
        top = 0 if tight else GAP_OVER
        if gap.styles.margin.top != top:
            gap.styles.margin = (top, 0, 0, 0)

    def rows(self, width: int, tight: bool | None = None) -> int:
        """The rows the pane takes, its border included, to show every line it holds now at `width`
        columns (the over-the-ceiling note wraps to it): the dashboard gives its row that many or puts
        the pane aside (screens/main.py), so that no line of it is ever under a scrollbar. `tight`:
        without the line over the gap bar (set_tight), or as the pane is now when None."""
        tight = self.tight if tight is None else tight
        inner = max(1, width - self.styles.gutter.width)
        total = self.styles.gutter.height
        for child in self.children:
            if not child.display:
                continue
            st = child.styles
            fixed = st.height.cells if st.height is not None else None
            text_w = max(1, inner - st.gutter.width - st.margin.width)
            height = fixed if fixed is not None else \
                child.get_content_height(Size(inner, 0), Size(inner, 0), text_w) + st.gutter.height
            margin = (0 if tight else GAP_OVER) if child.id == "roofline-gap" else st.margin.height
            total += height + margin
        return total

    def show(self, snap: ProfileSnapshot | None, baseline: ProfileSnapshot | None = None, live: bool = True,
             ended: bool = False) -> None:
        """`baseline`: another run's snapshot, whose measured step is shown under this one's.
        `live`: p can profile a window (a saved snapshot without one names no key); `ended`: the
        live run is over, so p alone cannot profile (layout.ProfileKeys.after_run says what can)."""
        stats = self.query_one("#roofline-stats", Static)
        over = self.query_one("#roofline-over", Static)
        datasheet = self.query_one("#roofline-datasheet", Static)
        note = self.query_one("#roofline-note", Static)
        gapbar = self.query_one("#roofline-gap", GapBar)
        r = snap.roofline if snap is not None else None
        # a step past its ceiling: the probe read low (the cache file named only where it holds the figure)
        low = ceiling_note(r.pct_ceiling, r.ceiling_source, r.ceiling_gbps) \
            if r is not None else ""
        set_content(over, Content.styled(low, "italic $text-warning"))
        over.display = bool(low)
        datasheet.display = r is not None
        if snap is None:
            set_content(stats, "")
            set_content(note, "")
            return
        if r is not None:
            set_content(stats, lines(
                stat(fmt_bytes(r.bytes_per_step), "bytes/step", note=f"at ctx_len {r.ctx_len:,}"),
                stat(fmt_ns(r.floor_ns), "floor", note="bytes ÷ ceiling"),
                stat(fmt_ns(r.predicted_step_ns), "ideal", note="Σ kernel ideals"),
                stat(fmt_ns(r.measured_step_ns), "measured", "bold $text-primary", note=measured_note(r)),
                *_baseline_step(snap, baseline),
                stat(fmt_gbps(r.achieved_gbps, ""), "GB/s achieved"),
                stat(fmt_num(r.pct_ceiling, 1, " %"), "of ceiling", f"bold $text-{'warning' if low else 'primary'}",
                     note=fmt_gbps(r.ceiling_gbps)),
            ))
            set_content(datasheet, stat(fmt_num(r.pct_datasheet if r.datasheet_gbps else None, 1, " %"),
                                        "of datasheet",
                                        note=fmt_gbps(r.datasheet_gbps) if r.datasheet_gbps else "none known"))
            # Direct (host) timing has no device idle to measure: the rest of its step is the host's
            # between launches (the interpreter, and waits for the GIL while the UI thread draws), which
            # the line below gives as such and the bar does not draw as a gap
            measured_gap = r.timing != "direct" and r.gap_ns >= 0
            gapbar.set_parts(r.floor_ns, r.kernel_sum_ns - r.floor_ns, r.gap_ns if measured_gap else 0.0)
            if measured_gap:
                gap = stat(fmt_ns(r.gap_ns), "gaps", note="step − Σ kernels")
            elif r.timing == "direct" and r.gap_ns >= 0:  # the host's own time, which a CPU user asks after
                gap = lines(stat(fmt_ns(r.gap_ns), "host", note="step − Σ kernels"),
                            Content.styled("  between launches: Python, GIL waits", "italic $text-muted"))
            else:
                why = "direct timing, no device idle" if r.timing == "direct" else "Σ kernels past the step"
                gap = lines(stat("n/a", "gaps", note="step − Σ kernels"),
                            Content.styled(f"  n/a: {why}", "italic $text-muted"))
            # step ÷ floor is 100 ÷ the share of the ceiling: over the ceiling it is a step "under its
            # floor", the news the note says why of, so it gives its line to the note (a CPU run with a
            # baseline fits the 160x48 pane then, its tok/s ceiling not under a scrollbar)
            set_content(note, lines(
                gap,
                *([] if low else [stat(fmt_num(r.measured_step_ns / r.floor_ns if r.floor_ns else None, 2, "×"),
                                       "step ÷ floor")]),
                stat(fmt_num(1e9 / r.floor_ns if r.floor_ns else None, 0), "tok/s ceiling", note="at this ctx_len"),
            ))
            return
        # No profile window: the static prediction, and the measured step time when there is one.
        recent = snap.step_ns[-1024:]  # the current step time: the median of the latest steps
        step_ns = percentile(recent, 50) if recent else None
        nbytes = sum(k.bytes_read + k.bytes_written for k in snap.kernels) or None
        ideal = sum(k.predicted_ns for k in snap.kernels) or None
        gbps = nbytes / step_ns if nbytes and step_ns else None
        set_content(stats, lines(
            stat(fmt_bytes(nbytes), "bytes/step"),
            stat(fmt_ns(ideal), "ideal", note="Σ kernel ideals"),
            stat(fmt_ns(step_ns), "measured", "bold $text-primary", note="recent p50"),
            stat(fmt_gbps(gbps, ""), "GB/s achieved"),
            stat("—", "of ceiling"),
        ))
        gapbar.set_parts(0, 0, 0)
        why = snap.unavailable.get("roofline") or snap.unavailable.get("kernels") or "no profile window yet"
        keys = profile_hint(self.app)  # as the keymap binds them
        hint = [(" · ", "$text-muted"), *profile_keys(ended, keys)] if ended else \
            [(" · press ", "$text-muted"), (keys.profile, "bold $accent"), (" to profile", "$text-muted")] \
            if live else [(" · this snapshot kept none (--headless --profile records one)", "$text-muted")]
        set_content(note, Content.assemble((why, "italic $text-muted"), *hint))


def measured_note(r) -> str:
    """How the roofline's step was measured, in the note's room beside a 47-column pane: a window's
    steps and its timer ("32 steps, cupti"), or the continuous range's latest steps, as the kernel
    table says ("256 steps, continuous" took two lines there, its second under the values)."""
    if r.timing == "continuous":
        return f"last {r.steps} steps"
    return f"{r.steps} steps, {r.timing or 'timed'}"


def _baseline_step(snap: ProfileSnapshot, baseline: ProfileSnapshot | None) -> list[Content]:
    """The baseline's measured step and the Δ against it (none without a baseline)."""
    if baseline is None:
        return []
    from tfdash.app.baseline import step_delta

    both = step_delta(baseline, snap)
    if both is None:
        return [stat("—", "baseline", note="no profile window in one of them")]
    step, pct = both
    return [stat(fmt_ns(step), "baseline", "bold", note=f"Δ {'+' if pct > 0 else ''}{pct:.1f} % vs it")]
