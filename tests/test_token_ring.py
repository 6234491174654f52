"""The token ring (tfdash.engine.token_ring): the plan's argmax stores each step's token into it by
position from inside the step, by default; a plan without that copies it there after the step. A
CPU runtime stores the token itself (the CUDA ring, pinned and written through its device address,
is tested on the H200: tests/gpu/test_engine_gpu.py)."""

from __future__ import annotations

import pytest
import torch

from tfdash.engine.token_ring import device_view


def test_a_device_view_wants_pinned_contiguous_memory():
    with pytest.raises(ValueError, match="pinned, contiguous host tensor"):
        device_view(torch.zeros(64, dtype=torch.int32), "cuda")


def test_the_default_plan_has_the_ring_and_the_knob_takes_it_away():
    from profiling_support import MICRO

    from tfdash.engine import plan_for
    from tfdash.engine.plan import TOKEN_RING
    from tfdash.settings import SETTINGS

    plan = plan_for(MICRO, "float32", 128)
    assert plan.meta["options"]["ring_in_graph"] is True and plan.buffers["ring"].shape == (TOKEN_RING,)
    assert plan.ops()["argmax"][0].kernel == "argmax_feed_ring_ns"
    with SETTINGS.override(ring_in_graph=False):
        plan = plan_for(MICRO, "float32", 128)
    assert plan.meta["options"]["ring_in_graph"] is False and "ring" not in plan.buffers
    assert plan.ops()["argmax"][0].kernel == "argmax_feed"


def test_a_plan_with_its_ring_stores_each_token_by_position_and_decodes_the_same():
    """ring_in_graph: the argmax launch stores each step's token at ring[pos % 64] (the host's
    pinned ring on CUDA, through its device address; a host tensor here), and the plan decodes
    the tokens the plan without it does; a variant graph's steps never reach it (CUDA: tests/gpu)."""
    from profiling_support import MICRO

    from tfdash.engine.decode import Generation
    from tfdash.engine.plan import TOKEN_RING, build_plan
    from tfdash.engine.runtime import Runtime
    from tfdash.engine.tokenizer import StandInTokenizer
    from tfdash.engine.weights import load_weights

    plan = build_plan(MICRO, "float32", capacity=128, ring_in_graph=True)
    argmax = plan.ops()["argmax"][0]
    assert argmax.kernel == "argmax_feed_ring_ns" and argmax.dims["ring"] == TOKEN_RING and argmax.args["ring"] == "ring"
    assert plan.buffers["ring"].shape == (TOKEN_RING,)
    assert build_plan(MICRO, **plan.meta["options"]).to_dict() == plan.to_dict()
    assert "ring" not in build_plan(MICRO, "float32", capacity=128, ring_in_graph=False).buffers
    weights = load_weights(MICRO, None, torch.float32, "cpu", 0)
    prompt, toks = [3, 1, 4, 1, 5], {}
    for ring in (False, True):
        rt = Runtime(build_plan(MICRO, "float32", capacity=128, ring_in_graph=ring), weights, "cpu")
        toks[ring] = [ev.token_id for ev in Generation(rt, prompt, 80, StandInTokenizer(MICRO.vocab_size))]
    assert toks[True] == toks[False] and len(toks[True]) == 80
    ring = rt.bufs["ring"]
    last = len(prompt) - 1 + 80  # positions 0 .. last - 1 stepped
    for p in range(last - TOKEN_RING, last):  # the latest 64 steps' tokens, each at its position's slot
        want = int(rt.bufs["out_tokens"][p]) if p + 1 >= len(prompt) else prompt[p + 1]
        assert int(ring[p % TOKEN_RING]) == want


def test_runtimes_taking_turns_on_one_state_decode_as_alone_and_keep_their_rings():
    """state_buffers (the bench's tilelang peers): a runtime given another's cache, activations and
    scratch beside the weights runs on them in place, where its plan's shapes match (a larger
    cache is its own), keeps its own token ring, and generations taking turns on the shared state
    decode the tokens each runtime decodes alone."""
    from profiling_support import MICRO

    from tfdash.engine.decode import Generation
    from tfdash.engine.plan import build_plan
    from tfdash.engine.runtime import Runtime, state_buffers
    from tfdash.engine.tokenizer import StandInTokenizer
    from tfdash.engine.weights import load_weights

    weights = load_weights(MICRO, None, torch.float32, "cpu", 0)
    plan = build_plan(MICRO, "float32", capacity=128)
    first = Runtime(plan, weights, "cpu")
    state = state_buffers(first)
    assert {"k_cache", "v_cache", "x", "pos", "attn_part"} <= set(state) and "ring" not in state
    assert not set(state) & {n for n, s in plan.buffers.items() if s.kind == "weight"}
    second = Runtime(plan, {**weights, **state}, "cpu")
    assert second.bufs["k_cache"].data_ptr() == first.bufs["k_cache"].data_ptr()
    assert second.bufs["ring"].data_ptr() != first.bufs["ring"].data_ptr() and "ring" not in second.shared
    larger = Runtime(build_plan(MICRO, "float32", capacity=256), {**weights, **state}, "cpu")
    assert larger.bufs["k_cache"].data_ptr() != first.bufs["k_cache"].data_ptr()
    assert larger.bufs["x"].data_ptr() == first.bufs["x"].data_ptr()
    tok = StandInTokenizer(MICRO.vocab_size)

    def generate(rt, prompt):
        return [ev.token_id for ev in Generation(rt, prompt, 40, tok)]

    alone = generate(Runtime(plan, weights, "cpu"), [3, 1, 4, 1, 5])
    other = generate(Runtime(plan, weights, "cpu"), [2, 7, 1, 8])
    assert alone != other
    for _ in range(2):
        assert generate(first, [3, 1, 4, 1, 5]) == alone
        assert generate(second, [2, 7, 1, 8]) == other
        assert generate(larger, [3, 1, 4, 1, 5]) == alone


def test_a_step_is_timed_by_stamps_only_after_a_stamped_step():
    """slot_timing: a timed event after each replay cost a step about 1.8 us of GPU time, so a step
    whose graph stamps the clock after a stamped one is the difference of two stamps, its slot
    marked by an untimed event. Every other step is timed by events: from the slot before's timed
    event (or the run's start), else from an event of its own just before it."""
    from tfdash.engine.token_ring import slot_timing

    assert slot_timing(True, None) == (True, False)  # a run's first step: from the start event
    assert slot_timing(True, (True, True)) == (False, False)  # stamp after stamp
    assert slot_timing(True, (True, False)) == (False, False)
    assert slot_timing(True, (False, True)) == (True, False)  # after a window's step: events
    assert slot_timing(False, (True, False)) == (True, True)  # a window's step after stamps: its own start
    assert slot_timing(False, (True, True)) == (True, False)
    assert slot_timing(False, None) == (True, False)


def test_the_stamps_come_with_the_ring_and_the_knob_takes_them_away():
    """ring_stamps: argmax also stamps the device clock into ring_ns (int64, slot pos % 64); off, or
    without the ring, the plan has no ring_ns and the argmax kernel keeps the name it had."""
    from profiling_support import MICRO

    from tfdash.engine import plan_for
    from tfdash.engine.plan import TOKEN_RING, build_plan
    from tfdash.settings import SETTINGS

    plan = plan_for(MICRO, "float32", 128)
    argmax = plan.ops()["argmax"][0]
    assert plan.buffers["ring_ns"].shape == (TOKEN_RING,) and plan.buffers["ring_ns"].dtype == "int64"
    assert argmax.dims["stamps"] is True and argmax.args["ring_ns"] == "ring_ns"
    with SETTINGS.override(ring_stamps=False):
        plan = plan_for(MICRO, "float32", 128)
    assert "ring_ns" not in plan.buffers and plan.ops()["argmax"][0].kernel == "argmax_feed_ring"
    plan = build_plan(MICRO, "float32", capacity=128, ring_in_graph=False)
    assert "ring_ns" not in plan.buffers and plan.ops()["argmax"][0].kernel == "argmax_feed"


class _Clock:
    """A stand-in for the GPU's time line: events and the argmax's stamps read it."""

    def __init__(self):
        self.ns = 1_000_000


class _Event:
    def __init__(self, clock, timing=True):
        self.clock, self.timing, self.at, self.records = clock, timing, None, 0

    def record(self):
        self.at, self.records = self.clock.ns, self.records + 1

    def query(self):
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        assert self.timing and end.timing, "an untimed event has no time"
        return (end.at - self.at) / 1e6  # ms, as torch says it


def _ring(durations):
    """A CUDA TokenRing over a simulated graph: step k at pos takes durations[pos] ns and its argmax
    stores the token and the clock at pos % 64, as the plan's kernel does."""
    from types import SimpleNamespace

    from tfdash.engine.plan import TOKEN_RING
    from tfdash.engine.token_ring import TokenRing

    clock = _Clock()
    r = TokenRing()
    r.cuda, r.stamped, r.ring_in_graph = True, True, True
    r.ring = torch.zeros(TOKEN_RING, dtype=torch.int32)
    r.ring_host, r.ring_ns_host = r.ring.numpy(), torch.zeros(TOKEN_RING, dtype=torch.int64).numpy()
    r.ring_events = [_Event(clock) for _ in range(TOKEN_RING)]
    r.quiet_events = [_Event(clock, timing=False) for _ in range(TOKEN_RING)]
    r.start_events = [_Event(clock) for _ in range(TOKEN_RING)]
    r.start_event = _Event(clock)
    r._prev_slot, r._pos, r._own_writes = None, None, ("ring", "ring_ns")
    r._slot_prev, r._slot_how = [None] * TOKEN_RING, [(False, True, False)] * TOKEN_RING
    r.bufs = {"tok": torch.zeros(1, dtype=torch.int32)}
    state = SimpleNamespace(pos=0)

    def graph(stamps=True):
        clock.ns += durations[state.pos]
        r.ring_host[state.pos % TOKEN_RING] = state.pos
        if stamps:
            r.ring_ns_host[state.pos % TOKEN_RING] = clock.ns
        state.pos += 1

    r.step = graph
    return r, state, graph


def test_stamps_are_read_from_the_slots_the_graph_stored_them_in():
    """A step's stamp lands at pos % 64. Told the position (`begin(pos)`), the ring stamps a step whose
    slot is that one and times it from the stamp before; untold (a window numbering its slots from 0
    at pos 319), every step is timed by events, never by another step's stamp. A variant's step that
    stores into this ring (`writes`) is stamped as the runtime's own, not given a timed event."""
    durations = {p: 1000 + p for p in range(2000)}
    r, state, graph = _ring(durations)
    state.pos = 319
    r.begin(319)
    times = []
    for p in range(319, 419):
        r.enqueue(p % 64, graph if p % 10 == 5 else None, ("ring", "ring_ns") if p % 10 == 5 else ())
        times.append(r.step_ns(p % 64))
    assert times == [durations[p] for p in range(319, 419)]
    timed = sum(e.records for e in r.ring_events)
    assert timed == 1  # the run's first step only: the variant's steps were stamped too
    r2, state2, _ = _ring(durations)
    state2.pos = 319
    r2.begin()  # a caller that numbers its slots from 0 and does not say where the steps start
    got = []
    for k in range(100):
        r2.enqueue(k % 64)
        got.append(r2.step_ns(k % 64))
    assert got == [durations[p] for p in range(319, 419)]
    assert sum(e.records for e in r2.quiet_events) == 0
