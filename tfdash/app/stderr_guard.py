"""Keep native libraries' stderr off the live dashboard's screen.

While the dashboard draws, Textual owns the terminal through file descriptor 2. Libraries in the
worker thread write there too, below Python: kineto prints "External init callback must run in
same thread as registerClient" the first time a profiler starts off the main thread, and logging
handlers that captured the original `sys.stderr` (tilelang's "TileLang:" lines) bypass Textual's
redirect. Each such line lands in the middle of the frame and stays until that region redraws.

`native_stderr_to(path)` points fd 2 at a log file for the app's lifetime and hands Textual a
duplicate of the terminal's descriptor instead (as `sys.__stderr__`, which its Linux driver
writes to). On exit everything is put back, and `lines` tells the caller how many lines went to
the log so that it can say where they are.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


@dataclass
class Guarded:
    path: Path
    lines: int = 0  # lines the libraries wrote while guarded (known after the block)


@contextmanager
def native_stderr_to(path: str | Path) -> Iterator[Guarded]:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError:  # an unwritable cache: a temporary file rather than no dashboard
        import tempfile

        log_fd, name = tempfile.mkstemp(prefix="tfdash-stderr-", suffix=".log")
        path = Path(name)
    res = Guarded(path)
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    saved_fd = os.dup(2)  # the terminal
    term = os.fdopen(os.dup(saved_fd), "w", buffering=1, encoding=getattr(sys.__stderr__, "encoding", None)
                     or "utf-8", errors="replace")
    old = sys.__stderr__, sys.stderr
    os.dup2(log_fd, 2)
    sys.__stderr__ = sys.stderr = term
    try:
        yield res
    finally:
        try:
            term.flush()
        except Exception:
            pass
        os.dup2(saved_fd, 2)
        os.close(saved_fd)
        os.close(log_fd)
        sys.__stderr__, sys.stderr = old
        try:
            term.close()
        except Exception:
            pass
        try:
            with open(path, "rb") as f:
                res.lines = sum(1 for _ in f)
        except OSError:
            res.lines = 0
