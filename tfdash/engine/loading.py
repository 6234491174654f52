"""What a user sees while the weights load: a large model's take a minute or more (a 32B
checkpoint read from disk, an 8B model's random weights made on a CPU), which was a silent wait.

`LoadingBar` is the command line's: on a terminal, a bar on stderr with bytes and time left, gone
once loaded; in a pipe or a log, `loading_lines`: whole lines, at most one a second, and none for a
load quicker than that, so a small model's run keeps its lines as they were. `loading_status(status)`
is the dashboard's: its status line, said at most a few times a second."""

from __future__ import annotations

import sys
import time

from tfdash.units import fmt_bytes

STATUS_EVERY_S = 0.2  # the dashboard's status line is redrawn at most this often while weights load
LINE_EVERY_S = 1.0  # a pipe or a log gets a line at most this often, the first once a load took this long


def loading_line(done: int, total: int) -> str:
    return f"loading weights: {fmt_bytes(done)} of {fmt_bytes(total)}"


class LoadingBar:
    """`with LoadingBar(stream) as loaded: load_engine(..., loading=loaded)`: a transient rich bar
    on `stream` (stderr by default) while `loaded(done, total)` is called, where the stream is a
    terminal; where it is not, `loading_lines` of it, each `tfdash: loading weights: …`."""

    def __init__(self, stream=None, clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.task = None
        self.lines = None
        if not getattr(self.stream, "isatty", lambda: False)():
            self.lines = loading_lines(self._say, clock=clock)

    def __enter__(self):
        return self

    def _say(self, line: str) -> None:
        print(f"tfdash: {line}", file=self.stream, flush=True)

    def __call__(self, done: int, total: int) -> None:
        if self.lines is not None:
            self.lines(done, total)
            return
        if self.bar is None:
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


def loading_lines(say, every_s: float | None = None, clock=time.monotonic):
    """`loaded(done, total)` for a stream that keeps every line (a pipe, a log): `say(loading_line)`
    once the load has taken `every_s` (LINE_EVERY_S) since its first tensor, then at most once
    every `every_s`, and the last (the whole) where any was said. A load quicker than `every_s`
    says nothing."""
    every_s = LINE_EVERY_S if every_s is None else every_s
    start = last = None

    def loaded(done: int, total: int) -> None:
        nonlocal start, last
        now = clock()
        start = now if start is None else start
        if last is None:
            due = now - start >= every_s
        else:
            due = done >= total or now - last >= every_s
        if due:
            last = now
            say(loading_line(done, total))

    return loaded
