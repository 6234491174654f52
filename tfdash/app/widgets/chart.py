"""A plotext line chart whose colours follow the app's theme.

Callers hand it plain series (`Line`s and horizontal rules) and it draws them with half-block
markers on round-number ticks; the plot is rebuilt on data or theme change only, never on a timer.
With NO_COLOR a rule is dotted (rule_mark), where a colour alone told it from the line; rules are
drawn under the lines, in colour as without.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from textual.color import Color
from textual_plotext import PlotextPlot


def rule_mark() -> str:
    """The glyph of a horizontal rule, for a legend to show what the chart draws."""
    return "·" if os.environ.get("NO_COLOR") else "━"


@dataclass(frozen=True)
class Line:
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    color: str = "primary"  # a theme variable
    scatter: bool = False


@dataclass(frozen=True)
class Figure:
    lines: tuple[Line, ...] = ()
    hlines: tuple[tuple[float, str], ...] = ()  # (y, theme variable)
    xlabel: str = ""
    ylabel: str = ""
    y_from_zero: bool = False


def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About n round-number ticks (1, 2 or 5 x 10^k apart) covering lo..hi."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    v = first
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def tick_label(v: float, step: float) -> str:
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    if step >= 1:
        return f"{v:,.0f}"
    digits = max(0, -math.floor(math.log10(step)))
    return f"{v:.{digits}f}"


def _ticks(lo: float, hi: float, n: int) -> tuple[list[float], list[str]]:
    t = nice_ticks(lo, hi, n)
    if len(t) < 2 and hi > lo:
        t = nice_ticks(lo, hi, 2 * n)
    step = t[1] - t[0] if len(t) > 1 else (abs(t[0]) / 10 if t and t[0] else 1.0)
    return t, [tick_label(v, step) for v in t]


CHART_MIN_H = 4  # a plot's least rows: a line of it, its y ticks' room, the x ticks and the axis labels


class Chart(PlotextPlot):
    DEFAULT_CSS = f"""
    Chart {{
        height: 1fr;
        min-height: {CHART_MIN_H};
    }}
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._figure = Figure()
        self._drawn_size = None

    def on_mount(self) -> None:
        super().on_mount()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())
        self._draw()

    def fit_size(self) -> None:
        """The ticks spaced for the size a layout gave the plot, called in that layout (the
        dashboard's fit_laid_out, layout.FitsBeforeDraw) so that its frame draws them so: drawn on
        Resize, after that frame, they were spaced for another width for a frame. Only where the
        size changed: it runs at every layout."""
        if self.size != self._drawn_size:
            self._draw()

    def on_resize(self) -> None:
        self.fit_size()

    def show(self, figure: Figure) -> None:
        if figure == self._figure:
            return
        self._figure = figure
        self._draw()

    @property
    def figure(self) -> Figure:
        return self._figure

    def _rgb(self, var: str) -> tuple[int, int, int]:
        value = self.app.theme_variables.get(var) or self.app.theme_variables.get("primary", "#4C9AFF")
        return Color.parse(value).rgb

    def _draw(self) -> None:
        if not self.is_mounted:
            return
        self._drawn_size = self.size
        f, plt = self._figure, self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.frame(False)
        plt.ticks_color(self._rgb("foreground-muted"))
        # plotext divides by the data's range: a NaN (a metric NVML could not read) would make
        # that range NaN and the draw raise, so non-finite points are left out.
        pts = [[(x, y) for x, y in zip(line.xs, line.ys) if _finite(x) and _finite(y)] for line in f.lines]
        xs_all = [x for p in pts for x, _ in p]
        ys_all = [y for p in pts for _, y in p] + [y for y, _ in f.hlines if _finite(y)]
        if not xs_all:
            plt.xticks([])
            plt.yticks([])
            self.refresh()
            return
        x_lo, x_hi = min(xs_all), max(xs_all)
        # the rules first: plotext draws what comes later over them, so a series is seen whole across
        # its rule (a dotted rule drawn last hid every point of the series on its row under NO_COLOR)
        for y, var in f.hlines:
            if _finite(y) and rule_mark() != "━":
                plt.plot([x_lo, x_hi], [y, y], marker=rule_mark(), color=self._rgb(var))
            elif _finite(y):
                plt.hline(y, self._rgb(var))
        for line, p in zip(f.lines, pts):
            if not p:
                continue
            draw = plt.scatter if line.scatter else plt.plot
            draw([x for x, _ in p], [y for _, y in p], marker="●" if line.scatter else "hd",
                 color=self._rgb(line.color))
        y_lo, y_hi = (0.0 if f.y_from_zero else min(ys_all)), max(ys_all)
        pad = (y_hi - y_lo) * 0.08 or abs(y_hi) * 0.05 or 1.0
        y_lo2 = y_lo if f.y_from_zero else y_lo - pad
        plt.ylim(y_lo2, y_hi + pad)
        if x_hi > x_lo:
            plt.xlim(x_lo, x_hi)
        width, height = self.size
        xt, xl = _ticks(x_lo, x_hi, max(2, min(6, width // 9)))
        yt, yl = _ticks(y_lo2, y_hi + pad, max(2, min(4, height // 3)))
        plt.xticks(xt, xl)
        plt.yticks(yt, yl)
        if f.xlabel:
            plt.xlabel(f.xlabel)
        if f.ylabel:
            plt.ylabel(f.ylabel)
        self.refresh()


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
