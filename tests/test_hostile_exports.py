"""Exports never claim what they did not write: --save and export failures are non-zero, a folder
never mixes two runs, files follow the umask, and every TUI exit code is the app's."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest
from conftest import assert_one_line_error, run_tfdash
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.errors import TfdashError
from tfdash.profiling import export
from tfdash.profiling.export import export_all, load_snapshot


@pytest.fixture
def snap():
    return load_snapshot(SNAPSHOT)


def test_export_into_a_folder_of_another_run_is_all_or_nothing(tmp_path, snap, monkeypatch):
    d = tmp_path / "out"
    export_all(snap, d)
    before = {f.name: f.read_bytes() for f in d.iterdir()}
    other = dataclasses.replace(snap, new_tokens=snap.new_tokens - 1)

    def broken(*a, **k):
        raise TfdashError("cannot write kernels.csv: disk full")

    monkeypatch.setattr(export, "write_kernel_csv", broken)  # the last of the three fails
    with pytest.raises(TfdashError):
        export_all(other, d)
    assert {f.name: f.read_bytes() for f in d.iterdir()} == before  # the first run, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary folder left behind


def test_a_new_export_folder_holds_one_run(tmp_path, snap):
    d = tmp_path / "new" / "out"
    paths = export_all(snap, d)
    assert sorted(p.name for p in d.iterdir()) == ["kernels.csv", "snapshot.json", "trace.json"]
    assert load_snapshot(paths["snapshot"]) == snap


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_files_follow_the_umask(tmp_path, snap, mask):
    old = os.umask(mask)
    try:
        paths = export_all(snap, tmp_path / "out")
        export.write_snapshot(snap, tmp_path / "single.json")
    finally:
        os.umask(old)
    for p in [*paths.values(), tmp_path / "single.json"]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, (p, oct(p.stat().st_mode))
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o777 & ~mask


def test_headless_export_to_an_unwritable_place_is_one_line_and_non_zero(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    r = run_tfdash("--headless", "--profile", "--export", str(blocker / "out"), "--model", "qwen3-tiny",
                   "--device", "cpu", "--max-new-tokens", "8")
    assert r.rc == 2
    assert "wrote " not in r.stdout
    assert_one_line_error(r.stderr, "--export", "not a writable directory")  # refused before the run


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("flag", ["--export", "--save"])
def test_a_place_the_permission_bits_allow_but_no_file_can_be_made_is_refused_before_the_run(flag):
    # /proc's bits say writable to root (CI and the GPU host run as root), yet nothing can be made in it
    from tfdash.profiling.files import check_writable_dir, check_writable_file

    check = check_writable_dir if flag == "--export" else check_writable_file
    with pytest.raises(TfdashError, match=f"{flag} /proc/tfdash-x: cannot write there"):
        check("/proc/tfdash-x", flag)
    r = run_tfdash("--headless", flag, "/proc/tfdash-x", "--model", "qwen3-tiny", "--device", "cpu",
                   "--max-new-tokens", "8")
    assert r.rc == 2 and r.stdout == ""  # no generation printed: refused before the run
    assert_one_line_error(r.stderr, flag, "not a writable directory")


def test_an_export_that_fails_after_the_run_keeps_the_report_and_names_the_folder(tmp_path, capsys, monkeypatch):
    """The disk fills during the run: the top kernels are still printed, the one error line names
    --export's folder (not the hidden one written first and removed), and the exit is non-zero."""
    import errno

    from tfdash.cli import main
    from tfdash.profiling import files

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    out_dir = tmp_path / "out"
    rc = main(["--headless", "--profile", "--export", str(out_dir), "--model", "qwen3-tiny", "--device", "cpu",
               "--threads", "1", "--max-new-tokens", "8"])
    out, err = capsys.readouterr()
    assert rc == 2 and "top 10 kernels by measured time" in out and "wrote " not in out
    assert "Traceback" not in err
    assert [ln for ln in err.splitlines() if "error" in ln] == [
        f"tfdash: error: cannot write {out_dir}/snapshot.json: No space left on device"]
    assert list(tmp_path.iterdir()) == []


def test_save_to_an_unwritable_path_is_refused_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_tfdash("--model", "qwen3-tiny", "--device", "cpu", "--save", str(blocker / "final.json"),
                   env={"TFDASH_FORCE_TUI": "1", "TFDASH_CONFIG_DIR": str(tmp_path / "cfg")})
    assert r.rc == 2
    assert_one_line_error(r.stderr, "--save", "not a writable directory")


@sync
async def test_a_save_that_fails_at_quit_is_an_error_not_a_claim(isolated_config, tmp_path, capsys):
    from tfdash.app.main import exit_status, snapshot_app

    target = tmp_path / "later" / "final.json"
    app = snapshot_app(SNAPSHOT, save_path=target, tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        (tmp_path / "later").write_text("became a file while the dashboard ran")
        await pilot.press("q")
        await pilot.pause()
    assert not target.exists()
    assert exit_status(app) == 1
    err = capsys.readouterr().err
    assert "the final snapshot was not saved" in err and "saved to" not in err.replace("not saved", "")


@sync
async def test_a_crash_in_the_app_is_a_non_zero_exit(isolated_config, capsys):
    from tfdash.app.main import exit_status, snapshot_app

    app = snapshot_app(SNAPSHOT, tilelang_source=lambda fam: "#\n")

    def boom():
        raise RuntimeError("a bug in a widget")

    with pytest.raises(RuntimeError, match="a bug in a widget"):  # run_test re-raises it
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            app.call_later(boom)
            await pilot.pause()
    assert app.return_code == 1
    assert exit_status(app) == 1
    assert "stopped with an error" in capsys.readouterr().err


def test_open_of_a_bad_snapshot_is_one_line(tmp_path):
    p = tmp_path / "s.json"
    import json

    raw = json.loads(SNAPSHOT.read_text())
    raw["unavailable"] = {"nvml": 3}
    p.write_text(json.dumps(raw))
    r = run_tfdash("open", str(p))
    assert r.rc == 2
    assert_one_line_error(r.stderr, str(p))



def test_open_of_an_export_folder_names_the_snapshot_in_it(tmp_path, snap, capsys):
    """`tfdash --headless --export out` then `tfdash open out`: it said "no such snapshot file"."""
    from tfdash.cli import main

    export_all(snap, tmp_path / "out")
    assert main(["open", str(tmp_path / "out")]) == 2
    assert_one_line_error(capsys.readouterr().err, f"{tmp_path / 'out'}: is a directory",
                          f"{tmp_path / 'out' / 'snapshot.json'} is the snapshot in it")
    assert main(["open", str(SNAPSHOT), "--baseline", str(tmp_path)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"--baseline {tmp_path}: is a directory, not a snapshot file")


@pytest.mark.parametrize("kind,key", [("snapshot", "e"), ("csv", "c"), ("trace", "t"), ("svg", "ctrl+s")])
@sync
async def test_an_export_never_replaces_a_file_made_under_its_name_after_the_name_was_found_free(
        isolated_config, tmp_path, monkeypatch, kind, key):
    """`e` looked for a free name, then renamed its file onto it: a file made there in between (another
    dashboard exporting in the same second) was replaced. The name is claimed before the write."""
    from test_app_static import SIZE, make_app

    from tfdash.app import exports

    out = tmp_path / "out"
    out.mkdir()
    other = out / f"theirs{exports.KINDS[kind]}"
    real, calls = exports.unique_path, []

    def raced(directory, stem, suffix):  # the name is found free, then someone else writes it
        calls.append(stem)
        if len(calls) == 1:
            other.write_text("another dashboard's export")
            return other
        return real(directory, stem, suffix)

    monkeypatch.setattr(exports, "unique_path", raced)
    app = make_app(export_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
    assert other.read_text() == "another dashboard's export"  # theirs, whole
    assert app.last_export not in (None, other) and app.last_export.stat().st_size > 0


def test_an_export_folder_made_while_the_export_was_written_keeps_what_was_put_in_it(tmp_path, snap, monkeypatch):
    """export_all looked for its folder, then renamed its finished one there: a folder made in between
    failed the rename ("Directory not empty") and the run's export was lost, or (made empty) was replaced,
    its own mode with it. The folder is claimed with mkdir first; one there already takes the files."""
    from tfdash.profiling import files

    d = tmp_path / "out"
    real = os.rename

    def raced(src, dst):  # someone makes the folder, and a file in it, just before the rename
        if Path(dst) == d and not (d / "notes.txt").exists():
            d.mkdir(exist_ok=True)
            (d / "notes.txt").write_text("mine")
        return real(src, dst)

    monkeypatch.setattr(files.os, "rename", raced)
    paths = export_all(snap, d)
    assert (d / "notes.txt").read_text() == "mine"
    assert load_snapshot(paths["snapshot"]) == snap
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left behind


@pytest.mark.parametrize("command", [["open"], ["diff", str(SNAPSHOT)]], ids=["open", "diff"])
@pytest.mark.parametrize("name", ["trace.json", "kernels.csv"])
def test_an_export_file_given_for_its_snapshot_names_the_snapshot_beside_it(tmp_path, snap, capsys, command, name):
    """`tfdash open out/trace.json` said "not a tfdash snapshot (no 'schema' field ...)" (the CSV: "not
    valid JSON"), never that the snapshot the export wrote with it is out/snapshot.json."""
    from tfdash.cli import main

    paths = export_all(snap, tmp_path / "out")
    given = tmp_path / "out" / name
    assert main([*command, str(given)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"{given}: is an export's ",
                          f"not a tfdash snapshot; {paths['snapshot']} is the snapshot beside it")


@pytest.mark.parametrize("kind", ["trace", "csv"])
def test_a_dashboard_export_given_for_its_snapshot_names_the_snapshot_of_the_same_name(tmp_path, snap, capsys, kind):
    """The dashboard's e, t and c write STEM.json, STEM.trace.json and STEM.csv: the trace or CSV given
    to `open` names STEM.json where it is there, and only says what the file is where it is not."""
    from tfdash.app import exports
    from tfdash.cli import main

    given = exports.write(kind, snap, tmp_path / f"tfdash-run{exports.KINDS[kind]}")
    assert main(["open", str(given)]) == 2
    line = assert_one_line_error(capsys.readouterr().err, f"{given}: is an export's ", "not a tfdash snapshot")
    assert "beside it" not in line
    exports.write("snapshot", snap, tmp_path / "tfdash-run.json")
    assert main(["open", str(given)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"; {tmp_path / 'tfdash-run.json'} is the snapshot beside it")


def test_a_dangling_link_under_an_export_name_is_a_taken_name(tmp_path):
    """A broken symlink reads as absent to Path.exists, yet O_EXCL refuses its name: reserve() asked
    for that name again and again, for ever (and a write through the link went where it points)."""
    from tfdash.app import exports

    (tmp_path / "x.json").symlink_to(tmp_path / "elsewhere" / "gone.json")
    assert exports.unique_path(tmp_path, "x", ".json") == tmp_path / "x-2.json"
    assert exports.reserve(tmp_path, "x", ".json") == tmp_path / "x-2.json"
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("kind", ["trace", "csv"])
def test_the_dashboards_export_names_are_the_ones_open_reads_back(tmp_path, kind):
    """app.exports names its files with export_files' suffixes: a STEM's trace or CSV leads back to
    that STEM's snapshot, whatever the suffixes become."""
    from tfdash.app import exports
    from tfdash.profiling.export_files import snapshot_beside

    snap = tmp_path / f"tfdash-run{exports.KINDS['snapshot']}"
    snap.write_text("{}")
    assert snapshot_beside(tmp_path / f"tfdash-run{exports.KINDS[kind]}") == snap


def test_a_folder_made_under_an_export_name_during_the_run_leaves_the_last_export_whole(tmp_path, snap):
    """The folder made after the check: the move put the new snapshot and CSV over the last
    export's and then failed on trace.json, a folder mixing two runs. Every name is checked first."""
    d = tmp_path / "out"
    export_all(snap, d)
    before = {f.name: f.read_bytes() for f in d.iterdir()}
    (d / "trace.json").unlink()
    (d / "trace.json").mkdir()
    other = dataclasses.replace(snap, new_tokens=snap.new_tokens - 1)
    with pytest.raises(TfdashError, match=f"cannot write {d / 'trace.json'}: is a directory"):
        export_all(other, d)
    assert {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()} == {
        k: v for k, v in before.items() if k != "trace.json"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left behind


def test_an_export_name_taken_by_a_folder_is_refused_before_the_run(tmp_path):
    """`--export D` where D/trace.json is a folder: the run went ahead, then the export moved
    snapshot.json and kernels.csv in, failed on the folder and said "cannot write D: Is a
    directory": a half export, under a line naming the wrong path. Now one line before the run."""
    d = tmp_path / "out"
    (d / "trace.json").mkdir(parents=True)
    r = run_tfdash("--headless", "--device", "cpu", "--max-new-tokens", "2", "--export", str(d), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--export {d}: {d / 'trace.json'} is a folder")
    assert [p.name for p in d.iterdir()] == ["trace.json"]


def test_a_failed_export_still_writes_the_save(tmp_path, capsys, monkeypatch):
    """The export failing after the run skipped --save as well: the run was in neither file. The
    save is written, said, and the export's error is the exit's."""
    from tfdash.cli import main
    from tfdash.profiling import export as export_mod

    def broken(*a, **k):
        raise TfdashError("cannot write out: disk full")

    monkeypatch.setattr(export_mod, "export_all", broken)
    save = tmp_path / "run.json"
    rc = main(["--headless", "--export", str(tmp_path / "out"), "--save", str(save), "--model", "qwen3-tiny",
               "--device", "cpu", "--threads", "1", "--max-new-tokens", "4"])
    out, err = capsys.readouterr()
    assert rc == 2 and f"wrote {save}" in out
    assert [ln for ln in err.splitlines() if "error" in ln] == ["tfdash: error: cannot write out: disk full"]
    assert load_snapshot(save).new_tokens == 4
