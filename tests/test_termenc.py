"""A terminal whose encoding is not UTF-8 (en_US.ISO-8859-1, `LC_ALL=C PYTHONUTF8=0`,
PYTHONIOENCODING=latin-1): every printed report arrives, tfdash's own symbols it lacks (µ, Δ, ×)
in ASCII with its columns in line and any other character as a backslash escape, never a
UnicodeEncodeError after the work is done."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from conftest import REPO, assert_one_line_error
from fixtures.appkit import SNAPSHOT

from tfdash.termenc import tolerant_output

LATIN1 = {"PYTHONIOENCODING": "latin-1"}
C_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": None}  # ascii, surrogateescape


def run(env: dict, *args: str) -> tuple[int, str, str]:
    """`python -m tfdash ARGS` under `env` (None removes a variable); its output read as bytes, so
    what the child wrote is checked as written."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    full = {k: v for k, v in full.items() if v is not None}
    p = subprocess.run([sys.executable, "-m", "tfdash", *args], capture_output=True, timeout=120, cwd=REPO,
                       env=full)
    return p.returncode, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")


@pytest.mark.parametrize("env", [LATIN1, C_LOCALE], ids=["latin-1", "C-locale"])
def test_open_summary_and_diff_print_on_a_terminal_that_is_not_utf8(env):
    rc, out, err = run(env, "open", str(SNAPSHOT), "--baseline", str(SNAPSHOT))
    assert rc == 0 and "Traceback" not in err, err
    assert "d (B - A)" in out and "\\" not in out  # the diff's Δ column, in ASCII
    assert "launches matched" in out  # the diff printed whole, after the summary


def test_the_diff_table_keeps_its_columns_in_ascii_under_the_c_locale(tmp_path):
    """`LC_ALL=C PYTHONUTF8=0 tfdash diff A B` wrote `3,878.37 \\xb5s`: each escape four characters
    for one, so a row with µ (or ×, —) ran past a row without. The units are ASCII now ("us", "x",
    "d" for Δ), one character for one: every row of the table as wide as its header."""
    from fixtures.appkit import build_snapshot

    from tfdash.profiling.export import write_snapshot

    b = write_snapshot(build_snapshot(fused_rope=False), tmp_path / "b.json")  # added rows: "—" cells
    rc, out, err = run(C_LOCALE, "diff", str(SNAPSHOT), str(b))
    assert rc == 0 and "Traceback" not in err, err
    assert "\\" not in out and out.isascii(), out
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("launch "))
    table = lines[top:]
    assert "meas A us" in table[0] and "d us" in table[0] and "x" in table[1], table[:2]
    assert any("(added)" in line and " - " in line for line in table), table  # "—" as "-", not an escape
    assert {len(line) for line in table} == {len(table[0])}, [line for line in table if len(line) != len(table[0])]
    assert "# step (profile window)" in out and " us " in out  # the summary above: "1,747.57 us"


@pytest.mark.slow  # a fresh interpreter, a run and its A/B: ~3 s
def test_an_ab_verdict_is_printed_on_a_latin1_terminal():
    rc, out, err = run(LATIN1, "--headless", "--device", "cpu", "--ab", "tilelang-unfused", "--max-new-tokens", "8")
    assert rc == 0 and "Traceback" not in err, err
    assert "A/B tilelang-unfused" in out and "\\u0394" not in out and "d %" in out  # the per-op Δ %, in ASCII
    assert "\\u2026" in err  # stderr's own lines as before: escapes, Python's rule for stderr


def _stream(encoding: str, errors: str = "strict") -> tuple[io.BytesIO, io.TextIOWrapper]:
    raw = io.BytesIO()
    return raw, io.TextIOWrapper(raw, encoding=encoding, errors=errors)


def test_tolerant_output_escapes_only_what_fails(monkeypatch):
    raw, latin = _stream("latin-1")
    _, chosen = _stream("latin-1", "replace")  # PYTHONIOENCODING=latin-1:replace: the user's choice
    _, utf8 = _stream("utf-8")
    monkeypatch.setattr(sys, "stdout", latin)
    monkeypatch.setattr(sys, "stderr", chosen)
    tolerant_output()
    latin.write("Δ 5 µs ✓\n")
    latin.flush()
    assert raw.getvalue() == b"d 5 \xb5s \\u2713\n"  # tfdash's symbol in ASCII; µ is Latin-1's; others escaped
    assert chosen.errors == "replace"
    monkeypatch.setattr(sys, "stdout", utf8)
    tolerant_output()
    assert utf8.errors == "strict"


# -- the dashboard: refused with one line, not drawn as a screen of `?` --------------------
@pytest.mark.parametrize("env", [LATIN1, C_LOCALE], ids=["latin-1", "C-locale"])
def test_the_dashboard_refuses_a_terminal_that_is_not_utf8(env):
    force = {**env, "TFDASH_FORCE_TUI": "1"}  # as on a terminal: past the not-a-terminal fallback
    rc, out, err = run(force, "--device", "cpu")
    assert rc == 2 and out == ""
    assert_one_line_error(err, "the dashboard draws in UTF-8", "--headless")
    rc, out, err = run(force, "open", str(SNAPSHOT))
    assert rc == 2 and out == ""
    assert_one_line_error(err, "the dashboard draws in UTF-8", "text summary")


def test_the_c_locale_in_utf8_mode_keeps_the_dashboard():
    """LC_ALL=C alone: Python's UTF-8 mode gives a UTF-8 stdout, and the dashboard draws there."""
    code = "from tfdash.termenc import dashboard_refusal; print(dashboard_refusal('x'))"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUTF8", "PYTHONIOENCODING")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                       env={**env, "LC_ALL": "C", "PYTHONPATH": str(REPO)})
    assert p.returncode == 0 and p.stdout.strip() == "None", p.stderr


@pytest.mark.slow  # a fresh interpreter and a 3-token run: ~2 s
def test_a_utf8_prompt_under_the_c_locale_is_read_as_utf8(tmp_path):
    """`LC_ALL=C PYTHONUTF8=0 tfdash --headless --prompt 'héllo Δ'`: Python decoded the argument as
    ASCII into lone surrogates, and the stand-in tokenizer's encode raised a UnicodeEncodeError, a
    traceback. The argument's bytes are UTF-8: the prompt is that text, kept so in the snapshot."""
    import json

    save = tmp_path / "s.json"
    rc, out, err = run(C_LOCALE, "--headless", "--device", "cpu", "--threads", "1", "--max-new-tokens", "3",
                       "--prompt", "héllo Δ", "--save", str(save))
    assert rc == 0 and "Traceback" not in err, err
    assert out.startswith("h\\xe9llo \\u0394")  # echoed as the terminal can show it
    assert json.loads(save.read_text(encoding="utf-8"))["meta"]["prompt"] == "héllo Δ"


@pytest.mark.parametrize("cmd", [["--headless", "--device", "cpu"], ["bench"]], ids=["run", "bench"])
def test_a_prompt_whose_bytes_are_not_utf8_is_one_line(cmd):
    """A Latin-1 'é' (byte 0xe9) from a terminal that sends Latin-1: a traceback from the tokenizer
    before; now the parser's one line, naming the byte."""
    p = subprocess.run([sys.executable, "-m", "tfdash", *cmd, "--prompt", b"h\xe9llo"], capture_output=True,
                       timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "LC_ALL": "C.UTF-8"})
    assert p.returncode == 2
    assert_one_line_error(p.stderr.decode(), "--prompt", "0xe9", "UTF-8")


def test_file_data_on_stdout_is_escaped_not_spelt_as_tfdash_ascii(tmp_path):
    """`tfdash diff Δa/dash/snapshot.json b/…` under latin-1 printed `# A: da/dash/snapshot.json`, a
    path that does not exist: file data (paths, hosts, models, roles) went through stdout's ASCII
    rule for tfdash's own symbols. It is an escape now, as stderr and the prompt already were; and
    `--markdown -` is a document, written as UTF-8 bytes as --markdown /dev/stdout writes it."""
    a, b = tmp_path / "Δa" / "dash", tmp_path / "b" / "dash"
    for folder in (a, b):
        folder.mkdir(parents=True)
        (folder / "snapshot.json").write_bytes(SNAPSHOT.read_bytes())
    rc, out, err = run(LATIN1, "diff", str(a / "snapshot.json"), str(b / "snapshot.json"))
    assert rc == 0 and "Traceback" not in err, err
    assert "\\u0394a/dash/snapshot.json" in out and "da/dash/snapshot.json (" not in out.replace("\\u0394a", "")
    assert "d (B - A)" in out  # tfdash's own Δ keeps its ASCII spelling
    full = {**os.environ, "PYTHONPATH": str(REPO), **LATIN1}
    md = subprocess.run([sys.executable, "-m", "tfdash", "diff", str(a / "snapshot.json"), str(b / "snapshot.json"),
                         "--markdown", "-"], capture_output=True, timeout=120, cwd=REPO, env=full)
    assert md.returncode == 0, md.stderr
    text = md.stdout.decode("utf-8")
    assert "Δa/dash/snapshot.json" in text and "Δ (B − A)" in text
    rc, out, err = run(LATIN1, "open", str(a / "snapshot.json"))
    assert rc == 0 and "Traceback" not in err, err
    assert "snapshot " + str(tmp_path) + "/\\u0394a/dash/snapshot.json: " in out, out
