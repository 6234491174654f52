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


def _headless(make_session: Callable[[], object]) -> float:
    s = make_session()
    t = threading.Thread(target=s.run, name="tfdash headless A/B")
    t.start()
    t.join()
    return s.snapshot().tok_per_s


def _dashboard(make_session: Callable[[], object], size: tuple[int, int]) -> tuple[float, int]:
    from tfdash.app.main import live_app

    app = live_app(lambda status: make_session(), exit_when_done=True)
    snap = app.run(headless=True, size=size)
    if snap is None:
        raise RuntimeError(app.status_note or "the dashboard ended without a snapshot")
    return snap.tok_per_s, app.refreshes


def dashboard_ab(make_session: Callable[[], object], rounds: int = 3, size: tuple[int, int] = (160, 48)) -> dict:
    """{"headless": [tok/s...], "dashboard": [...], "medians": {...}, "overhead_pct": float}."""
    headless: list[float] = []
    dashboard: list[float] = []
    refreshes: list[int] = []
    for r in range(rounds):
        for arm in (("headless", "dashboard") if r % 2 == 0 else ("dashboard", "headless")):
            if arm == "headless":
                headless.append(_headless(make_session))
            else:
                tok_s, n = _dashboard(make_session, size)
                dashboard.append(tok_s)
                refreshes.append(n)
    mh, md = statistics.median(headless), statistics.median(dashboard)
    return {"headless": headless, "dashboard": dashboard, "refreshes": refreshes,
            "medians": {"headless": mh, "dashboard": md},
            "overhead_pct": 100.0 * (mh - md) / mh if mh else float("nan")}
