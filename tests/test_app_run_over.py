"""Once a live run is over, the footer and the palette stop offering the keys that need a run in
progress: space (pause) and p (profile a window) only said "no run in progress to pause (r
re-runs)" and "the run is over: r re-runs, then p profiles". r stays, and the keys it made room
for (e, c) come in; pressed anyway, space and p still say why."""

from __future__ import annotations

import time

import pytest
from fixtures.appkit import isolated_config, micro_engine, one_torch_thread, sync  # noqa: F401  (fixtures)

from tfdash.app.main import live_app, make_session
from tfdash.profiling.probe import CPU

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@sync
async def test_a_finished_run_offers_no_pause_or_profile(isolated_config):
    from test_app_fit import screen_text

    eng = micro_engine(capacity=1024)
    app = live_app(lambda status: make_session(eng, "The GPU", 200, target=CPU, nvml=False), max_new_tokens=200)
    said = []
    notify = app.notify
    app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))[1]
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.monotonic()
        while app.state != "done":
            assert time.monotonic() - t0 < 60, f"the run did not end: {app.state}"
            await pilot.pause(0.05)
        await pilot.pause(0.3)
        footer = screen_text(app).splitlines()[-1]
        assert "r Re-run" in footer and "e Snapshot" in footer, footer
        assert "space Pause" not in footer and "p Profile" not in footer, footer
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        palette = screen_text(app)
        assert "Re-run (r)" in palette, palette
        assert "Pause (space)" not in palette and "Profile (p)" not in palette, palette
        await pilot.press("escape")
        await pilot.pause(0.2)
        await pilot.press("space", "p")
        await pilot.pause(0.2)
    assert any("no run in progress to pause" in s for s in said), said
    assert any("the run is over" in s for s in said), said
