"""The means to measure what profiling windows cost (run for real on the H200 by
scripts/gpu_profile_check.py), and the profiling modules' import hygiene."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch
from profiling_support import micro_engine

from tfdash.profiling import probe
from tfdash.profiling.overhead import tok_s_ab

MODULES = ("session", "timeline", "marginal", "probe", "nvml", "export", "headless", "meta", "overhead")


def test_tok_s_ab_alternates_arms():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        target = dataclasses.replace(probe.CPU, bandwidth=10e9, source="test")
        r = tok_s_ab(micro_engine(capacity=512), "a b c", 120, every=40, steps=4, rounds=2, target=target)
    finally:
        torch.set_num_threads(n)
    assert r["plain_tok_s"] > 0 and r["windows_tok_s"] > 0
    assert len(r["plain_per_round"]) == len(r["windows_per_round"]) == 2
    assert r["windows_per_run"] == [2, 2]  # at 40 and 80 tokens; the one at 120 falls at the end
    assert r["overhead_pct"] == pytest.approx(100 * (r["plain_tok_s"] - r["windows_tok_s"]) / r["plain_tok_s"])
    assert all(p > 0 for p in r["paused_ms_per_run"])


def test_profiling_modules_never_import_textual():
    code = ("import sys\n"
            + "".join(f"import tfdash.profiling.{m}\n" for m in MODULES)
            + "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
            + "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
