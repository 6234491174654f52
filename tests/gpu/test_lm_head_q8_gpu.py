"""The int8-bounded lm_head (lm_head_q8 + lm_head_pick, bench backend tilelang-q8head) on the H200.

- every bound holds: each row's exact logit (f64, from the h the kernel stored) is at most its ub,
  and the best lower bound is at most the largest logit;
- every logit the pick computes is the lm_head GEMV's logit for that row bit for bit, the rows it
  leaves are -inf, and its partials (a pair a block of its grid) give the GEMV's token; the argmax
  feed then feeds it;
- a captured 1.7B graph decodes the default graph's tokens.
At every size: a random h; an h with 1 % of its values 50 times larger (more candidates); and a
head whose largest logit is held by six identical rows (the lowest index must win).
"""

import math

import pytest
import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.kernels.base import family
from tfdash.kernels.lm_head_q8 import quantize_rows

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # collected on CPU machines only to be deselected/skipped
    pytest.skip("needs CUDA", allow_module_level=True)

DEV = "cuda"
SIZES = ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]
_KERNELS = {}


def compiled(launch):
    from tfdash.engine.compile import compile_one

    if launch.kernel + str(sorted(launch.dims.items())) not in _KERNELS:
        _KERNELS[launch.kernel + str(sorted(launch.dims.items()))] = compile_one(launch)
    return _KERNELS[launch.kernel + str(sorted(launch.dims.items()))]


def run(launch, bufs):
    compiled(launch)(*[bufs[r] for r in family(launch.family).roles if r in launch.args])
    torch.cuda.synchronize()


@pytest.mark.parametrize("case", ["plain", "outliers", "tie"])
@pytest.mark.parametrize("size", SIZES)
def test_bounds_pick_and_feed(size, case):
    cfg = preset(size)
    V, H = cfg.vocab_size, cfg.hidden_size
    plan = build_plan(cfg, dtype="bfloat16", capacity=64, lm_head_q8=True)
    gemv = build_plan(cfg, dtype="bfloat16", capacity=64).ops()["lm_head"][0]
    q8, pick, feed = plan.ops()["lm_head"][0], plan.ops()["lm_head_pick"][0], plan.ops()["argmax"][0]
    assert pick.kernel == "lm_head_pick"
    blocks = family("lm_head_pick").geometry(pick.dims).grid[0]  # the pick's grid: a partial a block
    assert feed.dims["blocks"] == plan.buffers["argmax_part"].shape[0] == blocks
    gen = torch.Generator(device=DEV).manual_seed(V + H)
    x = torch.randn(H, device=DEV, generator=gen)
    if case == "outliers":
        x = x * torch.where(torch.rand(H, device=DEV, generator=gen) < 0.01, 50.0, 1.0)
    x = x.to(torch.bfloat16)
    norm_w = (1 + 0.05 * torch.randn(H, device=DEV, generator=gen)).to(torch.bfloat16)
    w = (torch.randn(V, H, device=DEV, generator=gen) * (3 / math.sqrt(H))).to(torch.bfloat16)
    if case == "tie":  # h's signs (norm_w > 0): the largest logit, six times over: after row 100 in its
        # warp's ballot (101: the same pair of rows at once where no other candidate comes between), its
        # warp's next round (104), another warp of its block (250), other blocks (V // 2) and the
        # vocabulary's last row
        w[[100, 101, 104, 250, V // 2, V - 1]] = (torch.sign(x.float()) * (6 / math.sqrt(H))).to(torch.bfloat16)
    wq, meta = quantize_rows(w)
    nan = float("nan")
    b = {"x": x, "norm_w": norm_w, "wq": wq, "meta": meta, "h_out": torch.full((H,), nan, device=DEV).bfloat16(),
         "ub": torch.full((V,), nan, device=DEV), "lb": torch.full(plan.buffers["head_lb"].shape, nan, device=DEV)}
    run(q8, b)
    h, ub, lb = b["h_out"], b["ub"], b["lb"]
    assert not (torch.isnan(h).any() or torch.isnan(ub).any() or torch.isnan(lb).any())
    exact = w.double() @ h.double()
    assert bool((exact <= ub.double()).all()), "an upper bound below its row's logit"
    assert lb.max().item() <= exact.max().item()
    # the GEMV's own logits and token, on the same inputs
    g = {"x": x, "norm_w": norm_w, "w": w, "out": torch.full((V,), nan, device=DEV),
         "amax": torch.full((gemv_blocks(gemv), 2), nan, device=DEV)}
    run(gemv, g)
    logits_ref = g["out"]
    token = int(torch.argmax(logits_ref).item())
    assert bool((logits_ref <= ub).all()), "an upper bound below the GEMV's own logit"
    if case == "tie":
        assert token == 100 and bool((logits_ref[[101, 104, 250, V // 2, V - 1]] == logits_ref[100]).all())
    p = {"w": w, "h": h, "ub": ub, "lb": lb, "logits": torch.full((V,), nan, device=DEV),
         "amax": torch.full(plan.buffers["argmax_part"].shape, nan, device=DEV)}
    run(pick, p)
    logits, part = p["logits"], p["amax"]
    assert not (torch.isnan(logits).any() or torch.isnan(part).any())
    cand = logits > -float("inf")
    assert torch.equal(cand, ub >= lb.max()), "the rows computed are not the rows whose bound reaches L"
    assert torch.equal(logits[cand], logits_ref[cand]), "a candidate's logit is not the GEMV's, bit for bit"
    # the whole output at once: the GEMV's logit where the bound reaches L, -inf elsewhere
    assert torch.equal(logits, torch.where(ub >= lb.max(), logits_ref, torch.full_like(logits_ref, -float("inf"))))
    # the bound's width grows as sqrt(K) against a fixed spread of these logits: on CPU with this recipe, 8B's
    # outliers left 4261 candidates (its largest logit 2 sigma low) and 14B's 2165; plain h at most 719
    limit = V // 10 if case == "outliers" else V // 30
    assert cand.sum().item() < limit, f"{cand.sum().item()} candidates of {V}"
    best = int(part[:, 1][part[:, 0] == part[:, 0].max()].min().item())
    assert best == token
    ops = {"logits": logits, "amax": part, "prompt": torch.zeros(64, dtype=torch.int32, device=DEV),
           "prompt_len": torch.ones(1, dtype=torch.int32, device=DEV), "pos": torch.full((1,), 5, dtype=torch.int32,
                                                                                        device=DEV),
           "tok": torch.full((1,), -1, dtype=torch.int32, device=DEV),
           "out_tokens": torch.zeros(64, dtype=torch.int32, device=DEV),
           "ring": torch.zeros(plan.buffers["ring"].shape, dtype=torch.int32, device=DEV)}
    run(feed, ops)
    assert int(ops["tok"].item()) == token and int(ops["out_tokens"][5].item()) == token


def gemv_blocks(launch):
    from tfdash.kernels.gemv import grid_size

    return grid_size(launch.dims["N"], launch.dims["K"], launch.dims["blocks_per_sm"], launch.dims["rows"])


def test_torch_spelling_picks_the_kernels_token():
    """The torch spelling (what the torch runtimes run) on the H200 gives the GEMV's token too."""
    cfg = preset("qwen3-1.7b")
    plan = build_plan(cfg, dtype="bfloat16", capacity=64, lm_head_q8=True)
    q8, pick = plan.ops()["lm_head"][0], plan.ops()["lm_head_pick"][0]
    gen = torch.Generator(device=DEV).manual_seed(7)
    V, H = cfg.vocab_size, cfg.hidden_size
    x = torch.randn(H, device=DEV, generator=gen).to(torch.bfloat16)
    norm_w = torch.ones(H, device=DEV, dtype=torch.bfloat16)
    w = (torch.randn(V, H, device=DEV, generator=gen) * (3 / math.sqrt(H))).to(torch.bfloat16)
    wq, meta = quantize_rows(w)
    b = {"x": x, "norm_w": norm_w, "wq": wq, "meta": meta, "h_out": torch.empty(H, device=DEV, dtype=torch.bfloat16),
         "ub": torch.empty(V, device=DEV), "lb": torch.empty(plan.buffers["head_lb"].shape, device=DEV)}
    family("lm_head_q8").torch(q8.dims, b)
    p = {"w": w, "h": b["h_out"], "ub": b["ub"], "lb": b["lb"], "logits": torch.empty(V, device=DEV),
         "amax": torch.empty(plan.buffers["argmax_part"].shape, device=DEV)}
    family("lm_head_pick").torch(pick.dims, p)
    from tfdash.kernels.common import linear_f32, rmsnorm

    assert int(torch.argmax(p["logits"]).item()) == int(torch.argmax(linear_f32(rmsnorm(x, norm_w, cfg.rms_norm_eps),
                                                                                w)).item())


def test_graph_decodes_the_default_tokens():
    """A captured 1.7B graph with the int8-bounded head decodes the GEMV head's graph's
    200-position prompt walk and 64 new tokens: the same tokens."""
    from tfdash.engine.runtime import TilelangRuntime
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset("qwen3-1.7b")
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, DEV, seed=0))
    out = []
    for q8 in (False, True):
        rt = TilelangRuntime(build_plan(cfg, dtype="bfloat16", capacity=512, lm_head_q8=q8), weights, DEV)
        rt.capture()
        prompt = [11, 22, 33, 44, 55] * 40
        rt.reset(prompt)
        for _ in range(len(prompt) - 1 + 64):
            rt.step()
        torch.cuda.synchronize()
        out.append(rt.bufs["out_tokens"][:len(prompt) - 1 + 64].clone())
        del rt
    assert torch.equal(out[0], out[1])
