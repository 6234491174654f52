"""From a session's state to what the snapshot holds: the join of prediction and measurement.

Pure functions (the NVML look-up reads a sampler's buffers, nothing else), so the snapshot a
Session hands out is `assemble(state, ...)` of a copy of its state taken under its lock:

    kernel_rows(analysis, window)      a KernelRow per launch: the analyzer's cost and ideal,
                                       the window's measured p50/p90 and share of the step
                                       (a "window" is a WindowResult or a ContinuousView: the
                                       latest steps of continuous timing answer the same way)
    roofline(analysis, window, ...)    the window's step against the memory roofline and NVML
    window_record(window)              the window as one point of the ctx_len sweep
    freshest(window, continuous)       the latest measurement: the kernel table's source
    unavailable_panels(...)            panel -> why it has no numbers
    assemble(state, ...)               the ProfileSnapshot
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass

from tfdash.profiling.snapshot import (KernelRow, KernelSpan, ProfileSnapshot, Roofline, RunMeta, TimingInfo,
                                       WindowRecord)

# Why a continuously timed run that ended without a decode step has no kernel times (its record's
# no_window is set at the generation's end: session_requests.no_step_ran)
NO_STEP = "the run's one token came from the prompt, so no step ran (2 or more new tokens have one)"
NO_STEP_AT_EOS = "the run's one token, from the prompt, was end-of-text, so no step ran (--ignore-eos decodes past it)"
NVML_LOOKBACK_S = 1.0  # a window's NVML figure: GPM over this much decode before it
NVML_SKIP_S = 0.1  # ... leaving out the run's first moments (set-up, the first steps)


def jsonable(d):
    return json.loads(json.dumps(d))


def kernel_rows(analysis, win) -> tuple[KernelRow, ...]:
    """One row per launch: `analysis` (a StepAnalysis at the window's ctx_len) and, when `win`
    (a WindowResult) is given, its measurements."""
    step = win.step_p50_ns if win is not None else 0.0
    rows = []
    for r in analysis.rows:
        la, c = r.launch, r.cost
        m = {}
        if win is not None:
            p50 = win.p50(la.index)
            m = dict(measured_p50_ns=p50, measured_p90_ns=win.p90(la.index),
                     share=p50 / step if step > 0 else None, device_kernels=tuple(win.names[la.index]),
                     samples=win.steps)
            if hasattr(win, "last"):
                m["measured_last_ns"] = win.last(la.index)
        rows.append(KernelRow(la.index, la.role, la.layer, la.family, la.kernel, float(r.ideal_ns),
                              c.bytes_read, c.bytes_written, c.total_flops(), r.bound_by, **m))
    return tuple(rows)


def nvml_for_window(sampler, win, origin_ns: int, reason: str) -> tuple[float | None, str]:
    """NVML's DRAM GB/s for a window, and how it was taken (or `reason` without a sampler).

    GPM intervals are >= 100 ms and a window lasts ~50 ms, and the first window in a process
    stalls the GPU while CUPTI starts; so the figure is over the steady decode of the second
    before the window (the same ctx within a few hundred steps), else over the window itself."""
    if sampler is None:
        return None, reason
    t0 = (win.t_start_ns - origin_ns) / 1e9
    t1 = (win.t_end_ns - origin_ns) / 1e9
    if win.method == "continuous":  # its range lasts long enough for GPM itself
        return sampler.window_gbps(t0, t1)
    nv, src = sampler.window_gbps(max(NVML_SKIP_S, t0 - NVML_LOOKBACK_S), t0)
    if nv is not None:
        return nv, f"{src}; over the {min(NVML_LOOKBACK_S, t0 - NVML_SKIP_S):.2f} s of decode before the window"
    return sampler.window_gbps(t0, t1)


def roofline(analysis, win, target, nvml: tuple[float | None, str]) -> Roofline | None:
    """The window's step against the roofline of `target`; None when it has no step time."""
    step = win.step_p50_ns
    if step <= 0:
        return None
    a, ksum, (nv, src) = analysis, win.kernel_sum_ns, nvml
    return Roofline(
        ctx_len=win.ctx_len, steps=win.steps, bytes_per_step=a.bytes, predicted_step_ns=float(a.ideal_ns),
        floor_ns=float(a.floor_ns), measured_step_ns=float(step), kernel_sum_ns=float(ksum),
        gap_ns=float(step - ksum), achieved_gbps=a.bytes / step, ceiling_gbps=target.bandwidth / 1e9,
        datasheet_gbps=(target.datasheet_bandwidth or 0.0) / 1e9, nvml_gbps=nv, ceiling_source=target.source,
        nvml_source=src, timing=win.method)


def window_record(win) -> WindowRecord:
    return WindowRecord(win.ctx_len, win.first_step, win.steps, float(win.step_p50_ns),
                        tuple(float(win.p50(i)) for i in range(len(win.launch_ns))))


def freshest(window, continuous):
    """The measurement that ended last, of the latest window and the continuous range (either
    may be None): continuous data, except just after a profile window."""
    if window is None or continuous is None:
        return continuous if window is None else window
    return window if window.t_end_ns > continuous.t_end_ns else continuous


def timeline(win, origin_ns: int) -> tuple[KernelSpan, ...]:
    """The window's kernel spans, timed from the run's start."""
    return tuple(KernelSpan(s, i, name, max(0, start - origin_ns), dur) for s, i, name, start, dur in win.spans)


@dataclass(frozen=True)
class SessionState:
    """A copy of what a Session knows, taken under its lock."""

    meta: RunMeta
    tokens: tuple
    step_ns: tuple[int, ...]
    prompt_tokens: int
    new_tokens: int
    wall_ns: int
    paused_ns: int
    steps: int
    profile_windows: int
    target: object
    window: object  # the latest WindowResult with numbers, or None
    window_error: str | None  # why the latest window has none
    marginal: tuple[dict, ...]
    history: tuple[WindowRecord, ...]
    cuda: bool
    backend: str
    nvml_series: tuple = ()
    nvml_unavailable: dict | None = None  # the sampler's missing metrics; None without a sampler
    nvml_reason: str = ""  # why there is no sampler
    ttft_ns: int = 0
    held_ns: int = 0
    ab: tuple[dict, ...] = ()
    prefill_positions: int = 0
    prefill_ns: int = 0
    no_window: str | None = None  # why no window was taken at all (session_requests.COLD_ONLY)
    stopped: str | None = None  # how the generation ended (Generation's stats.stopped; None: not yet)


class RunRecord:
    """The bounded buffers and counters of one observed run (the Session's lock guards them)."""

    def __init__(self, keep_tokens: int, keep_steps: int, keep_windows: int, keep_history: int):
        self.tokens: deque = deque(maxlen=max(1, keep_tokens))
        self.steps: deque[int] = deque(maxlen=max(1, keep_steps))
        self.windows: deque = deque(maxlen=max(1, keep_windows))  # WindowResult, the latest ones
        self.history: deque[WindowRecord] = deque(maxlen=max(1, keep_history))  # the sweep's points
        self.marginal: deque[dict] = deque(maxlen=64)
        self.ab: deque[dict] = deque(maxlen=16)  # A/B results
        self.window_error: str | None = None
        self.no_window: str | None = None  # see SessionState.no_window
        self.stopped: str | None = None  # see SessionState.stopped
        self.window_after = False  # the session's own window after the generation is timing its steps
        self.n_windows = self.steps_total = self.new_tokens = self.wall_ns = self.paused_ns = 0
        self.ttft_ns = self.held_ns = self.prefill_positions = self.prefill_ns = 0

    def add_window(self, result) -> None:
        if result.ok:
            self.windows.append(result)
            self.history.append(window_record(result))
            self.n_windows += 1
        self.window_error = None if result.ok else result.error

    def freeze(self, meta, prompt_tokens: int, target, cuda: bool, backend: str, sampler,
               nvml_reason: str) -> "SessionState":
        return SessionState(
            meta, tuple(self.tokens), tuple(self.steps), prompt_tokens, self.new_tokens, self.wall_ns,
            self.paused_ns, self.steps_total, self.n_windows, target, self.windows[-1] if self.windows else None,
            self.window_error, tuple(self.marginal), tuple(self.history), cuda, backend,
            sampler.series() if sampler else (), sampler.unavailable() if sampler else None, nvml_reason,
            self.ttft_ns, self.held_ns, tuple(self.ab), self.prefill_positions, self.prefill_ns, self.no_window,
            self.stopped)


def unavailable_panels(st: SessionState, roof: Roofline | None, spans: tuple,
                       timing: TimingInfo | None = None, measured: bool = False) -> dict[str, str]:
    out: dict[str, str] = {}
    why = "no profile window yet" if st.window_error is None else \
        f"no profile window yet (the last one: {st.window_error})"
    if st.no_window is not None and st.window is None:
        why = f"no profile window: {st.no_window}"
    if timing is not None and timing.method == "continuous":
        why = "continuous timing: no step measured yet" if st.no_window is None else \
            f"continuous timing: no step measured: {NO_STEP_AT_EOS if st.stopped == 'eos' else NO_STEP}"
    elif timing is not None and timing.note:
        out["continuous"] = timing.note
    if st.window is None and not measured:
        out["kernels"] = why
    elif st.window_error is not None:
        out["profile"] = f"the latest profile window has no numbers: {st.window_error}"
    if roof is None:
        out["roofline"] = why
    if st.nvml_unavailable is None:
        out["nvml"] = st.nvml_reason
    else:
        out.update(st.nvml_unavailable)
    if not st.cuda:
        out["marginal"] = f"marginal cost needs CUDA graphs; this is {st.backend} on the CPU"
    elif not st.marginal:
        out["marginal"] = "not measured yet"
    if not spans:
        out["timeline"] = why
    return out


def assemble(st: SessionState, rows: tuple[KernelRow, ...], roof: Roofline | None,
             spans: tuple[KernelSpan, ...], timing: TimingInfo | None = None,
             sweep: tuple[WindowRecord, ...] = ()) -> ProfileSnapshot:
    """The snapshot; `sweep`: continuous timing's ctx_len points, merged with the windows'."""
    measured = any(r.measured_p50_ns is not None for r in rows)
    windows = tuple(sorted(st.history + tuple(sweep), key=lambda w: w.first_step)) if sweep else st.history
    return ProfileSnapshot(
        meta=st.meta, tokens=st.tokens, step_ns=st.step_ns, prompt_tokens=st.prompt_tokens,
        new_tokens=st.new_tokens, wall_ns=st.wall_ns, kernels=rows, nvml=st.nvml_series, roofline=roof,
        marginal=st.marginal, unavailable=unavailable_panels(st, roof, spans, timing, measured),
        target=jsonable(st.target.to_dict()), steps=st.steps, paused_ns=st.paused_ns,
        profile_windows=st.profile_windows, timeline=spans, windows=windows, ttft_ns=st.ttft_ns,
        held_ns=st.held_ns, timing=timing, ab=st.ab, prefill_positions=st.prefill_positions,
        prefill_ns=st.prefill_ns)
