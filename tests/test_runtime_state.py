"""The runtime owns the step state: `held` restores pos/tok after whatever ran inside it,
`set_position` refuses a ctx past the cache, and an eager runtime has nothing to capture."""

from __future__ import annotations

import pytest
import torch
from profiling_support import micro_engine

from tfdash.errors import CapacityError


@pytest.fixture(scope="module")
def rt():
    return micro_engine(capacity=128).runtime


def test_held_restores_pos_and_tok_after_steps(rt):
    rt.reset([3, 4, 5])
    rt.set_position(10)
    tok = int(rt.bufs["tok"][0])
    with rt.held():
        for _ in range(4):
            rt.step()
        assert rt.position == 14  # the steps really ran inside
    assert rt.position == 10 and int(rt.bufs["tok"][0]) == tok


def test_held_restores_on_error(rt):
    rt.set_position(7)
    with pytest.raises(RuntimeError, match="boom"):
        with rt.held():
            rt.step()
            raise RuntimeError("boom")
    assert rt.position == 7


def test_held_other_keys(rt):
    before = rt.bufs["out_tokens"].clone()
    with rt.held(("out_tokens",)):
        rt.bufs["out_tokens"].fill_(9)
    assert torch.equal(rt.bufs["out_tokens"], before)


def test_set_position_refuses_past_the_cache(rt):
    with pytest.raises(CapacityError, match="capacity of 128"):
        rt.set_position(128)


def test_eager_runtime_has_nothing_to_capture(rt):
    assert rt.needs_capture is False
    assert rt.ensure_captured() is False


def test_a_plan_variant_runtime_shares_the_weights_and_decodes_the_same():
    from tfdash.engine.decode import Generation
    from tfdash.engine.plan import build_plan

    eng = micro_engine(capacity=128)
    rt = eng.runtime
    plan = build_plan(eng.config, "float32", capacity=128, fused_rope=False)
    var = rt.variant(plan)
    assert var.backend == rt.backend and var.plan is plan and len(plan) > len(rt.plan)
    assert var.bufs["L0.w_qkv"].data_ptr() == rt.bufs["L0.w_qkv"].data_ptr()  # shared, not copied
    a = [e.token_id for e in Generation(rt, [1, 2, 3], 12, eng.tokenizer)]
    b = [e.token_id for e in Generation(var, [1, 2, 3], 12, eng.tokenizer)]
    assert a == b


def test_the_ring_is_read_through_its_host_view(rt):
    """token() reads the numpy view of the ring (no torch call that releases the GIL): it sees
    what the step wrote into the ring's memory."""
    rt.reset([1, 2])
    rt.begin()
    rt.enqueue(5)
    rt.wait(5)
    assert rt.token(5) == int(rt.ring[5]) == int(rt.bufs["tok"][0])
    rt.ring[7] = 12345
    assert rt.token(7) == 12345


def test_a_generation_shortens_the_switch_interval_and_restores_it():
    import sys

    from tfdash.engine import decode

    eng = micro_engine(capacity=128)
    before = sys.getswitchinterval()
    seen = []
    for _ in decode.Generation(eng.runtime, [1, 2, 3], 4, eng.tokenizer):
        seen.append(sys.getswitchinterval())
    assert len(seen) == 4 and all(s == pytest.approx(min(before, decode.CPU_SWITCH_S)) for s in seen)  # a CPU runtime
    assert sys.getswitchinterval() == before
    cuda, cpu = min(before, decode.SWITCH_S), min(before, decode.CPU_SWITCH_S)
    with decode.steady_host(decode.SWITCH_S):  # what a CUDA runtime's generation asks for
        assert sys.getswitchinterval() == pytest.approx(cuda)
        with decode.steady_host(decode.CPU_SWITCH_S):  # concurrent ones run at the shortest
            assert sys.getswitchinterval() == pytest.approx(cuda)
    assert sys.getswitchinterval() == before
    cpu_run = decode.steady_host(decode.CPU_SWITCH_S)
    cpu_run.__enter__()
    assert sys.getswitchinterval() == pytest.approx(cpu)
    with decode.steady_host(decode.SWITCH_S):  # a CUDA generation joins: the shorter one
        assert sys.getswitchinterval() == pytest.approx(cuda)
    assert sys.getswitchinterval() == pytest.approx(cpu)  # it left; the CPU one goes on at its own
    cpu_run.__exit__(None, None, None)
    assert sys.getswitchinterval() == before


def test_carve_lays_the_buffers_out_in_order_zeroed_and_apart():
    from tfdash.engine.memory import carve

    got = carve({"a": ((3,), torch.int32), "b": ((2, 5), torch.float32), "c": ((7,), torch.bfloat16)}, "cpu", 512)
    assert [tuple(t.shape) for t in got.values()] == [(3,), (2, 5), (7,)]
    assert [t.dtype for t in got.values()] == [torch.int32, torch.float32, torch.bfloat16]
    assert all(t.is_contiguous() and not t.any() for t in got.values())
    base = got["a"].data_ptr()
    assert [t.data_ptr() - base for t in got.values()] == [0, 512, 1024]
    got["b"].fill_(1.0)  # apart: writing one leaves its neighbours zero
    assert not got["a"].any() and not got["c"].any()
    assert carve({}, "cpu", 4096) == {}


@pytest.mark.parametrize("align", [-512, 100, 768])
def test_an_arena_alignment_the_kernels_cannot_take_is_one_line(align):
    from tfdash.engine.memory import carve
    from tfdash.engine.runtime import make_runtime
    from tfdash.errors import ConfigError
    from tfdash.settings import SETTINGS

    with pytest.raises(ConfigError, match=f"TFDASH_STATE_ARENA={align}: want 0"):
        carve({"a": ((3,), torch.int32)}, "cpu", align)
    with pytest.raises(ConfigError, match=f"TFDASH_STATE_ARENA={align}: want 0"):
        carve({}, "cpu", align)  # nothing to carve is no excuse
    rt = micro_engine(capacity=128).runtime
    weights = {n: rt.bufs[n] for n, s in rt.plan.buffers.items() if s.kind == "weight"}
    with SETTINGS.override(state_arena=align), pytest.raises(ConfigError, match="want 0"):
        make_runtime(rt.backend, rt.plan, weights, "cpu")  # a negative one is not taken for 0


def test_a_runtime_with_its_state_in_an_arena_decodes_the_same():
    from tfdash.engine.decode import Generation
    from tfdash.engine.runtime import make_runtime
    from tfdash.settings import SETTINGS

    eng = micro_engine(capacity=128)
    rt = eng.runtime
    weights = {n: rt.bufs[n] for n, s in rt.plan.buffers.items() if s.kind == "weight"}
    with SETTINGS.override(state_arena=0):
        rt = make_runtime(rt.backend, rt.plan, weights, "cpu")
    arena = make_runtime(rt.backend, rt.plan, weights, "cpu")  # the default
    x, q = arena.bufs["x"], arena.bufs["q"]
    assert x.untyped_storage().data_ptr() == q.untyped_storage().data_ptr()  # one allocation
    assert rt.bufs["x"].untyped_storage().data_ptr() != rt.bufs["q"].untyped_storage().data_ptr()
    assert arena.bufs["k_cache"].untyped_storage().data_ptr() != x.untyped_storage().data_ptr()  # the cache apart
    a = [e.token_id for e in Generation(rt, [1, 2, 3], 12, eng.tokenizer)]
    b = [e.token_id for e in Generation(arena, [1, 2, 3], 12, eng.tokenizer)]
    assert a == b
