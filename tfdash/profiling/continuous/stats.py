"""Continuous timing's statistics, in fixed memory whatever the length of the run.

    ContinuousStats.add(steps)   the mapper's steps into ring arrays of the last `keep` steps
                                 ([keep, launches] exclusive ns, step start, span, busy)
    .view(offset_ns)             a ContinuousView of the range: what the kernel table, roofline
                                 and timeline read (it answers as a WindowResult does)

A step's span is from its first kernel's start to the next step's (known once the next step
is measured, and only when it directly follows); Σ exclusive is its busy time, span - busy the
device's idle in it (launch ramp, host stalls). Percentiles are nearest-rank (tfdash.stats.rank).

Besides the ring:
  - the sweep: every `bucket` generation steps (ctx_len bucket), one WindowRecord of the p50s
    over that bucket's steps, computed when the stream leaves it (a bucket fits in the ring);
  - the slowest steps, kept whole: the `keep_slow` steps whose span most exceeds the range's p50,
    each with the launch that exceeded its own p50 the most, or -1 when the idle between kernels
    made it slow;
  - the kernel spans of the last TRACE_STEPS steps, for the timeline.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from tfdash.profiling.continuous.mapper import Steps
from tfdash.profiling.snapshot import SlowStep, WindowRecord
from tfdash.stats import rank

TRACE_STEPS = 8  # the timeline shows the kernels of the last few steps, as a window's does
MIN_SPANS_FOR_SLOW = 16  # a step is "slow" against a p50 of at least this many spans
CTX_QUANTUM = 16  # a range's ctx_len, for its predictions: a multiple of this inside the range (ContinuousView)


def pct(a: np.ndarray, q: float, axis: int = 0) -> np.ndarray:
    """Nearest-rank percentile along `axis` (the same value tfdash.stats.percentile gives)."""
    k = rank(a.shape[axis], q)
    return np.partition(a, k, axis=axis).take(k, axis=axis)


@dataclass(frozen=True)
class ContinuousView:
    """The latest `steps` steps, answering as a WindowResult does (method "continuous")."""

    first_step: int
    steps: int
    last_step: int
    p50s: tuple[float, ...]
    p90s: tuple[float, ...]
    lasts: tuple[float, ...]
    step_p50_ns: float  # the p50 span (busy p50 before any span is known)
    busy_p50_ns: float
    names: tuple[tuple[str, ...], ...]
    spans: tuple[tuple[int, int, str, int, int], ...]  # (step, launch, name, start perf_counter ns, dur)
    t_start_ns: int  # perf_counter ns of the range's first kernel start and last kernel end
    t_end_ns: int
    sweep: tuple[WindowRecord, ...] = ()
    slow: tuple[SlowStep, ...] = ()
    method: str = "continuous"
    error: str | None = None
    phases_ns: tuple = ()

    @property
    def ok(self) -> bool:
        return self.steps > 0

    @property
    def ctx_len(self) -> int:
        """The range's middle step, down to a multiple of CTX_QUANTUM: the range spans hundreds
        of steps, and the analyzer then prices it once per CTX_QUANTUM steps, not every refresh.
        Where that multiple is 0 or falls before the range's first step (a range of a few steps, a
        short run's), the middle step itself: the roofline was priced, and named, at ctx_len 0 (an
        empty cache) for steps that ran at ctx_len 0 to 11, or 12 to 20."""
        mid = self.first_step + (self.last_step - self.first_step) // 2
        down = mid - mid % CTX_QUANTUM
        return down if down >= max(1, self.first_step) else mid

    def p50(self, i: int) -> float:
        return self.p50s[i]

    def p90(self, i: int) -> float:
        return self.p90s[i]

    def last(self, i: int) -> float:
        return self.lasts[i]

    @property
    def kernel_sum_ns(self) -> float:
        return float(sum(self.p50s))

    @property
    def gap_ns(self) -> float:
        return self.step_p50_ns - self.kernel_sum_ns

    @property
    def period_ns(self) -> float:
        return self.step_p50_ns

    @property
    def device_gap_ns(self) -> float:
        return self.gap_ns


class ContinuousStats:
    def __init__(self, names, kernel_names, owner, keep: int = 256, bucket: int = 128, keep_slow: int = 8,
                 keep_buckets: int = 64):
        """`names`: [launch] -> its device kernels (the kernel map); `kernel_names`, `owner`: the
        mapper's kernels in step order and the launch of each."""
        self.names = tuple(tuple(n) for n in names)
        self.kernel_names, self.owner = tuple(kernel_names), np.asarray(owner)
        L, K = len(self.names), len(self.kernel_names)
        self.N = max(2, int(keep))
        self.B = max(1, min(int(bucket), self.N))
        self.idx = np.full(self.N, -1, dtype=np.int64)
        self.start = np.zeros(self.N, dtype=np.int64)
        self.end = np.zeros(self.N, dtype=np.int64)
        self.span = np.full(self.N, -1, dtype=np.int64)
        self.busy = np.zeros(self.N, dtype=np.int64)
        self.excl = np.zeros((self.N, L), dtype=np.int64)
        self.tidx = np.full(TRACE_STEPS, -1, dtype=np.int64)
        self.tstart = np.zeros((TRACE_STEPS, K), dtype=np.int64)
        self.tdur = np.zeros((TRACE_STEPS, K), dtype=np.int64)
        self.written = 0  # steps ever written (the ring's row is written % N)
        self.bucket: int | None = None  # the ctx_len bucket being filled
        self.sweep: deque[WindowRecord] = deque(maxlen=max(1, keep_buckets))
        self.keep_slow = max(0, int(keep_slow))
        self._slow: list = []  # min-heap of (excess, step, SlowStep)
        self._ref: tuple | None = None  # (written, p50 span, p50 per launch): the slow-step yardstick
        self._view: tuple | None = None  # (written, offset, view)
        self._unlinked = False
        self._closed = 0  # buckets summarised so far

    # -- writing -----------------------------------------------------------------------------
    def add(self, steps: Steps) -> None:
        """Steps in generation order, split at bucket edges so each bucket is summarised while
        all of it is still in the ring."""
        if not len(steps):
            return
        b = steps.index // self.B
        edges = np.flatnonzero(np.diff(b)) + 1
        for sl in np.split(np.arange(len(steps)), edges):
            part = steps.part(slice(int(sl[0]), int(sl[-1]) + 1))
            self._link(part)
            bucket = int(part.index[0]) // self.B
            if self.bucket is not None and bucket != self.bucket:
                self._close_bucket()
            self.bucket = bucket
            self._write(part)

    def _link(self, part: Steps) -> None:
        """The span of the last step written, now that the one after it has come."""
        if self.written == 0 or self._unlinked:
            self._unlinked = False
            return
        prev = (self.written - 1) % self.N
        if self.idx[prev] == part.index[0] - 1:
            self.span[prev] = part.start[0] - self.start[prev]
            self._check_slow(np.array([prev]))

    def _write(self, part: Steps) -> None:
        m = len(part)
        rows = (self.written + np.arange(m)) % self.N
        self.idx[rows], self.start[rows], self.end[rows] = part.index, part.start, part.end
        self.excl[rows] = part.excl
        self.busy[rows] = part.excl.sum(1)
        follows = np.diff(part.index) == 1
        spans = np.full(m, -1, dtype=np.int64)
        spans[:-1] = np.where(follows, np.diff(part.start), -1)
        self.span[rows] = spans
        t = min(m, TRACE_STEPS)
        trows = (self.written + m - t + np.arange(t)) % TRACE_STEPS
        self.tidx[trows], self.tstart[trows], self.tdur[trows] = part.index[-t:], part.kstart[-t:], part.kdur[-t:]
        self.written += m
        self._check_slow(rows[:-1][follows])

    def rebase(self) -> None:
        """The stream paused: the next step written does not follow the last one."""
        self._unlinked = True

    # -- the sweep and the slow steps ---------------------------------------------------------
    def _filled(self) -> np.ndarray:
        return np.arange(min(self.written, self.N))

    def _close_bucket(self) -> None:
        rows = self._filled()
        rows = rows[self.idx[rows] // self.B == self.bucket]
        if rows.size == 0:
            return
        idx = self.idx[rows]
        spans = self.span[rows]
        spans = spans[spans >= 0]
        step = float(pct(spans, 50)) if spans.size else float(pct(self.busy[rows], 50))
        first, last = int(idx.min()), int(idx.max())
        self._closed += 1
        self.sweep.append(WindowRecord(first + (last - first) // 2, first, int(rows.size), step,
                                       tuple(float(x) for x in pct(self.excl[rows], 50))))

    def close(self) -> None:
        """The run ended: summarise the bucket in progress."""
        if self.bucket is not None:
            self._close_bucket()
            self.bucket = None

    def _yardstick(self):
        if self._ref is None or self.written - self._ref[0] >= 64:
            rows = self._filled()
            spans = self.span[rows]
            spans = spans[spans >= 0]
            if spans.size < MIN_SPANS_FOR_SLOW:
                return None
            self._ref = (self.written, float(pct(spans, 50)), pct(self.excl[rows], 50).astype(np.float64))
        return self._ref

    def _check_slow(self, rows: np.ndarray) -> None:
        if not self.keep_slow or rows.size == 0:
            return
        ref = self._yardstick()
        if ref is None:
            return
        _, span50, launch50 = ref
        excess = self.span[rows] - span50
        floor = self._slow[0][0] if len(self._slow) >= self.keep_slow else -np.inf
        for r in rows[excess > floor].tolist():
            over = self.excl[r] - launch50
            span_excess = float(self.span[r] - span50)
            worst = int(np.argmax(over))
            # the kernels account for their own excess; what is left is idle (the gap)
            gap_excess = span_excess - float(np.clip(over, 0, None).sum())
            launch, by = (worst, float(over[worst])) if over[worst] >= gap_excess else (-1, gap_excess)
            slow = SlowStep(int(self.idx[r]), int(self.span[r]), span_excess, int(self.busy[r]), launch, by,
                            tuple(int(x) for x in self.excl[r]))
            item = (span_excess, slow.step, slow)
            if len(self._slow) < self.keep_slow:
                heapq.heappush(self._slow, item)
            elif item[:2] > self._slow[0][:2]:
                heapq.heapreplace(self._slow, item)

    # -- reading -------------------------------------------------------------------------------
    @property
    def period_ns(self) -> float | None:
        ref = self._ref
        return ref[1] if ref is not None else None

    def view(self, offset_ns: int = 0) -> ContinuousView | None:
        """The range now (cached until a step is written); None before the first step."""
        if self.written == 0:
            return None
        if self._view is not None and self._view[0] == (self.written, self._closed) and self._view[1] == offset_ns:
            return self._view[2]
        rows = self._filled()
        ex = self.excl[rows]
        spans = self.span[rows]
        spans = spans[spans >= 0]
        busy50 = float(pct(self.busy[rows], 50))
        last = (self.written - 1) % self.N
        idx = self.idx[rows]
        trace = []
        for t in np.argsort(self.tidx).tolist():
            if self.tidx[t] < 0:
                continue
            s = int(self.tidx[t])
            trace += [(s, int(self.owner[k]), self.kernel_names[k], int(self.tstart[t, k]) + offset_ns,
                       int(self.tdur[t, k])) for k in range(len(self.kernel_names))]
        oldest = rows[np.argmin(idx)]
        v = ContinuousView(
            int(idx.min()), int(rows.size), int(idx.max()), tuple(float(x) for x in pct(ex, 50)),
            tuple(float(x) for x in pct(ex, 90)), tuple(float(x) for x in self.excl[last]),
            float(pct(spans, 50)) if spans.size else busy50, busy50, self.names, tuple(trace),
            int(self.start[oldest]) + offset_ns, int(self.end[last]) + offset_ns, tuple(self.sweep),
            tuple(s for _, _, s in sorted(self._slow, reverse=True)))
        self._view = ((self.written, self._closed), offset_ns, v)
        return v
