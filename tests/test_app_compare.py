"""The dashboard's two comparisons: the baseline picker (b) over recent snapshot exports, and the
live A/B of a plan variant (a). Pilot tests assert on the messages and on what the screen shows;
the live A/B runs on the real tiny CPU engine (qwen3-tiny, random weights); the pictures use the
recorded fixture snapshot."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
import time
from types import SimpleNamespace

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot, isolated_config, one_torch_thread, sync  # noqa: F401

from tfdash.app.main import live_app, make_session, snapshot_app
from tfdash.app.messages import ABMeasured, ABProgressed, BaselineChosen
from tfdash.app.widgets.kernel_table import KernelTable
from tfdash.errors import TfdashError
from tfdash.profiling.diff import compare
from tfdash.profiling.export import load_snapshot, write_snapshot
from tfdash.profiling.ab_table import VERDICT_LABEL
from tfdash.profiling.variants import TORCH_VISIBLE
from tfdash.profiling.probe import CPU

SIZE = (160, 48)


def fake_tilelang(family: str) -> str:
    return f"def {family}_kernel(dims):\n    ...  # a stand-in\n"


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


async def wait_for(pilot, cond, timeout: float = 120.0, what: str = "") -> None:
    t = time.monotonic()
    while not cond():
        if time.monotonic() - t > timeout:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await pilot.pause(0.05)


def plain(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


def rows(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def once(messages, kind):
    """Each message once (a bubbling message is seen by every node it passes)."""
    return list({id(m): m for m in messages if isinstance(m, kind)}.values())


@pytest.fixture
def exports(tmp_path, monkeypatch):
    """A directory of exports, as the dashboard's e leaves them: the same model run with the plan
    variant fused_rope=False (older), and a float16 run (newest); the view opens a copy of the
    fixture from it. mtimes are fixed, so the order is too."""
    monkeypatch.chdir(tmp_path)
    snap = load_snapshot(SNAPSHOT)
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    unfused = write_snapshot(build_snapshot(fused_rope=False), tmp_path / "tfdash-qwen3-1.7b-unfused.json")
    fp16 = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, dtype="float16")),
                          tmp_path / "tfdash-qwen3-1.7b-fp16.json")
    (tmp_path / "run.trace.json").write_text("{}")  # a Chrome trace is not offered
    for i, p in enumerate((shown, unfused, fp16)):
        os.utime(p, (1_800_000_000 + i, 1_800_000_000 + i))
    return SimpleNamespace(dir=tmp_path, shown=tmp_path / "run.json", unfused=unfused, fp16=fp16)


def open_app(path, **kw):
    return snapshot_app(path, theme="tfdash-dark", tilelang_source=fake_tilelang, **kw)


# -- the baseline picker ---------------------------------------------------------------------------
@sync
async def test_picker_at_80x24_shows_each_file_and_whether_it_compares_whole(isolated_config, exports):
    """At 80 columns the picker keeps the file, when it was recorded, its tok/s and whether it
    compares (its mark: ✓, or ✗ and the field that refuses it); model and dtype go. A resize keeps the
    row under the cursor: Enter then chooses that one."""
    from test_app_fit import screen_text

    messages = []
    app = open_app(exports.shown)
    tok_s = f"{load_snapshot(SNAPSHOT).tok_per_s:,.1f}"
    async with app.run_test(size=(80, 24), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("down")  # the fused_rope=False run of the same model
        text = screen_text(app)
        at = next(i for i, line in enumerate(text.splitlines()) if "│  file " in line)
        header, fp16, unfused = text.splitlines()[at:at + 3]
        assert "recorded" in header and "tok/s" in header and "compares" in header and "model" not in header, text
        assert exports.fp16.name in fp16 and "2026-11-29 10:15" in fp16 and tok_s in fp16, text
        assert "✗ dtype" in fp16 and "float16 vs" not in fp16, text
        assert exports.unfused.name in unfused and unfused.rstrip(" │").endswith("  ✓"), text
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert "│  file " in screen_text(app) and "qwen3-1.7b" in screen_text(app)
        assert "dtype: float16 vs bfloat16" in screen_text(app)  # the verdict's words, where there is room
        await pilot.press("enter")
        await settle(pilot)
    [chosen] = once(messages, BaselineChosen)
    assert chosen.label == exports.unfused.name


@pytest.mark.parametrize("width", [80, 100, 120])
@sync
async def test_picker_rows_of_one_model_differ_on_screen_by_time_and_tok_s(isolated_config, tmp_path,
                                                                           monkeypatch, width):
    """Eight exports of one model, as e leaves them, showed at 80 columns as eight file names and "✓
    same shape and dtype": the columns that tell them apart (when, and tok/s) had gone for the
    verdict's words. At each width every row shows its time and its tok/s, and its name's end."""
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    monkeypatch.chdir(tmp_path)
    snap = load_snapshot(SNAPSHOT)
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    for i in range(8):
        meta = dataclasses.replace(snap.meta, started_at=f"2026-12-07T21:{10 + i}:00Z")
        fast = dataclasses.replace(snap, meta=meta, wall_ns=snap.wall_ns * 10 // (10 + i))
        path = write_snapshot(fast, tmp_path / f"tfdash-qwen3-1.7b-20261207-21{10 + i}00.json")
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
    app = open_app(shown)
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        inside = box_lines(screen_text(app), "baseline snapshot")
        listed = {r[0]: r for r in rows(app.screen.query_one("#picker-table"))}
    at = next(i for i, line in enumerate(inside) if line.startswith("file "))
    assert "recorded" in inside[at] and "tok/s" in inside[at], inside
    for i, line in enumerate(inside[at + 1:at + 9]):
        n = 7 - i  # newest first
        tok_s = f"{dataclasses.replace(snap, wall_ns=snap.wall_ns * 10 // (10 + n)).tok_per_s:,.1f}"
        assert f"21{10 + n}00.json" in line and f"2026-12-07 21:{10 + n}" in line and tok_s in line, inside
        assert "  ✓" in line, inside
    assert len(listed) == 8, listed


@sync
async def test_picker_says_what_shape_differs_not_the_name_it_does_not_compare(isolated_config, exports):
    """A snapshot of another shape and another name (a checkpoint's folder) read "model name: ck vs
    qwen3-1.7b" in "against this run": the one field the comparison leaves out, given as the reason
    it refused. The row names a field of the shape that differs; the model column has the name."""
    snap = load_snapshot(SNAPSHOT)
    model = {**snap.meta.model, "name": "ck", "hidden_size": 64}
    write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, model=model)),
                   exports.dir / "tfdash-ck.json")
    app = open_app(exports.shown)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        listed = {r[0]: r for r in rows(app.screen.query_one("#picker-table"))}
    fit = listed["tfdash-ck.json"][-1]
    assert fit.startswith("model hidden_size: 64 vs ") and "name" not in fit, listed["tfdash-ck.json"]
    assert listed["tfdash-ck.json"][1] == "ck"


@sync
async def test_picker_gives_a_snapshot_without_its_start_in_utc_too(isolated_config, exports, monkeypatch):
    """"recorded" is a snapshot's started_at, in UTC; one without it fell back to the file's mtime in
    local time, so two rows of one column read on two clocks. Both are UTC now."""
    snap = load_snapshot(exports.unfused)
    write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, started_at="")), exports.unfused)
    os.utime(exports.unfused, (1_800_000_000, 1_800_000_000))  # 2027-01-15 08:00 UTC
    monkeypatch.setenv("TZ", "XYZ+05")  # five hours behind UTC: 03:00 local
    time.tzset()
    try:
        app = open_app(exports.shown)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("b")
            await settle(pilot)
            listed = {r[0]: r for r in rows(app.screen.query_one("#picker-table"))}
    finally:
        monkeypatch.undo()
        time.tzset()
    assert listed[exports.unfused.name][3] == "2027-01-15 08:00", listed
    assert listed[exports.fp16.name][3] == "2026-11-29 10:15", listed  # started_at, as it was


@sync
async def test_picker_refuses_another_dtype_and_sets_the_baseline(isolated_config, exports):
    messages = []
    app = open_app(exports.shown)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        t = app.screen.query_one(KernelTable).table
        assert [str(c.label) for c in t.columns.values()][-1] != "Δ %"  # no baseline yet
        await pilot.press("b")
        await settle(pilot)
        picker = app.screen.query_one("#picker-table")
        listed = rows(picker)
        assert [r[0] for r in listed] == [exports.fp16.name, exports.unfused.name]  # newest first, no trace
        assert listed[0][1:5] == ["qwen3-1.7b", "float16", "2026-11-29 10:15", f"{load_snapshot(SNAPSHOT).tok_per_s:,.1f}"]
        assert listed[0][5] == "dtype: float16 vs bfloat16" and listed[1][5] == "✓ same shape and dtype"

        await pilot.press("enter")  # the float16 run: refused with `tfdash diff`'s own line
        await settle(pilot)
        with pytest.raises(TfdashError) as diff_says:
            compare(load_snapshot(exports.fp16), load_snapshot(exports.shown),
                    a_source=exports.fp16.name, b_source="run.json")
        # the picker has no --force of its own: it names the command that has it
        assert plain(app, "#picker-status") == str(diff_says.value).replace("; --force", "; `tfdash diff --force`")
        assert app.baseline is None and not once(messages, BaselineChosen)

        await pilot.press("down", "enter")  # the fused_rope=False run of the same model
        await settle(pilot)
        [chosen] = once(messages, BaselineChosen)
        assert chosen.label == exports.unfused.name and app.baseline.label == exports.unfused.name
        t = app.screen.query_one(KernelTable).table
        assert [str(c.label) for c in t.columns.values()][-3:] == ["baseline", "Δ", "Δ %"]
        expected = {r.label: r for r in compare(load_snapshot(exports.unfused), load_snapshot(exports.shown),
                                                group="op").rows}
        labels = [str(c) for c in t.get_column("label")]
        base = dict(zip(labels, (str(c) for c in t.get_column("base"))))
        from tfdash.app.model import fmt_ns

        assert base["attention"] == fmt_ns(expected["attention"].a.measured_ns)
        assert "baseline only: qk_norm_rope" in plain(app, "#kernel-caption")
        assert "run.json vs " + exports.unfused.name in plain(app, "#topbar-state")
        assert "baseline" in plain(app, "#roofline-stats")

        await pilot.press("b", "x")  # and back to no baseline
        await settle(pilot)
        assert app.baseline is None and once(messages, BaselineChosen)[-1].label is None
        t = app.screen.query_one(KernelTable).table
        assert "Δ" not in [str(c.label) for c in t.columns.values()]


@sync
async def test_a_baseline_chosen_or_dropped_from_the_drill_down_shows_there(isolated_config, exports):
    """b works on the drill-down too; the picker closed over it, and the drill-down kept what it
    showed before: a dropped baseline's line and Δ column stayed (a finished run or a saved
    snapshot draws no new frame), and one chosen there did not appear until the measurements moved."""
    from test_app_fit import screen_text

    app = open_app(exports.shown)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the costliest op
        await settle(pilot)
        before = screen_text(app)
        assert "drill-down" in before and f"baseline {exports.unfused.name}" not in before
        await pilot.press("b", "down", "enter")  # the fused_rope=False run, chosen from here
        await settle(pilot)
        shown = screen_text(app)
        assert "drill-down" in shown and f"baseline {exports.unfused.name}" in shown, shown
        assert "Δ" in [str(c.label) for c in app.screen.query_one("#instances-table").columns.values()]
        await pilot.press("b", "x")  # and dropped from here
        await settle(pilot)
        shown = screen_text(app)
        assert "drill-down" in shown and f"baseline {exports.unfused.name}" not in shown, shown
        assert "Δ" not in [str(c.label) for c in app.screen.query_one("#instances-table").columns.values()]


@sync
async def test_picker_with_nothing_to_offer_says_how_to_get_one(isolated_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = open_app(SNAPSHOT, export_dir=tmp_path / "none-yet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert "No snapshot there yet" in plain(app, "#picker-intro")
        await pilot.press("enter", "escape")
        await settle(pilot)
        assert app.baseline is None and app.screen.query(KernelTable)
        titles = [c.title for c in app.get_system_commands(app.screen)]  # the command palette offers b (a saved
        assert "Baseline: compare with a snapshot (b)" in titles and "A/B (a)" not in titles  # snapshot with no A/B has none to show)
        await pilot.press("question_mark")
        await settle(pilot)
        ids = [str(c) for c in app.screen.query_one("#help-table").get_column_at(2)]
        assert {"baseline", "ab", "picker.choose", "picker.clear", "ab.start", "ab.close"} <= set(ids)


@sync
async def test_picker_lists_snapshots_not_traces_and_offers_x_only_with_a_baseline(isolated_config, tmp_path,
                                                                                     monkeypatch):
    """Opened from a `--headless --export` folder, the picker listed its trace.json as "unreadable"
    (choosing it said "not a tfdash snapshot"), and offered `x No baseline` with none set. Now a JSON
    file is listed only if its start names the snapshot schema; one that does but does not load
    is still listed, with why; and x is in the footer only while there is a baseline to drop."""
    from test_app_fit import screen_text

    from tfdash.profiling.export import export_all

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    h1 = export_all(load_snapshot(SNAPSHOT), runs / "h1")["snapshot"]
    h2 = export_all(build_snapshot(fused_rope=False), runs / "h2")["snapshot"]
    (runs / "notes.json").write_text('{"runs": ["h1", "h2"]}')  # some other JSON: not offered
    (runs / "cut.json").write_text(SNAPSHOT.read_text()[:500])  # a snapshot cut short: offered, as unreadable
    for i, path in enumerate((h1, runs / "notes.json", h2, runs / "cut.json")):
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
    app = open_app(h1, export_dir=runs)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        listed = rows(app.screen.query_one("#picker-table"))
        assert [r[0] for r in listed] == ["cut.json", "h2/snapshot.json"], listed
        assert listed[0][-1] == "unreadable" and listed[1][-1] == "✓ same shape and dtype", listed
        footer = screen_text(app).splitlines()[-1]
        assert "⏎ Choose" in footer and "No baseline" not in footer, footer
        assert "x none" not in str(app.screen.query_one("#picker-box").border_subtitle)
        await pilot.press("x")  # not offered: it says why and leaves the picker open
        await settle(pilot)
        assert app.screen.query("#picker-table") and app.baseline is None
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.baseline is not None and app.baseline.label == "h2/snapshot.json"
        await pilot.press("b")
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "x No baseline" in footer, footer
        assert "x none" in str(app.screen.query_one("#picker-box").border_subtitle)


@sync
async def test_picker_lists_gzip_compressed_snapshots(isolated_config, tmp_path, monkeypatch):
    """`tfdash open` and the picker's Enter read a `.json.gz` snapshot, but the picker listed only
    `*.json`: a user who gzipped a run (as benchmarks/ keeps its large ones) never saw it. Now a
    compressed snapshot, its own or an export folder's, is listed and chosen like any other; a
    compressed trace is not offered."""
    import gzip

    from tfdash.profiling.export import export_all

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "unfused.json.gz").write_bytes(gzip.compress(write_snapshot(
        build_snapshot(fused_rope=False), tmp_path / "src" / "u.json").read_bytes()))
    folder = export_all(build_snapshot(fused_rope=False), runs / "h2")
    (runs / "h2" / "snapshot.json.gz").write_bytes(gzip.compress(folder["snapshot"].read_bytes()))
    folder["snapshot"].unlink()
    (runs / "run.trace.json.gz").write_bytes(gzip.compress(folder["trace"].read_bytes()))
    for i, path in enumerate((runs / "h2" / "snapshot.json.gz", runs / "unfused.json.gz")):
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
    messages = []
    app = open_app(shutil.copy(SNAPSHOT, tmp_path / "run.json"), export_dir=runs)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        listed = rows(app.screen.query_one("#picker-table"))
        assert [r[0] for r in listed] == ["unfused.json.gz", "h2/snapshot.json.gz"], listed
        assert all(r[-1] == "✓ same shape and dtype" for r in listed), listed
        await pilot.press("down", "enter")
        await settle(pilot)
    [chosen] = once(messages, BaselineChosen)
    assert chosen.label == "h2/snapshot.json.gz"


@sync
async def test_picker_names_each_export_folder_and_cuts_a_long_one_at_its_start(isolated_config, tmp_path,
                                                                                monkeypatch):
    """Three `--headless --export DIR` folders were listed as three rows of "snapshot.json", alike
    but for their times. Each row now names its folder (`DIR/snapshot.json`, as the baseline and
    `tfdash diff` do); at 80 columns a folder name too long for the box loses its start, so the part
    that tells it from the others and whether it compares stay on the row."""
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.profiling.export import export_all

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    long = "qwen3-1.7b-h200-tilelang-bf16-graph-fused-rope-sweep-3-baseline"
    folders = ("h200-fused", "h200-unfused", long)
    for i, name in enumerate(folders):
        snap = build_snapshot(fused_rope=False) if name == "h200-unfused" else load_snapshot(SNAPSHOT)
        path = export_all(snap, runs / name)["snapshot"]
        os.utime(path, (1_800_000_000 + i, 1_800_000_000 + i))
    shown = shutil.copy(SNAPSHOT, tmp_path / "run.json")
    messages = []
    app = open_app(shown, export_dir=runs)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        inside = box_lines(screen_text(app), "baseline snapshot")
        at = next(i for i, line in enumerate(inside) if line.startswith("file "))
        listed = [line.split("  ")[0] for line in inside[at + 1:at + 4]]  # newest first
        assert listed == [f"{name}/snapshot.json" for name in reversed(folders)], inside

        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        inside = box_lines(screen_text(app), "baseline snapshot")
        at = next(i for i, line in enumerate(inside) if line.startswith("file "))
        header, first, second, third = inside[at:at + 4]
        assert header.endswith("compares"), inside
        assert first.startswith("…") and "sweep-3-baseline/snapshot.json" in first, inside
        assert first.endswith("  ✓") and long not in first, inside
        assert second.startswith("h200-unfused/snapshot.json") and third.startswith("h200-fused/snapshot.json"), inside
        await pilot.press("enter")  # the long one: named whole once chosen
        await settle(pilot)
    [chosen] = once(messages, BaselineChosen)
    assert chosen.label == f"{long}/snapshot.json" and app.baseline.label == chosen.label


@sync
async def test_picker_names_each_folder_once_for_a_snapshot_opened_by_a_relative_name(isolated_config, exports):
    """`tfdash open run.json` in the folder it is in: the export folder (the current directory) and
    the open file's folder (".") are one folder, and the picker named it twice ("Snapshots in the
    current directory, the current directory, ..."). It is named once."""
    from pathlib import Path

    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    app = open_app(Path(exports.shown.name))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        intro = " ".join(box_lines(screen_text(app), "baseline snapshot")[:3])
        listed = [r[0] for r in rows(app.screen.query_one("#picker-table"))]
    assert intro.count("the current directory") == 1, intro
    assert listed == [exports.fp16.name, exports.unfused.name], listed


def test_picker_picture(isolated_config, exports, snap_compare):
    async def pick(pilot):
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)

    assert snap_compare(open_app(exports.shown), terminal_size=SIZE, run_before=pick)


# -- the live A/B ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_engine():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", capacity=8192)


@pytest.fixture
def short_windows(monkeypatch):
    """6 windows a side as the screen says, of 16 steps (not 64), so the CPU test takes seconds."""
    from tfdash.profiling import ab

    monkeypatch.setattr(ab, "STEPS", 16)
    monkeypatch.setattr(ab, "PROFILE_STEPS", 8)


@pytest.fixture
def cancellable_windows(monkeypatch):
    """Windows of 128 steps (several hundred ms each on the CPU): an escape pressed after the first
    lands while the A/B has most of its turns still to run, however slow the host is to deliver it
    (at 64 steps a run whose kernel builds shared the two cores finished all 12 turns first)."""
    from tfdash.profiling import ab

    monkeypatch.setattr(ab, "STEPS", 128)
    monkeypatch.setattr(ab, "PROFILE_STEPS", 8)


@pytest.fixture
def paced_steps(monkeypatch):
    """Each eager step at least 0.5 ms, so a generation of 8000 tokens outlasts what the test does
    during it however fast the host: a runner once finished 3000 tokens of qwen3-tiny before the
    A/B screen had closed (closing it and settling took 6 s on a busy 2-core host)."""
    import time

    from tfdash.engine.runtime import Runtime

    step = Runtime.step

    def paced(self):
        time.sleep(0.0005)
        step(self)

    monkeypatch.setattr(Runtime, "step", paced)


def tiny_app(engine, max_new: int):
    def factory(status):
        return make_session(engine, "The GPU", max_new, target=CPU, ignore_eos=True)

    return live_app(factory, max_new_tokens=max_new, theme="tfdash-dark")


@sync
@pytest.mark.usefixtures("one_torch_thread", "short_windows", "paced_steps")
async def test_live_ab_alternates_shows_a_verdict_and_the_snapshot_keeps_it(isolated_config, tiny_engine):
    messages = []
    app = tiny_app(tiny_engine, 8000)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 4, what="tokens")
        await pilot.press("a")
        await settle(pilot)
        variants = rows(app.screen.query_one("#ab-variants"))
        assert variants[0] == ["tilelang-unfused", "fused_rope=False"] and len(variants) >= 6
        await pilot.press("enter")  # the first: fused_rope=False, a qk_norm_rope launch a layer
        await wait_for(pilot, lambda: once(messages, ABMeasured), what="the A/B")
        [done] = once(messages, ABMeasured)
        r = done.result
        assert done.what == "tilelang-unfused" and "unavailable" not in r, r
        assert r["order"] == "AB" * 6 and r["a"]["windows"] == r["b"]["windows"] == 6  # >= 3 a side
        assert r["tokens"]["agree"] == r["tokens"]["checks"] == 12 and r["during"] == "the generation"
        ran = [m.progress.done for m in once(messages, ABProgressed) if m.progress.phase == "running"]
        assert ran and ran == sorted(ran) and ran[-1] <= 14
        await settle(pilot)
        verdict = plain(app, "#ab-verdict")
        assert r["verdict"] in verdict and "tokens agree at all 12 turn starts" in verdict
        sides = rows(app.screen.query_one("#ab-sides"))
        assert [s[0] for s in sides] == [f"A running plan · {r['launches'][0]} launches",
                                         f"B tilelang-unfused · {r['launches'][1]} launches"]
        assert sides[0][1] == f"{r['a']['tok_per_s']:,.1f}" and sides[1][4] == "6"
        ops = {row[0]: row for row in rows(app.screen.query_one("#ab-ops"))}
        added = ops["qk_norm_rope (B only)"]  # its whole time as Δ, as the headless table gives it
        assert added[1] == "—" and added[3] == "+" + added[2] and ops["attention"][1] != "—"
        await wait_for(pilot, lambda: app.snapshot.ab == (r,), what="the snapshot to carry the A/B")
        await pilot.press("escape")  # nothing runs: it closes; the generation goes on with plan A
        await settle(pilot)
        assert app.screen.query(KernelTable) and app.state == "running"
        after = app.snapshot.new_tokens
        await wait_for(pilot, lambda: app.snapshot.new_tokens > after + 8, what="more tokens")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=30, what="the app to exit")
    final = app.return_value
    assert final.ab == (r,) and final.new_tokens > after


@sync
@pytest.mark.usefixtures("one_torch_thread", "cancellable_windows")
async def test_escape_cancels_the_ab_and_errors_are_one_line(isolated_config, tiny_engine):
    messages = []
    app = tiny_app(tiny_engine, 6000)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 4, what="tokens")
        await pilot.press("a", "enter")
        await wait_for(pilot, lambda: any(m.progress.phase == "running" for m in once(messages, ABProgressed)),
                       what="the first window")
        await pilot.press("escape")
        await wait_for(pilot, lambda: once(messages, ABMeasured), what="the cancelled A/B")
        r = once(messages, ABMeasured)[0].result
        assert r["incomplete"] == "cancelled" and len(r["order"]) < 12
        await settle(pilot)
        assert "incomplete: cancelled" in plain(app, "#ab-verdict")
        # a variant this engine cannot run: its one line, on the screen
        # tilelang-nopdl, the last row (ctrl+end moves the cursor there): a tilelang-graph launch setting. One
        # key, not a down per row: while the engine decodes, the pilot waits up to 2 s after each key for idle
        table = app.screen.query_one("#ab-variants")
        await pilot.press("ctrl+end")
        assert table.cursor_row == table.row_count - 1 > 0
        assert rows(table)[-1] == ["tilelang-nopdl", "pdl=False · tilelang-graph only"]  # said before ⏎ too
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(once(messages, ABMeasured)) == 2, what="the refusal")
        line = once(messages, ABMeasured)[1].result["unavailable"]
        assert "is a tilelang-graph launch setting; this engine is torch-eager" in line
        await settle(pilot)
        assert line in plain(app, "#ab-verdict")
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: not app.is_running, timeout=30, what="the app to exit")
    assert app.return_value.ab[0]["incomplete"] == "cancelled"  # kept, like any measurement


@sync
@pytest.mark.usefixtures("one_torch_thread", "short_windows")
async def test_a_variant_that_cannot_differ_on_the_cpu_is_a_toast_and_starts_nothing(isolated_config, tiny_engine):
    """tilelang-ringcopy on the CPU's torch-eager ran its 12 windows and showed a difference of noise:
    ring_in_graph only sets how a CUDA step's token reaches the host, and a CPU runtime stores each
    token itself. Its row says no-op before it is picked; ⏎ on it is a toast naming it and why, and
    no window runs."""
    from test_app_fit import toast_lines

    from tfdash.profiling.ab import VARIANTS

    messages = []
    app = tiny_app(tiny_engine, 24)
    async with app.run_test(size=SIZE, message_hook=messages.append, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.state == "done", what="the generation's end")
        app.clear_notifications()
        await pilot.press("a")
        await settle(pilot)
        table = app.screen.query_one("#ab-variants")
        await pilot.press("ctrl+end", *["up"] * (len(VARIANTS) - 1 - list(VARIANTS).index("tilelang-ringcopy")))
        assert rows(table)[table.cursor_row] == ["tilelang-ringcopy", "ring_in_graph=False · no-op"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: once(messages, ABMeasured), what="the refusal")
        [m] = once(messages, ABMeasured)
        assert m.result["unavailable"] == (
            "tilelang-ringcopy (ring_in_graph=False) sets how a CUDA step's token reaches the host; this engine is "
            "torch-eager on the CPU, which stores each token itself either way")
        await settle(pilot)
        toast = " ".join(toast_lines(app))
        assert toast.startswith("A/B tilelang-ringcopy: tilelang-ringcopy (ring_in_graph=False)") and "CPU" in toast
        assert [p.progress.phase for p in once(messages, ABProgressed)] == ["building"]
        assert app.snapshot.ab == ()
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: not app.is_running, timeout=30, what="the app to exit")


# -- the A/B screen on a saved snapshot ----------------------------------------------------------
def recorded_ab() -> dict:
    """What the live A/B of fused_rope=False would record on the fixture's run (synthetic turns;
    per-launch times are the two fixture snapshots'), through the same summarize."""
    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.profiling import ab
    from tfdash.profiling.timeline import WindowResult

    cfg = preset("qwen3-1.7b")
    sides = {"A": (build_plan(cfg, capacity=2112), load_snapshot(SNAPSHOT)),
             "B": (build_plan(cfg, capacity=2112, fused_rope=False), build_snapshot(fused_rope=False))}
    rt = {s: SimpleNamespace(plan=p, backend="tilelang-graph") for s, (p, _) in sides.items()}
    profiles = {s: WindowResult("cupti", 1800, 3, tuple((int(k.measured_p50_ns),) * 3 for k in snap.kernels),
                                (1, 1, 1), (), (), 0, 0) for s, (_, snap) in sides.items()}
    turns = [("AB"[i % 2], 1024 + 64 * i, tuple(1_300_000 + 20_000 * (i % 2) + 1000 * ((i * 7 + k) % 5)
                                                 for k in range(64))) for i in range(12)]
    checks = [(t[1], 42 + i, 42 + i) for i, t in enumerate(turns)]
    return {**ab.summarize(ab.resolve("tilelang-unfused"), rt["A"], rt["B"], turns, checks, profiles),
            "during": "the generation"}


def test_ab_screen_picture_of_a_recorded_result(isolated_config, tmp_path, snap_compare):
    snap = dataclasses.replace(load_snapshot(SNAPSHOT), ab=(recorded_ab(),))
    path = write_snapshot(snap, tmp_path / "with-ab.json")

    async def open_ab(pilot):
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)

    assert snap_compare(open_app(path), terminal_size=SIZE, run_before=open_ab)


@pytest.mark.parametrize("sizes", [((80, 24), (120, 40)), ((160, 48), (100, 30))])
@sync
async def test_the_ab_result_is_read_whole_in_a_small_terminal(isolated_config, sizes):
    """At 80x24 (and 100x30) the A/B's answer is on the screen: the verdict, both sides with whole
    cells (the range over windows, then the windows a side, left out where they do not fit: the
    verdict's second line says the windows a side) and the first ops; the intro gives up its rows and
    comes back, with the range from 120 columns, in a larger terminal."""
    from test_app_fit import screen_text

    r = recorded_ab()
    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(r,)), theme="tfdash-dark")
    async with app.run_test(size=sizes[0]) as pilot:
        await settle(pilot)
        await pilot.press("a")
        for size in (*sizes, sizes[0]):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            text = screen_text(app)
            x = next(line.index("╭─ A/B") for line in text.splitlines() if "╭─ A/B" in line)
            lines = [line[x + 1:].split("│")[0].strip() for line in text.splitlines() if line[x:x + 1] == "│"]
            assert f"{VERDICT_LABEL}: {r['verdict']}" in lines, text
            a = next(line for line in lines if line.startswith("A running plan"))
            assert f"{r['a']['tok_per_s']:,.1f}" in a and f"{r['a']['step_ns'] / 1e6:.3f}" in a, text
            assert a.endswith(" 6") == (size[0] >= 100), text  # the windows column, whole (at 80: the verdict's)
            assert ("768.0 – 768.0" in a) == (size[0] >= 120), text
            assert ("take turns on this generation" in text) == (size[1] >= 32), text
            # An op on B only: its whole time as Δ, as the headless table and `tfdash diff` give it
            added = next(line for line in lines if line.startswith("qk_norm_rope"))
            assert added.startswith("qk_norm_rope (B only)") and "+84.6 µs" in added, text


@sync
async def test_the_ops_a_small_box_cannot_show_are_reached_by_tab_and_arrows(isolated_config):
    """At 80x24 the per-op table shows its first rows; the rest were out of reach from the keyboard
    (tab went to the sides' table, where the arrows did nothing). tab moves between the variants
    and the ops, the footer says where it goes, and the arrows scroll the ops to the last."""
    from test_app_fit import screen_text

    r = recorded_ab()
    last = r["per_op"][-1]["op"]
    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(r,)), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        text = screen_text(app)
        assert f"│  {last} " not in text and "tab Ops" in text.splitlines()[-1], text
        await pilot.press("tab")
        await settle(pilot)
        assert "tab Variants" in screen_text(app).splitlines()[-1]
        await pilot.press(*["down"] * len(r["per_op"]))
        await settle(pilot)
        assert f"│  {last} " in screen_text(app), screen_text(app)
        await pilot.press("tab")  # back: the arrows move among the variants again
        await settle(pilot)
        assert "tab Ops" in screen_text(app).splitlines()[-1]


@sync
async def test_a_new_ab_clears_the_last_result_and_run_leaves_the_footer_while_it_runs(isolated_config):
    """After one A/B, a second one's run showed the first one's sides ("B tilelang-unfused · …") and
    verdict beside its progress, and the footer still offered ⏎ Run (which only said "still
    running"). While it runs: the variants and its progress, no sides, verdict or ops, no ⏎ Run;
    when it is done, its result and ⏎ Run again."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.app.app import TfdashApp

    class HeldStandIn(LiveStandIn):
        """Its A/B answers once `go` is set (the first one at once): a run the test can look at."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.go = threading.Event()
            self.go.set()

        def ab(self, what, progress=None, cancel=None, **sizes):
            self.go.wait(timeout=60)
            return {**super().ab(what), "what": what}

    r = recorded_ab()
    source = HeldStandIn(ab_result=r)
    app = TfdashApp(source, theme="tfdash-dark")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("a", "enter")
            await app.workers.wait_for_complete()
            await settle(pilot)
            inside = box_lines(screen_text(app), "A/B a plan variant")
            assert any(line.startswith("B tilelang-unfused") for line in inside), inside
            source.go.clear()
            await pilot.press("down", "enter")  # another variant: it runs until go is set
            await settle(pilot)
            text = screen_text(app)
            inside = box_lines(text, "A/B a plan variant")
            old = ("side ", "A running plan", "B tilelang-unfused ·", "op ", "qk_norm_rope")
            assert not any(line.startswith(old) for line in inside), inside
            assert not any(VERDICT_LABEL in line for line in inside), inside
            assert "⏎ Run" not in text.splitlines()[-1] and "esc Cancel " in text.splitlines()[-1] + " ", text
            source.go.set()
            await app.workers.wait_for_complete()
            await settle(pilot)
            text = screen_text(app)
            inside = box_lines(text, "A/B a plan variant")
            second = app.screen.query_one("#ab-variants").get_row_at(1)[0]
            assert any(line.startswith(f"B {second} ·") for line in inside), inside
            assert "⏎ Run" in text.splitlines()[-1], text
    finally:
        source.go.set()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@sync
async def test_a_live_ab_names_each_figure_and_fits_80_columns(isolated_config, size):
    """After a live A/B (a, ⏎) the sides' table says its figures are medians over each side's
    windows and the verdict says its Δ is B vs A tok/s, the median of the paired windows, so "faster" beside
    a B median a hair lower is not a contradiction; every header and cell is whole at 80 columns."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.app.app import TfdashApp

    r = recorded_ab()
    app = TfdashApp(LiveStandIn(ab_result=r), theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("a", "enter")
        await app.workers.wait_for_complete()
        # the worker hands its result to the app's loop (call_from_thread), and the sides' columns are
        # fitted again after the refresh that gives their table its width: on a busy host both can come
        # a few pauses after the worker ends
        await wait_for(pilot, lambda: VERDICT_LABEL in screen_text(app) and "median ms/step" in screen_text(app),
                       30, "the A/B's verdict and the sides' columns fitted to the box")
        await settle(pilot)
        inside = box_lines(screen_text(app), "A/B a plan variant")
    header = re.split(r" {2,}", next(line for line in inside if line.startswith("side")))
    assert {"median tok/s", "median ms/step"} <= set(header) <= {"side", "median tok/s", "range over windows",
                                                                 "median ms/step", "windows"}, inside
    a = re.split(r" {2,}", next(line for line in inside if line.startswith("A running plan")))
    assert a[1] == f"{r['a']['tok_per_s']:,.1f}" and f"{r['a']['step_ns'] / 1e6:.3f}" in a, inside
    assert f"{VERDICT_LABEL}: {r['verdict']}" in inside, inside


def test_the_printed_ab_keeps_its_columns_for_a_long_variant_name():
    """`--ab down:seg=24,blocks_per_sm=1` printed B's figures a column to the right of A's and of
    the header: the side's label was padded to 26 characters, and a GEMV spec's name is longer."""
    from tfdash.profiling.ab_table import table

    for what in ("tilelang-unfused", "tilelang[down:seg=24,blocks_per_sm=1+o_proj:rows=2]"):
        r = {**recorded_ab(), "what": what}
        header, a, b = table(r)[1:4]
        end = header.index("median tok/s") + len("median tok/s")
        assert a[:end].endswith(f"{r['a']['tok_per_s']:.1f}") and b[:end].endswith(f"{r['b']['tok_per_s']:.1f}"), \
            (header, a, b)
        assert b.startswith(f"B {what} (") and len(a) == len(b)


@sync
async def test_a_finished_ab_leaves_its_box_uncovered_at_80x24(isolated_config):
    """At 80x24 the end of an A/B put a 6-second toast of its verdict over the box that shows the
    same verdict. With the box up, a whole run's verdict is the box's alone; no toast covers it."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text, toast_lines

    from tfdash.app.app import TfdashApp

    r = recorded_ab()
    app = TfdashApp(LiveStandIn(ab_result=r), theme="tfdash-dark")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.clear_notifications()
        await pilot.press("a", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        toasts = toast_lines(app)
        inside = box_lines(screen_text(app), "A/B a plan variant")
    assert not any("A/B" in line or VERDICT_LABEL in line for line in toasts), toasts
    assert any(f"{VERDICT_LABEL}: {r['verdict']}" in line for line in inside), inside


async def ab_box_after_enter(result: dict) -> tuple[str, list[bool], list[str]]:
    """On a live stand-in whose A/B ends with `result`: a, then enter; the toast's text, each toast's
    warning class, and the A/B box's lines at 120x40."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text, toast_lines

    from tfdash.app.app import TfdashApp

    app = TfdashApp(LiveStandIn(ab_result=result), theme="tfdash-dark")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        app.clear_notifications()
        await pilot.press("a", "enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        return (" ".join(toast_lines(app)), [t.has_class("-warning") for t in app.screen.query("Toast")],
                box_lines(screen_text(app), "A/B a plan variant"))


@sync
async def test_a_cancelled_ab_says_so_in_its_toast_and_its_box(isolated_config):
    """esc during an A/B: the toast read "A/B tilelang-unfused, paired windows' median Δ: variant
    faster by 5.4 % ± 2.3 %" as a whole run's would, the box said "done:", and an empty per-op
    table's header stood under "incomplete: cancelled". The toast is a warning that says it was
    cancelled and after how many windows, the box says "incomplete:", and no bare header is drawn."""
    r = {**recorded_ab(), "incomplete": "cancelled", "per_op": [], "per_op_method": "not measured",
         "windows_per_side": 2}
    toast, severities, inside = await ab_box_after_enter(r)
    assert f"A/B tilelang-unfused cancelled after 2 windows of 64 steps a side, {VERDICT_LABEL}: {r['verdict']}" \
        in toast, toast
    assert severities == [True], severities
    assert any(line.startswith("incomplete: tilelang-unfused") for line in inside), inside
    assert not any(line.startswith("done:") for line in inside), inside
    assert not any(re.match(r"op\s+A\s+B\s+Δ", line) for line in inside), inside


@sync
async def test_an_ab_stopped_between_a_and_b_counts_each_sides_windows_as_its_table_does(isolated_config):
    """Stopped after A's fifth window and before B's, the box said "4 windows of 64 steps a side" (and
    its toast "after 4 windows a side") beside a sides' table whose A row had 5. Both give each side's
    count where they differ, in the headless report's words."""
    r = recorded_ab()
    r = {**r, "incomplete": "cancelled", "order": "ABABABABA", "windows_per_side": 4,
         "a": {**r["a"], "windows": 5}, "b": {**r["b"], "windows": 4}}
    said = "windows of 64 steps, 5 of A and 4 of B (4 paired)"
    toast, _, inside = await ab_box_after_enter(r)
    a = next(line for line in inside if line.startswith("A running plan"))
    b = next(line for line in inside if line.startswith("B tilelang-unfused"))
    assert a.split()[-1] == "5" and b.split()[-1] == "4", inside  # the windows column
    assert f" · {said}, order ABABABABA, during the generation;" in " ".join(inside), inside
    assert "4 windows" not in " ".join(inside), inside
    assert f"A/B tilelang-unfused cancelled after {said}, {VERDICT_LABEL}: " in toast, toast


def torch_eager_fixture():
    """The fixture's snapshot as the CPU default's engine would record it: torch-eager, with the
    plan's build options (lm_head_q8=False among them, as build_plan makes it)."""
    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan

    snap = load_snapshot(SNAPSHOT)
    options = dict(build_plan(preset("qwen3-1.7b"), "bfloat16", capacity=2112).meta["options"])
    return dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, backend="torch-eager", plan_options=options))


@sync
async def test_the_variants_this_engine_would_refuse_say_why_before_one_is_picked(isolated_config):
    """On torch-eager, tilelang-nopdl (a tilelang-graph launch setting) and tilelang-bf16head (the
    plan already running) were listed like the rest and refused only after ⏎. At 80x24 their rows
    now end with why, by the A/B's own rule (variants.refusal), from the first snapshot on (the box
    may open while the engine is still built); ⏎ on one still asks the session, whose line is the
    answer."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text

    from tfdash.app.app import TfdashApp
    from tfdash.app.messages import SessionNews
    from tfdash.profiling.ab import VARIANTS
    from tfdash.profiling.variants import refusal

    class Building(LiveStandIn):
        """No snapshot until `ready`: the engine is still being built."""

        ready = False

        def snapshot(self):
            return self.recorded if self.ready else None

    snap = torch_eager_fixture()
    refused = {n: refusal(v, "torch-eager", snap.meta.plan_options) for n, v in VARIANTS.items()}
    launch_only = {n for n, v in VARIANTS.items() if v.options and not set(v.options) & TORCH_VISIBLE}
    assert {n for n, why in refused.items() if why} == {"tilelang-nopdl", "tilelang-bf16head", *launch_only}
    assert {"tilelang-sc24", "tilelang-eachround"} <= launch_only and "tilelang-unfused" not in launch_only
    source = Building(snap, ab_result={"what": "tilelang-nopdl", "unavailable": refused["tilelang-nopdl"].line})
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        table = app.screen.query_one("#ab-variants")
        assert not any(" · " in row[1] for row in rows(table))  # no snapshot: nothing known to refuse
        source.ready = True
        app.post_message(SessionNews())
        await settle(pilot)
        about = {row[0]: row[1] for row in rows(table)}
        assert about == {n: v.about + (f" · {refused[n].short}" if refused[n] else "") for n, v in VARIANTS.items()}
        await pilot.press("ctrl+end")  # the last rows, whole at 80 columns
        await settle(pilot)
        inside = box_lines(screen_text(app), "A/B a plan variant")
        assert re.search(r"^tilelang-nopdl +pdl=False · tilelang-graph only$", "\n".join(inside), re.M), inside
        assert re.search(r"^tilelang-bf16head +lm_head_q8=False · the running plan$", "\n".join(inside), re.M), inside
        assert re.search(r"^tilelang-eachround +attn_rounds_carry=False · no-op$", "\n".join(inside), re.M), inside
        shown = [line.split()[0] for line in inside if line.split() and line.split()[0] in VARIANTS]
        assert len(shown) >= 8 and all(any(about[n] in line for line in inside) for n in shown), inside
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot)
        assert source.asked == ["ab tilelang-nopdl"]
        assert refused["tilelang-nopdl"].line in plain(app, "#ab-verdict")


@sync
async def test_a_window_toast_waits_while_the_ab_box_is_up_at_80x24(isolated_config):
    """At 80x24 a profile window that landed during an A/B put its toast over the box's progress bar
    and status line. While the box is up a window's toast waits (the newest is shown when the box
    closes); an engine's warning does not."""
    from fixtures.appkit import LiveStandIn
    from test_app_dialogs import box_lines
    from test_app_fit import screen_text, toast_lines

    from tfdash.app.app import TfdashApp
    from tfdash.app.messages import EngineStatus, SessionNews

    class HeldStandIn(LiveStandIn):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.go = threading.Event()

        def ab(self, what, progress=None, cancel=None, **sizes):
            self.go.wait(timeout=60)
            return {**super().ab(what), "what": what}

    source = HeldStandIn(ab_result=recorded_ab())
    app = TfdashApp(source, theme="tfdash-dark")
    try:
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            await settle(pilot)
            app.clear_notifications()  # the first window's toast, before the box
            await pilot.press("a", "enter")
            await settle(pilot)
            snap = source.snap
            for n, ctx in enumerate((1536, 2048), start=2):  # two windows while it runs
                source.snap = dataclasses.replace(snap, profile_windows=n,
                                                  roofline=dataclasses.replace(snap.roofline, ctx_len=ctx))
                app.post_message(SessionNews())
                await settle(pilot)
            assert app.snapshot.roofline.ctx_len == 2048
            assert toast_lines(app) == []
            inside = box_lines(screen_text(app), "A/B a plan variant")
            assert "building tilelang-unfused beside the running plan…" in inside, inside
            app.post_message(EngineStatus("warning: the GPU clocks dropped"))
            await settle(pilot)
            assert toast_lines(app) == ["engine", "the GPU clocks dropped"]
            app.clear_notifications()
            source.go.set()
            await app.workers.wait_for_complete()
            await settle(pilot)
            assert not any("profile window" in line for line in toast_lines(app))
            app.clear_notifications()
            await pilot.press("escape")  # the box closes: the newest window's toast now
            await settle(pilot)
            toasts = toast_lines(app)
            assert toasts[0] == "profile window" and "ctx_len 2,048" in toasts[1] and "1,536" not in " ".join(toasts)
    finally:
        source.go.set()


@sync
async def test_picker_lists_runs_in_the_order_of_their_recorded_column(isolated_config, exports):
    """The picker sorted by the files' mtime while its "recorded" column shows each run's start: a
    snapshot copied or saved again later was listed above newer runs, the column out of order. The
    rows are newest run first, as the column reads."""
    def started(path, when):
        snap = load_snapshot(path)
        write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, started_at=when)), path)

    started(exports.fp16, "2026-11-01T09:00:00Z")  # the newest file holds the oldest run
    started(exports.unfused, "2026-12-01T09:00:00Z")
    os.utime(exports.unfused, (1_800_000_000, 1_800_000_000))
    os.utime(exports.fp16, (1_800_000_100, 1_800_000_100))
    app = open_app(exports.shown)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        listed = rows(app.screen.query_one("#picker-table"))
    names = [r[0] for r in listed]
    assert names.index(exports.unfused.name) < names.index(exports.fp16.name), listed
    when = [r[3] for r in listed if r[3]]
    assert when == sorted(when, reverse=True), listed
