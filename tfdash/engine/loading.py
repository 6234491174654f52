"""What a user sees while the engine is built: a large model's weights take a minute or more (a 32B
checkpoint read from disk, an 8B model's random weights made on a CPU), then seconds more to pack
them and build the runtime, and the tilelang kernels' first compile as long again: silent waits.

`LoadingBar` is the command line's: on a terminal, a bar on stderr with bytes and time left, gone
once loaded; in a pipe or a log, `loading_lines`: whole lines, at most one a second, and none for a
load quicker than that, so a small model's run keeps its lines as they were; there `PhaseLines`
says each phase of the build (the dashboard's status texts) that runs past a second.
`loading_status(status)` is the dashboard's: its status line, said at most a few times a second.
`compile_lines` is the compile's line a second where no one passes it a progress of its own."""

from __future__ import annotations

import sys
import threading
import time

from tfdash.termenc import ours
from tfdash.units import fmt_bytes

STATUS_EVERY_S = 0.2  # the dashboard's status line is redrawn at most this often while weights load
LINE_EVERY_S = 1.0  # a pipe or a log gets a line at most this often, the first once a load took this long
BUILDING = "building the engine…"  # the build's phases, as the dashboard's status line and headless say them
PACKING = "packing the weights…"  # q|k|v and gate|up concatenated (weights.pack): seconds at 1.7B on a CPU
RUNTIME = "building the runtime…"  # the plan's buffers allocated and filled, its launches bound
LINES = threading.Lock()  # the build's lines: PhaseLines' timer thread and the compile's (main thread) one at a time


def say_line(line: str, stream=None) -> None:
    """`tfdash: line` on `stream` (stderr) as one write under LINES, so the phase line from
    PhaseLines' thread and a compile line from the main thread, both due a second in, never
    interleave (print writes the text and its newline apart). The lines are tfdash's own words (a
    phase, bytes, a kernel's name): its symbols are spelt for the stream (termenc.ours), "…" as "..."
    where stderr is not UTF-8, not as an escape."""
    stream = stream if stream is not None else sys.stderr
    text = ours(f"tfdash: {line}\n", stream)
    with LINES:
        stream.write(text)
        stream.flush()


def loading_line(done: int, total: int) -> str:
    return f"loading weights: {fmt_bytes(done)} of {fmt_bytes(total)}"


def compile_line(done: int, total: int, name: str, seconds: float) -> str:
    return f"compiling tilelang kernels {done}/{total}: {name} ({seconds:.1f} s)"


class LoadingBar:
    """`with LoadingBar(stream) as loaded: load_engine(..., loading=loaded)`: a transient rich bar
    on `stream` (stderr by default) while `loaded(done, total)` is called, where the stream is a
    terminal; where it is not, `loading_lines` of it, each `tfdash: loading weights: …`, and
    `status(text)` (load_engine's) says each phase of the build that runs past a second (PhaseLines).
    On a terminal `status` says nothing: the bar, and the compile's own, are there."""

    def __init__(self, stream=None, clock=time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.task = None
        self.lines = self.phases = None
        if not getattr(self.stream, "isatty", lambda: False)():
            self.lines = loading_lines(self._say, clock=clock)
            self.phases = PhaseLines(self._say)

    def status(self, text: str) -> None:
        if self.phases is not None:
            self.phases.phase(text)

    def __enter__(self):
        return self

    def _say(self, line: str) -> None:
        say_line(line, self.stream)

    def __call__(self, done: int, total: int) -> None:
        if self.lines is not None:
            self.phases.phase(None)  # the weights' own lines take over from the phase before them
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
        if self.phases is not None:
            self.phases.close()  # before the run's own lines: a phase's line never comes after them
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


def line_a_second(say, every_s: float | None = None, clock=time.monotonic, start: float | None = None):
    """`tell(line, last)` for a stream that keeps every line (a pipe, a log): `say(line)` once
    `every_s` (LINE_EVERY_S) has passed since `start` (default: the first call), then at most once
    every `every_s`, and the `last` where any was said. Work quicker than `every_s` says nothing."""
    every_s = LINE_EVERY_S if every_s is None else every_s
    said = None

    def tell(line: str, last: bool) -> None:
        nonlocal start, said
        now = clock()
        start = now if start is None else start
        if said is None:
            due = now - start >= every_s
        else:
            due = last or now - said >= every_s
        if due:
            said = now
            say(line)

    return tell


def loading_lines(say, every_s: float | None = None, clock=time.monotonic):
    """`loaded(done, total)` for a stream that keeps every line: `line_a_second` of `loading_line`,
    timed from the first tensor, the last the whole."""
    tell = line_a_second(say, every_s, clock)
    return lambda done, total: tell(loading_line(done, total), done >= total)


def compile_lines(say, every_s: float | None = None, clock=time.monotonic):
    """compile_plan's `progress(done, total, name, seconds)` for a stream that keeps every line:
    `line_a_second` of `compile_line`, timed from now (the compile's start: a first kernel's compile
    takes seconds), the last kernel's where any was said."""
    tell = line_a_second(say, every_s, clock, start=clock())
    return lambda done, total, name, seconds: tell(compile_line(done, total, name, seconds), done >= total)


class PhaseLines:
    """The build's phases for a stream that keeps every line: `phase(text)` as one starts; its line
    comes from a timer thread once the phase has run `every_s` (LINE_EVERY_S), so a quick phase says
    nothing and a slow one is said a second in, not after it. `phase(None)` where lines of its own
    take over (the weights' bytes); `close()` before the run's own lines (it waits for a line being
    said, so none comes after them)."""

    def __init__(self, say, every_s: float | None = None, clock=time.monotonic):
        self._say, self._clock = say, clock
        self._every = LINE_EVERY_S if every_s is None else every_s
        self._cond = threading.Condition()
        self._text, self._since, self._closed = None, 0.0, False
        self._thread = None

    def phase(self, text: str | None) -> None:
        with self._cond:
            self._text, self._since = text, self._clock()
            self._cond.notify()
            if self._thread is None and text is not None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="tfdash-phases", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._text is None:
                    self._cond.wait()
                    continue
                left = self._since + self._every - self._clock()
                if left > 0:
                    self._cond.wait(left)
                    continue
                try:
                    self._say(self._text)  # under the lock: phase() and close() wait for the whole line
                except (OSError, ValueError):  # stderr's reader gone (a broken pipe) or closed: no thread traceback
                    pass
                self._text = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
