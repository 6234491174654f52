"""The dashboard over continuous per-kernel timing, on the CPU: a real micro engine decodes while
synthetic CUPTI records of its StepPlan (tests/continuous_support.py) stand in for the device's,
so the panes read a ContinuousView as they do on the H200."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
from continuous_support import batches, rows, synth
from fixtures.appkit import isolated_config, micro_engine, one_torch_thread, sync  # noqa: F401  (fixtures)

from tfdash.app.main import live_app, make_session
from tfdash.profiling import probe
from tfdash.profiling.continuous import ReplaySource

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")


def screen_text(app) -> str:
    from test_app_fit import screen_text as text

    return text(app)


@sync
async def test_a_short_continuous_run_names_the_ctx_len_its_steps_ran_at(isolated_config):
    """The roofline of a continuously timed range is priced at its middle step rounded down to a
    multiple of 16; a run of 12 tokens after a 3-token prompt (its steps at ctx_len 0 to 13) said
    "bytes/step at ctx_len 0", the empty cache of the first step alone. Now it names the middle of
    the steps measured."""
    eng = micro_engine(capacity=1024)
    new = 12

    def factory(status):
        return make_session(eng, "w1 w2 w3", new, target=TARGET, nvml=False, ignore_eos=True,
                            timing="continuous", record_source=lambda rt: ReplaySource(
                                lambda: batches(rows(synth(rt.plan, new)))))

    app = live_app(factory, max_new_tokens=new)
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.monotonic()
        while app.state != "done":
            assert time.monotonic() - t0 < 60, f"the run did not end: {app.state}"
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "every step measured" in text, text
        [ctx] = {int(m) for m in re.findall(r"bytes/step\s+at ctx_len (\d+)", text)}
        assert 0 < ctx < app.snapshot.prompt_tokens + app.snapshot.new_tokens, (ctx, text)
        await pilot.press("q")


class SlowStop(ReplaySource):
    """Synthetic records whose source takes STOP_S to stop, as CUPTI's last flush can on the GPU."""

    def stop(self):
        time.sleep(STOP_S)
        super().stop()


STOP_S = 3.0  # long enough to press keys in while continuous timing stops


@sync
async def test_space_and_p_while_continuous_timing_stops_say_what_the_run_is_doing(isolated_config):
    """After a continuously timed generation, while its timing stopped, space and p said "the run
    ends once its own profile window has timed a few steps": no such window runs with continuous
    timing (auto_window_after takes none). They say the run ends once the timing has stopped."""
    from test_app_live import toasts_of

    eng = micro_engine(capacity=1024)
    new = 12

    def factory(status):
        return make_session(eng, "w1 w2 w3", new, target=TARGET, nvml=False, ignore_eos=True,
                            timing="continuous", record_source=lambda rt: SlowStop(
                                lambda: batches(rows(synth(rt.plan, new)))))

    app = live_app(factory, max_new_tokens=new)
    said = toasts_of(app)
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.monotonic()
        while app.snapshot is None or app.snapshot.new_tokens < new:
            assert time.monotonic() - t0 < 60, f"the generation did not end: {app.state}"
            await pilot.pause(0.05)
        await pilot.pause(0.2)
        assert app.state == "running", app.state  # the run goes on: its timing stops
        await pilot.press("space")
        await pilot.press("p")
        await pilot.pause(0.2)
        over = [s for s in said if s.startswith("the generation is over")]
        while app.state != "done":
            assert time.monotonic() - t0 < 60, f"the run did not end: {app.state}"
            await pilot.pause(0.05)
        await pilot.press("q")
    assert over == ["the generation is over: the run ends once its continuous timing has stopped; nothing to pause",
                    "the generation is over: the run ends once its continuous timing has stopped"], said
