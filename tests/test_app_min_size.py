"""Below 80x24 every screen the app shows is one line that names the size it needs and the key
that quits: the dashboard, the drill-down, the timeline, the dialogs over them (help, baseline
picker, A/B) and Textual's command palette. There only the quit keys act; every other key reaches
nothing, so grown again each screen comes back exactly as it was, and a screen returned to after a
resize shows what fits the terminal now."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import make_app, screen_text, settle

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot

# key from the dashboard -> what its screen shows at 80x24
SCREENS = {
    "enter": "drill-down · op gate_up",
    "T": "the step's kernels on a time axis",
    "question_mark": "╭─ keys",
    "b": "╭─ baseline snapshot",
    "a": "╭─ A/B a plan variant",
    "ctrl+p": "Search for commands",
}
# keys a user tries on the size line: each would act on the hidden screen (open, close, type, move)
TRIED = ["enter", "escape", "T", "question_mark", "a", "b", "ctrl+p", "x", "down", "space", "slash"]


def wanted(size, quit_key: str = "q") -> list[str]:
    need = f"tfdash needs at least 80×24 (now {size[0]}×{size[1]})"
    line = f"{need} · {quit_key} quits"
    return [line] if len(line) <= size[0] else [need, f"{quit_key} quits"]


def shown(app) -> list[str]:
    return [line.strip() for line in screen_text(app).splitlines() if line.strip()]


@pytest.mark.parametrize("key", ["question_mark", "enter"])
@sync
async def test_a_key_typed_as_the_terminal_grows_back_acts_before_its_resize_lands(isolated_config, key):
    """Shrunk below 80x24 and grown straight back, a key typed at once can come in before the
    terminal's resize does (the resize waits for the main thread, the key's reader does not). The
    terminal is already 80x24 then: the key opens its screen, as typed a moment later it would."""
    from textual.geometry import Size

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        app._driver._size = Size(80, 24)  # the terminal grew; its resize event is not in yet
        await pilot.press(key)
        await settle(pilot)
        assert app.size == Size(80, 24)
        assert SCREENS[key] in screen_text(app), shown(app)


@pytest.mark.parametrize("size", [(60, 20), (40, 15), (79, 24), (80, 23)])  # a column or a row short
@sync
async def test_below_80x24_keys_reach_nothing_and_the_dashboard_comes_back_as_it_was(isolated_config, size):
    """On the size line, a key that would open a screen, close one, type into a filter or move the
    cursor does nothing: the line stays, and grown to 80x24 the dashboard is what it was."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = screen_text(app)
        await pilot.resize_terminal(*size)
        await settle(pilot)
        for key in TRIED:
            await pilot.press(key)
            await settle(pilot)
            assert shown(app) == wanted(size), (key, shown(app))
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert screen_text(app) == before


@pytest.mark.parametrize("key", list(SCREENS))
@sync
async def test_every_screen_shrunk_below_80x24_is_the_size_line(isolated_config, key):
    """A screen open at 80x24 when the terminal shrinks is the one line too; the keys tried there
    (esc, Enter, typing) leave it alone, so at 80x24 again it is exactly what it was, and at
    100x30 whole with what it showed (the help's rows refitted to the new width). The A/B dialog
    opens on a saved snapshot that holds an A/B (one without says so instead)."""
    app = make_app() if key != "a" else snapshot_app(
        dataclasses.replace(load_snapshot(SNAPSHOT), ab=({"what": "tilelang-gu1", "unavailable": "no GPU"},)),
        theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        before = screen_text(app)
        assert SCREENS[key] in before
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        for tried in TRIED:
            await pilot.press(tried)
            await settle(pilot)
            assert shown(app) == wanted((60, 20)), (tried, shown(app))
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert screen_text(app) == before
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        text = screen_text(app)
    assert "needs at least" not in text and SCREENS[key] in text, text
    assert len(text.splitlines()[0]) == 100


@pytest.mark.parametrize("key", ["question_mark", "b"])
@sync
async def test_the_dashboards_summary_line_is_one_row_again_under_a_dialog_grown_back(isolated_config, key):
    """At 60 columns the line for the hidden panes (roofline, NVML) wraps to two rows; the dashboard
    under a dialog, grown back to 80x24, shows it on one row again, the panes under it where they
    were (it had kept two rows, a blank one over the panes, which lost a row of the kernel table)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = screen_text(app).splitlines()
        assert "roofline" in before[1] and before[2].startswith("╭─ continuation"), before[:3]
        await pilot.press(key)
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        app.pop_screen()
        await settle(pilot)
        assert screen_text(app).splitlines() == before


@pytest.mark.parametrize("key", ["question_mark", "T"])
@sync
async def test_the_screen_returned_to_after_a_resize_fits_the_terminal_now(isolated_config, key):
    """A screen that closes while the terminal is small (esc does not reach it there: here the app
    pops it) leaves the dashboard's size line, not the panes laid out for the old size; one closed
    after the terminal grew leaves the dashboard whole at the new width."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        app.pop_screen()
        await settle(pilot)
        assert shown(app) == wanted((60, 20)), shown(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        text = screen_text(app)
    assert "needs at least" not in text and "╭─ kernels" in text, text
    assert len(text.splitlines()[0]) == 100


@pytest.mark.parametrize("key", ["", "question_mark", "ctrl+p"])
@pytest.mark.parametrize("quit_key", ["q", "ctrl+c"])
@sync
async def test_below_80x24_the_quit_keys_quit_from_any_screen(isolated_config, key, quit_key):
    """The size line names q, and q (or ctrl+c) quits from under it, whatever screen is on top:
    on the help, q does not just close the dialog no one sees; in the palette it is not typed."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        if key:
            await pilot.press(key)
            await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        assert shown(app) == wanted((60, 20))
        await pilot.press(quit_key)
        await settle(pilot)
        assert not app.is_running
    assert app.return_value is not None  # the snapshot it showed, as q returns it at any size


@sync
async def test_below_80x24_a_remapped_quit_key_is_the_one_named_and_the_one_that_acts(isolated_config):
    (isolated_config / "config.json").write_text(json.dumps({"keymap": {"quit": "x"}}))
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        assert shown(app) == wanted((60, 20), "x")
        await pilot.press("q")
        await settle(pilot)
        assert app.is_running and shown(app) == wanted((60, 20), "x")
        await pilot.press("x")
        await settle(pilot)
        assert not app.is_running


@sync
async def test_a_toast_raised_below_80x24_waits_for_the_terminal_to_grow(isolated_config):
    """A toast raised on the size line (an export's result, an engine's warning) would cover it; it
    is held, not dropped, and shows once the terminal is 80x24 again."""
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(40, 15)
        await settle(pilot)
        app.notify("exported to /tmp/x.json", title="export")
        await settle(pilot)
        assert not app.screen.query("Toast")
        assert shown(app) == wanted((40, 15)), shown(app)
        assert app.unseen_toasts() == ["export: exported to /tmp/x.json"]  # printed if it quits here
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        text = screen_text(app)
    assert "exported to /tmp/x.json" in text, text
    assert app.unseen_toasts() == []


@sync
async def test_a_toast_shown_before_the_terminal_shrinks_does_not_cover_the_size_line(isolated_config):
    """A toast already up when the terminal goes below 80x24 is hidden with the screen under the
    line, as one raised there is held: the line stays whole, its quit key readable."""
    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.notify("exported to /tmp/a-rather-long-name-of-a-file.json", title="export", timeout=30)
        await settle(pilot)
        await pilot.resize_terminal(40, 15)
        await settle(pilot)
        assert shown(app) == wanted((40, 15)), shown(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        text = screen_text(app)
    assert "a-rather-long-name" in text, text  # still within its timeout: shown again


@sync
async def test_toasts_held_through_a_long_stay_below_80x24_are_a_few_the_warnings_kept(isolated_config):
    """A live run's profile window raises a toast every few seconds: held through a long stay on the
    size line they would come back as a wall of toasts (and lines printed after the app). The last
    few are kept, an error or a warning before any note."""
    from tfdash.app.layout import HELD_TOASTS

    app = make_app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(40, 15)
        await settle(pilot)
        app.notify("the engine failed", title="engine", severity="error")
        for i in range(3 * HELD_TOASTS):
            app.notify(f"{i} steps at ctx_len {i}", title="profile window", timeout=4)
        held = app.unseen_toasts()
        assert len(held) == HELD_TOASTS and held[0] == "engine: the engine failed", held
        assert held[-1] == f"profile window: {3 * HELD_TOASTS - 1} steps at ctx_len {3 * HELD_TOASTS - 1}"
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert len(app.screen.query("Toast")) == HELD_TOASTS


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_the_drill_downs_summary_fits_again_under_help_grown_back(isolated_config, size):
    """The drill-down under `?`, shrunk below 80x24 and grown to `size`, is the drill-down a fresh
    app draws at that size once the help closes: its summary had kept the three rows its text took
    at 60 columns (a blank row over the panes) and the wording for the width it was opened at."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        fresh = screen_text(app)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        await pilot.resize_terminal(*size)
        await settle(pilot)
        app.pop_screen()
        await settle(pilot)
        assert screen_text(app) == fresh
