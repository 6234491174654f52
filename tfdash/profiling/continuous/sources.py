"""Where continuous timing's kernel records come from: one interface, two implementations.

    RecordSource          start(deliver) / pause() / resume() / stop(); `deliver(Records)` is
                          called off the decode thread with a batch of kernel records
    CuptiActivity         NVIDIA's cupti-python: CUPTI's activity API, kind CONCURRENT_KERNEL.
                          CUPTI fills buffers as kernels finish (graph replays included) and hands
                          each full one, or every FLUSH_PERIOD_MS a partial one, to its own worker
                          thread; the callback reads name, start, end and graph id of each record
                          and delivers them. The decode never waits on it.
    ReplaySource          recorded (or synthesized) batches delivered from a thread: the CPU
                          tests' stand-in for CUPTI
    RingSource            (continuous.ring_source) the same records consumed in C by
                          tfdash.profiling.cupti_ring and drained as columns: the default

`make_source(runtime)` is the factory; `Unavailable` carries the one line saying why a source
cannot run (a CPU engine, cupti-python missing, CUPTI refusing the activity kind, another
profiler holding CUPTI), after which the Session times with profile windows instead.

This is the only module that imports `cupti`; nothing else in tfdash needs it installed.
cupti-python's callback handles each record in Python (~23 us a record on the H200, against a
~1.2 ms step of ~143 kernels), so `make_source` picks the C ring.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

log = logging.getLogger("tfdash.records")

BUFFER_BYTES = 4 << 20  # one CUPTI buffer: ~16k kernel records, about 110 steps of 143 launches
FLUSH_PERIOD_MS = 100  # CUPTI hands partly filled buffers over this often, so the table stays live


class Unavailable(Exception):
    """A record source cannot run here; str(e) is the one line that says why."""


@dataclass(frozen=True)
class Records:
    """A batch of kernel records: the device kernel's name, GPU start and end ns (the source's
    clock), and the id of the CUDA graph that launched it (0: not from a graph replay)."""

    names: Sequence[str]
    start: np.ndarray  # int64 [n]
    end: np.ndarray  # int64 [n]
    graph: np.ndarray  # int64 [n]
    host_ns: int = 0  # host time the source spent turning its buffer into this batch

    def __len__(self) -> int:
        return len(self.names)


def records(rows: Sequence[tuple], host_ns: int = 0) -> Records:
    """Records from (name, start_ns, end_ns[, graph_id]) tuples."""
    names = [r[0] for r in rows]
    col = [np.fromiter((r[k] if len(r) > k else 0 for r in rows), dtype=np.int64, count=len(rows))
           for k in (1, 2, 3)]
    return Records(names, col[0], col[1], col[2], host_ns)


class RecordSource(ABC):
    """Kernel records, delivered in batches off the decode thread."""

    name = "?"
    clock_offset_ns = 0  # time.perf_counter_ns() - the source's clock, measured at start

    @abstractmethod
    def start(self, deliver: Callable[[Records], None]) -> None:
        """Begin delivering; raises Unavailable with the reason when it cannot."""

    def flush(self) -> None:
        """Deliver every record collected so far (blocking)."""

    def pause(self) -> None:
        """Flush, then collect nothing until resume (another profiler is about to use CUPTI)."""

    def resume(self) -> None:
        """Collect again after a pause; raises Unavailable when it cannot."""

    def stop(self) -> None:
        """Flush and stop for good."""


# -- CUPTI ---------------------------------------------------------------------------------
_owner_lock = threading.Lock()
_owner: list = [None]  # the CuptiActivity holding CUPTI's activity callbacks in this process
_registered = [False]  # the trampolines below were registered once in this process


def _requested():
    return BUFFER_BYTES, 0  # bytes, and no cap on the records in it


def _completed(activities) -> None:
    """CUPTI's worker thread: a buffer for whichever CuptiActivity holds CUPTI now (one pair of
    callbacks per process, registered again after a torch.profiler replaced them)."""
    owner = _owner[0]
    if owner is not None:
        owner._completed(activities)


def _result_name(e: Exception) -> str:
    status = getattr(e, "status", None)
    try:
        from cupti import cupti

        return f"{cupti.Result(status).name} ({e})" if status is not None else str(e)
    except Exception:  # noqa: BLE001 - a name for an error is best effort
        return str(e) or type(e).__name__


def torch_profiler_running() -> bool:
    try:
        import torch

        return bool(torch._C._autograd._profiler_enabled())
    except Exception:  # noqa: BLE001 - a torch without the query: assume none
        return False


class CuptiActivity(RecordSource):
    """cupti-python's activity API over one CUDA runtime (see the module doc)."""

    name = "cupti-python"

    def __init__(self, runtime=None):
        self.runtime = runtime
        self.version = ""
        self.error: str | None = None  # the callback's first failure (records are then lost)
        self._deliver: Callable[[Records], None] | None = None
        self._cupti = None
        self._on = False

    def check(self) -> str | None:
        """Why this source cannot run on its runtime, before anything is started (None: it can)."""
        rt = self.runtime
        if rt is not None and not rt.cuda:
            return "the engine runs on the CPU; CUPTI traces CUDA kernels"
        if rt is not None and not hasattr(rt, "capture"):
            return f"{rt.backend} launches eagerly; continuous timing maps CUDA-graph replays"
        try:
            from cupti import cupti  # noqa: F401
        except Exception as e:  # noqa: BLE001 - ImportError, or a missing libcupti underneath
            return f"cupti-python is not importable ({type(e).__name__}: {e}); pip install 'tfdash[cupti]'"
        if torch_profiler_running():
            return "torch.profiler is running and holds CUPTI"
        return None

    def start(self, deliver):
        why = self.check()
        if why:
            raise Unavailable(why)
        from cupti import cupti

        with _owner_lock:
            if _owner[0] is not None and _owner[0] is not self:
                raise Unavailable("another continuous timer holds CUPTI's activity callbacks in this process")
            _owner[0] = self
        self._cupti, self._deliver = cupti, deliver
        try:
            from importlib.metadata import version

            self.version = version("cupti-python")
        except Exception:  # noqa: BLE001
            self.version = "?"
        self.clock_offset_ns = self._offset()
        try:
            self._enable()
        except Unavailable:
            self._release()
            raise

    def _offset(self) -> int:
        """perf_counter_ns - CUPTI's timestamp, from the tightest of a few bracketed reads."""
        best = None
        for _ in range(5):
            a = time.perf_counter_ns()
            ts = int(self._cupti.get_timestamp())
            b = time.perf_counter_ns()
            if best is None or b - a < best[0]:
                best = (b - a, (a + b) // 2 - ts)
        return best[1]

    def _enable(self) -> None:
        c = self._cupti
        try:
            c.activity_register_callbacks(_requested, _completed)
            _registered[0] = True
        except Exception as e:  # noqa: BLE001 - cuptiError, or anything the binding raises
            if not _registered[0]:
                raise Unavailable(f"CUPTI refused the activity callbacks: {_result_name(e)}") from e
            log.warning("cupti activity_register_callbacks again: %s (keeping the first)", _result_name(e))
        self._kind = int(c.ActivityKind.CONCURRENT_KERNEL)
        try:
            c.activity_enable(c.ActivityKind.CONCURRENT_KERNEL)
        except Exception as e:  # noqa: BLE001
            raise Unavailable(f"CUPTI refused kernel activity records: {_result_name(e)}") from e
        self._on = True
        try:
            c.activity_flush_period(FLUSH_PERIOD_MS)
        except Exception as e:  # noqa: BLE001 - without it buffers arrive when full: slower updates
            log.warning("cupti activity_flush_period failed: %s", _result_name(e))

    def _completed(self, activities) -> None:
        """CUPTI's worker thread: one buffer of records, reduced to (name, start, end, graph)."""
        t = time.perf_counter_ns()
        try:
            names, start, end, graph = [], [], [], []
            kind = self._kind
            for a in activities:
                if a.kind == kind:
                    names.append(a.name)
                    start.append(a.start)
                    end.append(a.end)
                    graph.append(a.graph_id)
            if names and self._deliver is not None:
                self._deliver(Records(names, np.array(start, dtype=np.int64), np.array(end, dtype=np.int64),
                                      np.array(graph, dtype=np.int64), time.perf_counter_ns() - t))
        except BaseException as e:  # noqa: BLE001 - never raise into CUPTI's thread
            if self.error is None:
                self.error = f"{type(e).__name__}: {e}"
                log.exception("continuous timing: a CUPTI buffer was lost")

    def flush(self):
        if self._cupti is not None and self._on:
            self._cupti.activity_flush_all(1)  # 1: forced, partly filled buffers too

    def pause(self):
        if self._cupti is None or not self._on:
            return
        try:
            self.flush()
        finally:
            self._on = False
            self._cupti.activity_disable(self._cupti.ActivityKind.CONCURRENT_KERNEL)

    def resume(self):
        if self._cupti is not None and not self._on:
            self._enable()  # re-registers: a torch.profiler in between registered its own callbacks

    def stop(self):
        try:
            self.pause()
        finally:
            self._release()

    def _release(self) -> None:
        with _owner_lock:
            if _owner[0] is self:
                _owner[0] = None


# -- recorded records ---------------------------------------------------------------------------
@dataclass
class ReplaySource(RecordSource):
    """Delivers `batches` (any iterable, read lazily; a callable is called at start for it) one
    after another from a thread of its own. `fail`: start raises Unavailable(fail) instead."""

    batches: object = ()
    fail: str | None = None
    name: str = "replay"
    events: list = field(default_factory=list)  # "start", "pause", "resume", "stop", in order

    def check(self) -> str | None:
        return self.fail

    def start(self, deliver):
        self.events.append("start")
        if self.fail:
            raise Unavailable(self.fail)
        self._deliver = deliver
        batches = self.batches() if callable(self.batches) else self.batches
        self._thread = threading.Thread(target=self._run, args=(batches,), name="tfdash-replay", daemon=True)
        self._thread.start()

    def _run(self, batches) -> None:
        for b in batches:
            self._deliver(b)

    def flush(self):
        t = getattr(self, "_thread", None)
        if t is not None:
            t.join()

    def pause(self):
        self.events.append("pause")
        self.flush()

    def resume(self):
        self.events.append("resume")

    def stop(self):
        self.events.append("stop")
        self.flush()


def make_source(runtime) -> RecordSource:
    """The C ring (continuous.ring_source): per record, cupti-python's Python callback costs more
    than a decode step's kernels take, so it is kept for probes, not chosen here."""
    from tfdash.profiling.continuous.ring_source import RingSource

    return RingSource(runtime)
