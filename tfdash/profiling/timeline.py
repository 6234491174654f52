"""Per-launch time inside the decode step: profile windows over N steps of a live generation.

    cupti    (CUDA backends) the window's steps run under torch.profiler (CUPTI). Device events
             are mapped to StepPlan launches by their order within each replay. How many device
             events each launch makes is learned once per runtime from one eager step with a
             `record_function` range and a sync around every launch (a tilelang launch is one
             kernel named `<launch.kernel>_kernel`; a torch-graph launch is several torch
             kernels); replays are then checked name by name against what was learned.
    direct   (CPU) each launch of the window's steps is timed on the host clock.

A window hands back a `WindowResult`: per launch x step device ns (exclusive: see map_replays), step ns (the ring events'
step times on CUDA, the host's on CPU), the kernels' spans for the timeline, and an error line
instead of numbers when the mapping failed. The step's gap = step time - sum of its kernels.

Windows plug into `Generation.intercept` (see tfdash.engine.decode); `profile_steps` runs one
outside a generation (the caller sets pos).
"""

from __future__ import annotations

import re
import threading
import time
import warnings
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from tfdash.engine.decode import percentile

# torch.profiler warns (once, on stderr) that a profiler "clears events at the end of each cycle".
# That is what a window wants; headless runs and the dashboard's log should not carry it.
warnings.filterwarnings("ignore", message=r"Warning: Profiler clears events", category=UserWarning)

TRACE_STEPS = 8  # a window keeps the kernel spans of its last few steps for the timeline
ANNOTATION = "tfdash.launch."
STEP_DEVICE_KINDS = ("kernel", "gpu_memset", "gpu_memcpy")
_HOST_COPY = re.compile(r"^Memcpy (DtoH|HtoD|HtoH|PtoP)")  # the token ring's copy is not the step's


@dataclass(frozen=True)
class DeviceEvent:
    name: str
    start_ns: int
    dur_ns: int


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
        Set beside gap_ns (from the ring events' step time) it checks the two clocks agree."""
        return None if self.period_ns is None else self.period_ns - self.kernel_sum_ns


def failed(method: str, first_step: int, error: str, t0: int = 0, t1: int = 0) -> WindowResult:
    return WindowResult(method, first_step, 0, (), (), (), (), t0, t1, error)


# -- pure mapping (tested on CPU with synthetic events) -----------------------------------------
def step_events(events: Sequence[DeviceEvent]) -> list[DeviceEvent]:
    """Device events that belong to a step (kernels, memsets, device copies), in start order."""
    return sorted((e for e in events if not _HOST_COPY.match(e.name) and not e.name.startswith(ANNOTATION)),
                  key=lambda e: e.start_ns)


MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: an overlapping window's start mark
CLOCK_SLACK_NS = 20_000  # CPU and GPU timestamps are aligned to a few microseconds, not exactly


def attribute(annotations: Sequence[tuple[int, int, int]], events: Sequence[DeviceEvent],
              n_launches: int) -> tuple[tuple[str, ...], ...]:
    """Names of the device events of each launch, from an eager step where launch i ran inside
    the range annotations[(i, start_ns, end_ns)] with a sync before the range closed: its kernels
    end before its range does and start after the previous range ended. An event goes to the
    range it lies inside, else (clock skew) to the nearest one within CLOCK_SLACK_NS of its
    midpoint; ValueError when none is that close."""
    spans = sorted(annotations, key=lambda a: a[1])
    seen = {a[0] for a in spans}
    missing = [i for i in range(n_launches) if i not in seen]
    if missing:
        raise ValueError(f"no profiler range for launch(es) {missing[:5]}")
    names: list[list[str]] = [[] for _ in range(n_launches)]
    for e in step_events(events):
        end = e.start_ns + e.dur_ns
        hit = next((a for a in spans if a[1] <= e.start_ns and end <= a[2]), None)
        if hit is None:
            mid = e.start_ns + e.dur_ns // 2

            def dist(a, mid=mid):
                return 0 if a[1] <= mid <= a[2] else min(abs(mid - a[1]), abs(mid - a[2]))

            near = min(spans, key=dist)
            hit = near if dist(near) <= CLOCK_SLACK_NS else None
        if hit is None:
            raise ValueError(f"device event {e.name!r} at {e.start_ns} ns is outside every launch's range")
        names[hit[0]].append(e.name)
    return tuple(tuple(n) for n in names)


def check_tilelang_names(names: Sequence[Sequence[str]], kernels: Sequence[str]) -> str | None:
    """A tilelang launch is one kernel named `<launch.kernel>_kernel`; else the first mismatch."""
    for i, (got, want) in enumerate(zip(names, kernels)):
        if len(got) != 1 or not got[0].startswith(f"{want}_kernel"):
            return f"launch {i} ran {list(got)}, the plan says one {want}_kernel"
    return None


def _align(ev: list[DeviceEvent], names, steps: int, per_step: int):
    """An overlapping window's events: CUPTI started and stopped with steps in flight, so the list
    begins inside some replay and runs past the window. Keep the `steps` replays from the first
    complete one after the start marker (the kernel `Window` enqueues after starting the profiler;
    without it, the first complete replay). Events of no plan kernel are dropped."""
    known = {k for n in names for k in n}
    expect = [k for n in names for k in n]
    start = 0
    for i, e in enumerate(ev):
        if MARKER in e.name and e.name not in known:
            start = i + 1
            break
    ev = [e for e in ev[start:] if e.name in known]
    for i in range(len(ev) - per_step + 1):
        if ev[i].name == expect[0] and [e.name for e in ev[i:i + per_step]] == expect:
            if len(ev) - i < steps * per_step:
                return ev, (f"CUPTI saw {(len(ev) - i) // per_step} complete replays after the window "
                            f"started; it asked for {steps}")
            return ev[i:i + steps * per_step], None
    return ev, "no complete replay among CUPTI's events"


def map_replays(events: Sequence[DeviceEvent], names: Sequence[Sequence[str]], steps: int,
                align: bool = False):
    """Split the window's device events into steps x launches by order, checking each name.
    Returns (launch_ns [launch][step], [(step, launch, name, start, dur)], period_ns, error).
    align: the window overlapped other steps (see _align).

    launch_ns is each kernel's *exclusive* time: from the later of its start and the end of
    every kernel before it, to its end. With programmatic dependent launch a kernel starts while
    its predecessor drains and waits for it on the device, so its raw duration counts that wait
    twice; its exclusive time is what it adds to the step. The exclusive times of a replay sum
    to its busy time, and step - sum is the idle (launch gaps, bubbles). The spans keep the raw
    start and duration for the timeline."""
    ev = step_events(events)
    per_step = sum(len(n) for n in names)
    if per_step == 0:
        return (), [], None, "the learned kernel map is empty"
    if align:
        ev, error = _align(ev, names, steps, per_step)
        if error:
            return (), [], None, error
    if len(ev) != steps * per_step:
        return (), [], None, (f"CUPTI saw {len(ev)} device events over {steps} replays; the kernel map "
                              f"expects {per_step} per step ({steps * per_step})")
    owner = [i for i, n in enumerate(names) for _ in n]
    expect = [k for n in names for k in n]
    launch_ns = [[0] * steps for _ in names]
    spans = []
    firsts = []
    frontier = ev[0].start_ns  # the latest end of any earlier event
    for s in range(steps):
        block = ev[s * per_step:(s + 1) * per_step]
        firsts.append(block[0].start_ns)
        for j, e in enumerate(block):
            if e.name != expect[j]:
                return (), [], None, (f"step {s}: device event {j} is {e.name!r}, launch {owner[j]} "
                                      f"ran {expect[j]!r} when learned")
            end = e.start_ns + e.dur_ns
            launch_ns[owner[j]][s] += max(0, end - max(e.start_ns, frontier))
            frontier = max(frontier, end)
            spans.append((s, owner[j], e.name, e.start_ns, e.dur_ns))
    period = percentile([b - a for a, b in zip(firsts, firsts[1:])], 50) if steps > 1 else None
    return tuple(tuple(r) for r in launch_ns), spans, period, None


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


class KernelMap:
    """The device events each launch makes, learned once per runtime (see the module docstring)."""

    def __init__(self):
        self.names: tuple[tuple[str, ...], ...] | None = None
        self.error: str | None = None

    def learn(self, runtime) -> None:
        if self.names is not None or self.error is not None:
            return
        try:
            self.names = learn_kernel_map(runtime)
            if runtime.backend == "tilelang-graph":
                self.error = check_tilelang_names(self.names, [la.kernel for la in runtime.plan.launches])
        except Exception as e:
            self.error = f"cannot learn the kernel map: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"


def _kineto_events(prof):
    """(device events, annotations) from a stopped torch.profiler, across torch versions."""
    from torch.autograd import DeviceType

    devs, anns = [], []
    try:
        raw = prof.profiler.kineto_results.events()
    except AttributeError:
        raw = None
    if raw is not None:
        for e in raw:
            name = e.name()
            kind = e.activity_type() if hasattr(e, "activity_type") else None
            if e.device_type() == DeviceType.CUDA:
                if (kind in STEP_DEVICE_KINDS) if kind is not None else not name.startswith(ANNOTATION):
                    devs.append(DeviceEvent(name, int(e.start_ns()), int(e.duration_ns())))
            elif name.startswith(ANNOTATION):
                anns.append((int(name[len(ANNOTATION):]), int(e.start_ns()), int(e.end_ns())))
        return devs, anns
    for e in prof.events():  # FunctionEvent times are microseconds
        start, end = int(e.time_range.start * 1000), int(e.time_range.end * 1000)
        if e.device_type == DeviceType.CUDA and not e.name.startswith(ANNOTATION):
            devs.append(DeviceEvent(e.name, start, end - start))
        elif e.name.startswith(ANNOTATION):
            anns.append((int(e.name[len(ANNOTATION):]), start, end))
    return devs, anns


def learn_kernel_map(runtime) -> tuple[tuple[str, ...], ...]:
    """One eager step, each launch in its own profiler range with a sync inside it. The step's
    effects are undone where they matter: pos and tok are restored; the cache row and
    out_tokens slot it wrote are rewritten by the real step at the same position."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with runtime.held():
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i, fn in enumerate(runtime.launch_fns):
                with record_function(f"{ANNOTATION}{i}"):
                    fn()
                    torch.cuda.synchronize(runtime.device)
    devs, anns = _kineto_events(prof)
    names = attribute(anns, devs, len(runtime.launch_fns))
    graph = getattr(runtime, "graph", None)
    if graph is not None:
        names = graph_names(names, _replay_events(runtime, graph))
    return names


def _replay_events(runtime, graph) -> list[DeviceEvent]:
    """The device events of one replay of the captured step (state restored as above)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with runtime.held():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            graph.replay()
            torch.cuda.synchronize(runtime.device)
    return step_events(_kineto_events(prof)[0])


def graph_names(eager: Sequence[Sequence[str]], replay: Sequence[DeviceEvent]) -> tuple[tuple[str, ...], ...]:
    """The names a replay gives each launch's device events: inside a CUDA graph a copy can run
    as a kernel (`Memcpy DtoD` eagerly, `memcpy32_post` in the graph), so the eager names are
    re-read from one profiled replay, split by the eager counts. ValueError when the counts differ."""
    counts = [len(n) for n in eager]
    if len(replay) != sum(counts):
        raise ValueError(f"one graph replay ran {len(replay)} device events, the eager step {sum(counts)}")
    out, k = [], 0
    for c in counts:
        out.append(tuple(e.name for e in replay[k:k + c]))
        k += c
    return tuple(out)


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


def profile_steps(runtime, steps: int, timer: Timer | None = None, first_step: int | None = None) -> WindowResult:
    """A window over `steps` steps run right now, outside any generation, from the runtime's
    current pos (set it first; steps must fit in the cache)."""
    from tfdash.engine.runtime import RING

    timer = timer or Timer(runtime)
    runtime.ensure_captured()
    w = timer.window(steps)
    first = runtime.position if first_step is None else first_step
    w.start(runtime, first, steps)
    runtime.begin()
    pending: deque[int] = deque()
    for k in range(steps):
        if len(pending) >= RING - 1:
            s = pending.popleft()
            runtime.wait(s % RING)
            w.on_step(runtime.step_ns(s % RING))
        runtime.enqueue(k % RING, w.step_fn)
        pending.append(k)
    while pending:
        s = pending.popleft()
        runtime.wait(s % RING)
        w.on_step(runtime.step_ns(s % RING))
    w.finish(runtime, False)
    return w.result
