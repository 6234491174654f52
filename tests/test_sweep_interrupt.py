"""Ctrl-C during `tfdash analyze --sweep ... --json F` keeps the points priced before it: F is a
whole JSON file that says it was interrupted, and the interrupt still reaches the CLI (exit 130)."""

import io
import json

import pytest

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.profiling import sweep_run
from tfdash.profiling.targets import H200


def test_ctrl_c_keeps_the_points_priced_so_far(tmp_path, monkeypatch):
    real, calls = sweep_run.analyze, []

    def priced(plan, target, ctx):
        calls.append(ctx)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real(plan, target, ctx)

    monkeypatch.setattr(sweep_run, "analyze", priced)
    out, err, path = io.StringIO(), io.StringIO(), tmp_path / "s.json"
    with pytest.raises(KeyboardInterrupt):
        sweep_run.run_sweep(build_plan(preset("qwen3-tiny"), "bfloat16", 64), H200, 0, 20, 1, str(path), out, err)
    doc = json.loads(path.read_text())
    assert doc["interrupted"] is True and [r["ctx_len"] for r in doc["reports"]] == list(range(6))
    assert f"# sweep interrupted: {path} has the points priced before it" in err.getvalue()
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary left beside it


def test_a_whole_sweep_says_nothing_of_an_interrupt(tmp_path):
    path = tmp_path / "s.json"
    sweep_run.run_sweep(build_plan(preset("qwen3-tiny"), "bfloat16", 64), H200, 0, 3, 1, str(path),
                        io.StringIO(), io.StringIO())
    doc = json.loads(path.read_text())
    assert "interrupted" not in doc and len(doc["reports"]) == 4
