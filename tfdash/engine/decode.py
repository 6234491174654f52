"""The decode loop: a generator of token events that the CLI, the profiler and the app consume.

    prefill   the same captured step walks the prompt one position at a time (no host round trip:
              the argmax launch feeds the next prompt token while any remain)
    decode    each further step's argmax is the next token

The host keeps up to `depth` steps in flight and harvests ring slots whose events completed.

Profiling hooks into the loop through `Generation.intercept(window)` (thread-safe): at the next
step boundary the loop drains the steps in flight, calls `window.start`, runs the window's
`steps` steps (each through `window.step_fn` when it has one), hands each of their step times to
`window.on_step`, drains again and calls `window.finish`. A window of 0 steps is a pause: work
done between two steps with nothing in flight (e.g. a marginal-cost measurement). Time spent in
start/finish is counted in `stats.paused_ns` (and is part of the wall time: tok/s stays honest).
A window whose `overlaps` is true (a CUPTI window under SETTINGS.overlap_windows, once its kernel
map is learned) skips both drains: it starts with steps in flight and finishes as soon as its own steps are harvested, while
later ones run on; its hooks then overlap GPU work and are not pauses.

While a generation runs the host is kept steady (`steady_host`), because the decode loop shares
one Python process, and its GIL, with whatever watches it (the dashboard draws in another
thread). The objects alive at the start are frozen out of the cyclic garbage collector: a full
collection over a large heap (torch, tilelang, the app) holds the GIL for 100 ms and more, longer
than the steps in flight last, so the GPU would idle; frozen, a collection walks only what the
run allocated. And the interpreter's switch interval drops from 5 ms to SWITCH_S, so the loop
gets the GIL back within that after each graph replay or event wait (which release it).
"""

from __future__ import annotations

import gc
import statistics
import sys
import threading
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator

from tfdash.engine.plan import check_generation, check_prompt_ids
from tfdash.engine.runtime import RING, Runtime
from tfdash.engine.tokenizer import StreamDecoder


SWITCH_S = 0.0005  # the interpreter's switch interval while a generation runs (default 5 ms)


def _overlaps(window) -> bool:
    """Whether a window runs with steps in flight around it (its `overlaps`, default no)."""
    return bool(getattr(window, "overlaps", False))


_host_lock = threading.Lock()
_host_runs = 0
_host_saved = 0.005


class steady_host:
    """Context for a running generation (see the module doc): collect once, freeze every object
    alive now into the collector's permanent generation, and shorten the switch interval; undone
    when the last concurrent generation leaves (unfrozen, what has since become cyclic garbage is
    collected again)."""

    def __enter__(self):
        global _host_runs, _host_saved
        with _host_lock:
            _host_runs += 1
            if _host_runs == 1:
                gc.collect()
                gc.freeze()
                _host_saved = sys.getswitchinterval()
                sys.setswitchinterval(min(_host_saved, SWITCH_S))
        return self

    def __exit__(self, *exc):
        global _host_runs
        with _host_lock:
            _host_runs -= 1
            if _host_runs == 0:
                gc.unfreeze()
                sys.setswitchinterval(_host_saved)
        return False


@dataclass(frozen=True)
class TokenEvent:
    index: int  # 0-based among generated tokens
    token_id: int
    text: str  # the text this token adds to the stream (may be "" mid-character)
    step_ns: int  # time of the step that produced it
    elapsed_ns: int  # wall time since the generation began


def percentile(values, q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(q / 100 * (len(s) - 1)))))
    return float(s[k])


@dataclass
class GenerationStats:
    prompt_tokens: int
    new_tokens: int = 0
    wall_ns: int = 0
    step_ns: array = field(default_factory=lambda: array("q"))  # every step, prompt walk included
    stopped: str = ""  # "", "eos", "cancelled"
    paused_ns: int = 0  # wall time inside profiling windows' start/finish (drains, CUPTI set-up)
    steps: int = 0  # steps completed, prompt walk included (step_ns may keep only the last ones)

    @property
    def tok_per_s(self) -> float:
        return self.new_tokens / (self.wall_ns / 1e9) if self.wall_ns else 0.0

    @property
    def ms_per_step_p50(self) -> float:
        return statistics.median(self.step_ns) / 1e6 if self.step_ns else float("nan")

    @property
    def ms_per_step_p99(self) -> float:
        return percentile(self.step_ns, 99) / 1e6 if self.step_ns else float("nan")

    def summary(self) -> str:
        return (f"{self.tok_per_s:.1f} tok/s over the whole generation "
                f"({self.new_tokens} new tokens in {self.wall_ns / 1e9:.3f} s, prompt walk included); "
                f"ms/step p50 {self.ms_per_step_p50:.3f} p99 {self.ms_per_step_p99:.3f}; "
                f"prompt {self.prompt_tokens} tokens, {self.new_tokens} new")


class Generation:
    """Iterate to run; `stats` fills in as it goes. `cancel()` (or a set `stop` event) ends it
    cleanly after the steps in flight, keeping everything measured so far."""

    def __init__(self, runtime: Runtime, prompt_ids: list[int], max_new_tokens: int, tokenizer,
                 eos_ids=(), depth: int = 16, stop: threading.Event | None = None,
                 keep: int | None = None):
        """`keep`: remember only the last `keep` tokens and step times (a bounded run; None keeps all)."""
        plan = runtime.plan
        check_generation(plan.config, plan.capacity, len(prompt_ids), max_new_tokens)
        check_prompt_ids(plan.config, prompt_ids)
        self.runtime = runtime
        self.prompt_ids = list(prompt_ids)
        self.max_new_tokens = max_new_tokens
        self.decoder = StreamDecoder(tokenizer)
        self.eos_ids = set(eos_ids)
        self.depth = max(1, min(depth, RING - 1))
        self.stop = stop or threading.Event()
        self.stats = GenerationStats(prompt_tokens=len(prompt_ids))
        self.keep = keep
        self.tokens: list[int] | deque[int] = []
        if keep is not None:
            self.stats.step_ns = deque(maxlen=max(1, keep))
            self.tokens = deque(maxlen=max(1, keep))
        self.step_index = 0  # steps enqueued so far; step s runs at position s
        self._pending: deque = deque()  # windows waiting for the next step boundary

    def cancel(self) -> None:
        self.stop.set()

    def intercept(self, window) -> None:
        """Run `window` at the next step boundary, on the decode thread (safe from any thread).
        A window has `steps` (0 = a pause), `step_fn` (None = the runtime's own step),
        `start(runtime, first_step, steps)`, `on_step(step_ns)`, `finish(runtime, cancelled)` and
        `cancel(reason)` (called instead of start when the generation ends before it ran)."""
        self._pending.append(window)

    def _bracket(self, fn, *args) -> None:
        """Call a window hook with nothing in flight; its time is a pause, not a step."""
        t = time.perf_counter_ns()
        try:
            fn(*args)
        finally:
            self.stats.paused_ns += time.perf_counter_ns() - t
            self.runtime.begin()  # the next step's time starts now, not before the pause

    def _trim_decoder(self) -> None:
        # A bounded run: StreamDecoder only needs the ids from its prefix offset on.
        d = self.decoder
        if self.keep is not None and d.prefix > 256:
            del d.ids[:d.prefix]
            d.read -= d.prefix
            d.prefix = 0

    def __iter__(self) -> Iterator[TokenEvent]:
        with steady_host():
            yield from self._run()

    def _run(self) -> Iterator[TokenEvent]:
        rt, stats = self.runtime, self.stats
        n_prompt = len(self.prompt_ids)
        total_steps = n_prompt - 1 + self.max_new_tokens
        rt.reset(self.prompt_ids)
        inflight: deque[int] = deque()
        t0 = time.perf_counter_ns()
        rt.begin()
        step = 0
        # The window in progress: its first step, its steps still to enqueue, its last step, and
        # whether it runs with steps in flight around it (see _overlaps).
        win, win_first, win_left, win_last, win_overlaps = None, 0, 0, -1, False
        harvested = -1  # the last step harvested

        def harvest(s: int) -> TokenEvent | None:
            nonlocal harvested
            slot = s % RING
            rt.wait(slot)
            dt = rt.step_ns(slot)
            harvested = s
            stats.step_ns.append(dt)
            stats.steps += 1
            if win is not None and win_first <= s <= win_last:
                win.on_step(dt)
            if s < n_prompt - 1:
                return None  # a prompt-walk step: its prediction is replaced by the prompt
            tok = rt.token(slot)
            self.tokens.append(tok)
            stats.new_tokens += 1
            stats.wall_ns = time.perf_counter_ns() - t0
            text = self.decoder.push(tok)
            self._trim_decoder()
            return TokenEvent(stats.new_tokens - 1, tok, text, dt, stats.wall_ns)

        def hook(overlaps: bool, fn, *args) -> None:
            if overlaps:
                fn(*args)  # the GPU works through the steps in flight meanwhile: not a pause
            else:
                self._bracket(fn, *args)

        try:
            while True:
                # Window boundaries. A window that overlaps starts and finishes with steps in
                # flight; any other (the first CUPTI window, CPU timing, a pause) needs none.
                if win is not None and win_left == 0 and harvested >= win_last and (win_overlaps or not inflight):
                    w, win = win, None
                    hook(win_overlaps, w.finish, rt, False)
                while (win is None and self._pending and step < total_steps and not self.stop.is_set()
                       and (_overlaps(self._pending[0]) or not inflight)):
                    w = self._pending.popleft()
                    n = max(0, min(int(w.steps), total_steps - step))
                    ov = _overlaps(w) and n > 0
                    hook(ov, w.start, rt, step, n)
                    if n:
                        win, win_first, win_left, win_last, win_overlaps = w, step, n, step + n - 1, ov
                    else:
                        hook(ov, w.finish, rt, False)
                # Enqueue up to depth, but not past a boundary that needs an empty queue.
                draining = (win is None and bool(self._pending)) or (
                    win is not None and win_left == 0 and not win_overlaps)
                while (step < total_steps and len(inflight) < self.depth and not self.stop.is_set()
                       and not draining):
                    if win is not None and win_left > 0:
                        rt.enqueue(step % RING, win.step_fn)
                        win_left -= 1
                        draining = win_left == 0 and not win_overlaps
                    else:
                        rt.enqueue(step % RING)
                    inflight.append(step)
                    step += 1
                    self.step_index = step
                if not inflight:
                    if (win is not None or self._pending) and step < total_steps and not self.stop.is_set():
                        continue  # a window starts or ends at this boundary
                    break
                if self.stop.is_set():
                    # Drain quietly: these steps ran and are timed, their tokens are not emitted.
                    while inflight:
                        s = inflight.popleft()
                        rt.wait(s % RING)
                        dt = rt.step_ns(s % RING)
                        harvested = s
                        stats.step_ns.append(dt)
                        stats.steps += 1
                        if win is not None and win_first <= s <= win_last:
                            win.on_step(dt)
                    break
                # Harvest the oldest step; block on it only when the window is full, nothing is
                # left to enqueue, or a window waits for its steps (back-pressure, not a per-token
                # sync).
                if (rt.ready(inflight[0] % RING) or len(inflight) >= self.depth or step >= total_steps
                        or draining or (win is not None and win_left == 0)):
                    ev = harvest(inflight.popleft())
                    if ev is not None:
                        yield ev
                        if ev.token_id in self.eos_ids:
                            stats.stopped = "eos"
                            self.stop.set()
                else:
                    time.sleep(0)
            if self.stop.is_set() and not stats.stopped:
                stats.stopped = "cancelled"
            rt.synchronize()
        finally:
            if win is not None:
                rt.synchronize()
                w, win = win, None
                self._bracket(w.finish, rt, win_left > 0 or harvested < win_last)
            while self._pending:
                self._pending.popleft().cancel("the generation ended before the window could run")
