"""The bandwidth probe: the measured roofline ceiling that every prediction is priced against.

    GPU   a device-to-device copy between two buffers of 2 GiB each (far over 8x the 60 MB L2, so
          every byte comes from HBM), filled with random bytes, timed with CUDA events
    CPU   a host memcpy between two buffers (256 MiB by default; the L3 is far smaller)

bandwidth = (bytes read + bytes written) / median time of `reps` copies after a warm-up copy.
Results are cached per device in bandwidth.json in tfdash's cache directory (tfdash.cache; default
~/.cache/tfdash/bandwidth.json), keyed by device name, so the probe runs once per machine;
`refresh=True` measures again. `measured_target` turns the result into the Target the analyzer
prices against (the datasheet's bandwidth kept beside it). `over_ceiling_note` is what the reports
say of a step timed over its ceiling (the figure read low) and how the ceiling is measured again.
"""

from __future__ import annotations

import json
import logging
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tfdash.cache import cache_dir, not_a_folder  # noqa: F401  (cache_dir also imported from here)
from tfdash.profiling.files import write_json_atomic
from tfdash.profiling.targets import Target, datasheet_for

log = logging.getLogger("tfdash.probe")

GPU_BYTES = 2 << 30  # 2 GiB per buffer: 35x the H200's 60 MB L2
CPU_BYTES = 256 << 20

# The host's memory has no datasheet figure here: predictions on CPU use the probe alone.
CPU = Target(name="cpu", bandwidth=20e9, source="nominal 20 GB/s (no probe yet)")
# A GPU copy slower than this share of its GPU's datasheet was not the memory's speed but a busy
# GPU (another process copying or decoding beside it): measured again, and never cached, since one
# such figure would price every later run on the machine against a ceiling a few times too low.
PLAUSIBLE_SHARE = 0.25
NOT_CACHED = "under a quarter of the GPU's datasheet twice: not cached"


# A step over this share of its copy ceiling: a cold copy is as fast as the memory streams, so past the
# noise of the step's timing it is the ceiling that is wrong (the probe ran beside other work), not the
# step that is fast.
OVER_CEILING_PCT = 105.0


def cache_path() -> Path:
    return cache_dir() / "bandwidth.json"


def over_ceiling(pct_ceiling: float | None) -> bool:
    """Whether a step's share of its ceiling is past OVER_CEILING_PCT (no ceiling, NaN, is not)."""
    return pct_ceiling is not None and pct_ceiling > OVER_CEILING_PCT


def over_ceiling_note(pct_ceiling: float | None, ceiling_source: str, cached_here: bool = True) -> str:
    """What a report says of a step over its ceiling ("" for one under it): the ceiling read low, and
    how it is measured again. A cached figure is reused by every later run until its cache file is
    deleted; one that was never cached (NOT_CACHED) is measured again on the next run.

    `cached_here`: whether this host's cache file holds the figure the step was priced on
    (`cache_holds`). Where it does not (a snapshot from another machine, or a figure measured again
    since), deleting the file changes nothing: the note names none."""
    if not over_ceiling(pct_ceiling):
        return ""
    if NOT_CACHED in ceiling_source:
        return "over the ceiling: probe read low (a busy GPU); run again on an idle one"
    if ceiling_source.startswith("probe:"):
        if not cached_here:
            return "over the ceiling: its probe read low (not the figure cached here)"
        return f"over the ceiling: probe read low; delete {_home_short(cache_path())}"
    return "over the ceiling: it reads below what the step achieved"


def ceiling_note(pct_ceiling: float | None, ceiling_source: str, ceiling_gbps: float | None) -> str:
    """over_ceiling_note of a step priced on `ceiling_gbps`, whether this host's cache holds that figure
    asked (a read of its file) only of a step over its ceiling: the roofline pane asks on every refresh."""
    if not over_ceiling(pct_ceiling):
        return ""
    return over_ceiling_note(pct_ceiling, ceiling_source, cache_holds(ceiling_source, ceiling_gbps))


def cache_holds(ceiling_source: str, ceiling_gbps: float | None) -> bool:
    """Whether this host's cache file holds the probe figure a step was priced on: an entry with its
    probe's line (`ProbeResult.source`) and its GB/s. Asked of the figure, not of a host's name, which
    a container may change on every run or share with every other machine."""
    if not ceiling_gbps or not ceiling_source.startswith("probe:"):
        return False
    for entry in _read_cache().values():
        try:
            r = ProbeResult.from_entry(entry)
            if r.source == ceiling_source and math.isclose(r.bandwidth / 1e9, ceiling_gbps, rel_tol=1e-6):
                return True
        except (TypeError, ValueError, AttributeError):  # an entry of another shape: not this figure
            continue
    return False


def _home_short(path: Path) -> str:
    """`path` with the user's home as `~`, as a user would type it."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except (ValueError, RuntimeError):  # outside the home, or no home to be had
        return str(path)


@dataclass(frozen=True)
class ProbeResult:
    device: str  # the cache key: "NVIDIA H200", or "cpu:<model name>"
    bandwidth: float  # bytes/s, read + written
    nbytes: int  # per buffer
    reps: int
    seconds: float  # median seconds per copy
    method: str  # "cuda d2d copy" | "host memcpy"
    measured_at: str
    torch_version: str

    @property
    def source(self) -> str:
        return (f"probe: {self.method} 2x{_size(self.nbytes)}, median of {self.reps}, "
                f"{self.device}, {self.measured_at[:10]}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_entry(cls, entry) -> ProbeResult:
        """One entry of the cache file, each field of its type, else ValueError naming the field: an
        entry edited by hand or from another version (a string count, a number for the date) was
        taken whole and stopped the run's report with a TypeError, an infinite bandwidth priced every
        launch at 0 ns, and `true` was 1 byte/s."""
        if not isinstance(entry, dict):
            raise ValueError(f"expected an object, got {type(entry).__name__}")
        r = cls(**entry)  # TypeError: a field missing or unknown
        for name, kind in (("device", str), ("method", str), ("measured_at", str), ("torch_version", str),
                           ("nbytes", int), ("reps", int), ("bandwidth", (int, float)), ("seconds", (int, float))):
            v = getattr(r, name)
            if isinstance(v, bool) or not isinstance(v, kind) or (kind is not str and not 0 < v < math.inf):
                raise ValueError(f"{name}: {str(v)[:40]!r} is not {'text' if kind is str else 'a positive number'}")
        return r


def _size(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return "cpu:" + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu:" + (platform.processor() or platform.machine() or "unknown")


def device_name(device: str = "cpu") -> str:
    if str(device).startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return cpu_name()


_SAID: set[str] = set()  # the cache's warnings said in this process


def _warn_once(line: str) -> None:
    """Log `line` once per process: the cache is read by every report and refresh, and one broken
    cache is one line, not one per read."""
    if line not in _SAID:
        _SAID.add(line)
        log.warning("%s", line)


def _cache_blocked() -> bool:
    """Whether a file stands where the cache folder goes (TFDASH_CACHE_DIR=a file): said once, as
    such, where each read said "Not a directory" and the write "File exists"."""
    why = not_a_folder()
    if why:
        _warn_once(f"{why}: the bandwidth probe is not cached")
    return why is not None


def _read_cache() -> dict:
    path = cache_path()
    if _cache_blocked():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return raw if isinstance(raw, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        _warn_once(f"ignoring unreadable bandwidth cache {path} ({e})")
        return {}
    except RecursionError:  # arrays in arrays past Python's recursion limit: as unreadable as any other
        _warn_once(f"ignoring unreadable bandwidth cache {path} (JSON nested too deeply)")
        return {}


def plausible(result: ProbeResult) -> bool:
    """False for a GPU copy too slow to be the memory's speed (PLAUSIBLE_SHARE); a host has no
    datasheet figure to hold it to."""
    return (not result.method.startswith("cuda")
            or result.bandwidth >= PLAUSIBLE_SHARE * datasheet_for(result.device).bandwidth)


def cached(device: str = "cpu") -> ProbeResult | None:
    try:
        key = device_name(device)
    except Exception:  # no such device here: nothing cached for it
        return None
    entry = _read_cache().get(key)
    if not isinstance(entry, dict):
        return None
    try:
        r = ProbeResult.from_entry(entry)
        return r if plausible(r) else None
    except (TypeError, ValueError):
        return None


def _store(result: ProbeResult) -> None:
    if _cache_blocked():
        return
    data = _read_cache()
    data[result.device] = result.to_dict()
    try:
        write_json_atomic(cache_path(), data)
    except Exception as e:  # a read-only home is no reason to fail a run
        log.warning("cannot cache the bandwidth probe: %s", e)


def _time_copies(copy, reps: int, timer) -> list[float]:
    copy()  # warm-up: page in, first-touch, driver set-up
    return [timer(copy) for _ in range(reps)]


def measure(device: str = "cpu", nbytes: int | None = None, reps: int = 5) -> ProbeResult:
    """Measure now (no cache)."""
    import torch

    cuda = str(device).startswith("cuda")
    nbytes = int(nbytes or (GPU_BYTES if cuda else CPU_BYTES))
    dev = torch.device(device)
    gen = torch.Generator(device=dev).manual_seed(0)
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=dev, generator=gen)  # never zeros
    dst = torch.empty_like(src)

    if cuda:
        def timer(copy):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            copy()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) / 1e3
    else:
        def timer(copy):
            t = time.perf_counter()
            copy()
            return time.perf_counter() - t

    # Alternate directions so neither buffer stays warm in a cache between copies.
    flip = [False]

    def copy():
        (src if flip[0] else dst).copy_(dst if flip[0] else src)
        flip[0] = not flip[0]

    times = _time_copies(copy, max(1, reps), timer)
    del src, dst
    if cuda:
        torch.cuda.empty_cache()
    sec = statistics.median(times)
    return ProbeResult(device=device_name(device), bandwidth=2 * nbytes / sec, nbytes=nbytes, reps=len(times),
                       seconds=sec, method="cuda d2d copy" if cuda else "host memcpy",
                       measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       torch_version=torch.__version__)


def probe_bandwidth(device: str = "cpu", nbytes: int | None = None, reps: int = 5, refresh: bool = False,
                    cache: bool = True) -> ProbeResult:
    """The cached result for this device, or a fresh measurement (then cached)."""
    if cache and not refresh:
        hit = cached(device)
        if hit is not None:
            return hit
    result = measure(device, nbytes, reps)
    if not plausible(result):
        result = max(result, measure(device, nbytes, reps), key=lambda r: r.bandwidth)
    if not plausible(result):
        log.warning("the bandwidth probe measured %.0f GB/s: the GPU was busy? (%s)", result.bandwidth / 1e9,
                    NOT_CACHED)
        return replace(result, method=f"{result.method} ({NOT_CACHED})")
    if cache:
        _store(result)
    return result


def base_target(device: str = "cpu") -> Target:
    """The GPU's datasheet (`datasheet_for` its name) or the nominal CPU target, before any probe."""
    if not str(device).startswith("cuda"):
        return CPU
    try:
        return datasheet_for(device_name(device))
    except Exception:  # noqa: BLE001 - no such device here: the engine's own target
        return datasheet_for(None)


def measured_target(device: str = "cpu", result: ProbeResult | None = None, **probe_kw) -> Target:
    """The base target with the probe's bandwidth as its ceiling."""
    result = result or probe_bandwidth(device, **probe_kw)
    base = base_target(device)
    t = base.measured(result.bandwidth, result.source)
    if base is CPU:
        t = replace(t, datasheet_bandwidth=0.0)  # no datasheet figure for a host
    return t


def default_target(device: str = "cpu") -> Target:
    """The cached measured target when this device was probed before, else the base target."""
    hit = cached(device)
    return measured_target(device, hit) if hit is not None else base_target(device)
