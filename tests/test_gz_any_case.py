"""A .gz name in any case is a gzip name: `--save RUN.JSON.GZ` was written plain (the test was
`endswith(".gz")`), as was a report to `OUT.JSON.GZ`, and the baseline picker did not list a
`run.json.GZ` snapshot. Each now reads the suffix as `.gz` does."""

from __future__ import annotations

import gzip
import json

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot

from tfdash.cli import main


def _gzip(path) -> bytes:
    data = path.read_bytes()
    assert data[:2] == b"\x1f\x8b", f"{path.name} was written plain"
    return gzip.decompress(data)


@pytest.mark.usefixtures("one_thread")
def test_save_to_an_upper_case_gz_name_is_gzip(tmp_path, capsys):
    from tfdash.profiling.export import load_snapshot

    out = tmp_path / "RUN.JSON.GZ"
    assert main(["--headless", "--max-new-tokens", "2", "--save", str(out)]) == 0, capsys.readouterr().err
    assert json.loads(_gzip(out))["schema"] == "tfdash.snapshot"
    assert load_snapshot(out).new_tokens == 2


@pytest.mark.parametrize("suffix", [".GZ", ".Gz", ".gZ"])
def test_write_snapshot_and_reports_take_the_suffix_in_any_case(tmp_path, capsys, suffix):
    from tfdash.profiling.export import write_snapshot

    snap = tmp_path / f"snap.json{suffix}"
    write_snapshot(build_snapshot(), snap)
    assert json.loads(_gzip(snap))["schema"] == "tfdash.snapshot"
    d = tmp_path / f"d.json{suffix}"
    assert main(["diff", str(SNAPSHOT), str(SNAPSHOT), "--json", str(d)]) == 0
    assert json.loads(_gzip(d))["schema"].startswith("tfdash.diff")
    s = tmp_path / f"s.json{suffix}"
    assert main(["analyze", "--model", "qwen3-tiny", "--sweep", "ctx_len=0:64:64", "--json", str(s)]) == 0
    assert len(json.loads(_gzip(s))["reports"]) == 2


def test_the_picker_lists_a_gz_snapshot_in_any_case(tmp_path):
    from tfdash.app.compare import snapshot_files
    from tfdash.profiling.export import export_all, snapshot_label

    packed = gzip.compress(SNAPSHOT.read_bytes())
    (tmp_path / "run.json.GZ").write_bytes(packed)
    folder = export_all(build_snapshot(), tmp_path / "h2")
    (tmp_path / "h2" / "snapshot.json.Gz").write_bytes(gzip.compress(folder["snapshot"].read_bytes()))
    folder["snapshot"].unlink()
    (tmp_path / "run.trace.json.GZ").write_bytes(gzip.compress(folder["trace"].read_bytes()))  # a trace: not offered
    listed = sorted(str(p.relative_to(tmp_path)) for p in snapshot_files(tmp_path))
    assert listed == ["h2/snapshot.json.Gz", "run.json.GZ"]
    assert snapshot_label(tmp_path / "h2" / "snapshot.json.Gz") == "h2/snapshot.json.Gz"  # an export's: its folder
