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
