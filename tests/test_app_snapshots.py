"""Pictures of the screens (pytest-textual-snapshot), rendered from the recorded snapshot
tests/fixtures/snapshot-1.7b.json: no engine, no NVML, no clock -- the same SVG every run.
Regenerate after an intended change with `pytest tests/test_app_snapshots.py --snapshot-update`."""

from __future__ import annotations

from fixtures.appkit import SNAPSHOT, isolated_config  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app


def fake_tilelang(family: str) -> str:
    # The drill-down's source pane: a fixed stand-in, so kernel edits do not change the picture.
    return (f"@T.prim_func\ndef {family}_kernel(x: T.Tensor((2048,), \"bfloat16\")):\n"
            "    with T.Kernel(132, threads=256) as bx:\n        ...  # recorded stand-in\n")


async def settle(pilot) -> None:
    """Let every deferred update (DataTable column widths, plots sized on resize) land."""
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


def app(**kw):
    return snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=fake_tilelang, **kw)


def test_main_screen(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(160, 48), run_before=settle)


def test_main_screen_120x40(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(120, 40), run_before=settle)


def test_main_screen_every_launch_light(isolated_config, snap_compare):
    async def group_none(pilot):
        await settle(pilot)
        await pilot.press("g", "g", "g")
        await settle(pilot)

    assert snap_compare(snapshot_app(SNAPSHOT, theme="tfdash-light", tilelang_source=fake_tilelang),
                        terminal_size=(160, 48), run_before=group_none)


def test_drill_down(isolated_config, snap_compare):
    async def drill(pilot):
        await settle(pilot)
        await pilot.press("down", "enter")  # down: the second costliest op
        await settle(pilot)

    assert snap_compare(app(), terminal_size=(160, 48), run_before=drill)


def test_main_screen_80x24(isolated_config, snap_compare):
    """The smallest supported terminal: roofline and NVML as one line (v shows them), columns
    dropped by priority, the footer holding only whole keys."""
    assert snap_compare(app(), terminal_size=(80, 24), run_before=settle)


def test_main_screen_80x24_panes(isolated_config, snap_compare):
    async def panes(pilot):
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)

    assert snap_compare(app(), terminal_size=(80, 24), run_before=panes)


def test_main_screen_200x60(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(200, 60), run_before=settle)


async def _drill(pilot):
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)


def test_drill_down_80x24(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(80, 24), run_before=_drill)


def test_drill_down_120x40(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(120, 40), run_before=_drill)


def test_drill_down_200x60(isolated_config, snap_compare):
    assert snap_compare(app(), terminal_size=(200, 60), run_before=_drill)


async def _help(pilot):
    await settle(pilot)
    await pilot.press("question_mark")
    await settle(pilot)


def _help_app(monkeypatch):
    # The help names the config file's path: one that is the same on every machine and every run.
    monkeypatch.setenv("TFDASH_CONFIG_DIR", "/nonexistent/tfdash")
    return app()


def test_help_80x24(monkeypatch, snap_compare):
    assert snap_compare(_help_app(monkeypatch), terminal_size=(80, 24), run_before=_help)


def test_help_160x48(monkeypatch, snap_compare):
    assert snap_compare(_help_app(monkeypatch), terminal_size=(160, 48), run_before=_help)
