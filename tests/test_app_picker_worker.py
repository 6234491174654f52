"""`b` reads its snapshots in a worker: the picker opens at once and says it is reading them, esc
closes it meanwhile, and quitting does not wait for the rest. Each snapshot here takes SLOW_S to
load (as twenty do while a decode shares the GIL): read on the UI thread, `b` froze the screen for
all of them."""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import settle, wait_for
from test_app_fit import footer, screen_text

from tfdash.app.main import snapshot_app

SLOW_S, FILES = 1.0, 4  # a plain q on a loaded 2-core machine takes about 1.1 s: the bound is 3 s


def slow_app(tmp_path, monkeypatch):
    """A dashboard over the fixture with FILES snapshots to pick from, each SLOW_S to load."""
    import tfdash.profiling.export as export

    exports = tmp_path / "exports"
    exports.mkdir()
    for i in range(FILES):
        shutil.copy(SNAPSHOT, exports / f"run-{i}.json")
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", export_dir=exports)
    load = export.load_snapshot

    def slow(path, *a, **kw):
        time.sleep(SLOW_S)
        return load(path, *a, **kw)

    monkeypatch.setattr(export, "load_snapshot", slow)
    return app


@pytest.mark.serial  # opened and closed within SLOW_S
@sync
async def test_b_opens_at_once_reading_and_esc_closes_it_meanwhile(isolated_config, tmp_path, monkeypatch):
    app = slow_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        t0 = time.monotonic()
        await pilot.press("b")
        await pilot.pause()
        opened = time.monotonic() - t0
        text = screen_text(app)
        assert f"reading {FILES} snapshots…" in text and "baseline snapshot" in text, text
        assert opened < SLOW_S, opened  # not after reading them all
        assert "⏎ Choose" not in footer(app) and "esc Close" in footer(app), footer(app)
        t0 = time.monotonic()
        await pilot.press("escape")
        await pilot.pause()
        assert "baseline snapshot" not in screen_text(app) and time.monotonic() - t0 < SLOW_S
        await pilot.press("b")  # again, read to the end this time: the list replaces the line
        await wait_for(pilot, lambda: "run-0.json" in screen_text(app), timeout=30, what="the list")
        text = screen_text(app)
        assert "snapshots…" not in text and all(f"run-{i}.json" in text for i in range(FILES)), text
        # the footer offers ⏎ once it has redrawn its keys for the list
        await wait_for(pilot, lambda: "⏎ Choose" in footer(app), timeout=10, what=f"⏎ in the footer: {footer(app)!r}")


@pytest.mark.serial  # quit within SLOW_S * 3
def test_quitting_while_the_picker_reads_does_not_wait_for_the_rest(isolated_config, tmp_path, monkeypatch):
    app = slow_app(tmp_path, monkeypatch)

    async def quit_while_reading() -> float:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            t0 = time.monotonic()
            await pilot.press("b")
            await pilot.pause()
            assert f"reading {FILES} snapshots…" in screen_text(app)
            await pilot.press("q", "q")  # the picker closes, the dashboard quits
        return t0

    t0 = asyncio.run(quit_while_reading())
    assert time.monotonic() - t0 < SLOW_S * (FILES - 1), time.monotonic() - t0  # the file in hand, not the rest


@sync
async def test_a_list_handed_back_before_the_picker_is_pushed_is_shown(isolated_config, tmp_path, monkeypatch):
    """The read's hand-back can run on the app's loop while `b` still waits out its grace, before the
    picker is pushed, and the worker be marked finished only after the grace: the hand-back found no
    picker and the picker, given no list, said "reading 1 snapshot…" for good. Here the worker
    lingers after handing back its list, past the grace."""
    import tfdash.app.compare as compare

    exports = tmp_path / "exports"
    exports.mkdir()
    shutil.copy(SNAPSHOT, exports / "run-0.json")
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", export_dir=exports)
    hand_back = compare.hand_back

    def lingering(*a):
        hand_back(*a)
        time.sleep(compare.PICKER_GRACE_S + 0.3)  # not finished until well after the grace

    monkeypatch.setattr(compare, "hand_back", lingering)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await wait_for(pilot, lambda: "run-0.json" in screen_text(app), timeout=5,
                       what=f"the list, not {screen_text(app)!r}")
        assert "snapshot…" not in screen_text(app)
