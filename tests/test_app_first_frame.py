"""The first frame a screen draws is already fitted to the terminal: a table whose columns are
chosen for its width shows at once the columns it settles on, never every column cut off at the
pane's border for a frame (a second or two on a loaded host) before it is refitted."""

from __future__ import annotations

import pytest
from fixtures import appkit
from fixtures.appkit import SNAPSHOT, sync
from textual.renderables.blank import Blank
from textual.widgets import DataTable, Static

from tfdash.app.main import snapshot_app

isolated_config = appkit.isolated_config  # the fixture, for usefixtures

SIZES = [(80, 24), (100, 30), (120, 40), (160, 48)]


def make_app(**kw):
    return snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=lambda f: f"def {f}():\n    ...\n", **kw)


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


def headers(t: DataTable) -> list[str]:
    return [str(c.label) for c in t.ordered_columns]


def record_first_draws(monkeypatch, screen_name: str) -> dict[str, tuple]:
    """Each table's (headers, width) and the top bar's text as first drawn on `screen_name`, from
    their draw methods (DataTable.render_lines, Static.render)."""
    first: dict[str, tuple] = {}
    render_lines, render = DataTable.render_lines, Static.render

    def table_drawn(self, crop):
        if type(self.screen).__name__ == screen_name and self.size.width:
            first.setdefault(self.id, (headers(self), self.size.width))
        return render_lines(self, crop)

    def static_drawn(self):
        shown = render(self)
        if self.id == "topbar-title" and type(self.screen).__name__ == screen_name:
            first.setdefault(self.id, str(shown))
        return shown

    monkeypatch.setattr(DataTable, "render_lines", table_drawn)
    monkeypatch.setattr(Static, "render", static_drawn)
    return first


@pytest.mark.parametrize("baseline", [False, True])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_drill_downs_tables_are_fitted_in_its_first_frame(monkeypatch, size, baseline):
    """⏎ on a row: the instances and the cost-by-operand tables are first drawn with the columns
    they keep once settled (against a baseline, its Δ among them), never with every column at first
    ("writte", a lone "b", the Δ scrolled off behind a horizontal scrollbar); the top bar names
    whole items ("drill-down", not "drill-down · op ")."""
    first = record_first_draws(monkeypatch, "DrillScreen")
    app = make_app(**({"baseline": SNAPSHOT} if baseline else {}))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # gate_up: 28 instances, 4 operands
        await settle(pilot)
        tables = {t.id: t for t in app.screen.query(DataTable)}
        settled = {k: (headers(t), t.size.width) for k, t in tables.items() if t.size.width}
        title = str(app.screen.query_one("#topbar-title", Static).render())
    assert "instances-table" in first and "operands-table" in settled
    for key in first.keys() - {"topbar-title"}:  # at 80x24 against a baseline the operands' rows are all scrolled
        assert first[key] == settled[key], key
        assert settled[key][0], key
    if baseline:
        assert settled["instances-table"][0][-1] == "Δ"
    assert first["topbar-title"] == title


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_timelines_summary_is_worded_for_its_width_in_its_first_frame(monkeypatch, size):
    """T: the summary's µs a cell is the fit of the step to the view's width from the first frame,
    not the fallback's before layout (218 µs/cell for a frame, then 47.1 at 80x24)."""
    first: list[str] = []
    render = Static.render

    def static_drawn(self):
        shown = render(self)
        if self.id == "timeline-summary" and not first:
            first.append(str(shown))
        return shown

    monkeypatch.setattr(Static, "render", static_drawn)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        settled = str(app.screen.query_one("#timeline-summary", Static).render())
    assert "µs/cell" in settled and first == [settled], (first, settled)


def record_first_frames(monkeypatch) -> dict[str, str]:
    """The text of the first frame each screen (by class name) draws as the current screen, taken
    as it is drawn (Screen._compositor_refresh), the dialogs with the dashboard around them.
    Scrollbars are drawn blank: Textual shows a widget's one a layout after the first that sizes it."""
    from test_app_fit import screen_text
    from textual.scrollbar import ScrollBar
    from textual.screen import Screen

    first: dict[str, str] = {}
    refresh = Screen._compositor_refresh

    def drawn(self):
        refresh(self)
        if self.is_current and self.size.width:
            first.setdefault(type(self).__name__, screen_text(self.app))

    monkeypatch.setattr(Screen, "_compositor_refresh", drawn)
    monkeypatch.setattr(ScrollBar, "render", lambda self: Blank(self.styles.scrollbar_background))
    return first


async def first_and_settled(monkeypatch, app, size, key: str | None) -> tuple[str, str]:
    """The first frame of the screen `key` opens (None: the dashboard) and the same screen settled,
    less the footer line: Textual's Footer composes its keys only after the first frame."""
    from test_app_fit import screen_text

    first = record_first_frames(monkeypatch)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if key:
            await pilot.press(key)
            await settle(pilot)
        name, settled = type(app.screen).__name__, screen_text(app)
    assert name in first, (name, list(first))
    return "\n".join(first[name].splitlines()[:-1]), "\n".join(settled.splitlines()[:-1])


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_pickers_table_is_filled_in_its_first_frame(monkeypatch, tmp_path, size):
    """b: the snapshots are in the picker's first frame, with the columns that fit; the table was
    empty for a frame (filled before it had a width), a blank box where the list comes."""
    from tfdash.profiling.export import load_snapshot, write_snapshot

    monkeypatch.chdir(tmp_path)
    write_snapshot(load_snapshot(SNAPSHOT), tmp_path / "exports" / "tfdash-qwen3-1.7b-20261129-101500.json")
    first, settled = await first_and_settled(monkeypatch, make_app(export_dir=tmp_path / "exports"), size, "b")
    assert "20261129-101500.json" in settled and first == settled, (first, settled)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_helps_rows_are_wrapped_to_its_table_in_its_first_frame(monkeypatch, size):
    """?: "does" is wrapped to its column from the first frame; fitted at mount to a guess at the
    table's width, it was two cells short for a frame ("the drill-down / and roofline" on a third
    line at 80 columns), the ids two cells left of where they settle."""
    first, settled = await first_and_settled(monkeypatch, make_app(), size, "question_mark")
    assert "interrupt" in settled and first == settled, (first, settled)


@pytest.mark.parametrize("recorded", [False, True])
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_ab_box_is_laid_out_for_its_size_in_its_first_frame(monkeypatch, size, recorded):
    """a: the box is laid out as it settles from its first frame. Short (80x24), it was drawn for a
    frame at 85 % of the height before it took the whole of it; a recorded A/B's sides had no rows
    (filled after that frame), and the verdict and the per-op table were drawn higher than they settle."""
    import dataclasses

    from test_app_compare import recorded_ab

    from tfdash.app.app import TfdashApp
    from tfdash.profiling.export import load_snapshot

    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(recorded_ab(),)), theme="tfdash-dark") \
        if recorded else TfdashApp(appkit.LiveStandIn(), theme="tfdash-dark")
    first, settled = await first_and_settled(monkeypatch, app, size, "a")
    assert ("B tilelang-unfused" in settled) == recorded and "tilelang-gu1" in settled
    assert first == settled, (first, settled)


def pane_places(text: str) -> list[tuple[int, int, str]]:
    """Where each pane's top border is (row, column) and its title, and the summary line's text."""
    import re

    lines = text.splitlines()
    places = [(y, m.start(), m.group(1)) for y, line in enumerate(lines) for m in re.finditer(r"╭─ (\w+)", line)]
    return places + [(1, 0, lines[1].strip())]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40)])
@pytest.mark.usefixtures("isolated_config")
@sync
async def test_the_dashboard_is_drawn_for_its_size_in_its_first_frame(monkeypatch, size):
    """The dashboard's first frame is the one it settles on. Its panes are placed as they settle,
    the line for the hidden panes with them: its size classes (-narrow, -short) were set on its
    first Resize, after that frame, and at 80x24 it drew the kernel table cut to 34 columns beside an
    NVML pane `v` shows. The widgets that fit their size are fitted in that frame too: the kernel
    table showed a "count" column and a cut "% of s" before its fitted columns at 120x40, the
    continuation's border "stand-in vo…" before "made-up vocab", the charts' ticks spaced for
    another width."""
    first, settled = await first_and_settled(monkeypatch, make_app(), size, None)
    assert any(title == "kernels" for _, _, title in pane_places(settled))
    assert pane_places(first) == pane_places(settled), (first, settled)
    assert first == settled, (first, settled)
