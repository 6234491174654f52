"""Session: one live generation, observed. The app, the headless report and the GPU check use it.

    s = Session(engine, prompt, max_new_tokens)        # predictions for every launch at once
    threading.Thread(target=s.run, args=(on_event,)).start()
    s.request_profile(32)                              # a profile window over the next 32 steps
    s.marginal("L13.gate_up")                          # CUDA: doubled-launch A/B (blocks)
    snap = s.snapshot()                                # immutable ProfileSnapshot, any thread

`run` decodes on the calling thread and posts small frozen messages (below) to `on_event` as
things happen: token batches (at most every `batch_s`, or 64 tokens), profile-window results,
NVML samples, marginal results, status lines. Everything the session keeps is in bounded ring
buffers (tokens, step times, windows, NVML samples), so a 100k-token run uses constant memory.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, ClassVar

from tfdash.engine.decode import Generation
from tfdash.engine.plan import check_generation
from tfdash.errors import TfdashError
from tfdash.profiling import marginal as marginal_mod
from tfdash.profiling import probe
from tfdash.profiling.analyze import StepAnalysis, analyze
from tfdash.profiling.meta import collect_meta
from tfdash.profiling.nvml import Nvml, NvmlSample, NvmlSampler
from tfdash.profiling.snapshot import (KernelRow, KernelSpan, ProfileSnapshot, Roofline, RunMeta, TokenRecord,
                                       WindowRecord)
from tfdash.profiling.timeline import Timer, WindowResult, profile_steps
from tfdash.settings import SETTINGS

log = logging.getLogger("tfdash.session")

TOKEN_BATCH = 64  # tokens per TokenBatch message at most
NVML_LOOKBACK_S = 1.0  # a window's NVML figure: GPM over this much decode before it
NVML_SKIP_S = 0.1  # ... leaving out the run's first moments (set-up, the first steps)


# -- messages (posted to on_event; `kind` names them for coalescing) ---------------------------
@dataclass(frozen=True)
class SessionStarted:
    kind: ClassVar[str] = "started"
    meta: RunMeta
    target: dict


@dataclass(frozen=True)
class Status:
    kind: ClassVar[str] = "status"
    text: str


@dataclass(frozen=True)
class TokenBatch:
    kind: ClassVar[str] = "tokens"
    tokens: tuple[TokenRecord, ...]
    step_ns: tuple[int, ...]  # the steps completed since the previous batch (prompt walk included)
    new_tokens: int
    wall_ns: int
    tok_per_s: float


@dataclass(frozen=True)
class ProfileDone:
    kind: ClassVar[str] = "profile"
    window: int  # windows completed so far, this one included
    rows: tuple[KernelRow, ...]
    roofline: Roofline | None
    error: str | None  # why the window has no numbers (the rows keep their predictions)


@dataclass(frozen=True)
class NvmlUpdate:
    kind: ClassVar[str] = "nvml"
    sample: NvmlSample


@dataclass(frozen=True)
class MarginalDone:
    kind: ClassVar[str] = "marginal"
    result: dict


@dataclass(frozen=True)
class SessionEnded:
    kind: ClassVar[str] = "ended"
    stopped: str  # "" (all tokens), "eos", "cancelled", "error"
    new_tokens: int
    wall_ns: int
    tok_per_s: float
    error: str | None = None


def _jsonable(d):
    return json.loads(json.dumps(d))


class Session:
    def __init__(self, engine, prompt: str, max_new_tokens: int, *, keep_tokens: int = 20000,
                 keep_steps: int = 100000, nvml: bool = True, target=None, probe_bandwidth: bool = True,
                 profile_every: int = 0, profile_steps: int = 32, ignore_eos: bool = False,
                 batch_s: float = 0.05, nvml_interval: float = 0.25, keep_samples: int = 10000,
                 keep_windows: int = 16, keep_history: int = 64, nvml_lib: Nvml | None = None, depth: int | None = None,
                 prepare_profiler: bool = False):
        self.engine = engine
        self.plan = engine.plan
        self.runtime = engine.runtime
        self.prompt = prompt
        self.prompt_ids = engine.encode(prompt) if isinstance(prompt, str) else list(prompt)
        self.max_new_tokens = max_new_tokens
        check_generation(self.plan.config, self.plan.capacity, len(self.prompt_ids), max_new_tokens)
        self.ignore_eos = ignore_eos
        self.profile_every, self.profile_steps = max(0, profile_every), max(1, profile_steps)
        self.batch_s = batch_s
        self.depth = depth or (SETTINGS.depth if self.runtime.cuda else 2)  # CPU steps are synchronous anyway
        # CUDA: learn the kernel map (and start CUPTI, seconds the first time in a process) before
        # decoding instead of inside the first profile window, where it would stall the decode.
        self.prepare_profiler = prepare_profiler
        self.keep_tokens, self.keep_steps = max(1, keep_tokens), max(1, keep_steps)

        self._lock = threading.RLock()  # the session's state (short holds only)
        self._rt_lock = threading.Lock()  # the runtime: held by run, profile_now, idle marginal
        self._snap_lock = threading.Lock()  # one snapshot builder at a time (see snapshot)
        self._tokens: deque[TokenRecord] = deque(maxlen=self.keep_tokens)
        self._steps: deque[int] = deque(maxlen=self.keep_steps)
        self._windows: deque[WindowResult] = deque(maxlen=max(1, keep_windows))
        self._history: deque[WindowRecord] = deque(maxlen=max(1, keep_history))  # the sweep's points
        self._window_error: str | None = None
        self._n_windows = 0
        self._marginal: deque[dict] = deque(maxlen=64)
        self._steps_total = self._new_tokens = self._wall_ns = self._paused_ns = 0
        self._state = "idle"  # -> "running" -> "done"
        self._gen = None
        self._pending: list = []  # windows requested before the generation exists
        self._outstanding: list = []  # windows requested and not done yet
        self._stop = threading.Event()
        self._emit: Callable[[object], None] = lambda m: None
        self._run_thread: int | None = None
        self._origin_ns = time.perf_counter_ns()
        self._version = 0
        self._snap: tuple[int, ProfileSnapshot] | None = None
        self._analyses: dict[int, StepAnalysis] = {}
        self._rows_cache: tuple | None = None  # (key, window, rows)
        self._timeline_cache: tuple | None = None  # (window, spans)

        self._target_given = target is not None
        self._probe = probe_bandwidth and target is None
        self.target = target if target is not None else probe.default_target(engine.device)
        self.timer = Timer(self.runtime)
        self.meta = collect_meta(engine, prompt if isinstance(prompt, str) else "")

        self._nvml_on, self._nvml_lib = nvml, nvml_lib
        self._nvml_interval, self._keep_samples = nvml_interval, keep_samples
        self.sampler: NvmlSampler | None = None
        self._nvml_reason = "NVML sampling is off (nvml=False)" if not nvml else "NVML not started yet"

    # -- predictions ---------------------------------------------------------------------------
    def analysis(self, ctx_len: int) -> StepAnalysis:
        ctx = max(0, min(int(ctx_len), self.plan.capacity - 1, self.plan.config.max_position_embeddings - 1))
        with self._lock:
            a, target = self._analyses.get(ctx), self.target
        if a is None or a.target is not target:
            a = analyze(self.plan, target, ctx)  # outside the lock the decode thread takes per token
            with self._lock:
                if len(self._analyses) > 64:
                    self._analyses.clear()
                self._analyses[ctx] = a
        return a

    def _ctx_now(self) -> int:
        return max(0, len(self.prompt_ids) - 1 + self._new_tokens)

    def _rows(self, win: WindowResult | None, ctx: int) -> tuple[KernelRow, ...]:
        key = (id(win), ctx, id(self.target))
        cached = self._rows_cache
        if cached is not None and cached[0] == key and cached[1] is win:
            return cached[2]
        rows = self._build_rows(win, ctx)
        self._rows_cache = (key, win, rows)
        return rows

    def _build_rows(self, win: WindowResult | None, ctx: int) -> tuple[KernelRow, ...]:
        a = self.analysis(ctx)
        step = win.step_p50_ns if win is not None else 0.0
        rows = []
        for r in a.rows:
            la, c = r.launch, r.cost
            m = {}
            if win is not None:
                p50 = win.p50(la.index)
                m = dict(measured_p50_ns=p50, measured_p90_ns=win.p90(la.index),
                         share=p50 / step if step > 0 else None, device_kernels=tuple(win.names[la.index]),
                         samples=win.steps)
            rows.append(KernelRow(la.index, la.role, la.layer, la.family, la.kernel, float(r.ideal_ns),
                                  c.bytes_read, c.bytes_written, c.total_flops(), r.bound_by, **m))
        return tuple(rows)

    def _roofline(self, win: WindowResult) -> Roofline | None:
        step = win.step_p50_ns
        if step <= 0:
            return None
        a = self.analysis(win.ctx_len)
        ksum = win.kernel_sum_ns
        if self.sampler is not None:
            # GPM intervals are >= 100 ms and a window lasts ~50 ms, and the first window in a
            # process stalls the GPU while CUPTI starts; so NVML's figure is over the steady decode
            # of the second before the window (same ctx within ~700 steps), else over the window.
            t0 = (win.t_start_ns - self._origin_ns) / 1e9
            t1 = (win.t_end_ns - self._origin_ns) / 1e9
            nv, src = self.sampler.window_gbps(max(NVML_SKIP_S, t0 - NVML_LOOKBACK_S), t0)
            if nv is not None:
                src = f"{src}; over the {min(NVML_LOOKBACK_S, t0 - NVML_SKIP_S):.2f} s of decode before the window"
            else:
                nv, src = self.sampler.window_gbps(t0, t1)
        else:
            nv, src = None, self._nvml_reason
        t = self.target
        return Roofline(
            ctx_len=win.ctx_len, steps=win.steps, bytes_per_step=a.bytes, predicted_step_ns=float(a.ideal_ns),
            floor_ns=float(a.floor_ns), measured_step_ns=float(step), kernel_sum_ns=float(ksum),
            gap_ns=float(step - ksum), achieved_gbps=a.bytes / step, ceiling_gbps=t.bandwidth / 1e9,
            datasheet_gbps=(t.datasheet_bandwidth or 0.0) / 1e9, nvml_gbps=nv, ceiling_source=t.source,
            nvml_source=src, timing=win.method)

    # -- the run -------------------------------------------------------------------------------
    def _post(self, msg) -> None:
        try:
            self._emit(msg)
        except Exception:
            log.exception("on_event failed on %s", type(msg).__name__)

    def _touch(self) -> None:
        self._version += 1

    def _start_nvml(self) -> None:
        if not self._nvml_on:
            return
        nv = self._nvml_lib or Nvml()
        if not self.runtime.cuda:
            self._nvml_reason = (nv.init().reason if not nv.available else
                                 "the engine runs on the CPU; NVML watches GPUs")
            return
        index = self.runtime.device.index or 0

        def on_sample(s: NvmlSample):
            with self._lock:
                self._touch()
            self._post(NvmlUpdate(s))

        self.sampler = NvmlSampler(index, self._nvml_interval, self._keep_samples, nv, on_sample,
                                   origin=self._origin_ns / 1e9)
        if not self.sampler.available:
            self._nvml_reason = self.sampler.unavailable().get("nvml", "NVML unavailable")
            self.sampler = None
            return
        self.sampler.start()

    def _on_window(self, result: WindowResult) -> None:
        with self._lock:
            if result.ok:
                self._windows.append(result)
                self._history.append(WindowRecord(
                    result.ctx_len, result.first_step, result.steps, float(result.step_p50_ns),
                    tuple(float(result.p50(i)) for i in range(len(result.launch_ns)))))
                self._n_windows += 1
                self._window_error = None
            else:
                self._window_error = result.error
            self._touch()
            n = self._n_windows
        win = result if result.ok else None
        rows = self._rows(win, result.ctx_len if win else self._ctx_now())
        self._post(ProfileDone(n, rows, self._roofline(win) if win else None, result.error))

    def run(self, on_event: Callable[[object], None] | None = None, stop: threading.Event | None = None) -> None:
        """Generate, observing, until done, EOS, `stop` is set or `Session.stop()` is called.
        Blocking: call it from a worker thread. Exceptions from the engine are posted as
        SessionEnded(error=...) and then raised."""
        with self._lock:
            if self._state != "idle":
                raise TfdashError("a Session runs once; make a new one")
            self._state = "running"
            self._emit = on_event or (lambda m: None)
            self._run_thread = threading.get_ident()
            self._origin_ns = time.perf_counter_ns()
        ended = SessionEnded("error", 0, 0, 0.0, "not started")
        try:
            self._post(SessionStarted(self.meta, _jsonable(self.target.to_dict())))
            self._start_nvml()
            if self._probe:
                self._post(Status("probing memory bandwidth (cached per device)"))
                self._set_target(probe.measured_target(self.engine.device))
            with self._rt_lock:
                captures = self.runtime.needs_capture
                if captures:
                    self._post(Status("capturing the step's CUDA graph"))
                    self.runtime.ensure_captured()  # before the generation resets the state
                if self.prepare_profiler and self.timer.method == "cupti" and not self.timer.prepared:
                    self._post(Status("starting the profiler and learning the kernel map (once per process)"))
                    self.timer.prepare()
                if self._probe or captures or self.timer.method == "cupti":
                    self._post(Status(""))  # the set-up is over: clear the line
                ended = self._decode(stop)
        except BaseException as e:
            ended = SessionEnded("error", self._new_tokens, self._wall_ns, 0.0,
                                 f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            raise
        finally:
            if self.sampler is not None:
                self.sampler.stop()
            with self._lock:
                self._state = "done"
                self._gen = None
                for w in self._pending:
                    w.cancel("the session ended")
                self._pending.clear()
                self._touch()
            self._post(ended)

    def _set_target(self, target) -> None:
        with self._lock:
            self.target = target
            self._analyses.clear()
            self._touch()

    def _decode(self, stop: threading.Event | None) -> SessionEnded:
        eng = self.engine
        eos = () if (self.ignore_eos or eng.random_weights) else eng.config.eos_token_ids  # as Engine.generate
        gen = Generation(eng.runtime, self.prompt_ids, self.max_new_tokens, eng.tokenizer, eos_ids=eos,
                         depth=self.depth, stop=self._stop, keep=max(self.keep_steps, self.keep_tokens))
        with self._lock:
            self._gen = gen
            for w in self._pending:
                gen.intercept(w)
            self._pending.clear()
        stats = gen.stats
        batch: list[TokenRecord] = []
        batch_steps: list[int] = []
        last = time.perf_counter()
        next_window = self.profile_every or None

        def flush():
            nonlocal last
            with self._lock:
                self._wall_ns, self._paused_ns = stats.wall_ns, stats.paused_ns
                self._touch()
            self._post(TokenBatch(tuple(batch), tuple(batch_steps), self._new_tokens, stats.wall_ns,
                                  stats.tok_per_s))
            batch.clear()
            batch_steps.clear()
            last = time.perf_counter()

        for ev in gen:
            rec = TokenRecord(ev.index, ev.token_id, ev.text, ev.elapsed_ns)
            fresh = self._take_steps(stats)
            with self._lock:
                self._tokens.append(rec)
                self._new_tokens = stats.new_tokens
                self._steps.extend(fresh)
            batch.append(rec)
            batch_steps.extend(fresh)
            if next_window is not None and stats.new_tokens >= next_window:
                self.request_profile(self.profile_steps)
                next_window += self.profile_every
            if stop is not None and stop.is_set():
                self._stop.set()
            if len(batch) >= TOKEN_BATCH or time.perf_counter() - last >= self.batch_s:
                flush()
        fresh = self._take_steps(stats)
        with self._lock:
            self._steps.extend(fresh)
        batch_steps.extend(fresh)
        flush()
        return SessionEnded(stats.stopped, stats.new_tokens, stats.wall_ns, stats.tok_per_s)

    def _take_steps(self, stats) -> list[int]:
        """Step times the generation recorded since the last call (read on the decode thread)."""
        n = stats.steps - self._steps_total
        self._steps_total = stats.steps
        if n <= 0:
            return []
        dq = stats.step_ns
        n = min(n, len(dq))
        return [dq[i] for i in range(len(dq) - n, len(dq))]

    # -- requests from other threads ---------------------------------------------------------
    def request_profile(self, steps: int = 32) -> bool:
        """Profile the next `steps` steps (thread-safe). False when the session has ended, or
        when two windows are already waiting (requests do not pile up)."""
        with self._lock:
            if self._state == "done":
                return False
            self._outstanding = [w for w in self._outstanding if not w.done.is_set()]
            if len(self._outstanding) >= 2:
                return False
            w = self.timer.window(max(1, int(steps)), on_done=self._on_window)
            self._outstanding.append(w)
            if self._gen is not None:
                self._gen.intercept(w)
            else:
                self._pending.append(w)
            return True

    def profile_now(self, steps: int = 32, ctx_len: int | None = None) -> WindowResult:
        """A window outside any generation (before or after `run`), at ctx_len (default: where
        the run left off, kept inside the cache). Not while running."""
        with self._rt_lock:
            if self._state == "running":
                raise TfdashError("profile_now: the session is running; use request_profile")
            rt = self.runtime
            cap = self.plan.capacity
            steps = max(1, min(int(steps), cap - 1))
            ctx = self._ctx_now() if ctx_len is None else int(ctx_len)
            ctx = max(0, min(ctx, cap - 1 - steps))
            rt.set_position(ctx)
            result = profile_steps(rt, steps, self.timer, first_step=ctx)
        self._on_window(result)
        return result

    def marginal(self, what: str, **kw) -> dict:
        """Marginal in-graph cost of a role ("L3.gate_up"), op, kernel or family (CUDA only; a
        dict with "unavailable" and the reason otherwise). Blocks until measured."""
        if not self.runtime.cuda:
            return marginal_mod.unavailable(what, f"marginal cost needs CUDA graphs; this is "
                                                  f"{self.engine.backend} on the CPU")
        if threading.get_ident() == self._run_thread and self._state == "running":
            return marginal_mod.unavailable(what, "Session.marginal blocks: call it from another thread "
                                                  "than the one running Session.run")
        timeout = kw.pop("timeout", 600)
        with self._lock:
            gen = self._gen if self._state == "running" else None
            task = marginal_mod.MarginalTask(what, **kw)
            if gen is not None:
                gen.intercept(task)
        if gen is not None:
            if not task.done.wait(timeout):
                return marginal_mod.unavailable(what, "timed out waiting for a step boundary")
            result = task.result
        else:
            with self._rt_lock:
                task.start(self.runtime, 0, 0)  # catches and reports its own failures
                result = task.result
        result = _jsonable(result or marginal_mod.unavailable(what, "no result"))
        if "unavailable" not in result:
            with self._lock:
                self._marginal.append(result)
                self._touch()
        self._post(MarginalDone(result))
        return result

    def stop(self) -> None:
        """End the run after the steps in flight (thread-safe)."""
        self._stop.set()

    # -- snapshots -------------------------------------------------------------------------------
    def snapshot(self) -> ProfileSnapshot:
        """The session now, frozen (thread-safe; cached between changes).

        The decode thread takes the state lock once a token, so a snapshot holds it only to copy
        the state; the kernel rows, the roofline and the timeline are built outside it (one
        builder at a time), so drawing the dashboard never stalls the decode loop."""
        with self._snap_lock:
            with self._lock:
                if self._snap is not None and self._snap[0] == self._version:
                    return self._snap[1]
                version = self._version
                win = self._windows[-1] if self._windows else None
                ctx = win.ctx_len if win else self._ctx_now()
                window_error, marginal = self._window_error, tuple(self._marginal)
                tokens, steps = tuple(self._tokens), tuple(self._steps)
                new_tokens, wall_ns, paused_ns = self._new_tokens, self._wall_ns, self._paused_ns
                steps_total, n_windows, target = self._steps_total, self._n_windows, self.target
                history = tuple(self._history)
            rows = self._rows(win, ctx)
            roof = self._roofline(win) if win else None
            unavailable: dict[str, str] = {}
            why = "no profile window yet" if window_error is None else \
                f"no profile window yet (the last one: {window_error})"
            if win is None:
                unavailable["kernels"] = why
            elif window_error is not None:
                unavailable["profile"] = f"the latest profile window has no numbers: {window_error}"
            if roof is None:
                unavailable["roofline"] = why
            sampler = self.sampler
            if sampler is None:
                unavailable["nvml"] = self._nvml_reason
            else:
                unavailable.update(sampler.unavailable())
            if not self.runtime.cuda:
                unavailable["marginal"] = f"marginal cost needs CUDA graphs; this is {self.engine.backend} on the CPU"
            elif not marginal:
                unavailable["marginal"] = "not measured yet"
            timeline = ()
            if win is not None:
                if self._timeline_cache is None or self._timeline_cache[0] is not win:
                    self._timeline_cache = (win, tuple(KernelSpan(s, i, name, max(0, start - self._origin_ns), dur)
                                                       for s, i, name, start, dur in win.spans))
                timeline = self._timeline_cache[1]
            if not timeline:
                unavailable["timeline"] = why
            snap = ProfileSnapshot(
                meta=self.meta, tokens=tokens, step_ns=steps,
                prompt_tokens=len(self.prompt_ids), new_tokens=new_tokens, wall_ns=wall_ns,
                kernels=rows, nvml=sampler.series() if sampler else (), roofline=roof,
                marginal=marginal, unavailable=unavailable,
                target=_jsonable(target.to_dict()), steps=steps_total, paused_ns=paused_ns,
                profile_windows=n_windows, timeline=timeline, windows=history)
            with self._lock:
                self._snap = (version, snap)
            return snap

    @property
    def windows(self) -> tuple[WindowResult, ...]:
        with self._lock:
            return tuple(self._windows)
