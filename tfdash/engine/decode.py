"""The decode loop: a generator of token events that the CLI, the profiler and the app consume.

    prefill   the prompt in chunks through the prompt's plan, then the step's head alone on its
              last position, whose argmax is the first new token (`Runtime.take_prompt`), where the
              plan has one; else the captured step walks the prompt one position at a time (no
              host round trip: the argmax launch feeds the next prompt token while any remain)
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
run allocated. And the interpreter's switch interval drops from 5 ms to SWITCH_S (CPU_SWITCH_S
for a CPU runtime), so the loop gets the GIL back within that after each graph replay, ring copy
or event wait (which release it). With a busy dashboard thread each of those releases costs up to
the switch interval, so the interval must be small beside the step divided by the releases a
step makes (`scripts/sim_dashboard_overhead.py` models this on the CPU).
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Iterator

from tfdash.engine.limits import check_generation, check_prompt_ids
from tfdash.engine.runtime import RING, Runtime
from tfdash.stats import GenerationStats, percentile  # noqa: F401  (percentile: its old home)
from tfdash.engine.tokenizer import StreamDecoder


SWITCH_S = 0.0001  # the interpreter's switch interval while a CUDA generation runs (default 5 ms)
CPU_SWITCH_S = 0.0005  # ... and a CPU one (its ops release the GIL for their whole compute)


def _overlaps(window) -> bool:
    """Whether a window runs with steps in flight around it (its `overlaps`, default no)."""
    return bool(getattr(window, "overlaps", False))


_host_lock = threading.Lock()
_host_active: list[float] = []  # the switch intervals of the generations running now
_host_saved = 0.005


class steady_host:
    """Context for a running generation (see the module doc): collect once, freeze every object
    alive now into the collector's permanent generation, and shorten the switch interval to
    `switch_s`. Concurrent generations run at the shortest interval any of them asks for; when
    the last leaves, the interval is restored and the heap unfrozen (what has since become cyclic
    garbage is collected again)."""

    def __init__(self, switch_s: float | None = None):
        self.switch_s = SWITCH_S if switch_s is None else switch_s

    def __enter__(self):
        global _host_saved
        with _host_lock:
            if not _host_active:
                gc.collect()
                gc.freeze()
                _host_saved = sys.getswitchinterval()
            _host_active.append(self.switch_s)
            sys.setswitchinterval(min(_host_saved, *_host_active))
        return self

    def __exit__(self, *exc):
        with _host_lock:
            _host_active.remove(self.switch_s)
            if _host_active:
                sys.setswitchinterval(min(_host_saved, *_host_active))
            else:
                gc.unfreeze()
                sys.setswitchinterval(_host_saved)
        return False


def _no_step() -> None:
    """A step_fn that launches nothing: `enqueue` then only puts the token in its slot and marks it."""


@dataclass(frozen=True)
class TokenEvent:
    index: int  # 0-based among generated tokens
    token_id: int
    text: str  # the text this token adds to the stream (may be "" mid-character)
    step_ns: int  # time of the step that produced it (the first token of a prompt taken in chunks: theirs)
    elapsed_ns: int  # wall time since the generation began
    held_ns: int = 0  # of elapsed_ns, the time held (paused) before this token: not run time


class Generation:
    """Iterate to run; `stats` fills in as it goes. `cancel()` (or a set `stop` event) ends it
    cleanly after the steps in flight, keeping everything measured so far."""

    def __init__(self, runtime: Runtime, prompt_ids: list[int], max_new_tokens: int, tokenizer,
                 eos_ids=(), depth: int = 16, stop: threading.Event | None = None,
                 keep: int | None = None, prefill: bool = True):
        """`keep`: remember only the last `keep` tokens and step times (a bounded run; None keeps all).
        `prefill=False`: the steps walk the prompt even where the plan could take it in chunks (each
        prompt position's prediction lands in `out_tokens`, as a teacher-forced check reads them)."""
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
        self._resume = threading.Event()  # clear: hold at the next step boundary (see pause)
        self._resume.set()
        self.prefill = prefill
        self._head = -1  # the slot-step whose token the prompt's chunks and the head made (no step)
        self._n_prompt = len(self.prompt_ids)
        self._total = self._n_prompt - 1 + max_new_tokens  # steps to run
        self._step = 0  # the next step to enqueue
        self._inflight: deque[int] = deque()
        self._harvested = -1  # the last step harvested
        self._t0 = 0
        self._held_after_token = 0  # held time since the last token's wall stamp (see _hold)
        # The window in progress: its first step, steps still to enqueue, last step, and whether it
        # runs with steps in flight around it (see _overlaps).
        self._win, self._win_first, self._win_left, self._win_last, self._win_overlaps = None, 0, 0, -1, False

    def cancel(self) -> None:
        self.stop.set()

    @property
    def steps_left(self) -> int:
        """Steps not yet enqueued (what windows intercepted now can still run)."""
        return self._total - self._step

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
            self.runtime.begin(self._step)  # the next step's time starts now, not before the pause

    def _trim_decoder(self) -> None:
        # A bounded run: StreamDecoder only needs the ids from its prefix offset on.
        d = self.decoder
        if self.keep is not None and d.prefix > 256:
            del d.ids[:d.prefix]
            d.read -= d.prefix
            d.prefix = 0

    def pause(self, paused: bool = True) -> None:
        """Hold the generation at its next step boundary (safe from any thread): the steps in flight
        finish and are harvested, then the loop waits; held time is `stats.held_ns`, not run time.
        A profile window in progress runs to its end first."""
        (self._resume.clear if paused else self._resume.set)()

    def __iter__(self) -> Iterator[TokenEvent]:
        with steady_host(SWITCH_S if self.runtime.cuda else CPU_SWITCH_S):
            yield from self._run()

    # -- the phases of the loop ------------------------------------------------------------------
    # prefill and decode are the same captured step (the argmax launch feeds the next prompt token
    # while any remain): `_enqueue` keeps up to `depth` steps in flight, `_harvest` reads one
    # finished step (a prompt-walk step yields nothing), and windows start and finish between
    # steps in `_boundary`.
    def _run(self) -> Iterator[TokenEvent]:
        rt, stats = self.runtime, self.stats
        rt.reset(self.prompt_ids)
        self._t0 = time.perf_counter_ns()
        self._take_prompt()
        rt.begin(self._step)  # step s runs at position s
        try:
            while True:
                self._boundary()
                self._enqueue()
                if not self._inflight:
                    if self._paused() and not self.stop.is_set():
                        self._hold()
                        continue
                    if (self._win is not None or self._pending) and self._step < self._total and not self.stop.is_set():
                        continue  # a window starts or ends at this boundary
                    break
                if self.stop.is_set():
                    while self._inflight:  # these steps ran and are timed; their tokens are not emitted
                        self._harvest(self._inflight.popleft(), emit=False)
                    break
                # Block on the oldest step only when the queue is full, nothing is left to enqueue,
                # or a boundary waits for it (back-pressure, not a per-token sync).
                if rt.ready(self._inflight[0] % RING) or self._must_harvest():
                    ev = self._harvest(self._inflight.popleft())
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
        except (KeyboardInterrupt, GeneratorExit):  # Ctrl+C on this thread (headless decodes on the main one),
            stats.stopped = stats.stopped or "cancelled"  # or the reader gone: a stop asked for, as the windows hear
            raise
        finally:
            self.stats.held_ns -= self._held_after_token  # a hold the run ended in: not in wall_ns
            self._held_after_token = 0
            if self._win is not None:
                rt.synchronize()
                w, self._win = self._win, None
                self._bracket(w.finish, rt, self._win_left > 0 or self._harvested < self._win_last)
            while self._pending:
                self._pending.popleft().cancel("the generation ended before the window could run")

    def _take_prompt(self) -> None:
        """The prompt in chunks and the head on its last position, where the runtime can: their token
        goes through the ring slot of that position like a step's, and the steps start one past it
        (step s still runs at position s). Their time is in the wall time, the TTFT and, once the
        token is harvested, `stats.prefill_ns`; they are no step (no step time, no window holds them)."""
        rt, n = self.runtime, self._n_prompt
        rt.begin()  # the ring's chain starts here (`_run` begins again after, so step times leave this out)
        if self.prefill and rt.take_prompt(self.prompt_ids):
            rt.enqueue((n - 1) % RING, _no_step)  # the head's token into the ring slot, and its event
            self._head = n - 1
            self._inflight.append(n - 1)
            self._step = self.step_index = n
            self.stats.prefill_positions = n

    def _paused(self) -> bool:
        return not self._resume.is_set() and self._win is None

    def _draining(self) -> bool:
        """A boundary ahead needs an empty queue: a window waiting to start (or to finish, unless
        it overlaps), or a pause."""
        w = self._win
        if w is None:
            return bool(self._pending) or not self._resume.is_set()
        return self._win_left == 0 and not self._win_overlaps

    def _must_harvest(self) -> bool:
        return (len(self._inflight) >= self.depth or self._step >= self._total or self._draining()
                or (self._win is not None and self._win_left == 0))

    def _hook(self, overlaps: bool, fn, *args) -> None:
        if overlaps:
            fn(*args)  # the GPU works through the steps in flight meanwhile: not a pause
        else:
            self._bracket(fn, *args)

    def _boundary(self) -> None:
        """Finish the window whose steps are all harvested; start the next ones that can start. A
        window that overlaps starts and finishes with steps in flight; any other (the first CUPTI
        window, CPU timing, a 0-step pause) needs none."""
        rt = self.runtime
        if (self._win is not None and self._win_left == 0 and self._harvested >= self._win_last
                and (self._win_overlaps or not self._inflight)):
            w, self._win = self._win, None
            self._hook(self._win_overlaps, w.finish, rt, False)
        while (self._win is None and self._pending and self._step < self._total and not self.stop.is_set()
               and (_overlaps(self._pending[0]) or not self._inflight)):
            w = self._pending.popleft()
            n = max(0, min(int(w.steps), self._total - self._step))
            ov = _overlaps(w) and n > 0
            self._hook(ov, w.start, rt, self._step, n)
            if n:
                self._win, self._win_first, self._win_left = w, self._step, n
                self._win_last, self._win_overlaps = self._step + n - 1, ov
            else:
                self._hook(ov, w.finish, rt, False)

    def _enqueue(self) -> None:
        """Enqueue steps up to `depth` in flight, but not past a boundary that needs an empty queue."""
        rt = self.runtime
        draining = self._draining()
        while self._step < self._total and len(self._inflight) < self.depth and not self.stop.is_set() and not draining:
            w = self._win
            if w is not None and self._win_left > 0:
                rt.enqueue(self._step % RING, w.step_fn, getattr(w, "writes", ()))
                self._win_left -= 1
                draining = self._win_left == 0 and not self._win_overlaps
            else:
                rt.enqueue(self._step % RING)
            self._inflight.append(self._step)
            self._step += 1
            self.step_index = self._step

    def _harvest(self, s: int, emit: bool = True) -> TokenEvent | None:
        """Step s's time (and, for a decode step, its token) once its ring slot completed."""
        rt, stats = self.runtime, self.stats
        slot = s % RING
        rt.wait(slot)
        self._harvested = s
        if s == self._head:  # the prompt's chunks and the head: the first token, no step
            dt = stats.prefill_ns = rt.prefill.elapsed_ns()
        else:
            dt = rt.step_ns(slot)
            stats.step_ns.append(dt)
            stats.steps += 1
        w = self._win
        if w is not None and self._win_first <= s <= self._win_last:
            w.on_step(dt)
        if not emit or s < self._n_prompt - 1:
            return None  # a prompt-walk step: its prediction is replaced by the prompt
        tok = rt.token(slot)
        self.tokens.append(tok)
        stats.new_tokens += 1
        stats.wall_ns = time.perf_counter_ns() - self._t0
        self._held_after_token = 0  # every hold so far is inside wall_ns now
        if stats.new_tokens == 1:
            stats.ttft_ns = stats.wall_ns - stats.held_ns
        text = self.decoder.push(tok)
        self._trim_decoder()
        return TokenEvent(stats.new_tokens - 1, tok, text, dt, stats.wall_ns, stats.held_ns)

    def _hold(self) -> None:
        """Nothing in flight and paused: wait for resume (or stop); the wait is held time. wall_ns is
        stamped at each token, so a hold is in it only once a token follows: a run stopped while
        held (quit or re-run from a pause) takes that hold back out of held_ns at its end."""
        t = time.perf_counter_ns()
        while not self._resume.wait(0.05):
            if self.stop.is_set():
                break
        held = time.perf_counter_ns() - t
        self.stats.held_ns += held
        self._held_after_token += held
        self.runtime.begin(self._step)  # the next step's time starts now, not before the pause
