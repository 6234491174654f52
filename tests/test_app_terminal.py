"""The dashboard on a real terminal (a pty), and native stderr kept off its screen."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

GUARD_CHILD = textwrap.dedent("""
    import logging, os, sys, threading
    from tfdash.app.stderr_guard import native_stderr_to
    log = logging.getLogger("lib"); log.addHandler(logging.StreamHandler(sys.stderr)); log.propagate = False
    with native_stderr_to(sys.argv[1]) as g:
        t = threading.Thread(target=lambda: os.write(2, b"ERROR: from a native library\\n")); t.start(); t.join()
        log.warning("TileLang: a logging handler bound to the old stderr")
        sys.__stderr__.write("drawn by the app\\n"); sys.__stderr__.flush()
    print(g.lines)
    sys.stderr.write("after the app\\n")
""")


def test_native_stderr_goes_to_the_log_and_the_app_keeps_the_terminal(tmp_path):
    log = tmp_path / "sub" / "stderr.log"
    p = subprocess.run([sys.executable, "-c", GUARD_CHILD, str(log)], capture_output=True, text=True, timeout=60,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "2"
    # the terminal (fd 2 of the child) saw what the app drew and what came after, nothing else
    assert p.stderr.splitlines() == ["drawn by the app", "after the app"], p.stderr
    text = log.read_text()
    assert "ERROR: from a native library" in text and "TileLang: a logging handler" in text


def _read_until(fd: int, needle: bytes, timeout: float, buf: bytearray) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return needle in buf
            if not chunk:
                return needle in buf
            buf += chunk
            if needle in buf:
                return True
    return needle in buf


def _plain(buf: bytearray) -> str:
    return re.sub(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][A-Z0-9]|[=>])", "",
                  buf.decode("utf-8", "replace"))


def _tokens_shown(buf: bytearray) -> int:
    """The largest 'N tokens of 4,000' the throughput pane has drawn so far."""
    found = [int(m.group(1).replace(",", "")) for m in re.finditer(r"([\d,]+)\s+tokens of 4,000", _plain(buf))]
    return max(found, default=0)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="a pty")
def test_tfdash_on_a_real_terminal_runs_and_quits_with_q(tmp_path):
    """`tfdash` as typed at a terminal: the real Linux driver draws, tokens stream, `q` quits
    cleanly with the run's summary printed after the screen closes, naming where the run is kept."""
    import pty

    master, slave = pty.openpty()
    os.set_inheritable(slave, True)
    env = {**os.environ, "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"), "TFDASH_CACHE_DIR": str(tmp_path / "cache"),
           "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48", "OMP_NUM_THREADS": "1"}
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--model", "qwen3-tiny", "--device", "cpu",
                          "--max-new-tokens", "4000"], stdin=slave, stdout=slave, stderr=slave, cwd=REPO,
                         env=env, close_fds=True)
    os.close(slave)
    buf = bytearray()
    try:
        assert _read_until(master, b"tok/s", 120, buf), bytes(buf[-2000:])
        end = time.monotonic() + 120
        while _tokens_shown(buf) < 32 and time.monotonic() < end:  # tokens streaming in
            _read_until(master, b"\x00never", 0.3, buf)
        assert _tokens_shown(buf) >= 32, _plain(buf)[-2000:]
        os.write(master, b"q")
        end = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < end:
            _read_until(master, b"\x00never", 0.5, buf)  # keep draining: a full pty blocks the app
        rc = p.wait(timeout=5)
        _read_until(master, b"\x00never", 1, buf)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    text = _plain(buf)
    assert rc == 0, text[-2000:]
    assert "Traceback" not in text
    tail = text[text.rfind("tfdash: "):]
    assert "new tokens" in tail and "tok/s over the run" in tail, tail
    n = int(tail.split("tfdash: ", 1)[1].split()[0])
    assert 32 <= n < 4000  # quit mid-run, with what was decoded counted
    kept = list((tmp_path / "cache" / "runs").iterdir())  # no --save: the dashboard kept the run
    assert len(kept) == 1 and kept[0].name in tail.replace("\n", "").replace("\r", ""), (kept, tail)


def test_an_unwritable_log_place_falls_back_to_a_temporary_file(tmp_path):
    from tfdash.app.stderr_guard import native_stderr_to

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with native_stderr_to(blocker / "sub" / "stderr.log") as g:
        os.write(2, b"from a library\n")
    try:
        assert g.path.exists() and g.path.parent != blocker
        assert "from a library" in g.path.read_text() and g.lines == 1
    finally:
        g.path.unlink(missing_ok=True)


THREAD_PROFILE = """
import sys, threading
from torch.profiler import ProfilerActivity, profile
if sys.argv[1] == "primed":
    from tfdash.profiling.kernel_map import profiler_on_this_thread
    profiler_on_this_thread()
    profiler_on_this_thread()  # once a process
def window():
    with profile(activities=[ProfilerActivity.CPU]):
        pass
t = threading.Thread(target=window)
t.start()
t.join()
"""


def test_the_profiler_started_on_the_main_thread_first_keeps_kineto_quiet():
    """The dashboard's session (and a headless A/B) start torch.profiler in a worker thread; the
    process's first start there made kineto print "External init callback must run in same thread
    as registerClient" below Python. The main thread starting it first keeps that line away."""
    def run(mode):
        return subprocess.run([sys.executable, "-c", THREAD_PROFILE, mode], capture_output=True, text=True,
                              timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))

    bare = run("bare")
    if "External init callback" not in bare.stderr:
        pytest.skip("this torch's kineto does not say it")
    primed = run("primed")
    assert primed.returncode == 0, primed.stderr
    assert "External init callback" not in primed.stderr


FIRST_START_WARNS = """
import warnings
import torch.profiler
class Warns(torch.profiler.profile):
    def __enter__(self):  # as torch 2.11 does on a profiler's first start with no schedule
        warnings.warn("Warning: Profiler clears events at the end of each cycle.Only events from the current cycle "
                      "will be reported.To keep events across cycles, set acc_events=True.", UserWarning)
        return super().__enter__()
torch.profiler.profile = Warns
from tfdash.profiling.kernel_map import profiler_on_this_thread
profiler_on_this_thread()
print("started")
"""


def test_the_profilers_first_start_says_nothing_on_the_terminal():
    """On the GPU host's torch the main thread's first start warned that a profiler "clears events
    at the end of each cycle" on the terminal, above the dashboard: the filter that kept it out of
    profile windows was set only once their module was imported, after that start."""
    r = subprocess.run([sys.executable, "-c", FIRST_START_WARNS], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0 and r.stdout.strip() == "started", r.stderr
    assert "UserWarning" not in r.stderr and "clears events" not in r.stderr, r.stderr


def test_the_closing_note_counts_library_lines_in_words():
    from tfdash.app.main import library_note

    assert library_note(1, "/c/log") == "tfdash: 1 line of library output during the run is in /c/log"
    assert library_note(3, "/c/log") == "tfdash: 3 lines of library output during the run are in /c/log"
