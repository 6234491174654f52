"""A file or folder name longer than the file system takes is refused before the run, as every
other unwritable --save, --export or --json is: it was found only at the end, the run's numbers lost."""

from __future__ import annotations

import pytest
from conftest import assert_one_line_error, run_tfdash

LONG = "r" * 250  # under the usual 255-byte limit, but not with the temporary name written first


@pytest.mark.parametrize(("flag", "name"), [("--save", LONG + ".json"), ("--save", "x" * 300 + "/run.json"),
                                            ("--export", LONG)])
def test_a_name_too_long_is_refused_before_the_run(tmp_path, flag, name):
    """`--save` with a 255-byte name ran the generation, then said "File name too long"."""
    path = tmp_path / name
    r = run_tfdash("--headless", "--max-new-tokens", "2", "--profile", flag, str(path), timeout=120)
    assert r.rc == 2 and r.stdout == "", r.stdout  # nothing ran
    assert_one_line_error(r.stderr, f"{flag} {path}: ", "name is too long")


def test_a_reports_name_too_long_is_refused_before_the_work(tmp_path):
    path = tmp_path / (LONG + ".json")
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--json", str(path), timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--json {path}: ", "name is too long")


def test_a_folder_the_files_go_into_needs_no_room_for_a_temporary_name(tmp_path):
    """The dashboard's --export-dir is written into, never replaced through a temporary folder beside
    it: an existing folder of 250 bytes, where exports were written, was refused as "too long"."""
    from fixtures.appkit import SNAPSHOT

    from tfdash.errors import TfdashError
    from tfdash.profiling.files import check_writable_dir

    folder = tmp_path / LONG
    folder.mkdir()
    (folder / "tfdash-qwen3-1.7b.json").write_text("{}")  # files are written inside it
    check_writable_dir(folder, "--export-dir")
    r = run_tfdash("open", str(SNAPSHOT), "--export-dir", str(folder), timeout=120)
    assert r.rc == 0 and "name is too long" not in r.stderr, r.stderr
    with pytest.raises(TfdashError, match="name is too long"):  # --export's own folder is written beside it first
        check_writable_dir(folder, "--export", temp_beside=True)
