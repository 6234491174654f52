"""Keys typed ahead in the dialogs: a terminal hands the app a burst (↓ ↓ ⏎ in one read, or a busy
dashboard behind the keys), and ⏎, a priority binding, is acted on as it arrives, while the arrows
before it are still queued for the table. ⏎ must act on the row the arrows reached."""

from __future__ import annotations

import os
import shutil

from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import once, settle

from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app
from tfdash.app.messages import BaselineChosen
from textual import events


def burst(app, *keys: str) -> None:
    """The keys as a terminal driver posts them: all queued before the app handles the first."""
    for key in keys:
        app.post_message(events.Key(key, "\r" if key == "enter" else None))


@sync
async def test_down_then_enter_typed_ahead_in_the_picker_chooses_the_row_reached(isolated_config, tmp_path,
                                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    names = ["c.json", "b.json", "a.json"]  # newest first in the picker
    for i, name in enumerate(reversed(names)):
        p = shutil.copy(SNAPSHOT, tmp_path / name)
        os.utime(p, (1_800_000_000 + i, 1_800_000_000 + i))
    messages = []
    app = snapshot_app(shown, theme="tfdash-dark")
    async with app.run_test(size=(100, 30), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        burst(app, "down", "down", "enter")
        await settle(pilot)
    [chosen] = once(messages, BaselineChosen)
    assert chosen.label == names[2]


@sync
async def test_down_then_enter_typed_ahead_in_the_ab_box_runs_the_variant_reached(isolated_config):
    source = LiveStandIn()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        second = str(app.screen.query_one("#ab-variants").get_row_at(1)[0])
        burst(app, "down", "enter")
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
    assert source.asked == [f"ab {second}"]


@sync
async def test_a_remapped_choose_key_still_chooses_and_runs(isolated_config, tmp_path, monkeypatch):
    """⏎ hands itself to the table so it acts in order with the arrows; a key the user remapped
    the picker's and the A/B box's ⏎ to (the table does not bind it) still acts."""
    import json

    (isolated_config / "config.json").write_text(json.dumps({"keymap": {"picker.choose": "c", "ab.start": "g"}}))
    monkeypatch.chdir(tmp_path)
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    shutil.copy(SNAPSHOT, tmp_path / "a.json")
    messages = []
    app = snapshot_app(shown, theme="tfdash-dark")
    async with app.run_test(size=(100, 30), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
    assert [m.label for m in once(messages, BaselineChosen)] == ["a.json"]

    source = LiveStandIn()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        first = str(app.screen.query_one("#ab-variants").get_row_at(0)[0])
        await pilot.press("g")
        await settle(pilot)
        await app.workers.wait_for_complete()
    assert source.asked == [f"ab {first}"]
