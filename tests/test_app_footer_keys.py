"""The footer names the keys that matter where the user is: space (pause) while a run goes on, in
the narrowest terminal too."""

from __future__ import annotations

from fixtures.appkit import LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import settle
from test_app_fit import footer

from tfdash.app.app import TfdashApp


@sync
async def test_at_80x24_a_running_dashboards_footer_keeps_pause(isolated_config):
    """The kernel table's keys took the whole 80-column footer and left space out: the key a
    running decode needs most. It is kept, as q and ? are, and so is v (offered here because the
    roofline pane stepped aside: the way to it); the table's last keys give way."""
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = footer(app)
    assert "space Pause" in line and "q Quit" in line and "? Help" in line, line
    assert "⏎ Drill in" in line and "v Panes" in line , line
