"""The NVML pane: DRAM bandwidth from GPM against the analyzer's prediction, clocks, power and
temperature, and their time series, each chart shown whole or left out (fit_charts)."""

from __future__ import annotations

from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from tfdash.app.model import fmt_num
from tfdash.app.widgets.chart import CHART_MIN_H, Chart, Figure, Line
from tfdash.app.widgets.panes import Throttle, key, lines, set_content, stat
from tfdash.profiling.snapshot import ProfileSnapshot, Series


# "NVML ÷ predicted" and two spaces in the label column, so every note starts in one column; the values
# (5 cells at most: "1,983", "0.98×") in 7, which keeps the longest line ("NVML GPM, now") to the
# 40 cells inside the 44-column pane (app.tcss)
VALUE_W, LABEL_W = 7, 18


def nv_stat(value: str, label: str, value_style: str = "bold", note: str = "") -> Content:
    return stat(value, label, value_style, note, VALUE_W, LABEL_W)


def _series(snap: ProfileSnapshot, name: str) -> Series | None:
    for s in snap.nvml:
        if s.name == name:
            return s
    return None


def _last(s: Series | None) -> float | None:
    if s is None:
        return None
    for v in reversed(s.values):
        if v is not None:
            return v
    return None


def _points(s: Series | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if s is None:
        return (), ()
    pts = [(t, v) for t, v in zip(s.t, s.values) if v is not None]
    return tuple(p[0] for p in pts), tuple(p[1] for p in pts)


NVML_NUMBERS = 6  # the NVML pane's lines of numbers (layout.NVML_MIN_H: with its border)
NVML_DRAM_H = 1 + CHART_MIN_H  # the DRAM chart's key and its least plot
NVML_CHARTS_H = NVML_DRAM_H + 2 + CHART_MIN_H  # and the power chart's key, a blank line over it
NVML_CHART_ONLY_H = 2 + NVML_DRAM_H  # the least pane of the DRAM chart alone (-chart-only), its border included


class NvmlPane(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._slow = Throttle()

    def compose(self):
        yield Static(id="nvml-stats", classes="stats")
        # each chart's key a widget of its own, hidden with its chart where the pane is too short for it
        yield Static(Content.assemble(*key("$primary", "DRAM GB/s"), *key("$accent", "predicted")),
                     id="nvml-dram-key", classes="stats")
        yield Chart(id="nvml-dram")
        yield Static(Content.assemble(*key("$secondary", "power W"), ("over the run, s", "$text-muted")),
                     id="nvml-power-key", classes="stats")
        yield Chart(id="nvml-power")

    def on_resize(self) -> None:
        self.fit_charts(self.content_region.height)

    def fit_charts(self, rows: int) -> None:
        """Each chart whole, at CHART_MIN_H rows or more, or not at all: the power chart goes first,
        then the DRAM chart, and the border says how many more rows would show them (a chart cut
        mid-plot, or a key over no chart, was all a short pane showed of them). With -chart-only
        (too few rows for the numbers, which the line over the panes then holds) the DRAM chart alone."""
        if rows <= 0:
            return  # not laid out yet (or put aside): its resize fits it
        off = self.has_class("-unavailable")
        only = self.has_class("-chart-only")  # its numbers left to the line over the panes (screens/main.py)
        numbers = 0 if only else NVML_NUMBERS
        both, dram = numbers + NVML_CHARTS_H, numbers + NVML_DRAM_H
        keep = 0 if off else 2 if rows >= both else 1 if rows >= dram else 0
        self.query_one("#nvml-stats").display = not only
        for i, part in ((1, "dram"), (2, "power")):
            for node in (f"#nvml-{part}-key", f"#nvml-{part}"):
                self.query_one(node).display = keep >= i
        more = NVML_NUMBERS + NVML_CHARTS_H - rows
        more = f"{more} more row{'' if more == 1 else 's'}"
        said = "numbers and power chart need" if only else "power chart needs" if keep else "charts need"
        hidden = "" if off or keep == 2 else f"{said} {more}"
        if (self.border_subtitle or "") != hidden:  # setting it repaints the whole pane
            self.border_subtitle = hidden

    def show(self, snap: ProfileSnapshot | None, final: bool = True) -> None:
        stats = self.query_one("#nvml-stats", Static)
        dram_chart = self.query_one("#nvml-dram", Chart)
        power_chart = self.query_one("#nvml-power", Chart)
        if snap is None:
            set_content(stats, "")
            return
        why = snap.unavailable.get("nvml")
        self.set_class(bool(why) and not snap.nvml, "-unavailable")
        self.fit_charts(self.content_region.height)
        if why and not snap.nvml:
            set_content(stats, Content.assemble(("NVML unavailable\n", "bold $text-warning"),
                                                (why, "italic $text-muted")))
            dram_chart.show(Figure())
            power_chart.show(Figure())
            return
        dram = _series(snap, "dram_gbps")
        r = snap.roofline
        predicted = r.achieved_gbps if r is not None else None
        ratio = r.nvml_ratio if r is not None else None
        set_content(stats, lines(
            nv_stat(fmt_num(_last(dram), 0), "DRAM GB/s", "bold $text-primary", note="NVML GPM, now"),
            # the profile window's own NVML figure (the second of decode before it): mid-run it is
            # not the latest sample above, and it is what the ratio divides
            nv_stat(fmt_num(r.nvml_gbps if r is not None else None, 0), "GB/s window", note="NVML GPM"),
            nv_stat(fmt_num(predicted, 0), "GB/s predicted", note="bytes ÷ step"),
            nv_stat(fmt_num(ratio, 2, "×"), "NVML ÷ predicted", note="window"),
            nv_stat(fmt_num(_last(_series(snap, "sm_clock_mhz")), 0), "MHz SM",
                 note=f"{fmt_num(_last(_series(snap, 'mem_clock_mhz')), 0)} MHz mem"),
            nv_stat(fmt_num(_last(_series(snap, "power_w")), 0), "W",
                 note=f"{fmt_num(_last(_series(snap, 'temp_c')), 0)} °C"),
        ))
        if not self._slow.due(force=final):
            return
        x, y = _points(dram)
        hl = ((predicted, "accent"),) if predicted else ()
        dram_chart.show(Figure(lines=(Line(x, y, "primary"),), hlines=hl, y_from_zero=True, xlabel="s",
                               ylabel="GB/s"))
        px, py = _points(_series(snap, "power_w"))
        power_chart.show(Figure(lines=(Line(px, py, "secondary"),), y_from_zero=True, xlabel="s", ylabel="W"))
