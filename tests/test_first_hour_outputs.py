"""A demanding new user's files and arguments on a CPU machine: an output never lands on a file the
command reads nor on a run's snapshot; every command takes an empty, `~` or `-` path, a command after
an option and a misplaced flag as the others do; untrusted names are shown, never sent to the
terminal; and the README's examples print as it shows them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_line_error, read_json, run_tfdash
from fixtures.appkit import SNAPSHOT


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
@pytest.mark.parametrize("side", ["A", "B"])
def test_a_diff_written_over_one_of_its_snapshots_is_refused(tmp_path, flag, side):
    """`tfdash diff a.json b.json --json b.json` wrote the diff over b.json: the run's snapshot was
    gone, and the next `tfdash open b.json` said "not a tfdash snapshot"."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    shutil.copy(SNAPSHOT, a)
    shutil.copy(SNAPSHOT, b)
    out = a if side == "A" else b
    before = out.read_bytes()
    r = run_tfdash("diff", str(a), str(b), flag, str(out), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{flag} {out}: is snapshot {side}, which this command reads")
    assert out.read_bytes() == before
    link = tmp_path / "link.json"  # the same file by another name is the same file
    link.symlink_to(b)
    r = run_tfdash("diff", str(a), str(b), flag, str(link), timeout=60)
    assert r.rc == 2 and b.read_bytes() == before
    assert_one_line_error(r.stderr, "is snapshot B")
    r = run_tfdash("diff", str(a), str(b), flag, str(tmp_path / "d.out"), timeout=60)  # another file: written
    assert r.rc == 0 and (tmp_path / "d.out").is_file()


def test_an_analyze_report_written_over_its_target_file_is_refused(tmp_path):
    """`analyze --target run.json --json run.json` replaced the snapshot it took the target from."""
    snap = tmp_path / "run.json"
    shutil.copy(SNAPSHOT, snap)
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(snap), "--json", str(snap), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--json {snap}: is the --target file, which this command reads")
    assert read_json(snap)["schema"] == "tfdash.snapshot"


@pytest.mark.parametrize("cmd", [["--headless"], ["bench"], ["analyze"], ["counters", "--all"]])
def test_an_empty_model_name_is_said_as_an_empty_ckpt_is(cmd):
    """`--model ""` (a script's `--model "$MODEL"` with MODEL unset) ran the default shape without a
    word, where `--ckpt ""` was refused."""
    r = run_tfdash(*cmd, "--model", "", "--max-new-tokens" if cmd == ["--headless"] else "--seed", "2",
                   timeout=120)
    assert r.rc == 2 and r.stdout == ""
    line = assert_one_line_error(r.stderr, "argument --model: '' is empty: give a preset (qwen3-0.6b,")
    assert "CUDA" not in line and "GPU" not in line


def test_an_empty_target_name_is_said_so():
    """`analyze --target ""` said the empty name "is a directory" (it read as the current folder)."""
    r = run_tfdash("analyze", "--target", "", timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "--target '' is empty: give a GPU's datasheet (h200, h100-sxm, h100-pcie, h100-nvl) or a target JSON file")


def test_one_row_left_out_by_top_is_said_in_the_singular():
    """`diff --top N` one row short of all said "(1 more rows; ...)" and "1 more rows not shown."."""
    whole = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--group", "family", timeout=60)
    rows = [line for line in whole.stdout.splitlines() if not line.startswith("#")][1:]  # past the column heads
    assert whole.rc == 0 and len(rows) >= 2
    top = str(len(rows) - 1)
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--group", "family", "--top", top, timeout=60)
    assert r.rc == 0 and r.stdout.splitlines()[-1] == "(1 more row; --top 0 shows all)"
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--group", "family", "--top", top, "--markdown", timeout=60)
    assert r.rc == 0 and r.stdout.splitlines()[-1] == "1 more row not shown."


@pytest.mark.parametrize("backend", ["torch-graph", "tilelang-graph"])
def test_a_gpu_backend_on_a_host_without_one_says_so_at_once(backend):
    """`tfdash --headless --backend tilelang-graph` said it "needs --device cuda"; adding it only
    brought the next refusal, "--device cuda: no CUDA device is available"."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a host without CUDA")
    r = run_tfdash("--headless", "--backend", backend, "--max-new-tokens", "2", timeout=120)
    assert r.rc == 2 and r.stdout == ""
    line = assert_one_line_error(r.stderr, f"backend {backend} needs a CUDA device and this host has none",
                                 "--backend torch-eager")
    assert "--device cuda" not in line


@pytest.mark.parametrize("text, said", [("[" * 200_000 + "]" * 200_000, "(nested too deeply)"),
                                        ('{"bandwidth": ' + "9" * 5000 + "}", "(Exceeds the limit (4300 digits)")],
                         ids=["nested", "long-number"])
def test_a_target_file_python_cannot_parse_is_one_line(tmp_path, text, said):
    """`analyze --target F` with F nested past the recursion limit, or holding a 5000-digit number,
    ended in a RecursionError or ValueError traceback (`open` and `diff` said one line of the same files)."""
    f = tmp_path / "target.json"
    f.write_text(text)
    r = run_tfdash("analyze", "--target", str(f), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"target file {f}: cannot read JSON {said}")


def test_open_on_a_dumb_terminal_prints_the_summary_as_the_run_goes_headless(capsys, monkeypatch):
    """`tfdash open run.json` in an editor's shell buffer (a terminal, TERM=dumb) drew the dashboard's
    escape codes there, where `tfdash` itself runs --headless."""
    import sys

    from textual.app import App

    from tfdash.cli import main

    monkeypatch.delenv("TFDASH_FORCE_TUI", raising=False)
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal, but one that cannot draw
    monkeypatch.setattr(App, "run", lambda self, *a, **k: pytest.fail("drew the dashboard on TERM=dumb"))
    assert main(["open", str(SNAPSHOT)]) == 0
    cap = capsys.readouterr()
    assert "tfdash: TERM=dumb cannot draw the dashboard; printing a summary of the snapshot" in cap.err
    assert cap.out.startswith(f"snapshot {SNAPSHOT}: ")


def _readme_block(command: str) -> list[str]:
    """The lines the README shows under `$ COMMAND`, up to the end of its code block."""
    from conftest import REPO

    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(f"$ {command}") + 1
    return lines[start:lines.index("```", start)]


def test_the_readme_analyze_example_prints_as_shown():
    """The README's `analyze` example showed the step's writes 8 bytes short (2259056) and a smaller
    footprint: it predated argmax stamping the clock beside each token (ring_ns)."""
    shown = _readme_block("tfdash analyze --model qwen3-1.7b --dim ctx_len=0 | head -5")
    r = run_tfdash("analyze", "--model", "qwen3-1.7b", "--dim", "ctx_len=0", timeout=120)
    assert r.rc == 0 and r.stdout.splitlines()[:5] == shown


def test_json_dash_is_stdout_in_every_command_as_in_diff(tmp_path):
    """`tfdash analyze --json - | jq` wrote a file named `-` in the working directory and piped the
    table into jq, where `tfdash diff A B --json -` printed the JSON."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    r = subprocess.run([sys.executable, "-m", "tfdash", "analyze", "--model", "qwen3-tiny", "--json", "-"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0 and not (tmp_path / "-").exists()
    assert json.loads(r.stdout)["schema"] == "tfdash.analysis/1"  # the JSON alone, the table on stderr
    assert r.stderr.splitlines()[-1] == "# wrote /dev/stdout"


def test_an_export_folder_as_the_target_names_its_snapshot_as_open_does(tmp_path):
    """`analyze --target runs/x` (the --export folder, not its snapshot.json) said only "is a
    directory", where open, diff and counters name the snapshot in it."""
    shutil.copy(SNAPSHOT, tmp_path / "snapshot.json")
    r = run_tfdash("analyze", "--target", str(tmp_path), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--target {tmp_path}: is a directory; give a GPU's datasheet (h200, h100-sxm, h100-pcie, h100-nvl) or a target JSON file; "
                                    f"{tmp_path / 'snapshot.json'} is the snapshot in it")
    r = run_tfdash("analyze", "--target", str(tmp_path / "snapshot.json"), "--model", "qwen3-tiny", timeout=60)
    assert r.rc == 0  # and that file is a target


@pytest.mark.parametrize("name, what", [("trace.json", "Chrome trace"), ("kernels.csv", "kernel table (CSV)")])
def test_an_exports_trace_or_csv_as_the_target_names_the_snapshot_beside_it(tmp_path, name, what):
    """`analyze --target out/trace.json` (an export's other file) said "unknown field(s)
    displayTimeUnit, otherData, traceEvents", the CSV "cannot read JSON": open and diff name the
    snapshot beside them, which records the target."""
    from tfdash.profiling.export import export_all, load_snapshot

    export_all(load_snapshot(SNAPSHOT), tmp_path)
    r = run_tfdash("analyze", "--target", str(tmp_path / name), "--model", "qwen3-tiny", timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"target file {tmp_path / name}: is an export's {what}, not a tfdash snapshot; "
                                    f"{tmp_path / 'snapshot.json'} is the snapshot beside it")


def test_counters_json_over_its_snapshot_is_refused_before_the_host_is_asked(tmp_path):
    """`counters --snapshot run.json --json run.json` wrote the table's JSON over the snapshot, then
    failed to put the counters into it: the run's snapshot was lost after minutes of profiling."""
    snap = tmp_path / "run.json"
    shutil.copy(SNAPSHOT, snap)
    r = run_tfdash("counters", "--all", "--snapshot", str(snap), "--json", str(snap), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--json {snap}: is the --snapshot file, which this command reads")
    assert read_json(snap)["schema"] == "tfdash.snapshot"


@pytest.mark.parametrize("argv, cmd", [(["--threads", "1", "analyze"], "analyze"),
                                       (["--headless", "open", "run.json"], "open")])
def test_a_command_after_an_option_says_the_command_goes_first(argv, cmd):
    """`tfdash --threads 1 analyze` said only "unrecognized arguments: analyze"."""
    r = run_tfdash(*argv, timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "unrecognized arguments: ", f"(a command goes first: tfdash {cmd} [its options])")
    r = run_tfdash("--bogus", timeout=60)  # no command among them: as before
    assert r.stderr.strip() == "tfdash: error: unrecognized arguments: --bogus (see tfdash --help)"


def test_a_file_saved_under_the_home_as_typed_is_read_back_as_typed(tmp_path):
    """`--save=~/run.json` (the shell leaves a ~ after `=`) wrote the home's run.json, and
    `open --baseline=~/run.json`, `diff`, `analyze --target` and `counters --snapshot` then said
    "no such snapshot file" of the same spelling."""
    home = {"HOME": str(tmp_path)}
    r = run_tfdash("--headless", "--max-new-tokens", "2", "--threads", "1", "--save=~/run.json", env=home)
    assert r.rc == 0 and (tmp_path / "run.json").is_file()
    for argv in (["open", "~/run.json"], ["open", "~/run.json", "--baseline=~/run.json"],
                 ["diff", "~/run.json", "~/run.json"], ["analyze", "--model", "qwen3-tiny", "--target=~/run.json"]):
        r = run_tfdash(*argv, env=home, timeout=60)
        assert r.rc == 0 and "no such" not in r.stderr, (argv, r.stderr)
    r = run_tfdash("counters", "--all", "--snapshot=~/missing.json", env=home, timeout=60)
    assert_one_line_error(r.stderr, f"{tmp_path / 'missing.json'}: no such snapshot file")
    r = run_tfdash("--headless", "--ckpt=~/no-ckpt", env=home, timeout=60)
    assert_one_line_error(r.stderr, f"checkpoint directory {tmp_path / 'no-ckpt'} does not exist")


@pytest.mark.parametrize("form", [[], ["--markdown"]])
def test_a_diff_shows_a_snapshots_control_characters_rather_than_sending_them(tmp_path, form):
    """`tfdash diff` printed a snapshot's launch names and file names as they were: an escape in one
    (`\\x1b[2J`) cleared the terminal, where `open` shows such a character as a placeholder."""
    raw = read_json(SNAPSHOT)
    raw["kernels"][0]["role"] = "L0.\x1b[2Jqkv_proj"
    evil = tmp_path / "run\x1b]0;title\x07.json"
    evil.write_text(json.dumps(raw))
    r = run_tfdash("diff", str(SNAPSHOT), str(evil), *form, timeout=60)
    assert r.rc == 0 and "L0." in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "\u241b[2Jqkv_proj" in r.stdout  # shown, as open shows it


def test_analyze_shows_a_checkpoint_folders_control_characters(tmp_path):
    """The model's name is its checkpoint folder's: `analyze --ckpt $'ck\\x1b[2J'` cleared the terminal
    in the report's first line (and in a sweep's)."""
    from tfdash.engine.config import PRESETS
    from tfdash.engine.names import hf_config

    ckpt = tmp_path / "ck\x1b[2J"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({**hf_config(PRESETS["qwen3-tiny"]).to_dict(),
                                                   "architectures": ["Qwen3ForCausalLM"]}))
    for extra in ([], ["--sweep", "ctx_len=0:1:1"]):
        r = run_tfdash("analyze", "--ckpt", str(ckpt), *extra, timeout=60)
        assert r.rc == 0 and "\x1b" not in r.stdout
        assert "model=ck\u241b[2J " in r.stdout.splitlines()[0]


@pytest.mark.parametrize("argv", [["diff", "--markdown", "{old}", "{a}", "{b}"],
                                  ["diff", "{a}", "{b}", "--json", "{old}"],
                                  ["analyze", "--model", "qwen3-tiny", "--json", "{old}"],
                                  ["bench", "--json", "{old}"], ["counters", "--all", "--json", "{old}"]])
def test_a_report_never_replaces_a_runs_snapshot(tmp_path, argv):
    """`tfdash diff --markdown old.json a.json b.json` took old.json as --markdown's OUT and wrote the
    table over that run's snapshot; so did any --json naming a snapshot (bench's and counters' after
    minutes of measuring, in their file check before it)."""
    files = {k: tmp_path / f"{k}.json" for k in ("old", "a", "b")}
    for f in files.values():
        shutil.copy(SNAPSHOT, f)
    r = run_tfdash(*(x.format(**files) for x in argv), timeout=120)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{files['old']}: is a run's snapshot; a report never replaces one")
    assert files["old"].read_bytes() == SNAPSHOT.read_bytes()


@pytest.mark.parametrize(("name", "kind"), [("trace.json", "Chrome trace"), ("kernels.csv", "kernel table (CSV)")])
def test_a_report_never_replaces_an_exports_trace_or_csv(tmp_path, name, kind):
    """`tfdash diff a.json b.json --json out/trace.json` wrote the diff over the export's Chrome trace,
    unsaid: the folder then held one run's snapshot and CSV beside a diff."""
    from tfdash.profiling.export import export_all, load_snapshot

    paths = export_all(load_snapshot(SNAPSHOT), tmp_path / "out")
    target = tmp_path / "out" / name
    before = target.read_bytes()
    for flag in ("--json", "--markdown"):
        r = run_tfdash("diff", str(SNAPSHOT), str(paths["snapshot"]), flag, str(target), timeout=60)
        assert r.rc == 2 and r.stdout == ""
        assert_one_line_error(r.stderr, f"{target}: is a run's {kind}; a report never replaces one")
    assert target.read_bytes() == before


def test_a_report_is_written_again_over_its_own_last_copy(tmp_path):
    out = tmp_path / "d.json"
    for _ in range(2):  # the second time over the first's diff: a report, not a snapshot
        r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--json", str(out), timeout=60)
        assert r.rc == 0 and read_json(out)["schema"] == "tfdash.diff"


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_a_flag_before_the_snapshots_says_it_took_the_first_as_its_file(tmp_path, flag):
    """`tfdash diff --json a.json b.json` said "the following arguments are required: B.json" of a
    command given both snapshots: --json had taken a.json as its OUT file."""
    a = tmp_path / "a.json"
    shutil.copy(SNAPSHOT, a)
    r = run_tfdash("diff", flag, str(a), str(SNAPSHOT), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, "required: B.json", f"({flag} took {a} as its OUT file: put it after the two "
                          f"snapshots, or write {flag}=OUT)")
    assert a.read_bytes() == SNAPSHOT.read_bytes()
    r = run_tfdash("diff", str(a), timeout=60)  # no flag took it: as before
    assert r.stderr.strip() == "tfdash diff: error: the following arguments are required: B.json (see tfdash diff --help)"


def test_a_cache_of_one_position_is_said_in_the_singular():
    """`analyze --capacity 1 --dim ctx_len=1` said "the KV cache capacity of 1 positions"."""
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--capacity", "1", "--dim", "ctx_len=1", timeout=60)
    assert r.rc == 2
    assert_one_line_error(r.stderr, "ctx_len=1 is past the KV cache capacity of 1 position (largest ctx_len is 0)")


@pytest.mark.parametrize("argv, said", [
    (["--headless", "--max-new-tokens", "1", "--save", ""], "tfdash: error: argument --save: '' is empty: give a path"),
    (["--headless", "--max-new-tokens", "1", "--export", ""], "tfdash: error: argument --export: '' is empty"),
    (["analyze", "--json", ""], "tfdash analyze: error: argument --json: '' is empty: give a path"),
    (["diff", "{snap}", "{snap}", "--markdown", ""], "tfdash diff: error: argument --markdown: '' is empty"),
    (["open", "{snap}", "--export-dir", ""], "tfdash open: error: argument --export-dir: '' is empty"),
    (["counters", "--all", "--snapshot", ""], "argument --snapshot: '' is empty: give a snapshot file"),
    (["open", ""], "tfdash open: error: argument SNAPSHOT.json: '' is empty: give a snapshot file"),
    (["diff", "", "{snap}"], "tfdash diff: error: argument A.json: '' is empty: give a snapshot file"),
    # '-' wrote a file called '-' where a report's --json - is stdout
    (["--headless", "--max-new-tokens", "1", "--save", "-"], "tfdash: error: argument --save: '-' is no file here"),
    (["--headless", "--max-new-tokens", "1", "--export", "-"], "tfdash: error: argument --export: '-' is no file"),
    (["open", "{snap}", "--export-dir", "-"], "tfdash open: error: argument --export-dir: '-' is no file here")])
def test_an_empty_path_is_said_never_taken_as_none(argv, said):
    """`--save "$OUT"` with OUT unset ran and wrote no snapshot, unsaid (so did --export, --json,
    --markdown and --export-dir, and counters --snapshot); an empty snapshot to read was "., is a
    directory"."""
    r = run_tfdash(*(a.format(snap=SNAPSHOT) for a in argv), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, said)


def test_top_holds_for_the_json_as_for_the_text():
    """`diff --json --top 3` printed every row: --top held for the text and the Markdown only."""
    whole = json.loads(run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--group", "op", "--json", timeout=60).stdout)
    assert "rows_left_out" not in whole and len(whole["rows"]) > 3
    r = run_tfdash("diff", str(SNAPSHOT), str(SNAPSHOT), "--group", "op", "--json", "--top", "3", timeout=60)
    top = json.loads(r.stdout)
    assert top["rows"] == whole["rows"][:3] and top["rows_left_out"] == len(whole["rows"]) - 3


def test_a_report_is_never_written_over_a_file_of_the_checkpoint_it_reads(ckpt_copy):
    """`analyze --ckpt D --json D/config.json` replaced the checkpoint's config with the report."""
    d = ckpt_copy()
    before = (d / "config.json").read_bytes()
    r = run_tfdash("analyze", "--ckpt", str(d), "--json", str(d / "config.json"), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--json {d / 'config.json'}: is the checkpoint's config.json, which this "
                                    "command reads")
    assert (d / "config.json").read_bytes() == before
    r = run_tfdash("analyze", "--ckpt", str(d), "--json", str(d / "report.json"), timeout=60)  # a new file there is fine
    assert r.rc == 0, r.stderr
    assert json.loads((d / "report.json").read_text())


def test_a_checkpoint_folder_that_cannot_be_listed_still_guards_its_files(ckpt_copy, monkeypatch):
    """A folder that can be searched but not listed (mode 311): analyze reads its config.json by name,
    and the check of --json against the folder's files was a PermissionError traceback."""
    from tfdash.errors import TfdashError
    from tfdash.profiling.files import check_not_a_snapshot

    d = ckpt_copy()

    def unlisted(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", unlisted)
    with pytest.raises(TfdashError, match="is the checkpoint's config.json, which this command reads"):
        check_not_a_snapshot(d / "config.json", "--json", d)
    check_not_a_snapshot(d / "report.json", "--json", d)  # a new file there is fine


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "model.safetensors"])
def test_a_saved_snapshot_is_never_written_over_a_file_of_the_checkpoint_it_runs(ckpt_copy, name):
    """`tfdash --headless --ckpt D --save D/config.json` wrote the snapshot over the checkpoint's
    config (or its weights, or its tokenizer), and the next run of D failed to load it. The reports'
    --json were refused so; --save, of the headless run and the dashboard alike, is refused too."""
    from tfdash.app.main import preflight
    from tfdash.cli import run_parser
    from tfdash.errors import TfdashError

    d = ckpt_copy()
    before = (d / name).read_bytes()
    r = run_tfdash("--headless", "--ckpt", str(d), "--max-new-tokens", "2", "--save", str(d / name), timeout=60)
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"--save {d / name}: is the checkpoint's {name}, which this command reads")
    assert (d / name).read_bytes() == before
    args = run_parser().parse_args(["--ckpt", str(d), "--save", str(d / ".." / d.name / name)])
    with pytest.raises(TfdashError, match=f"is the checkpoint's {name}"):  # the dashboard's check before its screen
        preflight(args, 2)
    assert (d / name).read_bytes() == before
    r = run_tfdash("--headless", "--ckpt", str(d), "--max-new-tokens", "2", "--save", str(d / "run.json"), timeout=60)
    assert r.rc == 0 and read_json(d / "run.json")["schema"] == "tfdash.snapshot"  # a new file there is fine
