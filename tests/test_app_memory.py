"""The dashboard's process stays flat over a 20,000-token live run (a one-layer model on the real
CPU engine, so it takes seconds): resident memory after warm-up grows by a few MB at most, and
every token buffer -- the session's, the snapshot's, the continuation pane's -- stays bounded."""

from __future__ import annotations

import gc

import pytest
from fixtures.appkit import isolated_config, micro_engine, one_torch_thread, sync  # noqa: F401  (fixtures)
from test_app_live import wait_for

from tfdash.app.main import live_app, make_session
from tfdash.profiling.probe import CPU
from tfdash.profiling.snapshot import TokenRecord

N = 20_000
KEEP = 2048
WARM = 4000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def live_records() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is TokenRecord)


@pytest.mark.slow
@sync
async def test_memory_is_flat_over_20000_tokens(isolated_config, one_torch_thread):
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/statm")
    from tfdash.app.app import MAX_WINDOWS
    from tfdash.app.widgets.continuation import MAX_CHARS, Continuation

    eng = micro_engine(capacity=N + 64)
    sessions = []

    def factory(status):
        s = make_session(eng, "The GPU", N, target=CPU, keep_tokens=KEEP, keep_steps=KEEP, nvml=False)
        sessions.append(s)
        return s

    app = live_app(factory, max_new_tokens=N)
    async with app.run_test(size=(140, 42)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= WARM, timeout=120,
                       what=f"{WARM} tokens")
        gc.collect()
        before, records_before = rss_mb(), live_records()
        await wait_for(pilot, lambda: app.state == "done", timeout=240, what="20,000 tokens")
        gc.collect()
        after, records_after = rss_mb(), live_records()
        snap = app.snapshot
        cont = app.screen.query_one(Continuation)
        assert snap.new_tokens == N and snap.steps == N + len(eng.encode("The GPU")) - 1
        # Bounded buffers: the session keeps the last KEEP tokens and steps; so does the snapshot.
        assert len(snap.tokens) == KEEP and snap.tokens[-1].index == N - 1
        assert len(snap.step_ns) == KEEP
        assert len(cont.text) <= MAX_CHARS and len(app.windows) <= MAX_WINDOWS
        assert records_after <= 3 * KEEP and records_after - records_before < KEEP
        # Flat: 16,000 more tokens after warm-up cost a few MB of resident memory at most
        # (a kept TokenRecord is ~200 B: an unbounded buffer alone would add > 3 MB).
        assert after - before < 8.0, (before, after)
        await pilot.press("q")
