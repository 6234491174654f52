"""Where an output path is not a plain file: `--json /dev/stdout` (or a FIFO, or /dev/null) is
written in place, never replaced by a file (as root, a rename over /dev/stdout or /dev/null
replaces the system's own node), and a symlink keeps pointing at the file it named, now new."""

import json
import os
import stat
import subprocess
import sys
import threading

from tfdash.errors import TfdashError
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


def test_json_to_dev_stdout_redirected_to_a_file_is_written_into_the_shells_file(tmp_path):
    """`tfdash analyze --json /dev/stdout > out.txt`: /dev/stdout leads (/proc/self/fd/1) to out.txt,
    a regular file; the JSON goes through the descriptor the shell opened, so out.txt is that same
    file (not a new one renamed over it) and holds the JSON alone, the table having gone to stderr."""
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        inode = os.fstat(f.fileno()).st_ino
        r = subprocess.run([sys.executable, "-m", "tfdash", "analyze", "--model", "qwen3-tiny",
                            "--json", "/dev/stdout"], stdout=f, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_ino == inode
    assert json.loads(out.read_text())["model"]["name"] == "qwen3-tiny"
    assert "# analysis target=" in r.stderr


def test_json_to_dev_stdout_appends_to_a_file_opened_for_appending(tmp_path):
    """`>> log` keeps the log's earlier lines: the write goes through the shell's descriptor, not a
    new file over the log."""
    log = tmp_path / "log.txt"
    log.write_text("earlier\n")
    code = ("import sys; from tfdash.profiling.files import check_writable_file, write_json_atomic\n"
            "print('before', flush=True); check_writable_file('/dev/stdout', '--json')\n"
            "write_json_atomic('/dev/stdout', {'a': 1}); print('after')")
    with open(log, "a") as f:
        r = subprocess.run([sys.executable, "-c", code], stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert log.read_text() == 'earlier\nbefore\n{\n "a": 1\n}\nafter\n'


def test_a_closed_stdout_is_refused_before_the_work(tmp_path):
    """`--json /dev/stdout` with stdout closed (`>&-`) is a one-line error before the run, not a
    failure at its end."""
    code = ("import os; from tfdash.errors import TfdashError; from tfdash.profiling.files import check_writable_file\n"
            "os.close(1)\n"
            "try:\n    check_writable_file('/dev/stdout', '--json')\nexcept TfdashError as e:\n"
            "    os.write(2, str(e).encode())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "--json /dev/stdout: cannot write there" in r.stderr, r.stderr


def test_a_symlink_whose_file_cannot_be_made_is_refused_before_the_work(tmp_path):
    """The link's own folder is writable, but the file it names is under a plain file: checked
    where the write will go (the link's target), so it fails before a run, not after it."""
    (tmp_path / "plain").write_text("")
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "plain" / "out.json")
    try:
        check_writable_file(link, "--json")
    except TfdashError as e:
        assert str(e).startswith(f"--json {link}: cannot write there"), e
    else:
        raise AssertionError("a link into a plain file passed the check")


def test_a_loop_of_symlinks_is_refused_before_the_work(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    try:
        check_writable_file(tmp_path / "a", "--json")
    except TfdashError as e:
        assert "loop" in str(e), e
    else:
        raise AssertionError("a loop of links passed the check")


def test_analyze_json_to_stdout_is_the_json_alone():
    """`tfdash analyze --json /dev/stdout | jq`: stdout holds the JSON alone, the table goes to stderr."""
    r = subprocess.run([sys.executable, "-m", "tfdash", "analyze", "--model", "qwen3-tiny", "--json", "/dev/stdout"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"]["name"] == "qwen3-tiny"
    assert "# analysis target=" in r.stderr


def test_commands_print_their_table_to_stderr_where_the_json_is_stdout(tmp_path):
    """analyze, bench and counters print their table through table_stream: with `--json /dev/stdout`
    (or /dev/fd/1) stdout carries the JSON alone; any other target leaves the table on stdout."""
    import sys

    from tfdash.profiling.files import table_stream

    assert table_stream("/dev/stdout") is sys.stderr and table_stream("/dev/fd/1") is sys.stderr
    assert table_stream(str(tmp_path / "b.json")) is sys.stdout and table_stream(None) is sys.stdout
    assert table_stream("/dev/stderr") is sys.stdout  # the JSON on stderr: stdout keeps the table
