"""Home and End in the tables with a row cursor: the A/B's variants, the drill-down's instances and
the kernel table go to their first and last row (widgets/row_list.RowList), as the picker's do. The
DataTable's own Home and End scroll sideways, and each of these fits its columns to its width, so
they had moved nothing. Typed ahead with the arrows, they act in the order typed."""

from __future__ import annotations

from fixtures.appkit import LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import settle
from test_app_static import SIZE, make_app, table_labels
from test_app_typeahead import burst

from tfdash.app.app import TfdashApp
from tfdash.profiling.ab import VARIANTS


@sync
async def test_home_and_end_pick_the_first_and_last_ab_variant(isolated_config):
    async def runs(*keys: str) -> list[str]:
        source = LiveStandIn()
        app = TfdashApp(source, theme="tfdash-dark")
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("a")
            await settle(pilot)
            burst(app, *keys, "enter")
            await settle(pilot)
            await app.workers.wait_for_complete()
            await settle(pilot)
        return source.asked

    names = list(VARIANTS)
    assert await runs("end") == [f"ab {names[-1]}"]
    assert await runs("end", "up") == [f"ab {names[-2]}"]
    assert await runs("down", "down", "home") == [f"ab {names[0]}"]


@sync
async def test_home_and_end_move_the_drill_downs_current_launch(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # gate_up: a launch a layer, L0 first
        await pilot.pause()
        drill = app.screen
        roles = {k.index: k.role for k in app.snapshot.kernels}
        burst(app, "end")
        await settle(pilot)
        assert roles[drill.current] == "L27.gate_up"
        burst(app, "up", "up", "home", "down")
        await settle(pilot)
        assert roles[drill.current] == "L1.gate_up"


@sync
async def test_home_and_end_go_to_the_kernel_tables_first_and_last_row(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        labels = table_labels(app)
        burst(app, "end", "enter")
        await settle(pilot)
        assert app.screen.row.label == labels[-1]
        await pilot.press("escape")
        await settle(pilot)
        burst(app, "down", "down", "home", "enter")
        await settle(pilot)
        assert app.screen.row.label == labels[0]
