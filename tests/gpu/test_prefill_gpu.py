"""The prompt's tilelang kernels (tfdash.kernels.rows, rows_attention) against their torch spellings
at every size's production shapes, and the tilelang engine taking a prompt in chunks (H200 only).

Outputs poisoned first (NaN) so an unwritten element fails; bf16 outputs within rel err 1e-2;
the rows past a chunk's count, and the cache rows outside its positions, untouched.
"""

import math

import pytest
import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.prefill_plan import ROWS, build_prefill_plan
from tfdash.kernels.base import family
from tfdash.kernels.rope import rope_tables

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # collected on CPU machines only to be deselected/skipped
    pytest.skip("needs CUDA", allow_module_level=True)

DEV = "cuda"
SIZES = ["qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]
CAP = 4096
_KERNELS = {}


def prompt_plan(size):
    return build_prefill_plan(build_plan(preset(size), dtype="bfloat16", capacity=CAP, prefill_rows=ROWS))


def compiled(launch):
    from tfdash.engine.compile import compile_one

    key = launch.kernel + str(sorted(launch.dims.items()))
    if key not in _KERNELS:
        _KERNELS[key] = compile_one(launch, pdl=False)
    return _KERNELS[key]


def rel_err(out, ref):
    out, ref = out.float(), ref.float()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def operands(plan, launch, start, count, seed):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    cfg = plan.config
    out = {}
    for role, name in launch.args.items():
        spec = plan.buffers[name]
        dt = getattr(torch, spec.dtype)
        if name == "pf_start":
            out[role] = torch.tensor([start], dtype=torch.int32, device=DEV)
        elif name == "pf_count":
            out[role] = torch.tensor([count], dtype=torch.int32, device=DEV)
        elif name == "prompt":
            out[role] = torch.randint(0, cfg.vocab_size, spec.shape, dtype=torch.int32, device=DEV, generator=gen)
        elif name in ("rope_cos", "rope_sin"):
            cos, sin = rope_tables(CAP, cfg.head_dim, cfg.rope_theta, dt, DEV)
            out[role] = cos if name == "rope_cos" else sin
        else:
            t = torch.randn(spec.shape, dtype=torch.float32, device=DEV, generator=gen)
            if spec.kind == "weight" and len(spec.shape) == 2:
                t = t * (1.5 / math.sqrt(spec.shape[1]))
            elif spec.kind == "weight":
                t = 1.0 + 0.05 * t
            out[role] = t.to(dt)
    return out


def both(plan, launch, start, count, written, seed=0):
    base = operands(plan, launch, start, count, seed)
    for role in written:  # what the launch stores (a residual GEMM's out is also what it adds to)
        if not (launch.family == "rows_gemm" and launch.dims["epilogue"] == "residual"):
            base[role].fill_(float("nan"))
    a = {r: t.clone() for r, t in base.items()}
    b = {r: t.clone() for r, t in base.items()}
    family(launch.family).torch(launch.dims, a)
    compiled(launch)(*[b[r] for r in family(launch.family).roles if r in launch.args])
    torch.cuda.synchronize()
    return a, b, base


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", ["qkv_proj", "o_proj", "gate_up", "down"])
def test_gemm_at_every_size(size, op):
    plan = prompt_plan(size)
    launch = next(x for x in plan.launches if x.op == op)
    a, b, _ = both(plan, launch, 0, ROWS, ["out"])
    err = rel_err(b["out"], a["out"])
    assert torch.isfinite(b["out"]).all() and err < 1e-2, (launch.kernel, err)


@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-32b"])
def test_rmsnorm_and_embed(size):
    plan = prompt_plan(size)
    norm = next(x for x in plan.launches if x.family == "rows_rmsnorm")
    a, b, _ = both(plan, norm, 0, ROWS, ["out"])
    assert rel_err(b["out"], a["out"]) < 1e-2
    embed = plan.launches[0]
    a, b, _ = both(plan, embed, 100, 5, ["out"])
    assert torch.equal(b["out"], a["out"])  # a gather: bit for bit, zeros past the count
    last = plan.launches[-1]
    a, b, base = both(plan, last, 0, 5, ["out"])
    assert torch.equal(b["out"], base["rows"][4]) and torch.equal(a["out"], b["out"])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("start,count", [(0, 16), (0, 1), (16, 16), (255, 7), (1024, 16), (4080, 15)])
def test_rope_and_attention(size, start, count):
    """q/k norm + RoPE + the append, then attention over the cache up to each row's position
    (the positions before the chunk filled at random, as an earlier chunk would have)."""
    plan = prompt_plan(size)
    rope = next(x for x in plan.launches if x.family == "rows_rope")
    a, b, base = both(plan, rope, start, count, ["q"])
    assert rel_err(b["q"][:count], a["q"][:count]) < 1e-2
    for c in ("k_cache", "v_cache"):
        got, want = b[c][:, start:start + count], a[c][:, start:start + count]
        assert rel_err(got, want) < 1e-2, c
        assert torch.equal(b[c][:, :start], base[c][:, :start])  # no row outside the chunk
        assert torch.equal(b[c][:, start + count:], base[c][:, start + count:])
    attn = next(x for x in plan.launches if x.family == "rows_attention")
    a2, b2, _ = both(plan, attn, start, count, ["out"])
    err = rel_err(b2["out"][:count], a2["out"][:count])
    assert torch.isfinite(b2["out"][:count]).all() and err < 1e-2, err


def head_logits(rt):
    """The head's logits over the whole vocabulary: the int8 head keeps exact ones only where the
    argmax may be, so every row's logit in f32 from the h it stored and its own head weight."""
    from tfdash.kernels.common import linear_f32

    if "head_h" not in rt.bufs:
        return rt.bufs["logits"].clone()
    return linear_f32(rt.bufs["head_h"], rt.bufs[rt.plan.meta["derived"]["head_q8"]])


@pytest.mark.parametrize("size", ["qwen3-1.7b", "qwen3-8b"])
@pytest.mark.parametrize("n", [2, 12, 17, 300])
def test_engine_takes_the_prompt_in_chunks_as_the_step_walks_it(size, n):
    """The tilelang engine (its captured chunk graph, then the head alone) against the same engine
    walking the prompt, on tame random weights (gain 0.5, as the accuracy tests): the cache rows of
    the prompt within bf16 noise, the first token the walk's wherever the logits' difference cannot
    flip it, and the accounting (the first token no step)."""
    from tfdash.engine import plan_for
    from tfdash.engine.decode import Generation
    from tfdash.engine.runtime import TilelangRuntime
    from tfdash.engine.tokenizer import StandInTokenizer
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset(size)
    plan = plan_for(cfg, "bfloat16", CAP)  # the engine's own plan (its kernels built by scripts/precompile.py --only-default)
    assert plan.meta["options"]["prefill_rows"] == ROWS
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, DEV, seed=0, gain=0.5))
    rt = TilelangRuntime(plan, weights, DEV, progress=lambda *a: None)
    ids = torch.randint(0, cfg.vocab_size, (n,), generator=torch.Generator().manual_seed(n)).tolist()
    tok = StandInTokenizer(cfg.vocab_size)
    want = [e.token_id for e in Generation(rt, ids, 1, tok, prefill=False)]
    want_logits = head_logits(rt)
    caches = {c: rt.bufs[c][:, :, :n].clone() for c in ("k_cache", "v_cache")}
    got = [e.token_id for e in Generation(rt, ids, 1, tok)]
    got_logits = head_logits(rt)
    for c, want_c in caches.items():
        assert rel_err(rt.bufs[c][:, :, :n], want_c) < 2e-2, c
    assert rel_err(got_logits, want_logits) < 2e-2
    top2 = torch.topk(want_logits, 2).values
    if (top2[0] - top2[1]).item() > 2 * (got_logits - want_logits).abs().max().item():
        assert got == want
    chunked = Generation(rt, ids, 4, tok)
    assert [e.token_id for e in chunked][0] == got[0]
    assert chunked.stats.prefill_positions == n and chunked.stats.steps == 3 and chunked.stats.prefill_ns > 0
    assert int(rt.bufs["pos"][0]) == n - 1 + 4
