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


@sync
async def test_a_re_run_does_not_keep_the_run_befores_step_percentiles(isolated_config):
    """r: the new run's first frame had its tok/s and "1 tokens" beside the run before's ms/step p50
    and p99 and its chart, held by the pane's half-second throttle, so one pane gave two runs'
    numbers. A frame of another run is drawn whole at once."""
    from fixtures.appkit import LiveStandIn
    from test_app_fit import settle

    from tfdash.app.app import TfdashApp

    before = load_snapshot(SNAPSHOT)
    fresh = dataclasses.replace(before, step_ns=(), steps=0, new_tokens=1, tokens=before.tokens[:1],
                                meta=dataclasses.replace(before.meta, started_at="2030-01-01T00:00:00Z"))
    source = LiveStandIn(before)
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.screen.query_one("#throughput")._slow.interval = 3600  # the throttle never due by itself here
        p50 = next(x for x in pane_text(app).splitlines() if "ms/step p50" in x)
        assert "—" not in p50, p50
        source.snap = fresh
        await pilot.press("r")
        await settle(pilot)
        text = pane_text(app)
    p50, p99 = (next(x for x in text.splitlines() if label in x) for label in ("ms/step p50", "ms/step p99"))
    assert "—" in p50 and "—" in p99, text
