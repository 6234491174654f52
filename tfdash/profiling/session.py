"""Session: one live generation, observed. The app, the headless report and the GPU check use it.

    s = Session(engine, prompt, max_new_tokens)        # predictions for every launch at once
    threading.Thread(target=s.run, args=(on_event,)).start()
    s.request_profile(32)                              # a profile window over the next 32 steps
    s.marginal("L13.gate_up")                          # CUDA: doubled-launch A/B (blocks)
    s.ab("tilelang-lateres")                           # a plan variant A/B on the run (blocks)
    Session(..., timing="auto")                        # continuous per-kernel timing when CUPTI works
    snap = s.snapshot()                                # immutable ProfileSnapshot, any thread

The Session holds the threads, the locks and the requests; `run` decodes on the calling thread
and posts the messages of `tfdash.profiling.messages` to `on_event` as things happen (token
batches at most every `batch_s` or 64 tokens, profile windows, NVML samples, marginals, status
lines). Turning its state into a snapshot is `tfdash.profiling.assemble`. Everything it keeps is
in bounded ring buffers (tokens, step times, windows, NVML samples): constant memory over any run.
The work of its parts lives beside it: session_parts (the set-up, and TokenFeed on the decode
thread), session_requests (windows and marginals), session_timing (continuous timing), session_ab.

Per-kernel timing (`timing`): "windows" (profile windows only, on request, every
`profile_every` tokens, or once on its own at `auto_window_at` tokens when none was asked for by
then: the CPU dashboard's first numbers; never over the first, cold step, and right after a run too
short to hold it), "continuous" or "auto" (every step's kernels through
`tfdash.profiling.continuous` when its record source starts, else windows, with the reason in
one status line and in the snapshot's `timing.note`). While continuous timing runs, a requested
window pauses it for its steps (see continuous.timing).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from tfdash.engine.limits import check_generation
from tfdash.errors import TfdashError
from tfdash.profiling import assemble as asm
from tfdash.profiling import probe
from tfdash.profiling import session_requests, session_timing
from tfdash.profiling.analyze import StepAnalysis
from tfdash.profiling.continuous.sources import make_source
from tfdash.profiling.counters import with_counters
from tfdash.profiling.messages import (ABDone, ABProgress, MarginalDone, NvmlUpdate, ProfileDone,  # noqa: F401
                                       SessionEnded, SessionStarted, Status, TokenBatch)
from tfdash.profiling.meta import collect_meta
from tfdash.profiling.nvml import Nvml
from tfdash.profiling.nvml_sampler import NvmlSampler
from tfdash.profiling.pricing import Pricing
from tfdash.profiling.snapshot import ProfileSnapshot, TimingInfo, TokenRecord  # noqa: F401
from tfdash.profiling.session_parts import TOKEN_BATCH, TokenFeed, prepare, start_observers  # noqa: F401
from tfdash.profiling.timeline import Timer, WindowResult

log = logging.getLogger("tfdash.session")


class Session:
    def __init__(self, engine, prompt: str, max_new_tokens: int, *, keep_tokens: int = 20000,
                 keep_steps: int = 100000, nvml: bool = True, target=None, probe_bandwidth: bool = True,
                 profile_every: int = 0, profile_steps: int = 32, ignore_eos: bool = False,
                 batch_s: float = 0.05, nvml_interval: float = 0.25, keep_samples: int = 10000,
                 keep_windows: int = 16, keep_history: int = 64, nvml_lib: Nvml | None = None,
                 depth: int | None = None, prepare_profiler: bool = False, timing: str = "windows",
                 record_source=None, continuous_steps: int = 256, sweep_bucket: int = 128, on_steps=None,
                 auto_window_at: int = 0):
        self.engine, self.plan, self.runtime = engine, engine.plan, engine.runtime
        self.prompt_ids = engine.encode(prompt) if isinstance(prompt, str) else list(prompt)
        self.max_new_tokens = max_new_tokens
        check_generation(self.plan.config, self.plan.capacity, len(self.prompt_ids), max_new_tokens)
        self.ignore_eos, self.depth, self.batch_s = ignore_eos, depth, batch_s
        self.profile_every, self.profile_steps = max(0, profile_every), max(1, profile_steps)
        self.auto_window_at, self.auto_window = max(0, auto_window_at), False  # see session_requests.auto_window
        # CUDA: learn the kernel map (and start CUPTI, seconds the first time in a process) before
        # decoding instead of inside the first profile window, where it would stall the decode.
        self.prepare_profiler = prepare_profiler
        self.keep = max(1, keep_tokens, keep_steps)  # what the generation itself remembers
        self.rec = asm.RunRecord(keep_tokens, keep_steps, keep_windows, keep_history)
        self._lock = threading.RLock()  # the record and the state below (short holds only)
        self._rt_lock = threading.Lock()  # the runtime: held by run, profile_now, idle marginal
        self._snap_lock = threading.Lock()  # one snapshot builder at a time (see snapshot)
        self._state, self._gen, self._held = "idle", None, False  # -> "running" -> "done"; paused
        self._pending: list = []  # windows requested before the generation exists
        self._outstanding: list = []  # windows requested and not done yet
        self._stop = threading.Event()
        self._emit: Callable[[object], None] = lambda m: None
        self._run_thread: int | None = None
        self._origin_ns = time.perf_counter_ns()
        self._version, self._snap = 0, None  # the snapshot cached for a version of the state
        self._counters: dict = {}  # launch index -> Counters (tfdash.profiling.counters), added by the app
        self._probe = probe_bandwidth and target is None
        self.pricing = Pricing(self.plan, target if target is not None else probe.default_target(engine.device))
        self.analysis: Callable[[int], StepAnalysis] = self.pricing.analysis  # the predictions at a ctx_len
        self.timer = Timer(self.runtime)
        self.meta = collect_meta(engine, prompt if isinstance(prompt, str) else "")
        self._nvml = (nvml, nvml_lib, nvml_interval, keep_samples)
        self.sampler: NvmlSampler | None = None
        self._nvml_reason = "NVML sampling is off (nvml=False)" if not nvml else "NVML not started yet"
        if timing not in session_timing.MODES:
            raise TfdashError(f"timing {timing!r}: choose windows, continuous or auto")
        self.timing_mode, self._make_source = timing, record_source or make_source
        self._cont_kw = dict(keep=continuous_steps, bucket=sweep_bucket, on_steps=on_steps)  # on_steps(Steps)
        self.continuous = None  # ContinuousTiming while it runs (and after, for the snapshot)
        self.timing_note = ""  # why not continuous, when it was asked for

    def _ctx_now(self) -> int:
        return max(0, len(self.prompt_ids) - 1 + self.rec.new_tokens)

    def _roofline(self, win: WindowResult):
        return self.pricing.roofline(win, self.sampler, self._origin_ns, self._nvml_reason)

    # -- the run -------------------------------------------------------------------------------
    def _post(self, msg) -> None:
        try:
            self._emit(msg)
        except Exception:
            log.exception("on_event failed on %s", type(msg).__name__)

    def _touch(self, change: Callable[[], object] | None = None) -> None:
        """A change to the state (made under the lock): the next snapshot is a new one."""
        with self._lock:
            if change is not None:
                change()
            self._version += 1

    def _on_window(self, result: WindowResult) -> None:
        self._touch(lambda: self.rec.add_window(result))
        win = result if result.ok else None
        rows = self.pricing.rows(win, result.ctx_len if win else self._ctx_now())
        self._post(ProfileDone(self.rec.n_windows, rows, self._roofline(win) if win else None, result.error))

    def run(self, on_event: Callable[[object], None] | None = None, stop: threading.Event | None = None) -> None:
        """Generate, observing, until done, EOS, `stop` is set or `Session.stop()` is called.
        Blocking: call it from a worker thread. Exceptions from the engine are posted as
        SessionEnded(error=...) and then raised."""
        with self._lock:
            if self._state != "idle":
                raise TfdashError("a Session runs once; make a new one")
            self._state, self._emit = "running", on_event or (lambda m: None)
            self._run_thread, self._origin_ns = threading.get_ident(), time.perf_counter_ns()
        ended = SessionEnded("error", 0, 0, 0.0, "not started")
        try:
            self._post(SessionStarted(self.meta, asm.jsonable(self.pricing.target.to_dict())))
            start_observers(self)
            with self._rt_lock:
                ended = self._decode(stop)
        except BaseException as e:
            ended = SessionEnded("error", self.rec.new_tokens, self.rec.wall_ns, 0.0,
                                 f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            raise
        finally:
            if self.sampler is not None:
                self.sampler.stop()
            session_timing.stop_timing(self)
            with self._lock:
                for w in self._pending:
                    w.cancel("the session ended")
                self._pending.clear()
                self._state, self._gen = "done", None
                self._version += 1
            self._post(ended)

    @property
    def timing_method(self) -> str:
        """"continuous" when continuous timing measured the steps, else "windows"."""
        return session_timing.method(self.continuous)

    def timing_info(self) -> TimingInfo:
        """The timing method in effect and its counts, as the snapshot carries them."""
        return session_timing.timing_info(self.continuous, self.timing_note, self.auto_window)

    def _decode(self, stop: threading.Event | None) -> SessionEnded:
        prepare(self.runtime, self.timer, self.prepare_profiler, self._post, self._probe)
        session_timing.start_timing(self)
        gen = self.engine.generate(self.prompt_ids, self.max_new_tokens, stop=self._stop, ignore_eos=self.ignore_eos,
                                   depth=self.depth, keep=self.keep)
        with self._lock:
            self._gen = gen
            gen.pause(self._held)
            for w in self._pending:
                gen.intercept(w)
            self._pending.clear()
        return TokenFeed(self, gen.stats).drain(gen, stop)

    # -- requests from other threads ---------------------------------------------------------
    def request_profile(self, steps: int = 32) -> bool:
        """Profile the next `steps` steps (thread-safe). False when the session has ended, or
        when two windows are already waiting (requests do not pile up)."""
        return session_requests.request_window(self, steps)

    def profile_now(self, steps: int = 32, ctx_len: int | None = None) -> WindowResult:
        """A window outside any generation (before or after `run`), at ctx_len (default: where
        the run left off, kept inside the cache). Not while running."""
        return session_requests.window_now(self, steps, ctx_len)

    def marginal(self, what: str, **kw) -> dict:
        """Marginal in-graph cost of a role ("L3.gate_up"), op, kernel or family (CUDA only; a
        dict with "unavailable" and the reason otherwise). Blocks until measured; a set `cancel`
        (a threading.Event in `kw`, as measure takes it) ends it after the round in progress."""
        return session_requests.run_marginal(self, what, **kw)

    def ab(self, what: str, windows: int | None = None, steps: int | None = None, profile_steps: int | None = None,
           progress=None, cancel: threading.Event | None = None, timeout: float = 600, rerun_key: str | None = None) -> dict:
        """A/B of the plan variant `what` against the running plan (tfdash.profiling.session_ab: inside the live
        generation, or after it ended from where it left off). Blocks; `progress(ABProgress)` hears how it goes; a set
        `cancel`, or `timeout` seconds after its first window, stops it after the window in progress. A dict with
        "unavailable" and the one-line reason when it cannot run (naming `rerun_key`, the dashboard's re-run key)."""
        from tfdash.profiling.session_ab import run_ab

        return run_ab(self, what, windows, steps, profile_steps, progress, cancel, timeout, rerun_key)

    def stop(self) -> None:
        """End the run after the steps in flight (thread-safe)."""
        self._stop.set()

    def pause(self, paused: bool = True) -> None:
        """Hold the decode at its next step boundary, or resume it (see Generation.pause)."""
        with self._lock:
            self._held = paused
            if self._gen is not None:
                self._gen.pause(paused)

    def add_counters(self, counters: dict) -> None:
        """Nsight Compute's counters of some launches (measured by a child process, not on this
        runtime): the next snapshots carry them on their kernel rows."""
        self._touch(lambda: self._counters.update(counters))

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
                counters = dict(self._counters)
                st = self.rec.freeze(self.meta, len(self.prompt_ids), self.pricing.target, self.runtime.cuda,
                                     self.engine.backend, self.sampler, self._nvml_reason)
            cont = self.continuous.view() if self.timing_method == "continuous" else None
            win = asm.freshest(st.window, cont)
            rows = with_counters(self.pricing.rows(win, win.ctx_len if win else self._ctx_now()), counters)
            snap = asm.assemble(st, rows, self._roofline(win) if win else None,
                                self.pricing.spans(win, self._origin_ns), self.timing_info(),
                                cont.sweep if cont is not None else ())
            with self._lock:
                self._snap = (version, snap)
            return snap

    @property
    def windows(self) -> tuple[WindowResult, ...]:
        with self._lock:
            return tuple(self.rec.windows)
