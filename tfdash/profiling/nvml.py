"""NVML, read the nvitop way: one query wrapper, lazy init, errors become a sentinel, logged once.

    Nvml.query(name, fn, *args)      every NVML call goes through here; it returns the value, or an
                                     `NA` carrying the reason (library missing, no such device,
                                     not supported, ...) and never raises
    NvmlDevice                       one device's readings (clocks, power, GPM bandwidth), each an NA
                                     on failure
    NvmlSampler                      (tfdash.profiling.nvml_sampler) a thread that samples one device
                                     every `interval` seconds into bounded series

DRAM bandwidth comes from GPM (Hopper+): NVML_GPM_METRIC_DRAM_BW_UTIL between two GPM samples at
least 100 ms apart is the percentage of the theoretical DRAM bandwidth in use. It becomes GB/s as

    dram_gbps = util% / 100 x peak,   peak = memory bus width (bits) x max memory clock (MHz) x 2 / 8

(the DDR factor 2: two transfers per clock; 6144 bit x 3201 MHz x 2 / 8 = 4917 GB/s on an H200).
Where the bus width or clock cannot be read, the datasheet's 4.8 TB/s is the peak; the series'
`note` says which. `nvmlDeviceGetUtilizationRates().memory` is a busy-time share, not bandwidth,
and is not used for it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

log = logging.getLogger("tfdash.nvml")

DATASHEET_PEAK_GBPS = 4800.0  # H200 HBM3e, NVIDIA datasheet
GPM_MIN_INTERVAL_S = 0.1  # GPM wants at least 100 ms between its two samples


@dataclass(frozen=True)
class NA:
    """Not available, and why. Falsy; prints as "unavailable (reason)"."""

    reason: str

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return f"unavailable ({self.reason})"


def is_na(value) -> bool:
    return isinstance(value, NA)


def _reason(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]


class Nvml:
    """The NVML library, initialised on first use. `module` replaces `pynvml` (tests pass fakes)."""

    def __init__(self, module=None):
        self._module = module
        self._lock = threading.Lock()
        self._state: NA | None | bool = None  # None: not tried; True: up; NA: failed
        self._logged: set[tuple[str, str]] = set()

    @property
    def lib(self):
        return self._module

    def _log_once(self, query: str, reason: str) -> None:
        key = (query, reason)
        if key not in self._logged:
            self._logged.add(key)
            log.info("NVML %s: %s", query, reason)

    def init(self) -> NA | bool:
        """True when NVML is up, else an NA with the reason (one clear line)."""
        with self._lock:
            if self._state is not None:
                return self._state
            if self._module is None:
                try:
                    import pynvml

                    self._module = pynvml
                except ImportError as e:
                    self._state = NA(f"nvidia-ml-py is not installed ({_reason(e)})")
            if self._state is None:
                try:
                    self._module.nvmlInit()
                    self._state = True
                except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, OSError, ...
                    reason = _reason(e)
                    if "Library Not Found" in reason or "not found" in reason.lower():
                        reason = "NVML not found: libnvidia-ml.so.1 missing (no NVIDIA driver)"
                    self._state = NA(reason)
            if isinstance(self._state, NA):
                self._log_once("nvmlInit", self._state.reason)
            return self._state

    @property
    def available(self) -> bool:
        return self.init() is True

    def query(self, name: str, fn: str, *args, default_reason: str = ""):
        """Call `pynvml.<fn>(*args)`; an NA (with the reason, logged once per (query, reason))
        when NVML, the function, the device or the metric is missing."""
        state = self.init()
        if state is not True:
            return state
        for a in args:
            if is_na(a):
                return a
        f = getattr(self._module, fn, None)
        if f is None:
            na = NA(default_reason or f"{fn} is not in this nvidia-ml-py")
            self._log_once(name, na.reason)
            return na
        try:
            return f(*args)
        except Exception as e:
            reason = _reason(e)
            if reason == "Not Supported":
                reason = f"{name} is not supported on this device"
            elif reason == "Function Not Found":
                reason = f"{name}: the driver's NVML lacks {fn}"
            na = NA(reason)
            self._log_once(name, na.reason)
            return na

    def const(self, name: str, default: int) -> int:
        return getattr(self._module, name, default) if self._module is not None else default

    def shutdown(self) -> None:
        with self._lock:
            if self._state is True:
                try:
                    self._module.nvmlShutdown()
                except Exception:
                    pass
            self._state = None


def _text(v):
    if is_na(v):
        return v
    return v.decode() if isinstance(v, bytes) else str(v)


class NvmlDevice:
    """One GPU through the wrapper; every method returns a value or an NA."""

    def __init__(self, nvml: Nvml, index: int = 0):
        self.nvml = nvml
        self.index = index
        self.handle = nvml.query("device handle", "nvmlDeviceGetHandleByIndex", index)
        self._gpm_prev = None
        self._gpm_prev_t = 0.0
        self.gpm_interval: tuple[float, float] | None = None  # perf_counter span of the last value
        self._peak: tuple[float, str] | None = None

    @property
    def gpm_sample_t(self) -> float | None:
        """perf_counter time of the GPM sample held for the next bandwidth value, or None."""
        return self._gpm_prev_t if self._gpm_prev is not None else None

    def q(self, name, fn, *args):
        return self.nvml.query(name, fn, self.handle, *args)

    def name(self):
        return _text(self.q("name", "nvmlDeviceGetName"))

    def driver(self):
        return _text(self.nvml.query("driver version", "nvmlSystemGetDriverVersion"))

    def sm_util_pct(self):
        u = self.q("utilization", "nvmlDeviceGetUtilizationRates")
        return u if is_na(u) else float(u.gpu)

    def clock_mhz(self, which: str):
        const = {"sm": ("NVML_CLOCK_SM", 1), "mem": ("NVML_CLOCK_MEM", 2)}[which]
        v = self.q(f"{which} clock", "nvmlDeviceGetClockInfo", self.nvml.const(*const))
        return v if is_na(v) else float(v)

    def power_w(self):
        v = self.q("power", "nvmlDeviceGetPowerUsage")  # milliwatts
        return v if is_na(v) else v / 1000.0

    def temp_c(self):
        v = self.q("temperature", "nvmlDeviceGetTemperature", self.nvml.const("NVML_TEMPERATURE_GPU", 0))
        return v if is_na(v) else float(v)

    def mem_used_mib(self):
        m = self.q("memory info", "nvmlDeviceGetMemoryInfo")
        return m if is_na(m) else m.used / 2**20

    def peak_gbps(self) -> tuple[float, str]:
        """(peak DRAM GB/s, how it was computed): bus width x max memory clock x 2 / 8, or the
        device's datasheet (`targets.datasheet_for` its name; the H200's 4.8 TB/s where NVML
        names no H100) where NVML cannot say."""
        if self._peak is None:
            bus = self.q("memory bus width", "nvmlDeviceGetMemoryBusWidth")
            clk = self.q("max memory clock", "nvmlDeviceGetMaxClockInfo", self.nvml.const("NVML_CLOCK_MEM", 2))
            if not is_na(bus) and not is_na(clk) and bus and clk:
                gbps = bus * clk * 1e6 * 2 / 8 / 1e9
                self._peak = (gbps, f"GPM DRAM_BW_UTIL x {gbps:.0f} GB/s "
                                    f"(bus {bus} bit x max mem clock {clk} MHz x 2 / 8)")
            else:
                from tfdash.profiling.targets import datasheet_for

                why = bus.reason if is_na(bus) else (clk.reason if is_na(clk) else "zero")
                name = self.name()
                sheet = datasheet_for(None if is_na(name) else str(name))
                gbps = sheet.datasheet_bandwidth / 1e9
                self._peak = (gbps, f"GPM DRAM_BW_UTIL x {gbps:.0f} GB/s ({sheet.name} datasheet; "
                                    f"bus width/clock unavailable: {why})")
        return self._peak

    def gpm_supported(self):
        s = self.q("GPM support", "nvmlGpmQueryDeviceSupport")
        if is_na(s):
            return s
        return True if getattr(s, "isSupportedDevice", 0) else NA("GPM is not supported on this device")

    def dram_bw_util_pct(self):
        """DRAM bandwidth utilisation (%) since the previous call (GPM), or an NA. The first call
        only takes a sample; later calls less than 100 ms apart return an NA."""
        sup = self.gpm_supported()
        if is_na(sup):
            return sup
        now = time.perf_counter()
        if self._gpm_prev is not None and now - self._gpm_prev_t < GPM_MIN_INTERVAL_S:
            return NA("GPM samples must be at least 100 ms apart")
        sample = self.nvml.query("GPM sample alloc", "nvmlGpmSampleAlloc")
        if is_na(sample):
            return sample
        got = self.nvml.query("GPM sample", "nvmlGpmSampleGet", self.handle, sample)
        if is_na(got):
            self.nvml.query("GPM sample free", "nvmlGpmSampleFree", sample)
            return got
        prev, prev_t = self._gpm_prev, self._gpm_prev_t
        self._gpm_prev, self._gpm_prev_t = sample, now
        if prev is None:
            return NA("first GPM sample taken; bandwidth comes with the next one")
        try:
            value = self._gpm_metric(prev, sample)
            self.gpm_interval = None if is_na(value) else (prev_t, now)
            return value
        finally:
            self.nvml.query("GPM sample free", "nvmlGpmSampleFree", prev)

    def _gpm_metric(self, s1, s2):
        lib = self.nvml.lib
        metric_id = self.nvml.const("NVML_GPM_METRIC_DRAM_BW_UTIL", 10)
        try:
            mg = lib.c_nvmlGpmMetricsGet_t()
            mg.version = self.nvml.const("NVML_GPM_METRICS_GET_VERSION", 1)
            mg.numMetrics = 1
            mg.sample1 = s1
            mg.sample2 = s2
            mg.metrics[0].metricId = metric_id
        except Exception as e:
            return NA(f"GPM metrics struct: {_reason(e)}")
        out = self.nvml.query("GPM DRAM bandwidth", "nvmlGpmMetricsGet", mg)
        if is_na(out):
            return out
        m = out.metrics[0]
        if getattr(m, "nvmlReturn", 0):
            return NA(f"GPM DRAM_BW_UTIL returned NVML error {m.nvmlReturn}")
        value = float(m.value)
        if not math.isfinite(value):
            return NA("GPM DRAM_BW_UTIL returned a non-finite value")
        return value

    def close(self) -> None:
        if self._gpm_prev is not None:
            self.nvml.query("GPM sample free", "nvmlGpmSampleFree", self._gpm_prev)
            self._gpm_prev = None


def __getattr__(name: str):
    """The sampler lives in nvml_sampler; `from tfdash.profiling.nvml import NvmlSampler` still works."""
    if name in ("METRICS", "NvmlSample", "NvmlSampler"):
        from tfdash.profiling import nvml_sampler

        return getattr(nvml_sampler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
