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


@sync
async def test_the_filter_boxs_footer_names_its_ways_out_and_they_do_what_it_says(isolated_config):
    """While `/`'s box has the focus the letter keys type, and the footer showed only ^s and ^t:
    no way out. It names ⏎ (keep the filter) and esc (clear it), and each does that."""
    from test_app_fit import screen_text

    app = TfdashApp(LiveStandIn(), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "g", "a", "t", "e")
        await settle(pilot)
        typing = footer(app)
        assert "⏎ Keep filter" in typing and "esc Clear filter" in typing, typing
        await pilot.press("enter")
        await settle(pilot)
        kept = screen_text(app)
        assert "gate_up" in kept and "qkv_proj" not in kept and "q Quit" in footer(app), kept
        await pilot.press("slash")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        cleared = screen_text(app)
        assert "gate_up" in cleared and "qkv_proj" in cleared and "q Quit" in footer(app), cleared
