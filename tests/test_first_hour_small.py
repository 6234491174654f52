"""What a new user meets first in a small terminal (80x24, 120 columns): every pane keeps its own
lines whole — the throughput legend, the roofline's notes, the continuation's source, the compare
view's Δ columns — and advice names only a remedy that applies to the run on screen."""

from __future__ import annotations

import dataclasses

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import screen_text, settle

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot


@sync
async def test_a_prompt_in_chunks_keeps_the_throughput_stats_and_the_legend_goes_with_the_chart(isolated_config):
    # its own line under the time to first token was the pane's ninth in eight rows at 80x24; there the
    # chart is hidden, so its key is too, and where the chart shows its key shows above it
    snap = dataclasses.replace(load_snapshot(SNAPSHOT), ttft_ns=3_400_000, prefill_positions=12, prefill_ns=2_125_000)
    for size, legend in (((80, 24), False), ((120, 40), True)):
        app = snapshot_app(snap)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            text = screen_text(app)
        for line in ("3.4  ms to first token", "ms/step p99", "2,048  tokens", "2.12 ms prompt in chunks"):
            assert line in text, (size, line, text)
        assert ("━ ms/step  ━ p50" in text) == legend, (size, text)


def no_datasheet():
    """The recorded snapshot on a target with no datasheet bandwidth (a CPU's)."""
    snap = load_snapshot(SNAPSHOT)
    return dataclasses.replace(snap, roofline=dataclasses.replace(snap.roofline, datasheet_gbps=0.0))


@sync
async def test_a_target_without_a_datasheet_says_so_on_one_line(isolated_config):
    # "none for this target" wrapped its last word onto a line of its own in the 47-column pane
    # (at 116x30 the pane is behind `v`, too tall for the short terminal's top row)
    for size, keys in (((120, 36), ()), ((116, 30), ("v",)), ((80, 24), ("v",))):
        app = snapshot_app(no_datasheet())
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press(*keys)
            await settle(pilot)
            text = screen_text(app)
        line = next(x for x in text.splitlines() if "of datasheet" in x)
        assert "—  of datasheet  none known" in line, (size, text)


def contended_cpu(threads):
    """The recorded snapshot as a contended CPU run with `threads` torch threads: p99 20x p50."""
    snap = load_snapshot(SNAPSHOT)
    meta = dataclasses.replace(snap.meta, device="cpu", gpu=None, threads=threads)
    steps = tuple(1_000_000 * (20 if i % 20 == 0 else 1) for i in range(len(snap.step_ns)))
    return dataclasses.replace(snap, meta=meta, step_ns=steps)


@sync
async def test_the_contended_advice_names_threads_only_for_a_run_with_more_than_one(isolated_config):
    # a one-thread run was told to try --threads N: it has none to give up
    for threads, says_threads in ((1, False), (4, True)):
        app = snapshot_app(contended_cpu(threads))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            text = screen_text(app)
        assert "20.0× p50: " in text and "--headless" in text, text
        assert ("--threads" in text) is says_threads, (threads, text)


class FinishedSession:
    """A live run that is over at once and whose snapshot is `snap` (no engine)."""

    def __init__(self, snap):
        self.snap = snap

    def run(self, on_event=None, stop=None):
        from types import SimpleNamespace

        on_event(SimpleNamespace(kind="tokens"))

    def snapshot(self):
        return self.snap

    def pause(self, paused):
        pass

    def stop(self):
        pass


@sync
async def test_a_live_dashboard_blames_its_own_drawing_not_another_process(isolated_config):
    # on an idle 2-core host the live dashboard said "waits for a core (another process?)": its own drawing,
    # in the engine's process (one GIL), spread the steps (--headless there: p99 1.09x p50)
    from tfdash.app.main import live_app
    from tfdash.app.model import contention_note

    for threads, size in ((1, (120, 40)), (1, (80, 24)), (4, (120, 40)), (4, (80, 24))):
        snap = dataclasses.replace(contended_cpu(threads), nvml=(), unavailable={"nvml": "no NVIDIA GPU here"})
        app = live_app(lambda status: FinishedSession(snap))
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            lines = screen_text(app).splitlines()
        [at] = [i for i, line in enumerate(lines) if "⚠" in line]
        line = lines[at].split("⚠ ")[1].split("│")[0].rstrip()
        assert "another process" not in line and ("--threads" in line) is (threads > 1), (size, line)
        assert "dashboard" in line and "process" in line and "--headless" in line, (size, line)
        assert line in contention_note(snap, live=True) and lines[at + 1].startswith("╰"), (size, lines[at:])
        if size == (120, 40):
            assert "the dashboard's own drawing shares this process" in line, line


def subtitle(text: str, pane_top: str = "╭─ continuation") -> str:
    """The continuation pane's bottom border: the line under its top, at the same column."""
    lines = text.splitlines()
    top = next(i for i, x in enumerate(lines) if pane_top in x)
    col = lines[top].index(pane_top)
    bottom = next(x for x in lines[top + 1:] if x[col:].startswith("╰"))
    return bottom[col:bottom.index("╯", col) + 1]


@sync
async def test_the_continuation_names_its_weights_whole_at_120_and_80(isolated_config):
    # "random weights · stand-in vo…" at 120 columns, where the pane is 35 wide
    for size, want in (((120, 36), "random weights, made-up vocab"), ((80, 24), "random weights · stand-in vocabulary"),
                       ((160, 48), "random weights · stand-in vocabulary")):
        app = snapshot_app(SNAPSHOT)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            border = subtitle(screen_text(app))
        assert f"─ {want} ─╯" in border and "…" not in border, (size, border)


@sync
async def test_a_long_checkpoint_path_keeps_its_last_part(isolated_config):
    snap = load_snapshot(SNAPSHOT)
    path = "/srv/shared/checkpoints/huggingface/Qwen/Qwen3-1.7B"
    app = snapshot_app(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, checkpoint=path)))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        border = subtitle(screen_text(app))
        assert "╰─ …/huggingface/Qwen/Qwen3-1.7B ─╯" == border, border
        await pilot.resize_terminal(200, 48)
        await settle(pilot)
        assert f"─ {path} ─╯" in subtitle(screen_text(app))
