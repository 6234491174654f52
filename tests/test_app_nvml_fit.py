"""The NVML pane at every height it is given: its six lines of numbers, then each chart whole
(its key, its plot, its axis labels) or not at all, the power chart going first; the pane's bottom
border says how many more rows would show what it left out. It had kept a chart's key and cut the
plot under it with nothing said (116x24 to 116x34, and `v` at 100x30), its power chart never seen."""

from __future__ import annotations

import re

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import screen_text, settle

from tfdash.app.main import snapshot_app
from tfdash.app.widgets.nvml import NVML_CHARTS_H, NVML_NUMBERS

LABELS = ("DRAM GB/s", "GB/s window", "GB/s predicted", "NVML ÷ predicted", "MHz SM", "°C")
WHOLE = 2 + NVML_NUMBERS + NVML_CHARTS_H  # the pane's rows with both charts: its border included


def region_lines(app, node: str, strip: bool = True) -> tuple[list[str], str]:
    """The lines inside a pane's border (stripped, or as drawn), and its bottom border (where a
    subtitle is drawn)."""
    r = app.screen.query_one(node).region
    lines = screen_text(app).splitlines()
    inside = [line[r.x + 1:r.right - 1] for line in lines[r.y + 1:r.bottom - 1]]
    return [line.strip() for line in inside] if strip else inside, lines[r.bottom - 1][r.x:r.right]


def assert_charts_whole_or_said(app, size) -> int:
    """Returns how many charts the pane shows."""
    inside, bottom = region_lines(app, "#nvml")
    text = "\n".join(inside)
    for label in LABELS:
        assert label in text, (size, label, text)
    shown = 0
    for key, axis in (("━ DRAM GB/s", r"GB/s\s+s"), ("━ power W", r"W\s+s")):
        at = [i for i, line in enumerate(inside) if line.startswith(key)]
        if not at:
            continue
        shown += 1
        # the key's plot down to its axis labels, on the screen before the next key or the border
        below = inside[at[0] + 1:]
        end = next((i for i, line in enumerate(below) if line.startswith("━")), len(below))
        assert any(re.fullmatch(axis, line) for line in below[:end]), (size, key, text)
        assert len([line for line in below[:end] if line]) >= 3, (size, key, text)  # ticks and a plot
    rows = app.screen.query_one("#nvml").region.height
    if shown == 2:
        assert "more row" not in bottom, (size, bottom)
    else:
        said = "power chart needs" if shown == 1 else "charts need"
        more = f"{WHOLE - rows} more row{'' if WHOLE - rows == 1 else 's'}"
        assert f"{said} {more}" in bottom and f"{more}s" not in bottom, (size, rows, bottom, text)
    return shown


def test_the_least_nvml_pane_is_its_numbers_and_its_border():
    from tfdash.app.layout import NVML_MIN_H

    assert NVML_MIN_H == NVML_NUMBERS + 2


@sync
async def test_the_nvml_pane_shows_each_chart_whole_or_says_how_many_rows_it_needs(isolated_config):
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    beside = [(116, 24), (116, 28), (116, 31), (116, 32), (116, 34), (120, 36), (120, 40), (160, 48)]
    behind_v = [(80, 30), (100, 30), (100, 36), (100, 40), (100, 48)]
    seen = set()
    async with app.run_test(size=beside[0]) as pilot:
        for size in beside:
            await pilot.resize_terminal(*size)
            await settle(pilot)
            assert app.screen.query_one("#nvml").display, size
            seen.add(assert_charts_whole_or_said(app, size))
        for size in behind_v:
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await pilot.press("v")
            await settle(pilot)
            assert "╭─ NVML" in screen_text(app), size
            seen.add(assert_charts_whole_or_said(app, size))
            await pilot.press("v")
            await settle(pilot)
    assert seen == {0, 1, 2}, seen  # each way is seen


@sync
async def test_the_pane_grown_by_the_rows_it_asked_for_shows_both_charts(isolated_config):
    """The rows the border asks for are the rows that show both charts: `v` at 100 columns, the
    terminal made taller by that many (the roofline pane above keeps its rows, NVML takes the rest)."""
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        _, bottom = region_lines(app, "#nvml")
        more = int(re.search(r"charts? needs? (\d+) more rows?", bottom).group(1))
        await pilot.resize_terminal(100, 30 + more)
        await settle(pilot)
        assert assert_charts_whole_or_said(app, (100, 30 + more)) == 2
        await pilot.resize_terminal(100, 30 + more - 1)
        await settle(pilot)
        assert assert_charts_whole_or_said(app, (100, 30 + more - 1)) == 1
        assert "power chart needs 1 more row ─" in region_lines(app, "#nvml")[1]  # one row, not '1 more rows'


@sync
async def test_the_nvml_notes_start_in_one_column(isolated_config):
    """Each note in the NVML pane starts in one column, on its label's line: "bytes ÷ step" and
    "window" had started one and three cells past the others, after labels as long as the column."""
    notes = {"DRAM GB/s": "NVML GPM, now", "GB/s window": "NVML GPM", "GB/s predicted": "bytes ÷ step",
             "NVML ÷ predicted": "window", "MHz SM": "3,201 MHz mem", "W": "50 °C"}
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        for size, keys in (((120, 40), ()), ((160, 48), ()), ((100, 30), ("v",))):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            await pilot.press(*keys)
            await settle(pilot)
            inside, _ = region_lines(app, "#nvml", strip=False)
            starts = set()
            for label, note in notes.items():
                line = next(x for x in inside if re.search(rf"\d\S*\s+{re.escape(label)}\s", x))
                assert note in line, (size, label, line)
                starts.add(line.index(note))
            assert len(starts) == 1, (size, inside[:6])


@sync
async def test_v_at_100x30_shows_the_dram_chart(isolated_config):
    """`v` at 100x30: the NVML pane had four rows under its numbers, one short of the DRAM chart's key
    and least plot, and showed them empty; the roofline pane above gives up the blank line over its
    gap bar, and the chart is drawn whole."""
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert assert_charts_whole_or_said(app, (100, 30)) == 1
        inside, _ = region_lines(app, "#nvml")
        assert "" not in inside, inside  # no empty row left in the pane


@sync
async def test_v_at_80x24_leaves_no_bare_rows_under_the_roofline_pane(isolated_config):
    """`v` at 80x24 had left six bare rows between the roofline pane and the footer (too few for NVML's
    numbers, which the line over the panes holds): the NVML pane takes them with its DRAM chart, whole."""
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        lines = screen_text(app).splitlines()
        roof, nvml = (app.screen.query_one(q).region for q in ("#roofline", "#nvml"))
        inside, bottom = region_lines(app, "#nvml")
    assert "NVML 1,983 GB/s  422 W" in lines[1], lines[1]  # the numbers, in the line
    assert nvml.y == roof.bottom and nvml.bottom == len(lines) - 1, (roof, nvml, lines)  # down to the footer
    assert not [line for line in lines[roof.bottom:-1] if not line.strip()], lines
    assert inside[0].startswith("━ DRAM GB/s"), inside
    assert re.fullmatch(r"GB/s\s+s", inside[-1]) and all(inside), inside  # its plot down to the axis labels
    assert "numbers and power chart need 12 more rows" in bottom, bottom
