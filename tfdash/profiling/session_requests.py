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
from tfdash.profiling.messages import MarginalDone
from tfdash.profiling.timeline import WindowResult, profile_steps

if TYPE_CHECKING:
    from tfdash.profiling.session import Session

MAX_WAITING = 2  # profile windows requested and not done yet: more are refused, not piled up


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


def window_now(s: "Session", steps: int, ctx_len: int | None) -> WindowResult:
    """Session.profile_now's work (see there)."""
    with s._rt_lock:
        if s._state == "running":
            raise TfdashError("profile_now: the session is running; use request_profile")
        steps, cap = max(1, min(int(steps), s.plan.capacity - 1)), s.plan.capacity
        ctx = max(0, min(s._ctx_now() if ctx_len is None else int(ctx_len), cap - 1 - steps))
        s.runtime.set_position(ctx)
        result = profile_steps(s.runtime, steps, s.timer, first_step=ctx)
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
