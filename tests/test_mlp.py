"""The fused MLP variant (gate_up and down in one launch, a grid-wide barrier between them): its
plan, cost, torch spelling and, for sm_90a on CPU, its kernel's registers and barrier."""

import re

import pytest

from tfdash.engine.config import PRESETS, preset
from tfdash.engine.plan import build_plan
from tfdash.errors import UnsupportedShape
from tfdash.kernels.base import family


@pytest.mark.parametrize("size", sorted(PRESETS))
def test_the_fused_plan_has_one_mlp_launch_a_layer(size):
    cfg = preset(size)
    base, fused = build_plan(cfg, capacity=64), build_plan(cfg, capacity=64, mlp_fused=True)
    assert len(fused) == len(base) - cfg.num_layers
    ops = fused.ops()
    assert "gate_up" not in ops and "down" not in ops and len(ops["mlp"]) == cfg.num_layers
    mlp = ops["mlp"][0]
    assert (mlp.family, mlp.kernel) == ("mlp", "mlp_fused")
    # each phase carries the GEMV's own settings (the per-shape table's)
    assert mlp.dims["gate_up"] == {k: v for k, v in base.ops()["gate_up"][0].dims.items() if k != "dtype"}
    assert mlp.dims["down"] == {k: v for k, v in base.ops()["down"][0].dims.items() if k != "dtype"}
    assert mlp.dims["blocks_per_sm"] == min(mlp.dims[p]["blocks_per_sm"] for p in ("gate_up", "down"))
    assert fused.buffers["mlp_bar"].shape == (2,) and fused.buffers["mlp_bar"].kind == "scratch"
    assert build_plan(cfg, **fused.meta["options"]).to_dict() == fused.to_dict()


def test_the_fused_mlp_moves_the_bytes_of_the_two_gemvs():
    base, fused = (build_plan(preset("qwen3-1.7b"), capacity=64, mlp_fused=m) for m in (False, True))
    up, down, mlp = base.ops()["gate_up"][0], base.ops()["down"][0], fused.ops()["mlp"][0]
    two = [family("gemv").cost(la.dims, 100) for la in (up, down)]
    one = family("mlp").cost(mlp.dims, 100)
    assert one.bytes_read == sum(c.bytes_read for c in two)
    assert one.bytes_written == sum(c.bytes_written for c in two)
    assert one.flops == {k: sum(c.flops.get(k, 0) for c in two) for k in one.flops}
    roles = {o.role: o for o in one.operands}
    assert set(roles) == {"x", "norm_w", "w_gu", "gu", "w_down"}
    assert roles["gu"].written == roles["gu"].read == 2 * 6144 * 2  # gate_up writes it, down reads it


def test_the_fused_plan_names_its_options_apart():
    cfg = preset("qwen3-1.7b")
    names = {k: build_plan(cfg, capacity=64, mlp_fused=True, **k_).ops()["mlp"][0].kernel
             for k, k_ in (("late", {"early_norm": False}), ("lateres", {"early_residual": False}),
                           ("seg", {"gemv_overrides": {"down": {"seg": 8}}}))}
    assert names == {"late": "mlp_fused_gu_ln", "lateres": "mlp_fused_dn_lateres", "seg": "mlp_fused_dn_s8"}
    # the same setting on either phase is another kernel, named by its phase
    rows = {op: build_plan(cfg, capacity=64, mlp_fused=True, gemv_overrides={op: {"rows": 1}}).ops()["mlp"][0]
            for op in ("gate_up", "down")}
    assert (rows["gate_up"].kernel, rows["down"].kernel) == ("mlp_fused_gu_r1", "mlp_fused_dn_r1")


@pytest.mark.parametrize("op,key", [("down", "trigger_first"), ("gate_up", "min_blocks"), ("down", "min_blocks")])
def test_settings_the_fused_kernel_cannot_honour_are_refused_in_one_line(op, key):
    from tfdash.errors import TfdashError

    with pytest.raises(TfdashError, match=rf"^{op}:{key}: the fused MLP \(mlp_fused\) is one kernel"):
        build_plan(preset("qwen3-1.7b"), capacity=64, mlp_fused=True, gemv_overrides={op: {key: 1}})
    build_plan(preset("qwen3-1.7b"), capacity=64, gemv_overrides={op: {key: 1}} if key != "trigger_first" or op == "down" else {})


@pytest.mark.parametrize("size,bps,ok", [("qwen3-32b", 3, True), ("qwen3-32b", 4, False), ("qwen3-8b", 6, True), ("qwen3-8b", 7, False),
                                         ("qwen3-0.6b", 9, False)])
def test_a_grid_that_cannot_be_resident_at_once_is_unsupported(size, bps, ok):
    """Threads (2048 an SM) and shared memory (228 KiB an SM) bound the blocks an SM holds; the
    barrier would wait forever on a grid past them, so the plan says so before anything runs."""
    from tfdash.engine.compile import unsupported

    plan = build_plan(preset(size), capacity=64, mlp_fused=True, gemv_blocks_per_sm={"gate_up": bps, "down": bps})
    why = unsupported(plan)
    assert (why is None) == ok, why
    if not ok:
        assert f"a fused MLP at {bps} blocks an SM" in why and "resident at once" in why


def test_the_fused_steps_decode_the_two_launch_steps_tokens(one_thread):
    """The torch spelling is the two GEMVs' in order: the same tokens, the same logits bit for bit."""
    import torch

    from tfdash.engine import load_engine
    from tfdash.engine.runtime import Runtime

    eng = load_engine(model="qwen3-tiny", device="cpu")
    weights = {n: eng.runtime.bufs[n] for n, s in eng.plan.buffers.items() if s.kind == "weight"}
    runs = []
    for fused in (False, True):
        rt = Runtime(build_plan(eng.plan.config, dtype=eng.plan.dtype, capacity=eng.plan.capacity,
                                mlp_fused=fused), weights, "cpu")
        rt.reset([1, 2, 3])
        toks = []
        for _ in range(6):
            rt.step()
            toks.append(int(rt.bufs["tok"]))
        runs.append((toks, rt.bufs["logits"].clone()))
    assert runs[0][0] == runs[1][0] and torch.equal(runs[0][1], runs[1][1])


def test_a_device_with_fewer_multiprocessors_is_refused_in_one_line():
    from tfdash.kernels.mlp import check_device

    fused = build_plan(preset("qwen3-1.7b"), capacity=64, mlp_fused=True)
    check_device(fused, 132)
    check_device(build_plan(preset("qwen3-1.7b"), capacity=64), 114)  # no barrier: any device
    with pytest.raises(UnsupportedShape, match=r"^the fused MLP \(mlp_fused\) runs 264 blocks .* needs 132 "
                                               r"multiprocessors, this device has 114$"):
        check_device(fused, 114)


@pytest.mark.slow
@pytest.mark.parametrize("size,variant", [("qwen3-0.6b", "tilelang-mlp"), ("qwen3-1.7b", "tilelang-mlp"),
                                          ("qwen3-32b", "tilelang-mlp"), ("qwen3-0.6b", "tilelang-mlp3")])
def test_the_fused_kernel_fits_its_grid_and_orders_its_barrier(size, variant, tmp_path, monkeypatch):
    """Compiled for sm_90a: launch bounds of blocks_per_sm (registers for that many blocks, which
    the barrier needs resident), no spills at these settings (a spill would cost speed), the grid
    dependency before the barrier, an acquire-release arrival, acquire loads of the generation and
    a release store of the next, then the next kernel's launch."""
    from tfdash.engine.compile import SM90A, compile_one
    from tfdash.engine.ptxas import resource_usage
    from tfdash.kernels.gemv import THREADS

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    from tfdash.profiling.variants import PLAN_VARIANTS

    mlp = build_plan(preset(size), capacity=4096, **PLAN_VARIANTS[variant]).ops()["mlp"][0]
    src = compile_one(mlp, target=SM90A, pdl=True, backend="tvm_ffi").get_kernel_source()
    bps = mlp.dims["blocks_per_sm"]
    assert bps == (3 if variant == "tilelang-mlp3" else 2)
    assert f"__launch_bounds__({THREADS}, {bps}) {mlp.kernel}_kernel(" in src
    use = resource_usage(src)
    assert use.spill_stores == use.spill_loads == 0, use
    body = src[src.index(f"{mlp.kernel}_kernel(int"):]
    sync, arrive = body.index("cudaGridDependencySynchronize();"), body.index("AtomicAddRet((&(bar[0])), 1, 4)")
    assert sync < arrive < body.index("cudaTriggerProgrammaticLaunchCompletion();")
    assert body.count("cudaTriggerProgrammaticLaunchCompletion();") == 1
    assert body.count("AtomicLoad((&(bar[1])), 2)") == 2  # 2: memory_order_acquire, before arriving and spinning
    assert "AtomicStore((&(bar[1])), (gen + 1), 3)" in body  # 3: memory_order_release
    assert re.search(rf"== {132 * bps - 1}\)", body)  # the last of the grid's blocks releases the rest


def test_the_tilelang_runtime_refuses_it_before_compiling_on_a_smaller_device(monkeypatch):
    """The check runs first: nothing is compiled or allocated for a grid that could never be resident."""
    from types import SimpleNamespace

    import torch

    import tfdash.engine.compile as compile_mod
    from tfdash.engine.runtime import TilelangRuntime

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev: SimpleNamespace(multi_processor_count=114))
    monkeypatch.setattr(compile_mod, "compile_plan", lambda *a, **k: pytest.fail("compiled before the device check"))
    with pytest.raises(UnsupportedShape, match="needs 132 multiprocessors, this device has 114"):
        TilelangRuntime(build_plan(preset("qwen3-tiny"), capacity=16, mlp_fused=True), {}, "cuda")
