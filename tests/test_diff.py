"""`tfdash diff A.json B.json`: two snapshots recorded on CPU from two plan variants (the default,
which fuses q/k norm + RoPE into attention, and fused_rope=False, which gives it a launch per
layer), compared launch by launch; refusals and bad input are one line and exit 2."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from conftest import assert_one_line_error, run_tfdash
from profiling_support import MICRO

from tfdash.cli import main
from tfdash.engine import Engine
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.engine.weights import load_weights
from tfdash.profiling import probe
from tfdash.profiling.diff import compare
from tfdash.profiling.export import load_snapshot, write_snapshot
from tfdash.profiling.session import Session

TARGET = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")
CFG = dataclasses.replace(MICRO, name="qwen3-micro2", num_layers=2)


def record(path, **plan_options):
    """A real CPU run of CFG's plan with `plan_options`, one profile window, written to `path`."""
    plan = build_plan(CFG, "float32", capacity=256, **plan_options)
    rt = Runtime(plan, load_weights(CFG, None, torch.float32, "cpu", 0), "cpu")
    eng = Engine(CFG, plan, rt, StandInTokenizer(CFG.vocab_size), "random", "cpu", "torch-eager")
    s = Session(eng, "hello world", 12, target=TARGET, ignore_eos=True, nvml=False)
    s.request_profile(4)
    s.run()
    snap = s.snapshot()
    assert snap.profile_windows == 1
    write_snapshot(snap, path)
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    d = tmp_path_factory.mktemp("diff")
    try:
        yield record(d / "fused.json"), record(d / "unfused.json", fused_rope=False)
    finally:
        torch.set_num_threads(n)


def diff_json(capsys, *args) -> dict:
    assert main(["diff", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def raw_kernels(path) -> dict[str, dict]:
    return {k["role"]: k for k in json.loads(path.read_text())["kernels"]}


def test_every_launch_aligned_and_the_unfused_launches_added(pair, capsys):
    a, b = pair
    d = diff_json(capsys, a, b)
    assert d["schema"] == "tfdash.diff" and d["version"] == 1
    assert d["group"] == "launch" and d["aligned_by"] == "role" and not d["forced"]
    ka, kb = raw_kernels(a), raw_kernels(b)
    assert set(kb) - set(ka) == {"L0.qk_norm_rope", "L1.qk_norm_rope"} and set(ka) <= set(kb)
    rows = {r["label"]: r for r in d["rows"]}
    assert len(d["rows"]) == len(kb)  # nothing dropped
    assert {r["label"] for r in d["rows"] if r["status"] == "matched"} == set(ka) and d["matched"] == len(ka)
    assert sorted(d["added"]) == ["L0.qk_norm_rope", "L1.qk_norm_rope"] and d["removed"] == []
    for role in ka:  # matched launch by launch: each side is that role's row of its own file
        r = rows[role]
        assert r["a"]["members"] == [ka[role]["index"]] and r["b"]["members"] == [kb[role]["index"]]
        assert r["delta_ns"] == kb[role]["measured_p50_ns"] - ka[role]["measured_p50_ns"]  # exactly B − A
        assert r["delta_pct"] == pytest.approx(100 * r["delta_ns"] / ka[role]["measured_p50_ns"])
        assert r["predicted_delta_ns"] == pytest.approx(kb[role]["predicted_ns"] - ka[role]["predicted_ns"])
        assert r["a"]["bytes"] == ka[role]["bytes_read"] + ka[role]["bytes_written"]
        assert r["b"]["gap"] == pytest.approx(kb[role]["measured_p50_ns"] / kb[role]["predicted_ns"])
    for role in ("L0.qk_norm_rope", "L1.qk_norm_rope"):  # the added launch: all of B's time is Δ
        r = rows[role]
        assert r["status"] == "added" and r["a"] is None and r["delta_pct"] is None
        assert r["delta_ns"] == kb[role]["measured_p50_ns"]
    assert rows["L0.attention"]["kernel_changed"]  # the fused attention is another kernel
    # Δs add up to the kernel sums' difference, and rows are sorted by |Δ|
    assert sum(r["delta_ns"] for r in d["rows"]) == pytest.approx(d["b"]["kernel_sum_ns"] - d["a"]["kernel_sum_ns"])
    mags = [abs(r["delta_ns"]) for r in d["rows"]]
    assert mags == sorted(mags, reverse=True)
    sa, sb = load_snapshot(a), load_snapshot(b)
    assert d["a"]["step_ns"] == sa.roofline.measured_step_ns and d["b"]["launches"] == len(sb.kernels)
    assert d["step"]["delta_ns"] == pytest.approx(sb.roofline.measured_step_ns - sa.roofline.measured_step_ns)
    assert d["step"]["tok_s_delta"] == pytest.approx(sb.tok_per_s - sa.tok_per_s)
    assert d["step"]["pct_ceiling_delta"] == pytest.approx(sb.roofline.pct_ceiling - sa.roofline.pct_ceiling)


def test_two_export_folders_are_told_apart_by_their_folders(pair, capsys, tmp_path):
    # every export writes snapshot.json: by file name alone both sides read "snapshot.json"
    for side, src in zip("ab", pair):
        (tmp_path / f"run-{side}").mkdir()
        (tmp_path / f"run-{side}" / "snapshot.json").write_bytes(src.read_bytes())
    assert main(["diff", str(tmp_path / "run-a" / "snapshot.json"), str(tmp_path / "run-b" / "snapshot.json")]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert head[0].startswith("# A: run-a/snapshot.json (") and head[1].startswith("# B: run-b/snapshot.json (")
    from tfdash.profiling.export import snapshot_label

    assert snapshot_label(pair[0]) == "fused.json"  # a file of its own name keeps just that


def test_two_snapshots_of_one_name_are_told_apart_by_the_folders_that_differ(pair, capsys, tmp_path):
    """Two files of one name outside export folders (the README's dashboard/snapshot-h200.json and
    dashboard-after-engine/snapshot-h200.json) both read "# A: snapshot-h200.json" / "# B:
    snapshot-h200.json". Each is named with as many of its folders as tell the two apart."""
    from tfdash.profiling.export import snapshot_labels

    for folder, src in zip(("dashboard", "dashboard-after-engine"), pair):
        (tmp_path / "s3" / folder).mkdir(parents=True)
        (tmp_path / "s3" / folder / "snapshot-h200.json").write_bytes(src.read_bytes())
    a, b = (str(tmp_path / "s3" / f / "snapshot-h200.json") for f in ("dashboard", "dashboard-after-engine"))
    assert main(["diff", a, b]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert head[0].startswith("# A: dashboard/snapshot-h200.json ("), head
    assert head[1].startswith("# B: dashboard-after-engine/snapshot-h200.json ("), head
    assert snapshot_labels("x/run/s.json", "y/run/s.json") == ("x/run/s.json", "y/run/s.json")
    assert snapshot_labels("x/a.json", "y/b.json") == ("a.json", "b.json")  # names that differ keep just them
    assert snapshot_labels("r1/snapshot.json", "r2/snapshot.json") == ("r1/snapshot.json", "r2/snapshot.json")
    assert snapshot_labels("s.json", "./s.json") == ("s.json", "s.json")  # one file given twice


def test_the_readme_shows_what_its_diff_of_two_recorded_runs_prints(capsys, monkeypatch):
    """The README's `tfdash diff` of session 3's two H200 snapshots shows that command's output: the
    lines under the command are what it prints, the header's names included."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    at = readme.index("$ tfdash diff benchmarks/2026-11-29/session3/dashboard/snapshot-h200.json")
    command, shown = readme[at:readme.index("```", at)].split("\n", 1)  # the command spans two lines
    rest, shown = shown.split("\n", 1)
    argv = [w for w in (command + rest).removeprefix("$ tfdash ").split() if w != "\\"]
    if not all((root / a).exists() for a in argv if a.endswith(".json")):
        pytest.skip("the recorded snapshots are not in this checkout")
    monkeypatch.chdir(root)
    assert main(argv) == 0
    assert capsys.readouterr().out == shown


def test_the_other_way_round_they_are_removed(pair, capsys):
    a, b = pair
    d = diff_json(capsys, b, a)
    assert sorted(d["removed"]) == ["L0.qk_norm_rope", "L1.qk_norm_rope"] and d["added"] == []
    removed = [r for r in d["rows"] if r["status"] == "removed"]
    assert all(r["b"] is None and r["delta_ns"] == pytest.approx(-r["a"]["measured_ns"]) for r in removed)


def test_grouped_by_op_sums_the_layers(pair, capsys):
    a, b = pair
    d = diff_json(capsys, a, b, "--group", "op")
    rows = {r["label"]: r for r in d["rows"]}
    kb = raw_kernels(b)
    assert rows["qk_norm_rope"]["status"] == "added" and rows["qk_norm_rope"]["b"]["count"] == 2
    assert rows["gate_up"]["b"]["measured_ns"] == pytest.approx(kb["L0.gate_up"]["measured_p50_ns"]
                                                                + kb["L1.gate_up"]["measured_p50_ns"])
    assert d["matched"] == len(rows) - 1


def test_text_and_markdown(pair, capsys):
    a, b = pair
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "aligned by role, one row per launch: 13 launches matched, 2 added (B only)" in out
    assert "# step (profile window)" in out and "# tok/s (run)" in out and "# share of the ceiling" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("launch "))
    assert lines[head].split()[1:4] == ["meas", "A", "µs"]
    body = lines[head + 1:]
    assert len(body) == 15
    assert any(line.startswith("+ L0.qk_norm_rope (added)") for line in body)
    assert any(line.startswith("  L1.attention (attn_rope_decode_me_tv → attn_decode_me_tv)") for line in body)
    assert main(["diff", str(a), str(b), "--markdown", "--top", "4"]) == 0
    md = capsys.readouterr().out.splitlines()
    table = [line for line in md if line.startswith("| ")]
    assert table[-6].startswith("| launch | meas A µs | meas B µs | Δ µs | Δ % |")
    assert len(table) == 2 + 8 + 2 + 4 and "11 more rows not shown." in md[-1]


def test_the_matched_count_is_english_in_every_group(pair, capsys):
    """`--group family` said "4 familys matched"."""
    a, b = pair
    for group, unit in (("family", "families"), ("layer", "layers"), ("op", "ops")):
        assert main(["diff", str(a), str(b), "--group", group]) == 0
        out = capsys.readouterr().out
        assert f" {unit} matched, " in out and "familys" not in out, out.splitlines()[2]


def test_json_to_a_file_prints_the_text_too(pair, tmp_path, capsys):
    a, b = pair
    out = tmp_path / "d.json"
    assert main(["diff", str(a), str(b), "--json", str(out)]) == 0
    assert "aligned by role" in capsys.readouterr().out
    assert json.loads(out.read_text())["rows"]


@pytest.mark.parametrize("flag", ["--json", "--markdown"])
def test_json_or_markdown_to_dev_stdout_leaves_stdout_that_file_alone(pair, flag):
    """`tfdash diff A B --json /dev/stdout | jq`: stdout is the JSON alone (the table and the
    "# wrote" line go to stderr), as analyze, bench and counters do."""
    a, b = pair
    r = run_tfdash("diff", str(a), str(b), flag, "/dev/stdout")
    assert r.rc == 0, r.stderr
    if flag == "--json":
        assert json.loads(r.stdout)["rows"]
    else:
        assert r.stdout.startswith("**tfdash diff**") and "# A: " not in r.stdout
    assert "# A: " in r.stderr and "aligned by role" in r.stderr


def moved(path, out, name: str, **model):
    """The snapshot at `path` as the same checkpoint run from another folder: its model named by that
    folder (load_config names a checkpoint by it), with `model`'s fields over the rest."""
    snap = load_snapshot(path)
    meta = dataclasses.replace(snap.meta, model={**snap.meta.model, "name": name, **model},
                               checkpoint=f"/models/{name}")
    return write_snapshot(dataclasses.replace(snap, meta=meta), out)


def test_a_checkpoint_moved_to_another_folder_compares_with_itself(pair, tmp_path, capsys):
    """A run's model is named by its checkpoint's folder: the same checkpoint moved or renamed (or
    its base and instruct forms, whose end tokens differ) was refused as "different runs (model
    name: ...)". The shape and the dtype decide; where the shape differs, the names say which two."""
    a, b = pair
    renamed = moved(b, tmp_path / "renamed.json", "Qwen3-micro-renamed", eos_token_ids=[7])
    d = diff_json(capsys, a, renamed)
    assert not d["forced"] and d["aligned_by"] == "role", d
    wider = moved(b, tmp_path / "wider.json", "Qwen3-micro-wider", intermediate_size=4 * CFG.intermediate_size)
    assert main(["diff", str(a), str(wider)]) == 2
    assert_one_line_error(capsys.readouterr().err, "different runs (model name: qwen3-micro2 vs Qwen3-micro-wider; "
                          f"model intermediate_size: {CFG.intermediate_size} vs {4 * CFG.intermediate_size})")


def test_other_models_refused_unless_forced(pair, tmp_path, capsys):
    from fixtures.appkit import SNAPSHOT

    a, _ = pair
    assert main(["diff", str(a), str(SNAPSHOT)]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "different runs", "model name: qwen3-micro2 vs qwen3-1.7b", "--force")
    assert "model dtype" not in err  # the checkpoint's saved dtype; the dtype run in is what differs or not
    d = diff_json(capsys, a, SNAPSHOT, "--force")
    assert d["forced"] and d["aligned_by"] == "op" and d["group"] == "op" and "aligned by op" in d["note"]
    assert d["matched"] == 8 and d["added"] == [] and d["removed"] == []
    fam = diff_json(capsys, a, SNAPSHOT, "--force", "--group", "family")
    assert fam["group"] == fam["aligned_by"] == "family" and "aligned by family" in fam["note"]
    assert main(["diff", str(a), str(SNAPSHOT), "--force"]) == 0
    out = capsys.readouterr().out
    assert "--force: different runs" in out and "8 ops matched" in out


def test_forced_diff_honours_group_launch(pair, capsys):
    """--force kept --group family and layer but turned an explicit --group launch into op rows.
    A group asked for is honoured forced or not: launches align by role, a layer one model lacks
    added; without --group a forced diff is still per op."""
    from fixtures.appkit import SNAPSHOT

    a, _ = pair
    d = diff_json(capsys, a, SNAPSHOT, "--force", "--group", "launch")
    assert d["forced"] and d["group"] == "launch" and d["aligned_by"] == "role"
    labels = {r["label"] for r in d["rows"]}
    assert "L0.attention" in labels and "L27.attention" in labels and "attention" not in labels
    assert "L27.attention" in d["added"] and "aligned by role" in d["note"]
    assert main(["diff", str(a), str(SNAPSHOT), "--force", "--group", "launch"]) == 0
    out = capsys.readouterr().out
    assert "one row per launch" in out and "\nlaunch " in out
    assert diff_json(capsys, a, SNAPSHOT, "--force")["group"] == "op"


def test_the_checkpoints_saved_dtype_is_not_a_difference(pair, tmp_path, capsys):
    """Two float32 runs, one of a bfloat16 checkpoint: "model dtype: bfloat16 vs float32" named a
    dtype the user never ran in. The runs compare; the dtype they ran in is what is checked."""
    a, _ = pair
    snap = load_snapshot(a)
    model = {**dict(snap.meta.model), "dtype": "bfloat16" if snap.meta.model.get("dtype") != "bfloat16" else "float16"}
    other = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, model=model)),
                           tmp_path / "saved-other.json")
    assert main(["diff", str(a), str(other)]) == 0, capsys.readouterr().err


def test_other_dtype_refused(pair, tmp_path, capsys):
    a, _ = pair
    snap = load_snapshot(a)
    other = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, dtype="bfloat16")),
                           tmp_path / "bf16.json")
    assert main(["diff", str(a), str(other)]) == 2
    assert_one_line_error(capsys.readouterr().err, "dtype: float32 vs bfloat16")
    with pytest.raises(Exception, match="dtype"):
        compare(snap, load_snapshot(other))


def test_bad_input_is_one_line(pair, tmp_path, capsys):
    a, _ = pair
    text = a.read_text()
    cases = {
        "missing": (tmp_path / "nope.json", "no such snapshot file"),
        "other": (tmp_path / "other.json", "not a tfdash snapshot"),
        "truncated": (tmp_path / "cut.json", "not valid JSON"),
        "future": (tmp_path / "future.json", "newer than this tfdash reads"),
    }
    cases["other"][0].write_text('{"traceEvents": []}')
    cases["truncated"][0].write_text(text[: len(text) // 2])
    raw = json.loads(text)
    raw["version"] = 99
    cases["future"][0].write_text(json.dumps(raw))
    for name, (path, needle) in cases.items():
        assert main(["diff", str(a), str(path)]) == 2, name
        assert_one_line_error(capsys.readouterr().err, path.name, needle)
    assert main(["diff", str(a), str(a), "--top", "-1"]) == 2
    assert_one_line_error(capsys.readouterr().err, "--top")


def test_a_negative_top_names_diff_and_its_help(pair):
    """`diff a b --top -1` began `tfdash: error:`; every other subcommand names itself and its help."""
    a, _ = pair
    r = run_tfdash("diff", str(a), str(a), "--top", "-1")
    assert r.rc == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["tfdash diff: error: --top -1: expected 0 (all rows) or more "
                                     "(see tfdash diff --help)"]


def test_bad_input_from_the_command_line(pair, tmp_path):
    a, _ = pair
    cut = tmp_path / "cut.json"
    cut.write_text(a.read_text()[:1000])
    r = run_tfdash("diff", str(a), str(cut))
    assert r.rc == 2
    assert_one_line_error(r.stderr, "cut.json", "not valid JSON")


def low_probe(gbps: float):
    """A host memcpy probe that read `gbps`, as the cache file keeps one."""
    from tfdash.profiling.probe import ProbeResult

    return ProbeResult(device="cpu:test", bandwidth=gbps * 1e9, nbytes=256 << 20, reps=5, seconds=1.0,
                       method="host memcpy", measured_at="2026-12-06T05:46:00Z", torch_version="2.13")


def low_ceiling(path, out, cached=False):
    """The snapshot at `path` priced on a probe that read a fifth of what its step streamed; with
    `cached`, this host's cache file (TFDASH_CACHE_DIR) holds that figure."""
    from tfdash.profiling.probe import cache_path

    snap = load_snapshot(path)
    r = snap.roofline
    probe = low_probe(r.achieved_gbps / 5)
    if cached:
        cache_path().parent.mkdir(parents=True, exist_ok=True)
        cache_path().write_text(json.dumps({probe.device: probe.to_dict()}))
    return write_snapshot(dataclasses.replace(snap, roofline=dataclasses.replace(
        r, ceiling_gbps=probe.bandwidth / 1e9, ceiling_source=probe.source)), out)


def test_a_share_over_the_ceiling_is_marked_and_said_once(pair, tmp_path, monkeypatch, capsys):
    """The share row printed "500.0 %" as a fast step where the ceiling read low. The share is marked
    `!`, hung past its column so the figures stay in line, and one line under the header says why
    (both sides over on one figure: still one line); Markdown says it too, JSON carries the source."""
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is named whole, not from a home above it
    note = f"over the ceiling: probe read low; delete {tmp_path / 'cache' / 'bandwidth.json'}"
    a, b = pair
    low_b = low_ceiling(b, tmp_path / "low-b.json", cached=True)
    pct_a = load_snapshot(a).roofline.pct_ceiling
    assert main(["diff", str(a), str(low_b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = [line for line in lines if line.startswith("# ")][3:]  # after A, B and how they were aligned
    rows = head[1:next(i for i, line in enumerate(head) if line.startswith("# launches/step"))]
    [share] = [line for line in rows if line.startswith("# share of the ceiling")]
    assert f" {pct_a:.1f} %  " in share and " 500.0 %! " in share, share
    x = head[0].index("Δ (B − A)")  # where the Δ column starts, in every row
    assert all(line[x - 2:x] == "  " or line[x - 2:x] == "! " for line in rows), rows
    assert all(line[x - 4:x - 2] == "µs" for line in rows if "µs" in line[x - 9:x]), rows
    assert share[x - 3:x - 1] == "%!", share  # B's unit in line with the µs above and below, the mark past it
    assert head[len(rows) + 2] == f"# ! {note}" and sum(note in line for line in lines) == 1, head
    low_a = low_ceiling(a, tmp_path / "low-a.json")
    assert main(["diff", str(low_a), str(low_b), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| share of the ceiling | 500.0 %! | 500.0 %! |" in md and md.count(note) == 1, md
    assert f"\n! {note}\n" in md
    assert main(["diff", str(low_b), str(low_b)]) == 0
    assert capsys.readouterr().out.count(note) == 1
    d = diff_json(capsys, a, low_b)
    assert d["b"]["ceiling_source"].startswith("probe: host memcpy") and d["a"]["ceiling_source"] == "test: 10 GB/s"
    assert main(["diff", str(a), str(b)]) == 0  # under the ceiling: no mark, no line
    out = capsys.readouterr().out
    assert "%!" not in out and "over the ceiling" not in out


def test_a_side_priced_on_a_figure_not_cached_here_names_no_file_of_this_one(pair, tmp_path, monkeypatch, capsys):
    """A side over its ceiling that was recorded on another machine said to delete this host's cache
    file, which does not hold the figure that read low; and the host's name decided it, which a
    container changes on every run or shares with every machine. The figure decides: a side priced
    on one this cache holds names the file, whatever its host; one priced on another names none."""
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is named whole, not from a home above it
    here = f"over the ceiling: probe read low; delete {tmp_path / 'cache' / 'bandwidth.json'}"
    elsewhere = "over the ceiling: its probe read low (not the figure cached here)"
    a, b = pair
    away = low_ceiling(b, tmp_path / "low-b.json")
    snap = load_snapshot(low_ceiling(a, tmp_path / "low-a.json", cached=True))
    renamed = write_snapshot(dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, host="container-7f3a")),
                             tmp_path / "renamed.json")
    assert main(["diff", str(a), str(away)]) == 0
    out = capsys.readouterr().out
    assert f"# ! {elsewhere}\n" in out and "bandwidth.json" not in out, out
    assert main(["diff", str(renamed), str(away), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert f"\n! {here}\n" in md and f"\n! {elsewhere}\n" in md, md
    d = diff_json(capsys, renamed, away)
    assert d["a"]["host"] == "container-7f3a" and d["b"]["host"] == load_snapshot(b).meta.host
    assert d["a"]["ceiling_gbps"] == snap.roofline.ceiling_gbps
    assert d["b"]["ceiling_gbps"] == load_snapshot(away).roofline.ceiling_gbps


def test_the_folder_note_names_the_folders_the_write_made(pair, tmp_path, monkeypatch, capsys):
    """`--json new/../d.json` wrote ./d.json and said "(its folder new/.. was created)", a folder it
    never made; `--json link.json`, a symlink to a file in folders not there yet, made them (the
    write follows the link) and said nothing. The note names the folders the write itself made."""
    a, b = pair
    monkeypatch.chdir(tmp_path)
    assert main(["diff", str(a), str(b), "--json", "new/../d.json"]) == 0
    assert capsys.readouterr().err.splitlines() == ["# wrote new/../d.json"]
    assert (tmp_path / "d.json").is_file() and not (tmp_path / "new").exists()
    (tmp_path / "link.json").symlink_to(tmp_path / "made" / "by" / "d.json")
    assert main(["diff", str(a), str(b), "--json", "link.json"]) == 0
    assert (tmp_path / "made" / "by" / "d.json").is_file()
    made = tmp_path / "made" / "by"
    assert capsys.readouterr().err.splitlines() == [f"# wrote link.json (its folder {made} was created)"]


def test_the_same_run_twice_is_said(tmp_path, capsys):
    """`tfdash diff a.json a.json` (a slip of tab completion), or a copy of one file against it, printed
    a table of zeros as if two runs had measured alike."""
    import shutil

    from fixtures.appkit import SNAPSHOT, build_snapshot

    from tfdash.profiling import diff_cli

    copy = shutil.copy(SNAPSHOT, tmp_path / "copy.json")
    for a, b in ((SNAPSHOT, SNAPSHOT), (SNAPSHOT, copy)):
        assert diff_cli.main([str(a), str(b), "--top", "1"]) == 0
        printed = capsys.readouterr()
        assert printed.out.startswith("# A: ")
        assert printed.err.splitlines() == [f"tfdash diff: {a} and {b} hold the same run, byte for byte: every Δ is 0 "
                                            "(two runs were meant?)"]
    other = write_snapshot(build_snapshot(fused_rope=False), tmp_path / "other.json")
    assert diff_cli.main([str(SNAPSHOT), str(other), "--top", "1"]) == 0
    assert capsys.readouterr().err == ""


def test_a_report_written_over_another_says_it_replaced_it(pair, tmp_path, capsys):
    """`diff A B --json out` then `--markdown out` wrote the Markdown over the JSON report with the
    same "# wrote out" as a new file; the second line says it replaced what was there."""
    a, b = pair
    out = tmp_path / "out"
    assert main(["diff", str(a), str(b), "--json", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [f"# wrote {out}"]
    assert main(["diff", str(a), str(b), "--markdown", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [f"# wrote {out} (replacing the file there)"]
    assert out.read_text().startswith("**tfdash diff**")


def test_the_ceiling_that_prices_the_predictions_is_in_the_header(pair, tmp_path, capsys):
    """Two runs priced on other measured ceilings predict the same bytes at other times (gate_up
    11.97 against 13.08 µs for the same 50.36 MB), and nothing said why. The header gives each side's
    ceiling and how far B's is from A's, in the text and in Markdown."""
    a, b = pair
    low_b = low_ceiling(b, tmp_path / "low-b.json")
    ca, cb = (load_snapshot(p).roofline.ceiling_gbps for p in (a, low_b))
    assert main(["diff", str(a), str(low_b)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# ceiling (prices predicted)")]
    assert f"{ca:,.0f} GB/s" in row and f"{cb:,.0f} GB/s" in row and f"{100 * (cb / ca - 1):+.1f} %" in row, row
    assert main(["diff", str(a), str(low_b), "--markdown"]) == 0
    assert f"| ceiling (prices predicted) | {ca:,.0f} GB/s | {cb:,.0f} GB/s |" in capsys.readouterr().out
