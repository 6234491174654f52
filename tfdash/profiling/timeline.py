"""Per-launch time inside the decode step: profile windows over N steps of a live generation.

    cupti    (CUDA backends) the window's steps run under torch.profiler (CUPTI). Device events
             are mapped to StepPlan launches by their order within each replay, against the
             kernel map learned once per runtime (`tfdash.profiling.kernel_map`: a tilelang
             launch is one kernel named `<launch.kernel>_kernel`; a torch-graph launch is
             several torch kernels).
    direct   (CPU) each launch of the window's steps is timed on the host clock.

A window hands back a `WindowResult`: per launch x step device ns (exclusive: see map_replays),
step ns (the token ring's step times on CUDA: its clock stamps, else events; the host's on CPU), the kernels' spans for the timeline, and an error line
instead of numbers when the mapping failed. The step's gap = step time - sum of its kernels.

Windows plug into `Generation.intercept` (see tfdash.engine.decode); `profile_steps` runs one
outside a generation (the caller sets the runtime's position).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Callable

from tfdash.engine.decode import percentile
from tfdash.profiling.kernel_map import (DeviceEvent, KernelMap, _kineto_events, attribute,  # noqa: F401
                                         check_tilelang_names, graph_names, map_replays, step_events)

TRACE_STEPS = 8  # a window keeps the kernel spans of its last few steps for the timeline


@dataclass(frozen=True)
class WindowResult:
    method: str  # "cupti" | "direct"
    first_step: int  # generation step index of its first step (== that step's ctx_len)
    steps: int  # steps measured
    launch_ns: tuple[tuple[int, ...], ...]  # [launch][step]: device ns of the launch's kernels
    step_ns: tuple[int, ...]  # [step]
    names: tuple[tuple[str, ...], ...]  # [launch]: its device kernels' names
    spans: tuple[tuple[int, int, str, int, int], ...]  # (step, launch, name, start perf_counter ns, dur)
    t_start_ns: int  # perf_counter_ns at the window's start and end
    t_end_ns: int
    error: str | None = None
    period_ns: float | None = None  # CUPTI: median start-to-start of consecutive replays
    phases_ns: tuple[tuple[str, int], ...] = ()  # CUPTI: host time of the window's own work, by phase

    @property
    def ok(self) -> bool:
        return self.error is None and self.steps > 0

    @property
    def ctx_len(self) -> int:
        return self.first_step + self.steps // 2

    def p50(self, i: int) -> float:
        return percentile(self.launch_ns[i], 50)

    def p90(self, i: int) -> float:
        return percentile(self.launch_ns[i], 90)

    @property
    def step_p50_ns(self) -> float:
        return percentile(self.step_ns, 50)

    @property
    def kernel_sum_ns(self) -> float:
        return float(sum(self.p50(i) for i in range(len(self.launch_ns))))

    @property
    def gap_ns(self) -> float:
        return self.step_p50_ns - self.kernel_sum_ns

    @property
    def device_gap_ns(self) -> float | None:
        """CUPTI's own idle per step: replay period - sum of exclusive kernel times (None on CPU).
        Set beside gap_ns (from the token ring's step time) it checks the two clocks agree."""
        return None if self.period_ns is None else self.period_ns - self.kernel_sum_ns


def failed(method: str, first_step: int, error: str, t0: int = 0, t1: int = 0) -> WindowResult:
    return WindowResult(method, first_step, 0, (), (), (), (), t0, t1, error)


# -- windows -----------------------------------------------------------------------------------
class Window:
    """A profile window over the next `steps` steps (the protocol `Generation.intercept` runs)."""

    method = "?"

    def __init__(self, steps: int, on_done: Callable[[WindowResult], None] | None = None):
        self.steps = max(1, int(steps))
        self.step_fn = None
        self.on_done = on_done
        self.result: WindowResult | None = None
        self.done = threading.Event()
        self.first_step = 0
        self.t_start_ns = 0

    def _finish_with(self, result: WindowResult) -> None:
        self.result = result
        self.done.set()
        if self.on_done is not None:
            self.on_done(result)

    def cancel(self, reason: str) -> None:
        if not self.done.is_set():
            self._finish_with(failed(self.method, self.first_step, reason))

    def start(self, runtime, first_step: int, steps: int) -> None:
        raise NotImplementedError

    def on_step(self, step_ns: int) -> None:
        pass

    def finish(self, runtime, cancelled: bool) -> None:
        raise NotImplementedError


class DirectWindow(Window):
    """CPU: every launch timed on the host clock; the step is timed around its launches."""

    method = "direct"

    def start(self, runtime, first_step, steps):
        self.rt, self.first_step, self.steps = runtime, first_step, steps
        n = len(runtime.launch_fns)
        self._launch: list[list[int]] = [[] for _ in range(n)]
        self._step: list[int] = []
        self._spans: deque = deque(maxlen=TRACE_STEPS * n)
        self.t_start_ns = time.perf_counter_ns()
        self.step_fn = self._timed_step

    def _timed_step(self) -> None:
        clock, spans, s = time.perf_counter_ns, self._spans, len(self._step)
        kernels = self.rt.plan.launches
        t_step = clock()
        for i, fn in enumerate(self.rt.launch_fns):
            t = clock()
            fn()
            dt = clock() - t
            self._launch[i].append(dt)
            spans.append((s, i, kernels[i].kernel, t, dt))
        self._step.append(clock() - t_step)

    def finish(self, runtime, cancelled):
        t_end = time.perf_counter_ns()
        n = len(self._step)
        if n == 0:
            return self._finish_with(failed(self.method, self.first_step, "the window ran no steps",
                                            self.t_start_ns, t_end))
        names = tuple((launch.kernel,) for launch in runtime.plan.launches)
        self._finish_with(WindowResult(
            self.method, self.first_step, n, tuple(tuple(r[:n]) for r in self._launch), tuple(self._step),
            names, tuple(self._spans), self.t_start_ns, t_end))


class CuptiWindow(Window):
    """CUDA: the window's steps (graph replays, or eager steps) under torch.profiler."""

    method = "cupti"

    def __init__(self, steps, kernel_map: KernelMap, on_done=None):
        super().__init__(steps, on_done)
        self.kmap = kernel_map
        self.prof = None
        self._error: str | None = None

    @property
    def overlaps(self) -> bool:
        """With SETTINGS.overlap_windows (off by default, see its help) and the kernel map learned,
        the window runs with steps in flight around it: the decode loop neither drains before nor
        after it. The first window learns the map (eager steps) and always needs an empty queue."""
        from tfdash.settings import SETTINGS

        return bool(SETTINGS.overlap_windows) and self.kmap.names is not None and self.kmap.error is None

    def start(self, runtime, first_step, steps):
        self.t_start_ns = time.perf_counter_ns()  # before any learning: NVML looks at the decode before it
        self.first_step, self.steps = first_step, steps
        self._step: list[int] = []
        self._overlapped = self.overlaps
        self._phases: list[tuple[str, int]] = []
        if not self._overlapped:
            runtime.ensure_captured()
        self.kmap.learn(runtime)
        self._realtime_offset = time.perf_counter_ns() - time.time_ns()  # CUPTI times are wall-clock
        self._error = self.kmap.error
        if self._error:
            return
        try:
            from torch.profiler import ProfilerActivity, profile

            t = time.perf_counter_ns()
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            self.prof.start()
            self._phases.append(("profiler start", time.perf_counter_ns() - t))
            if self._overlapped:
                import torch

                torch.cuda._sleep(1)  # the start mark (see _align)
        except Exception as e:
            self.prof = None
            self._error = f"torch.profiler did not start: {e}"

    def on_step(self, step_ns):
        self._step.append(int(step_ns))

    def finish(self, runtime, cancelled):
        t_end = time.perf_counter_ns()
        if self._error or self.prof is None:
            return self._finish_with(failed(self.method, self.first_step, self._error or "no profiler",
                                            self.t_start_ns, t_end))
        try:
            if not self._overlapped:
                runtime.synchronize()  # else: the window's steps are done (harvested), later ones may run on
            t = time.perf_counter_ns()
            self.prof.stop()
            t2 = time.perf_counter_ns()
            devs, _ = _kineto_events(self.prof)
            self._phases += [("profiler stop", t2 - t), ("read events", time.perf_counter_ns() - t2)]
        except Exception as e:
            return self._finish_with(failed(self.method, self.first_step, f"torch.profiler failed: {e}",
                                            self.t_start_ns, t_end))
        finally:
            self.prof = None
        n = len(self._step)
        launch_ns, spans, period, error = map_replays(devs, self.kmap.names, n, align=self._overlapped)
        if error:
            return self._finish_with(failed(self.method, self.first_step, error, self.t_start_ns, t_end))
        per_step = sum(len(x) for x in self.kmap.names)
        off = self._realtime_offset
        spans = tuple((s, i, name, start + off, dur) for s, i, name, start, dur in spans[-TRACE_STEPS * per_step:])
        self._finish_with(WindowResult(self.method, self.first_step, n, launch_ns, tuple(self._step),
                                       self.kmap.names, spans, self.t_start_ns, t_end, None, period,
                                       tuple(self._phases)))


_KERNEL_MAPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # runtime -> KernelMap


class Timer:
    """Makes the windows that fit a runtime: cupti on CUDA, direct on CPU. The kernel map is
    learned once per runtime and shared by every Timer (every Session) over it."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.method = "cupti" if runtime.cuda else "direct"
        try:
            self.kernel_map = _KERNEL_MAPS.setdefault(runtime, KernelMap())
        except TypeError:  # not weak-referenceable
            self.kernel_map = KernelMap()

    @property
    def prepared(self) -> bool:
        return self.method != "cupti" or self.kernel_map.names is not None or self.kernel_map.error is not None

    def prepare(self) -> None:
        """Learn the kernel map now (CUDA; eager steps, so nothing may be in flight). The first
        profiler session in a process also starts CUPTI, which takes seconds: done here, before a
        generation, the first window costs what the others do."""
        if self.method == "cupti":
            self.runtime.ensure_captured()
            self.kernel_map.learn(self.runtime)

    def window(self, steps: int, on_done=None) -> Window:
        if self.method == "cupti":
            return CuptiWindow(steps, self.kernel_map, on_done)
        return DirectWindow(steps, on_done)


def profile_steps(runtime, steps: int, timer: Timer | None = None, first_step: int | None = None,
                  stop: Callable[[], bool] | None = None) -> WindowResult:
    """A window over `steps` steps run right now, outside any generation, from the runtime's
    current pos (set it first; steps must fit in the cache); cut short once `stop()` (run_window)."""
    timer = timer or Timer(runtime)
    runtime.ensure_captured()
    w = timer.window(steps)
    run_window(runtime, w, steps, runtime.position if first_step is None else first_step, stop)
    return w.result


def run_window(runtime, w, steps: int, first_step: int, stop: Callable[[], bool] | None = None) -> None:
    """Drive a window (the `Generation.intercept` protocol) over `steps` steps now, outside any
    generation, from the runtime's current pos: start, the steps (each through the window's
    `step_fn`, read after `start` set it), their step times, finish. Once `stop()` is true no
    further step is enqueued and the window finishes cancelled with the steps it timed, as a
    generation's window does when its run is stopped (q or r must not wait for the rest)."""
    from tfdash.engine.runtime import RING

    w.start(runtime, first_step, steps)
    pos = runtime.position  # step k runs at pos + k: its slot is the one the graph stores into
    runtime.begin(pos)
    pending: deque[int] = deque()
    cut = False
    for k in range(pos, pos + steps):
        if stop is not None and stop():
            cut = True
            break
        if len(pending) >= RING - 1:
            s = pending.popleft()
            runtime.wait(s % RING)
            w.on_step(runtime.step_ns(s % RING))
        runtime.enqueue(k % RING, w.step_fn, getattr(w, "writes", ()))
        pending.append(k)
    while pending:
        s = pending.popleft()
        runtime.wait(s % RING)
        w.on_step(runtime.step_ns(s % RING))
    w.finish(runtime, cut)
