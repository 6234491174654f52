"""Marginal in-graph cost of a launch or a group of launches: a graph with it doubled, A/B.

The runtime captures two graphs of the step from its live buffers (`Runtime.capture_variant`):
the plain step, and a variant with the chosen launches run twice in a row. Both start by
restoring pos and tok from two device scalars, so every timed replay is the same step at the same ctx (the cache is never walked past
its end, and the row written at ctx is the one the live step writes next). Time `reps` back-to-
back replays of each with CUDA events, alternating the order (AB, BA, ...) for `rounds` rounds
in one process; the marginal cost is median(variant) - median(plain), with its spread (half the
interquartile range of the per-round differences). A set `cancel` event ends it after the round in
progress (a quit or a re-run must not wait out every round, nor hold the runtime's lock through
them): the rounds done so far are the result, marked "incomplete", as a cancelled A/B's are.

    resolve(plan, "L13.gate_up")  -> [launch index]         a role
    resolve(plan, "gate_up")      -> every layer's gate_up   an op
    resolve(plan, "gemv")         -> every gemv launch       a family (or a kernel name)
"""

from __future__ import annotations

import statistics
import threading
from pathlib import Path

from tfdash.errors import TfdashError


def resolve(plan, what: str) -> list[int]:
    """Launch indices for a role, op, kernel or family name."""
    for key in ("role", "op", "kernel", "family"):
        hits = [la.index for la in plan.launches if getattr(la, key) == what]
        if hits:
            return hits
    roles = ", ".join(la.role for la in plan.launches[:3])
    raise TfdashError(f"no launch, op, kernel or family named {what!r} (e.g. {roles}, lm_head, "
                      f"{', '.join(sorted(plan.families()))})")


def unavailable(what: str, reason: str) -> dict:
    return {"what": what, "unavailable": reason}


def _quartiles(xs: list[float]) -> tuple[float, float]:
    if len(xs) < 2:
        return xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def summarize(what: str, launches: list[int], plain: list[float], variant: list[float], ctx_len: int,
              reps: int) -> dict:
    """The result dict from per-round mean step times (ns) of the plain and variant graphs."""
    diffs = [v - p for p, v in zip(plain, variant)]
    lo, hi = _quartiles(diffs)
    delta = statistics.median(variant) - statistics.median(plain)
    return {
        "what": what, "launches": list(launches), "ctx_len": int(ctx_len), "rounds": len(diffs), "reps": int(reps),
        "plain_ns": float(statistics.median(plain)), "variant_ns": float(statistics.median(variant)),
        "delta_ns": float(delta), "spread_ns": float((hi - lo) / 2),
        "per_launch_ns": float(delta / max(1, len(launches))),
        "method": "doubled launches in a second captured graph, A/B alternating, medians",
    }


def _time(graph, reps: int) -> float:
    import torch

    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        graph.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e6 / reps


CANCELLED = "cancelled before its first round"


def measure(runtime, what: str, ctx_len: int | None = None, rounds: int = 7, reps: int = 20,
            cancel: threading.Event | None = None) -> dict:
    """Marginal cost of `what` at ctx_len (default: the runtime's current pos, keeping its tok).
    Leaves pos and tok as they were. CUDA only; on CPU a dict saying why not. `cancel`, checked
    before the graphs are captured and between rounds, ends it early (see the module's doc)."""
    cancelled = cancel.is_set if cancel is not None else (lambda: False)
    if not getattr(runtime, "cuda", False):
        return unavailable(what, f"marginal cost needs CUDA graphs; this is {runtime.backend} on "
                                 f"{runtime.device.type}")
    try:
        launches = resolve(runtime.plan, what)
    except TfdashError as e:
        return unavailable(what, str(e))
    ctx = runtime.position if ctx_len is None else int(ctx_len)
    runtime.plan.check_ctx(ctx)
    if cancelled():
        return unavailable(what, CANCELLED)
    with runtime.held():
        plain = runtime.capture_variant((), ctx)
        variant = runtime.capture_variant(launches, ctx)
        for g in (plain, variant):  # warm both
            _time(g, 2)
        t_plain, t_variant = [], []
        for r in range(rounds):
            if cancelled():
                break
            order = (plain, variant) if r % 2 == 0 else (variant, plain)
            for g in order:
                (t_plain if g is plain else t_variant).append(_time(g, reps))
        del plain, variant
    if not t_plain:
        return unavailable(what, CANCELLED)
    result = summarize(what, launches, t_plain, t_variant, ctx, reps)
    if len(t_plain) < rounds:
        result["incomplete"] = "cancelled"
    return result


class MarginalTask:
    """A 0-step window (a pause between two steps of a live generation) that runs `measure`."""

    steps = 0
    step_fn = None

    def __init__(self, what: str, **kw):
        self.what, self.kw = what, kw
        self.result: dict | None = None
        self.done = threading.Event()

    def start(self, runtime, first_step, steps):
        try:
            self.result = measure(runtime, self.what, **self.kw)
        except Exception as e:  # a failed measurement is a line in the result, never a crash
            import traceback

            where = traceback.extract_tb(e.__traceback__)[-1]
            self.result = unavailable(self.what, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''} "
                                                 f"(at {Path(where.filename).name}:{where.lineno} {where.line})")

    def on_step(self, step_ns):
        pass

    def finish(self, runtime, cancelled):
        self.done.set()

    def cancel(self, reason: str):
        self.result = unavailable(self.what, reason)
        self.done.set()

    def wait(self, timeout: float) -> dict:
        """The result once a generation ran the task (or a line saying it never got the chance)."""
        if not self.done.wait(timeout):
            return unavailable(self.what, "timed out waiting for a step boundary")
        return self.result or unavailable(self.what, "no result")

    def run_now(self, runtime, lock) -> dict:
        """Measure now, outside any generation, holding the runtime's `lock`."""
        with lock:
            self.start(runtime, 0, 0)  # catches and reports its own failures
        return self.result or unavailable(self.what, "no result")
