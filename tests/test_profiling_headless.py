"""`tfdash --headless --profile --export DIR` on CPU: the report ends with the top kernels, and the
three files it writes load, validate and agree with each other."""

from __future__ import annotations

import csv
import json
import re

import pytest
import torch
from profiling_support import validate_chrome_trace

from tfdash.cli import main
from tfdash.profiling import probe
from tfdash.profiling.export import load_snapshot


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(cache))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is named whole, not from a home above it
    r = probe.ProbeResult(probe.cpu_name(), 12.5e9, 256 << 20, 5, 0.04, "host memcpy", "2026-11-29T00:00:00Z", "x")
    probe._store(r)  # a cached probe: the run reuses it instead of copying 512 MiB
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_headless_profile_export(tmp_path, capsys):
    out_dir = tmp_path / "export"
    rc = main(["--headless", "--device", "cpu", "--model", "qwen3-tiny", "--profile", "--export", str(out_dir),
               "--max-new-tokens", "16", "--prompt", "hello there"])
    assert rc == 0
    out = capsys.readouterr().out
    lines = out.rstrip("\n").splitlines()
    assert lines[0].startswith("hello there")
    assert any(line.startswith("16 new tokens") or "tok/s over the whole generation (16 new tokens" in line
               for line in lines)
    assert any("16 new; profiling pauses " in line for line in lines)  # a window paused the decode
    assert any(line.startswith("roofline @ ctx") for line in lines)
    # CPU timing is direct: no device idle is measured, so the rest of the step is given as the host's
    # between launches, adding up to the step, never as a gap
    step_line = next(line for line in lines if line.startswith("step ") and "sum of kernels" in line)
    m = re.match(r"step ([\d.]+) us = sum of kernels ([\d.]+) us \+ ([\d.]+) us on the host between launches "
                 r"\(direct timing: .*not device idle\)$", step_line)
    assert m and "+ gap" not in step_line, step_line
    step, kernels, host = map(float, m.groups())
    assert kernels > 0 and host >= 0 and abs(kernels + host - step) <= 0.11, step_line
    assert any(line.startswith("NVML: unavailable (") for line in lines)
    # the report ends with the top kernels by measured time, beside their predictions and gap
    head = next(i for i, line in enumerate(lines) if line.startswith("top 10 kernels by measured time"))
    assert lines[head + 1].split() == ["#", "launch", "kernel", "meas", "us", "pred", "us", "gap", "x", "%", "step"]
    table = lines[head + 2:]
    assert len(table) == 10 and head + 12 == len(lines)
    measured = [float(row.split()[3]) for row in table]
    assert measured == sorted(measured, reverse=True)

    snap = load_snapshot(out_dir / "snapshot.json")
    assert snap.new_tokens == 16 and snap.profile_windows == 1 and snap.roofline is not None
    assert snap.target["bandwidth"] == 12.5e9 and "host memcpy" in snap.roofline.ceiling_source
    top = sorted(snap.kernels, key=lambda k: -k.measured_p50_ns)[0]
    assert table[0].split()[1] == top.role and float(table[0].split()[3]) == pytest.approx(top.measured_p50_ns / 1e3, abs=0.01)
    assert float(table[0].split()[4]) == pytest.approx(top.predicted_ns / 1e3, abs=0.01)
    assert snap.meta.prompt == "hello there" and snap.meta.device == "cpu"
    assert snap.unavailable["nvml"] and snap.unavailable["marginal"]

    trace = json.loads((out_dir / "trace.json").read_text())
    assert validate_chrome_trace(trace) == []
    assert sum(1 for e in trace["traceEvents"] if e.get("cat") == "decode") == len(snap.step_ns)
    rows = list(csv.DictReader((out_dir / "kernels.csv").open()))
    assert [r["role"] for r in rows] == [k.role for k in snap.kernels]
    assert all(r["measured_p50_ns"] for r in rows)


def test_headless_export_without_profile_has_predictions_only(tmp_path, capsys):
    out_dir = tmp_path / "e2"
    assert main(["--headless", "--device", "cpu", "--export", str(out_dir), "--max-new-tokens", "4",
                 "--prompt", "hi"]) == 0
    out = capsys.readouterr().out
    assert "wrote " in out and "top 10 kernels" not in out
    assert "4 new\n" in out and "profiling pauses" not in out  # nothing profiled, nothing paused
    snap = load_snapshot(out_dir / "snapshot.json")
    assert snap.profile_windows == 0 and snap.unavailable["kernels"] == "no profile window yet"
    assert all(k.measured_p50_ns is None and k.predicted_ns > 0 for k in snap.kernels)


def test_a_cached_ceiling_under_the_step_is_named_in_the_report_and_by_open(tmp_path, capsys):
    """A cached probe figure far under what the step streams (a probe beside other work): the
    roofline line is followed by a warning that names the cache file to delete, and `tfdash open`
    without a terminal prints the same."""
    slow = probe.ProbeResult(probe.cpu_name(), 0.1e9, 256 << 20, 5, 5.4, "host memcpy", "2026-11-29T00:00:00Z", "x")
    probe._store(slow)
    want = f"warning: over the ceiling: probe read low; delete {probe.cache_path()}"
    out_dir = tmp_path / "export"
    assert main(["--headless", "--device", "cpu", "--model", "qwen3-tiny", "--profile", "--export", str(out_dir),
                 "--max-new-tokens", "8", "--prompt", "hi"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("roofline @ ctx"))
    assert "% of the 0.1 GB/s measured ceiling" in lines[at] and lines[at + 1] == want, lines[at:at + 2]
    assert main(["open", str(out_dir / "snapshot.json")]) == 0
    assert want in capsys.readouterr().out.splitlines()


def test_an_export_into_a_folder_it_made_says_so(tmp_path, capsys):
    """`--export DIR` (and `--save PATH`) made a missing folder silently, so a typo in its name went
    unseen; the line that names the files says the folder was created, as `tfdash diff` says it,
    and a second run into the same folder does not: it says whose results it replaced there (they
    went unsaid)."""
    out_dir, save = tmp_path / "exprots" / "run", tmp_path / "saves" / "final.json"
    argv = ["--headless", "--device", "cpu", "--export", str(out_dir), "--save", str(save), "--max-new-tokens", "2",
            "--prompt", "hi"]
    files = ", ".join(str(out_dir / name) for name in ("snapshot.json", "trace.json", "kernels.csv"))
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"wrote {files} (its folder {out_dir} was created)" in lines, lines
    assert f"wrote {save} (its folder {save.parent} was created)" in lines, lines
    first = load_snapshot(save).meta.started_at
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"wrote {files} (replacing the export of the run recorded {first})" in lines, lines
    assert f"wrote {save} (replacing the snapshot of the run recorded {first})" in lines, lines


def test_an_export_under_home_names_its_files_as_the_folder_it_made(tmp_path, monkeypatch, capsys):
    """`--export '~/x'` named its files `~/x/...` and the folder it made `/home/.../x`: one line, two
    spellings of one place. Both are the expanded path, as `--save` and `--json` name theirs."""
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["--headless", "--device", "cpu", "--export", "~/x", "--max-new-tokens", "2", "--prompt", "hi"]) == 0
    out_dir = tmp_path / "x"
    files = ", ".join(str(out_dir / name) for name in ("snapshot.json", "trace.json", "kernels.csv"))
    assert f"wrote {files} (its folder {out_dir} was created)" in capsys.readouterr().out.splitlines()
    assert (out_dir / "kernels.csv").is_file()


def test_a_very_short_run_never_reports_the_cold_first_step(capsys):
    """--max-new-tokens 2: the window was the one decode step (ctx 2 after the 2-token prompt), the
    kernels' first, cold run reported as their times; it is taken after it now, at ctx 3, as the
    dashboard's own. One token (no step ran): the report says why nothing is timed."""
    argv = ["--headless", "--device", "cpu", "--model", "qwen3-tiny", "--profile", "--prompt", "hello there"]
    assert main(argv + ["--max-new-tokens", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("roofline @ ctx 3 over 1 step (direct)") for line in lines), lines
    assert main(argv + ["--max-new-tokens", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "roofline: unavailable (no profile window: the run was too short: its one token came from the prompt, " \
           "so no step warmed the kernels up and a window would time their first, cold run (2 or more new tokens " \
           "have one))" in lines, lines
    # the long reason once: the top kernels point at it rather than repeat it
    assert "top 10 kernels by predicted time (not measured: the reason above)" in lines, lines
    assert sum("the run was too short" in line for line in lines) == 1, lines


def test_a_run_that_stopped_at_end_of_text_on_its_first_token_is_not_called_too_short(ckpt_copy, capsys):
    """Room for 6 new tokens, and the first (the prompt's) was end-of-text: no step ran. The reason
    said 'the run was too short ... (2 or more new tokens have one)', though 6 were asked for; it
    says the run stopped at end-of-text, and what decodes past it."""
    from tfdash.engine import load_engine

    d = ckpt_copy(tied=True)
    prompt = "w5 w6 w7"
    first = next(iter(load_engine(ckpt=d, device="cpu", capacity=64).generate(prompt, 1, ignore_eos=True))).token_id
    raw = json.loads((d / "config.json").read_text())
    raw["eos_token_id"] = [first]
    (d / "config.json").write_text(json.dumps(raw))
    argv = ["--headless", "--device", "cpu", "--ckpt", str(d), "--profile", "--prompt", prompt, "--max-new-tokens", "6"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "roofline: unavailable (no profile window: the run stopped at end-of-text: its one token, from the " \
           "prompt, was end-of-text, so no step warmed the kernels up and a window would time their first, cold " \
           "run (--ignore-eos decodes past it))" in lines, lines
    assert not [line for line in lines if "too short" in line or "2 or more new tokens" in line], lines


@pytest.mark.parametrize("gap_ns", [139_100.0, -59_900.0])
def test_host_timings_step_line_adds_up_or_says_why_not(gap_ns):
    """Under host timing the step line's "=" holds: the step is the kernels' sum plus the host's
    time between launches; where the kernels' medians sum past the step's, no "=" is printed."""
    import dataclasses

    from fixtures.appkit import build_snapshot

    from tfdash.profiling.headless import roofline_lines

    snap = build_snapshot()
    r = dataclasses.replace(snap.roofline, timing="direct", gap_ns=gap_ns,
                            kernel_sum_ns=snap.roofline.measured_step_ns - gap_ns)
    line = next(x for x in roofline_lines(dataclasses.replace(snap, roofline=r)) if x.startswith("step "))
    if gap_ns >= 0:
        m = re.match(r"step ([\d.]+) us = sum of kernels ([\d.]+) us \+ ([\d.]+) us on the host", line)
        assert m and abs(float(m[2]) + float(m[3]) - float(m[1])) <= 0.11, line
    else:
        assert "=" not in line and "sum past the step's" in line and "gap" not in line, line
