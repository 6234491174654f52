"""stderr as the place for notes: a note that cannot be written is lost, never the run.

tfdash prints its output (the text, the reports) to stdout and its notes (what ran, fallbacks,
progress, warnings, errors) to stderr. With stderr on a full disk (`2> log`, `2>/dev/full`), the
first note's write failed with ENOSPC and ended the run before its output: exit 2, nothing on
stdout. `losing_stderr()` has sys.stderr lose such a line instead: at the first failed write its
descriptor goes to /dev/null (so the exit's flush of what is left cannot fail again), as stdout's
does where it fails (cli._stdout_failed), and the run goes on; its exit status still says how it
ended. A closed pipe (BrokenPipeError: the reader went away) is still raised, for the CLI's quiet stop.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


class LosingStderr:
    """A text stream that passes everything to `stream`, and loses what `stream` fails to write."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s: str) -> int:
        try:
            return self._stream.write(s)
        except BrokenPipeError:
            raise
        except OSError:
            self._lose()
            return len(s)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError:
            self._lose()

    def _lose(self) -> None:
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        try:
            os.dup2(fd, self._stream.fileno())
        except (OSError, ValueError, AttributeError):  # a stream without a file (a test's capture)
            pass
        finally:
            os.close(fd)

    def __getattr__(self, name):  # encoding, isatty, fileno, ...: the stream's own
        return getattr(self._stream, name)


@contextmanager
def losing_stderr():
    """sys.stderr as a LosingStderr while the block runs (where there is one), then as it was."""
    old = sys.stderr
    if old is not None and not isinstance(old, LosingStderr):
        sys.stderr = LosingStderr(old)
    try:
        yield
    finally:
        if sys.stderr is not old and isinstance(sys.stderr, LosingStderr):
            sys.stderr = old
