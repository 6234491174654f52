"""While `r` rebuilds the engine (the run before has ended, the next one's engine is being built),
the drill-down's `m` and the A/B's ⏎ said "no run in progress to measure (r re-runs)" and "no run
in progress to A/B (r re-runs)", though r had just been pressed and the run was starting. They say
the engine is still being built and name the key to press once the run has started."""

from __future__ import annotations

import threading

from fixtures.appkit import RecordedSession, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import settle, wait_for
from test_app_fit import screen_text

from tfdash.app.main import live_app


async def m_during_the_rebuild(session_type, then=None) -> tuple[list[str], object]:
    """The dashboard on `session_type` (a RecordedSession): once its first run is over, r, and while
    the re-run's engine is held in its build, the first row's drill-down and m, then `then(pilot,
    app)` where given. The toasts said, and what `then` returned."""
    built, gate = [], threading.Event()

    def make_session(status):
        built.append(1)
        if len(built) > 1:  # the re-run's engine: still being built until the test lets it go
            gate.wait(30)
        return session_type()

    app = live_app(make_session)
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))[1]
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(pilot, lambda: app.state == "done", timeout=30, what="the first run's end")
            await pilot.press("r")
            await wait_for(pilot, lambda: len(built) == 2, timeout=30, what="the re-run's build")
            await settle(pilot)
            await pilot.press("enter")  # the drill-down of the first row: m measures its launch
            await settle(pilot)
            await pilot.press("m")
            await wait_for(pilot, lambda: any("marginal" in s and "unavailable" in s for s in said), timeout=30,
                           what="m's answer")
            got = await then(pilot, app) if then is not None else None
    finally:
        gate.set()
    return said, got


@sync
async def test_m_and_the_ab_during_the_rebuild_say_the_engine_is_being_built(isolated_config):
    async def ab_box(pilot, app) -> str:
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "engine is still being built" in screen_text(app)
                       or "no run in progress" in screen_text(app), timeout=30, what="the A/B's answer")
        return screen_text(app)

    said, box = await m_during_the_rebuild(RecordedSession, ab_box)  # a run whose marginals can be measured
    marginal = [s for s in said if "unavailable" in s]
    assert marginal and "no run in progress" not in marginal[0], said
    assert marginal[0].endswith("unavailable: the engine is still being built: m once the run starts"), said
    assert "no run in progress" not in box, box
    assert "the engine is still being built: ⏎ once the run starts" in box, box


class RecordedOnCpu(RecordedSession):
    """The same run as recorded on the CPU: its snapshot says a marginal can never be measured."""

    def __init__(self):
        from dataclasses import replace

        super().__init__()
        why = "marginal cost needs CUDA graphs; this is torch-eager on the CPU"
        self.snap = replace(self.snap, unavailable={**self.snap.unavailable, "marginal": why})


@sync
async def test_m_during_the_rebuild_of_a_run_that_cannot_measure_says_why_at_once(isolated_config):
    """On the CPU, `m` during r's rebuild said "the engine is still being built: m once the run
    starts", and once it had started "marginal cost needs CUDA graphs": the run's snapshot already
    said it never can, which m now says at once, also while the engine is built."""
    said, _ = await m_during_the_rebuild(RecordedOnCpu)
    marginal = [s for s in said if "unavailable" in s]
    assert len(marginal) == 1 and "still being built" not in marginal[0], said
    assert marginal[0].endswith("unavailable: marginal cost needs CUDA graphs; this is torch-eager on the CPU"), said
