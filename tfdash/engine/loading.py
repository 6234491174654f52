"""What a user sees while the weights load: a large model's take a minute or more (a 32B
checkpoint read from disk, an 8B model's random weights made on a CPU), which was a silent wait.

`LoadingBar` is the command line's: a bar on stderr with bytes and time left, on a terminal only
and gone once loaded, so a pipe or a log keeps its lines as they were. `loading_status(status)` is
the dashboard's: its status line, said at most a few times a second."""

from __future__ import annotations

import sys
import time

from tfdash.units import fmt_bytes

STATUS_EVERY_S = 0.2  # the dashboard's status line is redrawn at most this often while weights load


def loading_line(done: int, total: int) -> str:
    return f"loading weights: {fmt_bytes(done)} of {fmt_bytes(total)}"


class LoadingBar:
    """`with LoadingBar(stream) as loaded: load_engine(..., loading=loaded)`: a transient rich bar
    on `stream` (stderr by default) while `loaded(done, total)` is called, where the stream is a
    terminal; nothing at all where it is not."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.task = None

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if not getattr(self.stream, "isatty", lambda: False)():
                return
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("loading weights"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                                console=Console(file=self.stream), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("weights", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def loading_status(status, every_s: float = STATUS_EVERY_S, clock=time.monotonic):
    """`loaded(done, total)` for `load_engine` that says `loading_line` through `status`, the first
    and last time and then at most once every `every_s`."""
    last = None

    def loaded(done: int, total: int) -> None:
        nonlocal last
        now = clock()
        if last is None or done >= total or now - last >= every_s:
            last = now
            status(loading_line(done, total))

    return loaded
