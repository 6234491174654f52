"""Keys typed after `q` while the engine stops (a GPU run finishes its steps in flight, --save is
written): `q` then `b` pushed the baseline picker onto an app already exiting, and the dashboard
ended with a traceback ("NoMatches: No nodes match '#picker-box'") and exit status 1. Once a quit
has begun only the quit keys act (a second one says the stop is under way); the others open no
screen, and the app exits with its final snapshot as after a plain `q`."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from textual import events
from fixtures.appkit import RecordedSession, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import settle, wait_for

from tfdash.app.main import live_app

STOP_S = 1.0  # how long the stand-in's engine takes to stop after it is asked to


class SlowToStop(RecordedSession):
    """A session that runs until it is stopped and then takes STOP_S to finish its steps in flight."""

    def __init__(self):
        super().__init__()
        self.stopped = threading.Event()

    def run(self, on_event=None, stop=None) -> None:
        on_event(SimpleNamespace(kind="tokens"))  # the first frame
        (stop or self.stopped).wait(60)
        self.stopped.wait(STOP_S)  # never set: the steps in flight take their time


@pytest.mark.parametrize("keys", [["b"], ["question_mark"], ["a"], ["enter"], ["T"], ["b", "escape", "a"], ["q"]])
@sync
async def test_keys_after_q_open_nothing_and_the_app_exits_cleanly(isolated_config, keys):
    app = live_app(lambda status: SlowToStop())
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))[1]
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.state == "running", timeout=30,
                       what="the run's first snapshot")
        await settle(pilot)
        for key in ("q", *keys):  # at once, as a terminal's reader hands them over: none waits for the one before
            app.post_message(events.Key(key, "?" if key == "question_mark" else key if len(key) == 1 else None))
        await pilot.pause()
        screens = [type(s).__name__ for s in app.screen_stack]
        await wait_for(pilot, lambda: not app.is_running, timeout=30, what="the app's exit")
    assert app.return_code == 0, (app.return_code, said)
    assert app.final_snapshot is not None
    assert any("stopping the engine and writing what was measured first" in m for m in said) == (keys == ["q"]), said
    assert screens == ["MainScreen"] or screens == ["Screen", "MainScreen"], screens

