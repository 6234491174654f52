"""A report written to a name ending in .gz (analyze's --json and its sweep, diff's --json and
--markdown, bench's --json) is gzip-compressed, as `--save run.json.gz` and `counters --snapshot`
write a snapshot: the file is what its name says, and `zcat` reads it back to the report a plain
name gets."""

from __future__ import annotations

import gzip
import json

import pytest
from fixtures.appkit import SNAPSHOT

from tfdash.cli import main


def _run(capsys, *argv) -> int:
    capsys.readouterr()
    rc = main(list(argv))
    capsys.readouterr()
    return rc


def _gunzipped(path) -> bytes:
    data = path.read_bytes()
    assert data[:2] == b"\x1f\x8b", f"{path.name} was written plain"
    return gzip.decompress(data)


@pytest.mark.parametrize("when", [["--dim", "ctx_len=64"], ["--sweep", "ctx_len=0:128:64"]])
def test_analyze_json_to_a_gz_name_is_gzip(tmp_path, capsys, when):
    plain, packed = tmp_path / "a.json", tmp_path / "a.json.gz"
    for out in (plain, packed):
        assert _run(capsys, "analyze", "--model", "qwen3-tiny", *when, "--json", str(out)) == 0
    assert json.loads(_gunzipped(packed)) == json.loads(plain.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "a.json.gz"]  # no temporary left


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_diff_reports_to_a_gz_name_are_gzip(tmp_path, capsys, flag):
    a = tmp_path / "a.json"
    a.write_bytes(SNAPSHOT.read_bytes())
    plain, packed = tmp_path / "d.out", tmp_path / "d.out.gz"
    for out in (plain, packed):
        assert _run(capsys, "diff", str(a), str(a), flag, str(out)) == 0
    assert _gunzipped(packed) == plain.read_bytes()


def test_bench_json_to_a_gz_name_is_gzip(tmp_path, capsys):
    from tfdash.profiling.bench_table import write_report

    out = tmp_path / "bench.json.gz"
    write_report(["a table"], str(out), {"rounds": [1, 2]})
    assert json.loads(_gunzipped(out)) == {"rounds": [1, 2]}
