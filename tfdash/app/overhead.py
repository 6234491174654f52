"""What the dashboard costs the engine: tok/s of the same generation headless and with the
dashboard drawing it, A/B in one process, alternating, medians.

    dashboard_ab(lambda: Session(engine, prompt, 2048, target=t), rounds=3)

The dashboard arm runs the real app headless (no terminal) at a realistic size, exactly as the
live dashboard does: the session in a thread worker, news coalesced, refresh at most 20 Hz and
within the dashboard's CPU budget. The app and the decode loop share one Python process, so
this is the GIL's share as well as the drawing.
"""

from __future__ import annotations

import statistics
import threading
from typing import Callable

from tfdash.stats import step_ms


def _headless(make_session: Callable[[], object]):
    s = make_session()
    t = threading.Thread(target=s.run, name="tfdash headless A/B")
    t.start()
    t.join()
    return s.snapshot()


def _dashboard(make_session: Callable[[], object], size: tuple[int, int]):
    from tfdash.app.main import live_app

    app = live_app(lambda status: make_session(), exit_when_done=True)
    snap = app.run(headless=True, size=size)
    if snap is None:
        raise RuntimeError(app.status_note or "the dashboard ended without a snapshot")
    return snap, app.refreshes


def detail(snap) -> dict:
    """Where a run's time went: its step p50/p99, the steps over twice the p50 (stalls: the GPU
    waited for the next replay, or a profile window drained the steps in flight) with their time
    past the p50, and the timing mechanism's host time a step."""
    p50, p99 = step_ms(snap.step_ns)
    slow = [ns / 1e6 - p50 for ns in snap.step_ns if p50 and ns / 1e6 > 2 * p50]
    return {"step_p50_ms": p50, "step_p99_ms": p99, "slow_steps": len(slow), "slow_excess_ms": sum(slow),
            "timing_host_us_per_step": snap.timing.host_ns_per_step / 1e3 if snap.timing else None}


def dashboard_ab(make_session: Callable[[], object], rounds: int = 3, size: tuple[int, int] = (160, 48)) -> dict:
    """{"headless": [tok/s...], "dashboard": [...], "medians": {...}, "overhead_pct": float,
    "details": {arm: [detail(run)...]}}."""
    tok: dict[str, list[float]] = {"headless": [], "dashboard": []}
    details: dict[str, list[dict]] = {"headless": [], "dashboard": []}
    refreshes: list[int] = []
    for r in range(rounds):
        for arm in (("headless", "dashboard") if r % 2 == 0 else ("dashboard", "headless")):
            if arm == "headless":
                snap = _headless(make_session)
            else:
                snap, n = _dashboard(make_session, size)
                refreshes.append(n)
            tok[arm].append(snap.tok_per_s)
            details[arm].append(detail(snap))
    mh, md = statistics.median(tok["headless"]), statistics.median(tok["dashboard"])
    return {"headless": tok["headless"], "dashboard": tok["dashboard"], "refreshes": refreshes,
            "medians": {"headless": mh, "dashboard": md},
            "overhead_pct": 100.0 * (mh - md) / mh if mh else float("nan"), "details": details}
