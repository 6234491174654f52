"""The throughput pane shows time to first token and decode-only tok/s beside the whole-run figure."""

import dataclasses

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot


def pane_text(app) -> str:
    return str(app.screen.query_one("#throughput-stats").render())


@sync
async def test_time_to_first_token_and_decode_only_rate_on_screen(isolated_config):
    snap = load_snapshot(SNAPSHOT)
    # a 15.1 ms first token and a decode phase of the rest of the run
    timed = dataclasses.replace(snap, ttft_ns=15_100_000)
    app = snapshot_app(timed)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        text = pane_text(app)
        assert "15.1" in text and "ms to first token" in text
        assert "tok/s decode only" in text
        assert f"{timed.decode_tok_per_s:,.1f}" in text
        assert timed.decode_tok_per_s > timed.tok_per_s  # the first token's wait is left out


@sync
async def test_an_older_snapshot_without_them_says_so(isolated_config):
    app = snapshot_app(load_snapshot(SNAPSHOT))  # recorded before time to first token was kept
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        text = pane_text(app)
        line = next(x for x in text.splitlines() if "ms to first token" in x)
        assert "—" in line


@sync
async def test_a_prompt_taken_in_chunks_shows_its_part_of_the_first_token(isolated_config):
    snap = dataclasses.replace(load_snapshot(SNAPSHOT), ttft_ns=3_400_000, prefill_positions=12, prefill_ns=2_125_000)
    app = snapshot_app(snap)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("#throughput")
        assert "3.4" in next(x for x in pane_text(app).splitlines() if "ms to first token" in x)
        assert pane.border_subtitle == "2.12 ms prompt in chunks"  # in the border: no row of its own
    app = snapshot_app(dataclasses.replace(snap, prefill_positions=0, prefill_ns=0))  # walked: no such line
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one("#throughput")
        assert not pane.border_subtitle and "ms to first token" in pane_text(app)
