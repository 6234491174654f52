"""The torch-compile peer's attention spellings (SDPA in the model dtype, masked over the capacity,
and the other forms a torch user might write) compute what the reference spelling computes."""

import pytest
import torch

from tfdash.engine.compiled import bmm_attention, sdpa_attention, sdpa_heads_attention
from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime
from tfdash.engine.weights import pack, random_state_dict
from tfdash.kernels.attention import torch_attention


@pytest.mark.parametrize("form", [sdpa_attention, sdpa_heads_attention, bmm_attention])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("ctx", [0, 5, 63])
def test_sdpa_attention_matches_the_reference(ctx, fused, form):
    cfg = preset("qwen3-tiny")
    plan = build_plan(cfg, dtype="float32", capacity=64, fused_rope=fused)
    rt = Runtime(plan, pack(cfg, random_state_dict(cfg, torch.float32, seed=1)), "cpu")
    gen = torch.Generator().manual_seed(ctx)
    for name in ("k_cache", "v_cache", "qkv", "q"):
        rt.bufs[name].copy_(torch.randn(rt.bufs[name].shape, generator=gen))
    rt.bufs["pos"].fill_(ctx)
    [launch] = [x for x in plan.launches if x.role == "L0.attention"]

    def run(fn):
        bufs = {role: rt.bufs[name].clone() for role, name in launch.args.items()}
        fn(launch.dims, bufs)
        return bufs

    ref, fast = run(torch_attention), run(form)
    torch.testing.assert_close(fast["out"], ref["out"], rtol=1e-4, atol=1e-5)
    if fused:  # both appended this step's k and v at ctx
        torch.testing.assert_close(fast["k_cache"], ref["k_cache"])


def test_the_compiled_step_builds_through_aot_autograd_in_bf16_with_the_state_arena_on(one_thread):
    """aot_autograd (under inductor) refuses a step that writes views of one allocation in different
    dtypes, which the engine's state arena is in bf16; the peer's state is its own tensors, so the
    traced step builds and decodes the tokens of the same step traced without aot_autograd."""
    from tfdash.engine import load_engine
    from tfdash.engine.compiled import CompiledRuntime
    from tfdash.settings import SETTINGS

    eng = load_engine(model="qwen3-tiny", device="cpu", dtype="bfloat16")
    weights = {n: eng.runtime.bufs[n] for n, s in eng.plan.buffers.items() if s.kind == "weight"}
    tokens = {}
    with SETTINGS.override(state_arena=4096):
        for backend in ("eager", "aot_eager"):  # dynamo's trace alone, then through aot_autograd
            rt = CompiledRuntime(eng.plan, weights, "cpu", mode=None, backend=backend)
            assert len({b.untyped_storage().data_ptr() for n, b in rt.bufs.items()
                        if eng.plan.buffers[n].kind not in ("weight", "cache")
                        and eng.plan.buffers[n].parent is None}) > 1
            rt.reset([1, 2, 3])
            tokens[backend] = []
            for _ in range(4):
                rt.step()
                tokens[backend].append(int(rt.bufs["tok"]))
    assert tokens["aot_eager"] == tokens["eager"]


def test_the_compiled_peer_takes_a_prompt_in_chunks_and_makes_the_eager_tokens():
    """The peer's launch list is its one compiled step, so the head that follows a prompt's chunks
    runs its launches one by one (run_launch), eagerly; its tokens are the eager runtime's."""
    from tfdash.engine.compiled import CompiledRuntime
    from tfdash.engine.decode import Generation
    from tfdash.engine.tokenizer import StandInTokenizer

    cfg = preset("qwen3-tiny")
    plan = build_plan(cfg, dtype="float32", capacity=64, prefill_rows=16)
    weights = pack(cfg, random_state_dict(cfg, torch.float32, seed=2))
    peer = CompiledRuntime(plan, weights, "cpu", mode=None, backend="eager")
    assert len(peer.launch_fns) == 1 and peer.prefill is not None
    tok = StandInTokenizer(cfg.vocab_size)
    got = Generation(peer, [1, 2, 3, 4, 5], 4, tok)
    want = [e.token_id for e in Generation(Runtime(plan, weights, "cpu"), [1, 2, 3, 4, 5], 4, tok)]
    assert [e.token_id for e in got] == want and got.stats.prefill_positions == 5


def test_the_peers_bf16_head_gives_the_f32_heads_logits_rounded_to_bf16(monkeypatch):
    """The head form a torch user writes (`output(x)` in bf16) differs from the bench peer's f32
    accumulator only by the logits' rounding to bf16 (on the CPU, where the f32 form rounds too, not
    at all); a form name that is not one is refused."""
    import tfdash.kernels.gemv as gemv
    from tfdash.engine.compiled import CompiledRuntime

    cfg = preset("qwen3-tiny")
    plan = build_plan(cfg, dtype="bfloat16", capacity=64)
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, seed=3))
    logits = {}
    for head in ("f32", "bf16"):
        if head == "bf16":  # the f32 accumulator's spelling is the only one of the step that calls it
            monkeypatch.setattr(gemv, "linear_f32", lambda *a: pytest.fail("the f32 head ran"))
        rt = CompiledRuntime(plan, weights, "cpu", mode=None, backend="eager", head=head)
        rt.reset([1, 2, 3])
        rt.step()
        logits[head] = rt.bufs["logits"].clone()
    assert logits["bf16"].dtype == torch.float32
    torch.testing.assert_close(logits["bf16"], logits["f32"].to(torch.bfloat16).float(), rtol=0.02, atol=0.02)
    with pytest.raises(ValueError, match="the forms are"):
        CompiledRuntime(plan, weights, "cpu", mode=None, backend="eager", attention="flash")


@pytest.mark.parametrize("attention", ["sdpa", "sdpa-heads", "bmm"])
def test_each_peer_form_traces_whole_and_decodes_the_eager_tokens(attention, one_thread):
    """Each attention form through dynamo's whole-step trace (fullgraph: a graph break is an error
    here, not a surprise on the GPU) decodes the tokens of the eager runtime."""
    from tfdash.engine.compiled import CompiledRuntime

    cfg = preset("qwen3-tiny")
    plan = build_plan(cfg, dtype="float32", capacity=64)
    weights = pack(cfg, random_state_dict(cfg, torch.float32, seed=4))
    tokens = {}
    for name, rt in (("eager", Runtime(plan, weights, "cpu")),
                     (attention, CompiledRuntime(plan, weights, "cpu", mode=None, backend="eager", attention=attention))):
        rt.reset([1, 2, 3])
        tokens[name] = []
        for _ in range(5):
            rt.step()
            tokens[name].append(int(rt.bufs["tok"]))
    assert tokens[attention] == tokens["eager"]
