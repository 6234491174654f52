"""CUPTI kernel records through a C ring (cupti_ring.c): the record source whose per-record work
never reaches Python.

    available() -> (ok, reason)   whether a ring can run here; reason is one line (what is missing
                                  and how to get it, or which ring is ready). Never raises.
    CuptiRing                     start() / drain() / names() / stats() / flush() / stop(); start,
                                  flush and stop return False and set .error instead of raising

Why C: cupti-python's buffer callback holds the GIL and costs ~23 us per record, and a decode step
launches ~143 kernels in ~1.2 ms. In C the callback turns each CONCURRENT_KERNEL record into a
32-byte ring entry and interns the kernel name, so a drain is a few column copies and the names
cross into Python once each. tfdash.profiling.cupti_build finds CUPTI and compiles the ring.

CUPTI's activity callbacks are one per process: the ring and torch.profiler take turns (stop the
ring before profiling; start it again after, which registers its callbacks again).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path

import numpy as np

from tfdash.profiling.cupti_build import prepare

log = logging.getLogger("tfdash.cupti_ring")

NAME_OVERFLOW = 0xFFFFFFFF  # name_id of a record whose name did not fit the 4096-name table


def cuda_missing() -> str | None:
    try:
        import torch

        if not torch.cuda.is_available():
            return f"CUDA is not available (torch {torch.__version__}, no GPU or driver); CUPTI traces CUDA kernels"
    except Exception as e:  # noqa: BLE001 - torch missing or its CUDA runtime broken
        return f"torch with CUDA is needed for kernel records ({type(e).__name__}: {e})"
    return None


def torch_profiler_running() -> bool:
    try:
        import torch

        return bool(torch._C._autograd._profiler_enabled())
    except Exception:  # noqa: BLE001 - a torch without the query: assume none
        return False


PROFILER_BUSY = "torch.profiler is running and holds CUPTI's activity callbacks; start the ring after it stops"


def available(roots: list[Path] | None = None, cache: Path | None = None) -> tuple[bool, str]:
    """Whether a CuptiRing can start here, and one line saying why not (or which CUPTI it uses)."""
    try:
        lib = prepare(roots, cache)
        if isinstance(lib, str):
            return False, lib
        why = cuda_missing()
        if why:
            return False, why
        if torch_profiler_running():
            return False, PROFILER_BUSY
        return True, f"CUPTI ring ready ({lib._name})"
    except Exception as e:  # noqa: BLE001 - the contract is a reason, never an exception
        return False, f"CUPTI ring check failed: {type(e).__name__}: {e}"


# -- the ring ----------------------------------------------------------------------------------
_owner_lock = threading.Lock()
_owner: list = [None]  # the CuptiRing that started the process's one ring


class CuptiRing:
    """The process's CUPTI kernel-record ring. `lib` is a loaded ring (tests pass one built against
    a stub CUPTI); without it start() prepares one. One instance runs at a time."""

    def __init__(self, ring_records: int = 1 << 20, buffer_bytes: int = 4 << 20, flush_period_ms: int = 100,
                 lib: ctypes.CDLL | None = None):
        self.ring_records, self.buffer_bytes, self.flush_period_ms = ring_records, buffer_bytes, flush_period_ms
        self.lib = lib
        self.error: str | None = None
        self.running = False
        self._names: list[str] = []

    def _fail(self, what: str) -> bool:
        self.error = what
        log.warning("cupti ring: %s", what)
        return False

    def _cupti_error(self) -> str:
        return (self.lib.tfr_error() or b"").decode(errors="replace")

    def start(self) -> bool:
        """Register the callbacks and enable kernel records; False with .error set if it cannot."""
        if self.running:
            return True
        if self.lib is None:
            ok, why = available()
            if not ok:
                return self._fail(why)
            self.lib = prepare()
        elif torch_profiler_running():
            return self._fail(PROFILER_BUSY)
        with _owner_lock:
            if _owner[0] is not None and _owner[0] is not self:
                return self._fail("another CuptiRing holds CUPTI's activity callbacks in this process")
            _owner[0] = self
        if self.lib.tfr_start(self.ring_records, self.buffer_bytes) != 0:
            _owner[0] = None
            return self._fail(f"CUPTI refused kernel activity records: {self._cupti_error()}")
        self.running, self.error = True, None
        if self.flush_period_ms and self.lib.tfr_flush_period(self.flush_period_ms) != 0:
            log.warning("cupti ring: no flush period (buffers arrive when full): %s", self._cupti_error())
        return True

    def drain(self, max_records: int | None = None, graph: bool = False):
        """(start_ns, end_ns, graph_node_id, name_id) uint64/uint32 arrays of what the ring holds,
        plus graph_id when `graph`; empty arrays before start."""
        n = 0 if self.lib is None else int(self.lib.tfr_pending())
        if max_records is not None:
            n = min(n, max_records)
        cols = [np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.uint32)]
        gid = np.empty(n, np.uint32) if graph else None
        if n:
            p64, p32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
            got = self.lib.tfr_drain_ex(*(c.ctypes.data_as(p64) for c in cols[:3]), cols[3].ctypes.data_as(p32),
                                        gid.ctypes.data_as(p32) if graph else None, n)
            cols = [c[:got] for c in cols]
            gid = gid[:got] if graph else None
        return (*cols, gid) if graph else tuple(cols)

    def names(self) -> list[str]:
        """Kernel names by name_id (interned in the order first seen; a list that only grows)."""
        if self.lib is None:
            return []
        buf = ctypes.create_string_buffer(4096)
        for i in range(len(self._names), int(self.lib.tfr_names())):
            n = self.lib.tfr_name(i, buf, len(buf))
            if n >= len(buf):
                buf = ctypes.create_string_buffer(n + 1)
                n = self.lib.tfr_name(i, buf, len(buf))
            self._names.append(buf.value.decode(errors="replace"))
        return list(self._names)

    def names_for(self, name_id: np.ndarray) -> np.ndarray:
        """Each record's name, as an object array indexed without a Python loop per record."""
        table = np.array(self.names() + ["(name table full)"], dtype=object)
        return table[np.where(name_id == NAME_OVERFLOW, len(table) - 1, name_id)]

    def stats(self) -> dict:
        """Counters since the process loaded the ring: records, ring_dropped, buffers, cupti_dropped,
        callback_ns, ... (cupti_ring.c's stat_names), plus the last CUPTI error."""
        if self.lib is None:
            return {"error": self.error}
        k = int(self.lib.tfr_nstats())
        vals = (ctypes.c_uint64 * k)()
        self.lib.tfr_stats(vals, k)
        out = {self.lib.tfr_stat_name(i).decode(): int(vals[i]) for i in range(k)}
        out["cupti_error"] = self._cupti_error()
        return out

    def timestamp(self) -> int | None:
        """CUPTI's clock now (the records' clock), None if unreadable."""
        t = ctypes.c_uint64(0)
        return int(t.value) if self.lib is not None and self.lib.tfr_timestamp(ctypes.byref(t)) == 0 else None

    def flush(self, forced: bool = True) -> bool:
        """Hand CUPTI's buffers to the ring now (blocking); forced includes partly filled ones."""
        if self.lib is None or not self.running:
            return True
        return self.lib.tfr_flush(int(forced)) == 0 or self._fail(f"flush: {self._cupti_error()}")

    def stop(self) -> bool:
        """Disable, force-flush and release CUPTI (see cupti_ring.c); what is left stays drainable."""
        if self.lib is None or not self.running:
            return True
        self.running = False
        with _owner_lock:
            if _owner[0] is self:
                _owner[0] = None
        return self.lib.tfr_stop() == 0 or self._fail(f"stop: {self._cupti_error()}")
