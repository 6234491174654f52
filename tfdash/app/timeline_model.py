"""One profiled step on a time axis, from a snapshot's kernel spans: plain functions, no widgets.

The spans are the ones the Chrome trace exports (`ProfileSnapshot.timeline`: CUPTI's start and
duration of each device kernel of the latest window's last steps), so the screen shows what
Perfetto shows. Within a step, each kernel is set against the latest end of the kernels before
it (the frontier):

    overlap   how long it ran while an earlier kernel was still running: with programmatic
              dependent launch a kernel starts while its predecessor drains
    gap       how long the GPU ran none of the step's kernels before it started: launch ramp,
              bubbles
"""

from __future__ import annotations

from dataclasses import dataclass

from tfdash.profiling.snapshot import ProfileSnapshot


@dataclass(frozen=True)
class Bar:
    launch: int  # StepPlan index
    role: str
    name: str  # the device kernel
    start_ns: int  # from the step's first kernel start
    end_ns: int
    overlap_ns: int
    gap_ns: int

    @property
    def dur_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class StepTimeline:
    step: int
    bars: tuple[Bar, ...]  # in start order

    @property
    def span_ns(self) -> int:
        return max((b.end_ns for b in self.bars), default=0)

    @property
    def overlap_ns(self) -> int:
        return sum(b.overlap_ns for b in self.bars)

    @property
    def gap_ns(self) -> int:
        return sum(b.gap_ns for b in self.bars)

    @property
    def busy_ns(self) -> int:
        return self.span_ns - self.gap_ns

    @property
    def overlapped(self) -> int:
        """How many kernels started before the one before them ended."""
        return sum(1 for b in self.bars if b.overlap_ns > 0)


def steps(snap: ProfileSnapshot | None) -> list[int]:
    """The steps the snapshot's timeline holds, oldest first."""
    return sorted({s.step for s in snap.timeline}) if snap is not None else []


def step_ctx(snap: ProfileSnapshot | None, step: int | None) -> int | None:
    """The ctx_len the timeline's `step` ran at, or None where the snapshot cannot say. A profile
    window numbers its spans' steps from 0; its record among `snap.windows` (the one the roofline
    was priced from, found by its ctx_len and step count: the spans come from that same window)
    gives its first step, a generation step, which is that step's ctx_len. Continuous timing
    numbers its spans by generation step already."""
    roof = getattr(snap, "roofline", None)
    if roof is None or step is None:
        return None
    if roof.timing == "continuous":
        return step
    firsts = [w.first_step for w in snap.windows if w.ctx_len == roof.ctx_len and w.steps == roof.steps]
    return firsts[-1] + step if firsts else None


def step_timeline(snap: ProfileSnapshot | None, step: int | None = None) -> StepTimeline | None:
    """The bars of `step` (default: the latest step); None when the snapshot has no spans."""
    have = steps(snap)
    if not have:
        return None
    step = have[-1] if step not in have else step
    spans = sorted((s for s in snap.timeline if s.step == step), key=lambda s: (s.start_ns, s.launch))
    roles = {k.index: k.role for k in snap.kernels}
    origin = spans[0].start_ns
    frontier = origin
    bars = []
    for s in spans:
        start, end = s.start_ns, s.start_ns + max(0, s.dur_ns)
        overlap = max(0, min(end, frontier) - start)
        gap = max(0, start - frontier)
        bars.append(Bar(s.launch, roles.get(s.launch, f"#{s.launch}"), s.name, start - origin, end - origin,
                        overlap, gap))
        frontier = max(frontier, end)
    return StepTimeline(step, tuple(bars))


def nice_step(span: float, ticks: int = 6) -> float:
    """A tick interval of 1, 2 or 5 times a power of ten, giving about `ticks` ticks over `span`."""
    import math

    if span <= 0:
        return 1.0
    raw = span / max(1, ticks)
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def cell_kind(bar: Bar, frontier_ns: int, a: float, b: float) -> str:
    """What the cell covering [a, b) ns shows of `bar`, given the frontier before it: "run" (its
    own time), "overlap" (an earlier kernel still running), "gap" (idle before it), or ""."""
    own0 = max(bar.start_ns, frontier_ns)
    if own0 < b and bar.end_ns > a and own0 < bar.end_ns:
        return "run"
    if bar.overlap_ns and bar.start_ns < b and min(bar.end_ns, frontier_ns) > a:
        return "overlap"
    if bar.gap_ns and frontier_ns < b and bar.start_ns > a:
        return "gap"
    return ""


def frontiers(tl: StepTimeline) -> list[int]:
    """For each bar, the latest end of the bars before it (its own start for the first)."""
    out, f = [], tl.bars[0].start_ns if tl.bars else 0
    for b in tl.bars:
        out.append(f)
        f = max(f, b.end_ns)
    return out
