"""The A/B box's lines agree with each other about the A/B they show: its status line with its
verdict, and its intro with when the verdict says the turns ran."""

from __future__ import annotations

import dataclasses

import pytest
from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_compare import recorded_ab
from test_app_dialogs import box_lines
from test_app_fit import screen_text, settle

from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot

BOX = "A/B a plan variant"


def holding(*ab: dict):
    return dataclasses.replace(load_snapshot(SNAPSHOT), ab=ab)


async def box_when_opened(app, size=(120, 40)) -> list[str]:
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        return box_lines(screen_text(app), BOX)


@pytest.mark.parametrize("live", [True, False], ids=["reopened-live", "saved"])
@sync
async def test_a_reopened_cancelled_ab_says_incomplete_on_its_status_line_as_its_verdict_does(isolated_config, live):
    """Reopened, an A/B cancelled midway said "recorded:" on its status line under "incomplete:
    cancelled"; it says "incomplete:" there too. A whole one reopened still says "recorded:"."""
    cancelled = {**recorded_ab(), "incomplete": "cancelled"}
    snap = holding(recorded_ab(), cancelled)  # the box shows the last
    app = TfdashApp(LiveStandIn(snap), theme="tfdash-dark") if live else snapshot_app(snap, theme="tfdash-dark")
    inside = await box_when_opened(app)
    assert "incomplete: cancelled" in inside, inside
    assert any(line.startswith("incomplete: tilelang-unfused (fused_rope=False)") for line in inside), inside
    assert not any(line.startswith("recorded:") for line in inside), inside
    inside = await box_when_opened(snapshot_app(holding(recorded_ab()), theme="tfdash-dark"))
    assert any(line.startswith("recorded: tilelang-unfused (fused_rope=False)") for line in inside), inside


@sync
async def test_once_the_generation_has_ended_the_intro_says_the_turns_run_after_it_as_the_verdict_does(
        isolated_config):
    """The intro said the sides "take turns on this generation" (and that "the stream goes on") after the
    generation had ended, above a verdict whose second line said "after the generation, from where it
    stopped". With the box open as the generation ends, the intro changes to say so; a saved snapshot's
    intro says when the A/B it shows ran."""
    from tfdash.app.messages import RunEnded

    after = {**recorded_ab(), "during": "after the generation, from where it stopped"}  # as Session.ab records it
    source = LiveStandIn(ab_result=after)
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        before = " ".join(box_lines(screen_text(app), BOX))
        app.post_message(RunEnded(source.run_id))  # the generation reached its last token
        await settle(pilot)
        ended = " ".join(box_lines(screen_text(app), BOX))
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        measured = " ".join(box_lines(screen_text(app), BOX))
    assert "take turns on this generation: 6 windows" in before and "the stream goes on" in before, before
    for text in (ended, measured):
        assert "take turns after the generation, from where it stopped: 6 windows" in text, text
        assert "on this generation" not in text and "the stream goes on" not in text, text
    assert ", after the generation, from where it stopped; per op:" in measured, measured  # the verdict's line
    saved = " ".join(await box_when_opened(snapshot_app(holding(after), theme="tfdash-dark")))
    assert "take turns after the generation, from where it stopped: 6 windows" in saved, saved
