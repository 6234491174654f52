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
    assert plan.ops()["argmax"][0].kernel == "argmax_feed_ring"
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
    assert argmax.kernel == "argmax_feed_ring" and argmax.dims["ring"] == TOKEN_RING and argmax.args["ring"] == "ring"
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
