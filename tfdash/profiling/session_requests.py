"""Requests to a Session from other threads (the app's keys, the GPU check): a profile window
over the next steps of the generation, a window outside it, and a launch's marginal cost.
Each is queued on the generation (measured on the decode thread at a step boundary) while it
runs, and run on the caller's thread, under the runtime's lock, when it does not.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tfdash.errors import TfdashError
from tfdash.profiling import assemble as asm
from tfdash.profiling import marginal as marginal_mod
from tfdash.profiling.continuous import PausingWindow
from tfdash.profiling.messages import MarginalDone, Status
from tfdash.profiling.timeline import WindowResult, profile_steps

if TYPE_CHECKING:
    from tfdash.profiling.session import Session

MAX_WAITING = 2  # profile windows requested and not done yet: more are refused, not piled up
# The generation's first steps run every kernel for the first time (lazy set-up, cold caches and
# allocators): on the CPU its attention took a hundred times its warm time. No automatic window
# (the dashboard's own, headless --profile's) times them.
WARM_STEPS = 1
COLD_ONLY = ("the run was too short: its one token came from the prompt, so no step warmed the kernels up and a "
             "window would time their first, cold run (2 or more new tokens have one)")
# ... and where the run had room for more but that token was end-of-text: more tokens would not help
COLD_AT_EOS = ("the run stopped at end-of-text: its one token, from the prompt, was end-of-text, so no step warmed "
               "the kernels up and a window would time their first, cold run (--ignore-eos decodes past it)")


def warmed(s: "Session") -> bool:
    """Whether the generation has run its warm-up steps (WARM_STEPS): a window asked for from now on
    starts after them."""
    return s.rec.steps_total >= WARM_STEPS


def generation_over(s: "Session") -> bool:
    """Whether the generation has ended while `Session.run` still finishes (the run's own window
    after it, `auto_window_after`): no step is left to hold with a pause, and a window asked for
    now would be ended with the session, untaken. Before the generation starts (its set-up) there
    is no token yet, and a pause holds its first step."""
    with s._lock:
        return s._state == "running" and s._gen is None and s.rec.new_tokens > 0


def ending(s: "Session") -> str:
    """What the run still does once its generation is over (generation_over), as a key that can no
    longer act says it: its own window after the generation (auto_window_after), continuous timing
    stopping (CUPTI's last records flushed: no window runs then), or only its end; "" before."""
    with s._lock:
        if not generation_over(s):
            return ""
        if s.rec.window_after:
            return "the run ends once its own profile window has timed a few steps"
        c = s.continuous
        return "the run ends once its continuous timing has stopped" if c is not None and c.active else \
            "the run is ending"


def window_steps(max_new: int) -> int:
    """The steps of a window that times a run of `max_new` tokens on its own: a quarter of it, 1 to 64."""
    return max(1, min(64, max_new // 4))


def request_window(s: "Session", steps: int, on_done=None) -> bool:
    """Session.request_profile's work (see there); `on_done(result)` instead of the session's own."""
    with s._lock:
        if s._state == "done":
            return False
        s._outstanding = [w for w in s._outstanding if not w.done.is_set()]
        if len(s._outstanding) >= MAX_WAITING:
            return False
        w = s.timer.window(max(1, int(steps)), on_done=on_done or s._on_window)
        if s.continuous is not None and s.continuous.active:
            w = PausingWindow(w, s.continuous, s._post)
        s._outstanding.append(w)
        (s._gen.intercept if s._gen is not None else s._pending.append)(w)
        return True


def auto_window(s: "Session") -> bool:
    """The session's own window, early in the run (`Session.auto_window_at` tokens): asked for once,
    only when the kernels are timed by windows (continuous timing needs none) and no window was
    asked for yet (a `p` before it is the run's first numbers already). Its steps are the run's
    own, host-timed on the CPU, so it costs the run little; a snapshot says it was the session's."""
    def done(result: WindowResult) -> None:
        if result.ok:
            s._touch(lambda: setattr(s, "auto_window", True))
        s._on_window(result)

    with s._lock:
        if s.timing_method != "windows" or s._outstanding or s.rec.n_windows:
            return False
        return request_window(s, s.profile_steps, on_done=done)


def auto_window_after(s: "Session", stopped: str | None, stop: threading.Event | None = None) -> None:
    """The session's own window where the generation ended before it could run one after its
    warm-up step (a short run: `auto_window` is asked for only once that step is done): taken right
    after the generation, at the ctx where it stopped, over `window_steps` of the run, as
    `tfdash --headless --profile` takes its window then. Not after a run that was stopped, nor
    where a window was taken; where the generation ran no step at all, COLD_ONLY (or COLD_AT_EOS) is said instead
    (a status warning and the snapshot's reason) of timing the kernels' first run. A stop (the
    session's, or `stop`, the run's: q or r in the dashboard) that comes before it or during it ends
    it at the next step, as it ends a window inside the generation: the run's worker waits for it.
    Called on the decode thread, the runtime's lock held."""
    def halted() -> bool:
        return s._stop.is_set() or (stop is not None and stop.is_set())

    if not s.auto_window_at or stopped == "cancelled" or s.timing_method != "windows" or s.rec.n_windows:
        return
    if halted():
        return
    if _cold(s):
        s._post(Status(f"warning: {s.rec.no_window}"))
        return
    s._touch(lambda: setattr(s.rec, "window_after", True))  # what space and p say meanwhile (ending)
    try:
        result = _window_here(s, min(s.profile_steps, window_steps(s.max_new_tokens)), None, halted)
    finally:
        s._touch(lambda: setattr(s.rec, "window_after", False))
    if result.ok:
        s._touch(lambda: setattr(s, "auto_window", True))
    s._on_window(result)


def window_after(s: "Session", steps: int) -> bool:
    """After `Session.run`, the window a run that had none gets (headless --profile), at the ctx where
    it stopped. False, and the snapshot says why, where the generation ran no step: nothing has
    warmed the kernels up and the window would time their first, cold run."""
    if _cold(s):
        return False
    window_now(s, steps, None)
    return True


def no_step_ran(s: "Session") -> bool:
    """At a generation's end (one not stopped by the user): whether it ran no step, its one token
    the prompt's; the record then says so (`_cold`), whatever the timing, so that no pane waits
    for a step measured "yet"."""
    return _cold(s)


def _cold(s: "Session") -> bool:
    """The generation ran no step, so nothing warmed the kernels up: COLD_ONLY goes into the record
    (the snapshot's reason for having no kernel times), COLD_AT_EOS where its token was end-of-text."""
    if warmed(s):
        return False
    why = COLD_AT_EOS if s.rec.stopped == "eos" else COLD_ONLY
    s._touch(lambda: setattr(s.rec, "no_window", why))
    return True


def _window_here(s: "Session", steps: int, ctx_len: int | None, stop=None) -> WindowResult:
    """A window outside the generation, at ctx_len (default: where the run left off), kept inside
    the cache, cut short once `stop()` (timeline.run_window); the caller holds the runtime's lock."""
    steps, cap = max(1, min(int(steps), s.plan.capacity - 1)), s.plan.capacity
    ctx = max(0, min(s._ctx_now() if ctx_len is None else int(ctx_len), cap - 1 - steps))
    s.runtime.set_position(ctx)
    return profile_steps(s.runtime, steps, s.timer, first_step=ctx, stop=stop)


def window_now(s: "Session", steps: int, ctx_len: int | None) -> WindowResult:
    """Session.profile_now's work (see there)."""
    with s._rt_lock:
        if s._state == "running":
            raise TfdashError("profile_now: the session is running; use request_profile")
        result = _window_here(s, steps, ctx_len)
    s._on_window(result)
    return result


def run_marginal(s: "Session", what: str, **kw) -> dict:
    """Session.marginal's work (see there)."""
    if not s.runtime.cuda:
        return marginal_mod.unavailable(what, f"marginal cost needs CUDA graphs; this is "
                                              f"{s.engine.backend} on the CPU")
    if threading.get_ident() == s._run_thread and s._state == "running":
        return marginal_mod.unavailable(what, "Session.marginal blocks: call it from another thread "
                                              "than the one running Session.run")
    timeout = kw.pop("timeout", 600)
    task = marginal_mod.MarginalTask(what, **kw)
    with s._lock:
        gen = s._gen if s._state == "running" else None
        if gen is not None:
            gen.intercept(task)  # measured at the next step boundary, on the decode thread
    result = asm.jsonable(task.wait(timeout) if gen is not None else task.run_now(s.runtime, s._rt_lock))
    if "unavailable" not in result:
        s._touch(lambda: s.rec.marginal.append(result))
    s._post(MarginalDone(result))
    return result
