"""A write whose folder is a file (the dashboard's `--save sub/x.json` after `sub` became a file
during the run, an export into `afile/d`) said "cannot write sub/x.json: File exists", which reads
as if x.json itself were in the way. The line names the file that stands where a folder must be."""

from __future__ import annotations

import pytest

from tfdash.errors import TfdashError
from tfdash.profiling.files import fresh_directory, write_text_atomic


@pytest.mark.parametrize("name", ["sub/x.json", "sub/deeper/x.json"])
def test_a_file_where_the_folder_goes_is_named(tmp_path, name):
    (tmp_path / "sub").write_text("a file, not a folder\n")
    with pytest.raises(TfdashError) as e:
        write_text_atomic(tmp_path / name, "{}")
    assert str(e.value) == f"cannot write {tmp_path / name}: {tmp_path / 'sub'} is a file, not a folder"
    assert (tmp_path / "sub").read_text() == "a file, not a folder\n"


def test_an_exports_folder_under_a_file_is_named(tmp_path):
    (tmp_path / "sub").write_text("x")
    with pytest.raises(TfdashError) as e:
        fresh_directory(tmp_path / "sub" / "export")
    assert str(e.value) == f"cannot write {tmp_path / 'sub' / 'export'}: {tmp_path / 'sub'} is a file, not a folder"
