"""The session's predictions, cached: the analyzer's StepAnalysis per ctx_len on the current
target, and the kernel rows, roofline and timeline of the latest window built from them
(by `tfdash.profiling.assemble`). Thread-safe; the analysis runs outside the lock."""

from __future__ import annotations

import threading

from tfdash.profiling import assemble as asm
from tfdash.profiling.analyze import StepAnalysis, analyze


class Pricing:
    def __init__(self, plan, target):
        self.plan, self.target = plan, target
        self._lock = threading.Lock()
        self._analyses: dict[int, StepAnalysis] = {}
        self._rows: tuple | None = None  # (key, window, rows)
        self._spans: tuple | None = None  # (window, spans)

    def set_target(self, target) -> None:
        with self._lock:
            self.target = target
            self._analyses.clear()

    def analysis(self, ctx_len: int) -> StepAnalysis:
        plan = self.plan
        ctx = max(0, min(int(ctx_len), plan.capacity - 1, plan.config.max_position_embeddings - 1))
        with self._lock:
            a, target = self._analyses.get(ctx), self.target
        if a is None or a.target is not target:
            a = analyze(plan, target, ctx)
            with self._lock:
                if len(self._analyses) > 64:
                    self._analyses.clear()
                self._analyses[ctx] = a
        return a

    def rows(self, win, ctx: int):
        key = (id(win), ctx, id(self.target))
        cached = self._rows
        if cached is None or cached[0] != key or cached[1] is not win:
            self._rows = cached = (key, win, asm.kernel_rows(self.analysis(ctx), win))
        return cached[2]

    def roofline(self, win, sampler, origin_ns: int, nvml_reason: str):
        nvml = asm.nvml_for_window(sampler, win, origin_ns, nvml_reason)
        return asm.roofline(self.analysis(win.ctx_len), win, self.target, nvml)

    def spans(self, win, origin_ns: int):
        if win is None:
            return ()
        if self._spans is None or self._spans[0] is not win:
            self._spans = (win, asm.timeline(win, origin_ns))
        return self._spans[1]
