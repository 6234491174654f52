"""Every tilelang kernel of the step against its torch spelling, at production shapes (H200 only).

Fresh random inputs for every check, outputs poisoned first (NaN / -1) so an unwritten element
fails; bf16 outputs within rel err 1e-2 (||out - ref|| / ||ref||); the argmax exact wherever the
top-2 gap exceeds 1e-3.
"""

import math
from dataclasses import replace

import pytest
import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.profiling.variants import PLAN_VARIANTS
from tfdash.kernels.base import family

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # collected on CPU machines only to be deselected/skipped
    pytest.skip("needs CUDA", allow_module_level=True)

SIZES = ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]
PLANS = {name: build_plan(preset(name), dtype="bfloat16", capacity=4096) for name in SIZES}
PLAN = PLANS["qwen3-1.7b"]
CFG = PLAN.config
UNFUSED = build_plan(CFG, dtype="bfloat16", capacity=4096, fused_rope=False)  # the A/B baseline's kernels
OTLATE = build_plan(CFG, dtype="bfloat16", capacity=4096, o_proj_trigger_first=False)  # the A/B baseline's o_proj
LATENORM = build_plan(CFG, dtype="bfloat16", capacity=4096, early_norm=False)  # norm weights after the dependency
DOWNSILU = build_plan(CFG, dtype="bfloat16", capacity=4096, gate_up_silu=False)  # down makes silu(g) * u
DEV = "cuda"
GEN = torch.Generator(device=DEV)


def attention_shape(group: int, head_dim: int, **options):
    """A plan whose attention has 8 kv heads of `group` q heads each, at head_dim."""
    cfg = replace(CFG, name=f"g{group}-d{head_dim}", num_heads=8 * group, head_dim=head_dim)
    return build_plan(cfg, dtype="bfloat16", capacity=4096, **options)


# every GQA group the kernel supports at head_dim 128 (Qwen3: 2, 4, 5, 8) and a spread at 64
ATTN_SHAPES = [(g, 128) for g in range(1, 9)] + [(g, 64) for g in (1, 2, 4, 8)]
ATTN_PLANS = {shape: attention_shape(*shape) for shape in ATTN_SHAPES}


def rel_err(out, ref):
    out, ref = out.float(), ref.float()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def fresh(spec, role, ctx, cfg=CFG):
    """A random tensor for one operand (weights scaled like the random model's)."""
    shape, dt = spec.shape, getattr(torch, spec.dtype)
    if spec.name == "pos":
        return torch.tensor([ctx], dtype=torch.int32, device=DEV)
    if spec.name == "tok":
        return torch.randint(0, CFG.vocab_size, (1,), dtype=torch.int32, device=DEV, generator=GEN)
    if spec.name in ("prompt", "out_tokens"):
        return torch.randint(0, CFG.vocab_size, shape, dtype=torch.int32, device=DEV, generator=GEN)
    if spec.name == "prompt_len":
        return torch.tensor([ctx + 2], dtype=torch.int32, device=DEV)  # mid-prompt: feed from the prompt
    if spec.name == "attn_sem":
        return torch.zeros(shape, dtype=torch.int32, device=DEV)
    if dt in (torch.int32, torch.int64):
        return torch.zeros(shape, dtype=dt, device=DEV)
    if spec.name in ("rope_cos", "rope_sin"):
        from tfdash.kernels.rope import rope_tables

        cos, sin = rope_tables(spec.shape[0], cfg.head_dim, cfg.rope_theta, dt, DEV)
        return cos if spec.name == "rope_cos" else sin
    t = torch.randn(shape, dtype=torch.float32, device=DEV, generator=GEN)
    if spec.kind == "weight" and len(shape) == 2:
        t = t * (1.5 / math.sqrt(shape[1]))
    elif spec.kind == "weight":
        t = 1.0 + 0.05 * t
    return t.to(dt)


def operands(launch, ctx, plan=PLAN):
    return {role: fresh(plan.buffers[name], role, ctx, plan.config) for role, name in launch.args.items()}


def poison(t):
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.fill_(-1)


_KERNELS = {}


def compiled(launch):
    from tfdash.engine.compile import compile_one

    key = (launch.kernel, tuple(sorted((k, str(v)) for k, v in launch.dims.items())))
    if key not in _KERNELS:
        _KERNELS[key] = compile_one(launch)
    return _KERNELS[key]


def run_tilelang(launch, bufs):
    kernel = compiled(launch)
    kernel(*[bufs[r] for r in family(launch.family).roles if r in launch.args])
    torch.cuda.synchronize()


def run_torch(launch, bufs):
    family(launch.family).torch(launch.dims, bufs)
    torch.cuda.synchronize()


def both(launch, ctx, written, plan=PLAN):
    base = operands(launch, ctx, plan)
    for role in written:
        poison(base[role])
    a = {r: t.clone() for r, t in base.items()}
    b = {r: t.clone() for r, t in base.items()}
    run_torch(launch, a)
    run_tilelang(launch, b)
    return a, b, base


GEMVS = ["gemv_qkv", "gemv_o_residual", "gemv_gate_up_silu", "gemv_down_residual", "gemv_o_residual_tlate",
         "gemv_gate_up", "gemv_down_silu_residual"]


@pytest.mark.parametrize("kernel", GEMVS)
@pytest.mark.parametrize("trial", range(2))
def test_gemv(kernel, trial):
    plan = DOWNSILU if kernel in DOWNSILU.kernels() and kernel not in PLAN.kernels() else PLAN
    launch = {**PLAN.kernels(), **OTLATE.kernels(), **DOWNSILU.kernels()}[kernel]
    check_gemv(launch, plan)


@pytest.mark.parametrize("size", SIZES)
def test_mlp_silu_in_gate_up_same_bits(size):
    """gate_up making silu(g) * u in its epilogue, then down reading it, leaves the residual
    stream bit for bit where gate_up storing g|u and down's prologue making the product does."""
    plan, before = PLANS[size], build_plan(preset(size), dtype="bfloat16", capacity=4096, gate_up_silu=False)
    gu, down = plan.ops()["gate_up"][0], plan.ops()["down"][0]
    gu0, down0 = before.ops()["gate_up"][0], before.ops()["down"][0]
    assert (gu.kernel, down.kernel, gu0.kernel, down0.kernel) == (
        "gemv_gate_up_silu", "gemv_down_residual", "gemv_gate_up", "gemv_down_silu_residual")
    x, norm_w, w_gu = (fresh(plan.buffers[gu.args[r]], r, 0, plan.config) for r in ("x", "norm_w", "w"))
    w_down, res = (fresh(plan.buffers[down.args[r]], r, 0, plan.config) for r in ("w", "out"))
    h = torch.full((plan.config.intermediate_size,), float("nan"), dtype=x.dtype, device=DEV)
    g_u = torch.full((2 * plan.config.intermediate_size,), float("nan"), dtype=x.dtype, device=DEV)
    new, old = res.clone(), res.clone()
    run_tilelang(gu, {"x": x, "norm_w": norm_w, "w": w_gu, "out": h})
    run_tilelang(down, {"x": h, "w": w_down, "out": new})
    run_tilelang(gu0, {"x": x, "norm_w": norm_w, "w": w_gu, "out": g_u})
    run_tilelang(down0, {"x": g_u, "w": w_down, "out": old})
    assert not torch.isnan(h.float()).any(), "unwritten element of h"
    assert torch.equal(new, old)
    assert not torch.equal(new, res)  # the MLP added something


@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b"])  # K = 1024, 2048, 2560
@pytest.mark.parametrize("op", ["qkv_proj", "gate_up"])
def test_gemv_with_late_norm(op, size):
    """The GEMVs that read their norm weight after the grid dependency (the late-norm baseline of
    the default's early_norm), where a thread holds part of one 2048-column pass of the weight,
    all of it, or more."""
    plan = LATENORM if size == "qwen3-1.7b" else build_plan(preset(size), dtype="bfloat16", capacity=4096,
                                                             early_norm=False)
    launch = plan.ops()[op][0]
    assert launch.kernel.endswith("_ln") and "early_norm" not in launch.dims
    check_gemv(launch, plan)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", ["qkv_proj", "o_proj", "gate_up", "down"])
def test_gemv_at_every_size(size, op):
    plan = PLANS[size]
    check_gemv(plan.ops()[op][0], plan)


def check_gemv(launch, plan):
    residual = launch.dims["epilogue"] == "residual"
    a, b, base = both(launch, 0, [] if residual else ["out"], plan)
    assert not torch.isnan(b["out"].float()).any(), "unwritten output element"
    assert rel_err(b["out"], a["out"]) <= 1e-2
    if residual:
        # the GEMV's own contribution, not hidden under the residual it was added to
        assert rel_err(b["out"].float() - base["out"].float(), a["out"].float() - base["out"].float()) <= 1e-2


@pytest.mark.parametrize("size", SIZES)
def test_lm_head_and_argmax_feed(size):
    check_lm_head_and_argmax_feed(PLANS[size], "gemv_lm_head")


def test_lm_head_with_late_norm():
    check_lm_head_and_argmax_feed(LATENORM, "gemv_lm_head_ln")


def check_lm_head_and_argmax_feed(plan, name):
    head = plan.kernels()[name]
    arg = plan.ops()["argmax"][0]  # argmax_feed_ring by default (a device tensor stands in for the ring)
    base = operands(head, 0, plan)
    poison(base["out"])
    poison(base["amax"])
    a = {r: t.clone() for r, t in base.items()}
    b = {r: t.clone() for r, t in base.items()}
    run_torch(head, a)
    run_tilelang(head, b)
    logits_ref, logits = a["out"], b["out"]
    assert not torch.isnan(logits).any()
    assert rel_err(logits, logits_ref) <= 1e-2
    # the per-block partials hold the argmax of the kernel's own logits, lowest index on ties
    part = b["amax"]
    assert not torch.isnan(part).any()
    best = int(part[:, 1][part[:, 0] == part[:, 0].max()].min().item())
    assert best == int(torch.argmax(logits).item())
    # then the feed: mid-prompt it feeds the prompt, past it the argmax
    for ctx, past_prompt in ((5, False), (7, True)):
        ops = operands(arg, ctx, plan)
        ops["logits"] = logits.clone()
        ops["amax"] = part.clone()
        if past_prompt:
            ops["prompt_len"].fill_(ctx + 1)
        poison(ops["tok"])
        ta = {r: t.clone() for r, t in ops.items()}
        tb = {r: t.clone() for r, t in ops.items()}
        run_torch(arg, ta)
        run_tilelang(arg, tb)
        top2 = torch.topk(logits, 2).values
        if (top2[0] - top2[1]).item() > 1e-3:
            assert torch.equal(ta["out_tokens"], tb["out_tokens"])
            assert torch.equal(ta["tok"], tb["tok"])
        assert int(tb["pos"].item()) == ctx + 1
        if "ring_ns" in ops:  # the clock stamp beside the token: the kernel's alone (torch has no clock)
            slot = ctx % arg.dims["ring"]
            assert torch.equal(ta["ring_ns"], ops["ring_ns"]) and int(tb["ring"][slot]) == int(tb["tok"].item())
            first = int(tb["ring_ns"][slot])
            tb["pos"].fill_(ctx)
            run_tilelang(arg, tb)
            torch.cuda.synchronize()
            assert 0 < first < int(tb["ring_ns"][slot]), (first, int(tb["ring_ns"][slot]))
        expect_tok = int(ops["prompt"][ctx + 1]) if not past_prompt else best
        assert int(tb["tok"].item()) == expect_tok


def test_embed():
    launch = PLAN.kernels()["embed_gather"]
    a, b, _ = both(launch, 0, ["out"])
    assert torch.equal(a["out"], b["out"])


@pytest.mark.parametrize("size", ["qwen3-1.7b", "qwen3-32b"])  # 32 heads in one block; 80 in five
@pytest.mark.parametrize("ctx", [0, 1, 255, 1024, 4095])
def test_qk_norm_rope(ctx, size):
    plan = UNFUSED if size == "qwen3-1.7b" else build_plan(preset(size), dtype="bfloat16", capacity=4096,
                                                           fused_rope=False)
    launch = plan.kernels()["qk_norm_rope"]
    a, b, _ = both(launch, ctx, ["q"], plan)
    assert not torch.isnan(b["q"].float()).any()
    assert rel_err(b["q"], a["q"]) <= 1e-2
    for cache in ("k_cache", "v_cache"):
        assert rel_err(b[cache][:, ctx], a[cache][:, ctx]) <= 1e-2
        # nothing else in the cache was touched
        mask = torch.ones(plan.capacity, dtype=torch.bool, device=DEV)
        mask[ctx] = False
        assert torch.equal(a[cache][:, mask], b[cache][:, mask])


@pytest.mark.parametrize("merge_early", [True, False], ids=["merge_early", "merge_late"])
@pytest.mark.parametrize("ctx", [0, 1, 63, 64, 255, 1024, 4095])
def test_attention(ctx, merge_early):
    """The unfused attention with either merge (14B's and 32B's groups always merge late)."""
    plan = UNFUSED if merge_early else build_plan(CFG, dtype="bfloat16", capacity=4096, fused_rope=False,
                                                  attn_merge_early=False)
    [launch] = [x for x in plan.kernels().values() if x.family == "attention"]
    a, b, _ = both(launch, ctx, ["out", "part", "ml"])
    assert not torch.isnan(b["out"].float()).any()
    assert rel_err(b["out"], a["out"]) <= 1e-2
    assert int(b["sem"].abs().sum().item()) == 0, "the merge must reset its arrival counters"
    # twice in a row (as layer after layer does): the counters work again
    run_tilelang(launch, b)
    assert rel_err(b["out"], a["out"]) <= 1e-2


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("ctx", [0, 1, 255, 1024, 4095])
def test_attention_at_every_size(size, ctx):
    check_fused_attention(PLANS[size], ctx)


@pytest.mark.parametrize("shape", ATTN_SHAPES, ids=[f"g{g}-d{d}" for g, d in ATTN_SHAPES])
@pytest.mark.parametrize("ctx", [0, 1, 63, 64, 255, 1024, 4095])
def test_attention_every_group_and_head_dim(shape, ctx):
    check_fused_attention(ATTN_PLANS[shape], ctx)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("ctx", [0, 1, 63, 64, 1024, 4095])
def test_attention_chains_at_every_size(size, ctx):
    """The score and value phases each one chain (attn_ilp=False, bench backend tilelang-chains, the
    A/B baseline of tfdash.kernels.attn_dots) against the torch spelling at every Qwen3 size, fused
    and (1.7B) unfused."""
    check_fused_attention(build_plan(preset(size), dtype="bfloat16", capacity=4096, attn_ilp=False), ctx)
    if size == "qwen3-1.7b":
        plan = build_plan(CFG, dtype="bfloat16", capacity=4096, fused_rope=False, attn_ilp=False)
        [launch] = [x for x in plan.kernels().values() if x.family == "attention"]
        a, b, _ = both(launch, ctx, ["out", "part", "ml"])
        assert rel_err(b["out"], a["out"]) <= 1e-2


@pytest.mark.parametrize("ctx", [0, 1, 62, 63, 64, 65, 255, 1024, 4095])
def test_attention_with_fused_rope(ctx):
    check_fused_attention(PLAN, ctx)


@pytest.mark.parametrize("variant", ["tilelang-mlate", "tilelang-latenorm", "tilelang-fenced"])
@pytest.mark.parametrize("ctx", [0, 63, 64, 1024, 4095])
def test_attention_variants(variant, ctx):
    """The A/B baselines of the default attention: the merge loading its partials after its
    (max, sum) pairs (what 14B's and 32B's groups always run); the rope phase's norm weights and
    cos/sin read after the grid dependency (latenorm); the splits' arrival as a fence and a
    relaxed atomic (fenced)."""
    check_fused_attention(build_plan(CFG, dtype="bfloat16", capacity=4096, **PLAN_VARIANTS[variant]), ctx)


@pytest.mark.parametrize("ctx", [0, 31, 32, 1023, 1024, 2100, 4095])
def test_attention_with_32_position_blocks(ctx):
    """Splits of 32 positions (attn_block): 128 at capacity 4096, on 64 programs (two rounds)."""
    check_fused_attention(build_plan(CFG, dtype="bfloat16", capacity=4096, attn_block=32, attn_split_cap=64), ctx)


@pytest.mark.parametrize("variant", [None, "tilelang-mc16"])
@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b"])
@pytest.mark.parametrize("ctx", [0, 1, 1023, 1024, 2047, 2111])
def test_attention_merge_chunk(variant, size, ctx):
    """The merge's partials 32 at a time (the default at groups of 1 and 2) or 16 (the baseline;
    groups of 3 and more always), at the bench's capacity (33 blocks: past 2048 positions a
    second round)."""
    plan = build_plan(preset(size), dtype="bfloat16", capacity=2112, **PLAN_VARIANTS.get(variant, {}))
    [launch] = [x for x in plan.kernels().values() if x.family == "attention"]
    assert launch.dims.get("merge_chunk", 16) == (32 if variant is None and size != "qwen3-4b" else 16)
    check_fused_attention(plan, ctx)


@pytest.mark.parametrize("options", [{"attn_trigger_at": "values"}, {"attn_trigger_at": "dependency"},
                                     PLAN_VARIANTS["tilelang-meg4"]], ids=["values", "dependency", "meg4"])
@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b"])
@pytest.mark.parametrize("ctx", [0, 1, 63, 64, 1024, 2111])
def test_attention_trigger_and_merge_group(options, size, ctx):
    """The blocks letting o_proj launch after their values (0.6B's default) or at their grid
    dependency (the others'), and 4B's group of 4 merging early (meg4, the plan before), at the
    bench's capacity."""
    check_fused_attention(build_plan(preset(size), dtype="bfloat16", capacity=2112, **options), ctx)


@pytest.mark.parametrize("capacity,ctx,cap", [(2112, 0, None), (2112, 2111, None), (2112, 2111, 40), (2112, 1500, 16),
                                              (2112, 2111, 16), (8192, 0, None), (8192, 2500, None),
                                              (8192, 8191, None)])
@pytest.mark.parametrize("carry", [False, True], ids=["eachround", "carry"])
def test_attention_grid_rounds(capacity, ctx, cap, carry):
    """Programs looping over their blocks: 2112 positions (33 blocks) on 32 programs, on 33 (cap 40)
    and on 16 (three rounds for program 0, two for the others at ctx 2111); 8192 (128 blocks) on 32
    programs in four rounds; each round roping q and loading its K/V (the baseline), or q roped once
    and the next round's K/V loaded under this one's merge (carry, the default), bit for bit the
    baseline's."""
    plan = build_plan(CFG, dtype="bfloat16", capacity=capacity, attn_split_cap=cap, attn_rounds_carry=carry)
    check_fused_attention(plan, ctx)
    if carry:
        baseline = build_plan(CFG, dtype="bfloat16", capacity=capacity, attn_split_cap=cap, attn_rounds_carry=False)
        if set(baseline.kernels()) != set(plan.kernels()):  # cap 40: one round, one build
            check_same_bits(plan, baseline, ctx)


@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-4b", "qwen3-14b", "qwen3-32b"])
@pytest.mark.parametrize("capacity,ctx", [(2112, 1500), (2112, 2111), (4096, 2048), (4096, 4095)])
def test_attention_rounds_carry_at_every_group(size, capacity, ctx):
    """The carry build (the default) in rounds with every GQA group the presets have: pos in a
    program's first round (ctx 1500) and in a later one (the rest), against torch and bit for bit
    against the baseline's (tilelang-eachround)."""
    plan = build_plan(preset(size), dtype="bfloat16", capacity=capacity)
    assert [x for x in plan.kernels().values() if x.family == "attention"][0].dims.get("rounds_carry")
    check_fused_attention(plan, ctx)
    check_same_bits(plan, build_plan(preset(size), dtype="bfloat16", capacity=capacity, attn_rounds_carry=False), ctx)


def check_same_bits(plan, baseline, ctx):
    """Two builds of one attention that differ only in when they load and rope, on the same inputs:
    the same out, the same appended k and v, and the same partials of every block with work."""
    from tfdash.kernels.splitkv import splits_used

    [a, b] = [next(x for x in p.kernels().values() if x.family == "attention") for p in (plan, baseline)]
    assert a.kernel != b.kernel, "the same build twice"
    base = operands(a, ctx, plan)
    for role in ("out", "part", "ml"):
        poison(base[role])
    x, y = ({r: t.clone() for r, t in base.items()} for _ in range(2))
    run_tilelang(a, x)
    run_tilelang(b, y)
    used = splits_used(a.dims, ctx)
    for role in ("out", "k_cache", "v_cache"):
        assert torch.equal(x[role], y[role]), role
    for role in ("part", "ml"):
        assert torch.equal(x[role][:, :used], y[role][:, :used]), role


def check_fused_attention(plan, ctx):
    [launch] = [x for x in plan.kernels().values() if x.family == "attention"]  # any split-cap variant
    a, b, _ = both(launch, ctx, ["out", "part", "ml"], plan)
    assert not torch.isnan(b["out"].float()).any()
    assert rel_err(b["out"], a["out"]) <= 1e-2
    for cache in ("k_cache", "v_cache"):
        # this step's k (normed, rotated) and v appended at ctx, nothing else touched
        assert rel_err(b[cache][:, ctx], a[cache][:, ctx]) <= 1e-2
        mask = torch.ones(plan.capacity, dtype=torch.bool, device=DEV)
        mask[ctx] = False
        assert torch.equal(a[cache][:, mask], b[cache][:, mask])
    assert int(b["sem"].abs().sum().item()) == 0
