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


@pytest.mark.parametrize("var", ["TFDASH_CACHE_DIR", "TFDASH_CONFIG_DIR"])
def test_a_home_of_no_user_is_one_line_naming_the_variable(tmp_path, var):
    """`TFDASH_CACHE_DIR="~nobody-here/x"`: Path.expanduser raises RuntimeError for a user with no
    home, which reached the user as a traceback."""
    from conftest import assert_one_line_error, run_tfdash
    from fixtures.appkit import SNAPSHOT

    env = {"TFDASH_FORCE_TUI": "1", "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"),
           "TFDASH_CACHE_DIR": str(tmp_path / "cache"), var: "~user-that-does-not-exist/x"}
    r = run_tfdash("open", str(SNAPSHOT), timeout=60, env=env)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{var} ~user-that-does-not-exist/x: there is no user "
                          "'user-that-does-not-exist'")


def test_a_path_argument_in_the_home_of_no_user_is_the_parsers_line():
    from conftest import assert_one_line_error, run_tfdash

    r = run_tfdash("--headless", "--max-new-tokens", "2", "--save", "~user-that-does-not-exist/run.json")
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "argument --save: ~user-that-does-not-exist/run.json: there is no user")


@pytest.mark.parametrize("var", ["HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"])
def test_the_hub_cache_reads_a_home_of_no_user_as_huggingface_hub_does(monkeypatch, var):
    """os.path.expanduser, as huggingface_hub reads these, leaves `~nobody` as written; Path.expanduser
    raised (a traceback after a --ckpt that looked like a model id)."""
    from tfdash.engine.config import hub_cache

    for v in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv(var, "~user-that-does-not-exist/h")
    assert str(hub_cache()).startswith("~user-that-does-not-exist/h")
