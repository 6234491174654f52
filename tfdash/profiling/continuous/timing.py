"""Continuous timing as the Session drives it: a record source feeding the mapper and the
statistics on the source's own thread, and what happens around a profile window.

    timing, note = start_continuous(runtime, timer, source, keep, bucket, post)
    timing.view()         the latest range (ContinuousView), any thread
    timing.info(note)     TimingInfo for the snapshot
    PausingWindow(w, timing, post)   a profile window that pauses the records around it
    timing.stop()         at the end of the run: flush, stop, close the sweep's last bucket

CUPTI has one set of activity callbacks per process and torch.profiler (kineto) registers its
own, so a window (`p`, the full Chrome trace) cannot run beside continuous records: the records
are flushed and disabled for the window's steps and re-enabled after it, the step count rebased
to the step after the window (those steps are the window's numbers, not continuous ones).
"""

from __future__ import annotations

import logging
import threading
import time

from tfdash.profiling.continuous.mapper import StepMapper
from tfdash.profiling.continuous.sources import RecordSource, Records, Unavailable
from tfdash.profiling.continuous.stats import ContinuousStats, ContinuousView
from tfdash.profiling.kernel_map import tilelang_names
from tfdash.profiling.messages import Status
from tfdash.profiling.snapshot import TimingInfo

log = logging.getLogger("tfdash.continuous")

FALLBACK = "per-kernel times come from profile windows"


class ContinuousTiming:
    def __init__(self, source: RecordSource, names, keep: int = 256, bucket: int = 128,
                 require_graph: bool = True, on_change=None, on_steps=None, first_index: int = 0):
        """`on_change()`: after each batch that measured steps (the Session's next snapshot is a
        new one). `on_steps(Steps)`: every step as measured (a check script keeps them all).
        `first_index`: the generation's first step (its ctx_len: past a prompt taken in chunks)."""
        self.source = source
        self.mapper = StepMapper(names, require_graph, first_index)
        self.stats = ContinuousStats(names, self.mapper.kernel_names, self.mapper.owner, keep, bucket)
        self.on_change, self.on_steps = on_change, on_steps
        self._lock = threading.Lock()
        self.host_ns = 0  # the source's buffer reading and our mapping, all batches
        self.batches = 0
        self.pauses = 0
        self.error: str | None = None
        self.state = "idle"  # -> "running" <-> "paused"; "stopped"; "failed"

    @property
    def active(self) -> bool:
        return self.state in ("running", "paused")

    def start(self) -> None:
        self.source.start(self._deliver)
        self.state = "running"

    def _deliver(self, rec: Records) -> None:
        """The source's thread: one batch of records into steps and statistics."""
        t = time.perf_counter_ns()
        try:
            with self._lock:
                steps = self.mapper.feed(rec, self.stats.period_ns)
                if steps is not None:
                    self.stats.add(steps)
                self.host_ns += rec.host_ns + time.perf_counter_ns() - t
                self.batches += 1
            if steps is not None:
                if self.on_steps is not None:
                    self.on_steps(steps)
                if self.on_change is not None:
                    self.on_change()
        except Exception as e:  # noqa: BLE001 - never raise into the source's thread
            if self.error is None:
                self.error = f"{type(e).__name__}: {e}"
                log.exception("continuous timing: a batch of records was lost")

    def pause(self) -> None:
        if self.state != "running":
            return
        self.source.pause()
        self.state = "paused"
        self.pauses += 1

    def resume(self, next_step: int) -> None:
        """Records again from generation step `next_step` on; on failure continuous timing ends
        (state "failed", `error` says why) and windows take over."""
        if self.state != "paused":
            return
        with self._lock:
            self.mapper.rebase(next_step)
            self.stats.rebase()
        try:
            self.source.resume()
            self.state = "running"
        except Exception as e:  # noqa: BLE001 - Unavailable, or the binding's own error
            self.state, self.error = "failed", f"could not resume after the profile window: {e}"

    def stop(self) -> None:
        if not self.active:
            return
        try:
            self.source.stop()
        finally:
            self.state = "stopped" if self.state != "failed" else self.state
            with self._lock:
                self.stats.close()

    def view(self) -> ContinuousView | None:
        with self._lock:
            return self.stats.view(self.source.clock_offset_ns)

    def info(self, note: str = "") -> TimingInfo:
        with self._lock:
            m, v = self.mapper, self.stats.view(self.source.clock_offset_ns)
            version = getattr(self.source, "version", "")
            err = self.error or getattr(self.source, "error", None)
            return TimingInfo(
                "continuous", f"{self.source.name} {version}".strip() + ", kernel activity records",
                note or (f"records lost: {err}" if err else ""), m.steps, m.dropped, v.steps if v else 0,
                m.records, m.ignored, self.host_ns / m.steps if m.steps else 0.0, self.pauses, self.stats.B,
                v.slow if v else ())


class PausingWindow:
    """A profile window while continuous timing runs (see the module doc). It drains around
    itself (never `overlaps`), so the step after it is known exactly."""

    overlaps = False

    def __init__(self, inner, timing: ContinuousTiming, post=lambda m: None):
        self.inner, self.timing, self.post = inner, timing, post
        self._next = 0

    def __getattr__(self, name):  # steps, step_fn, done, result, on_done: the window's own
        return getattr(self.inner, name)

    def start(self, runtime, first_step, steps):
        self._next = first_step + steps
        try:
            self.timing.pause()
            self.post(Status("continuous kernel timing paused: torch.profiler holds CUPTI for the window"))
        except Exception as e:  # noqa: BLE001 - the window still runs; continuous ends
            self.timing.state, self.timing.error = "failed", f"could not pause for the profile window: {e}"
        self.inner.start(runtime, first_step, steps)

    def on_step(self, step_ns):
        self.inner.on_step(step_ns)

    def finish(self, runtime, cancelled):
        try:
            self.inner.finish(runtime, cancelled)
        finally:
            self.timing.resume(self._next)
            self.post(Status("" if self.timing.state == "running" else
                             f"continuous timing stopped ({self.timing.error}); {FALLBACK}"))

    def cancel(self, reason):
        self.inner.cancel(reason)


def start_continuous(runtime, timer, source: RecordSource, post, **kw) -> tuple[ContinuousTiming | None, str]:
    """Continuous timing over `runtime`, started (the kernel map learned first, on CUDA), or
    (None, the one line why not). Off CUDA the plan's tilelang names stand in for the map (only a
    recorded source gets that far)."""
    check = getattr(source, "check", None)
    why = check() if check is not None else None
    if why:
        return None, f"continuous timing unavailable: {why}; {FALLBACK}"
    if runtime.cuda:
        if not timer.prepared:
            post(Status("learning the kernel map (once per process)"))
        try:
            timer.prepare()
        except Exception as e:  # noqa: BLE001 - a capture that failed here fails the run later, with its own line
            return None, f"continuous timing unavailable: no kernel map ({type(e).__name__}: {e}); {FALLBACK}"
        if timer.kernel_map.error or timer.kernel_map.names is None:
            return None, f"continuous timing unavailable: {timer.kernel_map.error or 'no kernel map'}; {FALLBACK}"
        names = timer.kernel_map.names
    else:
        names = tilelang_names(runtime.plan)
    try:
        timing = ContinuousTiming(source, names, require_graph=runtime.cuda, **kw)
        timing.start()
    except (Unavailable, ValueError) as e:
        return None, f"continuous timing unavailable: {e}; {FALLBACK}"
    except Exception as e:  # noqa: BLE001 - a binding's own error at start: fall back, say which
        return None, f"continuous timing unavailable: {type(e).__name__}: {e}; {FALLBACK}"
    return timing, ""
