"""Exporters: the Chrome trace passes a structural check of the trace-event format; the CSV is the
kernel table; export_all writes all three atomically."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest
from profiling_support import rich_snapshot, validate_chrome_trace

from tfdash.profiling.export import CSV_COLUMNS, chrome_trace, export_all, kernel_csv, load_snapshot
from tfdash.profiling.snapshot import ProfileSnapshot


def test_validator_catches_what_it_should():
    ok = {"traceEvents": [{"name": "a", "ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1}]}
    assert validate_chrome_trace(ok) == []
    bad = {"traceEvents": [
        {"name": "a", "ph": "X", "ts": 0, "dur": -1, "pid": 1, "tid": 1},
        {"name": "c", "ph": "C", "ts": 0, "pid": 1, "tid": 1, "args": {"v": "x"}},
        {"name": "q", "ph": "Q", "ts": 0, "pid": 1, "tid": 1},
        {"ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1},
        {"name": "e", "ph": "E", "ts": 3, "pid": 1, "tid": 1},
        {"name": "t", "ph": "i", "ts": float("nan"), "pid": 1, "tid": 1},
    ]}
    errs = "\n".join(validate_chrome_trace(bad))
    for needle in ("dur >= 0", "args of numbers", "ph 'Q'", "lacks name", "E without B", "ts must be"):
        assert needle in errs
    assert validate_chrome_trace([]) == ["top level is not an object"]


def test_chrome_trace_is_well_formed_and_complete():
    snap = rich_snapshot()
    trace = json.loads(json.dumps(chrome_trace(snap), allow_nan=False))
    assert validate_chrome_trace(trace) == []
    ev = trace["traceEvents"]
    steps = [e for e in ev if e.get("cat") == "decode"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    counters = [e for e in ev if e["ph"] == "C"]
    assert [e["dur"] for e in steps] == [s / 1e3 for s in snap.step_ns]
    assert all(b["ts"] == pytest.approx(a["ts"] + a["dur"]) for a, b in zip(steps, steps[1:]))  # end to end
    assert steps[0]["ts"] == 0  # these steps add up to more than the wall time: they start at 0
    later = dataclasses.replace(snap, wall_ns=10_000)  # otherwise the last one ends at the wall time
    steps = [e for e in chrome_trace(later)["traceEvents"] if e.get("cat") == "decode"]
    assert steps[-1]["ts"] + steps[-1]["dur"] == pytest.approx(10.0)
    assert [e["args"]["step"] for e in steps] == [0, 1, 2, 3]
    assert {e["tid"] for e in steps} != {e["tid"] for e in kernels}  # separate tracks
    assert [(e["name"], e["args"]["role"]) for e in kernels] == [("gemv_qkv_kernel", "L0.qkv_proj"),
                                                                 ("gemv_lm_head_kernel", "lm_head")]
    # one counter point per sampled value; None (no sample) is left out
    assert sorted((e["name"], e["ts"]) for e in counters) == [("dram_gbps", 0.5e6), ("power_w", 0.25e6),
                                                              ("power_w", 0.5e6)]
    names = {e["args"]["name"] for e in ev if e["ph"] == "M"}
    assert {"decode steps", "kernels (latest profile window)", "NVML"} <= names


def test_chrome_trace_of_an_empty_snapshot():
    snap = ProfileSnapshot(meta=rich_snapshot().meta)
    assert validate_chrome_trace(chrome_trace(snap)) == []


def test_kernel_csv():
    snap = rich_snapshot()
    rows = list(csv.DictReader(io.StringIO(kernel_csv(snap))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r["role"] for r in rows] == ["embed", "L0.qkv_proj", "lm_head"]
    assert float(rows[1]["measured_p50_ns"]) == 5200.0 and float(rows[1]["gap"]) == pytest.approx(1.3)
    assert rows[2]["measured_p50_ns"] == "" and rows[2]["gap"] == ""  # unmeasured: empty, not "None"
    assert rows[0]["layer"] == "" and rows[1]["layer"] == "0"


def test_export_all(tmp_path):
    snap = rich_snapshot()
    paths = export_all(snap, tmp_path / "out")
    assert set(paths) == {"snapshot", "trace", "csv"}
    assert load_snapshot(paths["snapshot"]) == snap
    assert validate_chrome_trace(json.loads(paths["trace"].read_text())) == []
    assert paths["csv"].read_text().startswith("index,role,")
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp files left
