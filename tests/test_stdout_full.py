"""stdout that cannot be written (a full disk under `tfdash ... > out.txt`; /dev/full stands in
for it) is one error line and a non-zero exit from every command that prints, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO, assert_one_line_error
from fixtures.appkit import SNAPSHOT

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


@pytest.mark.parametrize("argv", [["--headless", "--max-new-tokens", "2"],
                                  ["analyze", "--model", "qwen3-tiny"],
                                  ["diff", str(SNAPSHOT), str(SNAPSHOT)],
                                  ["diff", str(SNAPSHOT), str(SNAPSHOT), "--json", "-"],
                                  ["open", str(SNAPSHOT)]])
def test_a_full_stdout_is_one_line(argv):
    """`tfdash diff a.json b.json > report.txt` on a full disk ended in a traceback
    (OSError: [Errno 28] No space left on device), exit 1."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "tfdash", *argv], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120, cwd=REPO)
    stderr = "\n".join(line for line in p.stderr.splitlines()  # the run's own lines before it
                       if not line.startswith(("tfdash 0.", "tfdash: stdout is not a terminal")))
    assert p.returncode == 2, p.stderr
    assert_one_line_error(stderr, "cannot write to stdout", "No space left on device")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["analyze", "--help"], ["diff", "--help"],
                                  ["counters", "--help"]])
def test_help_to_a_full_stdout_is_one_line(argv):
    """`tfdash --help > /dev/full` exited 0 with nothing said: argparse drops its own write error.
    It is the full-stdout line and exit 2, as every other command's output."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "tfdash", *argv], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120, cwd=REPO)
    assert p.returncode == 2, p.stderr
    assert_one_line_error(p.stderr, "cannot write to stdout", "No space left on device")


@pytest.mark.parametrize("sink", ["pipe", "full"])
def test_a_profiled_run_whose_stdout_goes_keeps_its_files(tmp_path, sink):
    """`tfdash --headless --profile --export out --save run.json | head -c 10`: once the reader went
    away, every batch of tokens logged a traceback on stderr, and the report's first line then ended
    the run before the export and the save were written: the files it promised were lost."""
    out, save = tmp_path / "out", tmp_path / "run.json"
    argv = [sys.executable, "-m", "tfdash", "--headless", "--profile", "--max-new-tokens", "64",
            "--export", str(out), "--save", str(save)]
    if sink == "pipe":
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        p.stdout.read(10)
        p.stdout.close()  # the reader goes away (`| head -c 10`)
        stderr = p.stderr.read().decode()
        rc = p.wait(timeout=120)
    else:
        with open("/dev/full", "w") as full:
            r = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, cwd=REPO)
        stderr, rc = r.stderr, r.returncode
    assert "Traceback" not in stderr, stderr
    assert (out / "snapshot.json").is_file() and (out / "kernels.csv").is_file() and save.is_file()
    if sink == "pipe":
        assert rc == 128 + 13, stderr  # as a tool stopped by SIGPIPE
    else:
        assert rc == 2 and "tfdash: error: cannot write to stdout (No space left on device)" in stderr


@pytest.mark.parametrize("argv", [["--headless", "--max-new-tokens", "2"],
                                  ["--headless", "--profile", "--max-new-tokens", "2"],
                                  ["diff", str(SNAPSHOT), str(SNAPSHOT)]])
def test_a_full_stderr_loses_the_notes_not_the_run(argv):
    """`tfdash --headless 2>/dev/full`: the first note on stderr (the header line) failed with ENOSPC
    and ended the run, exit 2 and nothing on stdout. The notes are lost; the output and exit 0 stay."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "tfdash", *argv], stdout=subprocess.PIPE, stderr=full,
                           text=True, timeout=120, cwd=REPO)
    assert p.returncode == 0
    assert ("tok/s over the whole generation" if argv[0] == "--headless" else "launch") in p.stdout, p.stdout
