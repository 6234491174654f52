"""The dashboard's own profile window on a very short run (the real tiny CPU engine): it never times
the generation's first step, which runs every kernel cold (on the CPU its attention took a hundred
times its warm time, and the roofline read a few per cent of the ceiling); a run with no step to
warm the kernels up says so and shows no kernel times."""

from __future__ import annotations

import pytest
from fixtures.appkit import isolated_config, one_torch_thread, sync  # noqa: F401  (fixtures)
from test_app_live import PROMPT, SIZE, Recorder, wait_for

from tfdash.app.main import live_app

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_engine():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", capacity=4096)


def listen(app) -> list[str]:
    said: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
    return said


@sync
async def test_two_tokens_are_timed_after_the_cold_step(isolated_config, tiny_engine):
    """--max-new-tokens 2: the one decode step (at ctx_len 2, after the 2-token prompt) was the
    window, its cold times shown as the kernels'. Now the window is taken after it, at ctx_len 3."""
    first_step = len(tiny_engine.encode(PROMPT))
    app = live_app(Recorder(tiny_engine, 2), max_new_tokens=2)
    said = listen(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "done" and any("ctx_len" in s for s in said),
                       what="the run and its window")
        await pilot.pause()
        toast = next(s for s in said if "ctx_len" in s)
        assert f"at ctx_len {first_step + 1}:" in toast, said
        assert toast.startswith(f"1 step at ctx_len {first_step + 1}: "), toast  # it said "1 steps"
        assert app.snapshot.roofline.ctx_len == first_step + 1
        assert all(k.measured_p50_ns is not None for k in app.snapshot.kernels)
        await pilot.press("q")


@sync
async def test_one_token_says_it_has_no_warm_step_to_time(isolated_config, tiny_engine):
    """--max-new-tokens 1: the token comes from the prompt, no step runs; a window would time the
    kernels' first run. The dashboard says so, and shows no kernel times; nor does it send the user
    to r then p, since a re-run is one token again."""
    from test_first_hour_app import screen_text

    app = live_app(Recorder(tiny_engine, 1), max_new_tokens=1)
    said = listen(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the run to end")
        await pilot.pause(0.3)
        assert any("the run was too short" in s and "first, cold run" in s for s in said), said
        assert not any("ctx_len" in s for s in said), said
        assert all(k.measured_p50_ns is None for k in app.snapshot.kernels)
        assert app.snapshot.unavailable["kernels"].startswith("no profile window: the run was too short")
        text = screen_text(app)  # a re-run is one token again: the hints say which run has a step
        assert "a run of 2+ new tokens has a step to profile" in text and "re-runs, then" not in text, text
        await pilot.press("q")


@pytest.fixture
def slow_window_after(monkeypatch):
    """The window a short run gets after its generation (session_requests.auto_window_after) takes
    3 s to start, as a large model's steps on the CPU make it last: long enough to press keys in."""
    import time

    from tfdash.profiling import session_requests

    real = session_requests.profile_steps

    def slow(runtime, steps, timer=None, first_step=None, stop=None):
        t = time.monotonic()
        while time.monotonic() - t < 3 and not (stop is not None and stop()):
            time.sleep(0.02)
        return real(runtime, steps, timer, first_step, stop)

    monkeypatch.setattr(session_requests, "profile_steps", slow)


@pytest.mark.serial  # the keys go in within the window's 3 s
@sync
async def test_space_and_p_during_the_window_after_the_generation_say_why_not(isolated_config, tiny_engine,
                                                                           slow_window_after):
    """Once the generation was over, while the run's own window timed the steps after it, space said
    "paused: the engine holds at its next step" and the header said paused, but nothing held: the
    window ran on and the run ended. Now the footer stops offering space, and space says why it
    does nothing; the header stays as it was. p, likewise, said "profiling the next 32 steps…" and
    no window came of it (the session ended it untaken)."""
    from test_first_hour_app import screen_text

    app = live_app(Recorder(tiny_engine, 2), max_new_tokens=2)
    said = listen(app)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens == 2,
                       what="the generation's end")
        await pilot.pause(0.2)
        assert app.state == "running", app.state  # the run goes on: its window
        footer = screen_text(app).splitlines()[-1]
        assert "space Pause" not in footer and "p Profile" not in footer, footer
        await pilot.press("space")
        await pilot.pause(0.2)
        assert [s for s in said if "pause" in s] == [
            "the generation is over: the run ends once its own profile window has timed a few steps; nothing to pause"]
        assert " running " in screen_text(app).splitlines()[0] and "Resume" not in screen_text(app)
        await pilot.press("p")  # it said "profiling the next 32 steps…", and no window came of it
        await pilot.pause(0.2)
        assert not any("profiling" in s for s in said), said
        assert said[-1] == "the generation is over: the run ends once its own profile window has timed a few steps"
        await wait_for(pilot, lambda: app.state == "done" and any("ctx_len" in s for s in said),
                       what="the window and the run's end")
        assert app.snapshot.held_ns == 0
        await pilot.press("q")
