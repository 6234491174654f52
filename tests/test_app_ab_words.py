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
