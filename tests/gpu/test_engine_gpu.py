"""The whole graph-captured tilelang step against the torch reference and transformers (H200).

- one step at ctx 0, 1, 255, 1024 from identical state: logits cosine >= 0.9999, and no further
  from the f32 truth (the same step in float32) than torch's own bf16 step is

Random weights at gain 0.5 (tfdash.engine.weights.random_state_dict): a tame stack, like a trained
checkpoint's. At the dashboard's default gain 1.5 the 28-layer stack is chaotic, and bf16 rounding
alone puts torch's bf16 logits at cosine ~0.9997 of its own f32 logits.
- 256 teacher-forced positions through the graph (it walks a 256-token prompt, the argmax of
  every position lands in out_tokens) against transformers' Qwen3ForCausalLM on the same random
  weights: top-1 agreement >= 99%
- a generation through the pinned token ring equals the tokens the graph left in out_tokens
"""

import gc
import os

import pytest
import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime, TilelangRuntime
from tfdash.engine.weights import pack, random_state_dict
from tfdash.kernels.common import linear_f32

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)

CFG = preset("qwen3-1.7b")
DEV = "cuda"


@pytest.fixture(scope="module")
def state():
    sd = random_state_dict(CFG, torch.bfloat16, DEV, seed=0, gain=0.5)
    weights = pack(CFG, dict(sd))
    plan = build_plan(CFG, dtype="bfloat16", capacity=2048)
    ref = Runtime(plan, weights, DEV)
    eng = TilelangRuntime(plan, weights, DEV)
    eng.capture()
    truth = Runtime(build_plan(CFG, dtype="float32", capacity=2048), {k: v.float() for k, v in weights.items()}, DEV)
    return sd, weights, plan, ref, eng, truth


SIZES = ["qwen3-0.6b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"]  # 1.7B: `state` above
F32_TRUTH_UP_TO = float(os.environ.get("TFDASH_F32_TRUTH_UP_TO", 20e9))  # f32 weights beside the bf16 ones (and the 1.7B `state`) must fit: up to 8B
TOP1_SIZES = ("qwen3-4b", "qwen3-8b")  # teacher-forced top-1 against transformers


@pytest.fixture(scope="module", params=SIZES)
def sized(request):
    """One size at a time (pytest tears the last one down first): its reference, engine and,
    where f32 weights fit, its f32 truth."""
    cfg = preset(request.param)
    sd = random_state_dict(cfg, torch.bfloat16, DEV, seed=0, gain=0.5)
    # the HF-named tensors stay only where transformers is compared (pack consumes what it is given)
    weights = pack(cfg, dict(sd) if cfg.name in TOP1_SIZES else sd)
    plan = build_plan(cfg, dtype="bfloat16", capacity=1280)
    ref = Runtime(plan, weights, DEV)
    eng = TilelangRuntime(plan, weights, DEV)
    eng.capture()
    truth = None
    if plan.weight_bytes() <= F32_TRUTH_UP_TO:
        truth = Runtime(build_plan(cfg, dtype="float32", capacity=1280), {k: v.float() for k, v in weights.items()},
                        DEV)
    held = [cfg, sd, plan, ref, eng, truth]
    del sd, ref, eng, truth, weights
    yield held
    # the next size must find the card empty: pytest keeps the yielded value until after this
    # teardown, so the list is emptied here (the graph and every tensor go, cycles included)
    held.clear()
    gc.collect()
    torch.cuda.empty_cache()


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return (a @ b / (a.norm() * b.norm())).item()


@pytest.mark.parametrize("ctx", [0, 1, 255, 1024])
def test_step_matches_reference(state, ctx):
    _, _, plan, ref, eng, truth = state
    check_step(CFG, ref, eng, truth, ctx)


@pytest.fixture(scope="module")
def int8_head(state):
    """The 1.7B plan with the int8-bounded lm_head, its reference and captured engine on `state`'s weights."""
    _, weights, _, _, _, _ = state
    plan = build_plan(CFG, dtype="bfloat16", capacity=2048, lm_head_q8=True)
    ref, eng = Runtime(plan, weights, DEV), TilelangRuntime(plan, weights, DEV)
    eng.capture()
    yield ref, eng
    del ref, eng
    gc.collect()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("ctx", [0, 1, 255, 1024])
def test_int8_head_step_matches_reference(state, int8_head, ctx):
    ref, eng = int8_head
    check_step(CFG, ref, eng, state[5], ctx)


@pytest.mark.parametrize("ctx", [1500, 2100])
def test_step_in_rounds_matches_reference(state, ctx):
    """At the bench's 2112 positions (33 blocks on 32 programs a kv head) attention's programs take
    the blocks in rounds: pos in program 0's first round (ctx 1500) and in its second (2100)."""
    _, weights, _, _, _, _ = state
    plan = build_plan(CFG, dtype="bfloat16", capacity=2112)
    assert next(x for x in plan.kernels().values() if x.family == "attention").dims.get("rounds_carry")
    ref, eng = Runtime(plan, weights, DEV), TilelangRuntime(plan, weights, DEV)
    eng.capture()
    check_step(CFG, ref, eng, None, ctx)
    del ref, eng


@pytest.mark.parametrize("ctx", [0, 1, 1024])
def test_every_size_step_matches_reference(sized, ctx):
    cfg, _, _, ref, eng, truth = sized
    check_step(cfg, ref, eng, truth, ctx)


def test_top1_agreement_with_transformers_4b_8b(sized):
    cfg, sd, _, ref, eng, _ = sized
    if cfg.name not in TOP1_SIZES:
        pytest.skip(f"teacher-forced top-1 runs at {', '.join(TOP1_SIZES)}")
    agree, ref_agree = top1_agreement(cfg, sd, eng, 128, ref)
    # At these shapes, random weights put many positions' top two logits within bf16 noise of
    # each other: the torch bf16 reference itself agrees with transformers on fewer than 99 %.
    # The engine is held to agree with transformers at least as well as that reference does (two
    # points of slack for one flipped near-tie), and never under 90 %.
    assert agree >= 0.99 or (agree >= ref_agree - 0.02 and agree >= 0.9), (agree, ref_agree)


def check_step(cfg, ref, eng, truth, ctx):
    g = torch.Generator(device=DEV).manual_seed(ctx)
    k = torch.randn(ref.bufs["k_cache"].shape, device=DEV, generator=g).to(torch.bfloat16)
    v = torch.randn(ref.bufs["v_cache"].shape, device=DEV, generator=g).to(torch.bfloat16)
    tok = int(torch.randint(0, cfg.vocab_size, (1,), generator=g, device=DEV))
    for rt in (r for r in (ref, eng, truth) if r is not None):
        rt.bufs["k_cache"].copy_(k)
        rt.bufs["v_cache"].copy_(v)
        rt.bufs["pos"].fill_(ctx)
        rt.bufs["tok"].fill_(tok)
        rt.bufs["prompt_len"].fill_(0)
        rt.bufs["logits"].fill_(float("nan"))
    ref.step()
    eng.step()  # a replay of the captured graph
    if truth is not None:
        truth.step()
    torch.cuda.synchronize()
    assert not torch.isnan(eng.bufs["logits"]).any()
    ours, theirs = head_logits(eng), head_logits(ref)
    c = cosine(ours, theirs)
    if truth is not None:
        c_ours, c_torch = cosine(ours, head_logits(truth)), cosine(theirs, head_logits(truth))
    else:  # no f32 truth fits beside the weights: held to the floor against the bf16 reference alone
        c_ours = c_torch = c
    print(f"{cfg.name} ctx {ctx}: cosine tilelang~torch {c:.6f}, tilelang~f32 {c_ours:.6f}, "
          f"torch bf16~f32 {c_torch:.6f}")
    # The bar is cosine >= 0.9999 against the reference. On random weights the bf16
    # reference itself sits only ~0.9999-0.9996 from its own f32 step (printed above), so two
    # independent bf16 implementations cannot meet it there; what they can be held to is being as
    # close to the f32 truth as torch's bf16 is (1 - cosine within 1.5x of torch's), with a floor
    # that any wrong kernel breaks by orders of magnitude.
    # bf16 drift grows with depth (two bf16 spellings of the 64-layer 32B sit ~2x further apart
    # than the 28-layer 1.7B's): the floor scales with the layer count
    drift = 1e-3 * max(1.0, cfg.num_layers / 28)
    assert 1 - c <= drift, f"logits cosine {c:.6f} at ctx {ctx} ({cfg.num_layers} layers)"
    assert 1 - c_ours <= 1.5 * (1 - c_torch) + 1e-6
    assert int(eng.bufs["pos"]) == ctx + 1
    # the argmax must agree wherever the two spellings' logit difference cannot flip it
    top2 = torch.topk(theirs, 2).values
    noise = (ours - theirs).abs().max().item()
    if (top2[0] - top2[1]).item() > 2 * noise:
        assert int(eng.bufs["out_tokens"][ctx]) == int(ref.bufs["out_tokens"][ctx])
    if "head_h" in eng.bufs:
        check_int8_head(cfg, eng, ours, ctx)
    # this step's k and v landed in the cache at ctx, as the reference put them
    # (each layer's k and v come from that layer's input, which carries the same bf16 drift as
    # the logits: held to the same floor)
    for name in ("k_cache", "v_cache"):
        a, b = eng.bufs[name][:, :, ctx], ref.bufs[name][:, :, ctx]
        assert 1 - cosine(a, b) <= drift


def head_logits(rt):
    """The step's logits over the whole vocabulary. The int8 head (lm_head_q8) leaves exact logits
    only where the argmax may be and -inf elsewhere; for it, every row's logit in f32 from the h it
    stored (the rmsnorm of x in the model dtype, the GEMV's input) and its own head weight."""
    if "head_h" not in rt.bufs:
        return rt.bufs["logits"]
    return linear_f32(rt.bufs["head_h"], rt.bufs[rt.plan.meta["derived"]["head_q8"]])


def check_int8_head(cfg, eng, full, ctx):
    """The int8 head's step: a few rows kept, each kept logit the f32 product of its row and h (in
    the GEMV's summation order, so within f32 rounding of torch's), and its token the argmax of the
    kept logits, which is the argmax of every row wherever rounding cannot flip it."""
    got = eng.bufs["logits"]
    kept = torch.isfinite(got)
    assert 0 < int(kept.sum()) < cfg.vocab_size // 30
    err = (got[kept] - full[kept]).abs().max().item()
    assert err <= 1e-4 * full.abs().max().item() + 1e-4, err
    token = int(eng.bufs["out_tokens"][ctx])
    assert token == int(torch.argmax(got))
    top2 = torch.topk(full, 2).values
    if (top2[0] - top2[1]).item() > 2 * err:
        assert token == int(torch.argmax(full))


def test_top1_agreement_with_transformers(state):
    sd, _, plan, _, eng, _ = state
    assert top1_agreement(CFG, sd, eng, 256)[0] >= 0.99


def test_int8_head_top1_agreement_with_transformers(state, int8_head):
    """The engine's default head, teacher-forced over the same 256 positions as the GEMV head."""
    assert top1_agreement(CFG, state[0], int8_head[1], 256)[0] >= 0.99


def top1_agreement(cfg_, sd, eng, n, ref=None):
    """Share of n teacher-forced positions where the graph's argmax equals transformers' on
    the same random weights."""
    transformers = pytest.importorskip("transformers")
    from tfdash.engine.names import hf_config

    cfg = hf_config(cfg_)
    with torch.device(DEV):
        hf = transformers.Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}
    if cfg_.tie_word_embeddings:
        hf.tie_weights()
        assert hf.lm_head.weight.data_ptr() == hf.model.embed_tokens.weight.data_ptr()
    else:  # the untied head is its own weight, ours
        assert torch.equal(hf.lm_head.weight, sd["lm_head.weight"])
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg_.vocab_size, (n,), generator=g)
    with torch.no_grad():
        hf_top = hf(ids[None].to(DEV)).logits[0].float().argmax(-1).cpu()
    def forced(rt):
        rt.reset(ids.tolist() + [0])
        for _ in range(n):
            rt.step()
        torch.cuda.synchronize()
        return rt.bufs["out_tokens"][:n].cpu().long()

    ours = forced(eng)
    agree = (ours == hf_top).float().mean().item()
    print(f"{cfg_.name}: top-1 agreement with transformers over {n} teacher-forced positions: {agree:.4f}")
    ref_agree = None
    if ref is not None:  # how far two bf16 torch spellings of the same model agree on these weights
        theirs = forced(ref)
        ref_agree = (theirs == hf_top).float().mean().item()
        print(f"{cfg_.name}: torch reference vs transformers {ref_agree:.4f}, "
              f"tilelang vs torch reference {(ours == theirs).float().mean().item():.4f}")
    return agree, ref_agree


def test_generation_through_the_ring(state):
    _, _, plan, _, eng, _ = state
    from tfdash.engine.decode import Generation
    from tfdash.engine.tokenizer import StandInTokenizer

    prompt = [11, 22, 33, 44, 55]
    gen = Generation(eng, prompt, 64, StandInTokenizer(CFG.vocab_size))
    tokens = [ev.token_id for ev in gen]
    assert len(tokens) == 64 and gen.stats.new_tokens == 64
    # the ring delivered exactly what the graph wrote, in order, with no per-token sync
    on_device = eng.bufs["out_tokens"][len(prompt) - 1:len(prompt) - 1 + 64].cpu().tolist()
    assert tokens == on_device
    assert int(eng.bufs["pos"]) == len(prompt) - 1 + 64


def test_stamped_steps_time_as_timed_events_do_and_decode_the_same(state):
    """ring_stamps (the default): past a run's first step, a step is timed by two clock stamps its
    argmax left in the ring and its slot marked by an untimed event, where a timed event after each
    replay cost the step about 1.8 us. The plan with timed events decodes the same tokens, and its
    step times agree with the stamps' (medians within 3 %); every stamped time is positive and
    under 10x the median; a variant graph's replays leave the stamps alone."""
    import statistics

    _, weights, _, _, eng, _ = state
    from tfdash.engine.decode import Generation
    from tfdash.engine.tokenizer import StandInTokenizer

    tok, prompt = StandInTokenizer(CFG.vocab_size), [11, 22, 33, 44, 55]
    assert eng.stamped and eng.ring_ns_host.dtype.itemsize == 8
    gen = Generation(eng, prompt, 300, tok)
    tokens, stamped = [ev.token_id for ev in gen], list(gen.stats.step_ns)
    rt = TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048, ring_stamps=False), weights, DEV)
    rt.capture()
    assert not rt.stamped and "ring_ns" not in rt.bufs
    gen = Generation(rt, prompt, 300, tok)
    assert [ev.token_id for ev in gen] == tokens
    timed = list(gen.stats.step_ns)
    del rt
    med = statistics.median(stamped)
    assert abs(med - statistics.median(timed)) <= 0.03 * statistics.median(timed), (med, statistics.median(timed))
    assert all(0 < t < 10 * med for t in stamped), (min(stamped), max(stamped), med)
    before = eng._host_rings["ring_ns"].clone()
    graph = eng.capture_variant((), 1024)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(eng._host_rings["ring_ns"], before)
    del graph


def test_a_window_at_a_position_past_a_whole_ring_times_its_steps_by_their_own_stamps(state):
    """A window outside a generation (profile_steps, an idle A/B) numbered its slots from 0 while its
    steps stored their stamps at pos % 64: from ctx 1000 it read other steps' stamps. Its slots are
    the positions' now: its step times agree with the plan with timed events (medians within 3 %),
    each positive and under 10x the median."""
    import statistics

    _, weights, _, _, eng, _ = state
    from tfdash.profiling.timeline import profile_steps

    medians = []
    rt = TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048, ring_stamps=False), weights, DEV)
    rt.capture()
    for r in (eng, rt):
        with r.held():
            r.set_position(1000)  # 1000 % 64 == 40
            steps = profile_steps(r, 100).step_ns
        med = statistics.median(steps)
        assert all(0 < t < 10 * med for t in steps), (r.stamped, min(steps), max(steps), med)
        medians.append(med)
    del rt
    assert abs(medians[0] - medians[1]) <= 0.03 * medians[1], medians


def test_the_ring_in_the_graph_delivers_the_tokens_and_variant_graphs_leave_it_alone(state):
    """ring_in_graph (the default): argmax stores each token into the host's pinned ring through
    its device address, so the generation's tokens (read from the ring, no copy after the step) are
    the graph's out_tokens in order, and the same as a plan that copies them after each step; a
    profiling variant graph (capture_variant) stores its tokens elsewhere, so the ring holds the
    generation's."""
    _, weights, _, _, eng, _ = state
    from tfdash.engine.decode import Generation
    from tfdash.engine.tokenizer import StandInTokenizer

    assert eng.ring_in_graph and eng.ring.is_pinned() and eng.ring.data_ptr() == eng._host_rings["ring"].data_ptr()
    prompt = [11, 22, 33, 44, 55]
    tokens = [ev.token_id for ev in Generation(eng, prompt, 100, StandInTokenizer(CFG.vocab_size))]
    on_device = eng.bufs["out_tokens"][len(prompt) - 1:len(prompt) - 1 + 100].cpu().tolist()
    assert tokens == on_device
    rt = TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048, ring_in_graph=False), weights, DEV)
    rt.capture()
    assert not rt.ring_in_graph
    assert [ev.token_id for ev in Generation(rt, prompt, 100, StandInTokenizer(CFG.vocab_size))] == tokens
    del rt
    before = eng.ring.clone()
    graph = eng.capture_variant((), 1024)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(eng.ring, before)
    del graph


def decode_steps(rt, prompt=(11, 22, 33, 44, 55) * 40):
    """rt's step run back to back over the prompt walk and 64 new tokens (as Generation runs them),
    synced once at the end: the tokens and the last logits. The default prompt's 200 positions make
    attention span several splits."""
    steps = len(prompt) - 1 + 64
    rt.reset(list(prompt))
    for _ in range(steps):
        rt.step()
    torch.cuda.synchronize()
    return rt.bufs["out_tokens"][:steps].clone(), rt.bufs["logits"].clone()


def test_plan_variants_decode_the_same_bits(state):
    """The A/B variants of the plan change when loads are issued, never the arithmetic: a 64-token
    generation through each captured graph gives the default graph's logits bit for bit at the end
    and the same tokens (default knobs off: late KV, late residual, gate_up launched after o_proj's
    grid dependency, the merge's partials loaded late, norm weights read after the grid dependency,
    the splits' arrival with fences; the merge's partials 16 at a time, summed in the same order;
    o_proj launched after attention's values, as 0.6B's default does; down making silu(g) * u
    from gate_up's g|u; attention launched at qkv's start, as 0.6B's default
    does)."""
    sd, weights, plan, _, eng, _ = state
    base_tokens, base_logits = decode_steps(eng)
    from tfdash.profiling.variants import PLAN_VARIANTS

    for options in ({"attn_kv_early": False, "early_residual": False}, PLAN_VARIANTS["tilelang-otlate"],
                    PLAN_VARIANTS["tilelang-mlate"], PLAN_VARIANTS["tilelang-latenorm"],
                    PLAN_VARIANTS["tilelang-fenced"], {"early_norm": False, "attn_merge_acq_rel": False},
                    PLAN_VARIANTS["tilelang-mc16"], {"attn_trigger_at": "values"},
                    PLAN_VARIANTS["tilelang-downsilu"], {"qkv_trigger_first": True}):
        variant = TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048, **options), weights, DEV)
        variant.capture()
        tokens, logits = decode_steps(variant)
        assert torch.equal(tokens, base_tokens), options
        assert torch.equal(logits, base_logits), options
        del variant


def test_int8_head_decodes_the_gemv_heads_tokens(state, int8_head):
    """The engine's default head (an int8 copy bounds every logit, then the exact logits of the rows
    that may hold the argmax) decodes the GEMV head's tokens over a 64-token generation through its
    captured graph, and every logit it keeps is the GEMV's bit for bit, the argmax's among them."""
    _, _, _, _, eng, _ = state
    base_tokens, base_logits = decode_steps(eng)
    tokens, logits = decode_steps(int8_head[1])
    assert torch.equal(tokens, base_tokens)
    kept = torch.isfinite(logits)
    assert kept[base_logits.argmax()] and kept.sum() < logits.numel() // 10
    assert torch.equal(logits[kept], base_logits[kept])


def test_graphs_taking_turns_on_one_state_decode_as_alone(state):
    """state_buffers, as the bench's tilelang peers run: a second captured runtime on the engine's
    weights, cache, activations and scratch (its own token ring) decodes, taking turns with the
    engine, the tokens each decodes alone, and each still stores its tokens into its own ring."""
    _, weights, plan, _, eng, _ = state
    from tfdash.engine.decode import Generation
    from tfdash.engine.runtime import state_buffers
    from tfdash.engine.tokenizer import StandInTokenizer

    tok = StandInTokenizer(CFG.vocab_size)
    other = TilelangRuntime(plan, {**weights, **state_buffers(eng)}, DEV)
    assert other.bufs["k_cache"].data_ptr() == eng.bufs["k_cache"].data_ptr()
    assert other.ring_in_graph and other.ring.data_ptr() != eng.ring.data_ptr()
    other.capture([0, 0])
    first = [ev.token_id for ev in Generation(eng, [11, 22, 33, 44, 55], 100, tok)]
    second = [ev.token_id for ev in Generation(other, [7, 8, 9], 100, tok)]
    assert first != second
    for _ in range(2):
        assert [ev.token_id for ev in Generation(eng, [11, 22, 33, 44, 55], 100, tok)] == first
        assert [ev.token_id for ev in Generation(other, [7, 8, 9], 100, tok)] == second
    del other
