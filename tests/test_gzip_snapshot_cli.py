"""A gzip-compressed snapshot (`.json.gz`, as benchmarks/ keeps its large ones) is a run's snapshot
to every command: no report is written over it, and `analyze --target` reads the target it records
as it does a plain one's."""

from __future__ import annotations

import gzip

import pytest
from conftest import assert_one_line_error, run_tfdash
from fixtures.appkit import SNAPSHOT


@pytest.mark.parametrize("argv", [["analyze", "--model", "qwen3-tiny", "--json", "{old}"],
                                  ["diff", "{a}", "{a}", "--markdown", "{old}"]])
def test_a_report_never_replaces_a_compressed_snapshot(tmp_path, argv):
    """`tfdash analyze --json old.json.gz` wrote the analysis over that run's compressed snapshot:
    the check read the file's head as text, where a snapshot names its schema, and gzip's bytes
    named none."""
    old, a = tmp_path / "old.json.gz", tmp_path / "a.json"
    old.write_bytes(gzip.compress(SNAPSHOT.read_bytes()))
    a.write_bytes(SNAPSHOT.read_bytes())
    before = old.read_bytes()
    r = run_tfdash(*(x.format(old=old, a=a) for x in argv), timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{old}: is a run's snapshot; a report never replaces one")
    assert old.read_bytes() == before


def test_analyze_takes_its_target_from_a_compressed_snapshot(tmp_path):
    """`analyze --target run.json.gz` said "cannot read JSON ('utf-8' codec can't decode byte 0x8b
    ...)" of a snapshot that `open` and `diff` read: its target is the one the plain file gives."""
    plain, packed = tmp_path / "run.json", tmp_path / "run.json.gz"
    plain.write_bytes(SNAPSHOT.read_bytes())
    packed.write_bytes(gzip.compress(SNAPSHOT.read_bytes()))
    runs = [run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(f), timeout=120) for f in (plain, packed)]
    assert [r.rc for r in runs] == [0, 0], runs[1].stderr
    assert runs[1].stdout.splitlines()[0] == runs[0].stdout.splitlines()[0]  # the same target line
    broken = tmp_path / "cut.json.gz"
    broken.write_bytes(packed.read_bytes()[:200])
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(broken), timeout=120)
    assert r.rc == 2
    assert_one_line_error(r.stderr, f"{broken}: gzip-compressed, but cannot be read")


def test_saving_over_a_compressed_snapshot_names_the_run_it_replaces(tmp_path):
    """`--save run.json.gz` over an earlier run's compressed snapshot said only "wrote run.json.gz",
    where the same write over run.json says "(replacing the snapshot of the run recorded ...)"."""
    from tfdash.profiling.export import load_snapshot
    from tfdash.profiling.export_files import recorded_run

    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(SNAPSHOT.read_bytes()))
    when = load_snapshot(SNAPSHOT).meta.started_at
    assert recorded_run(packed) == f"the run recorded {when}"
    r = run_tfdash("--headless", "--max-new-tokens", "2", "--save", str(packed), timeout=120)
    assert r.rc == 0, r.stderr
    assert f"wrote {packed} (replacing the snapshot of the run recorded {when})" in r.stdout
    (tmp_path / "cut.json.gz").write_bytes(packed.read_bytes()[:20])  # not whole gzip: no run named, no traceback
    assert recorded_run(tmp_path / "cut.json.gz") is None


@pytest.mark.parametrize("argv", [["diff", "{d}", "{d}"], ["open", "{d}"],
                                  ["analyze", "--model", "qwen3-tiny", "--target", "{d}"]])
def test_an_export_folder_kept_compressed_names_the_snapshot_it_holds(tmp_path, argv, capsys):
    """An export folder whose snapshot was gzipped (snapshot.json.gz, no snapshot.json) got no hint
    from diff, open or analyze --target: each looked for the plain name alone."""
    from tfdash.cli import main

    d = tmp_path / "out"
    d.mkdir()
    (d / "snapshot.json.gz").write_bytes(gzip.compress(SNAPSHOT.read_bytes()))
    (d / "trace.json").write_text('{"traceEvents": []}')
    assert main([a.format(d=d) for a in argv]) == 2
    assert_one_line_error(capsys.readouterr().err, f"{d}: is a directory", f"; {d / 'snapshot.json.gz'} is the snapshot in it")
    assert main(["open", str(d / "trace.json")]) == 2  # the export's trace: the snapshot beside it is the .gz one
    assert_one_line_error(capsys.readouterr().err, f"{d / 'snapshot.json.gz'} is the snapshot beside it")
