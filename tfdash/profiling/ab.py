"""Live A/B of a plan variant: the running plan (A) and a variant of it (B) take turns on one
generation, a window of steps at a time, several times each (A B A B ...), in one process.

The variant's runtime is built over the running one's weights, KV cache and step state
(`Runtime.variant(plan, share_state=True)`), so a B step is simply the generation's next step
computed by the other plan: the token stream goes on through both. At the start of every turn
both sides step once from the same state (held, then put back) and their next tokens are
compared, so "the variant computes the same function" is checked, not assumed.

Per turn the first step is left out (it follows the pause of the switch) and the rest give the
turn's median step time (a host stall is not the plan's); a side's tok/s is the median over its turns, with the range. The verdict
is the median of the paired differences (turn i of B against turn i of A) with half their
interquartile range as the spread, like the marginal cost's. Then one profile window per side
(CUPTI on CUDA, the host clock on CPU) gives per-launch times, aligned by role and summed by op.

    VARIANTS                        name -> Variant: `tfdash bench`'s plan variants, and the PDL one
    resolve("tilelang-lateres")     a Variant (also a GEMV spec as bench --gemv spells it)
    build(runtime, variant)         the variant's runtime beside the running one
    ABRun(live, var, variant, ...)  the turns and profile windows, as `Generation.intercept` windows
    summarize(...)                  the result dict the snapshot keeps (`ProfileSnapshot.ab`):
                                    tfdash.profiling.ab_result's; its lines of text are ab_table's
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from tfdash.errors import TfdashError, UsageError
from tfdash.profiling.ab_result import summarize
from tfdash.profiling.variants import refusal, variant_options

WINDOWS, STEPS, PROFILE_STEPS = 6, 64, 32  # turns per side, steps per turn, profile steps per side


@dataclass(frozen=True)
class Variant:
    name: str
    options: dict = field(default_factory=dict)  # build_plan options over the running plan's
    runtime: dict = field(default_factory=dict)  # runtime options (pdl)

    @property
    def about(self) -> str:
        """The options it sets, flat: "early_residual=False", "gemv_overrides.down.seg=8"."""
        def flat(prefix, v):
            if isinstance(v, dict):
                return [x for k, sub in v.items() for x in flat(f"{prefix}.{k}", sub)]
            return [f"{prefix}={v}"]

        return ", ".join(x for k, v in {**self.options, **self.runtime}.items() for x in flat(k, v))


def _variants() -> dict[str, Variant]:
    from tfdash.profiling.variants import PLAN_VARIANTS

    out = {name: Variant(name, dict(opts)) for name, opts in PLAN_VARIANTS.items()}
    out["tilelang-nopdl"] = Variant("tilelang-nopdl", {}, {"pdl": False})
    return out


VARIANTS = _variants()


def resolve(name: str, flag: str = "--ab") -> Variant:
    """A variant by its `tfdash bench` name, or a GEMV launch-settings spec ("down:seg=8"); a bad
    spec's error names `flag`."""
    name = name.strip()
    if name in VARIANTS:
        return VARIANTS[name]
    if ":" in name:
        from tfdash.profiling.variants import gemv_variant

        label, options = gemv_variant(name.removeprefix("tilelang[").removesuffix("]"), flag)
        return Variant(label, options)
    raise TfdashError(f"no plan variant {name!r} (known: {', '.join(VARIANTS)}, or a GEMV spec OP:KEY=V)")


def check_variant(v: Variant, args) -> None:
    """What is wrong with `--ab` `v` on the engine the command line `args` asks for, said before any
    weight is loaded. First a torch engine's refusal (`refusal`, TfdashError): a variant it cannot
    run or that cannot differ there makes the whole request pointless, so it is said before any
    mistake in the variant's settings, which fixing would only lead to it. Then a GEMV setting of
    `v` past its weight's shape: a mistake of --ab, said in one line naming its value, as the parser
    says its own mistakes (UsageError, as bench says --gemv's). A tilelang engine's refusal is said
    once it is loaded: it may yet fall back to the torch-graph peer, and its PDL is the runtime's.
    The model's own errors (a checkpoint without config.json) stay its own."""
    from tfdash.engine import choose_engine, plan_for

    choice = choose_engine(args.ckpt, args.model, args.device, args.dtype, args.backend, args.seed)
    plan = plan_for(choice.config, choice.dtype, 64, choice.backend)  # shapes and options need no real capacity
    if choice.backend != "tilelang-graph":
        why = refusal(v, choice.backend, dict(plan.meta["options"]), device=choice.device.partition(":")[0])
        if why:
            raise TfdashError(f"--ab {why.line}")
    if "gemv_overrides" in v.options:
        try:
            variant_plan(plan, v)
        except TfdashError as e:
            raise UsageError(f"--ab {args.ab.strip()!r}: {e}", "tfdash") from None


def check_cache(name: str, plan) -> None:
    """The A/B's windows fit the run's KV cache, on the generation or after it (from a position
    that leaves them room); TfdashError otherwise. Checked before the run: a cache too small for
    them (a checkpoint of 256 positions) was said only after the whole generation, exit code 0."""
    need = 2 * WINDOWS * STEPS + 2 * PROFILE_STEPS + 2  # ABRun.steps_needed and the two warm-up steps
    if plan.capacity < need:
        raise TfdashError(f"--ab {name}: its windows ({WINDOWS} of {STEPS} steps a side, and a profile window of "
                          f"{PROFILE_STEPS} a side) need {need} positions of the KV cache, which holds "
                          f"{plan.capacity} (max_position_embeddings={plan.config.max_position_embeddings})")


def variant_plan(plan, v: Variant):
    """The running plan with the variant's options over its own, and those options."""
    from tfdash.engine.plan import build_plan

    options = variant_options(dict(plan.meta.get("options") or {}), v)
    return build_plan(plan.config, **options), options


def build(runtime, v: Variant, progress=None):
    """The variant's runtime over the running one's weights, cache and state; TfdashError (one
    line) when `refusal` says no, or it cannot be built or would not share the generation's state."""
    from tfdash.engine.runtime import STEP_STATE

    pdl = getattr(runtime, "pdl", None)
    why = refusal(v, runtime.backend, dict(runtime.plan.meta.get("options") or {}), pdl, runtime.device.type)
    if why:
        raise TfdashError(why.line)
    plan, _ = variant_plan(runtime.plan, v)
    kw = {}
    if runtime.backend == "tilelang-graph":
        from tfdash.engine.compile import unsupported

        why = unsupported(plan)
        if why:
            raise TfdashError(f"{v.name}: the tilelang engine cannot run {why}")
        kw = {"progress": progress, "pdl": v.runtime.get("pdl", pdl)}
    try:
        var = runtime.variant(plan, share_state=True, **kw)
    except TfdashError:
        raise
    except Exception as e:  # a kernel that does not compile, memory: one line, not a traceback
        raise TfdashError(f"{v.name} did not build: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    needed = {n for n, b in plan.buffers.items() if b.parent is None and (b.kind == "cache" or n in STEP_STATE)}
    if needed - var.shared:
        raise TfdashError(f"{v.name} cannot share the generation's state ({', '.join(sorted(needed - var.shared)[:3])} "
                          f"differ in shape or dtype)")
    return var


def shared_rings(variant) -> tuple[str, ...]:
    """The host rings (the token ring, its stamps) of the runtime it shares state with that a
    variant's step stores into: those its plan has and does not own."""
    from tfdash.engine.token_ring import HOST_RINGS

    return tuple(r for r in HOST_RINGS if r in variant.plan.buffers and r in variant.shared)


class Turn:
    """One side's turn: `steps` steps of the generation through that side's step."""

    def __init__(self, run: "ABRun", side: str, index: int, steps: int):
        self.run, self.side, self.index, self.steps = run, side, index, steps
        self.step_fn, self.ok = None, False
        self.writes: tuple[str, ...] = ()  # the live runtime's host rings B's graph stores into (its state's)
        self.first_step, self.step_ns = 0, []

    def start(self, runtime, first_step, steps):
        self.first_step, self.step_ns = first_step, []
        self.ok = self.run.guard(self.run.check_tokens, first_step)
        self.step_fn = self.run.variant.step if self.ok and self.side == "B" else None
        # B's graph stores its token (and stamp) into the live ring it shares, as A's does: its steps are
        # marked and timed as A's are, not with a copy and a timed event A's are spared
        self.writes = shared_rings(self.run.variant) if self.step_fn is not None else ()

    def on_step(self, step_ns):
        self.step_ns.append(int(step_ns))

    def finish(self, runtime, cancelled):
        if self.ok and self.step_ns:
            self.run.turns.append((self.side, self.first_step, tuple(self.step_ns)))
        self.run.next(cancelled)

    def cancel(self, reason):
        self.run.abort(self.run.ended_why(reason))


class SideProfile:
    """A profile window (the timer's) over one side's steps: per-launch times of that plan."""

    def __init__(self, run: "ABRun", side: str, inner):
        self.run, self.side, self.inner, self.steps = run, side, inner, inner.steps
        self.rt = run.variant if side == "B" else run.live

    @property
    def step_fn(self):
        if not getattr(self, "ok", False):
            return None  # it failed to start: the generation's own steps
        own = self.inner.step_fn
        return own if own is not None or self.side == "A" else self.rt.step

    def start(self, runtime, first_step, steps):
        self.ok = self.run.guard(self.inner.start, self.rt, first_step, steps)

    def on_step(self, step_ns):
        self.inner.on_step(step_ns)

    def finish(self, runtime, cancelled):
        if self.ok and self.run.guard(self.inner.finish, self.rt, cancelled):
            self.run.profiles[self.side] = self.inner.result
        self.run.next(cancelled)

    def cancel(self, reason):
        self.inner.cancel(reason)
        self.run.abort(self.run.ended_why(reason))


class ABRun:
    """The A/B's windows in order, run either inside a live generation (`start_live`: each window
    intercepts the next when it finishes) or outside one (`run_idle`). `on_turn(run)` is called
    after every window, on the thread running the steps; it must return quickly."""

    def __init__(self, live, variant, v: Variant, windows: int = WINDOWS, steps: int = STEPS,
                 profile_steps: int = PROFILE_STEPS, timers=None, on_turn=None):
        self.live, self.variant, self.v = live, variant, v
        self.windows, self.steps_per, self.profile_steps = max(1, windows), max(2, steps), max(0, profile_steps)
        self.on_turn = on_turn or (lambda run: None)
        self.turns: list[tuple[str, int, tuple[int, ...]]] = []  # (side, first step, step ns)
        self.checks: list[tuple[int, int, int]] = []  # (ctx_len, A's next token, B's)
        self.profiles: dict[str, object] = {}  # side -> WindowResult
        self.error: str | None = None
        self.done = threading.Event()
        self._cancel = threading.Event()
        self._gen = None
        self._queue: deque = deque(Turn(self, "AB"[i % 2], i, self.steps_per) for i in range(2 * self.windows))
        if self.profile_steps and timers is not None:
            self._queue += [SideProfile(self, s, t.window(self.profile_steps)) for s, t in zip("AB", timers)]
        self.total = len(self._queue)
        self.finished = 0  # windows finished so far (the progress line)
        self.steps_needed = 2 * self.windows * self.steps_per + (2 * self.profile_steps if timers else 0)

    # -- the state both sides share ------------------------------------------------------------
    def check_tokens(self, ctx: int) -> None:
        """Both sides' next token from the same state (nothing in flight; put back after)."""
        self.variant.ensure_captured()  # at this boundary, at the generation's position
        out = []
        for rt in (self.live, self.variant):
            with self.live.held():  # pos and tok are one pair of tensors for both sides
                rt.step()
                out.append(int(rt.bufs["tok"][0]))
        self.checks.append((ctx, out[0], out[1]))

    def guard(self, fn, *args) -> bool:
        """Call a window hook on the decode thread; a failure ends the A/B with its line (the
        generation goes on with the running plan) instead of ending the generation."""
        if self.done.is_set():
            return False
        try:
            fn(*args)
            return True
        except Exception as e:  # noqa: BLE001 - reported in the result, never raised into the decode loop
            self.abort(f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            return False

    # -- running -------------------------------------------------------------------------------
    def start_live(self, gen) -> None:
        self._gen = gen
        gen.intercept(self._queue.popleft())

    def run_idle(self, runtime, deadline: float | None = None) -> None:
        """Outside any generation: the windows one after another from the runtime's position, on
        the caller's thread. Past `deadline` (time.monotonic) it ends "timed out" at the next window
        boundary, as a live run's caller stops waiting; the window in progress finishes first."""
        from tfdash.profiling.timeline import run_window

        while self._queue and not self.done.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                self.abort("timed out")
                break
            w = self._queue.popleft()
            run_window(runtime, w, w.steps, runtime.position)

    def next(self, cancelled: bool = False) -> None:
        if self.done.is_set():
            return
        self.finished += 1
        self.on_turn(self)
        if cancelled or self._cancel.is_set() or not self._queue:
            if cancelled or self._queue:
                self.error = self.ended_why("the generation ended before the A/B did")
            self.done.set()
        elif self._gen is not None:
            self._gen.intercept(self._queue.popleft())

    def ended_why(self, reason: str) -> str:
        """Why the windows stopped short: "cancelled" where the A/B was cancelled or the generation
        stopped on request (Ctrl+C stops both, the cancel seen by the A/B's waiting thread only up
        to 50 ms later), else `reason` (the generation reached its end, an EOS among them)."""
        stopped = self._gen is not None and self._gen.stats.stopped == "cancelled"
        return "cancelled" if self._cancel.is_set() or stopped else reason

    def abort(self, reason: str) -> None:
        if not self.done.is_set():
            self.error = reason
            self.done.set()

    def cancel(self) -> None:
        """Stop after the window in progress (thread-safe); what was measured is kept."""
        self._cancel.set()

    def result(self) -> dict:
        return summarize(self.v, self.live, self.variant, self.turns, self.checks, self.profiles, self.error)
