"""Each subcommand as a new user first runs it on a CPU machine: every bad number, file or flag
is one line and exit 2 before any work, and what a command prints says what it did."""

from __future__ import annotations

import types

import pytest
from conftest import REPO, assert_one_line_error, run_tfdash


@pytest.mark.parametrize("cmd", [["--headless"], ["bench"], ["counters", "--all"]])
def test_a_negative_seed_is_refused_alike_by_every_command(cmd):
    """bench took `--seed -5` (and went on to say it needs a GPU); the others refused it."""
    r = run_tfdash(*cmd, "--seed", "-5", timeout=120)
    assert r.rc == 2 and r.stdout == "" and "Traceback" not in r.stderr
    prog = "tfdash" + ("" if cmd[0].startswith("-") else f" {cmd[0]}")
    # one line, argparse's usage block left out, saying where the help is
    assert r.stderr.strip().splitlines() == [f"{prog}: error: argument --seed: -5 is out of range (0..1099511627775) "
                                             f"(see {prog} --help)"]
    assert "CUDA" not in r.stderr


def test_seed_with_a_checkpoint_is_refused_by_the_dashboard_before_its_screen(ckpt_factory, capsys, monkeypatch):
    """The dashboard's preflight weighed --ckpt without --seed, so `tfdash --ckpt D --seed 3` opened the
    screen and the worker's engine build said the refusal in an error pane. Said before the screen
    now, the headless run's line and exit status."""
    from tfdash.app import main as app_main
    from tfdash.cli import main

    def opened(*a, **kw):
        raise AssertionError("the dashboard's screen was built")

    monkeypatch.setattr(app_main, "live_app", opened)
    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")  # the dashboard, though pytest's stdout is no terminal
    argv = ["--ckpt", str(ckpt_factory(tied=False, sharded=True).path), "--seed", "3", "--max-new-tokens", "2"]
    capsys.readouterr()
    headless = main(["--headless", *argv]), capsys.readouterr()
    dashboard = main(argv), capsys.readouterr()
    assert dashboard == headless
    rc, (out, err) = dashboard
    assert rc == 2 and out == ""
    assert_one_line_error(err, "--seed 3", "give --ckpt or --seed, not both")


@pytest.mark.parametrize("cmd", [["open"], ["diff"], ["diff", "a.json"], ["counters"]])
def test_an_unknown_option_is_named_before_a_missing_argument(cmd, tmp_path):
    """`tfdash open -x` said SNAPSHOT.json was required, not that -x is no option of open."""
    env = {"TFDASH_CACHE_DIR": str(tmp_path)}  # no kept run for open to fall back on
    r = run_tfdash(*cmd, "-x", timeout=60, env=env)
    assert r.rc == 2 and r.stdout == ""
    prog = f"tfdash {cmd[0]}"
    assert r.stderr.splitlines() == [f"{prog}: error: unrecognized arguments: -x (see {prog} --help)"]
    r = run_tfdash(*cmd, timeout=60, env=env)  # with nothing unknown, the missing argument is still said
    line = assert_one_line_error(r.stderr)
    assert r.rc == 2 and ("no snapshot named, and no kept run" if cmd == ["open"] else "required") in line


def test_help_keeps_every_backend_name_whole(capsys, monkeypatch):
    # argparse wrapped at hyphens: "tilelang- eachround", "torch- graph" across two lines
    from tfdash.cli import main
    from tfdash.profiling.bench import BACKENDS

    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(f" {name}," in text or f" {name} " in text or f" {name})" in text for name in BACKENDS), text


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


@pytest.mark.parametrize("cmd", [["open", "{f}"], ["open", "{snap}", "--baseline", "{f}"], ["diff", "{snap}", "{f}"],
                                 ["counters", "--all", "--snapshot", "{f}"]])
def test_a_missing_snapshot_or_an_export_folder_is_said_alike_by_every_command(tmp_path, cmd):
    """`diff A.json /missing.json` said "no such file" where `open /missing.json` said "no such
    snapshot file"; diff and counters named no snapshot.json in an export folder."""
    from fixtures.appkit import SNAPSHOT

    missing = tmp_path / "missing.json"
    r = run_tfdash(*(a.format(f=missing, snap=SNAPSHOT) for a in cmd), timeout=30)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{missing}: no such snapshot file")
    (tmp_path / "snapshot.json").write_text(SNAPSHOT.read_text())
    r = run_tfdash(*(a.format(f=tmp_path, snap=SNAPSHOT) for a in cmd), timeout=30)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{tmp_path}: is a directory, not a snapshot file; "
                                    f"{tmp_path / 'snapshot.json'} is the snapshot in it")


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


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_a_diff_output_in_a_new_folder_says_the_folder_was_made(tmp_path, flag):
    """`diff --markdown no/such/dir/x.md` made the folders as exports do, and said only "# wrote ..."."""
    from fixtures.appkit import SNAPSHOT

    out = tmp_path / "no" / "such" / "x.out"
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), flag, str(out), timeout=60)
    assert r.rc == 0 and out.is_file() and r.stdout.startswith("# A: ")
    # (then the line that says A and B are one run: this test diffs the fixture with itself)
    assert r.stderr.splitlines()[0] == f"# wrote {out} (its folder {out.parent} was created)"
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), flag, str(out), timeout=60)  # there now: replaced
    assert r.rc == 0 and r.stderr.splitlines()[0] == f"# wrote {out} (replacing the file there)"


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
    assert r.stdout.startswith("# analysis target=cpu-measured (12.5 GB/s probe: host memcpy")  # as open says it, not 0.01 TB/s
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(SNAPSHOT), timeout=60)
    name = json.loads(SNAPSHOT.read_text())["target"]["name"]
    assert r.rc == 0 and r.stdout.startswith(f"# analysis target={name} "), r.stderr
    probe["cuda:x"] = probe["cpu:Test CPU"]
    cache.write_text(json.dumps(probe))
    for target, said in ((cache, "the bandwidth probe's cache holds 2 devices (cpu:Test CPU, cuda:x)"),
                         (tmp_path, f"--target {tmp_path}: is a directory; give a GPU's datasheet (h200, h100-sxm, h100-pcie, h100-nvl) or a target JSON file")):
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
    # past the weight's shape (qwen3-tiny's down: K=768) too, but no GEMV setting differs on torch-eager: that first
    ("down:seg=8", "--ab tilelang[down:seg=8] (gemv_overrides.down.seg=8) sets how the tilelang kernels launch; this "
                   "engine is torch-eager, whose two sides would run the same torch ops"),
    ("down:rows=99", "--ab tilelang[down:rows=99] (gemv_overrides.down.rows=99) sets how the tilelang kernels "
                     "launch; this engine is torch-eager"),
    # refused by this engine (the A/B screen's rule): said before the run, not as "unavailable" after it, exit 0
    ("tilelang-nopdl", "--ab tilelang-nopdl (pdl=False) is a tilelang-graph launch setting; this engine is torch-eager"),
    ("tilelang-bf16head", "--ab tilelang-bf16head (lm_head_q8=False) is the plan already running: nothing to compare"),
])
def test_a_headless_ab_typo_is_one_line_before_the_run(variant, said):
    """`--headless --ab nope` generated every token, then printed "A/B nope: unavailable" and exit 0;
    `--ab ""` was no A/B at all; a variant this engine refuses ran the whole generation first.
    A mistake in the variant's own name or spec (bench's --gemv's twin) was a plain line where
    bench's says where the help is; it does too, as the parser's own (`--model qwen3-9b`) do. A
    variant this engine refuses is the engine's word, not the argument's spelling."""
    r = run_tfdash("--headless", "--max-new-tokens", "4", "--ab", variant, timeout=120)
    assert r.rc == 2 and r.stdout == ""
    line = assert_one_line_error(r.stderr, said)
    assert line.endswith(" (see tfdash --help)") == ("this engine is" not in said and "already running" not in said), line


@pytest.mark.parametrize("spec, said", [
    ("down:seg=8", "--ab 'down:seg=8': GEMV setting down:seg=8 is past 3 (down's K=768 is 3 chunks of 256 columns)"),
    ("down:rows=99", "--ab 'down:rows=99': GEMV settings down: rows=99 x seg=3 is 297 16-byte loads in flight a "
                     "lane, past the 63"),
])
def test_an_ab_gemv_setting_past_its_shape_is_a_usage_line_on_the_tilelang_engine(monkeypatch, spec, said):
    """On the tilelang engine (on CUDA) a GEMV setting can differ, so one past its weight's shape is the
    one mistake to say, as the parser says its own; the engine is stood in before any weight loads."""
    import tfdash.engine as engine
    from tfdash.errors import UsageError
    from tfdash.profiling.ab import check_variant, resolve

    real = engine.choose_engine

    def on_cuda(ckpt, model, device, dtype, backend, seed):
        c = real(ckpt, model, "cpu", dtype, "torch-eager", seed)
        return engine.EngineChoice(c.config, c.tokenizer, c.source, "cuda", "bfloat16", "tilelang-graph")

    monkeypatch.setattr(engine, "choose_engine", on_cuda)
    args = types.SimpleNamespace(ckpt=None, model=None, device=None, dtype=None, backend=None, seed=None, ab=spec)
    with pytest.raises(UsageError) as e:
        check_variant(resolve(spec), args)
    assert str(e.value).startswith(said), e.value


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


@pytest.mark.parametrize("name, what", [("trace.json", "its Chrome trace"), ("kernels.csv", "its kernel table"),
                                        ("snapshot.json", "its snapshot")])
def test_save_onto_a_file_the_export_writes_is_refused_before_the_run(tmp_path, capsys, monkeypatch, name, what):
    """`--export out --save out/trace.json`: after the run the save replaced the export's trace with a
    snapshot (the CSV likewise), unsaid. Refused first, however the two paths are spelled."""
    from tfdash.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to("out")  # another way to the same folder
    for save in (f"out/{name}", str(tmp_path / "link" / name), f"out/../out/{name}"):
        rc = main(["--headless", "--device", "cpu", "--model", "qwen3-tiny", "--max-new-tokens", "2",
                   "--export", "out", "--save", save])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and not (tmp_path / "out").exists()
        assert_one_line_error(err, f"--save {save}: is a file the --export writes ({what}); give --save another name")


def test_a_one_token_profile_counts_one_step_in_the_singular():
    """`--profile --max-new-tokens 1` said "over 1 steps" twice, as bench said "1 new tokens". A
    one-token run now runs no step to time (its token is the prompt's), so a two-token run's one-step
    window, taken after its warm-up step, is the one counted."""
    r = run_tfdash("--headless", "--profile", "--max-new-tokens", "2", "--threads", "1", timeout=120)
    assert r.rc == 0, r.stderr
    assert " over 1 step (" in r.stdout and "(p50 over 1 step)" in r.stdout and "1 steps" not in r.stdout


def test_a_sweep_json_too_big_to_load_is_refused_before_any_row(tmp_path):
    """`--sweep ctx_len=0:40959:1 --json` priced for 15 minutes holding every point (~260 KB of JSON
    each, 10 GB in all) in memory, then wrote a file no JSON reader loads: now one line with the
    estimate and a STEP that fits, before the first row."""
    out = tmp_path / "sweep.json"
    r = run_tfdash("analyze", "--sweep", "ctx_len=0:40959:1", "--json", str(out), timeout=60)
    assert r.rc == 2 and r.stdout == "" and not out.exists() and list(tmp_path.iterdir()) == []
    assert_one_line_error(r.stderr, f"--json {out}: the sweep ctx_len=0:40959:1 is 40960 points of about ",
                          "GB of JSON (over 1.00 GB, the most a JSON reader loads); take a larger STEP "
                          "(ctx_len=0:40959:",
                          "or drop --json for the table alone")
    step = int(r.stderr.split("take a larger STEP (ctx_len=0:40959:")[1].split(":")[0])
    assert 2 <= step <= 20


def _peak_rss_kb(*args: str) -> int:
    """The peak resident memory of `python -m tfdash ARGS`, in KB (its own child, alone)."""
    import subprocess
    import sys

    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'tfdash', *sys.argv[1:]], "
            "stdout=subprocess.DEVNULL, check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                       cwd=REPO)
    assert p.returncode == 0, p.stderr
    return int(p.stdout)


def test_a_sweep_holds_one_point_in_memory(tmp_path):
    """Each point was held to the end (as its analysis and its JSON): 150 points of qwen3-1.7b took
    ~400 MB more than one. Now each is written as it is priced, the file still one JSON document."""
    import json

    one = _peak_rss_kb("analyze", "--sweep", "ctx_len=0:0:1", "--json", str(tmp_path / "one.json"))
    many = _peak_rss_kb("analyze", "--sweep", "ctx_len=0:149:1", "--json", str(tmp_path / "many.json"))
    assert many - one < 100_000, (one, many)
    reports = json.loads((tmp_path / "many.json").read_text())["reports"]
    assert [x["ctx_len"] for x in reports] == list(range(150)) and reports[0]["target"]["name"] == "h200"


def test_a_long_sweep_says_its_size_up_front_and_its_progress(tmp_path, monkeypatch):
    """A sweep estimated past LONG_S says its points, time and JSON size before the first row, then
    how many points are done and left and the time to go, every PROGRESS_S."""
    import io

    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.profiling import sweep_run
    from tfdash.profiling.targets import H200

    ticks = iter(range(0, 10**6, 7))  # each clock reading 7 s after the last: a slow machine
    out, err = io.StringIO(), io.StringIO()
    plan = build_plan(preset("qwen3-tiny"), "bfloat16", 64)
    sweep_run.run_sweep(plan, H200, 0, 20, 1, str(tmp_path / "s.json"), out, err, clock=lambda: next(ticks))
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("# sweep: 21 points, about 2 min, about ") and lines[0].endswith(
        " of JSON; progress every 30 s")
    assert lines[1] == "# sweep: 5/21 points done, 16 left, about 2 min to go"  # 35 s in, 7 s a point
    assert lines[2:] == ["# sweep: 10/21 points done, 11 left, about 77 s to go",
                         "# sweep: 15/21 points done, 6 left, about 42 s to go",
                         "# sweep: 20/21 points done, 1 left, about 7 s to go"]
    assert len(out.getvalue().splitlines()) == 2 + 21


@pytest.mark.parametrize("argv, said", [
    (["--max-new-tokens", "40960"], "prompt (12 tokens) + max-new-tokens (40960) = 40972 is past "
                                    "max_position_embeddings=40960"),
    (["--model", "qwen3-tiny", "--capacity", "64", "--max-new-tokens", "100"], "past the cache capacity of 64"),
    (["--capacity", "999999"], "--capacity 999999 is past max_position_embeddings=40960"),
    (["--model", "qwen3-tiny", "--also-capacity", "8193"], "--also-capacity 8193 is past max_position_embeddings=8192"),
    # the 64 it named was 8 in whole attention blocks, said for --capacity, not for --also-capacity
    (["--also-capacity", "8"], "--also-capacity 8 (whole attention blocks: 64): prompt (12 tokens) + max-new-tokens "
                               "(2048) = 2060 needs 2059 KV positions, past the cache capacity of 64"),
    # named neither the flag nor that 10 became whole attention blocks
    (["--capacity", "10"], "--capacity 10 (whole attention blocks: 64): prompt (12 tokens) + max-new-tokens (2048)"),
    # a GEMV setting past its weight's shape was accepted (its kernel would unroll 99999999999 chunks)
    (["--gemv", "down:seg=99999999999"], "GEMV setting down:seg=99999999999 is past 24 (down's K=6144 is 24 chunks "
                                         "of 256 columns)"),
    (["--gemv", "o_proj:blocks_per_sm=9"], "GEMV setting o_proj:blocks_per_sm=9 is past 8 (an SM holds at most 8 of "
                                           "its 256-thread blocks)"),
    (["--gemv", "gate_up:rows=12288"], "GEMV settings gate_up: rows=12288 x seg="),  # N's own: still 12288 unrolled
    (["--gemv", "down:rows=3,seg=24"], "GEMV settings down: rows=3 x seg=24 is 72 16-byte loads in flight a lane, "
                                       "past the 63 its 255 registers hold (4 each)"),
])
def test_bench_lengths_are_checked_before_the_device(argv, said):
    """A --max-new-tokens past the model or an --also-capacity too small for the run was said only
    on a GPU, after "needs a CUDA device" on any other machine; a cache past the model's positions
    was clamped to them there, its row still named after the number given."""
    r = run_tfdash("bench", *argv, timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, said)


@pytest.mark.parametrize("tui", ["", "1"])
def test_open_refuses_an_export_dir_it_cannot_write_before_it_shows_anything(tmp_path, tui):
    """`open --export-dir FILE` printed the summary (or opened the dashboard) and the bad folder was
    found only at the first export; said now as `--headless --export` says it, before either."""
    from fixtures.appkit import SNAPSHOT

    env = {"TFDASH_FORCE_TUI": tui, "TFDASH_CONFIG_DIR": str(tmp_path)}
    for where, said in ((SNAPSHOT, f"--export-dir {SNAPSHOT}: exists and is not a directory"),
                        (f"{SNAPSHOT}/out", f"--export-dir {SNAPSHOT}/out: cannot write there ({SNAPSHOT} is not a "
                                            "writable directory)")):
        r = run_tfdash("open", str(SNAPSHOT), "--export-dir", str(where), timeout=60, env=env)
        assert r.rc == 2 and r.stdout == ""
        assert_one_line_error(r.stderr, said)


@pytest.mark.parametrize("cmd", [["analyze"], ["--headless", "--max-new-tokens", "2"]])
@pytest.mark.parametrize("kind", ["dir", "link", "fifo"])
def test_a_config_json_that_is_no_file_is_said_as_it_is(tmp_path, cmd, kind):
    """A folder, a dangling link (a Hugging Face cache whose blob is gone) or a FIFO named
    config.json was "DIR has no config.json"."""
    import os

    path = tmp_path / "config.json"
    said = {"dir": f"{path}: is a directory, not a file",
            "link": f"{path}: a link to ../blobs/gone, which does not exist",
            "fifo": f"{path}: not a regular file (a FIFO, device or socket)"}[kind]
    {"dir": path.mkdir, "link": lambda: path.symlink_to("../blobs/gone"), "fifo": lambda: os.mkfifo(path)}[kind]()
    r = run_tfdash(*cmd, "--ckpt", str(tmp_path), timeout=120)
    assert r.rc == 2 and r.stdout == "" and "has no config.json" not in r.stderr
    assert_one_line_error(r.stderr, said)


@pytest.mark.parametrize("field, value, said", [
    ("sms", "many", "target x: sms must be a whole number of SMs (0: not known), got 'many'"),
    ("l2_bytes", -1, "target x: l2_bytes must be a whole number of bytes (0: not known), got -1"),
    ("smem_per_block", 1.5, "target x: smem_per_block must be a whole number of bytes (0: not known), got 1.5"),
    ("name", 7, "name must be a non-empty string, got 7"),
    ("name", "", "name must be a non-empty string, got ''"),
])
def test_a_target_files_fields_are_type_checked(tmp_path, field, value, said):
    """`"sms": "many"` was taken as a target (and a geometry later divided by it)."""
    import json

    f = tmp_path / "t.json"
    f.write_text(json.dumps({"name": "x", "bandwidth": 1e12, field: value}))
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(f), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"target file {f}: {said}")


def test_an_analyze_sweep_file_is_a_target_when_it_records_one(tmp_path):
    """A sweep's --json was refused as "unknown field(s) reports, schema"; its points record the
    target they were priced against."""
    import json

    base = tmp_path / "target.json"
    base.write_text(json.dumps({"name": "mine", "bandwidth": 2e12, "sms": 100}))
    swept = tmp_path / "sweep.json"
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(base), "--sweep", "ctx_len=0:4:2",
                   "--json", str(swept), timeout=60)
    assert r.rc == 0, r.stderr
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(swept), timeout=60)
    assert r.rc == 0 and r.stdout.startswith("# analysis target=mine (2.00 TB/s datasheet) "), r.stderr
    swept.write_text(json.dumps({"schema": "tfdash.analysis-sweep/1", "reports": []}))
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(swept), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"target file {swept}: a 'tfdash.analysis-sweep/1' file that records no target")


@pytest.mark.parametrize("cmd, flag", [(["analyze", "--model", "qwen3-tiny"], "--json"),
                                       (["--headless", "--max-new-tokens", "2"], "--save"),
                                       (["diff", "{snap}", "{snap}"], "--markdown")])
def test_an_output_file_named_with_a_trailing_slash_is_refused(tmp_path, cmd, flag):
    """`--json out/` (a folder, as the user wrote it) wrote a file named `out`."""
    from fixtures.appkit import SNAPSHOT

    out = f"{tmp_path}/out/"
    r = run_tfdash(*(a.format(snap=SNAPSHOT) for a in cmd), flag, out, timeout=120,
                   env={"TFDASH_CONFIG_DIR": str(tmp_path / "cfg")})
    assert r.rc == 2 and r.stdout == "" and not (tmp_path / "out").exists()
    assert_one_line_error(r.stderr, f"{flag} {out}: names a folder (it ends in /); give a file name")


def test_analyze_operands_with_a_sweep_is_said_not_ignored():
    """`--sweep ... --operands` printed the sweep's table as if --operands had not been given."""
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--sweep", "ctx_len=0:4:1", "--operands", timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "--operands splits the launches of one step (--dim); a --sweep row is")


def test_a_hugging_face_cache_folder_names_the_checkpoint_inside_it(tmp_path):
    """`--ckpt ~/.cache/huggingface/hub/models--Qwen--Qwen3-1.7B` said only "has no config.json":
    the checkpoint is its snapshots/HASH folder."""
    model = tmp_path / "models--Qwen--Qwen3-1.7B"
    (model / "snapshots" / "abc123").mkdir(parents=True)
    (model / "snapshots" / "abc123" / "config.json").write_text("{}")
    r = run_tfdash("analyze", "--ckpt", str(model), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{model} has no config.json; the Hugging Face cache's checkpoint in it is "
                                    f"{model / 'snapshots' / 'abc123'}")


def test_a_hugging_face_model_id_names_its_downloaded_copy_or_how_to_get_one(tmp_path):
    """`--ckpt Qwen/Qwen3-8B` said only that the folder does not exist: the line now reads it as a
    Hugging Face model id, naming the copy in the hub's cache (the snapshot refs/main names), else
    how to download one."""
    hub = tmp_path / "hub"
    env = {"HF_HUB_CACHE": str(hub)}
    r = run_tfdash("analyze", "--ckpt", "Qwen/Qwen3-8B", timeout=60, env=env)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "checkpoint directory Qwen/Qwen3-8B does not exist; if Qwen/Qwen3-8B is a "
                                    "Hugging Face model id, download it (hf download Qwen/Qwen3-8B --local-dir DIR)")
    model = hub / "models--Qwen--Qwen3-8B"
    for commit in ("old1", "new2"):
        (model / "snapshots" / commit).mkdir(parents=True)
        (model / "snapshots" / commit / "config.json").write_text("{}")
    (model / "refs").mkdir()
    (model / "refs" / "main").write_text("new2\n")
    r = run_tfdash("analyze", "--ckpt", "Qwen/Qwen3-8B", timeout=60, env=env)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "as a Hugging Face model id, Qwen/Qwen3-8B's downloaded copy is "
                                    f"{model / 'snapshots' / 'new2'}")
    r = run_tfdash("analyze", "--ckpt", "no/such/folder", timeout=60, env=env)
    assert r.rc == 2 and r.stderr.strip().endswith("checkpoint directory no/such/folder does not exist")


def test_a_sweep_json_past_the_free_disk_is_refused_with_a_step_that_fits(tmp_path, monkeypatch):
    """A sweep that would fill the disk failed at the end, after the whole sweep; now it says so first."""
    import collections

    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.errors import TfdashError
    from tfdash.profiling import sweep_run
    from tfdash.profiling.targets import H200

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(sweep_run.shutil, "disk_usage", lambda where: usage(1, 1, 300_000))
    plan = build_plan(preset("qwen3-tiny"), "bfloat16", 64)
    with pytest.raises(TfdashError, match=r"is 11 points of about .* \(over 300.00 KB, free in .*\); take a larger "
                                          r"STEP \(ctx_len=0:10:2: 6 points, about .*\) or drop --json"):
        sweep_run.run_sweep(plan, H200, 0, 10, 1, str(tmp_path / "s.json"))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(sweep_run.shutil, "disk_usage", lambda where: usage(1, 1, 1000))
    with pytest.raises(TfdashError, match=r"free some space there or drop --json for the table alone"):
        sweep_run.run_sweep(plan, H200, 0, 10, 1, str(tmp_path / "s.json"))


def test_save_over_an_earlier_exports_snapshot_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    """`--save e1/snapshot.json` after `--export e1` replaced the export's snapshot and left its trace
    and CSV beside a snapshot of another run. Refused before the run, headless and dashboard alike;
    the export is as it was, and `--export e1` still replaces all three."""
    from tfdash.cli import main

    monkeypatch.chdir(tmp_path)
    tiny = ["--device", "cpu", "--model", "qwen3-tiny", "--max-new-tokens", "2", "--threads", "1"]
    assert main(["--headless", *tiny, "--export", "e1"]) == 0
    capsys.readouterr()
    before = {p.name: p.read_bytes() for p in (tmp_path / "e1").iterdir()}
    assert sorted(before) == ["kernels.csv", "snapshot.json", "trace.json"]
    said = ("--save e1/snapshot.json: is an export's snapshot, with its trace.json and kernels.csv beside it; "
            "--export e1 replaces all three, or give --save another name")
    rc = main(["--headless", *tiny, "--save", "e1/snapshot.json"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "", (out, err)
    assert_one_line_error(err, said)
    from tfdash.app.main import preflight
    from tfdash.errors import TfdashError

    args = type("Args", (), dict(ckpt=None, model="qwen3-tiny", device="cpu", dtype=None, backend=None,
                                 prompt="hello", save="e1/snapshot.json"))()
    with pytest.raises(TfdashError) as e:  # the dashboard's check before its run
        preflight(args, 2)
    assert str(e.value) == said
    assert {p.name: p.read_bytes() for p in (tmp_path / "e1").iterdir()} == before
    (tmp_path / "e1" / "trace.json").unlink()  # a snapshot beside its CSV alone is still an export's
    rc = main(["--headless", *tiny, "--save", "e1/snapshot.json"])
    assert rc == 2 and "with its kernels.csv beside it;" in capsys.readouterr().err
    (tmp_path / "e1" / "kernels.csv").unlink()  # a snapshot.json alone is anyone's: replaced, and said so
    assert main(["--headless", *tiny, "--save", "e1/snapshot.json"]) == 0
    assert "(replacing the snapshot of the run recorded " in capsys.readouterr().out
