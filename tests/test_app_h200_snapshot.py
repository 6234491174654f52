"""`tfdash open` on the snapshot recorded on the H200 (benchmarks/, scripts/gpu_app_check.py) shows
the numbers that file holds: run throughput, the roofline of its profile window, the kernel table."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest
from fixtures.appkit import isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.app.model import fmt_ns
from tfdash.engine.decode import percentile
from tfdash.profiling.export import load_snapshot

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "benchmarks" / "2026-11-29"
# session 2's final snapshot (2048 tokens) and session 3's two (8192 tokens, window at 1024; before
# and after that session's engine changes)
H200S = ([Path(os.environ["TFDASH_H200_SNAPSHOT"])] if os.environ.get("TFDASH_H200_SNAPSHOT")
         else [RECORDED / "snapshot-h200.json", RECORDED / "session3" / "dashboard" / "snapshot-h200.json",
               RECORDED / "session3" / "dashboard-after-engine" / "snapshot-h200.json"])


def screen_text(app) -> str:
    """The screen as plain text, from the SVG screenshot (its text runs, entities decoded)."""
    svg = app.export_screenshot()
    runs = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return html.unescape(" ".join(runs)).replace("\xa0", " ")


@pytest.mark.parametrize("H200", H200S, ids=lambda p: p.parent.name)
@sync
async def test_open_shows_the_h200_snapshot_numbers(isolated_config, H200):
    if not H200.exists():
        pytest.skip(f"no H200 snapshot at {H200}")
    snap = load_snapshot(H200)
    assert snap.meta.gpu and "H200" in snap.meta.gpu  # it is the H200's
    app = snapshot_app(H200)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.2)
        text = screen_text(app)
    r = snap.roofline
    shown = {
        "tok/s over the run": f"{snap.tok_per_s:.1f}",
        "ms/step p50": f"{percentile(snap.step_ns, 50) / 1e6:.3f}",
        "tokens": f"{snap.new_tokens:,}",
        "measured step": f"{r.measured_step_ns / 1e6:.3f}",
        "GB/s achieved": f"{r.achieved_gbps:,.0f}",
        "% of ceiling": f"{r.pct_ceiling:.1f}",
    }
    if r.nvml_gbps:
        shown["NVML GB/s at the window"] = f"{r.nvml_gbps:,.0f}"
    lm = next(k for k in snap.kernels if k.role == "lm_head")
    shown["lm_head measured"] = fmt_ns(lm.measured_p50_ns)
    missing = {k: v for k, v in shown.items() if v not in text}
    assert not missing, f"not on the screen: {missing}"
    assert "H200" in text and "tilelang-graph" in text


@sync
async def test_the_kernel_table_says_every_step_was_measured(isolated_config, tmp_path):
    """A snapshot timed continuously says so in the kernel table's caption; a windowed one does not."""
    import dataclasses

    from tfdash.profiling.export import write_snapshot
    from tfdash.profiling.snapshot import TimingInfo

    snap = load_snapshot(H200S[0])
    cont = dataclasses.replace(snap, timing=TimingInfo("continuous", "cupti-ring, kernel activity records",
                                                       steps_measured=2059, range_steps=256))
    for s, want in ((cont, True), (snap, False)):
        path = write_snapshot(s, tmp_path / f"{want}.json")
        app = snapshot_app(path)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause(0.2)
            text = screen_text(app)
        assert ("every step measured · p50/p90 over the last 256 steps" in text) is want


@sync
async def test_a_continuous_rooflines_measured_line_fits_its_pane(isolated_config, tmp_path):
    """The roofline pane's note "256 steps, continuous" was wider than its room in the 47-column
    pane: "continuous" wrapped to a line of its own, under the values. Each line fits now."""
    import dataclasses

    from tfdash.profiling.export import write_snapshot
    from tfdash.profiling.snapshot import TimingInfo

    snap = load_snapshot(H200S[0])
    cont = dataclasses.replace(snap, timing=TimingInfo("continuous", "cupti-ring, kernel activity records",
                                                       steps_measured=2059, range_steps=256),
                               roofline=dataclasses.replace(snap.roofline, timing="continuous", steps=256))
    path = write_snapshot(cont, tmp_path / "cont.json")
    for size in ((120, 40), (200, 60)):
        app = snapshot_app(path)
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.2)
            stats = app.screen.query_one("#roofline-stats")
            content, width = stats.render(), stats.content_size.width
        said = str(content).splitlines()
        assert any("measured" in line and "last 256 steps" in line for line in said), said
        assert len(content.wrap(width)) == len(said), (size, width, said)  # no line wraps


CONTINUOUS = ROOT / "benchmarks" / "2026-12-01" / "session8" / "app-call4" / "snapshot-h200.json.gz"


@sync
async def test_the_sweep_of_a_continuous_run_keeps_its_chart(isolated_config, tmp_path):
    """A continuous run measures a sweep point a ctx_len bucket (64 of attention's here): the caption
    named each, 20 lines of "250.8 µs @ 191, 243.0 µs @ 319, …" that filled the sweep pane at
    200x60 and left its chart no row. It names the first and the last now, and the chart is drawn."""
    import gzip

    from tfdash.app.widgets.chart import Chart

    path = tmp_path / "cont.json"
    path.write_bytes(gzip.decompress(CONTINUOUS.read_bytes()))
    app = snapshot_app(path)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("enter")  # attention, the costliest op
        await pilot.pause(0.3)
        assert app.screen.row.label == "attention"
        said = str(app.screen.query_one("#sweep-caption").render())
        chart = app.screen.query_one("#sweep-chart", Chart)
        assert chart.size.height >= 10, (chart.size, said)
        assert "points)" in said and said.count("@") == 2, said


def test_the_sweep_caption_names_a_few_points_each_and_many_by_their_ends():
    from tfdash.app.screens.drill import sweep_caption

    caption = str(sweep_caption([0, 100], [1.0, 2000.0], [10, 20, 30, 40], [1000.0, 2000.0, 3000.0, 4000.0]))
    assert caption.splitlines()[1] == "measured 1.0 µs @ 10 … 4.0 µs @ 40 (4 points)", caption
    caption = str(sweep_caption([0, 100], [1.0, 2.0], [10, 1_024], [1000.0, 2000.0]))
    assert caption.splitlines()[1] == "measured 1.0 µs @ 10, 2.0 µs @ 1,024", caption


@pytest.mark.parametrize("size,baseline", [((80, 24), False), ((120, 40), True), ((80, 24), True),
                                           ((80, 24), "snapshot-h200.json.gz")])
@sync
async def test_the_top_bar_keeps_the_model_beside_long_file_names(isolated_config, tmp_path, size, baseline):
    """`tfdash open` of benchmarks/…/2026-12-01_session8_app-call4_snapshot-h200.json: at 80x24 the
    top bar read "tfdash │" and then the file name, the model gone; against a baseline at 120x40 not
    even "tfdash │" was left. The file names are cut to their ends to keep the model's name."""
    import shutil

    a = tmp_path / "2026-12-01_session8_app-call4_snapshot-h200.json"
    b = tmp_path / "2026-12-01_session6_continuous_continuous-sweep-snapshot.json"
    if isinstance(baseline, str):  # a short name beside a long one: the long one gives the room
        a = tmp_path / baseline
    for p in (a, b):
        shutil.copy(H200S[0], p)
    app = snapshot_app(a, baseline=b if baseline else None)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        title = app.screen.query_one("#topbar-title")
        said, room = str(title.render()), title.size.width
        state = str(app.screen.query_one("#topbar-state").render())
    assert said.strip().startswith("tfdash │ qwen3-1.7b") and len(said.rstrip()) <= room, (said, room)
    assert state.strip().startswith("snapshot · ") and state.rstrip().endswith(".json"), state
