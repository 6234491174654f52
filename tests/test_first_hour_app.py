"""What a new user meets first in the dashboard: the palette and themes are tfdash's own, a
saved theme that does not load is a toast (and stays saved as it was), the keys do what the
screen suggests, and the numbers read plainly, on the recorded snapshot and on a CPU one."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.themes import THEMES

SIZE = (160, 48)


def fake_tilelang(family: str) -> str:
    return f"def {family}_kernel(dims):\n    ...\n"


def make_app(snap=SNAPSHOT, **kw):
    kw.setdefault("tilelang_source", fake_tilelang)
    return snapshot_app(snap, **kw)


def screen_text(app) -> str:
    """The screen as plain text, as a user sees it."""
    import io

    from rich.console import Console

    w, h = app.size
    c = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False)
    c.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return c.export_text()


async def palette_options(pilot) -> list[str]:
    from textual.command import CommandList

    await pilot.pause(0.3)
    ol = pilot.app.screen.query_one(CommandList)
    return [str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)]


# -- item 8: palette and themes -----------------------------------------------------------------
@sync
async def test_the_palette_offers_only_tfdash_commands(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for textual_own in ("Quit", "Keys", "Maximize", "Minimize", "Screenshot", "Theme"):
            assert textual_own not in titles  # Textual's, bare: ours carry their key, "Quit (q)"
        await pilot.press("ctrl+p")
        shown = await palette_options(pilot)
        assert shown and not any("as soon as possible" in s or s.startswith("Keys") or s.startswith("Maximize")
                                 for s in shown), shown


@sync
async def test_ctrl_t_offers_the_three_tfdash_themes(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert set(app.available_themes) == set(THEMES)
        await pilot.press("ctrl+t")
        shown = await palette_options(pilot)
        assert sorted(shown) == sorted(THEMES), shown


@sync
async def test_a_saved_theme_that_does_not_load_falls_back_and_is_not_saved(isolated_config):
    cfg = isolated_config / "config.json"
    cfg.write_text(json.dumps({"theme": "textual-dark"}))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.theme == "tfdash-dark"
        assert any(n.severity == "warning" and "textual-dark" in n.message for n in app._notifications)
    assert json.loads(cfg.read_text())["theme"] == "textual-dark"  # left as the user wrote it


def test_a_theme_that_does_not_render_is_not_offered():
    from textual.theme import Theme

    from tfdash.themes import offered

    broken = Theme(name="tfdash-dark", primary="#4C9AFF", variables={"tf-border": "not-a-colour"})
    assert offered({"tfdash-dark": broken, "textual-dark": broken}) == {}
    assert set(offered(dict(THEMES))) == set(THEMES)


# -- item 7: keys -----------------------------------------------------------------------------
def sorted_column(app) -> str:
    from textual.widgets import DataTable

    t = app.screen.query_one("#kernel-table", DataTable)
    [label] = [str(c.label) for c in t.ordered_columns if str(c.label).endswith(("▼", "▲"))]
    return label


@sync
async def test_s_walks_the_sort_through_the_columns_in_their_order(isolated_config):
    from textual.widgets import DataTable

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t = app.screen.query_one("#kernel-table", DataTable)
        headers = [str(c.label).rstrip(" ▼▲") for c in t.ordered_columns]
        start = headers.index(sorted_column(app).rstrip(" ▼▲"))
        seen = []
        for _ in headers:
            await pilot.press("s")
            await pilot.pause()
            seen.append(sorted_column(app).rstrip(" ▼▲"))
        assert seen == [headers[(start + 1 + i) % len(headers)] for i in range(len(headers))]
        assert sorted_column(app).rstrip(" ▼▲") in screen_text(app)


@sync
async def test_a_filter_then_g_with_no_rows_says_why(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("g", "g")  # layer
        await pilot.press("slash", *"outside", "enter")  # the launches outside the layers
        await pilot.pause()
        assert "0 rows" not in screen_text(app)
        await pilot.press("g")  # every launch: no launch's own names hold "outside", only its layer's label
        await pilot.pause()
        text = screen_text(app)
        assert "0 rows" in text and "no launch's names hold every word of the filter" in text


@sync
async def test_drill_down_tab_keys_are_on_screen_and_arrows_switch_tabs(isolated_config):
    from textual.widgets import TabbedContent

    app = make_app(cuda_source=lambda launch: "// generated\n__global__ void k() {}\n")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        text = screen_text(app)
        for label in ("1 tilelang", "2 generated CUDA", "3 marginal", "4 counters", "←→ Tabs"):
            assert label in text, label
        tabs = app.screen.query_one(TabbedContent)
        assert tabs.active == "tilelang"
        await pilot.press("right")
        await pilot.pause()
        assert tabs.active == "cuda"
        await pilot.press("right", "right", "right")
        await pilot.pause()
        assert tabs.active == "tilelang"
        await pilot.press("left")
        assert tabs.active == "counters"


@sync
async def test_a_slow_cuda_compile_counts_its_seconds_then_shows_the_code(isolated_config):
    """The CUDA tab said "(a few seconds)" for the whole of a first compile, which on a busy host
    took tens of seconds: the line now counts the seconds until the code comes."""
    import threading

    go = threading.Event()

    def slow_cuda(launch):
        go.wait(timeout=30)
        return "// generated\n__global__ void k() {}\n"

    app = make_app(cuda_source=slow_cuda)
    try:
        async with app.run_test(size=(120, 32)) as pilot:
            await pilot.pause()
            await pilot.press("enter", "2")
            await pilot.pause()
            assert "for sm_90a with tilelang… (a few seconds)" in screen_text(app)
            await pilot.pause(2.3)
            text = screen_text(app)
            assert "for sm_90a with tilelang… (2 s so far)" in text, text
            go.set()
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = screen_text(app)
            assert "__global__ void k()" in text and "so far" not in text, text
            await pilot.pause(1.2)  # and stays
            assert "__global__ void k()" in screen_text(app)
    finally:
        go.set()


@sync
async def test_the_footer_never_cuts_a_key(isolated_config):
    from tfdash.app import bindings

    labels = {f"{b.key_display or b.key} {b.description}" for t in (bindings.APP, bindings.MAIN, bindings.TABLE)
              for b in t if b.show}
    for width in (80, 100, 120):
        app = make_app()
        async with app.run_test(size=(width, 24)) as pilot:
            await pilot.pause()
            await pilot.pause()
            last = screen_text(app).rstrip("\n").splitlines()[-1]
            keys = last.split("▏")[0].rstrip()
            assert last.rstrip().endswith("^p palette")
            shown = [label for label in labels if label in keys]
            assert shown and keys.strip() == keys.strip()  # something is there
            # what is left once every whole key is taken away is blank: no half key
            rest = keys
            for label in sorted(shown, key=len, reverse=True):
                rest = rest.replace(label, "")
            assert rest.strip() == "", (width, keys)


# -- item 5: numbers that read plainly; item 2: a contended CPU host says so ----------------------
def cpu_snapshot(spread: float = 1.02):
    """The recorded snapshot as a CPU run would be: direct timing, a small negative gap, a GB/s
    below 1, no NVML; step times with p99 at `spread` x p50."""
    snap = build_snapshot()
    r = snap.roofline
    roof = dataclasses.replace(r, timing="direct", gap_ns=-59_900.0, achieved_gbps=0.4, ceiling_gbps=44.4)
    meta = dataclasses.replace(snap.meta, device="cpu", gpu=None, backend="torch-eager", dtype="float32")
    n = len(snap.step_ns)
    steps = tuple(int(4_850_000 * (spread if i % 50 == 0 else 1.0)) for i in range(n))
    return dataclasses.replace(snap, meta=meta, roofline=roof, nvml=(), step_ns=steps,
                               unavailable={"nvml": "no NVIDIA GPU on this host"})


@sync
async def test_cpu_gap_is_na_and_small_bandwidth_is_not_zero(isolated_config):
    app = make_app(cpu_snapshot())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "n/a  gaps" in text and "n/a: direct timing, no device idle" in text
        assert "-59" not in text and "−59" not in text
        assert "0.40  GB/s achieved" in text and " 0  GB/s achieved" not in text
        assert "NVML unavailable: no NVIDIA GPU on this host" in text  # the empty pane is one line
        assert "× p50:" not in text


@sync
async def test_a_cpu_run_draws_no_gap_it_did_not_measure(isolated_config):
    # host timing leaves step - sum of kernels positive (Python between launches, and waits for the GIL
    # while the UI thread draws: up to most of a dashboard's CPU step). The line gives it as the host's
    # time, never as a gap, and the bar above it drew it as a red "gaps" segment
    snap = cpu_snapshot()
    snap = dataclasses.replace(snap, roofline=dataclasses.replace(snap.roofline, gap_ns=139_100.0))
    app = make_app(snap)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "139.1 µs  host" in text and "between launches: Python, GIL waits" in text, text
        assert "n/a  gaps" not in text and "µs  gaps" not in text  # no gap figure for host timing
        bar = app.query_one("#roofline-gap")
        floor, over, gap = bar.parts
        assert gap == 0.0 and floor > 0 and over > 0


@sync
async def test_no_color_tells_the_roofline_segments_apart_by_shape(isolated_config, monkeypatch):
    # NO_COLOR made floor, kernels and gaps three greys of one block glyph, and the legend only colour
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        bar = str(app.query_one("#roofline-gap").render()).splitlines()
        assert {"█", "▒", "░"} <= set(bar[0]) and "█ floor  ▒ kernels over it  ░ gaps" in bar[1]


@sync
async def test_no_color_tells_the_p50_rule_from_the_step_times_by_shape(isolated_config, monkeypatch):
    """With NO_COLOR the step times and their p50 rule were one glyph in two greys, in the chart and
    its legend: the rule is dotted in both."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = screen_text(app)
    legend = next(line for line in text.splitlines() if "ms/step  " in line and "p50" in line)
    assert "━ ms/step  · p50" in legend, legend
    chart = text.splitlines()[text.splitlines().index(legend) + 1:]
    assert any(line.count("·") >= 20 for line in chart), "the p50 rule is not drawn dotted"


def chart_rows(app, chart_id: str = "#throughput-chart") -> list[str]:
    r = app.screen.query_one(chart_id).region
    return [line[r.x:r.right] for line in screen_text(app).splitlines()[r.y:r.bottom]]


@pytest.mark.parametrize("size", [(120, 36), (160, 48)])
@sync
async def test_no_color_draws_the_step_times_over_their_p50_rule(isolated_config, monkeypatch, size):
    """With NO_COLOR the dotted p50 rule was drawn over the step times: at 120x36, where the rule
    runs through the series' middle row, it read "1.74······…" and only the spikes showed. The
    series is drawn over the rule, as it is in colour: the same cells, a dot where a line was."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        colour = chart_rows(app)
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        plain = chart_rows(app)
    [rule] = [i for i, row in enumerate(plain) if "···" in row]
    assert set(plain[rule]) & set("▖▗▘▝▀▄▌▐▚▞▙▛▜▟"), plain[rule]  # step times on the rule's row
    assert plain == [row.replace("─", "·") for row in colour], (plain, colour)


@sync
async def test_an_unprofiled_run_says_which_key_profiles_it_at_80x24(isolated_config):
    # a short CPU run is over before anyone presses p: below 116 columns the roofline is one line,
    # and it named no key (the hint in the wide pane's note is not on screen there). A live run's:
    # a saved snapshot cannot profile, and names no key (test_app_unprofiled)
    from fixtures.appkit import LiveStandIn

    from tfdash.app.app import TfdashApp

    app = TfdashApp(LiveStandIn(dataclasses.replace(cpu_snapshot(), roofline=None)), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "roofline not profiled yet · p profiles" in screen_text(app)


@sync
async def test_a_contended_cpu_run_is_flagged_under_the_kernel_table(isolated_config):
    app = make_app(cpu_snapshot(spread=20.0))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "20.0× p50: " in text and "--threads" in text and "--headless" in text


@sync
async def test_a_warning_that_arrives_later_is_read_whole_at_80x24(isolated_config):
    # a live run's total line turns into the warning once its steps spread: one line of text either way,
    # so the pane kept one row and the warning lost its remedy until the terminal was resized
    app = make_app(cpu_snapshot())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "× p50:" not in screen_text(app)
        app.snapshot = cpu_snapshot(spread=20.0)
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "p99 20.0× p50: " in text and "--threads N or --headless" in text


@sync
async def test_times_are_scaled_per_value_and_axes_carry_units(isolated_config):
    import re

    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "330.3 µs" in text and "0.5 ns" in text
        assert not re.search(r"\b\d{1,3},\d{3},\d{3}\b", text) and "330,257" not in text
        assert "ms" in text.split("step")[0] or "ms" in text
        await pilot.press("down", "enter")
        await pilot.pause()
        text = screen_text(app)
        assert "ctx_len (tokens)" in text and "µs" in text and "10.5 µs" in text


@sync
async def test_p50_shows_with_the_first_step_times(isolated_config):
    from tfdash.app.widgets.panes import ThroughputPane

    snap = build_snapshot()
    app = make_app(dataclasses.replace(snap, step_ns=(), tokens=()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(ThroughputPane)
        pane.show(dataclasses.replace(snap, step_ns=(), tokens=()), final=False)
        pane.show(snap, final=False)  # within the throttle's interval of the first
        await pilot.pause()
        from tfdash.app.model import fmt_num, throughput

        p50 = throughput(snap, points=64).p50_ms
        assert p50 and f"{fmt_num(p50, 3)}  ms/step p50" in screen_text(app)


# -- item 4: what does not fit moves behind a key ------------------------------------------------
@sync
async def test_at_80x24_roofline_and_nvml_are_one_line_and_v_shows_them(isolated_config):
    """`v` shows the roofline pane with every line; NVML's numbers stay its line there, the rows left
    under the roofline too few for them, and those rows show its DRAM chart. Each screen is read once
    settled (on a loaded host one pause came before the panes were fitted to 80x24)."""
    from test_app_fit import settle

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "roofline 1.748 ms/step  47.7 % of ceiling" in text and "NVML 1,983 GB/s" in text
        assert "bytes/step" not in text and "v Panes" in text
        assert all(len(line) <= 80 for line in text.splitlines())
        await pilot.press("v")
        await settle(pilot)
        text = screen_text(app)
        assert "bytes/step" in text and "tok/s ceiling" in text and "throughput 569.7 tok/s" in text
        assert "NVML 1,983 GB/s" in text.splitlines()[1] and "GB/s window" not in text, text
        assert "━ DRAM GB/s" in text, text
        await pilot.press("v")
        await settle(pilot)
        assert "bytes/step" not in screen_text(app)
        await pilot.press("down", "enter")  # the kernel table has the focus back, its cursor where it was
        await settle(pilot)
        assert "drill-down · op down" in screen_text(app).splitlines()[0]


@sync
async def test_widened_with_the_panes_swapped_the_kernel_table_keeps_its_keys(isolated_config):
    """`v` in a narrow terminal hides the kernel table (it loses the focus); a terminal widened to show
    every pane shows it again, and ⏎ and s act on it rather than on nothing."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert "drill-down · op gate_up" in screen_text(app).splitlines()[0]


@sync
async def test_with_the_kernel_table_swapped_out_its_keys_leave_the_footer(isolated_config):
    """`v` puts the roofline and NVML where the kernel table was: s, / and g leave the footer (they
    would sort or group a table no one sees) and come back with it, the sort as it was."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("v")
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
        assert "v Panes" in footer and not any(k in footer for k in ("s Sort", "/ Filter", "g Group")), footer
        await pilot.press("s", "g", "v")
        await pilot.pause()
        text = screen_text(app)
    assert "s Sort" in text.splitlines()[-1] and "group op  sort measured ▼" in text, text
