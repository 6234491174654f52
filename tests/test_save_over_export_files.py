"""`--save` onto an export's Chrome trace or kernel CSV (`--save e1/trace.json`, a tab completion
one name off) replaced the run's trace with a snapshot, unsaid, though `--json` refuses the same
file. Refused before the run, headless and dashboard alike, whatever the file is named (the
dashboard's `t` and `c` write STEM.trace.json and STEM.csv); the files are as they were."""

from __future__ import annotations

import shutil

import pytest
from conftest import assert_one_line_error

TINY = ["--device", "cpu", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]


def _args(save):
    return type("Args", (), dict(ckpt=None, model="qwen3-tiny", device="cpu", dtype=None, backend=None,
                                 prompt="hello", save=save))()


def test_save_over_an_exports_trace_or_csv_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    from tfdash.app.main import preflight
    from tfdash.cli import main
    from tfdash.errors import TfdashError

    monkeypatch.chdir(tmp_path)
    assert main(["--headless", *TINY, "--export", "e1"]) == 0
    shutil.copy(tmp_path / "e1" / "trace.json", tmp_path / "run-1.trace.json")  # as the dashboard's t names one
    shutil.copy(tmp_path / "e1" / "kernels.csv", tmp_path / "run-1.csv")
    capsys.readouterr()
    files = [tmp_path / "e1" / "trace.json", tmp_path / "e1" / "kernels.csv",
             tmp_path / "run-1.trace.json", tmp_path / "run-1.csv"]
    before = {p: p.read_bytes() for p in files}
    for path, kind in zip(("e1/trace.json", "e1/kernels.csv", "run-1.trace.json", "run-1.csv"),
                          ("Chrome trace", "kernel table (CSV)") * 2):
        said = f"--save {path}: is a run's {kind}; a snapshot never replaces one: give --save another name"
        rc = main(["--headless", *TINY, "--save", path])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "", (path, out, err)
        assert_one_line_error(err, said)
        with pytest.raises(TfdashError) as e:  # the dashboard's check before its screen
            preflight(_args(path), 2)
        assert str(e.value) == said
    assert {p: p.read_bytes() for p in files} == before


def test_save_over_another_file_is_still_written(tmp_path, capsys, monkeypatch):
    """Only a run's trace or CSV is refused: a snapshot saved before, or any other file, is replaced."""
    from tfdash.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.json").write_text('{"traceEvents" is not how this opens": 1}\n')
    assert main(["--headless", *TINY, "--save", "notes.json"]) == 0
    assert main(["--headless", *TINY, "--save", "notes.json"]) == 0  # over its own earlier snapshot
    assert "wrote notes.json" in capsys.readouterr().out
