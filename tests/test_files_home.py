"""A leading `~` in an output path is the user's home: `--json=~/x` reaches tfdash unexpanded by the
shell, and the checks before the work already read it so; the writers must land there too, never
in a folder named `~` under the working directory."""

from pathlib import Path

from tfdash.profiling.files import fresh_directory, move_into, write_json_atomic


def test_a_tilde_path_is_written_in_the_home_folder(tmp_path, monkeypatch):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir(), cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    wrote = write_json_atomic("~/out/x.json", {"a": 1})
    assert wrote == home / "out" / "x.json" and wrote.read_text() == '{\n "a": 1\n}\n'
    tmp = fresh_directory("~/export")
    (tmp / "f.txt").write_text("y")
    move_into(tmp, "~/export")
    assert (home / "export" / "f.txt").read_text() == "y"
    assert not (cwd / "~").exists() and sorted(p.name for p in home.iterdir()) == ["export", "out"]
    assert Path(tmp).parent == home
