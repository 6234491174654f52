"""The plan with o_proj merging attention's partials (`oproj_merges`, bench backend tilelang-omerge)
against its torch spellings and the reference step, at production shapes (H200 only)."""

import pytest
import torch

from test_engine_gpu import check_step
from test_kernels_gpu import DEV, both, operands, poison, rel_err, run_tilelang, run_torch
from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.kernels.oproj_merge import FIXED_SHIFT
from tfdash.profiling.variants import PLAN_VARIANTS

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)

SIZES = ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]
CTXS = [0, 1, 31, 32, 63, 64, 255, 1024, 2111]  # the bench's capacity: 33 (66) splits, a second round
_PLANS = {}


def plan_of(size):
    """The plan with o_proj merging at `size` (1.7B's default; tilelang-omerge elsewhere)."""
    if size not in _PLANS:
        _PLANS[size] = build_plan(preset(size), dtype="bfloat16", capacity=2112, **PLAN_VARIANTS["tilelang-omerge"])
    return _PLANS[size]


def launch_of(plan, op):
    return plan.ops()[op][0]


def fixed(t):
    """A float tensor as acc's fixed-point integers."""
    return torch.round(t.double() * 2.0 ** FIXED_SHIFT).to(torch.int64)


@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-14b"])
@pytest.mark.parametrize("ctx", CTXS)
def test_attention_ends_at_its_partials_and_zeroes_acc(size, ctx):
    plan = plan_of(size)
    launch = launch_of(plan, "attention")
    a, b, _ = both(launch, ctx, ["part", "ml", "acc"], plan)
    n = ctx // launch.dims["block"] + 1  # the splits this step uses
    assert torch.equal(b["acc"], torch.zeros_like(b["acc"])), "attention zeroes o_proj's sum"
    assert torch.equal(a["acc"], b["acc"])
    assert not torch.isnan(b["part"][:, :n]).any() and not torch.isnan(b["ml"][:, :n]).any()
    assert rel_err(b["ml"][:, :n, 0], a["ml"][:, :n, 0]) <= 1e-3
    assert rel_err(b["ml"][:, :n, 1], a["ml"][:, :n, 1]) <= 1e-3
    assert rel_err(b["part"][:, :n], a["part"][:, :n]) <= 1e-2
    for cache in ("k_cache", "v_cache"):  # this step's k and v appended at ctx
        assert rel_err(b[cache][:, ctx], a[cache][:, ctx]) <= 1e-2


def merge_operands(plan, launch, ctx):
    base = operands(launch, ctx, plan)
    base["ml"][..., 1] = base["ml"][..., 1].abs() + 0.5  # a split's sum of exponentials is positive
    base["part"] *= 4.0
    n = ctx // launch.dims["block"] + 1
    base["part"][:, n:] = float("nan")  # the splits past the step's are never read
    base["ml"][:, n:] = float("nan")
    base["acc"] = fixed(torch.randn(base["acc"].shape, device=DEV))  # it adds, not stores
    return base


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("ctx", [0, 1, 255, 1024, 2111])
def test_oproj_merge_against_torch(size, ctx):
    plan = plan_of(size)
    launch = launch_of(plan, "o_proj")
    assert launch.family == "oproj_merge"
    base = merge_operands(plan, launch, ctx)
    a = {r: t.clone() for r, t in base.items()}
    b = {r: t.clone() for r, t in base.items()}
    run_torch(launch, a)
    run_tilelang(launch, b)
    ya = (a["acc"] - base["acc"]).double() * 2.0 ** -FIXED_SHIFT
    yb = (b["acc"] - base["acc"]).double() * 2.0 ** -FIXED_SHIFT
    assert ya.abs().max().item() > 0.1  # the heads really added something
    assert rel_err(yb, ya) <= 1e-3  # a_h rounded to bf16 on either side: a rare element one ulp apart
    # the same integers whatever order the blocks added in: a second run adds exactly the same
    c = {r: t.clone() for r, t in base.items()}
    run_tilelang(launch, c)
    assert torch.equal(c["acc"], b["acc"])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", ["gate_up", "down"])
def test_gemv_adds_o_projs_sum(size, op):
    plan = plan_of(size)
    launch = launch_of(plan, op)
    assert launch.dims.get("resid_acc") and launch.args["acc"] == "o_acc"
    base = operands(launch, 0, plan)
    base["acc"] = fixed(torch.randn(base["acc"].shape, device=DEV))
    if op == "gate_up":
        poison(base["out"])
    a = {r: t.clone() for r, t in base.items()}
    b = {r: t.clone() for r, t in base.items()}
    run_torch(launch, a)
    run_tilelang(launch, b)
    assert not torch.isnan(b["out"].float()).any()
    assert rel_err(b["out"], a["out"]) <= 1e-2
    if op == "down":  # x + o_proj's sum + W h: without the sum it would be another x
        without = {**{r: t.clone() for r, t in base.items()}, "acc": torch.zeros_like(base["acc"])}
        run_torch(launch, without)
        assert rel_err(without["out"], a["out"]) > 5e-2


@pytest.fixture(scope="module", params=["qwen3-0.6b", "qwen3-1.7b"])
def merged(request):
    """The reference step (the torch spelling of the plan whose attention merges) and the engine on a
    merging plan (1.7B's default)."""
    import gc

    from tfdash.engine.runtime import Runtime, TilelangRuntime
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset(request.param)
    weights = pack(cfg, dict(random_state_dict(cfg, torch.bfloat16, DEV, seed=0, gain=0.5)))
    ref = Runtime(build_plan(cfg, dtype="bfloat16", capacity=1280, oproj_merges=False), weights, DEV)
    eng = TilelangRuntime(build_plan(cfg, dtype="bfloat16", capacity=1280, oproj_merges=True), weights, DEV)
    eng.capture()
    truth = Runtime(build_plan(cfg, dtype="float32", capacity=1280), {k: v.float() for k, v in weights.items()}, DEV)
    held = [cfg, ref, eng, truth]
    yield held
    held.clear()
    gc.collect()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("ctx", [0, 1, 255, 1024])
def test_merging_step_matches_reference(merged, ctx):
    cfg, ref, eng, truth = merged
    check_step(cfg, ref, eng, truth, ctx)
