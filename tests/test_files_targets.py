"""Where an output path is not a plain file: `--json /dev/stdout` (or a FIFO, or /dev/null) is
written in place, never replaced by a file (as root, a rename over /dev/stdout or /dev/null
replaces the system's own node), and a symlink keeps pointing at the file it named, now new."""

import json
import os
import stat
import subprocess
import sys
import threading

from tfdash.profiling.files import check_writable_file, write_json_atomic


def reader(path):
    """A thread reading the FIFO `path` whole; join it, then its `got` holds what came through."""
    got = []
    t = threading.Thread(target=lambda: got.append(open(path, encoding="utf-8").read()), daemon=True)
    t.start()
    t.got = got
    return t


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    check_writable_file(fifo, "--json")
    t = reader(fifo)
    write_json_atomic(fifo, {"a": 1})
    t.join(10)
    assert t.got == ['{\n "a": 1\n}\n']
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left beside it


def test_a_symlink_stays_a_link_to_the_new_file(tmp_path):
    (tmp_path / "data").mkdir()
    real, link = tmp_path / "data" / "out.json", tmp_path / "out.json"
    real.write_text("old")
    link.symlink_to(real)
    write_json_atomic(link, {"b": 2})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text()) == {"b": 2}
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["out.json"]


def test_analyze_json_to_a_pipe_prints_the_json_there(tmp_path):
    """`tfdash analyze --json F` where F is a FIFO (as /dev/stdout is a pipe or terminal): the whole
    JSON comes through it, exit 0, and F is still the FIFO."""
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    t = reader(fifo)
    r = subprocess.run([sys.executable, "-m", "tfdash", "analyze", "--model", "qwen3-tiny", "--json", str(fifo)],
                       capture_output=True, text=True, timeout=120)
    t.join(10)
    assert r.returncode == 0, r.stderr
    assert t.got and json.loads(t.got[0])["model"]["name"] == "qwen3-tiny"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
