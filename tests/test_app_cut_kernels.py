"""A snapshot whose `kernels` list is shorter than its run's launches/step (a file edited or cut
short by hand) opened as if whole: the header's "143 launches/step" over a table of 5 rows, the
Σ step of those 5, and no word that rows were missing. The open says so in one line, in the
dashboard and in the text summary, and the header keeps the run's own count."""

from __future__ import annotations

import json

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import screen_text, settle
from test_app_live import toasts_of

from tfdash.app.main import snapshot_app

LISTED = 5
NOTE = "the snapshot's kernel list is incomplete: 5 of the run's 143 launches/step"


def cut_snapshot(tmp_path):
    """The fixture's snapshot file with its kernel rows after the first LISTED cut off."""
    raw = json.loads(SNAPSHOT.read_text())
    assert raw["meta"]["launches_per_step"] == 143 and len(raw["kernels"]) == 143
    raw["kernels"] = raw["kernels"][:LISTED]
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(raw))
    return path


@sync
async def test_opening_a_snapshot_with_a_cut_kernel_list_says_it_is_incomplete(isolated_config, tmp_path):
    app = snapshot_app(cut_snapshot(tmp_path), theme="tfdash-dark")
    said = toasts_of(app)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        for key in ("T", "escape", "enter", "escape"):  # the timeline and the drill-down over 5 rows: no traceback
            await pilot.press(key)
            await settle(pilot)
    assert [s for s in said if s.startswith(NOTE)], said
    assert "143 launches/step" in text.splitlines()[0] and f"{LISTED} rows · {LISTED} launches" in text, text


@sync
async def test_a_whole_snapshot_opens_without_the_note(isolated_config):
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    said = toasts_of(app)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
    assert not [s for s in said if "incomplete" in s], said


def test_the_text_summary_of_a_cut_snapshot_says_it_is_incomplete(isolated_config, tmp_path, capsys):
    from tfdash.cli import main

    assert main(["open", str(cut_snapshot(tmp_path))]) == 0  # stdout is not a terminal: the summary
    out, err = capsys.readouterr()
    assert "Traceback" not in err and NOTE in out, (out, err)


@sync
async def test_the_drill_down_of_a_cut_snapshot_says_its_kernel_list_was_cut(isolated_config, tmp_path):
    """Its step plan cannot be matched to 5 rows of 143: the drill-down said the plan 'could not be
    rebuilt (another tfdash version?)', as if the file came from another tfdash; it says the list is cut."""
    app = snapshot_app(cut_snapshot(tmp_path), theme="tfdash-dark")
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
    assert "another tfdash version" not in text, text
    assert "kernel list is cut" in text and f"{LISTED} of the run's 143 launches/step" in text, text
