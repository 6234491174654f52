"""What a new user meets first on the command line: `tfdash open` without a terminal, the help
and version without torch, the backends listed, exports that follow the umask, the bandwidth
probe's line only when it probes, `analyze`'s default model said out loud, torch's CPU threads
chosen on purpose and shown, a bad knob's one line, and a checkpoint's header."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.appkit import SNAPSHOT, build_snapshot

REPO = Path(__file__).resolve().parents[1]


def _env(tmp_path, **extra):
    return {**os.environ, "PYTHONPATH": str(REPO), "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"),
            "TFDASH_CACHE_DIR": str(tmp_path / "cache"), **extra}


@pytest.mark.skipif(sys.platform != "linux", reason="a pty")
def test_open_with_stdout_to_a_file_prints_a_summary_and_exits(tmp_path):
    """stdin and stderr on a terminal, stdout to a file: a summary, exit 0, well within 10 s."""
    import pty

    master, slave = pty.openpty()
    out = tmp_path / "out.txt"
    env = _env(tmp_path, TERM="xterm-256color")
    env.pop("TFDASH_FORCE_TUI", None)
    t0 = time.monotonic()
    with open(out, "w") as f:
        p = subprocess.Popen([sys.executable, "-m", "tfdash", "open", str(SNAPSHOT)], stdin=slave, stdout=f,
                             stderr=slave, cwd=REPO, env=env)
        try:
            rc = p.wait(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
            os.close(slave)
            os.close(master)
    assert rc == 0 and time.monotonic() - t0 < 10
    text = out.read_text()
    assert "\x1b[" not in text  # no screen drawn into the file
    assert "qwen3-1.7b" in text and "tok/s over the whole generation" in text
    assert "top 10 kernels by measured time" in text and "gemv_gate_up" in text


def test_help_and_version_do_not_import_torch(tmp_path):
    code = ("import sys; from tfdash.cli import main\n"
            "for argv in (['--help'], ['--version']):\n"
            "    try: main(argv)\n"
            "    except SystemExit: pass\n"
            "print('torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(tmp_path),
                       timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "False"
    assert "--threads" in p.stdout


def test_bench_help_lists_the_backends(capsys):
    from tfdash.profiling.bench import BACKENDS, parser

    text = re.sub(r"-\s+", "-", " ".join(parser().format_help().split()))  # argparse may wrap at a hyphen
    for b in BACKENDS:
        assert b in text
    assert "Needs a CUDA device" in text
    from tfdash.defaults import DEFAULT_PROMPT

    for flag, default in (("--max-new-tokens N", "(default 2048)"), ("--seed SEED", "(default 0)"),
                          ("--prompt PROMPT", f"(default: {DEFAULT_PROMPT!r})")):
        said = text.split(f" {flag} ", 1)[1].split(" --", 1)[0]  # the option's own help
        assert said.strip() and default in said, (flag, said)


def _parsers():
    from tfdash.app.main import open_parser
    from tfdash.cli import run_parser
    from tfdash.profiling import analyze_cli, bench_args, counters_cli, diff_cli

    return {"tfdash": run_parser(), "open": open_parser(), "analyze": analyze_cli.parser(),
            "bench": bench_args.parser(), "diff": diff_cli.parser(), "counters": counters_cli.parser()}


def _flat(text: str) -> str:
    return re.sub(r"-\s+", "-", " ".join(text.split()))  # argparse may wrap at a hyphen


def test_the_readmes_ab_examples_say_where_they_run_as_the_help_does():
    """The README's `--ab` row gave `down:seg=8` with no engine: a GEMV spec runs only on the
    tilelang engine on CUDA (on the CPU's torch engine it is refused), as --help says. Its examples
    are --help's, each with where it runs."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [row] = [line for line in readme.splitlines() if line.startswith("| `tfdash --headless --ab")]
    [ab] = [a for a in _parsers()["tfdash"]._actions if "--ab" in a.option_strings]
    for spec in re.findall(r"down:seg=\d+", ab.help):
        assert f"`{spec}` on the tilelang engine, on CUDA" in row, row
    assert "`tilelang-unfused` on any engine" in row and "down:seg=8" not in row, row


def test_every_option_of_every_help_is_in_the_readme_and_says_what_it_does():
    """Each command's --help against the README's command line section: an option the help shows
    is named there, and has a help line of its own (analyze's --dtype had none)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## The command line"):readme.index("## The dashboard")]
    for cmd, p in _parsers().items():
        for a in p._actions:
            for opt in (o for o in a.option_strings if o.startswith("--") and o != "--help"):
                assert re.search(re.escape(opt) + r"(?![\w-])", section), (cmd, opt)
                assert a.help, (cmd, opt)


def test_counters_help_shows_launch_or_all_required_as_its_usage_error_and_the_readme_say(capsys):
    """`tfdash counters --help` showed `[--launch ROLE | --all]`, optional, where the README says
    `(--launch ROLE ... | --all)` and leaving both out is an error: the help was printed by the parse
    that looks for unknown arguments, which runs with nothing required."""
    from tfdash.cli import main

    with pytest.raises(SystemExit) as done:
        main(["counters", "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("usage: tfdash counters [-h] (--launch ROLE | --all) ")
    assert r"`tfdash counters (--launch ROLE ... \| --all)" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_helps_footer_writes_opens_snapshot_as_optional(capsys):
    """`tfdash --help` ended "Other commands: tfdash open SNAPSHOT.json | ...", though without one
    open reads the newest kept run (its own usage: `tfdash open [SNAPSHOT.json]`)."""
    from tfdash.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = _flat(capsys.readouterr().out)
    assert done.value.code == 0 and "Other commands: tfdash open [SNAPSHOT.json] | tfdash analyze" in out, out


def test_every_key_of_a_binding_the_help_lists_is_in_the_readmes_keys():
    """The help lists each key a binding answers to (`esc / ⌫` goes back, `+ / =` zooms in, `del / x`
    drops the baseline), where the README's Keys named only esc, + and x."""
    from textual.app import App

    from tfdash.app import bindings

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    keys = readme[readme.index("**Keys**"):readme.index("## How the numbers are measured")]
    app = App()
    shown = {(b.id, k.strip()) for table in bindings.SCOPES.values() for b in table if "," in b.key
             for k in bindings.describe_key(b.key, app).split(" / ")}
    assert sorted((bid, k) for bid, k in shown if f"`{k}`" not in keys) == []


def test_every_binding_the_help_lists_is_in_the_readmes_keys_by_its_key_and_its_id():
    """The A/B box's `tab` (ab.ops: between the variants and the per-op table) was on the help
    screen and in the footer but not in the README's Keys, and neither were the ids of the picker's
    and the A/B box's keys, though the Keys say every binding's id can be remapped. Each key the
    help shows is there, and each id, itself or as its group's `prefix.*`."""
    from textual.app import App

    from tfdash.app import bindings

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    keys = readme[readme.index("**Keys**"):readme.index("## How the numbers are measured")]
    named = set(re.findall(r"(?<![\w.])([a-z]\w*(?:\.[\w*]+)*)(?![\w.])", keys))
    app = App()
    found = [b for table in bindings.SCOPES.values() for b in table if b.id]
    assert len(found) > 40  # the walk found the tables
    missing_keys = sorted((b.id, k.strip()) for b in found for k in bindings.describe_key(b.key, app).split(" / ")
                          if f"`{k.strip()}`" not in keys)
    parts = {b.id: b.id.split(".") for b in found}
    missing_ids = sorted(i for i, p in parts.items()
                         if i not in named and not any(".".join(p[:n]) + ".*" in named for n in range(1, len(p))))
    assert missing_keys == [] and missing_ids == [], (missing_keys, missing_ids)


def test_the_profiling_packages_docstring_lists_every_file_as_the_readme_says():
    """The README's Layout sends a reader to tfdash/profiling's package docstring, which "lists every
    file": diff.py, diff_cli.py, counters_cli.py and eight more were not in it."""
    import tfdash.profiling as profiling

    assert "(its package docstring lists every file)" in _flat((REPO / "README.md").read_text(encoding="utf-8"))
    here = Path(profiling.__file__).parent
    names = [f.name + "/" if f.is_dir() else f.name for f in sorted(here.iterdir())
             if not f.name.startswith("__") and (f.is_dir() or f.suffix in (".py", ".c"))]
    assert [n for n in names if not re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w])", profiling.__doc__)] == []


def test_the_help_and_the_readme_say_the_defaults_the_commands_use():
    """--max-new-tokens said 256 headless where --ab runs 1024; bench's --capacity said attention's
    grid covers the capacity, where it stops growing at 32 programs a kv head (the README's words);
    counters' --timeout default was in its help only."""
    from tfdash.defaults import AB_MAX_NEW, DASHBOARD_MAX_NEW, HEADLESS_MAX_NEW
    from tfdash.profiling.counters import RUN_TIMEOUT_S

    helps = {cmd: _flat(p.format_help()) for cmd, p in _parsers().items()}
    readme = _flat((REPO / "README.md").read_text(encoding="utf-8"))
    assert (f"(default {HEADLESS_MAX_NEW} headless, {AB_MAX_NEW} with --ab, {DASHBOARD_MAX_NEW} in the "
            "dashboard)") in helps["tfdash"]
    assert (f"`--max-new-tokens N` ({HEADLESS_MAX_NEW} headless, {AB_MAX_NEW} with `--ab`, {DASHBOARD_MAX_NEW} "
            "in the dashboard)") in readme
    assert "a larger cache launches no more" in helps["bench"] and "a larger cache launches no more" in readme
    assert f"after S seconds (default {RUN_TIMEOUT_S:g})" in helps["counters"]
    assert f"`--timeout S` stops one ncu run after S seconds, default {RUN_TIMEOUT_S:g}" in readme


def test_exports_follow_the_umask(tmp_path):
    from tfdash.app import exports

    snap = build_snapshot()
    old = os.umask(0o022)
    try:
        for kind in ("snapshot", "csv", "trace"):
            path = exports.write(kind, snap, tmp_path / f"x{exports.KINDS[kind]}")
            assert path.stat().st_mode & 0o777 == 0o644, kind
        os.umask(0o027)
        path = exports.write("csv", snap, tmp_path / "y.csv")
        assert path.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def _tiny_engine(threads=None):
    from tfdash.engine import load_engine

    return load_engine(model="qwen3-tiny", device="cpu", threads=threads)


def test_probe_line_only_when_it_probes(tmp_path, monkeypatch):
    from tfdash.profiling import probe
    from tfdash.profiling.session import Session, Status

    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path))
    eng = _tiny_engine(threads=1)
    probe._store(probe.ProbeResult(probe.cpu_name(), 12.5e9, 256 << 20, 5, 0.04, "host memcpy",
                                   "2026-11-29T00:00:00Z", "x"))
    msgs = []
    Session(eng, "a b c", 2, nvml=False).run(msgs.append)
    texts = [m.text for m in msgs if isinstance(m, Status)]
    assert not any("probing" in t for t in texts), texts
    assert Session(eng, "a b", 1, nvml=False).snapshot() is not None


def test_analyze_without_model_says_what_it_prices(capsys):
    from tfdash.profiling.analyze_cli import main

    assert main(["--dim", "ctx_len=0"]) == 0
    err = capsys.readouterr().err
    assert "pricing qwen3-1.7b (no --model)" in err
    import torch

    if not torch.cuda.is_available():
        assert "runs qwen3-tiny" in err and "--model qwen3-tiny" in err


# -- torch's CPU threads --------------------------------------------------------------------------
RUN = ["--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "2"]


@pytest.mark.parametrize("env, says", [("TFDASH_STATE_ARENA=abc", "want a whole number (default 4096)"),
                                       ("TFDASH_STATE_ARENA=100", "want 0 (off) or a multiple of 512"),
                                       ("TFDASH_ATTN_ILP=of", "want on or off"),  # was silently on
                                       # knobs only CUDA reads: passed silently on CPU
                                       ("TFDASH_DEPTH=abc", "want a whole number (default 48)"),
                                       ("TFDASH_DEPTH=0", "want 1 to 63"), ("TFDASH_DEPTH=64", "want 1 to 63"),
                                       ("TFDASH_CONTINUOUS_STEPS=-1", "want at least 2"),
                                       ("TFDASH_TIMING=bogus", "want auto, continuous, windows"),
                                       ("TFDASH_OVERLAP_WINDOWS=x", "want on or off"),
                                       # these named the plan's option (attn_trigger_at='foo'), not the variable
                                       ("TFDASH_ATTN_TRIGGER_AT=foo", "want empty, dependency, values (default empty)"),
                                       ("TFDASH_ATTN_SPLIT_CAP=0", "want at least 1 (default 32)"),
                                       ("TFDASH_ATTN_MERGE_CHUNK=65", "want 0 to 64 (default 0)")])
@pytest.mark.parametrize("mode", [["--headless", *RUN], RUN, ["analyze", "--model", "qwen3-tiny"],  # analyze ignored
                                  ["counters", "--all", "--model", "qwen3-tiny"]])  # TFDASH_PDL=of
def test_a_bad_knob_is_one_line(capsys, monkeypatch, env, says, mode):
    from tfdash import cli
    from tfdash.cli import main

    name, _, value = env.partition("=")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")  # the dashboard: checked before it starts (stubbed here)
    monkeypatch.setattr(cli, "run_dashboard", lambda args: 0)
    code = main(mode)
    out, err = capsys.readouterr()
    assert code != 0 and f"{name}" in err and says in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if "error" in ln]) == 1 and out == ""


@pytest.mark.parametrize("sub", [[], ["analyze"]])
def test_a_removed_knob_is_one_warning_and_the_run_goes_on(capsys, monkeypatch, sub):
    from tfdash.cli import main
    from tfdash.settings import REMOVED_KNOBS, SETTINGS

    assert not set(REMOVED_KNOBS) & {k.env for k in SETTINGS.KNOBS.values()}  # removed means not a knob
    monkeypatch.setenv("TFDASH_LM_HEAD_PICK_AHEAD", "0")  # the pick's first form, gone: it would run the other
    run = [] if sub else ["--headless", "--device", "cpu", "--max-new-tokens", "2"]
    code = main([*sub, "--model", "qwen3-tiny", *run])
    out, err = capsys.readouterr()
    warned = [ln for ln in err.splitlines() if "warning" in ln]
    assert code == 0 and out and "Traceback" not in err
    assert warned == ["tfdash: warning: TFDASH_LM_HEAD_PICK_AHEAD is set but has no effect: the int8 head's "
                      "pick has one form, the one that loads its bounds ahead"]


def test_a_mistyped_variable_is_one_warning_naming_the_nearest_and_the_run_goes_on(capsys, monkeypatch):
    from tfdash.cli import main

    monkeypatch.setenv("TFDASH_PREFIL", "0")  # TFDASH_PREFILL=0 meant, and nothing said it changed nothing
    monkeypatch.setenv("TFDASH_ZZZ", "1")
    code = main(["analyze", "--model", "qwen3-tiny"])
    out, err = capsys.readouterr()
    assert code == 0 and out and "Traceback" not in err
    assert [ln for ln in err.splitlines() if "warning" in ln] == [
        "tfdash: warning: TFDASH_PREFIL is set but tfdash reads no such variable (did you mean TFDASH_PREFILL?)",
        "tfdash: warning: TFDASH_ZZZ is set but tfdash reads no such variable (the README's Knobs section lists them)"]


def test_every_tfdash_variable_the_repository_spells_is_one_tfdash_reads():
    """What the warning above takes as known covers every TFDASH_ name in the code, scripts, tests
    and README, so a variable the test suite or a device script sets is never warned about."""
    from tfdash.settings import OTHER_VARIABLES, REMOVED_KNOBS, SETTINGS

    root = Path(__file__).resolve().parents[1]
    files = [*root.glob("tfdash/**/*.py"), *root.glob("scripts/*"), *root.glob("tests/**/*.py"), root / "README.md"]
    spelled = {m for f in files if f.is_file() for m in re.findall(r"TFDASH_[A-Z0-9_]*[A-Z0-9]", f.read_text())}
    known = {k.env for k in SETTINGS.KNOBS.values()} | set(REMOVED_KNOBS) | set(OTHER_VARIABLES)
    assert "TFDASH_PDL" in spelled and "TFDASH_CACHE_DIR" in spelled
    assert spelled - known - {"TFDASH_PREFIL", "TFDASH_ZZZ"} == set()


def test_knob_ranges_are_the_codes():
    from tfdash.engine.memory import GRANULE
    from tfdash.engine.runtime import RING
    from tfdash.profiling.session_timing import MODES
    from tfdash.settings import SETTINGS

    assert SETTINGS.KNOBS["depth"].high == RING - 1  # Generation keeps at most RING - 1 steps in flight
    assert set(SETTINGS.KNOBS["timing"].choices) == set(MODES)
    assert SETTINGS.KNOBS["state_arena"].multiple == GRANULE  # the arena's check at allocation (memory.carve)


def test_choose_threads_leaves_cores_spare():
    from tfdash.engine.threads import MAX_AUTO, choose_threads

    assert choose_threads(cores=2, env={})[0] == 1
    assert choose_threads(cores=2, ui=True, env={})[0] == 1
    assert choose_threads(cores=4, env={})[0] == 3 and choose_threads(cores=4, ui=True, env={})[0] == 2
    assert choose_threads(cores=1, ui=True, env={})[0] == 1
    assert choose_threads(cores=64, env={})[0] == MAX_AUTO
    assert choose_threads(3, cores=2, env={}) == (3, "--threads")
    assert choose_threads(cores=8, env={"OMP_NUM_THREADS": "2"}) == (2, "OMP_NUM_THREADS")
    # set but not one count: the automatic count, and the header says why the variable was not taken
    assert choose_threads(cores=2, env={"OMP_NUM_THREADS": "abc"}) == (
        1, "of 2 cores, 1 left spare; OMP_NUM_THREADS='abc' is not one count")
    assert choose_threads(cores=4, env={"OMP_NUM_THREADS": "4,2"})[1].endswith("OMP_NUM_THREADS='4,2' is not one count")


def test_omp_num_threads_not_a_count_is_said_by_tfdash_alone(tmp_path):
    """OMP_NUM_THREADS=abc printed libgomp's raw "Invalid value" line (torch loads libgomp on import)
    before tfdash's note; the value is taken out of the environment before torch loads, and the note stays."""
    p = subprocess.run([sys.executable, "-m", "tfdash", "--headless", "--max-new-tokens", "2"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env(tmp_path, OMP_NUM_THREADS="abc"),
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "libgomp" not in p.stderr
    assert "OMP_NUM_THREADS='abc' is not one count" in p.stderr


def test_threads_option_sets_torch_and_shows_in_the_header(capsys):
    import torch

    from tfdash.cli import main

    n = torch.get_num_threads()
    try:
        assert main(["--headless", "--model", "qwen3-tiny", "--device", "cpu", "--threads", "2",
                     "--max-new-tokens", "2"]) == 0
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(n)
    err = capsys.readouterr().err
    assert "2 threads (--threads)" in err


def test_threads_past_the_cores_is_one_warning_line(capsys, monkeypatch):
    """More threads than cores ran silently, each step many times slower (999 on 2 cores: a 542 ms
    first token against 8 ms): it still runs as asked, and one stderr line says why it is slow."""
    import torch

    from tfdash.cli import main
    from tfdash.engine import threads

    monkeypatch.setattr(threads, "available_cores", lambda: 1)  # 2 threads on a host of one core
    n = torch.get_num_threads()
    try:
        assert main(["--headless", "--model", "qwen3-tiny", "--device", "cpu", "--threads", "2",
                     "--max-new-tokens", "2"]) == 0
    finally:
        torch.set_num_threads(n)
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warned == ["tfdash: warning: --threads 2 is more than the 1 core this process may use: every op waits "
                      "for the extra threads' time slices, so each step slows down (use at most 1)"], warned
    assert threads.oversubscribed(2, "--threads", cores=2) == ""  # as many as the cores: nothing said
    assert threads.oversubscribed(8, "of 16 cores, 1 left spare", cores=2) == ""  # tfdash's own count


def test_threads_on_a_gpu_run_is_said_to_change_nothing():
    """A CUDA run has no CPU thread count: --threads given to one is said, not dropped unseen."""
    from tfdash.engine import threads

    assert threads.oversubscribed(*threads.gpu_threads(4)) == (
        "--threads sets the CPU engine's threads; this run's step is on the GPU, so it changes nothing")
    assert threads.gpu_threads(None) == (None, "") and threads.oversubscribed(None, "") == ""


def test_bad_threads_is_one_line(capsys):
    from tfdash.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--headless", "--threads", "0"])
    assert e.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_too_many_threads_is_one_line_not_a_segfault(capsys):
    """torch.set_num_threads(100000) kills the process (SIGSEGV); 20000 aborts in libgomp."""
    from tfdash.cli import main
    from tfdash.engine.threads import choose_threads
    from tfdash.errors import ConfigError

    with pytest.raises(SystemExit) as e:
        main(["--headless", "--threads", "100000", "--max-new-tokens", "0"])  # refused before it can run
    assert e.value.code == 2 and "--threads: 100000 is more than 1024" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS=100000: at most 1024 threads"):
        choose_threads(env={"OMP_NUM_THREADS": "100000"})


# One decode the way `tfdash --headless [--threads 1]` runs it, in a process of its own (no thread
# or heap left behind by earlier tests): 16 warm-up tokens, then 512 measured (a p99 over a few
# steps that a burst of the VM's own steal slows says nothing); its step p50/p99.
_BUSY_CORE_RUN = """
import json, sys, torch
from tfdash.engine import load_engine
from tfdash.engine.threads import choose_threads
requested = None if sys.argv[1] == "default" else int(sys.argv[1])
eng = load_engine(model="qwen3-tiny", device="cpu", threads=requested)
assert torch.get_num_threads() == choose_threads(requested)[0]
for _ in eng.generate("The GPU", 16, ignore_eos=True):
    pass
gen = eng.generate("The GPU", 512, ignore_eos=True)
for _ in gen:
    pass
st = gen.stats
print(json.dumps({"p50": st.ms_per_step_p50, "p99": st.ms_per_step_p99, "summary": st.summary()}))
"""


@pytest.mark.slow
@pytest.mark.serial  # a third busy process (a test on the other core) is not the contention measured
def test_default_and_threads_keep_p99_under_3x_p50_beside_a_busy_core():
    """Another process spins on a core; qwen3-tiny's step p99 stays under 3x its p50, with the
    default choice and with --threads 1, each decoding in a fresh process as the CLI does. Each
    engine first decodes 16 tokens: the thread pool's first steps after a change of threads
    (one-off, 15-65 ms on a 2-core host) are not the contention this is about. A run that misses
    is measured once more (a shared 2-core runner has bursts of its own); both must miss to fail."""
    import json

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        for requested in ("default", "1"):
            seen = []
            for _ in range(2):  # once more after a miss: the shared runner's own bursts are not the engine's
                out = subprocess.run([sys.executable, "-c", _BUSY_CORE_RUN, requested], capture_output=True,
                                     text=True, timeout=240, check=True)
                st = json.loads(out.stdout.strip().splitlines()[-1])
                seen.append(st["summary"])
                if st["p99"] < 3 * st["p50"]:
                    break
            assert st["p99"] < 3 * st["p50"], (requested, seen)
    finally:
        busy.kill()
        busy.wait()


# -- the header -------------------------------------------------------------------------------
def test_a_checkpoints_header_names_it_once_with_its_path_and_dtypes():
    from tfdash.app.screens.main import describe_run

    snap = build_snapshot()
    model = {**snap.meta.model, "name": "ckpt2", "dtype": "bfloat16"}
    meta = dataclasses.replace(snap.meta, checkpoint="/data/models/ckpt2", model=model, dtype="float32",
                               backend="torch-eager", gpu=None, device="cpu", threads=1)
    line = describe_run(dataclasses.replace(snap, meta=meta))
    assert line.count("ckpt2") == 1 and "/data/models/ckpt2" in line
    assert "bf16 weights run as f32" in line and "1 thread " in line + " "
    random = describe_run(snap)
    assert random.startswith("qwen3-1.7b · random weights") and "weights run as" not in random


# -- stdout gone ----------------------------------------------------------------------------------
def test_a_reader_that_goes_away_stops_the_run_quietly(tmp_path):
    """`tfdash --headless | head -c 10`: exit as a tool killed by SIGPIPE does, no traceback."""
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--headless", "--max-new-tokens", "2000", "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=_env(tmp_path))
    try:
        assert p.stdout.read(10)
        p.stdout.close()
        err = p.stderr.read().decode()
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 141 and "Traceback" not in err and "Error" not in err, err


@pytest.mark.parametrize("args", [["--model", "qwen3-32b"], ["--model", "qwen3-tiny", "--sweep", "ctx_len=0:8000:10"]],
                         ids=["report", "sweep"])
def test_a_json_to_stdout_whose_reader_goes_away_stops_quietly(tmp_path, args):
    """`tfdash analyze --json - | head -1`: the JSON's writer turned the broken pipe into
    "tfdash: error: cannot write /dev/stdout: Broken pipe", exit 2, where the text's stops quietly
    with 141, as a tool killed by SIGPIPE does."""
    err_file = tmp_path / "stderr"  # the table goes there, more than a pipe holds before the JSON is read
    with open(err_file, "wb") as err_out:
        p = subprocess.Popen([sys.executable, "-m", "tfdash", "analyze", *args, "--json", "-"], stdout=subprocess.PIPE,
                             stderr=err_out, cwd=REPO, env=_env(tmp_path))
        try:
            assert p.stdout.read(1) == b"{"
            p.stdout.close()
            rc = p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
    err = err_file.read_text()
    assert rc == 141 and "error" not in err and "Traceback" not in err, err


def test_a_closed_stdout_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "tfdash", "--headless", "--max-new-tokens", "2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env(tmp_path),
                       timeout=60, preexec_fn=lambda: os.close(1))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == ["tfdash: error: stdout is closed; redirect it to a file or /dev/null"]


@pytest.mark.parametrize("argv, rc", [(["--headless", "--ckpt", "/nowhere"], 2),  # an error line went to stdout
                                      (["--headless", "--max-new-tokens", "0"], 2),  # argparse's usage too
                                      (["--headless", "--max-new-tokens", "2", "--threads", "1"], 0)])
def test_a_closed_stderr_never_writes_into_stdout(tmp_path, argv, rc):
    """`2>&-`: Python has no sys.stderr, and print(file=None) writes to stdout. The lines are lost
    instead; the exit status still says what happened."""
    p = subprocess.run([sys.executable, "-m", "tfdash", *argv], stdout=subprocess.PIPE, text=True, cwd=REPO,
                       env=_env(tmp_path), timeout=60, preexec_fn=lambda: os.close(2))
    assert p.returncode == rc
    assert "tfdash" not in p.stdout and "usage" not in p.stdout  # neither an error nor the description line
    assert rc or re.search(r"prompt 12 tokens taken in chunks in [\d.]+ ms, 2 new$", p.stdout.rstrip().splitlines()[-1])


def test_a_stderr_nobody_reads_is_a_quiet_non_zero_exit(tmp_path):
    """stderr a pipe whose reader went away: the error line failed with a traceback (exit 1)."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "tfdash", "--headless", "--ckpt", "/nowhere"], stdout=subprocess.PIPE,
                           stderr=w, text=True, cwd=REPO, env=_env(tmp_path), timeout=60)
    finally:
        os.close(w)
    assert p.returncode == 2 and p.stdout == ""


# -- outputs checked before the work ------------------------------------------------------------
@pytest.mark.parametrize("cmd", [["bench", "--model", "qwen3-tiny"], ["counters", "--all"],
                                 ["analyze", "--model", "qwen3-tiny"]])
def test_a_json_that_cannot_be_written_is_refused_before_the_work(capsys, tmp_path, cmd):
    """bench and counters measure for minutes, a long sweep too: a --json under a file was found
    only at the end (and bench and counters first said they need a GPU, hiding it)."""
    from tfdash.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    assert main([*cmd, "--json", str(blocker / "out.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"tfdash: error: --json {blocker / 'out.json'}: cannot write there" in err


def test_the_readme_says_a_baseline_is_compared_by_shape_and_dtype():
    """The Keys' `b` row said "another model or dtype is refused" and `open` asked for "a baseline of
    the same model": a baseline is compared by the model's shape and the dtype run in, so the same
    shape under another name (a checkpoint in another folder) compares. The README says so where it
    offers a baseline, and its diff section names each config field that is not compared."""
    from tfdash.profiling.diff import NOT_THE_SHAPE

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    b_row = next(line for line in readme.splitlines() if line.startswith("| `b` | baseline |"))
    open_row = next(line for line in readme.splitlines() if line.startswith("| `tfdash open "))
    for row in (b_row, open_row):
        assert "same shape and dtype" in row and "another model" not in row and "same model" not in row, row
    diff = _flat(readme[readme.index("Compares two snapshots (Δ = B − A)"):readme.index("`--force` compares")])
    said = {"name": "checkpoint's name", "eos_token_ids": "end-of-text tokens",
            "dtype": "the dtype the checkpoint was saved in"}
    assert set(said) == set(NOT_THE_SHAPE) and all(w in diff for w in said.values()), diff
    assert "models of different shapes, or run in different dtypes, are refused" in diff, diff
