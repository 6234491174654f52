"""The timeline screen (`T`) on a recorded snapshot, driven with Pilot: the step drawn on a time
axis with its PDL overlaps and gaps, zoom, pan, scroll, drill; and its pictures at 80x24 and
160x48 (pytest-textual-snapshot; regenerate with --snapshot-update).

The recorded fixture lays its kernels end to end with a gap; `pdl_snapshot` redraws them as a
PDL step does: each GEMV starts 1.8 µs before the kernel before it ends, attention 0.9 µs after."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)

from test_app_fit import toast_lines

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot
from tfdash.profiling.snapshot import KernelSpan

OVERLAP_NS, GAP_NS = 1800, 900


def pdl_snapshot():
    snap = load_snapshot(SNAPSHOT)
    spans, end = [], 2_000_000_000
    for k in snap.kernels:
        start = end - OVERLAP_NS if k.kernel.startswith("gemv") else end + GAP_NS
        spans.append(KernelSpan(1024, k.index, k.kernel + "_kernel", start, int(k.measured_p50_ns)))
        end = start + int(k.measured_p50_ns)
    second = [replace(s, step=1025, start_ns=s.start_ns + 2_000_000) for s in spans]
    return replace(snap, timeline=tuple(spans + second))


def app_on(snap=None, **kw):
    from test_app_snapshots import fake_tilelang

    return snapshot_app(snap if snap is not None else pdl_snapshot(), theme="tfdash-dark",
                        tilelang_source=fake_tilelang, **kw)


def view_text(app) -> list[str]:
    from tfdash.app.widgets.timeline import TimelineView

    return app.screen.query_one(TimelineView).render().plain.splitlines()


def summary_text(app) -> str:
    return str(app.screen.query_one("#timeline-summary").render())


def test_the_model_measures_overlap_and_gaps():
    from tfdash.app.timeline_model import step_timeline

    tl = step_timeline(pdl_snapshot())
    assert tl.step == 1025 and len(tl.bars) == 143  # the latest step by default
    gemvs = [b for b in tl.bars[1:] if b.name.startswith("gemv")]
    assert all(b.overlap_ns == OVERLAP_NS and b.gap_ns == 0 for b in gemvs)
    attn = [b for b in tl.bars if b.name.startswith("attn")]
    assert all(b.gap_ns == GAP_NS and b.overlap_ns == 0 for b in attn)
    assert tl.overlap_ns == OVERLAP_NS * len(gemvs) and tl.gap_ns == GAP_NS * (len(attn) + 1)  # + argmax
    assert tl.bars[0].start_ns == 0 and tl.span_ns == tl.bars[-1].end_ns


@sync
async def test_timeline_draws_zooms_pans_and_drills(isolated_config):
    app = app_on()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        from tfdash.app.screens.timeline import TimelineScreen

        assert isinstance(app.screen, TimelineScreen)
        lines = view_text(app)
        assert lines[0].startswith("µs from start") and "┼0" in lines[0] and "┼500" in lines[0]
        assert lines[1].startswith("embed") and lines[2].startswith("L0.qkv_proj") and "ovl 1.80" in lines[2]
        assert "gap 0.90" in lines[3] and lines[3].startswith("L0.attention")
        s = summary_text(app)
        assert "step 1025 (2 of 2 kept)" in s and "kernels 143" in s and "overlapped" in s and "gaps" in s
        fit = app.screen.view.scale
        # Zoom about the cursor's kernel: in, in, in; the axis ticks get finer and the overlap shows.
        await pilot.press("down", "plus", "plus", "plus", "plus", "plus")
        await pilot.pause()
        assert app.screen.view.scale == pytest.approx(fit / 32)
        lines = view_text(app)
        assert "┼10" in lines[0] and "▒" in lines[2] and "█" in lines[2]
        assert "·" in lines[3]  # attention's gap before it
        # Pan right: the first kernels leave the window.
        before = lines[1]
        await pilot.press("right", "right", "right", "right")
        await pilot.pause()
        assert view_text(app)[1] != before and "█" not in view_text(app)[1]
        await pilot.press("0")  # fit again
        await pilot.pause()
        assert app.screen.view.scale == pytest.approx(fit)
        # Scroll past the screen: the rows follow the cursor.
        await pilot.press("pagedown", "pagedown", "pagedown")
        await pilot.pause()
        assert not any(ln.startswith("embed") for ln in view_text(app))
        await pilot.press("left_square_bracket")  # the other recorded step
        await pilot.pause()
        assert "step 1024 (1 of 2 kept)" in summary_text(app)
        assert not app.screen.query("Toast")
        await pilot.press("left_square_bracket")  # "the step before" the first: it stays there, and says so
        await pilot.pause()
        assert "step 1024 (1 of 2 kept)" in summary_text(app)
        assert "step 1024 is the first kept step (1 of 2)" in " ".join(toast_lines(app))
        app.clear_notifications()
        await pilot.press("right_square_bracket", "right_square_bracket")  # and the step after the last
        await pilot.pause()
        assert "step 1025 (2 of 2 kept)" in summary_text(app)
        assert "step 1025 is the last kept step (2 of 2)" in " ".join(toast_lines(app))
        # Enter drills into the launch under the cursor.
        view = app.screen.view
        await pilot.press("down")
        await pilot.pause()
        bar = view.current
        await pilot.press("enter")
        await pilot.pause()
        from tfdash.app.screens.drill import DrillScreen

        assert isinstance(app.screen, DrillScreen) and app.screen.current == bar.launch
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, (TimelineScreen, DrillScreen))


def window_snapshot():
    """As a profile window records it: the spans' steps numbered within the window (its last two of
    16 here, 14 and 15), the window's record with its first step, the roofline priced from it."""
    from tfdash.profiling.snapshot import WindowRecord

    snap = pdl_snapshot()
    spans = tuple(replace(s, step=s.step - 1024 + 14) for s in snap.timeline)
    record = WindowRecord(ctx_len=1028, first_step=1020, steps=16, step_ns=snap.roofline.measured_step_ns,
                          kernel_ns=tuple(k.measured_p50_ns for k in snap.kernels))
    return replace(snap, timeline=spans, windows=(record,),
                   roofline=replace(snap.roofline, ctx_len=1028, steps=16, timing="cupti"))


@sync
async def test_the_timeline_names_the_ctx_len_each_step_ran_at(isolated_config):
    """A window's steps are numbered within it ("step 15 (2 of 2 kept)"), which says nothing of the
    decode position: the summary names the ctx_len, the window's first step plus the step's place."""
    app = app_on(window_snapshot())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        assert "step 15 at ctx_len 1,035 (2 of 2 kept)" in summary_text(app), summary_text(app)
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert "step 14 at ctx_len 1,034 (1 of 2 kept)" in summary_text(app), summary_text(app)


@sync
async def test_timeline_of_a_snapshot_without_spans_says_so(isolated_config):
    app = app_on(replace(load_snapshot(SNAPSHOT), timeline=()))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        assert "no profiled step" in view_text(app)[0]
        assert "no kernel spans" in summary_text(app)
        # a saved snapshot is read-only: its view named p, which here only says so
        assert "(p)" not in view_text(app)[0] and "kept none" in view_text(app)[0], view_text(app)


@sync
async def test_timeline_of_an_unprofiled_run_names_the_key_that_profiles(isolated_config):
    """A live run names p; a saved snapshot, where p cannot profile, says it kept no spans."""
    from fixtures.appkit import LiveStandIn

    from tfdash.app.app import TfdashApp

    unprofiled = replace(load_snapshot(SNAPSHOT), timeline=(), roofline=None)
    live = TfdashApp(LiveStandIn(unprofiled), theme="tfdash-dark")
    for app, said in ((live, "not profiled yet · p profiles a window"),
                      (app_on(unprofiled), "no kernel spans in this snapshot")):
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            assert summary_text(app) == said


@sync
async def test_timeline_of_host_timing_gives_no_gap_and_names_its_count_narrow(isolated_config):
    """Direct (host) timing measured no device idle: the main screen says so, and the timeline gave its
    timer's spaces as "gaps 21.0 µs". At 80 columns the kernel count lost its label ("kept) · 23")."""
    snap = pdl_snapshot()
    app = app_on(replace(snap, roofline=replace(snap.roofline, timing="direct")))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        text, rows = summary_text(app), view_text(app)
    assert "gaps n/a: direct timing" in text and "· 143 kernels" in text, text
    assert not any(" gap " in row for row in rows) and any(" ovl " in row for row in rows), rows
    app = app_on()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        text = summary_text(app)
    assert "kernels 143" in text and "gaps 26.1 µs" in text and "direct" not in text, text


def spaced_snapshot(timing: str):
    """The fixture's kernels with 60 µs between each and the next: cells wide enough to draw them."""
    snap = load_snapshot(SNAPSHOT)
    spans, end = [], 2_000_000_000
    for k in snap.kernels:
        spans.append(KernelSpan(1024, k.index, k.kernel + "_kernel", end + 60_000, int(k.measured_p50_ns)))
        end = spans[-1].start_ns + int(k.measured_p50_ns)
    return replace(snap, timeline=tuple(spans), roofline=replace(snap.roofline, timing=timing))


@sync
async def test_host_timing_draws_no_idle_between_kernels(isolated_config):
    """On the CPU the summary said "gaps n/a: direct timing" while the rows drew the host's time
    between launches as `·` and the legend called it idle, as the README says of the GPU."""
    for timing, idle in (("cupti", True), ("direct", False)):
        app = app_on(spaced_snapshot(timing))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            text, rows = summary_text(app), view_text(app)
        assert ("· idle" in text) == idle, (timing, text)
        assert any("·" in row for row in rows[1:]) == idle, (timing, rows)


def box_rows(text: str) -> list[str]:
    """The rows inside the timeline's box on the screen, between its borders."""
    return [line.split("│")[1] for line in text.splitlines() if line.count("│") >= 2]


@sync
async def test_the_bars_take_the_columns_no_overlap_or_gap_label_needs(isolated_config):
    """Host timing (no device idle) and no overlap: the rows kept 24 columns on the right for "ovl" and
    "gap" labels that none had, 13 of them blank beside each time. There the time ends the row and the
    bars and the axis take the rest; a step with labels keeps their column."""
    from test_app_fit import screen_text

    shown = {}
    for timing in ("direct", "cupti"):
        app = app_on(spaced_snapshot(timing))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            shown[timing] = box_rows(screen_text(app))
    axis, *rows = shown["direct"]
    assert axis.startswith(" µs from start") and len(axis) - len(axis.rstrip()) <= 12, shown["direct"]
    assert rows and all(row.rstrip().endswith(" µs") and len(row) - len(row.rstrip()) <= 1 for row in rows), rows
    assert not any(" gap " in row or " ovl " in row for row in rows), rows
    labelled = [row for row in shown["cupti"][1:] if " gap 60.0 µs" in row]  # kept where the step has them
    assert labelled and all(len(row) - len(row.rstrip()) <= 3 for row in labelled), shown["cupti"]
    assert len(axis.rstrip()) > len(shown["cupti"][0].rstrip()) + 10  # the axis is wider without the labels


@sync
async def test_a_kernel_of_a_second_keeps_its_unit(isolated_config):
    """The time cell (11 columns where no row has an overlap or gap to say, 24 where one has) cut a
    kernel of a second or more to "1,234,567" and a 12 ms gap to "gap 12,414": the µs fell off the
    row. The column is as wide as the step's widest words."""
    from test_app_fit import screen_text

    for timing, said in (("direct", " 1,234,567 µs"), ("cupti", " gap 12,414 µs")):
        snap = spaced_snapshot(timing)
        spans = list(snap.timeline)
        spans[3] = replace(spans[3], dur_ns=1_234_567_000)
        later = 1_234_567_000 + (12_345_000 if timing == "cupti" else 0)  # no overlap: the cupti step has a gap
        spans[4:] = [replace(s, start_ns=s.start_ns + later) for s in spans[4:]]
        app = app_on(replace(snap, timeline=tuple(spans)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            rows = box_rows(screen_text(app))[1:]
        assert any(said in row for row in rows), (timing, rows)
        assert all(row.rstrip().endswith(" µs") for row in rows), (timing, rows)


@sync
async def test_timeline_key_is_in_the_help(isolated_config):
    app = app_on()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        from textual.widgets import DataTable

        t = app.screen.query_one("#help-table", DataTable)
        ids = [str(t.get_row_at(i)[-1]) for i in range(t.row_count)]
        assert "timeline" in ids and "timeline.zoom_in" in ids and "drill.counters" in ids


async def _open_zoomed(pilot):
    from test_app_snapshots import settle

    await settle(pilot)
    await pilot.press("T")
    await settle(pilot)
    await pilot.press("down", "plus", "plus", "plus", "plus", "plus")
    await settle(pilot)


def test_timeline_picture_160x48(isolated_config, snap_compare):
    assert snap_compare(app_on(), terminal_size=(160, 48), run_before=_open_zoomed)


def test_timeline_picture_80x24(isolated_config, snap_compare):
    assert snap_compare(app_on(), terminal_size=(80, 24), run_before=_open_zoomed)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours."""
    from textual.color import Color

    def lum(c: str) -> float:
        ch = [v / 255 for v in Color.parse(c).rgb]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("theme", ["tfdash-dark", "tfdash-light", "tfdash-contrast"])
@sync
async def test_the_timelines_title_can_be_read(isolated_config, theme):
    """The title in the timeline's border is drawn in a text colour, read against the screen at 3:1
    or better: in its border's own colour it had stood at 1.5:1 to 2.3:1, in every theme."""
    import re

    app = snapshot_app(SNAPSHOT, theme=theme)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("T")
        await pilot.pause()
        svg = app.export_screenshot()
        ground = [app.theme_variables[k] for k in ("background", "surface")]
    cls = re.search(r'<text class="([^"]+)"[^>]*>[^<]*kernels&#160;on&#160;a&#160;time', svg).group(1)
    fill = re.search(re.escape(cls) + r" \{ fill: (#[0-9a-fA-F]{6})", svg).group(1)
    assert min(contrast(fill, g) for g in ground) >= 3, (theme, fill, ground)
