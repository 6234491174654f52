"""The Session's set-up and its decode-thread side: NVML's sampler and the bandwidth probe, the
capture (and kernel map) before the generation, and TokenFeed, which turns the generation's
tokens and step times into the session's record and into TokenBatch messages.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from tfdash import cache
from tfdash.profiling import probe, session_requests
from tfdash.profiling.messages import NvmlUpdate, SessionEnded, Status, TokenBatch
from tfdash.profiling.nvml import Nvml
from tfdash.profiling.nvml_sampler import NvmlSampler
from tfdash.profiling.snapshot import TokenRecord

if TYPE_CHECKING:
    from tfdash.profiling.session import Session

TOKEN_BATCH = 64  # tokens per TokenBatch message at most


def start_sampler(runtime, nvml_lib, interval: float, keep: int, on_sample, origin_s: float):
    """(a started NvmlSampler, "") for a CUDA runtime whose GPU NVML can read, else (None, why)."""
    nv = nvml_lib or Nvml()
    if not runtime.cuda:
        return None, (nv.init().reason if not nv.available else "the engine runs on the CPU; NVML watches GPUs")
    sampler = NvmlSampler(runtime.device.index or 0, interval, keep, nv, on_sample, origin=origin_s)
    if not sampler.available:
        return None, sampler.unavailable().get("nvml", "NVML unavailable")
    sampler.start()
    return sampler, ""


def start_observers(s: "Session") -> None:
    """The run's observers, before its first step: NVML's sampler (when asked for and a GPU is
    there to read) and the measured copy bandwidth the predictions are priced on (when asked)."""
    on, lib, interval, keep = s._nvml
    if on:
        s.sampler, s._nvml_reason = start_sampler(
            s.runtime, lib, interval, keep, lambda smp: (s._touch(), s._post(NvmlUpdate(smp))), s._origin_ns / 1e9)
    if s._probe:
        if probe.cached(s.engine.device) is None:  # a cached figure is reused silently
            s._post(Status("probing memory bandwidth" + ("" if cache.not_a_folder() else " (cached per device)")))
        s.pricing.set_target(probe.measured_target(s.engine.device))
        s._touch()


def prepare(runtime, timer, learn_kernel_map: bool, post, said_something: bool) -> None:
    """Capture the step (and learn the kernel map, when asked) before a generation starts,
    saying so on the status line; the line is cleared when the set-up said anything."""
    captures = runtime.needs_capture
    if captures:
        post(Status("capturing the step's CUDA graph"))
        runtime.ensure_captured()  # before the generation resets the state
    if learn_kernel_map and timer.method == "cupti" and not timer.prepared:
        post(Status("starting the profiler and learning the kernel map (once per process)"))
        timer.prepare()
    if said_something or captures or timer.method == "cupti":
        post(Status(""))  # the set-up is over: clear the line


class TokenFeed:
    """The decode thread's side of a run: each token and the steps that made it go into the
    session's record, and out as a TokenBatch at most every `batch_s` or TOKEN_BATCH tokens."""

    def __init__(self, session: "Session", stats):
        self.s, self.stats = session, stats
        self.batch: list[TokenRecord] = []
        self.steps: list[int] = []
        self.last = time.perf_counter()

    def _take_steps(self) -> None:
        """Step times the generation recorded since the last call, into the record."""
        rec, stats = self.s.rec, self.stats
        n = min(stats.steps - rec.steps_total, len(stats.step_ns))
        dq = stats.step_ns
        fresh = [dq[i] for i in range(len(dq) - n, len(dq))] if n > 0 else []
        with self.s._lock:
            rec.steps_total = stats.steps
            rec.steps.extend(fresh)
        self.steps.extend(fresh)

    def add(self, ev) -> None:
        token = TokenRecord(ev.index, ev.token_id, ev.text, ev.elapsed_ns, ev.held_ns)
        self._take_steps()
        with self.s._lock:
            self.s.rec.tokens.append(token)
            self.s.rec.new_tokens = self.stats.new_tokens
        self.batch.append(token)
        if len(self.batch) >= TOKEN_BATCH or time.perf_counter() - self.last >= self.s.batch_s:
            self.flush()

    def flush(self) -> None:
        s, stats = self.s, self.stats
        with s._lock:
            s.rec.wall_ns, s.rec.paused_ns = stats.wall_ns, stats.paused_ns
            s.rec.ttft_ns, s.rec.held_ns = stats.ttft_ns, stats.held_ns
            s.rec.prefill_positions, s.rec.prefill_ns = stats.prefill_positions, stats.prefill_ns
            s._version += 1
        s._post(TokenBatch(tuple(self.batch), tuple(self.steps), stats.new_tokens, stats.wall_ns, stats.tok_per_s))
        self.batch.clear()
        self.steps.clear()
        self.last = time.perf_counter()

    def drain(self, gen, stop: threading.Event | None) -> SessionEnded:
        """Run the generation to its end, feeding the record; profile windows every
        `profile_every` tokens when the session asks for them, and its own window once at
        `auto_window_at` tokens, never before the warm-up step has run (session_requests.auto_window),
        and right after the generation where it had no step left for it."""
        s, stats = self.s, self.stats
        next_window = s.profile_every or None
        auto_at = s.auto_window_at or None
        for ev in gen:
            self.add(ev)
            if auto_at is not None and stats.new_tokens >= auto_at and session_requests.warmed(s):
                auto_at = None  # after the warm-up step; none left to time: session_requests.auto_window_after
                if gen.steps_left:
                    session_requests.auto_window(s)
            if next_window is not None and stats.new_tokens >= next_window:
                s.request_profile(s.profile_steps)
                next_window += s.profile_every
            if stop is not None and stop.is_set():
                s.stop()
        with s._lock:  # the generation is over: a window asked for from now on (p, or one asked in the
            s._gen = None  # last TokenBatch) waits in the session's queue, ended with it, not in the generation's
            s.rec.stopped = stats.stopped  # what a run with no step says (session_requests.COLD_AT_EOS)
        self._take_steps()
        self.flush()
        session_requests.auto_window_after(s, stats.stopped, stop)  # a run too short to hold it: after the steps
        if stats.stopped != "cancelled":
            session_requests.no_step_ran(s)  # continuous timing too: its "no step measured yet" would wait forever
        return SessionEnded(stats.stopped, stats.new_tokens, stats.wall_ns, stats.tok_per_s)
