"""The run command's (`tfdash`) mistakes in its arguments, found by the parser or by the checks after
it (options that cannot go together, a length past the model, an option only headless takes), each
end as the parser's own do: `tfdash: error: ... (see tfdash --help)`, on one line, headless or
before the dashboard's screen. What the host or a checkpoint refuses keeps its own plain line."""

from __future__ import annotations

import pytest
from conftest import assert_one_line_error

from tfdash.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")

HELP = " (see tfdash --help)"

MISTAKES = [
    (["--seed", "x"], "argument --seed: 'x' is not an integer"),  # the parser's own, for comparison
    (["--seed", "1", "--ckpt", "/nonexistent"], "--seed 1 seeds random weights"),  # before the folder is read
    (["--ckpt", "/nonexistent", "--model", "qwen3-tiny"], "give --ckpt or --model, not both"),
    (["--max-new-tokens", "99999"], "past max_position_embeddings=8192 (--max-new-tokens 8180 or fewer)"),
    (["--device", "cpu", "--backend", "torch-graph"], "backend torch-graph needs --device cuda"),
]


def _run(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(list(argv))
    except SystemExit as e:  # the parser's own mistakes exit from it
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def _said_as_usage(rc, out, err, said) -> None:
    assert rc == 2 and out == "", err
    line = assert_one_line_error(err, said)
    assert line.startswith("tfdash: error: ") and line.endswith(HELP), line


@pytest.mark.parametrize("argv, said", MISTAKES)
def test_headless_argument_mistakes_end_with_where_the_help_is(capsys, argv, said):
    _said_as_usage(*_run(capsys, ["--headless", *argv]), said)


@pytest.mark.parametrize("argv, said", [*MISTAKES, (["--profile"], "--profile: with --headless only")])
def test_dashboard_argument_mistakes_end_with_where_the_help_is(capsys, monkeypatch, argv, said):
    from tfdash.app import main as app_main

    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")  # the dashboard, though pytest's stdout is no terminal
    monkeypatch.setattr(app_main, "live_app", lambda *a, **kw: pytest.fail("the dashboard's screen was built"))
    _said_as_usage(*_run(capsys, argv), said)


def test_a_missing_checkpoint_is_no_usage_mistake(capsys):
    """A folder that is not there is the file system's word, said as analyze's and bench's are."""
    rc, out, err = _run(capsys, ["--headless", "--ckpt", "/nonexistent"])
    assert rc == 2
    line = assert_one_line_error(err, "checkpoint directory /nonexistent does not exist")
    assert not line.endswith(HELP), line


@pytest.mark.parametrize("argv, said", [
    (["--ckpt", "/nonexistent"], "checkpoint directory /nonexistent does not exist"),
    (["--max-new-tokens", "99999"], "past max_position_embeddings=8192"),
    (["--ab", "tilelang-nopdl"], "is a tilelang-graph launch setting"),  # refused before any weight is loaded
])
def test_a_mistake_with_stdout_piped_is_one_line(argv, said):
    """`tfdash ... > out.txt` runs headless, and said so first: a bad argument then gave two lines on
    stderr, the note and the error, where a terminal gets the error alone. The note comes once the
    run starts."""
    from conftest import run_tfdash

    r = run_tfdash(*argv, timeout=120, env={"TFDASH_FORCE_TUI": ""})  # stdout is a pipe
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, said)


def test_the_piped_run_still_says_it_runs_headless_first():
    from conftest import run_tfdash

    r = run_tfdash("--max-new-tokens", "2", "--device", "cpu", timeout=120, env={"TFDASH_FORCE_TUI": ""})
    assert r.rc == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "tfdash: stdout is not a terminal; running --headless", r.stderr
    assert lines[1].startswith("tfdash ") and "qwen3-tiny" in lines[1], r.stderr  # the run's description next
    assert sum("running --headless" in line for line in lines) == 1
