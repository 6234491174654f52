"""The int8-bounded lm_head on the CPU: its quantization, the bound every logit must keep, the plan
that runs it, and its torch spelling decoding the default plan's tokens (tfdash.kernels.lm_head_q8)."""

import math

import pytest
import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.plan_options import recorded_options
from tfdash.engine.runtime import make_runtime
from tfdash.engine.weights import load_weights
from tfdash.kernels.lm_head_q8 import QG, bound, quantize_h, quantize_rows


def test_quantize_rows_packs_int8_and_bounds_its_error():
    gen = torch.Generator().manual_seed(0)
    w = (torch.randn(300, 512, generator=gen) / math.sqrt(512)).to(torch.bfloat16)
    w[7] = 0  # an all-zero row: scale 0, no error
    q, meta = quantize_rows(w, rows=128)  # several row blocks
    assert q.dtype == torch.int32 and q.shape == (300, 128) and meta.shape == (300, 4)
    q8 = q.view(torch.int8).view(300, 512).double()
    assert q8.abs().max() <= 127
    deq = q8 * meta[:, :1].double()
    err, nrm = (w.double() - deq).norm(dim=1), deq.norm(dim=1)
    assert bool((meta[:, 1].double() >= err).all()) and bool((meta[:, 2].double() >= nrm).all())
    assert bool((meta[:, 1].double() <= err * (1 + 1e-6) + 1e-30).all())  # rounded up, not padded
    assert meta[7].abs().sum() == 0 and q8[7].abs().sum() == 0
    assert (w.double() - deq).abs().max() <= meta[:, 0].max().item() / 2 + 1e-6


@pytest.mark.parametrize("outliers", [False, True], ids=["plain", "outliers"])
def test_every_logit_is_within_its_bound(outliers):
    gen = torch.Generator().manual_seed(1)
    V, K = 4096, 1024
    w = (torch.randn(V, K, generator=gen) * (3 / math.sqrt(K))).to(torch.bfloat16)
    h = torch.randn(K, generator=gen)
    if outliers:  # a few large dims, as trained models' hidden states have
        h = h * torch.where(torch.rand(K, generator=gen) < 0.01, 50.0, 1.0)
    h = h.to(torch.bfloat16)
    q, meta = quantize_rows(w)
    r, t, hn, dn = quantize_h(h)
    d = (q.view(torch.int8).view(V, -1, QG).int() * r.view(-1, QG).int()).sum(-1)
    a = (d.float() * t).sum(-1) * meta[:, 0]
    b = bound(meta, a, hn, dn, K)
    exact = w.double() @ h.double()
    assert bool(((exact - a.double()).abs() <= b.double()).all())
    L = (a - b).max()
    cand = a + b >= L
    assert bool(cand[exact.argmax()])
    assert cand.sum() < V // 20  # the bound rules out most rows


def test_the_plan_reads_the_int8_head_and_picks():
    cfg = preset("qwen3-1.7b")
    base, plan = build_plan(cfg, capacity=64), build_plan(cfg, capacity=64, lm_head_q8=True)
    assert [launch.op for launch in plan.launches[-3:]] == ["lm_head", "lm_head_pick", "argmax"]
    assert [launch.family for launch in plan.launches[-3:]] == ["lm_head_q8", "lm_head_pick", "argmax"]
    assert plan.launches[-1].dims["blocks"] == plan.buffers["argmax_part"].shape[0]
    assert plan.buffers["head_q8"].shape == (cfg.vocab_size, cfg.hidden_size // 4)
    assert dict(plan.meta["derived"]) == {"head_q8": "embed", "head_q8_meta": "embed"}
    assert "derived" not in base.meta and base.launches[-2].kernel == "gemv_lm_head"
    # the head's bytes a step: int8 and four floats a row, against bf16 (the candidates are a guess)
    head = plan.launches[-3].cost(0)
    assert head.read_by_kind("weight") == cfg.vocab_size * (cfg.hidden_size + 16) + 2 * cfg.hidden_size
    assert head.read_by_kind("weight") < base.launches[-2].cost(0).read_by_kind("weight") * 0.51
    assert recorded_options(plan.meta["options"]) == dict(plan.meta["options"])
    assert recorded_options({k: v for k, v in base.meta["options"].items() if k != "lm_head_q8"})["lm_head_q8"] is False
    untied = build_plan(preset("qwen3-8b"), capacity=64, lm_head_q8=True)
    assert dict(untied.meta["derived"]) == {"head_q8": "lm_head", "head_q8_meta": "lm_head"}


@pytest.mark.parametrize("size", ["qwen3-0.6b", "qwen3-1.7b", "qwen3-32b"])
def test_the_pick_runs_two_blocks_an_sm_and_the_partials_follow_its_grid(size):
    """The pick (one kernel, lm_head_pick) plans BLOCKS_PER_SM blocks an SM; the argmax's partials
    and its launch follow the pick's grid, not the GEMV head's; two candidate rows at once only
    where a lane's share of both fits its registers."""
    from tfdash.kernels.base import family
    from tfdash.kernels.lm_head_pick import BLOCKS_PER_SM, SMS, THREADS, grid_size, rows_at_once, rows_per_warp

    cfg = preset(size)
    base, plan = build_plan(cfg, capacity=64), build_plan(cfg, capacity=64, lm_head_q8=True)
    pick, argmax = plan.ops()["lm_head_pick"][0], plan.ops()["argmax"][0]
    assert pick.kernel == "lm_head_pick" and set(pick.dims) == {"N", "K", "lb_blocks", "dtype"}
    assert grid_size(pick.dims) == BLOCKS_PER_SM * SMS == 2 * SMS
    assert argmax.dims["blocks"] == plan.buffers["argmax_part"].shape[0] == grid_size(pick.dims)
    assert base.ops()["argmax"][0].dims["blocks"] == base.buffers["argmax_part"].shape[0]  # the GEMV's grid
    geo = family(pick.family).geometry(pick.dims)
    assert geo.grid == (grid_size(pick.dims),) and geo.blocks_per_sm == BLOCKS_PER_SM
    assert geo.workers * rows_per_warp(pick.dims) >= cfg.vocab_size and geo.threads == THREADS
    assert rows_at_once(pick.dims) == (2 if cfg.hidden_size <= 2560 else 1)
    assert [(la.role, la.kernel) for la in plan.launches[:-3]] == [(la.role, la.kernel) for la in base.launches[:-2]]


ABSENT = object()


@pytest.mark.parametrize(("recorded", "ran"), [
    ({"lm_head_q8": True}, True),  # recorded by this version: the pick it builds
    ({"lm_head_q8": True, "lm_head_pick_ahead": True}, True),  # the pick this version builds
    ({"lm_head_q8": True, "lm_head_pick_ahead": True, "prefill_rows": ABSENT}, True),  # before the prompt's chunks
    ({"lm_head_q8": True, "lm_head_pick_ahead": False}, False),  # the pick's first form, removed
    ({"lm_head_q8": True, "lm_head_pick_ahead": False, "prefill_rows": ABSENT}, False),
    ({"lm_head_q8": True, "prefill_rows": ABSENT}, False),  # before the ahead form (and the chunks): the first ran
    ({"lm_head_q8": False, "lm_head_pick_ahead": False}, True),  # the GEMV head: the pick's form meant nothing
    ({"lm_head_q8": False, "lm_head_pick_ahead": True}, True),
    ({"lm_head_q8": ABSENT, "prefill_rows": ABSENT}, True),  # before the int8 head
])
def test_a_recorded_pick_form_rebuilds_only_the_pick_this_version_builds(recorded, ran):
    """Snapshots recorded while the pick had two forms (build_plan's lm_head_pick_ahead), or before
    its ahead form, rebuild where the form that ran is the one left, and name no plan where the
    first form ran. (ABSENT: an option the recording has not.)"""
    cfg = preset("qwen3-tiny")
    options = {**build_plan(cfg, capacity=64).meta["options"], **recorded}
    options = recorded_options({k: v for k, v in options.items() if v is not ABSENT})
    if not ran:
        assert options is None
        return
    q8 = recorded["lm_head_q8"] is True
    assert options is not None and "lm_head_pick_ahead" not in options and options["lm_head_q8"] is q8
    assert build_plan(cfg, **options).to_dict() == build_plan(cfg, capacity=64, lm_head_q8=q8).to_dict()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_torch_runtime_decodes_the_default_tokens(dtype):
    cfg = preset("qwen3-tiny")
    weights = load_weights(cfg, None, getattr(torch, dtype), "cpu", 0)
    out = []
    for q8 in (False, True):
        rt = make_runtime("torch-eager", build_plan(cfg, dtype=dtype, capacity=128, lm_head_q8=q8), weights, "cpu")
        rt.reset([1, 2, 3, 4])
        for _ in range(40):
            rt.step()
        out.append(rt.bufs["out_tokens"][:43].tolist())
        if q8:  # the derived weights were made from the head, not given
            assert "head_q8" not in weights and rt.bufs["head_q8"].shape == (cfg.vocab_size, cfg.hidden_size // 4)
            assert int((rt.bufs["logits"] > -float("inf")).sum()) < cfg.vocab_size // 10
    assert out[0] == out[1]


def test_the_knob_builds_the_int8_head(monkeypatch):
    """The knob (on by default) is the tilelang engine's: the torch runtimes keep the GEMV head (their
    fastest form), so a CPU run builds the same plan either way; a shape the int8 kernels do not take
    keeps the GEMV head too, where the knob would otherwise make the whole engine fall back."""
    from tfdash.engine import load_engine, plan_for

    cfg = preset("qwen3-1.7b")
    assert [launch.op for launch in plan_for(cfg, "bfloat16", 64).launches[-3:]] == ["lm_head", "lm_head_pick",
                                                                                       "argmax"]
    for backend in ("torch-eager", "torch-graph"):
        assert "lm_head_pick" not in plan_for(cfg, "bfloat16", 64, backend).ops()
    tiny = preset("qwen3-tiny")  # hidden 256: the int8 kernels want a multiple of 512
    assert "lm_head_pick" not in plan_for(tiny, "bfloat16", 64).ops()
    assert plan_for(tiny, "bfloat16", 64).meta["options"]["lm_head_q8"] is False
    eng = load_engine(model="qwen3-tiny", device="cpu", capacity=64)
    assert eng.backend == "torch-eager" and "lm_head_pick" not in eng.plan.ops() and "head_q8" not in eng.runtime.bufs
    monkeypatch.setenv("TFDASH_LM_HEAD_Q8", "0")
    assert plan_for(cfg, "bfloat16", 64).launches[-2].op == "lm_head"


def test_derived_weights_are_made_from_the_runtimes_own_head():
    """A runtime derives the int8 copy from the head it holds, in its own dtype, even when handed one
    (a variant of another dtype would otherwise bound its logits with the other head's errors)."""
    cfg = preset("qwen3-tiny")
    weights = load_weights(cfg, None, torch.float32, "cpu", 0)
    given = {**weights, "head_q8": torch.zeros(cfg.vocab_size, cfg.hidden_size // 4, dtype=torch.int32),
             "head_q8_meta": torch.zeros(cfg.vocab_size, 4)}
    rt = make_runtime("torch-eager", build_plan(cfg, dtype="bfloat16", capacity=64, lm_head_q8=True), given, "cpu")
    q, meta = quantize_rows(rt.bufs["embed"])
    assert torch.equal(rt.bufs["head_q8"], q) and torch.equal(rt.bufs["head_q8_meta"], meta)


def test_the_fit_check_counts_the_int8_copy(monkeypatch):
    """A run that fits with the bf16 head but not beside the int8 head's copy is one line naming the
    copy, before anything is allocated; a torch runtime makes no copy, so the dashboard's preflight
    on the CPU counts none with the knob on."""
    from tfdash.app.main import preflight
    from tfdash.engine import plan_for
    from tfdash.engine.head_plan import derived_bytes
    from tfdash.engine.memory import check_fits, kv_bytes, weight_bytes
    from tfdash.errors import CapacityError

    cfg = preset("qwen3-32b")
    monkeypatch.setenv("TFDASH_LM_HEAD_Q8", "0")
    assert derived_bytes(plan_for(cfg, "bfloat16", 2112)) == 0
    monkeypatch.setenv("TFDASH_LM_HEAD_Q8", "1")
    made = derived_bytes(plan_for(cfg, "bfloat16", 2112))
    assert made == cfg.vocab_size * (cfg.hidden_size + 16)  # an int8 column a byte, four floats a row
    room = weight_bytes(cfg, "bfloat16") + kv_bytes(cfg, 2112, "bfloat16") + made // 2
    check_fits(cfg, 2112, "bfloat16", "cuda", available=room)  # the bf16 head alone fits
    with pytest.raises(CapacityError, match=r"the copies made from them \(0\.73 GiB\)"):
        check_fits(cfg, 2112, "bfloat16", "cuda", available=room, derived=made)
    from tfdash.engine import choose_engine

    tiny = preset("qwen3-tiny")
    cap = choose_engine(None, "qwen3-tiny", "cpu").capacity(None, "hello", 2112 - 64)  # what preflight sizes
    need = weight_bytes(tiny, "float32") + kv_bytes(tiny, cap, "float32")
    monkeypatch.setattr("tfdash.engine.memory.free_bytes", lambda device: need + 1)
    args = type("Args", (), dict(ckpt=None, model="qwen3-tiny", device="cpu", dtype=None, backend=None,
                                 prompt="hello", save=None))()
    preflight(args, 2112 - 64)  # torch-eager: no copy to count
    monkeypatch.setattr("tfdash.engine.memory.free_bytes", lambda device: need // 2)
    with pytest.raises(CapacityError, match="KV cache"):
        preflight(args, 2112 - 64)


def test_a_bench_variant_is_the_engines_plan_with_its_options_over_them():
    """The bench, the precompile script and kernel_times build a variant over the engine's plan (the
    int8 head in it), so each variant differs from tilelang-graph in its own options alone; the
    bf16-head variant is the engine's plan with the GEMV head."""
    from tfdash.engine import plan_for
    from tfdash.profiling.ab import Variant, variant_plan
    from tfdash.profiling.variants import PLAN_VARIANTS

    engine = plan_for(preset("qwen3-1.7b"), "bfloat16", 2112)
    assert engine.ops()["lm_head_pick"][0].kernel == "lm_head_pick"
    for name in ("tilelang-chains", "tilelang-bf16head"):
        plan, options = variant_plan(engine, Variant(name, dict(PLAN_VARIANTS[name])))
        changed = {k for k, v in options.items() if engine.meta["options"][k] != v}
        assert changed == set(PLAN_VARIANTS[name]), name
        assert ("lm_head_pick" in plan.ops()) == (name != "tilelang-bf16head")
