"""The roofline pane at every size from 80x24 up: every line it holds is on the screen, or it steps
aside (the line under the header stands for it) and `v` shows it with every line; never a
scrollbar inside it. From 116 columns up it was given two fifths of the screen's height whatever
its lines: at 116x30 and 120x36 "step ÷ floor" and "tok/s ceiling" sat under a scrollbar whose
thumb was drawn in the "GB/s achieved" line (at 116x30 the gap bar and its legend too), and `v`
at 80x24 showed the pane cut after "of datasheet"."""

from __future__ import annotations

import dataclasses

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import screen_text, settle
from test_app_roofline import cpu_run, home_cache, low_ceiling  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot, write_snapshot

WIDTHS = (80, 100, 115, 116, 120, 130, 160, 250)  # either side of 116 columns, where three panes fit in a row
HEIGHTS = (24, 30, 31, 32, 36, 40, 48, 60)  # either side of 32 rows, where the top row's charts go
NAMED = ("bytes/step", "measured", "GB/s achieved", "of ceiling", "of datasheet", "kernels over it", "gaps",
         "tok/s ceiling")


def words(text: str) -> str:
    return " ".join(text.split())


def pane_text(app) -> str:
    """What the screen shows inside the roofline pane's border, its lines joined, spaces collapsed."""
    r = app.screen.query_one("#roofline").region
    lines = screen_text(app).splitlines()[r.y + 1:r.bottom - 1]
    return " ".join(words(line[r.x + 1:r.right - 1]) for line in lines)


def held_lines(app) -> list[str]:
    """Each part of the pane as it renders now (a wrapped note joined as the screen's lines are)."""
    pane = app.screen.query_one("#roofline")
    return [words(str(child.render())) for child in pane.children if child.display]


def assert_every_line_shown(app, size, named=NAMED) -> None:
    pane = app.screen.query_one("#roofline")
    shown = pane_text(app)
    assert not pane.show_vertical_scrollbar and pane.max_scroll_y == 0, (size, pane.virtual_size, pane.region)
    for label in named:
        assert label in shown, (size, label, shown)
    for part in held_lines(app):
        assert part in shown, (size, part, shown)


async def walk(app, pilot, sizes, line: str, named=NAMED) -> int:
    """At each size: the pane whole, or its line under the header and `v` showing it whole. Returns
    how many sizes put it aside."""
    aside = 0
    for size in sizes:
        await pilot.resize_terminal(*size)
        await settle(pilot)
        if app.screen.query_one("#roofline").display:
            assert_every_line_shown(app, size, named)
            continue
        aside += 1
        lines = screen_text(app).splitlines()
        assert any(line in x for x in lines[1:3]) and "v Panes" in lines[-1], (size, lines[:3], lines[-1])
        await pilot.press("v")
        await settle(pilot)
        assert app.screen.query_one("#roofline").display, size
        assert_every_line_shown(app, size, named)
        await pilot.press("v")
        await settle(pilot)
    return aside


@sync
async def test_the_roofline_pane_shows_every_line_or_steps_aside_at_every_size(isolated_config):
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    sizes = [(w, h) for i, w in enumerate(WIDTHS) for h in HEIGHTS[i % 2::2]]  # half the grid, each row and column
    async with app.run_test(size=sizes[0]) as pilot:
        await settle(pilot)
        aside = await walk(app, pilot, sizes, "roofline 1.748 ms/step  47.7 % of ceiling",
                           NAMED + ("step ÷ floor",))
    assert 0 < aside < len(sizes)  # both ways are seen


@sync
async def test_a_cpu_run_over_its_ceiling_with_a_baseline_fits_too(isolated_config, home_cache, tmp_path):
    """The longest the pane gets: a baseline's line, the note under a share over the ceiling (two
    lines at 47 columns) and host timing's line under its time between launches."""
    low = write_snapshot(cpu_run(load_snapshot(low_ceiling(tmp_path))), tmp_path / "cpu-low.json")
    other = write_snapshot(cpu_run(load_snapshot(SNAPSHOT)), tmp_path / "other.json")
    app = snapshot_app(low, baseline=other, theme="tfdash-dark")
    sizes = [(w, h) for w in (80, 116, 160) for h in (24, 32, 36, 48)]
    async with app.run_test(size=sizes[0]) as pilot:
        await settle(pilot)
        await walk(app, pilot, sizes, "577.4 %! of ceiling", NAMED + ("baseline", "probe read low", "between launches: Python"))


@sync
async def test_the_reviewers_sizes_on_a_live_dashboard(isolated_config):
    """The live dashboard at the sizes it was seen to scroll at: every line in the pane, or the
    pane aside behind `v`."""
    from fixtures.appkit import LiveStandIn

    from tfdash.app.app import TfdashApp

    app = TfdashApp(LiveStandIn(dataclasses.replace(load_snapshot(SNAPSHOT))), theme="tfdash-dark",
                    tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=(116, 30)) as pilot:
        await settle(pilot)
        await walk(app, pilot, [(116, 30), (120, 36), (130, 40)], "roofline 1.748 ms/step")


@sync
async def test_v_gives_the_roofline_pane_its_rows_and_no_more(isolated_config, tmp_path):
    """`v` shows the roofline pane as tall as its lines, NVML under it, or where NVML has nothing to
    show the kernel table when it keeps its 10 rows there, or else nothing: at 80x24 the pane had kept
    six empty rows inside its border down to the footer, at 100x48 four that NVML's charts went
    without, and a CPU run's at 100x30 ten where its kernel table fits (at 80x24 NVML's DRAM chart
    alone is under it: test_app_nvml_fit)."""
    cpu = write_snapshot(cpu_run(load_snapshot(SNAPSHOT)), tmp_path / "cpu.json")
    for path, size, under in ((SNAPSHOT, (80, 24), "╭─ NVML"), (cpu, (80, 24), ""), (SNAPSHOT, (100, 48), "╭─ NVML"),
                              (cpu, (100, 30), "╭─ kernels"), (cpu, (120, 30), "╭─ kernels")):
        app = snapshot_app(path, theme="tfdash-dark")
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("v")
            await settle(pilot)
            r = app.screen.query_one("#roofline").region
            lines = screen_text(app).splitlines()
            if under == "╭─ kernels":  # the table's keys act on it: `s` sorts by the next column
                assert "s Sort" in lines[-1] and "sort measured ▼" in screen_text(app), lines[-1]
                await pilot.press("s")
                await settle(pilot)
                assert "sort measured ▼" not in screen_text(app), screen_text(app)
        inside = [line[r.x + 1:r.right - 1].strip() for line in lines[r.y + 1:r.bottom - 1]]
        assert inside and inside[-1].split()[1:3] == ["tok/s", "ceiling"], (path, size, lines)
        assert inside.count("") <= 1, (path, size, inside)  # the line over the gap bar
        assert lines[r.bottom - 1].lstrip().startswith("╰"), (path, size, lines)
        assert lines[r.bottom].startswith(under) if under else not lines[r.bottom].strip(), (size, lines[r.bottom])

LONG_WHY = ("nvmlInit failed: NVML_ERROR_DRIVER_NOT_LOADED: the NVIDIA kernel module is not loaded (a container "
            "started without --gpus, or a driver updated since boot that wants a reboot); tfdash reads no clocks, "
            "power or DRAM bandwidth until it loads")


def long_reason(tmp_path):
    """A CPU run over its ceiling with a baseline, whose NVML reason wraps to three rows under the header."""
    low = cpu_run(load_snapshot(low_ceiling(tmp_path)))
    low = dataclasses.replace(low, unavailable={**low.unavailable, "nvml": LONG_WHY})
    other = write_snapshot(cpu_run(load_snapshot(SNAPSHOT)), tmp_path / "other.json")
    return snapshot_app(write_snapshot(low, tmp_path / "cpu-low.json"), baseline=other, theme="tfdash-dark")


@sync
async def test_a_reason_that_wraps_under_the_header_leaves_the_kernel_table_its_rows(isolated_config, home_cache,
                                                                                     tmp_path):
    """The rows under the header are counted as wrapped: the roofline pane stays only where the
    kernel table keeps its 10 rows under it (at 120x32 it had 8, the reason's wrapped rows not counted)."""
    from tfdash.app.layout import BOTTOM_MIN_H

    app = long_reason(tmp_path)
    async with app.run_test(size=(120, 32)) as pilot:
        for size in ((116, 32), (120, 32), (120, 34), (120, 36), (160, 32), (160, 36)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            if app.screen.query_one("#roofline").display:
                assert_every_line_shown(app, size, ("bytes/step", "tok/s ceiling"))
                assert app.screen.query_one("#kernels").region.height >= BOTTOM_MIN_H, size
            else:
                assert "v Panes" in screen_text(app).splitlines()[-1], size


@sync
async def test_the_help_names_each_case_where_v_shows_the_roofline_pane(isolated_config, home_cache, tmp_path):
    """The pane folds in three cases, and `v`'s description names them all: a narrow terminal, a
    short one, and one tall enough whose kernel table its lines would leave too few rows (a CPU run
    over its ceiling with a baseline and a long NVML reason at 120x32, where "narrow or short" was all it said)."""
    from test_app_fit import help_rows

    app = long_reason(tmp_path)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        assert "v Panes" in screen_text(app).splitlines()[-1]  # neither narrow nor short, and folded
        await pilot.resize_terminal(120, 80)  # the help's every row on the screen
        await pilot.press("question_mark")
        await settle(pilot)
        rows = dict((i, d) for d, i in help_rows(screen_text(app)))
    does = words(rows["panes"])
    for case in ("under 116 columns", "under 32 rows", "leave the kernel table under 10 rows"):
        assert case in does, does


@sync
async def test_v_waits_for_the_first_snapshot(isolated_config):
    """While the engine is built there is no snapshot, and `v` had shown an empty roofline pane over
    an NVML pane of a chart key and nothing else: it is offered once the first snapshot is in."""
    from fixtures.appkit import LiveStandIn

    from tfdash.app.app import TfdashApp
    from tfdash.app.messages import SessionNews

    class Building(LiveStandIn):
        def start(self, app) -> None:  # the engine is still being built: no news yet
            pass

    app = TfdashApp(Building(), theme="tfdash-dark", tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
        assert "v Panes" not in lines[-1] and "q Quit" in lines[-1], lines[-1]
        # nor the table's keys over an empty table (they were offered while the engine was built)
        assert not any(k in lines[-1] for k in ("⏎ Drill", "s Sort", "/ Filter", "g Group")), lines[-1]
        await pilot.press("v")
        await settle(pilot)
        assert "╭─ roofline" not in screen_text(app) and "╭─ continuation" in screen_text(app)
        app.post_message(SessionNews())  # the first snapshot
        await settle(pilot)
        assert "v Panes" in screen_text(app).splitlines()[-1]
        assert "s Sort" in screen_text(app).splitlines()[-1] and "⏎ Drill" in screen_text(app).splitlines()[-1]
        await pilot.press("v")
        await settle(pilot)
        assert_every_line_shown(app, (80, 24))
