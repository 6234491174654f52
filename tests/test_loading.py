"""Weights loading is seen: `load_weights` says each tensor's bytes as it goes, the command line
draws a bar on a terminal (and, in a pipe or a log, a line a second once a load is slow), the
dashboard's status line says it."""

import io

import pytest
import torch

from tfdash.engine import preset
from tfdash.engine.config import load_config
from tfdash.engine.loading import LoadingBar, loading_line, loading_lines, loading_status
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


def test_headless_says_a_slow_load_on_stderr_and_keeps_stdout_clean(capsys, monkeypatch):
    """`tfdash --headless` with stderr in a pipe: the weights' progress is lines on stderr before
    the run's description (a 1.7B model's random weights take half a minute on a CPU); stdout has
    the text and the summary only. Here every tensor is "slow" (LINE_EVERY_S 0)."""
    from tfdash.cli import main

    monkeypatch.setattr("tfdash.engine.loading.LINE_EVERY_S", 0.0)
    capsys.readouterr()
    assert main(["--headless", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]) == 0
    out, err = capsys.readouterr()
    said = err.splitlines()
    loading = [s for s in said if s.startswith("tfdash: loading weights: ")]
    assert len(loading) > 3 and said[:len(loading)] == loading, said
    whole = loading[-1].removeprefix("tfdash: loading weights: ").split(" of ")
    assert whole[0] == whole[1] and said[len(loading)].startswith("tfdash 0.1.0 · qwen3-tiny"), said
    assert "loading" not in out
