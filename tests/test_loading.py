"""Weights loading is seen: `load_weights` says each tensor's bytes as it goes, the command line
draws a bar on a terminal (and, in a pipe or a log, a line a second once a load is slow), the
dashboard's status line says it."""

import io
import re

import pytest
import torch

from tfdash.engine import preset
from tfdash.engine.config import load_config
from tfdash.engine.loading import (BUILDING, PACKING, RUNTIME, LoadingBar, PhaseLines, loading_line, loading_lines,
                                   loading_status)
from tfdash.engine.weights import load_weights


def _calls(cfg, ckpt=None, dtype=torch.float32):
    calls = []
    w = load_weights(cfg, ckpt, dtype, loaded=lambda done, total: calls.append((done, total)))
    return calls, sum(t.numel() * t.element_size() for t in w.values())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_random_weights_say_each_tensor_up_to_the_whole(dtype):
    calls, packed = _calls(preset("qwen3-tiny"), dtype=dtype)
    done = [d for d, _ in calls]
    assert len(calls) > 10 and done == sorted(done) and len(set(done)) == len(done)
    assert {t for _, t in calls} == {packed} and done[-1] == packed  # the bytes the engine holds


@pytest.mark.parametrize("sharded", [False, True])
def test_a_checkpoints_weights_say_each_tensor_up_to_the_whole(ckpt_factory, sharded):
    path = ckpt_factory(sharded=sharded).path
    calls, packed = _calls(load_config(path), path)
    assert calls and calls[-1] == (packed, packed) and [d for d, _ in calls] == sorted(d for d, _ in calls)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_is_drawn_on_a_terminal_and_a_quick_load_says_nothing_in_a_pipe():
    pipe, tty = io.StringIO(), _Terminal()
    for stream in (pipe, tty):
        with LoadingBar(stream) as loaded:
            for i in range(1, 5):
                loaded(i * 2**20, 4 * 2**20)
    assert pipe.getvalue() == ""
    assert "loading weights" in tty.getvalue() and "4.2/4.2 MB" in tty.getvalue()


def test_a_slow_load_in_a_pipe_says_whole_lines_a_second_apart():
    """A pipe or a log keeps every line: no bar's redraws, a whole line at most once a second, the
    first once the load has taken a second, the last the whole."""
    pipe, now = io.StringIO(), [0.0]
    with LoadingBar(pipe, clock=lambda: now[0]) as loaded:
        for i in range(1, 101):  # 100 tensors over 5 s
            now[0] = i / 20
            loaded(i * 10**7, 10**9)
    lines = pipe.getvalue().splitlines()
    assert "\r" not in pipe.getvalue() and "\x1b" not in pipe.getvalue()
    assert lines[0] == "tfdash: loading weights: 210.00 MB of 1.00 GB"  # at 1 s from the first tensor
    assert lines[-1] == "tfdash: loading weights: 1.00 GB of 1.00 GB" and len(lines) == 5


def test_lines_come_once_a_second_and_the_last_only_after_one():
    said, now = [], [0.0]
    loaded = loading_lines(said.append, every_s=1.0, clock=lambda: now[0])
    for t, done in ((0.0, 1), (0.5, 2), (0.9, 3), (1.0, 4), (1.4, 5), (2.1, 6), (2.2, 10)):
        now[0] = t
        loaded(done, 10)
    assert said == [loading_line(4, 10), loading_line(6, 10), loading_line(10, 10)]


def test_the_status_line_says_the_first_and_last_and_a_few_between():
    said, now = [], [0.0]
    loaded = loading_status(said.append, every_s=0.2, clock=lambda: now[0])
    for i in range(1, 101):  # 100 tensors over 1 s
        now[0] = i / 100
        loaded(i * 10**7, 10**9)
    assert said[0] == loading_line(10**7, 10**9) == "loading weights: 10.00 MB of 1.00 GB"
    assert said[-1] == "loading weights: 1.00 GB of 1.00 GB" and 4 <= len(said) <= 7


def test_the_dashboards_engine_says_its_weights_loading(tmp_path, monkeypatch):
    """The dashboard's worker builds the engine under "building the engine…"; the weights' bytes
    follow in the status line (a 32B checkpoint read from disk is a minute of it)."""
    from tfdash.app.main import session_factory
    from tfdash.cli import run_parser

    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    args = run_parser().parse_args(["--device", "cpu", "--max-new-tokens", "8"])
    said = []
    session_factory(args, 8)(said.append)
    loading = [s for s in said if s.startswith("loading weights: ")]
    assert said[0] == "building the engine…" and loading, said
    last = loading[-1].removeprefix("loading weights: ").split(" of ")
    assert last[0] == last[1], loading
    # then the seconds after the last tensor (1.7B on a CPU: ~3 s packing, ~2 s the runtime) are said too
    assert said[said.index(loading[-1]) + 1:][:2] == [PACKING, RUNTIME], said


def test_headless_says_a_slow_load_on_stderr_and_keeps_stdout_clean(capsys, monkeypatch):
    """`tfdash --headless` with stderr in a pipe: the weights' progress is lines on stderr before
    the run's description (a 1.7B model's random weights take half a minute on a CPU); stdout has
    the text and the summary only. Here every tensor is "slow" (LINE_EVERY_S 0)."""
    from tfdash.cli import main

    monkeypatch.setattr("tfdash.engine.loading.LINE_EVERY_S", 0.0)
    capsys.readouterr()
    assert main(["--headless", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]) == 0
    out, err = capsys.readouterr()
    said = [s for s in err.splitlines() if s not in PHASE_LINES]  # every phase is slow too: test_headless_says…
    loading = [s for s in said if s.startswith("tfdash: loading weights: ")]
    assert len(loading) > 3 and said[:len(loading)] == loading, said
    whole = loading[-1].removeprefix("tfdash: loading weights: ").split(" of ")
    assert whole[0] == whole[1] and said[len(loading)].startswith("tfdash 0.1.0 · qwen3-tiny"), said
    assert "loading" not in out


PHASE_LINES = [f"tfdash: {text}" for text in (BUILDING, PACKING, RUNTIME)]


def test_headless_says_a_slow_phase_of_the_build_once_a_second_in(capsys, monkeypatch):
    """After the last weight line a 1.7B model on a CPU had ~6 s with nothing on stderr (~3 s packing
    the weights, ~3 s building the runtime): with stderr in a pipe, each phase that runs past
    LINE_EVERY_S says its line (the dashboard's status text) as it runs, before the run's
    description; stdout keeps the text and the summary only."""
    import time as _time

    from tfdash.cli import main
    from tfdash.engine import runtime, weights

    monkeypatch.setattr("tfdash.engine.loading.LINE_EVERY_S", 0.2)
    pack, make = weights.pack, runtime.make_runtime
    monkeypatch.setattr(weights, "pack", lambda *a: (_time.sleep(0.6), pack(*a))[1])
    monkeypatch.setattr(runtime, "make_runtime", lambda *a, **k: (_time.sleep(0.6), make(*a, **k))[1])
    capsys.readouterr()
    assert main(["--headless", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]) == 0
    out, err = capsys.readouterr()
    said = err.splitlines()
    described = next(i for i, s in enumerate(said) if s.startswith("tfdash 0.1.0 · qwen3-tiny"))
    before = [s for s in said[:described]  # the tiny model's first tensor and its load: quick, or a line
              if s != f"tfdash: {BUILDING}" and not s.startswith("tfdash: loading weights: ")]
    assert before == [f"tfdash: {PACKING}", f"tfdash: {RUNTIME}"], said
    assert not any(line in out for line in PHASE_LINES) and "tfdash:" not in out


def test_a_quick_build_in_a_pipe_says_no_phase(capsys):
    from tfdash.cli import main

    capsys.readouterr()
    assert main(["--headless", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]) == 0
    assert capsys.readouterr().err.splitlines()[0].startswith("tfdash 0.1.0 · qwen3-tiny")


def test_a_phase_is_said_once_it_has_run_a_while_and_a_quick_one_never():
    said = []
    phases = PhaseLines(said.append, every_s=0.1)
    phases.phase("slow")
    _sleep_until(lambda: said, 2.0)
    phases.phase("quick")
    phases.phase("slow again")  # "quick" ran no time at all
    _sleep_until(lambda: len(said) > 1, 2.0)
    phases.phase("cut short")
    phases.phase(None)  # lines of its own take over (the weights' bytes)
    phases.phase("closed before its second")
    phases.close()
    assert said == ["slow", "slow again"]


def _sleep_until(done, timeout: float) -> None:
    import time as _time

    end = _time.monotonic() + timeout
    while not done() and _time.monotonic() < end:
        _time.sleep(0.01)


def test_compile_plan_in_a_pipe_says_a_line_a_second_not_a_bar(capsys, monkeypatch):
    """Headless passes no progress to the tilelang compile, whose own rich bar redraws without a
    limit where stderr is a pipe: there it says whole lines, the first once the compile has run
    LINE_EVERY_S, at most one each LINE_EVERY_S, the last kernel's; a quick compile says nothing."""
    import time as _time
    from types import SimpleNamespace

    from tfdash.engine import compile as comp

    plan = SimpleNamespace(kernels=lambda: {f"k{i}": i for i in range(12)})
    monkeypatch.setattr(comp, "check_supported", lambda plan: None)
    monkeypatch.setattr(comp, "compile_one", lambda launch, target, pdl: launch)
    capsys.readouterr()
    assert comp.compile_plan(plan) == {f"k{i}": i for i in range(12)}
    assert capsys.readouterr().err == ""  # quick: no line
    monkeypatch.setattr("tfdash.engine.loading.LINE_EVERY_S", 0.1)
    monkeypatch.setattr(comp, "compile_one", lambda launch, target, pdl: (_time.sleep(0.04), launch)[1])
    comp.compile_plan(plan)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "\r" not in err and "\x1b" not in err and 2 <= len(lines) <= 6, err
    assert all(re.fullmatch(r"tfdash: compiling tilelang kernels \d+/12: k\d+ \(0\.0 s\)", s) for s in lines), err
    assert lines[-1].startswith("tfdash: compiling tilelang kernels 12/12: k11"), err


def test_the_build_lines_spell_tfdash_symbols_on_a_stderr_that_is_not_utf8():
    """`PYTHONIOENCODING=latin-1`: stderr escapes what it cannot encode (its other lines carry
    paths), so a phase read `tfdash: building the engine\\u2026`. The build's lines are tfdash's own
    words, spelt for the stream: "…" as "..."."""
    import io

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="latin-1", errors="backslashreplace")  # tolerant_output's stderr
    LoadingBar(stream)._say(BUILDING)
    assert raw.getvalue() == b"tfdash: building the engine...\n"


class _Recording:
    """A stderr that records each write and whether another was under way at the time."""

    def __init__(self):
        import threading

        self.writes, self.overlaps, self._busy, self._lock = [], 0, 0, threading.Lock()

    def write(self, text: str) -> int:
        import time as _time

        with self._lock:
            self._busy += 1
            self.overlaps += self._busy > 1
        _time.sleep(0.002)  # a slow reader: room for the other thread to cut in
        with self._lock:
            self.writes.append(text)
            self._busy -= 1
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def test_phase_lines_and_compile_lines_never_interleave(monkeypatch):
    """PhaseLines' timer thread and the compile (main thread) both say a line about a second in;
    print wrote the text and its newline apart, without the phases' lock, so the two could cut into
    each other. Each line is one write now, under one lock."""
    import threading
    import time as _time

    from tfdash.engine.loading import compile_lines, say_line

    stream = _Recording()
    monkeypatch.setattr("sys.stderr", stream)
    bar = LoadingBar(stream)
    bar.phases._every = 0.0  # every phase due at once: its thread says it while the main thread says lines
    stop = threading.Event()

    def phases():
        while not stop.is_set():
            bar.status(RUNTIME)
            _time.sleep(0.001)

    t = threading.Thread(target=phases)
    t.start()
    progress = compile_lines(say_line, every_s=0.0)  # compile_plan's, in a pipe
    for i in range(40):
        progress(i + 1, 40, f"k{i}", 0.1)
    stop.set()
    t.join()
    bar.__exit__(None, None, None)
    assert stream.overlaps == 0 and len(stream.writes) > 40
    assert all(w.startswith("tfdash: ") and w.endswith("\n") and w.count("\n") == 1 for w in stream.writes)


def test_a_phase_line_to_a_broken_pipe_prints_no_thread_traceback(monkeypatch):
    import threading

    errors = []
    monkeypatch.setattr(threading, "excepthook", errors.append)
    tried = []

    def say(line):
        tried.append(line)
        raise BrokenPipeError(32, "Broken pipe")

    phases = PhaseLines(say, every_s=0.01)
    phases.phase("slow")
    _sleep_until(lambda: tried, 2.0)
    phases.phase("slow again")
    _sleep_until(lambda: len(tried) > 1, 2.0)
    phases.close()
    assert tried == ["slow", "slow again"] and errors == []  # the thread lived on, and said nothing of it
