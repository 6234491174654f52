"""Below 80x24 every screen the app shows is one line that names the size it needs: the dashboard,
the drill-down, the timeline, the dialogs over them (help, baseline picker, A/B) and Textual's
command palette; grown again, each comes back as it was, and a screen returned to after a resize
shows what fits the terminal now."""

from __future__ import annotations

import pytest
from fixtures.appkit import isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import make_app, screen_text, settle

# key from the dashboard -> what its screen shows at 80x24
SCREENS = {
    "enter": "drill-down · op gate_up",
    "T": "the step's kernels on a time axis",
    "question_mark": "╭─ keys",
    "b": "╭─ baseline snapshot",
    "a": "╭─ A/B a plan variant",
    "ctrl+p": "Search for commands",
}


def wanted(size) -> str:
    return f"tfdash needs at least 80×24 (now {size[0]}×{size[1]})"


def shown(app) -> list[str]:
    return [line.strip() for line in screen_text(app).splitlines() if line.strip()]


@pytest.mark.parametrize(("key", "size"), [(key, (60, 20)) for key in SCREENS] +
                         [("question_mark", (79, 24)), ("a", (80, 23))])  # a column or a row short
@sync
async def test_every_screen_opened_below_80x24_is_the_size_line(isolated_config, key, size):
    """Opened in a small terminal, the screen is the one line (not a dialog drawn over it); grown
    to 80x24 it is whole; shrunk again, the line once more."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert shown(app) == [wanted(size)], shown(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        text = screen_text(app)
        assert "needs at least" not in text and SCREENS[key] in text, text
        await pilot.resize_terminal(*size)
        await settle(pilot)
        assert shown(app) == [wanted(size)], shown(app)


@pytest.mark.parametrize("key", list(SCREENS))
@sync
async def test_every_screen_shrunk_below_80x24_is_the_size_line(isolated_config, key):
    """A screen open at 80x24 when the terminal shrinks is the one line too, and whole again at
    100x30 with what it showed (the help's rows refitted to the new width)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert SCREENS[key] in screen_text(app)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        assert shown(app) == [wanted((60, 20))], shown(app)
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        text = screen_text(app)
    assert "needs at least" not in text and SCREENS[key] in text, text
    assert len(text.splitlines()[0]) == 100


@pytest.mark.parametrize("key", ["question_mark", "T"])
@sync
async def test_the_screen_returned_to_after_a_resize_fits_the_terminal_now(isolated_config, key):
    """A screen closed (esc) after the terminal shrank leaves the dashboard's size line, not the
    panes laid out for the old size; one closed after it grew leaves the dashboard whole."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        await pilot.resize_terminal(60, 20)
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert shown(app) == [wanted((60, 20))], shown(app)
        await pilot.press(key)
        await settle(pilot)
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        text = screen_text(app)
    assert "needs at least" not in text and "╭─ kernels" in text, text
