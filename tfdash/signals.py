"""SIGTERM and SIGHUP handled like Ctrl+C, and the final write protected from a second one.

    with stop_signals():           SIGTERM/SIGHUP raise Interrupted in the main thread, as SIGINT
        run()                      raises KeyboardInterrupt: the caller stops the engine and reports
    with finishing():              while the summary and files are written, a signal is noted on
        write_exports()            stderr and waits: the files are complete, or the error says so

`exit_code(e)` is the shell's convention: 128 + the signal number (130 for SIGINT, 143 for
SIGTERM, 129 for SIGHUP). This module imports nothing of the UI.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager

STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where the main thread was, like KeyboardInterrupt for SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(e: BaseException | int | None) -> int:
    if isinstance(e, int):
        return 128 + e
    return 128 + int(getattr(e, "signum", signal.SIGINT))


def name(e: BaseException | int | None) -> str:
    signum = e if isinstance(e, int) else getattr(e, "signum", signal.SIGINT)
    return signal.Signals(signum).name


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stop_signals(handler=None, signals=STOP_SIGNALS):
    """Within the block, `signals` (SIGTERM and SIGHUP) call `handler(signum)` (default: raise
    Interrupted). The dashboard adds SIGINT: its Ctrl+C is a key, a SIGINT comes from elsewhere."""
    if not _main_thread():
        yield
        return

    def raise_it(signum, frame):
        raise Interrupted(signum)

    fn = raise_it if handler is None else (lambda signum, frame: handler(signum))
    old = {s: signal.signal(s, fn) for s in signals}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def finishing(what: str = "the summary and the files"):
    """Within the block, SIGINT, SIGTERM and SIGHUP are noted and deferred: the write finishes.
    Yields a list that holds the signal numbers that came."""
    came: list[int] = []
    if not _main_thread():
        yield came
        return

    def note(signum, frame):
        came.append(signum)
        print(f"\ntfdash: {signal.Signals(signum).name}: writing {what} first", file=sys.stderr, flush=True)

    sigs = (signal.SIGINT, *STOP_SIGNALS)
    old = {s: signal.signal(s, note) for s in sigs}
    try:
        yield came
    finally:
        for s, h in old.items():
            signal.signal(s, h)
