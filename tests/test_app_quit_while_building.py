"""`q` while the dashboard's worker still builds the engine (a large model's weights take a minute
to read or make): the quit abandons the build at its next progress line instead of waiting for
the whole load, so the dashboard closes at once rather than sitting on "stopping" for the quit's
15 s timeout. `r` during the build keeps the build: the re-run needs that engine."""

from __future__ import annotations

import threading
import time

import pytest

from fixtures.appkit import isolated_config, sync  # noqa: F401  (fixtures)
from test_app_live import wait_for

from tfdash.app.main import exit_status, live_app

SIZE = (120, 36)


class SlowBuild:
    """A factory whose build says a loading line every 50 ms for up to `seconds`, as
    `loading_status` does while weights load; it records whether it ran to its end."""

    def __init__(self, seconds: float):
        self.seconds, self.finished, self.started = seconds, threading.Event(), threading.Event()
        self.calls = 0

    def __call__(self, status):
        self.calls += 1
        status("building the engine…")
        self.started.set()
        t = time.monotonic()
        while time.monotonic() - t < self.seconds:
            status(f"loading weights: {time.monotonic() - t:.2f} s")
            time.sleep(0.05)
        self.finished.set()
        raise RuntimeError("the test's build never makes a session")


@sync
@pytest.mark.parametrize("key, code, said", [("q", 0, ""), ("ctrl+c", 130, "tfdash: interrupted (SIGINT)\n")])
async def test_q_during_the_build_quits_at_once(isolated_config, capsys, key, code, said):
    """q exits 0; Ctrl+C exits 130 and says so in one line after the screen closes, as headless's
    Ctrl+C while its engine loads does (nothing was measured: nothing is said kept)."""
    build = SlowBuild(seconds=20.0)
    app = live_app(build)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, build.started.is_set, what="the build")
        t = time.monotonic()
        await pilot.press(key)
        await wait_for(pilot, lambda: not app.is_running or app.return_code is not None, timeout=25, what="the quit")
        took = time.monotonic() - t
    assert took < 3.0, f"{key} took {took:.1f} s while the engine was being built"
    assert not build.finished.is_set()
    assert app.return_value is None  # nothing was measured
    capsys.readouterr()
    assert exit_status(app) == code and capsys.readouterr().err == said


@sync
async def test_r_during_the_build_lets_it_finish(isolated_config):
    build = SlowBuild(seconds=0.6)
    app = live_app(build)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, build.started.is_set, what="the build")
        await pilot.press("r")
        await wait_for(pilot, build.finished.is_set, what="the build's end")
        await wait_for(pilot, lambda: app.state == "error" and build.calls == 2, what="the re-run's build")
        await pilot.press("q")
