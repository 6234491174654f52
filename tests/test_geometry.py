"""How each tilelang launch spreads its work (kernels.base.Geometry): the grid the kernel
launches, its units of work over its workers in rounds, and the line the drill-down shows."""

from __future__ import annotations

import pytest

from tfdash.engine.config import PRESETS, preset
from tfdash.engine.plan import build_plan
from tfdash.kernels.base import Geometry, family
from tfdash.errors import TfdashError
from tfdash.kernels.gemv import THREADS, check_override, grid_size, launch_settings
from tfdash.kernels.splitkv import SPLIT_CAP, grid_splits, splits_used


def test_rounds_and_the_last_rounds_share():
    g = Geometry((264,), 256, 2, 2560, "row", 2112, "warp")
    assert g.rounds == 2 and g.last_busy == pytest.approx(448 / 2112)
    full = Geometry((256,), 256, 2, 2048, "row", 2048, "warp")
    assert (full.rounds, full.last_busy) == (1, 1.0)
    few = Geometry((32, 8), 128, None, 17, "cache block", 32, "program", "kv head")
    assert few.rounds == 1 and few.last_busy == pytest.approx(17 / 32)


@pytest.mark.parametrize("size", sorted(PRESETS))
def test_every_preset_launch_geometry_is_the_kernels_grid(size):
    plan = build_plan(preset(size), dtype="bfloat16", capacity=4096)
    for la in plan.launches:
        geometry = family(la.family).geometry
        if la.family == "gemv":
            R, _, bps = launch_settings(la.dims)
            g = geometry(la.dims, 0)
            assert g.grid == (grid_size(la.dims["N"], la.dims["K"], bps, R),) and g.threads == THREADS
            assert g.workers == g.grid[0] * THREADS // 32 and (g.units - 1) * R < la.dims["N"] <= g.units * R
            assert g.blocks_per_sm == bps
        elif la.family == "attention":
            programs, _ = grid_splits(la.dims["splits"], la.dims.get("split_cap", SPLIT_CAP))
            for ctx in (0, 1023, 4095):
                g = geometry(la.dims, ctx)
                assert g.grid == (programs, la.dims["n_kv_heads"]) and g.threads == la.dims["head_dim"]
                assert g.units == splits_used(la.dims, ctx) and g.workers == programs


def test_the_drill_downs_line():
    from tfdash.app.drill_model import geometry_text

    plan = build_plan(preset("qwen3-4b"), dtype="bfloat16", capacity=4096)
    by_kernel = {la.kernel: la for la in plan.launches}
    assert geometry_text(by_kernel["gemv_o_residual"], 1024) == (
        "grid 264, 256 threads · 2,560 rows over 2,112 warps: 2 rounds, the last 21% busy")
    # the GEMV table's 4B lm_head streams two rows a warp
    assert geometry_text(by_kernel["gemv_lm_head"], 0).endswith("75,968 2-row groups over 2,112 warps: 36 rounds, "
                                                                  "the last 97% busy")
    assert geometry_text(by_kernel["embed_gather"], 0) is None  # a family that does not say


def test_analyze_prints_and_exports_each_launchs_geometry():
    import json

    from tfdash.profiling.analyze import analyze, render_text, to_json
    from tfdash.profiling.targets import H200

    a = analyze(build_plan(preset("qwen3-4b"), dtype="bfloat16", capacity=4096), H200, 1024)
    lines = {r.launch.role: line for r, line in zip(a.rows, render_text(a).splitlines()[6:])}
    assert lines["L0.o_proj"].endswith("; tilelang grid=264 threads=256 work=2560-rows/2112-warps rounds=2 "
                                       "last-busy=0.21")
    assert "work=17-cache-blocks/32-programs-per-kv-head rounds=1 last-busy=0.53" in lines["L0.attention"]
    assert "tilelang grid" not in lines["embed"]
    j = json.loads(json.dumps(to_json(a)))
    by_role = {x["role"]: x for x in j["launches"]}
    assert by_role["L0.o_proj"]["geometry"] == {"grid": [264], "threads": 256, "blocks_per_sm": 2, "units": 2560,
                                                "unit": "row", "workers": 2112, "worker": "warp", "per": "",
                                                "rounds": 2, "last_busy": pytest.approx(448 / 2112)}
    assert by_role["embed"]["geometry"] is None


def test_analyze_says_no_geometry_where_tilelang_cannot_run_the_launch():
    """A hidden size of 896 is no multiple of the GEMV's 256 columns: torch runs it, no grid is shown."""
    import dataclasses

    from tfdash.profiling.analyze import analyze, render_text
    from tfdash.profiling.targets import H200

    cfg = dataclasses.replace(preset("qwen3-0.6b"), hidden_size=896)
    a = analyze(build_plan(cfg, dtype="bfloat16", capacity=256), H200, 0)
    qkv = next(r for r in a.rows if r.launch.role == "L0.qkv_proj")
    assert family("gemv").supported(qkv.launch.dims) and qkv.geometry is None
    assert "tilelang grid" not in render_text(a).splitlines()[6 + qkv.launch.index]


@pytest.mark.parametrize("K, said", [(256, "K=256 is 1 chunk of 256 columns"), (768, "K=768 is 3 chunks of 256 columns")])
def test_a_seg_past_the_weights_chunks_counts_them_in_words(K, said):
    """A seg past a K=256 weight's one chunk said "1 chunks of 256 columns"."""
    with pytest.raises(TfdashError, match=f"\\(down's {said}\\)$"):
        check_override("down", {"seg": 9}, {"N": 64, "K": K, "rows": 1, "seg": 1})
