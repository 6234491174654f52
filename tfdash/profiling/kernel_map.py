"""Which device kernels each launch of the step makes, and a window's CUPTI events mapped onto
the StepPlan's launches by their order within each replay.

    learn_kernel_map(runtime)   one eager step, each launch in its own profiler range with a sync
                                inside it (then, for a graph runtime, one profiled replay: inside a
                                graph a copy can run as a kernel); the runtime's state is held
    map_replays(events, names)  per launch x step exclusive device ns of a window's replays,
                                checked name by name against the learned map
    profiler_on_this_thread()   torch.profiler's one-time start on the main thread, before any
                                worker starts a window

The mapping functions are pure and tested on CPU with synthetic events.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tfdash.engine.decode import percentile

# torch.profiler warns (once, on stderr) that a profiler "clears events at the end of each cycle",
# some torch versions on a profiler's first start with no schedule at all. Clearing is what every
# profiler here wants; the terminal before the dashboard, its log and headless runs should not carry it.
warnings.filterwarnings("ignore", message=r"Warning: Profiler clears events", category=UserWarning)

ANNOTATION = "tfdash.launch."
STEP_DEVICE_KINDS = ("kernel", "gpu_memset", "gpu_memcpy")
_HOST_COPY = re.compile(r"^Memcpy (DtoH|HtoD|HtoH|PtoP)")  # the token ring's copy is not the step's


@dataclass(frozen=True)
class DeviceEvent:
    name: str
    start_ns: int
    dur_ns: int


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


def exclusive_ns(starts, ends, frontier: int | None = None) -> np.ndarray:
    """Each kernel's exclusive ns, kernels in start order: from the later of its start and the end
    of every kernel before it (`frontier`: the latest end before the first, default its start) to
    its end, never negative. Windows (map_replays) and continuous timing share this one formula."""
    s, e = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    first = s[0] if frontier is None else frontier
    before = np.maximum.accumulate(np.concatenate(([first], e[:-1])))  # latest end of the kernels before
    return np.maximum(0, e - np.maximum(s, before))


def is_kernel(name: str) -> bool:
    """A device event that CUPTI's kernel records carry (not a memset or a copy)."""
    return not name.startswith(("Memset", "Memcpy"))


def tilelang_names(plan) -> tuple[tuple[str, ...], ...]:
    """The kernel map a tilelang-graph runtime of `plan` learns: one `<launch.kernel>_kernel` each."""
    return tuple((f"{la.kernel}_kernel",) for la in plan.launches)


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
    excl = exclusive_ns([e.start_ns for e in ev], [e.start_ns + e.dur_ns for e in ev]).tolist()
    for s in range(steps):
        block = ev[s * per_step:(s + 1) * per_step]
        firsts.append(block[0].start_ns)
        for j, e in enumerate(block):
            if e.name != expect[j]:
                return (), [], None, (f"step {s}: device event {j} is {e.name!r}, launch {owner[j]} "
                                      f"ran {expect[j]!r} when learned")
            launch_ns[owner[j]][s] += excl[s * per_step + j]
            spans.append((s, owner[j], e.name, e.start_ns, e.dur_ns))
    period = percentile([b - a for a, b in zip(firsts, firsts[1:])], 50) if steps > 1 else None
    return tuple(tuple(r) for r in launch_ns), spans, period, None


class KernelMap:
    """The device events each launch makes, learned once per runtime (see learn_kernel_map)."""

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


_profiler_started = False


def profiler_on_this_thread() -> None:
    """Start and stop an empty CPU-only torch.profiler here, once a process. kineto sets its client
    up on the first profiler start of the process, and when that thread is not the one that
    registered the client (the main thread, as torch is imported) it prints "External init
    callback must run in same thread as registerClient" on the native stderr and skips the set-up.
    The dashboard's session and a headless A/B start their windows in worker threads, so the main
    thread calls this first. It moves the profiler's one-time start (most of a second) off the first
    window's pause; later starts take about a millisecond."""
    global _profiler_started
    if _profiler_started:
        return
    _profiler_started = True
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]):
        pass


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
