"""The baseline picker (b) and the A/B's variant list (a) with more rows than their box shows: each
draws a vertical scrollbar, and its rows fit beside it, so every line of the list is a row. Both had
drawn that scrollbar 2 cells wide, where the picker fits its columns beside 1 and the variants' widest
row (a refused one's, on torch-eager) fits 80 columns only beside 1: a horizontal scrollbar took the
list's last line at 80 (the picker's at 100 too)."""

from __future__ import annotations

import shutil

import pytest
from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import torch_eager_fixture
from test_app_fit import screen_text, settle

from tfdash.app.app import TfdashApp
from tfdash.app.compare import RECENT
from tfdash.app.main import snapshot_app
from tfdash.profiling.ab import VARIANTS

SIZES = [(80, 24), (100, 30), (120, 40)]


def list_lines(app, selector: str) -> list[str]:
    """The lines the list takes on the screen (its header, its rows, and any scrollbar's line)."""
    r = app.screen.query_one(selector).region
    return [line[r.x:r.right] for line in screen_text(app).splitlines()[r.y:r.bottom]]


async def opened(pilot, key: str, selector: str):
    await settle(pilot)
    await pilot.press(key)
    table = pilot.app.screen.query_one(selector)
    for _ in range(200):  # the picker reads its snapshots in a worker
        if table.row_count:
            break
        await pilot.pause(0.05)
    await settle(pilot)
    return table


@pytest.mark.parametrize("size", SIZES)
@sync
async def test_the_picker_fits_its_rows_beside_its_scrollbar(isolated_config, tmp_path, monkeypatch, size):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SNAPSHOT, tmp_path / "run.json")
    long = "tfdash-qwen3-1.7b-an-export-named-at-a-length-no-box-of-100-columns-shows"
    for i in range(RECENT):  # each name cut at its start to what fits: the columns fill the list's width
        shutil.copy(SNAPSHOT, tmp_path / f"{long}-{i:02d}.json")
    app = snapshot_app(tmp_path / "run.json", theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        table = await opened(pilot, "b", "#picker-table")
        lines = list_lines(app, "#picker-table")
        scrolls = table.show_vertical_scrollbar
        shows_h = table.show_horizontal_scrollbar
    assert scrolls == (size != (120, 40)), lines  # 20 rows and a header: 120x40 shows them all
    assert "file" in lines[0] and ("against this run" in lines[0] or "compares" in lines[0]), lines
    rows = lines[1:] if scrolls else [line for line in lines[1:] if line.strip()]
    assert rows and all(".json" in r and "✓" in r for r in rows), lines
    assert not shows_h


@pytest.mark.parametrize("size", SIZES)
@sync
async def test_the_ab_variants_fit_their_rows_beside_their_scrollbar(isolated_config, size):
    """On torch-eager most variants are refused, each row ending with why."""
    snap = torch_eager_fixture()
    app = TfdashApp(LiveStandIn(snap), theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        table = await opened(pilot, "a", "#ab-variants")
        lines = list_lines(app, "#ab-variants")
        scrolls = table.show_vertical_scrollbar
        shows_h = table.show_horizontal_scrollbar
        about = {str(row[0]): str(row[1]) for row in (table.get_row_at(i) for i in range(table.row_count))}
        wide = table.virtual_size.width
    assert scrolls == (size != (120, 40)), lines  # 21 variants and a header: 120x40 shows them all
    assert wide == 67  # the columns, with their padding: 68 cells inside the box at 80 columns, less 1
    rows = lines[1:] if scrolls else [line for line in lines[1:] if line.strip()]
    assert rows and all(r.split()[0] in VARIANTS and about[r.split()[0]] in r for r in rows), lines
    assert not shows_h


@sync
async def test_home_end_and_the_page_keys_move_the_pickers_cursor(isolated_config, tmp_path, monkeypatch):
    """Home and End went nowhere in the picker: the table's own scroll sideways, and its columns fit
    its width. They go to the first row and the last, in order with the keys typed before them (a
    priority binding would act ahead of the arrows still queued); PageDown and PageUp move by a page."""
    import os

    from test_app_compare import once
    from test_app_typeahead import burst

    from tfdash.app.messages import BaselineChosen

    monkeypatch.chdir(tmp_path)
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    names = [f"s{i:02d}.json" for i in range(RECENT)]  # s00 the oldest: listed last
    for i, name in enumerate(names):
        os.utime(shutil.copy(SNAPSHOT, tmp_path / name), (1_800_000_000 + i,) * 2)

    async def choose(*keys: str) -> str:
        messages = []
        app = snapshot_app(shown, theme="tfdash-dark")
        async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
            await opened(pilot, "b", "#picker-table")
            burst(app, *keys, "enter")
            await settle(pilot)
        [chosen] = once(messages, BaselineChosen)
        return chosen.label

    assert await choose("end") == names[0]
    assert await choose("end", "up") == names[1]
    assert await choose("down", "down", "home") == names[-1]
    listed = names[::-1]  # newest first
    page = listed.index(await choose("pagedown"))  # the rows the box shows, less one
    assert 2 < page < len(listed) - 1, page
    assert await choose("pagedown", "pageup") == listed[0]
    assert await choose("end", "pageup") == listed[-1 - page]
