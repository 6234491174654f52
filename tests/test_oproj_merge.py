"""o_proj merging attention's split-KV partials (`oproj_merges`): the torch spellings against the
plain attention and o_proj, the plan's wiring, and the step on CPU."""

import math

import pytest
import torch

from tfdash.engine.config import PRESETS, preset
from tfdash.engine.plan import build_plan
from tfdash.engine.plan_options import recorded_options
from tfdash.errors import TfdashError
from tfdash.kernels.attention import torch_attention
from tfdash.kernels.oproj_merge import FIXED_SHIFT, to_float, torch_merge, torch_oproj_merge
from tfdash.kernels.splitkv import torch_split_partials


@pytest.mark.parametrize("ctx", [0, 1, 63, 64, 65, 130, 199])
@pytest.mark.parametrize("group,D", [(2, 128), (5, 128), (4, 64)])
def test_partials_merged_are_the_attention(ctx, group, D):
    """Split into 64-position blocks and merged, the partials give the attention over 0..ctx; the
    blocks past ctx hold nothing the merge reads."""
    g = torch.Generator().manual_seed(ctx)
    nKV, C, B = 2, 200, 64
    nH, S = nKV * group, -(-C // B)
    dims = dict(n_heads=nH, n_kv_heads=nKV, head_dim=D, block=B, dtype="float32")
    q = torch.randn(nH * D, generator=g)
    kc, vc = torch.randn(nKV, C, D, generator=g), torch.randn(nKV, C, D, generator=g)
    pos = torch.tensor([ctx], dtype=torch.int32)
    part, ml = torch.full((nH, S, D), math.nan), torch.full((nH, S, 2), math.nan)
    torch_split_partials(dims, q, kc, vc, pos, part, ml)
    out = torch.empty(nH * D)
    torch_attention(dims, dict(q=q, k_cache=kc, v_cache=vc, pos=pos, out=out))
    n = ctx // B + 1
    assert torch.isinf(ml[:, n:, 0]).all() and (ml[:, n:, 1] == 0).all()
    part[:, n:], ml[:, n:] = math.nan, math.nan  # garbage past the step's splits must not matter
    merged = torch_merge(dims, part, ml, pos)
    assert torch.allclose(merged.reshape(-1), out, atol=1e-5, rtol=1e-5)


def test_o_proj_sum_is_fixed_point_and_order_free():
    g = torch.Generator().manual_seed(0)
    nH, D, N, S, B = 4, 64, 96, 3, 64
    dims = dict(n_heads=nH, head_dim=D, N=N, block=B, dtype="float32", splits=S)
    part, ml = torch.randn(nH, S, D, generator=g), torch.rand(nH, S, 2, generator=g) + 0.5
    w = torch.randn(N, nH * D, generator=g) / 8
    pos = torch.tensor([B * S - 1], dtype=torch.int32)
    start = torch.randint(-2 ** 40, 2 ** 40, (N,), generator=g)
    acc = start.clone()
    torch_oproj_merge(dims, dict(part=part, ml=ml, pos=pos, w=w, acc=acc))
    want = w @ torch_merge(dims, part, ml, pos).reshape(-1)
    got = (acc - start).double() * 2.0 ** -FIXED_SHIFT
    assert torch.allclose(got, want.double(), atol=nH * 2.0 ** -FIXED_SHIFT + 1e-5)
    assert to_float(acc - start, torch.float32).sub(want).abs().max() < 1e-4


def test_the_plan_wires_the_merge_into_o_proj():
    cfg = preset("qwen3-1.7b")
    plan, default = (build_plan(cfg, capacity=2112, oproj_merges=m) for m in (True, False))
    assert len(plan) == len(default) and plan.buffers["o_acc"].shape == (cfg.hidden_size,)
    attn, o, gu, down = (plan.ops()[op][0] for op in ("attention", "o_proj", "gate_up", "down"))
    assert attn.dims["defer_merge"] and "out" not in attn.args and "sem" not in attn.args
    assert attn.args["acc"] == o.args["acc"] == gu.args["acc"] == down.args["acc"] == "o_acc"
    assert o.family == "oproj_merge" and (o.args["part"], o.args["ml"]) == (attn.args["part"], attn.args["ml"])
    assert gu.dims["resid_acc"] and down.dims["resid_acc"] and down.args["out"] == "x"
    assert "o_acc" not in default.buffers and not default.ops()["gate_up"][0].dims.get("resid_acc")
    # every operand the cost models price is a buffer the launch names
    for launch in plan:
        for operand in launch.cost(1024).operands:
            assert operand.role in launch.args, (launch.role, operand.role)
    # the same weights stream; attention no longer writes its output, o_proj reads no x
    assert plan.weight_bytes() == default.weight_bytes()
    with pytest.raises(TfdashError, match="needs fused_rope"):
        build_plan(cfg, capacity=256, oproj_merges=True, fused_rope=False)
    with pytest.raises(TfdashError, match="no o_proj GEMV settings"):  # its o_proj is no GEMV
        build_plan(cfg, capacity=256, oproj_merges=True, gemv_overrides={"o_proj": {"rows": 4}})


def test_o_proj_merges_by_default_where_its_weight_is_over_4_and_at_most_8_mib():
    """The shape's own choice (oproj_merges=None): 1.7B's o_proj weight (8 MiB in bf16) alone of the
    presets; not without the fused attention, nor where o_proj takes GEMV settings."""
    merging = {size for size in PRESETS if build_plan(preset(size), capacity=256).ops()["o_proj"][0].family
               == "oproj_merge"}
    assert merging == {"qwen3-1.7b"}
    cfg = preset("qwen3-1.7b")
    assert build_plan(cfg, capacity=256, fused_rope=False).ops()["o_proj"][0].family == "gemv"
    tuned = build_plan(cfg, capacity=256, gemv_overrides={"o_proj": {"rows": 4}})
    assert tuned.ops()["o_proj"][0].family == "gemv" and "o_acc" not in tuned.buffers
    assert build_plan(cfg, capacity=256, oproj_merges=False).ops()["o_proj"][0].family == "gemv"
    assert build_plan(preset("qwen3-4b"), capacity=256, oproj_merges=True).ops()["o_proj"][0].family == "oproj_merge"


def test_snapshots_recorded_before_the_option_rebuild_without_it():
    options = dict(build_plan(preset("qwen3-tiny"), capacity=64).meta["options"])
    options.pop("oproj_merges")
    assert recorded_options(options)["oproj_merges"] is False


def test_the_merging_plan_decodes_as_the_default_on_cpu():
    """The torch spellings of both plans over 150 steps (three 64-position splits): the same
    tokens, logits within bf16 rounding."""
    from tfdash.engine.runtime import Runtime
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset("qwen3-tiny")
    weights = pack(cfg, dict(random_state_dict(cfg, torch.bfloat16, "cpu", seed=1, gain=1.0)))
    outs = []
    for merge in (False, True):
        rt = Runtime(build_plan(cfg, capacity=160, oproj_merges=merge), weights, "cpu")
        rt.reset(list(range(1, 40)))
        for _ in range(150):
            rt.step()
        outs.append((rt.bufs["out_tokens"][:150].clone(), rt.bufs["logits"].clone()))
    (t0, l0), (t1, l1) = outs
    assert (t0 == t1).float().mean() >= 0.95, (t0, t1)
    assert (l0 - l1).abs().max() <= 0.05 * l0.abs().max()
