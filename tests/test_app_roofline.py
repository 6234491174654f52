"""The roofline pane of a step timed over its copy ceiling: no step streams faster than a cold copy,
so the ceiling read low (a probe beside other work). Its share is styled as a warning, in the pane
and in the line that stands for the pane in a narrow terminal, and a line under it names the file to
delete so that the next run measures the ceiling again (a snapshot from another host: no file of this
one, but that its figures are priced on a low ceiling). A step under its ceiling shows none of it."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.profiling.export import load_snapshot, write_snapshot
from tfdash.profiling.probe import ProbeResult, cache_path

NOTE = "over the ceiling: probe read low; delete ~/.cache/tfdash/bandwidth.json"
ELSEWHERE = "over the ceiling: its probe read low (not the figure cached here)"


@pytest.fixture
def home_cache(tmp_path, monkeypatch):
    """The default cache directory, under a home of the test's own."""
    monkeypatch.delenv("TFDASH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def low_ceiling(tmp_path, cached: bool = True):
    """The recorded run priced on a probe that read 353 GB/s (the step streams 2,038 GB/s); with
    `cached`, this host's cache file holds that figure (as after a run here), else another."""
    snap = load_snapshot(SNAPSHOT)
    probe = ProbeResult(device="NVIDIA H100 80GB HBM3", bandwidth=353e9, nbytes=2 << 30, reps=5, seconds=0.0122,
                        method="cuda d2d copy", measured_at="2026-12-06T05:46:00Z", torch_version="2.11")
    cache_path().parent.mkdir(parents=True, exist_ok=True)
    here = probe if cached else dataclasses.replace(probe, bandwidth=3000e9)  # measured again since
    cache_path().write_text(json.dumps({here.device: here.to_dict()}))
    r = dataclasses.replace(snap.roofline, ceiling_gbps=353.0, ceiling_source=probe.source,
                            floor_ns=snap.roofline.bytes_per_step / 353.0)
    return write_snapshot(dataclasses.replace(snap, roofline=r), tmp_path / "low.json")


def screen_text(app) -> str:
    from rich.console import Console

    w, h = app.size
    c = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False)
    c.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return c.export_text()


def fill_of(app, text: str) -> str:
    """The colour the screen draws the run of `text` in (from the SVG screenshot)."""
    svg = app.export_screenshot()
    fills = dict(re.findall(r"\.(terminal-[\w-]+) \{ fill: (#[0-9a-f]+)", svg))
    runs = re.findall(r'<text class="([^"]+)"[^>]*>([^<]*)</text>', svg)
    [cls] = [c for c, t in runs if html.unescape(t).replace("\xa0", " ").strip() == text]
    return fills[cls]


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


@sync
async def test_at_80_columns_the_warning_is_one_line(isolated_config, home_cache, tmp_path):
    app = snapshot_app(low_ceiling(tmp_path), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        warning = app.theme_variables["text-warning"].lower()
        assert "roofline 1.748 ms/step  577.4 %! of ceiling  v says why" in screen_text(app)
        assert fill_of(app, "577.4 %!") == warning  # the line that stands for the hidden pane
        await pilot.press("v")  # the roofline and NVML panes in place of the others
        await settle(pilot)
        lines = screen_text(app).splitlines()
        assert fill_of(app, "577.4 %") == warning
    at = next(i for i, line in enumerate(lines) if "577.4 %  of ceiling    353 GB/s" in line)
    assert lines[at + 1].strip("│ ") == NOTE, lines[at:at + 3]


@sync
async def test_the_wide_pane_says_it_too(isolated_config, home_cache, tmp_path):
    app = snapshot_app(low_ceiling(tmp_path), theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
        assert fill_of(app, "577.4 %") == app.theme_variables["text-warning"].lower()
    pane = [line.split("│")[5].strip() for line in lines if line.count("│") == 6]  # the third of three panes
    at = next(i for i, line in enumerate(pane) if line.startswith("577.4 %  of ceiling"))
    assert " ".join(pane[at + 1:at + 3]) == NOTE, pane[at:at + 3]  # wrapped to the pane's width


def cpu_run(snap):
    """`snap` as a CPU run records it: host timing (its step past Σ kernels the host's, no gap), no datasheet, no NVML."""
    why = "NVML not found: libnvidia-ml.so.1 missing (no NVIDIA driver)"
    r = dataclasses.replace(snap.roofline, timing="direct", datasheet_gbps=0.0)
    return dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, device="cpu", gpu=None), roofline=r,
                               nvml=(), unavailable={**snap.unavailable, "nvml": why})


@sync
async def test_at_160x48_with_a_baseline_the_note_keeps_its_indent_and_every_line_shows(isolated_config, home_cache,
                                                                                         tmp_path):
    """The note wrapped with its second line at the pane's edge under an indented first, and a CPU
    run opened with --baseline had a line more than the pane's height: its tok/s ceiling sat under a
    scrollbar. Every line of the note is indented alike, and step ÷ floor (100 ÷ the share over the
    ceiling, the news the note says why of) gives its line to the note."""
    low = write_snapshot(cpu_run(load_snapshot(low_ceiling(tmp_path))), tmp_path / "cpu-low.json")
    other = write_snapshot(cpu_run(load_snapshot(SNAPSHOT)), tmp_path / "other.json")
    app = snapshot_app(low, baseline=other, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
    pane = [line.split("│")[5] for line in lines if line.count("│") == 6]  # the third of three panes
    at = next(i for i, line in enumerate(pane) if "577.4 %  of ceiling" in line)
    first, second = pane[at + 1:at + 3]
    indent = len(first) - len(first.lstrip())
    assert indent > 1 and len(second) - len(second.lstrip()) == indent, pane[at:at + 3]
    assert f"{first.strip()} {second.strip()}" == NOTE, pane[at:at + 3]
    for label in ("bytes/step", "baseline", "of datasheet", "  host", "between launches: Python", "tok/s ceiling"):
        assert any(label in line for line in pane), (label, pane)
    assert "step ÷ floor" not in "\n".join(pane), pane


@sync
async def test_a_snapshot_priced_on_a_figure_not_cached_here_names_no_file(isolated_config, home_cache, tmp_path,
                                                                           capsys):
    """A snapshot from another machine (or priced before this host's figure was measured again) said
    to delete this host's cache file, which does not hold the figure that read low. The pane, and
    `tfdash open` without a terminal, say its probe read low and name no file."""
    from tfdash.cli import main

    path = low_ceiling(tmp_path, cached=False)
    app = snapshot_app(path, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
    pane = [line.split("│")[5].strip() for line in lines if line.count("│") == 6]
    at = next(i for i, line in enumerate(pane) if line.startswith("577.4 %  of ceiling"))
    assert " ".join(pane[at + 1:at + 3]) == ELSEWHERE, pane[at:at + 3]
    assert "bandwidth.json" not in "\n".join(lines)
    assert main(["open", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"warning: {ELSEWHERE}" in out and not any("bandwidth.json" in line for line in out), out


@sync
async def test_a_step_under_its_ceiling_shows_no_warning(isolated_config, home_cache):
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert fill_of(app, "47.7 %") != app.theme_variables["text-warning"].lower()
    assert "47.7 %  of ceiling" in text and "probe read low" not in text


async def wait_for_toasts(pilot, app, n: int) -> None:
    for _ in range(100):  # the refresh is coalesced (up to SLOWEST_REFRESH_S on a busy host)
        await settle(pilot)
        if len(app.screen.query("Toast")) >= n:
            return
    raise AssertionError(f"waited for {n} toasts")


@sync
async def test_a_window_over_the_ceiling_raises_a_warning_that_says_why_once(isolated_config, home_cache, tmp_path):
    """A live run's window toast said "577.4 % of the ceiling" as any other: a step past its ceiling
    read as a fast step. Its toast is a warning, and the first one says why and what to delete; the
    next window's toast warns without saying it again (the roofline pane goes on saying it)."""
    from fixtures.appkit import LiveStandIn
    from test_app_fit import toast_lines

    from tfdash.app.app import TfdashApp
    from tfdash.app.messages import SessionNews

    source = LiveStandIn(load_snapshot(low_ceiling(tmp_path)))
    app = TfdashApp(source, tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await wait_for_toasts(pilot, app, 1)
        first = toast_lines(app)
        [toast] = app.screen.query("Toast")
        assert toast.has_class("-warning")
        app.clear_notifications()
        r = source.snap.roofline
        source.snap = dataclasses.replace(source.snap, roofline=dataclasses.replace(r, ctx_len=r.ctx_len + 64),
                                          profile_windows=source.snap.profile_windows + 1)
        app.post_message(SessionNews())  # the next window, as far over
        await wait_for_toasts(pilot, app, 1)
        second = toast_lines(app)
        [toast] = app.screen.query("Toast")
        assert toast.has_class("-warning")
    text = " ".join(first)
    assert first[0] == "profile window" and "577.4 % of the ceiling" in text, first
    assert text.endswith(NOTE), first
    assert "577.4 % of the ceiling" in " ".join(second) and "probe read low" not in " ".join(second), second


@sync
async def test_a_window_under_the_ceiling_is_a_plain_note(isolated_config, home_cache):
    from fixtures.appkit import LiveStandIn
    from test_app_fit import toast_lines

    from tfdash.app.app import TfdashApp

    app = TfdashApp(LiveStandIn(), tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await wait_for_toasts(pilot, app, 1)
        lines = toast_lines(app)
        [toast] = app.screen.query("Toast")
        assert not toast.has_class("-warning")
    assert "47.7 % of the ceiling" in " ".join(lines) and "probe read low" not in " ".join(lines), lines


@sync
async def test_a_cpu_ceiling_keeps_the_digits_its_share_is_of(isolated_config, home_cache):
    """A CPU's copy ceiling of 11.58 GB/s was shown as "12 GB/s" beside 7.72 GB/s achieved and
    "66.7 %" (7.72 / 12 is 64 %), and `tfdash open`'s text said 11.6: the ceiling is shown with the
    digits the achieved figure has."""
    snap = load_snapshot(SNAPSHOT)
    r = dataclasses.replace(snap.roofline, achieved_gbps=7.7212, ceiling_gbps=11.5801, datasheet_gbps=0.0,
                            ceiling_source="probe: host memcpy 2x256 MiB, median of 5, cpu:x, 2026-12-05")
    app = snapshot_app(dataclasses.replace(snap, roofline=r), theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        text = screen_text(app)
    assert "7.72  GB/s achieved" in text and "66.7 %  of ceiling    11.6 GB/s" in text, text


@sync
async def test_with_no_color_the_narrow_line_still_marks_the_share(isolated_config, home_cache, tmp_path, monkeypatch):
    """At 80 columns the line that stands for the roofline pane told a share over the ceiling only by
    its colour: with NO_COLOR=1, "577.4 % of ceiling" read as any other. It is marked '!' (as diff
    and bench mark it) and names the key that shows why; a share under the ceiling is not."""
    monkeypatch.setenv("NO_COLOR", "1")
    for path, want in ((low_ceiling(tmp_path), "577.4 %! of ceiling  v says why"), (SNAPSHOT, "47.7 % of ceiling")):
        app = snapshot_app(path, theme="tfdash-dark")
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            lines = screen_text(app).splitlines()
        assert want in lines[1], lines[:3]
        assert "!" not in lines[1] or path != SNAPSHOT, lines[:3]
