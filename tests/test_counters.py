"""`tfdash counters` on CPU: ncu's CSV parsed (tests/fixtures/ncu-raw.csv, hand-written in the
layout `ncu --import R --csv --page raw --print-units base` prints: every field quoted, a units
row, thousands separators; the values are synthetic), mapped onto the Qwen3-1.7B step plan,
carried by the snapshot and its CSV, and every way it cannot run said in one line. The runner
is driven end to end with a stand-in ncu (tests/fixtures/fake_ncu.py)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfdash.errors import TfdashError
from tfdash.profiling import counters as cmod
from tfdash.profiling import ncu

FIXTURES = Path(__file__).resolve().parent / "fixtures"
RAW = (FIXTURES / "ncu-raw.csv").read_text()
FAKE = FIXTURES / "fake_ncu.py"

DETAILS = """==PROF== Connected to process 48213 (/usr/bin/python3.12)
==PROF== Profiling "gemv_gate_up_silu_kernel" - 0: 0%....50%....100% - 1 pass
==PROF== Disconnected from process 48213
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","48213","python3.12","127.0.0.1","gemv_gate_up_silu_kernel","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","50.36"
"0","48213","python3.12","127.0.0.1","gemv_gate_up_silu_kernel","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","15.94"
"0","48213","python3.12","127.0.0.1","gemv_gate_up_silu_kernel","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","launch__shared_mem_per_block_static","Kbyte/block","2.05"
"0","48213","python3.12","127.0.0.1","gemv_gate_up_silu_kernel","1","7","(256, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","n/a"
"""


@pytest.fixture(scope="module")
def plan():
    from tfdash.engine import plan_for
    from tfdash.engine.config import preset

    return plan_for(preset("qwen3-1.7b"), "bfloat16", 4096)


def test_raw_page_with_units_row():
    recs = ncu.parse_csv(RAW)
    assert [r.id for r in recs] == list(range(6))
    assert recs[1].kernel == "gemv_qkv_kernel" and recs[1].grid == (264, 1, 1) and recs[1].block == (256, 1, 1)
    m = recs[4].metrics
    assert m["dram__bytes_read.sum"] == 50_362_112 and m["gpu__time_duration.sum"] == 15_936
    assert m["sm__warps_active.avg.pct_of_peak_sustained_active"] == pytest.approx(22.96)
    assert m["device__attribute_display_name"] is None  # text, not a number
    assert recs[2].metrics["launch__registers_per_thread"] == 159


def test_details_page_scales_units_and_reads_na():
    [rec] = ncu.parse_csv(DETAILS)
    assert rec.metrics["dram__bytes_read.sum"] == pytest.approx(50.36e6)
    assert rec.metrics["gpu__time_duration.sum"] == pytest.approx(15_940)
    assert rec.metrics["launch__shared_mem_per_block_static"] == pytest.approx(2050)
    assert rec.metrics["dram__bytes_write.sum"] is None


def test_no_table_is_an_error():
    with pytest.raises(ValueError, match="no Nsight Compute CSV table"):
        ncu.parse_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")


def test_records_map_onto_the_plan(plan):
    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    assert sorted(got) == [0, 1, 2, 3, 4, 5]
    gu = got[4]
    assert gu.kernel == "gemv_gate_up_silu_kernel" and gu.ctx_len == 512
    assert gu.predicted_read == plan.launches[4].cost(512).bytes_read
    assert gu.read_ratio == pytest.approx(50_362_112 / 50_339_840)
    assert abs(gu.ratio - 1) < 0.002
    assert got[2].registers == 159 and got[2].smem_static == 17_408
    with pytest.raises(TfdashError, match="not this one"):
        cmod.match(ncu.parse_csv(RAW), plan, 1, 6, 512)  # shifted by one launch
    with pytest.raises(TfdashError, match="profiled 6 kernels"):
        cmod.match(ncu.parse_csv(RAW), plan, 0, 6, 512)


def test_selection_and_segments(plan):
    one_layer = cmod.select(plan, every=True, layers={0})
    assert [plan.launches[i].role for i in one_layer] == ["embed", "L0.qkv_proj", "L0.attention", "L0.o_proj",
                                                          "L0.gate_up", "L0.down", "lm_head", "lm_head_pick",
                                                          "argmax"]  # the engine's int8 head: its pick too
    assert cmod.segments(one_layer) == [(0, 5), (141, 143)]
    assert len(cmod.select(plan, ["down"])) == 28
    assert cmod.select(plan, ["L3.*"]) == list(range(16, 21))
    with pytest.raises(TfdashError, match="no launch of the step matches"):
        cmod.select(plan, ["L99.down"])


def test_profile_command_skips_to_the_segment():
    cmd = ncu.profile_command("/x/ncu", ["python", "-m", "child"], ["a_kernel", "b_kernel", "a_kernel"], 141, 2,
                              "/tmp/r")
    assert cmd[:5] == ["/x/ncu", "--clock-control", "none", "--graph-profiling", "node"]
    assert cmd[cmd.index("--launch-skip") + 1] == "141" and cmd[cmd.index("--launch-count") + 1] == "2"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(a_kernel|b_kernel)$"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert set(cmd[cmd.index("--metrics") + 1].split(",")) == set(ncu.METRICS)
    assert cmd[-3:] == ["python", "-m", "child"]


def test_diagnose_says_what_is_missing():
    perm = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    assert "NVreg_RestrictProfilingToAdminUsers=0" in ncu.diagnose(perm, 1)
    assert ncu.diagnose("tfdash counters: error: no CUDA device\n", 2) == "no CUDA device"
    assert "cannot profile" in ncu.diagnose("==ERROR== Profiling is not supported on this device\n", 1)
    assert ncu.diagnose("==PROF== Disconnected\n", 0) is None
    assert "status 3" in ncu.diagnose("boom\n", 3)


def run_cli(*args, env=None, timeout=120):
    import os

    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tfdash", "counters", *args], capture_output=True, text=True,
                          env=e, timeout=timeout)


def test_cli_on_a_cpu_host_is_one_line():
    r = run_cli("--all", "--device", "cpu")
    assert r.returncode == 2
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("tfdash: error: counters need an NVIDIA GPU") and "Traceback" not in r.stderr


def test_counters_take_no_cpu_threads(capsys):
    """`counters --threads N` was listed and accepted, and did nothing: ncu profiles a CUDA step."""
    from tfdash.cli import main

    with pytest.raises(SystemExit):
        main(["counters", "--help"])
    assert "--threads" not in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["counters", "--all", "--threads", "2"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "unrecognized arguments: --threads 2" in line
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--threads N" in capsys.readouterr().out  # the run's own options keep it


@pytest.mark.parametrize("argv, says", [(["--ctx", "-1"], "--ctx -1 must be 0 or more"),
                                        # past the child's cache: said after the host, the engine's plan and ncu's search
                                        (["--ctx", "4096"], "--ctx 4096: ctx_len=4096 is past the KV cache capacity "
                                                            "of 4096 positions (largest ctx_len is 4095)"),
                                        (["--ctx", "50000", "--model", "qwen3-0.6b"],
                                         "--ctx 50000: ctx_len=50000 is past max_position_embeddings=40960 "
                                         "(largest ctx_len is 40959)"),
                                        (["--timeout", "0"], "--timeout 0 must be a positive number of seconds"),
                                        (["--timeout", "nan"], "--timeout nan must be a positive number of seconds")])
def test_bad_arguments_are_said_before_the_host(capsys, argv, says):
    """Argument mistakes first, on any machine (as bench): they were hidden behind "needs a GPU"."""
    from tfdash.cli import main

    assert main(["counters", "--all", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [f"tfdash counters: error: {says} (see tfdash counters --help)"]


def test_missing_ncu_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("TFDASH_NCU", str(tmp_path / "no-ncu"))
    with pytest.raises(cmod.CountersUnavailable, match="Nsight Compute \\(ncu\\) not found"):
        cmod.check_host("cuda", "tilelang-graph")
    with pytest.raises(cmod.CountersUnavailable, match="only the tilelang-graph"):
        cmod.check_host("cuda", "torch-graph")


def request(plan, indices, timeout=60.0):
    return cmod.Request(plan, tuple(indices), {"model": "qwen3-1.7b", "device": "cuda"}, 512, timeout)


def test_runner_end_to_end_with_a_stand_in_ncu(plan, tmp_path, monkeypatch):
    log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    said: list[str] = []
    got = cmod.measure(request(plan, range(6)), progress=said.append, ncu=str(FAKE))
    assert sorted(got) == list(range(6)) and got[1].dram_read == 16_801_024
    assert any("profiled kernel 5: gemv_gate_up_silu_kernel" in s for s in said)
    assert any("building the engine" in s for s in said)
    [argv] = [json.loads(x) for x in log.read_text().splitlines()]
    child = argv[argv.index("--force-overwrite") + 1:]
    assert child[1:4] == ["-m", "tfdash.profiling.counters_child", "--ctx"] and "--model" in child


@pytest.mark.parametrize("mode, message", [("perm", "ERR_NVGPUCTRPERM"), ("child", "no CUDA device")])
def test_runner_failures_are_one_line(plan, monkeypatch, mode, message):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    with pytest.raises(cmod.CountersUnavailable, match=message):
        cmod.measure(request(plan, range(6)), ncu=str(FAKE))


def test_runner_timeout_ends_the_child(plan, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    with pytest.raises(TfdashError, match="longer than 2 s"):
        cmod.measure(request(plan, range(6), timeout=2.0), ncu=str(FAKE))


def test_counters_in_the_snapshot_json_and_csv(plan, tmp_path):
    from dataclasses import replace

    from fixtures.appkit import build_snapshot
    from tfdash.profiling.csv_export import CSV_COLUMNS, kernel_csv
    from tfdash.profiling.export import load_snapshot, write_snapshot

    snap = build_snapshot()
    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    snap = replace(snap, kernels=cmod.with_counters(snap.kernels, got))
    path = tmp_path / "s.json"
    write_snapshot(snap, path)
    back = load_snapshot(path)
    assert back == snap and back.kernels[4].counters.dram_read == 50_362_112 and back.kernels[7].counters is None
    rows = list(csv.DictReader(io.StringIO(kernel_csv(back))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert rows[4]["dram_read"] == "50362112" and rows[4]["grid"] == "264x1x1" and rows[7]["dram_read"] == ""
    assert float(rows[4]["dram_ratio"]) == pytest.approx(got[4].ratio, abs=1e-4)


def test_json_into_a_new_folder_says_the_folder_was_made(plan, tmp_path, monkeypatch, capsys):
    """`counters --json no/such/c.json` made the folders and said only "# wrote ...": a typo in a
    folder's name went unseen. It says so as `tfdash diff` does (the GPU's part stood in for here)."""
    from tfdash.cli import main
    from tfdash.profiling import counters_cli

    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    monkeypatch.setattr(counters_cli, "prepare", lambda engine_args, pick, ctx, timeout: request(plan, sorted(got)))
    monkeypatch.setattr(counters_cli, "measure", lambda req, progress=None: got)
    out = tmp_path / "no" / "such" / "c.json"
    assert main(["counters", "--all", "--json", str(out)]) == 0
    wrote = [line for line in capsys.readouterr().err.splitlines() if line.startswith("# wrote")]
    assert wrote == [f"# wrote {out} (its folder {out.parent} was created)"]
    assert json.loads(out.read_text())["schema"] == "tfdash.counters/1"
    assert main(["counters", "--all", "--json", str(out)]) == 0  # there now: replaced, no folder made
    assert [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("# wrote")] == [f"# wrote {out} (replacing the file there)"]


def test_snapshot_named_with_a_control_character_is_said_as_text(plan, tmp_path, monkeypatch, capsys):
    """`counters --snapshot FILE` ends with "# counters added to FILE": a name holding an escape
    sequence went to the terminal as one. It is shown as text, as every other line shows a path."""
    from fixtures.appkit import build_snapshot

    from tfdash.cli import main
    from tfdash.profiling import counters_cli
    from tfdash.profiling.export import load_snapshot, write_snapshot

    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    monkeypatch.setattr(counters_cli, "prepare", lambda engine_args, pick, ctx, timeout: request(plan, sorted(got)))
    monkeypatch.setattr(counters_cli, "measure", lambda req, progress=None: got)
    path = write_snapshot(build_snapshot(), tmp_path / "run\x1b[2J.json")
    assert main(["counters", "--all", "--snapshot", str(path)]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err
    [added] = [line for line in err.splitlines() if line.startswith("# counters added to ")]
    assert added.endswith(".json") and "[2J" in added
    assert sum(k.counters is not None for k in load_snapshot(path).kernels) == len(got)


def test_a_snapshot_in_a_folder_that_cannot_be_written_is_said_before_the_profiling(plan, tmp_path, monkeypatch,
                                                                                    capsys):
    """`counters --snapshot F` rewrites F at the end, through a new file in F's folder: a read-only
    folder (the snapshot read fine) failed that write after minutes of profiling, and the counters
    were lost. The folder is checked first, as every other output is. Root passes the permission
    bits, so the folder's mkdir is refused here as the kernel refuses everyone else there."""
    import errno
    import os

    from conftest import assert_one_line_error
    from fixtures.appkit import build_snapshot

    from tfdash.cli import main
    from tfdash.profiling import counters_cli
    from tfdash.profiling.export import write_snapshot

    ro = tmp_path / "ro"
    path = write_snapshot(build_snapshot(), ro / "run.json")
    real_mkdir, profiled = os.mkdir, []

    def refuse(p, *a, **k):
        if os.path.abspath(os.fsdecode(p)).startswith(str(ro) + os.sep):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(p))
        return real_mkdir(p, *a, **k)

    monkeypatch.setattr(os, "mkdir", refuse)
    monkeypatch.setattr(counters_cli, "prepare", lambda *a: profiled.append(a) or request(plan, [0]))
    monkeypatch.setattr(counters_cli, "measure", lambda req, progress=None: {})
    assert main(["counters", "--all", "--snapshot", str(path)]) == 2
    assert profiled == []
    assert_one_line_error(capsys.readouterr().err, f"--snapshot {path}: cannot write there ({ro} is not a writable")


def test_a_gzip_snapshot_stays_gzip(plan, tmp_path, monkeypatch):
    """`counters --snapshot run.json.gz` rewrote the file as plain JSON under its .gz name (zcat then
    refused it); a snapshot written to a name ending in .gz is gzip-compressed, as `open` reads it."""
    import gzip

    from fixtures.appkit import build_snapshot

    from tfdash.cli import main
    from tfdash.profiling import counters_cli
    from tfdash.profiling.export import dumps_snapshot, load_snapshot

    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    monkeypatch.setattr(counters_cli, "prepare", lambda engine_args, pick, ctx, timeout: request(plan, sorted(got)))
    monkeypatch.setattr(counters_cli, "measure", lambda req, progress=None: got)
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(dumps_snapshot(build_snapshot()).encode()))
    assert main(["counters", "--all", "--snapshot", str(path)]) == 0
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert sum(k.counters is not None for k in load_snapshot(path).kernels) == len(got)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json.gz"]  # written through a temporary, renamed


def test_json_to_a_gz_name_is_gzip(plan, tmp_path, monkeypatch):
    """`counters --json out.json.gz` wrote plain JSON under a .gz name; a report written there is
    gzip-compressed, as a snapshot is, and reads back to the JSON a plain name gets."""
    import gzip

    from tfdash.cli import main
    from tfdash.profiling import counters_cli

    got = cmod.match(ncu.parse_csv(RAW), plan, 0, 5, 512)
    monkeypatch.setattr(counters_cli, "prepare", lambda engine_args, pick, ctx, timeout: request(plan, sorted(got)))
    monkeypatch.setattr(counters_cli, "measure", lambda req, progress=None: got)
    plain, packed = tmp_path / "c.json", tmp_path / "c.json.gz"
    for out in (plain, packed):
        assert main(["counters", "--all", "--json", str(out)]) == 0
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(packed.read_bytes())) == json.loads(plain.read_text())
