"""NvmlSampler: one device sampled every `interval` seconds on a daemon thread into bounded
series, each sample posted to a callback; DRAM GB/s from GPM (see tfdash.profiling.nvml)."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from tfdash.profiling.nvml import DATASHEET_PEAK_GBPS, GPM_MIN_INTERVAL_S, Nvml, NvmlDevice, _reason, is_na

log = logging.getLogger("tfdash.nvml")


# name -> (unit, reader); dram_gbps is derived from dram_bw_util_pct.
METRICS = {
    "dram_bw_util_pct": ("%", lambda d: d.dram_bw_util_pct()),
    "dram_gbps": ("GB/s", None),
    "sm_util_pct": ("%", lambda d: d.sm_util_pct()),
    "sm_clock_mhz": ("MHz", lambda d: d.clock_mhz("sm")),
    "mem_clock_mhz": ("MHz", lambda d: d.clock_mhz("mem")),
    "power_w": ("W", lambda d: d.power_w()),
    "temp_c": ("°C", lambda d: d.temp_c()),
    "mem_used_mib": ("MiB", lambda d: d.mem_used_mib()),
}


@dataclass(frozen=True)
class NvmlSample:
    """One sample: t in seconds since the sampler's origin; values by METRICS name (None = NA).
    `t_prev` is the start of the GPM interval the bandwidth covers (None without one)."""

    t: float
    values: tuple[tuple[str, float | None], ...]
    t_prev: float | None = None

    def get(self, name: str) -> float | None:
        return dict(self.values).get(name)


class NvmlSampler:
    """Samples one device every `interval` s on a daemon thread into bounded series (`keep`
    samples each). Without NVML it still runs nothing and says why in `unavailable()`."""

    def __init__(self, index: int = 0, interval: float = 0.25, keep: int = 10000, nvml: Nvml | None = None,
                 on_sample: Callable[[NvmlSample], None] | None = None, origin: float | None = None):
        self.nvml = nvml or Nvml()
        self.index = index
        self.interval = max(GPM_MIN_INTERVAL_S, float(interval))
        self.on_sample = on_sample
        self.origin = time.perf_counter() if origin is None else origin
        self._lock = threading.Lock()
        self._t: deque[float] = deque(maxlen=keep)
        self._v: dict[str, deque] = {k: deque(maxlen=keep) for k in METRICS}
        self._gpm: deque[tuple[float, float, float]] = deque(maxlen=keep)  # (t0, t1, GB/s)
        self._reasons: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.device: NvmlDevice | None = None
        state = self.nvml.init()
        if state is True:
            self.device = NvmlDevice(self.nvml, index)
            if is_na(self.device.handle):
                self._reasons["nvml"] = f"GPU {index}: {self.device.handle.reason}"
                self.device = None
        else:
            self._reasons["nvml"] = state.reason

    @property
    def available(self) -> bool:
        return self.device is not None

    def peak(self) -> tuple[float, str]:
        return self.device.peak_gbps() if self.device else (DATASHEET_PEAK_GBPS, "datasheet")

    def sample(self) -> NvmlSample | None:
        """Take one sample now (the thread calls this; tests may too)."""
        d = self.device
        if d is None:
            return None
        now = time.perf_counter() - self.origin
        vals: dict[str, float | None] = {}
        for name, (_, read) in METRICS.items():
            if read is None:
                continue
            v = read(d)
            if is_na(v):
                vals[name] = None
                self._reasons[name] = v.reason
            else:
                vals[name] = float(v)
                self._reasons.pop(name, None)
        util = vals.get("dram_bw_util_pct")
        t_prev = None
        with self._lock:
            if util is not None:
                vals["dram_gbps"] = util / 100.0 * d.peak_gbps()[0]
                if d.gpm_interval is not None:
                    t_prev = d.gpm_interval[0] - self.origin
                    self._gpm.append((t_prev, d.gpm_interval[1] - self.origin, vals["dram_gbps"]))
                self._reasons.pop("dram_gbps", None)
            else:
                vals["dram_gbps"] = None
                self._reasons["dram_gbps"] = self._reasons.get("dram_bw_util_pct", "no GPM sample")
            self._t.append(now)
            for name in METRICS:
                self._v[name].append(vals.get(name))
        s = NvmlSample(now, tuple((k, vals.get(k)) for k in METRICS), t_prev)
        if self.on_sample is not None:
            try:
                self.on_sample(s)
            except Exception:
                log.exception("NVML sample callback failed")
        return s

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                self.sample()
            except Exception as e:  # a sampler never takes the run down
                self._reasons["nvml"] = f"sampler stopped: {_reason(e)}"
                log.exception("NVML sampler failed")
                return
            # the cadence counts from the GPM sample, read part-way into sample(): counted from the
            # loop's top, a slow read followed by a quick one would come under GPM's 100 ms apart
            held = self.device.gpm_sample_t if self.device is not None else None
            start = t if held is None or held < t else held
            self._stop.wait(max(0.0, self.interval - (time.perf_counter() - start)))

    def start(self) -> None:
        if self.device is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="tfdash-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self.device is not None:
            self.device.close()

    def series(self):
        """The sampled series as snapshot `Series` (empty without NVML)."""
        from tfdash.profiling.snapshot import Series

        if self.device is None:
            return ()
        with self._lock:
            t = tuple(self._t)
            out = []
            for name, (unit, _) in METRICS.items():
                note = self.peak()[1] if name == "dram_gbps" else ""
                out.append(Series(name, unit, t, tuple(self._v[name]), note=note))
        return tuple(out)

    def unavailable(self) -> dict[str, str]:
        """{"nvml": reason} without NVML; {"nvml.<metric>": reason} for each metric it lacks."""
        with self._lock:
            if self.device is None:
                return {"nvml": self._reasons.get("nvml", "NVML unavailable")}
            return {("nvml" if k == "nvml" else f"nvml.{k}"): v for k, v in self._reasons.items()}

    def window_gbps(self, t0: float, t1: float) -> tuple[float | None, str]:
        """NVML's DRAM GB/s over [t0, t1] (seconds since the origin): GPM intervals overlapping
        it, weighted by overlap. (None, why) when no interval overlaps it yet."""
        if self.device is None:
            return None, self._reasons.get("nvml", "NVML unavailable")
        num = den = 0.0
        with self._lock:
            for a, b, g in reversed(self._gpm):  # time order: walk back from the newest
                if b <= t0:
                    break
                ov = min(b, t1) - max(a, t0)
                if ov > 0 and g is not None and math.isfinite(g):
                    num += g * ov
                    den += ov
        if den == 0:
            return None, self._reasons.get("dram_gbps", "no GPM interval covers the window yet")
        return num / den, self.peak()[1]
