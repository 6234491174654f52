"""A folder that cannot be read or searched (chmod 000) is one line, never a traceback: a checkpoint
folder is "cannot read", a file or folder to be written inside one is "cannot write there", as a
read-only (555) folder is. Root's CAP_DAC_OVERRIDE passes the permission bits (CI and the GPU
host run as root), so the fixture also refuses, for anything inside the folder, the calls the
kernel refuses everyone else there: the tests read the same as root and as a plain user."""

from __future__ import annotations

import errno
import os

import pytest
from conftest import assert_one_line_error
from fixtures.appkit import SNAPSHOT


@pytest.fixture
def shut(tmp_path, monkeypatch):
    """A chmod-000 folder: stat, lstat and mkdir of any path inside it raise PermissionError."""
    d = tmp_path / "shut"
    d.mkdir()
    inside = str(d) + os.sep

    def refuse(real):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)) and os.path.abspath(os.fsdecode(path)).startswith(inside):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call

    for name in ("stat", "lstat", "mkdir"):
        monkeypatch.setattr(os, name, refuse(getattr(os, name)))
    d.chmod(0)
    yield d
    d.chmod(0o755)


TINY = ["--model", "qwen3-tiny", "--device", "cpu"]
READ = "{d}: cannot read (Permission denied)"


@pytest.mark.parametrize("argv, expected", [
    (["--headless", "--ckpt", "{d}", "--device", "cpu"], READ),
    (["analyze", "--ckpt", "{d}"], READ),
    (["analyze", "--ckpt", "{d}/ckpt"], "{d}/ckpt: cannot read (Permission denied)"),
    (["analyze", "--target", "{d}/s.json"], "--target {d}/s.json: cannot read (Permission denied)"),
    (["--headless", *TINY, "--save", "{d}/x.json"], "--save {d}/x.json: cannot write there ({d} is not"),
    (["--headless", *TINY, "--export", "{d}/sub"], "--export {d}/sub: cannot write there ({d} is not"),
    (["analyze", "--model", "qwen3-tiny", "--json", "{d}/a.json"], "--json {d}/a.json: cannot write there"),
    (["diff", str(SNAPSHOT), str(SNAPSHOT), "--markdown", "{d}/m.md"], "--markdown {d}/m.md: cannot write there"),
    (["bench", "--model", "qwen3-tiny", "--json", "{d}/b.json"], "--json {d}/b.json: cannot write there"),
    (["counters", "--all", "--json", "{d}/c.json"], "--json {d}/c.json: cannot write there"),
], ids=["run-ckpt", "analyze-ckpt", "ckpt-inside", "target", "save", "export", "analyze-json", "diff-markdown",
        "bench-json", "counters-json"])
def test_a_folder_that_cannot_be_searched_is_one_line(shut, capsys, argv, expected):
    from tfdash.cli import main

    rc = main([a.format(d=shut) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert_one_line_error(err, expected.format(d=shut))


def test_a_dashboard_config_in_a_folder_that_cannot_be_searched_is_the_defaults_and_a_warning(shut):
    """TFDASH_CONFIG_DIR inside a chmod-000 folder: Path.exists raised PermissionError as the
    dashboard started. The defaults run with one warning that names the file, and the file (whose
    keymap may be in there) is never rewritten."""
    from tfdash.app.config import load_config, save_config
    from tfdash.errors import TfdashError

    path = shut / "tfdash" / "config.json"
    cfg = load_config(path)
    assert cfg.theme is None and cfg.path == path and not cfg.parsed
    assert cfg.warning == f"{path}: ignored, cannot read (Permission denied)"
    with pytest.raises(TfdashError, match="was not read .* so it is not rewritten"):
        save_config(cfg)
