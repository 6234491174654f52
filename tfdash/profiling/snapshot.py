"""ProfileSnapshot: everything on screen, frozen. Immutable and versioned.

The app renders snapshots (live ones from a Session, or one loaded by `tfdash open`); the
exporters write them; the loader (`load_snapshot`) validates a file and says exactly what is wrong
with it. Every field is plain data (ints, floats, strings, tuples) so a snapshot round-trips
through JSON unchanged: export -> load -> equal.

A value that could not be measured is None, and `unavailable[panel]` says why
(e.g. {"nvml": "NVML not found: libnvidia-ml.so.1 missing", "kernels": "no profile window yet"}).
Panels: "kernels", "roofline", "nvml" (and "nvml.<series>" for one missing metric), "marginal",
"timeline", "profile" (the latest window failed while an older one still gives the numbers), and
"continuous" (why per-kernel times come from profile windows instead of every step).

`timing` says how the kernel table, roofline and sweep were measured: "continuous" (every step's
kernels from CUPTI activity records, p50/p90 over the latest `range_steps` steps, a sweep point per
ctx_len bucket) or "windows" (profile windows of a few steps each).

Floats are always finite (never NaN or inf), so a snapshot equals itself after a round trip.
The JSON form and its loader are in `tfdash.profiling.export`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfdash.stats import Rates

SCHEMA = "tfdash.snapshot"
VERSION = 8  # 2: RunMeta.kernels_source; 3: RunMeta.plan_options, windows, ttft_ns, held_ns;
#              4: RunMeta.threads; 5: timing, KernelRow.measured_last_ns and counters, ab;
#              6: prefill_positions, prefill_ns; 7: TimingInfo.auto_window; 8: TokenRecord.held_ns
#              (older files load with them None / empty / 0 / False)


@dataclass(frozen=True)
class RunMeta:
    tfdash_version: str
    host: str
    device: str  # "cpu" or "cuda"
    gpu: str | None  # "NVIDIA H200", None on CPU
    driver: str | None
    torch_version: str
    tilelang_version: str | None
    cuda_version: str | None
    backend: str  # "torch-eager" | "torch-graph" | "tilelang-graph"
    dtype: str
    model: dict  # ModelConfig.to_dict()
    checkpoint: str  # a path, or "random"
    git_commit: str | None
    started_at: str  # ISO 8601, UTC
    prompt: str
    capacity: int
    launches_per_step: int
    # sha256 (12 hex digits) of the kernel families' sources and the step plan's when recorded
    # (tfdash.profiling.meta.kernels_source); None in snapshots from before it was kept
    kernels_source: str | None = None
    threads: int | None = None  # torch's CPU threads of a CPU run (None on CUDA and before version 3)
    # build_plan's keyword options (StepPlan.meta["options"]): build_plan(ModelConfig.from_dict(
    # model), **plan_options) is the exact plan that ran; None in snapshots from before it was kept
    plan_options: dict | None = None


@dataclass(frozen=True)
class TokenRecord:
    index: int
    token_id: int
    text: str
    elapsed_ns: int  # wall time since the generation began
    # wall time the generation was held (paused) before this token, part of elapsed_ns: rates over
    # tokens use elapsed_ns - held_ns so a pause is not read as slow decoding (0 before version 8)
    held_ns: int = 0

    @property
    def run_ns(self) -> int:
        """Run time since the generation began: elapsed_ns less the time held before this token."""
        return self.elapsed_ns - self.held_ns


@dataclass(frozen=True)
class Counters:
    """Nsight Compute's hardware counters of one launch, profiled inside a replay of the step's
    graph at `ctx_len` (tfdash.profiling.counters). ncu runs each kernel alone, so `ncu_ns` is its
    serialized duration, never its in-graph time; `predicted_*` are the analyzer's bytes at the
    same ctx_len, so the ratio does not depend on the context the rest of the snapshot is at.
    A counter ncu did not report is None."""

    ctx_len: int
    kernel: str  # the device kernel ncu profiled
    dram_read: int | None  # bytes: dram__bytes_read.sum
    dram_written: int | None  # bytes: dram__bytes_write.sum
    predicted_read: int
    predicted_written: int
    warps_active_pct: float | None = None  # achieved occupancy: sm__warps_active.avg.pct_of_peak_sustained_active
    registers: int | None = None  # launch__registers_per_thread
    smem_static: int | None = None  # bytes a block: launch__shared_mem_per_block_static
    smem_dynamic: int | None = None  # bytes a block: launch__shared_mem_per_block_dynamic
    grid: tuple[int, ...] = ()  # blocks (x, y, z)
    block: tuple[int, ...] = ()  # threads a block (x, y, z)
    ncu_ns: float | None = None  # gpu__time_duration.sum, serialized under ncu

    @property
    def dram_bytes(self) -> int | None:
        if self.dram_read is None or self.dram_written is None:
            return None
        return self.dram_read + self.dram_written

    @property
    def ratio(self) -> float | None:
        """Measured DRAM bytes over the analyzer's (1.0: the kernel moves what the model says)."""
        want = self.predicted_read + self.predicted_written
        return self.dram_bytes / want if self.dram_bytes is not None and want else None

    @property
    def read_ratio(self) -> float | None:
        return self.dram_read / self.predicted_read if self.dram_read is not None and self.predicted_read else None


@dataclass(frozen=True)
class KernelRow:
    """One launch of the StepPlan: its prediction and, once profiled, its measurement."""

    index: int
    role: str
    layer: int | None
    family: str
    kernel: str
    predicted_ns: float  # analyzer's ideal on the measured target
    bytes_read: int
    bytes_written: int
    flops: int
    bound_by: str
    measured_p50_ns: float | None = None
    measured_p90_ns: float | None = None
    share: float | None = None  # measured p50 / measured step time
    device_kernels: tuple[str, ...] = ()  # the device kernels this launch ran (CUPTI names)
    samples: int = 0  # steps its measurement is taken over
    measured_last_ns: float | None = None  # continuous timing: the latest step's exclusive ns
    counters: Counters | None = None  # Nsight Compute's counters, once `tfdash counters` (or `n`) ran

    @property
    def gap(self) -> float | None:
        """measured / predicted (1.0 = at the roofline ideal)."""
        if self.measured_p50_ns is None or not self.predicted_ns:
            return None
        return self.measured_p50_ns / self.predicted_ns

    @property
    def achieved_gbps(self) -> float | None:
        if not self.measured_p50_ns:
            return None
        return (self.bytes_read + self.bytes_written) / self.measured_p50_ns


@dataclass(frozen=True)
class Series:
    """A time series: t in seconds since the run began, and the values (None = no sample)."""

    name: str  # "dram_gbps", "sm_util_pct", "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", ...
    unit: str
    t: tuple[float, ...] = ()
    values: tuple[float | None, ...] = ()
    note: str = ""  # how the values are derived (e.g. GPM util% x the peak, and which peak)


@dataclass(frozen=True)
class Roofline:
    """One profile window against the roofline, with NVML over the same window."""

    ctx_len: int
    steps: int
    bytes_per_step: int
    predicted_step_ns: float  # sum of per-launch ideals
    floor_ns: float  # bytes_per_step / ceiling
    measured_step_ns: float
    kernel_sum_ns: float  # sum of per-launch measured p50
    gap_ns: float  # measured_step_ns - kernel_sum_ns: launch ramp and bubbles
    achieved_gbps: float  # bytes_per_step / measured_step_ns
    ceiling_gbps: float  # measured cold copy bandwidth (the target's)
    datasheet_gbps: float
    nvml_gbps: float | None  # NVML GPM DRAM bandwidth over the same window
    ceiling_source: str = ""
    nvml_source: str = ""  # how nvml_gbps was computed, or why it is None
    timing: str = ""  # "cupti" (kernel durations inside graph replays) or "direct" (host timer, CPU)

    @property
    def pct_ceiling(self) -> float:
        return 100.0 * self.achieved_gbps / self.ceiling_gbps if self.ceiling_gbps else float("nan")

    @property
    def pct_datasheet(self) -> float:
        return 100.0 * self.achieved_gbps / self.datasheet_gbps if self.datasheet_gbps else float("nan")

    @property
    def nvml_ratio(self) -> float | None:
        """NVML's GB/s over the analyzer's predicted GB/s (bytes/step x steps/s)."""
        if self.nvml_gbps is None or not self.achieved_gbps:
            return None
        return self.nvml_gbps / self.achieved_gbps


@dataclass(frozen=True)
class KernelSpan:
    """One device kernel of the latest profile window, for the timeline (Chrome trace)."""

    # continuous timing's: the generation step (== its ctx_len); a profile window's: the step's place
    # in the window, 0 first (its record in `windows` has the first step: app.timeline_model.step_ctx)
    step: int
    launch: int  # StepPlan index
    name: str  # the device kernel's name
    start_ns: int  # since the run began (CUPTI times placed at the window's wall-clock start)
    dur_ns: int


@dataclass(frozen=True)
class WindowRecord:
    """One profile window of the run's history: what the ctx_len sweep plots."""

    ctx_len: int
    first_step: int
    steps: int
    step_ns: float  # the window's step time, p50
    kernel_ns: tuple[float, ...]  # [launch index]: measured p50 ns


@dataclass(frozen=True)
class SlowStep:
    """One of the slowest steps of a continuously timed run, kept whole."""

    step: int  # the generation step (== its ctx_len)
    span_ns: int  # its first kernel's start to the next step's
    excess_ns: float  # span - the p50 span of the steps around it
    busy_ns: int  # sum of its launches' exclusive ns
    launch: int  # the launch most over its own p50 (StepPlan index); -1: the idle between kernels
    launch_excess_ns: float  # by how much
    launch_ns: tuple[int, ...]  # [launch index]: every launch's exclusive ns in this step


@dataclass(frozen=True)
class TimingInfo:
    """How the per-kernel numbers were measured (see the module doc)."""

    method: str  # "continuous" | "windows"
    source: str = ""  # continuous: the record source, e.g. "cupti-python 13.0.1, CONCURRENT_KERNEL"
    note: str = ""  # one line: why windows, or what interrupted continuous timing
    steps_measured: int = 0
    steps_dropped: int = 0  # steps the record stream lost (estimated from the time around them)
    range_steps: int = 0  # the latest steps the kernel table's p50/p90 are over
    records: int = 0  # kernel records received
    records_ignored: int = 0  # of no plan launch, of no graph, or of another graph (a marginal's)
    host_ns_per_step: float = 0.0  # host time of the mechanism per measured step (off the decode thread)
    pauses: int = 0  # times it paused for a profile window (torch.profiler)
    bucket_steps: int = 0  # ctx_len steps per sweep point
    slow_steps: tuple[SlowStep, ...] = ()  # the slowest, slowest first
    auto_window: bool = False  # windows: the first one was the session's own, taken early in the run (not on `p`)


@dataclass(frozen=True)
class ProfileSnapshot(Rates):
    """Everything on screen (tok_per_s and decode_tok_per_s from tfdash.stats.Rates)."""

    meta: RunMeta
    tokens: tuple[TokenRecord, ...] = ()
    step_ns: tuple[int, ...] = ()
    prompt_tokens: int = 0
    new_tokens: int = 0
    wall_ns: int = 0
    kernels: tuple[KernelRow, ...] = ()
    nvml: tuple[Series, ...] = ()
    roofline: Roofline | None = None
    marginal: tuple[dict, ...] = ()  # {"what": role|family, "delta_ns", "spread_ns", "rounds"}
    unavailable: dict = field(default_factory=dict)  # panel -> reason
    schema: str = SCHEMA
    version: int = VERSION
    target: dict | None = None  # Target.to_dict() of the ceiling the predictions use
    steps: int = 0  # steps run, a prompt walk's included (step_ns keeps only the last ones)
    paused_ns: int = 0  # wall time spent in profiling set-up/tear-down and marginal measurements
    profile_windows: int = 0  # profile windows completed so far
    timeline: tuple[KernelSpan, ...] = ()  # the latest window's kernels (last few steps)
    windows: tuple[WindowRecord, ...] = ()  # every window the session keeps, oldest first
    ttft_ns: int = 0  # run time until the first new token (0: none yet, or an older snapshot)
    held_ns: int = 0  # wall time the run was paused by the user: part of wall_ns, not of tok/s
    timing: TimingInfo | None = None  # how the kernels were timed (None: older snapshots, windows)
    ab: tuple[dict, ...] = ()  # live A/Bs of plan variants (tfdash.profiling.ab.summarize), oldest first
    prefill_positions: int = 0  # prompt positions taken in chunks before the first token (0: walked, or older)
    prefill_ns: int = 0  # the chunks' and the first token's head's device time (CPU: host time)

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


def kernel_list_note(snap: ProfileSnapshot) -> str | None:
    """One line where the snapshot lists fewer kernel rows than its run's launches/step, else None.
    A snapshot is written with a row for every launch of the step, so fewer is a file edited or cut
    short: under the header's count, a table of those rows alone would read as the whole step."""
    listed, launches = len(snap.kernels), snap.meta.launches_per_step
    if listed >= launches:
        return None
    return (f"the snapshot's kernel list is incomplete: {listed} of the run's {launches} launches/step "
            f"(the table and its Σ step cover those {listed})")
