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
