"""The dashboard keeps the runs `q` and `r` would otherwise lose: quitting without --save (or with a
--save that failed) writes the final snapshot into the kept-runs folder, and the line printed after
the screen closes names it; `r` keeps the run it starts over, and `b` lists it as a baseline; the
newest KEEP stay. The real tiny CPU engine (qwen3-tiny, random weights) throughout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.appkit import isolated_config, one_torch_thread, sync  # noqa: F401  (fixtures)
from test_app_live import SIZE, Recorder, wait_for

from tfdash.app.kept import KEEP, keep, prune, runs_dir
from tfdash.app.main import final_line, live_app
from tfdash.errors import TfdashError
from tfdash.profiling.export import load_snapshot

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_engine():
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", capacity=4096)


async def quit_after(app, tokens: int) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= tokens, what="tokens")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")


@sync
async def test_q_without_save_keeps_the_run_and_the_closing_line_names_it(isolated_config, tiny_engine, tmp_path):
    runs = tmp_path / "cache" / "runs"
    app = live_app(Recorder(tiny_engine, 3000), max_new_tokens=3000, keep_dir=runs)
    await quit_after(app, 20)
    kept = sorted(runs.iterdir())
    assert len(kept) == 1 and kept[0].name.startswith("tfdash-qwen3-tiny-") and kept[0].suffix == ".json"
    assert app.kept == kept[0] and app.keep_error is None
    assert load_snapshot(kept[0]) == app.return_value  # everything measured, nothing else
    line = final_line(app)
    assert line.endswith(f"; snapshot kept as {kept[0]} (tfdash open it; b in a run lists it)")


@sync
async def test_q_with_save_keeps_nothing_more(isolated_config, tiny_engine, tmp_path):
    runs = tmp_path / "runs"
    app = live_app(Recorder(tiny_engine, 3000), max_new_tokens=3000, save_path=tmp_path / "run.json", keep_dir=runs)
    await quit_after(app, 10)
    assert load_snapshot(tmp_path / "run.json") == app.return_value
    assert not runs.exists() and app.kept is None
    assert "snapshot saved to" in final_line(app) and "kept" not in final_line(app)


@sync
async def test_a_save_that_fails_is_kept_instead(isolated_config, tiny_engine, tmp_path):
    (tmp_path / "not-a-folder").write_text("x")
    runs = tmp_path / "runs"
    app = live_app(Recorder(tiny_engine, 3000), max_new_tokens=3000,
                   save_path=tmp_path / "not-a-folder" / "run.json", keep_dir=runs)
    await quit_after(app, 10)
    assert app.save_error  # the CLI says so and exits 1
    (kept,) = runs.iterdir()
    assert load_snapshot(kept) == app.return_value and kept.name in final_line(app)


@sync
async def test_a_keep_folder_that_cannot_be_made_says_why_and_the_quit_still_ends(isolated_config, tiny_engine,
                                                                                 tmp_path):
    (tmp_path / "runs").write_text("a file where the folder would be")
    app = live_app(Recorder(tiny_engine, 3000), max_new_tokens=3000, keep_dir=tmp_path / "runs")
    await quit_after(app, 10)
    assert app.return_value is not None and app.kept is None
    assert app.keep_error.startswith(f"not kept: cannot write {tmp_path / 'runs'} (")
    assert "kept" not in final_line(app)


@sync
async def test_r_keeps_the_run_before_and_b_lists_it(isolated_config, tiny_engine, tmp_path, monkeypatch):
    from test_app_fit import toast_lines
    from textual.widgets import DataTable

    from tfdash.app.screens.picker import PickerScreen

    monkeypatch.chdir(tmp_path)  # the export folder: empty
    runs = tmp_path / "runs"
    rec = Recorder(tiny_engine, 24)
    app = live_app(rec, max_new_tokens=24, keep_dir=runs)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the first run's end")
        first = app.snapshot
        await pilot.press("r")
        await wait_for(pilot, lambda: len(rec.sessions) == 2, what="the second run")
        (kept,) = runs.iterdir()
        assert load_snapshot(kept) == first and first.new_tokens == 24
        await pilot.pause()
        toasts = " ".join(toast_lines(app))
        assert f"the run before is kept as {kept.name} (b compares against it)" in toasts, toasts
        await wait_for(pilot, lambda: app.state == "done" and app.snapshot.new_tokens == 24, what="the second run")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen), what="the picker")
        table = app.screen.query_one("#picker-table", DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert names == [kept.name]  # the run before, one key away
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.baseline is not None, what="the baseline")
        assert app.baseline.snapshot == first


@sync
async def test_b_pressed_as_r_stops_the_run_lists_the_run_r_keeps(isolated_config, tiny_engine, tmp_path, monkeypatch):
    """r, then b at once (to compare with the run before, as r's toast offers): the picker read the
    folders before the stopping run was kept, and never listed it. A run kept while the picker is up
    is listed first, the cursor staying on the row it was on."""
    import time

    from textual.widgets import DataTable

    from tfdash.app.screens.picker import PickerScreen

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    rec = Recorder(tiny_engine, 3000)

    def slow_to_stop(status):  # the steps in flight when r stops the run take a while (a GPU's graph replays)
        s = rec(status)
        run = s.run

        def finishing_run(on_event=None, stop=None):
            out = run(on_event=on_event, stop=stop)
            if len(rec.sessions) == 1:
                time.sleep(1.0)
            return out

        s.run = finishing_run
        return s

    app = live_app(slow_to_stop, max_new_tokens=3000, keep_dir=runs)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.state == "stopping", what="r stopping the run")
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.entries is not None,
                       what="the picker's list")
        listed_then = list(app.screen.entries)
        await wait_for(pilot, lambda: runs.exists() and any(runs.iterdir()), what="the run r keeps")
        await pilot.pause()
        (kept,) = runs.iterdir()
        table = app.screen.query_one("#picker-table", DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        box = app.screen.query_one("#picker-box").region  # the list's box, not the empty picker's auto height
        empty_class = app.screen.has_class("-empty")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.baseline is not None, what="the baseline")
        chosen = app.baseline.snapshot
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    assert listed_then == []  # read before the keep: the folders were empty
    assert names == [kept.name], names
    assert not empty_class and box.height < SIZE[1] - 2, (empty_class, box)  # a list's box, inside the screen
    assert chosen == load_snapshot(kept)


@sync
async def test_a_run_kept_by_r_is_not_kept_again_when_the_next_run_never_built(isolated_config, tiny_engine,
                                                                              tmp_path):
    """r keeps the run; the next run's engine fails to build, so the screen still shows the run
    before: a second r, and then q, name the file it is kept in and write no copy of it."""
    runs = tmp_path / "runs"
    rec = Recorder(tiny_engine, 24)

    def first_builds(status):
        if rec.sessions:
            raise TfdashError("out of memory building the engine")
        return rec(status)

    app = live_app(first_builds, max_new_tokens=24, keep_dir=runs)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the first run's end")
        for _ in range(2):
            await pilot.press("r")
            await wait_for(pilot, lambda: app.state == "error", what="the build's failure")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    (kept,) = runs.iterdir()
    assert load_snapshot(kept) == app.return_value and app.return_value.new_tokens == 24
    assert final_line(app).endswith(f"; snapshot kept as {kept} (tfdash open it; b in a run lists it)")


@sync
async def test_a_run_r_could_not_keep_is_not_said_of_the_final_snapshot_that_save_wrote(isolated_config, tiny_engine,
                                                                                        tmp_path):
    (tmp_path / "runs").write_text("a file where the folder would be")
    app = live_app(Recorder(tiny_engine, 24), max_new_tokens=24, save_path=tmp_path / "run.json",
                   keep_dir=tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.state == "done", what="the first run's end")
        await pilot.press("r")  # its toast says the run before was not kept
        await wait_for(pilot, lambda: app.state == "done" and app.refreshes > 1, what="the second run")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    assert load_snapshot(tmp_path / "run.json") == app.return_value
    assert "snapshot saved to" in final_line(app)
    assert app.keep_error is None  # run_app's "the final snapshot was not kept" line: not said of a saved one


@sync
async def test_q_straight_after_r_saves_the_run_once_and_builds_no_other(isolated_config, tiny_engine, tmp_path):
    """r then q before the run r stopped had ended: the run's end, handled as the quit waited for
    it, still did r's work -- kept a second copy of the run --save wrote into the runs folder, said
    so in a toast, and started building the next run's engine under the exiting app. A quit under
    way takes over from r: the run is written once, where the quit writes it."""
    import time

    runs = tmp_path / "runs"
    rec = Recorder(tiny_engine, 3000)

    def slow_to_stop(status):  # the steps in flight when r stops the run take a while (a GPU's graph replays)
        s = rec(status)
        run = s.run

        def finishing_run(on_event=None, stop=None):
            out = run(on_event=on_event, stop=stop)
            time.sleep(1.0)
            return out

        s.run = finishing_run
        return s

    app = live_app(slow_to_stop, max_new_tokens=3000, save_path=tmp_path / "run.json", keep_dir=runs)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 10, what="tokens")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.state == "stopping", what="r stopping the run")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=20, what="the app to exit")
    assert load_snapshot(tmp_path / "run.json") == app.return_value and app.return_value.new_tokens >= 10
    assert not runs.exists() and app.kept is None, sorted(runs.iterdir())
    assert len(rec.sessions) == 1, "a second run was started while quitting"


def test_keep_removes_the_oldest_past_the_limit_and_only_its_own_files(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(KEEP + 2):
        p = runs / f"tfdash-qwen3-tiny-2026010{i:02d}-000000.json"
        p.write_text("{}")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    (runs / "notes.txt").write_text("mine")
    gone = prune(runs, KEEP)
    assert sorted(p.name for p in gone) == ["tfdash-qwen3-tiny-202601000-000000.json",
                                            "tfdash-qwen3-tiny-202601001-000000.json"]
    left = sorted(p.name for p in runs.iterdir())
    assert len(left) == KEEP + 1 and "notes.txt" in left


def test_keep_through_a_file_in_the_cache_folders_place_is_one_line(tmp_path, monkeypatch):
    snap = load_snapshot(Path(__file__).parent / "fixtures" / "snapshot-1.7b.json")
    (tmp_path / "cachefile").write_text("x")
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cachefile"))
    assert runs_dir() == tmp_path / "cachefile" / "runs"
    with pytest.raises(TfdashError, match=r"^not kept: TFDASH_CACHE_DIR .*cachefile is a file, not a folder$"):
        keep(snap, runs_dir())
    assert not (tmp_path / "cachefile").is_dir()


def test_keep_writes_the_snapshot_under_a_new_name_each_time(tmp_path):
    snap = load_snapshot(Path(__file__).parent / "fixtures" / "snapshot-1.7b.json")
    a, b = keep(snap, tmp_path / "made" / "runs"), keep(snap, tmp_path / "made" / "runs")
    assert a != b and a.parent == b.parent == tmp_path / "made" / "runs"
    assert load_snapshot(a) == load_snapshot(b) == snap


def test_two_dashboards_keeping_in_the_same_second_keep_both_runs(tmp_path, monkeypatch):
    """The name keep() writes is its own from the moment it is chosen: a second dashboard that
    found the same free name (quitting in the same second) wrote over the first's run."""
    from tfdash.app import exports

    snap = load_snapshot(Path(__file__).parent / "fixtures" / "snapshot-1.7b.json")
    runs = tmp_path / "runs"
    runs.mkdir()
    other = runs / "tfdash-qwen3-1.7b-20260101-000000.json"
    real = exports.unique_path
    calls = []

    def raced(directory, stem, suffix):  # the other dashboard writes this name after it was found free
        calls.append(stem)
        if len(calls) == 1:
            other.write_text('{"schema": "tfdash.snapshot", "the other run": 1}')
            return other
        return real(directory, stem, suffix)

    monkeypatch.setattr(exports, "unique_path", raced)
    path = keep(snap, runs)
    assert other.read_text() == '{"schema": "tfdash.snapshot", "the other run": 1}'  # the other run, whole
    assert path != other and load_snapshot(path) == snap


def test_an_empty_file_left_in_the_runs_folder_is_not_the_newest_run(tmp_path):
    from tfdash.app.kept import kept_runs

    snap = load_snapshot(Path(__file__).parent / "fixtures" / "snapshot-1.7b.json")
    runs = tmp_path / "runs"
    good = keep(snap, runs)
    os.utime(good, (1_000_000, 1_000_000))
    (runs / "tfdash-qwen3-1.7b-20260101-000000.json").write_text("")  # a reserved name never written
    assert kept_runs(runs) == [good]


def test_open_without_a_file_opens_the_newest_kept_run_or_says_there_is_none(tmp_path):
    from conftest import assert_one_line_error, run_tfdash

    env = {"TFDASH_CACHE_DIR": str(tmp_path / "cache"), "TFDASH_CONFIG_DIR": str(tmp_path / "cfg")}
    r = run_tfdash("open", env=env)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"no snapshot named, and no kept run in {tmp_path / 'cache' / 'runs'}",
                          "; e exports one)")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text('{"keymap": {"export.snapshot": "E"}}')
    r = run_tfdash("open", env=env)  # the export key as config.json binds it, not the default e
    assert_one_line_error(r.stderr, "no kept run in", "; E exports one)")
    snap = load_snapshot(Path(__file__).parent / "fixtures" / "snapshot-1.7b.json")
    older, newer = keep(snap, tmp_path / "cache" / "runs"), keep(snap, tmp_path / "cache" / "runs")
    os.utime(older, (2_000_000_000, 2_000_000_000))  # the newest by time, whatever the names say
    r = run_tfdash("open", env=env)  # stdout is a pipe: the summary
    assert r.rc == 0, r.stderr
    assert r.stderr.splitlines()[0] == f"tfdash: opening the newest kept run, {older}"
    assert r.stdout.startswith(f"snapshot {older}: qwen3-1.7b") and str(newer) not in r.stdout


def test_the_line_saying_a_run_was_not_kept_shows_the_folders_control_characters(tmp_path, monkeypatch, capsys):
    """The line after the screen names the cache folder (TFDASH_CACHE_DIR's), whose escapes went to the
    terminal as they were; the closing line's path is shown safe, and this one now is too."""
    from types import SimpleNamespace

    from tfdash.app import main

    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path))
    bad = tmp_path / "\x1b[2J" / "runs"
    app = SimpleNamespace(run=lambda: None, unseen_toasts=lambda: [], final_snapshot=None, return_code=0,
                          save_error=None, interrupted_by=None, keep_error=f"not kept: cannot write {bad} (No space)")
    monkeypatch.setattr(main, "preflight", lambda args, n: SimpleNamespace(device="cpu"))
    monkeypatch.setattr(main, "session_factory", lambda args, n: None)
    monkeypatch.setattr(main, "live_app", lambda *a, **kw: app)
    assert main.run_app(SimpleNamespace(save=None)) == 0
    err = capsys.readouterr().err
    assert "tfdash: the final snapshot was not kept: cannot write " in err and "\x1b" not in err


@pytest.mark.parametrize("device, primed", [("cuda", 1), ("cpu", 0)])
def test_on_cuda_the_main_thread_starts_the_profiler_before_the_screen(monkeypatch, device, primed):
    """The session's worker starts torch.profiler; kineto wants the main thread's start first (see
    kernel_map.profiler_on_this_thread). On the CPU no profiler runs, so nothing is started."""
    from types import SimpleNamespace

    from tfdash.app import main
    from tfdash.profiling import kernel_map

    calls = []
    app = SimpleNamespace(run=lambda: calls.append("app"), unseen_toasts=lambda: [], final_snapshot=None,
                          return_code=0, save_error=None, interrupted_by=None, keep_error=None)
    monkeypatch.setattr(main, "preflight", lambda args, n: SimpleNamespace(device=device))
    monkeypatch.setattr(main, "session_factory", lambda args, n: None)
    monkeypatch.setattr(main, "live_app", lambda *a, **kw: app)
    monkeypatch.setattr(kernel_map, "profiler_on_this_thread", lambda: calls.append("profiler"))
    assert main.run_app(SimpleNamespace(save=None)) == 0
    assert calls == ["profiler"] * primed + ["app"]
