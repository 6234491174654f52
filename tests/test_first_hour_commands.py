"""Each subcommand as a new user first runs it on a CPU machine: every bad number, file or flag
is one line and exit 2 before any work, and what a command prints says what it did."""

from __future__ import annotations

import types

import pytest
from conftest import assert_one_line_error, run_tfdash


@pytest.mark.parametrize("cmd", [["--headless"], ["bench"], ["counters", "--all"]])
def test_a_negative_seed_is_refused_alike_by_every_command(cmd):
    """bench took `--seed -5` (and went on to say it needs a GPU); the others refused it."""
    r = run_tfdash(*cmd, "--seed", "-5", timeout=120)
    assert r.rc == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("error: argument --seed: -5 is out of range (0..1099511627775)")
    assert "CUDA" not in r.stderr


def test_the_bench_header_counts_one_in_the_singular():
    from tfdash.profiling.bench import header_line

    probe = types.SimpleNamespace(bandwidth=4.0e12, method="d2d copy")
    one = header_line("qwen3-tiny", None, 1, 1, 64, 1, probe)
    assert "· 1 prompt token + 1 new token · capacity 64 · 1 round ·" in one
    many = header_line("qwen3-tiny", "/ckpt", 12, 2048, 2080, 3, probe)
    assert "· 12 prompt tokens + 2048 new tokens · capacity 2080 · 3 rounds ·" in many
    assert many.startswith("tfdash bench · qwen3-tiny · /ckpt · ") and many.endswith("4.00 TB/s (d2d copy)")


@pytest.mark.parametrize("cmd", [["open", "{f}"], ["open", "{snap}", "--baseline", "{f}"], ["diff", "{snap}", "{f}"],
                                 ["counters", "--all", "--snapshot", "{f}"]])
def test_a_fifo_where_a_snapshot_belongs_is_refused_without_blocking(tmp_path, cmd):
    """diff and counters --snapshot opened a FIFO and waited for a writer for ever; open said there
    was no such file."""
    import os

    from fixtures.appkit import SNAPSHOT

    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    r = run_tfdash(*(a.format(f=fifo, snap=SNAPSHOT) for a in cmd), timeout=30)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{fifo}: not a regular file (a FIFO, device or socket)")


@pytest.mark.parametrize("cmd", [["open", "{f}"], ["diff", "{f}", "{f}"]])
def test_an_empty_snapshot_file_says_it_is_empty(tmp_path, cmd):
    empty = tmp_path / "run.json"
    empty.write_text("\n")
    r = run_tfdash(*(a.format(f=empty) for a in cmd), timeout=30)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{empty}: is empty, not a snapshot")


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_a_diff_output_that_cannot_be_written_is_said_as_the_other_commands_say_it(tmp_path, flag):
    """`diff --json DIR` said "cannot write DIR: Is a directory", a path under a file "File exists"."""
    from fixtures.appkit import SNAPSHOT

    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), flag, str(tmp_path), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{flag} {tmp_path}: is a directory; give a file name")
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), flag, f"{SNAPSHOT}/out", timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{flag} {SNAPSHOT}/out: cannot write there",
                          f"({SNAPSHOT} is not a writable directory)")


def test_analyze_target_takes_the_files_tfdash_writes(tmp_path):
    """The README said the bandwidth probe writes a target file: its cache was refused as
    "unknown field(s) cpu:..."; a snapshot's target too; a folder was "no such file"; a file
    without a name said "Target.__init__() missing 1 required positional argument"."""
    import json

    from fixtures.appkit import SNAPSHOT

    probe = {"cpu:Test CPU": {"device": "cpu:Test CPU", "bandwidth": 12.5e9, "nbytes": 1 << 28, "reps": 5,
                              "seconds": 0.04, "method": "host memcpy", "measured_at": "2026-01-01T00:00:00Z",
                              "torch_version": "x"}}
    cache = tmp_path / "bandwidth.json"
    cache.write_text(json.dumps(probe))
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(cache), timeout=60)
    assert r.rc == 0, r.stderr
    assert r.stdout.startswith("# analysis target=cpu-measured (0.01 TB/s probe: host memcpy")
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(SNAPSHOT), timeout=60)
    name = json.loads(SNAPSHOT.read_text())["target"]["name"]
    assert r.rc == 0 and r.stdout.startswith(f"# analysis target={name} "), r.stderr
    probe["cuda:x"] = probe["cpu:Test CPU"]
    cache.write_text(json.dumps(probe))
    for target, said in ((cache, "the bandwidth probe's cache holds 2 devices (cpu:Test CPU, cuda:x)"),
                         (tmp_path, f"--target {tmp_path}: is a directory; give h200 or a target JSON file")):
        r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(target), timeout=60)
        assert r.rc == 2 and r.stdout == ""
        assert_one_line_error(r.stderr, said)
    (tmp_path / "t.json").write_text('{"bandwidth": 1e12}')
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(tmp_path / "t.json"), timeout=60)
    assert r.rc == 2
    assert_one_line_error(r.stderr, f"target file {tmp_path / 't.json'}: missing field(s) name")


@pytest.mark.parametrize("variant, said", [
    ("nope", "no plan variant 'nope' (known: tilelang-unfused"),
    ("", "no plan variant ''"),
    ("down:seg=0", "--ab 'down:seg=0': 'seg=0' is not rows=N"),  # it named --gemv, bench's option
])
def test_a_headless_ab_typo_is_one_line_before_the_run(variant, said):
    """`--headless --ab nope` generated every token, then printed "A/B nope: unavailable" and exit 0;
    `--ab ""` was no A/B at all."""
    r = run_tfdash("--headless", "--max-new-tokens", "4", "--ab", variant, timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, said)


@pytest.mark.parametrize("backends", ["", ",", " , "])
def test_bench_with_no_backend_named_is_one_line(backends):
    """`bench --backends ""` passed the checks: on a GPU it would load, probe and print an empty table."""
    r = run_tfdash("bench", "--backends", backends, timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--backends {backends!r} names no backend (known: tilelang-graph")


def test_save_and_export_to_the_same_path_is_refused_before_the_run(tmp_path):
    """The export made the path a folder, then the save failed at the end: exit 2 after the run."""
    same = tmp_path / "run"
    r = run_tfdash("--headless", "--max-new-tokens", "3", "--save", str(same), "--export", f"{same}/", timeout=120)
    assert r.rc == 2 and r.stdout == "" and not same.exists()
    assert_one_line_error(r.stderr, f"--save {same}: is the --export folder too; give --save a file name")


def test_a_one_token_profile_counts_one_step_in_the_singular():
    """`--profile --max-new-tokens 1` said "over 1 steps" twice, as bench said "1 new tokens"."""
    r = run_tfdash("--headless", "--profile", "--max-new-tokens", "1", "--threads", "1", timeout=120)
    assert r.rc == 0, r.stderr
    assert " over 1 step (" in r.stdout and "(p50 over 1 step)" in r.stdout and "1 steps" not in r.stdout
