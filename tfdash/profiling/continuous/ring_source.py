"""The C ring as continuous timing's record source: CUPTI's kernel records consumed in C
(tfdash.profiling.cupti_ring), drained as columns by a thread of its own every DRAIN_S.

Per record, Python does nothing but index the ring's name table (one numpy take); that is what
makes every step measurable, where a per-record Python callback costs more than the step.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from tfdash.profiling.continuous.sources import RecordSource, Records, Unavailable

DRAIN_S = 0.05  # the drain thread's period: well under a refresh, a few hundred records a drain
CALIBRATE_S = 0.005  # CUPTI's timestamp against perf_counter over this long, at every start (5 ms: its unit to ~0.1 %)


class RingSource(RecordSource):
    """CuptiRing's records, delivered as Records batches from the drain thread."""

    name = "cupti-ring"

    def __init__(self, runtime=None, ring=None):
        from tfdash.profiling.cupti_ring import CuptiRing

        self.runtime = runtime
        self.ring = ring or CuptiRing()
        self.error: str | None = None
        self._deliver = None
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one drain at a time (the thread's, or a flush's)
        self._thread: threading.Thread | None = None
        self._base, self.ticks_per_ns = (0, 0), 1.0

    def check(self) -> str | None:
        rt = self.runtime
        if rt is not None and not rt.cuda:
            return "the engine runs on the CPU; CUPTI traces CUDA kernels"
        if rt is not None and not hasattr(rt, "capture"):
            return f"{rt.backend} launches eagerly; continuous timing maps CUDA-graph replays"
        if self.ring.lib is not None:
            return None
        from tfdash.profiling.cupti_ring import available

        ok, why = available()
        return None if ok else why

    def start(self, deliver):
        self._deliver = deliver
        self._on()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="tfdash-cupti-ring", daemon=True)
        self._thread.start()

    def _on(self) -> None:
        if not self.ring.start():
            raise Unavailable(self.ring.error or "the CUPTI ring did not start")
        self._calibrate()

    def _pair(self) -> tuple[int, int] | None:
        """(perf_counter_ns, CUPTI timestamp) from the tightest of a few bracketed reads."""
        best = None
        for _ in range(5):
            a = time.perf_counter_ns()
            ts = self.ring.timestamp()
            b = time.perf_counter_ns()
            if ts is not None and (best is None or b - a < best[0]):
                best = (b - a, (a + b) // 2, ts)
        return best[1:] if best else None

    def _calibrate(self) -> None:
        """CUPTI's records are in its timestamp's unit, which is ns unless a profiler registered
        a timestamp callback of its own (torch.profiler's kineto registers the CPU's TSC, about
        2.1 ticks a ns on the H200 host): the unit is measured against perf_counter over
        CALIBRATE_S, and the records are delivered in perf_counter ns (clock_offset_ns = 0)."""
        first = self._pair()
        time.sleep(CALIBRATE_S)
        last = self._pair()
        self.clock_offset_ns = 0
        if first is None or last is None or last[0] == first[0]:
            self._base, self.ticks_per_ns = (0, 0), 1.0
            return
        scale = (last[1] - first[1]) / (last[0] - first[0])
        # a clock that did not move (or ran backwards) says nothing: take ns
        self.ticks_per_ns = scale if 0.05 < scale < 100 and abs(scale - 1.0) >= 0.01 else 1.0
        self._base = (first[0], first[1])

    def to_ns(self, ts: np.ndarray) -> np.ndarray:
        """CUPTI timestamps -> perf_counter ns (exact integers while the unit is ns)."""
        p0, t0 = self._base
        rel = ts.astype(np.int64) - np.int64(t0)
        if self.ticks_per_ns != 1.0:
            rel = np.rint(rel / self.ticks_per_ns).astype(np.int64)
        return rel + np.int64(p0)

    def _run(self) -> None:
        while not self._stop.wait(DRAIN_S):
            self._drain()
        self._drain()

    def _drain(self) -> None:
        with self._lock:
            try:
                t = time.perf_counter_ns()
                start, end, _node, name_id, graph = self.ring.drain(graph=True)
                if len(start) and self._deliver is not None:
                    self._deliver(Records(self.ring.names_for(name_id), self.to_ns(start), self.to_ns(end),
                                          graph.astype(np.int64), time.perf_counter_ns() - t))
            except Exception as e:  # noqa: BLE001 - the drain thread never dies silently
                if self.error is None:
                    self.error = f"{type(e).__name__}: {e}"

    def flush(self):
        self.ring.flush(True)
        self._drain()

    def pause(self):
        """Flush and stop CUPTI's records (torch.profiler is about to take its callbacks); the
        drain thread goes on, idle."""
        if self.ring.running:
            self.ring.flush(True)
            self.ring.stop()
        self._drain()

    def resume(self):
        if not self.ring.running:
            self._on()

    def stop(self):
        try:
            self.pause()
        finally:
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=2)
