"""NVML through one wrapper: without the library every value says "unavailable" with the reason and
nothing raises; with a (fake) device, GPM DRAM utilisation becomes GB/s by the stated peak."""

from __future__ import annotations

import logging
import sys
import time
import types

import pytest

from tfdash.profiling.nvml import NA, Nvml, NvmlDevice, NvmlSampler, is_na


class FakeNVMLError(Exception):
    def __init__(self, text):
        super().__init__(text)


def fake_pynvml(*, gpm=True, bus=6144, max_mem_clock=3201, util=50.0, init_error=None, missing=()):
    """A pynvml stand-in with the calls the sampler makes."""
    m = types.SimpleNamespace()
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    m.NVML_GPM_METRIC_DRAM_BW_UTIL, m.NVML_GPM_METRICS_GET_VERSION = 10, 1
    m.calls = []
    m.freed = []

    def nvmlInit():
        if init_error:
            raise FakeNVMLError(init_error)

    m.nvmlInit = nvmlInit
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}" if i == 0 else (_ for _ in ()).throw(FakeNVMLError("Invalid Argument"))
    m.nvmlSystemGetDriverVersion = lambda: b"580.159.04"
    m.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=97, memory=60)
    m.nvmlDeviceGetClockInfo = lambda h, which: {1: 1980, 2: 3201}[which]
    m.nvmlDeviceGetMaxClockInfo = lambda h, which: max_mem_clock
    m.nvmlDeviceGetMemoryBusWidth = lambda h: bus
    m.nvmlDeviceGetPowerUsage = lambda h: 412_500
    m.nvmlDeviceGetTemperature = lambda h, which: 55
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=8 * 2**30, total=141 * 2**30)

    def support(h):
        if gpm == "raise":
            raise FakeNVMLError("Not Supported")
        return types.SimpleNamespace(isSupportedDevice=1 if gpm else 0)

    m.nvmlGpmQueryDeviceSupport = support
    counter = iter(range(10**6))
    m.nvmlGpmSampleAlloc = lambda: f"sample{next(counter)}"
    m.nvmlGpmSampleGet = lambda h, s: m.calls.append(("get", s))
    m.nvmlGpmSampleFree = lambda s: m.freed.append(s)

    class Metric:
        def __init__(self):
            self.metricId, self.nvmlReturn, self.value = 0, 0, 0.0

    class MetricsGet:
        def __init__(self):
            self.version = self.numMetrics = 0
            self.sample1 = self.sample2 = None
            self.metrics = [Metric() for _ in range(4)]

    m.c_nvmlGpmMetricsGet_t = MetricsGet

    def metrics_get(mg):
        assert mg.version == 1 and mg.numMetrics == 1 and mg.metrics[0].metricId == 10
        assert mg.sample1 != mg.sample2
        mg.metrics[0].value = util
        return mg

    m.nvmlGpmMetricsGet = metrics_get
    for name in missing:
        delattr(m, name)
    return m


# -- without NVML ------------------------------------------------------------------------------
def test_real_library_on_a_machine_without_a_driver():
    nv = Nvml()
    state = nv.init()
    if state is True:
        pytest.skip("this machine has an NVIDIA driver")
    assert is_na(state) and state.reason and not state
    assert "unavailable (" in str(state)
    assert is_na(nv.query("power", "nvmlDeviceGetPowerUsage", "h"))
    s = NvmlSampler(nvml=nv)
    assert not s.available and s.series() == () and s.sample() is None
    assert s.unavailable() == {"nvml": state.reason}
    s.start()
    s.stop()  # no thread, nothing raises
    assert s.window_gbps(0, 1) == (None, state.reason)
    assert s.peak()[1] == "datasheet"


def test_nvidia_ml_py_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    state = Nvml().init()
    assert is_na(state) and "nvidia-ml-py is not installed" in state.reason


def test_library_not_found_is_one_clear_line():
    state = Nvml(fake_pynvml(init_error="NVML Shared Library Not Found")).init()
    assert state.reason == "NVML not found: libnvidia-ml.so.1 missing (no NVIDIA driver)"
    state = Nvml(fake_pynvml(init_error="Driver Not Loaded")).init()
    assert state.reason == "Driver Not Loaded"


def test_missing_device_and_function():
    nv = Nvml(fake_pynvml(missing=("nvmlDeviceGetPowerUsage",)))
    assert NvmlDevice(nv, 0).power_w() == NA("nvmlDeviceGetPowerUsage is not in this nvidia-ml-py")
    d = NvmlDevice(nv, 3)
    assert is_na(d.handle) and d.temp_c() == d.handle  # every query says the device is missing
    s = NvmlSampler(index=3, nvml=nv)
    assert not s.available and s.unavailable()["nvml"].startswith("GPU 3: ")


def test_errors_are_logged_once_per_query_and_reason(caplog):
    nv = Nvml(fake_pynvml(gpm="raise"))
    d = NvmlDevice(nv, 0)
    with caplog.at_level(logging.INFO, logger="tfdash.nvml"):
        for _ in range(5):
            v = d.dram_bw_util_pct()
            assert v == NA("GPM support is not supported on this device")
    assert len([r for r in caplog.records if "GPM support" in r.getMessage()]) == 1


# -- with a device -----------------------------------------------------------------------------
def test_values_and_units():
    d = NvmlDevice(Nvml(fake_pynvml()), 0)
    assert d.name() == "NVIDIA H200" and d.driver() == "580.159.04"
    assert (d.sm_util_pct(), d.clock_mhz("sm"), d.clock_mhz("mem")) == (97.0, 1980.0, 3201.0)
    assert d.power_w() == 412.5 and d.temp_c() == 55.0 and d.mem_used_mib() == 8192.0


def test_peak_from_bus_width_and_clock_or_datasheet():
    gbps, note = NvmlDevice(Nvml(fake_pynvml()), 0).peak_gbps()
    assert gbps == pytest.approx(6144 * 3201e6 * 2 / 8 / 1e9)  # 4917.2 GB/s
    assert "bus 6144 bit x max mem clock 3201 MHz x 2 / 8" in note
    gbps, note = NvmlDevice(Nvml(fake_pynvml(missing=("nvmlDeviceGetMemoryBusWidth",))), 0).peak_gbps()
    assert gbps == 4800.0 and "h200 datasheet" in note
    lib = fake_pynvml(missing=("nvmlDeviceGetMemoryBusWidth",))
    lib.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    gbps, note = NvmlDevice(Nvml(lib), 0).peak_gbps()  # an H100's own datasheet, not the H200's
    assert gbps == 3350.0 and "h100-sxm datasheet" in note


def test_gpm_needs_two_samples_100ms_apart():
    lib = fake_pynvml(util=73.0)
    d = NvmlDevice(Nvml(lib), 0)
    first = d.dram_bw_util_pct()
    assert is_na(first) and "first GPM sample" in first.reason
    assert is_na(d.dram_bw_util_pct())  # too soon
    time.sleep(0.11)
    assert d.dram_bw_util_pct() == 73.0
    assert lib.freed == ["sample0"]  # the older sample is freed once used
    d.close()
    assert lib.freed == ["sample0", "sample1"]


def test_sampler_series_callback_and_window_bandwidth():
    got = []
    s = NvmlSampler(interval=0.1, keep=50, nvml=Nvml(fake_pynvml(util=50.0)), on_sample=got.append,
                    origin=time.perf_counter())
    assert s.available
    s.start()
    deadline = time.time() + 5
    while len(got) < 4 and time.time() < deadline:
        time.sleep(0.02)
    s.stop()
    assert len(got) >= 4
    series = {x.name: x for x in s.series()}
    peak = 6144 * 3201e6 * 2 / 8 / 1e9
    dram = series["dram_gbps"]
    assert dram.values[0] is None and dram.values[-1] == pytest.approx(0.5 * peak)
    assert "GPM DRAM_BW_UTIL" in dram.note and dram.unit == "GB/s"
    assert series["power_w"].values[-1] == 412.5 and len(series["temp_c"].t) == len(series["temp_c"].values)
    assert all(b > a for a, b in zip(dram.t, dram.t[1:]))
    # the bandwidth over a window inside the sampled span comes from the GPM intervals
    gbps, note = s.window_gbps(dram.t[1], dram.t[-1])
    assert gbps == pytest.approx(0.5 * peak) and "bus 6144 bit" in note
    assert s.window_gbps(1e6, 1e6 + 1)[0] is None
    assert "nvml.dram_gbps" not in s.unavailable()
    assert got[-1].get("sm_clock_mhz") == 1980.0 and got[-1].t_prev is not None


def test_sampler_keeps_gpm_samples_100_ms_apart_when_a_read_stalls():
    """A read that stalls before the GPM sample on one pass and not the next (a busy host) must
    not bring two GPM samples under 100 ms apart: every bandwidth value after the first exists."""
    lib = fake_pynvml(util=50.0)
    support, calls = lib.nvmlGpmQueryDeviceSupport, iter(range(10**6))

    def stalling_support(h):
        if next(calls) % 2 == 0:
            time.sleep(0.06)
        return support(h)

    lib.nvmlGpmQueryDeviceSupport = stalling_support
    got = []
    s = NvmlSampler(interval=0.1, nvml=Nvml(lib), on_sample=got.append)
    s.start()
    deadline = time.time() + 5
    while len(got) < 6 and time.time() < deadline:
        time.sleep(0.02)
    s.stop()
    dram = [x.get("dram_gbps") for x in got]
    assert len(dram) >= 6 and dram[0] is None and None not in dram[1:], dram


def test_sampler_keeps_a_bounded_history():
    s = NvmlSampler(keep=5, nvml=Nvml(fake_pynvml()))
    for _ in range(20):
        s.sample()
    assert all(len(x.t) == 5 and len(x.values) == 5 for x in s.series())


def test_missing_metric_is_unavailable_with_its_reason_others_still_sampled():
    s = NvmlSampler(nvml=Nvml(fake_pynvml(gpm=False)))
    s.sample()
    s.sample()
    un = s.unavailable()
    assert un["nvml.dram_bw_util_pct"] == "GPM is not supported on this device"
    assert un["nvml.dram_gbps"] == "GPM is not supported on this device"
    series = {x.name: x for x in s.series()}
    assert series["dram_gbps"].values == (None, None) and series["power_w"].values == (412.5, 412.5)
