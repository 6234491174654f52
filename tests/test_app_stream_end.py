"""The run's last tokens reach the terminal: when a live run ends, the continuation pane is
repainted with every token and without the streaming cursor, not left at the frame before.

The pane once kept its cursor flag in `_running`, the name of Textual's own "message pump is
running" flag: at the run's end it set it False, Textual then never posted the pane an idle, and
its last refresh never reached the screen (the terminal showed the tokens of the frame before,
with the cursor, under "done", until a resize)."""

from __future__ import annotations

import time

import pytest
from fixtures.appkit import isolated_config, micro_engine, one_torch_thread, sync  # noqa: F401  (fixtures)

from tfdash.app.main import live_app, make_session
from tfdash.app.widgets.continuation import Continuation
from tfdash.profiling.probe import CPU

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@sync
async def test_the_continuation_still_repaints_after_the_run_ends(isolated_config):
    eng = micro_engine(capacity=1024)
    app = live_app(lambda status: make_session(eng, "The GPU", 200, target=CPU, nvml=False), max_new_tokens=200)
    async with app.run_test(size=(80, 24)) as pilot:
        cont = app.screen.query_one(Continuation)
        t0 = time.monotonic()
        while app.state != "done":
            assert time.monotonic() - t0 < 60, f"the run did not end: {app.state}"
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        assert app.snapshot.new_tokens == 200 and cont.text == app.snapshot.text
        assert not cont.render().plain.rstrip().endswith("▌")  # the cursor goes with the run
        # Textual's: the pane still handles its messages, so that refresh is painted.
        assert cont.is_running
