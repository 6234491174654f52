"""Session.ab: a plan variant A/B'd on the session's generation (tfdash.profiling.ab does the
alternation); inside the live generation, or after it ended from where it left off.

`cancel` (a threading.Event, set from any thread) is checked at every window boundary, on the
thread running the steps, in both cases: the A/B stops after the window in progress and returns
what it measured, marked incomplete. Set while the variant is still being built, the A/B runs no
window at all. `timeout` (seconds from the first window) ends it the same way, marked "timed out":
checked by the caller while the windows run in the generation, and at every window boundary when
they run after it (on the caller's thread).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from tfdash.errors import TfdashError
from tfdash.profiling import assemble as asm
from tfdash.profiling import marginal as marginal_mod
from tfdash.profiling.continuous import PausingWindow
from tfdash.profiling.messages import ABDone, ABProgress
from tfdash.profiling.timeline import Timer

if TYPE_CHECKING:
    from tfdash.profiling.session import Session

# a result's "during" for an A/B run once the generation had ended (the A/B box's intro says it too)
AFTER_GENERATION = "after the generation, from where it stopped"


class Pausing:
    """A timer whose windows pause continuous timing around themselves (PausingWindow), as a
    profile window on `p` does: torch.profiler and the CUPTI ring cannot both hold CUPTI."""

    def __init__(self, timer, timing, post):
        self.timer, self.timing, self.post = timer, timing, post

    def window(self, steps: int, on_done=None):
        return PausingWindow(self.timer.window(steps, on_done=on_done), self.timing, self.post)


def run_ab(self: "Session", what: str, windows: int | None = None, steps: int | None = None,
           profile_steps: int | None = None, progress=None, cancel: threading.Event | None = None,
           timeout: float = 600, rerun_key: str | None = None) -> dict:
    """Session.ab's work (see there), on the session's state: the variant built over the running
    runtime, then ABRun on the live generation (or after it, from where it stopped). The refusals
    name no key of the dashboard's (a headless run has none): `rerun_key` is the key that re-runs
    the generation where there is one, which the advice to re-run then names."""
    from tfdash.profiling import ab as abmod

    windows, steps = windows or abmod.WINDOWS, steps or abmod.STEPS  # None: the module's sizes
    profile_steps = abmod.PROFILE_STEPS if profile_steps is None else profile_steps
    say = progress or (lambda m: None)
    with self._lock:
        state, held = self._state, self._held
    why = ("the session has not started: the A/B continues its generation" if state == "idle" else
           "resume first: the A/B runs between decode steps" if held and state == "running" else
           "Session.ab blocks: call it from another thread than Session.run"
           if threading.get_ident() == self._run_thread and state == "running" else None)
    if why:
        return marginal_mod.unavailable(what, why)
    try:
        v = abmod.resolve(what)
        say(ABProgress(v.name, "building", 0, 0, f"building {v.name} ({v.about}) beside the running plan…"))
        var = abmod.build(self.runtime, v, lambda d, t, name, sec: say(ABProgress(
            v.name, "building", 0, 0, f"compiling {v.name}'s kernels {d}/{t}: {name} ({sec:.1f} s)")))
    except TfdashError as e:
        return marginal_mod.unavailable(what, str(e))
    if cancel is not None and cancel.is_set():  # during the build: nothing measured, nothing to keep
        return marginal_mod.unavailable(v.name, "cancelled before its first window")

    def on_turn(r):
        say(ABProgress(v.name, "running", r.finished, r.total, f"{v.name}: window {r.finished}/{r.total}"))
        if cancel is not None and cancel.is_set():  # ABRun.next stops here, after this window
            r.cancel()

    timers = (self.timer, Timer(var))
    if self.continuous is not None and self.continuous.active:  # torch.profiler needs CUPTI for each side's window
        timers = tuple(Pausing(t, self.continuous, self._post) for t in timers)
    deadline = time.monotonic() + timeout  # from the first window: the build (compiling, on CUDA) is not counted
    run = abmod.ABRun(self.runtime, var, v, windows, steps, profile_steps, timers=timers, on_turn=on_turn)
    with self._lock:
        gen = self._gen if self._state == "running" else None
        left = gen.steps_left if gen is not None else 0
        if left >= run.steps_needed and gen is not None:
            run.start_live(gen)
    if left < run.steps_needed and gen is not None:  # a re-run helps only where the whole run is long enough
        if gen.max_new_tokens < run.steps_needed:
            rerun = f"more than its {gen.max_new_tokens:,} new tokens:"
        else:
            rerun = f"{rerun_key} re-runs it; or" if rerun_key else "a re-run has room for it; or"
        return marginal_mod.unavailable(v.name, f"{left} steps are left in this generation and the A/B needs "
                                                f"{run.steps_needed} ({rerun} run it once the generation ends, "
                                                "from where it stopped)")
    if gen is None:
        with self._rt_lock, self.runtime.held(("pos", "tok")):
            cap = self.plan.capacity - 2 - run.steps_needed  # the warm-up steps stay inside the cache
            if cap < 0:
                return marginal_mod.unavailable(v.name, f"the cache holds {self.plan.capacity} positions; "
                                                        f"the A/B needs {run.steps_needed + 2}")
            self.runtime.set_position(min(self._ctx_now(), cap))
            run.run_idle(self.runtime, deadline)  # a failing window ends the run with its line, never raises
    while not run.done.wait(0.05):
        if cancel is not None and cancel.is_set():
            run.cancel()
        if time.monotonic() >= deadline:
            run.abort("timed out")
    result = asm.jsonable({**run.result(), "during": "the generation" if gen is not None else AFTER_GENERATION})
    self._touch(lambda: self.rec.ab.append(result))
    say(ABProgress(v.name, "done", run.finished, run.total, result["verdict"]))
    self._post(ABDone(result))
    return result
