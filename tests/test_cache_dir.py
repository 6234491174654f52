"""One cache directory: the probe's results and the compiled kernels read the same variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tfdash.cache import cache_dir, tilelang_cache_dir
from tfdash.engine import compile as compile_mod
from tfdash.profiling import probe


@pytest.fixture(autouse=True)
def keep_tilelang_variable():
    """tilelang_cache_dir sets $TILELANG_CACHE_DIR for tilelang: put it back as it was."""
    saved = os.environ.get("TILELANG_CACHE_DIR")
    yield
    os.environ.pop("TILELANG_CACHE_DIR", None)
    if saved is not None:
        os.environ["TILELANG_CACHE_DIR"] = saved


def test_one_cache_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("TILELANG_CACHE_DIR", raising=False)
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == probe.cache_dir() == tmp_path / "c"
    assert probe.cache_path() == tmp_path / "c" / "bandwidth.json"
    assert compile_mod.cache_dir() == tilelang_cache_dir() == tmp_path / "c" / "tilelang"
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "tl"))
    assert compile_mod.cache_dir() == tmp_path / "tl"


def test_the_default_follows_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("TFDASH_CACHE_DIR", raising=False)
    monkeypatch.delenv("TILELANG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "tfdash" and tilelang_cache_dir() == tmp_path / "tfdash" / "tilelang"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert cache_dir() == Path.home() / ".cache" / "tfdash"


def test_a_cache_folder_named_from_the_home_is_the_one_written_and_checked(tmp_path):
    """`TFDASH_CACHE_DIR="~/f"` (quoted, so the shell left the ~) with ~/f a file: the check before the
    probe's write looked for a folder `~` in the working directory, found none, and the write then
    failed with "File exists"; the plain path said "is a file, not a folder"."""
    from conftest import run_tfdash

    (tmp_path / "f").write_text("not a folder")
    r = run_tfdash("--headless", "--profile", "--threads", "1", "--max-new-tokens", "2",
                   env={"HOME": str(tmp_path), "TFDASH_CACHE_DIR": "~/f"})
    assert r.rc == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "bandwidth" in ln and "probing" not in ln]
    assert said == [f"TFDASH_CACHE_DIR {tmp_path / 'f'} is a file, not a folder: the bandwidth probe is not cached"]


@pytest.mark.parametrize("value", ["rel/cache", ".", "./c", "~user-that-does-not-exist/c"])
def test_a_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch, value):
    """The XDG spec: a relative path in $XDG_CACHE_HOME is invalid and ignored. It was taken from the
    working directory, so each folder a command ran in grew its own cache (and kept runs)."""
    monkeypatch.delenv("TFDASH_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert cache_dir() == Path.home() / ".cache" / "tfdash"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "~/xdg")  # the home's, as a quoted `~` in an env file means it
    assert cache_dir() == tmp_path / "xdg" / "tfdash"
