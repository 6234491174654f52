"""The token's copy into its ring slot (tfdash.engine.ring_copy): torch's by default; the cudart
copy is set up only where it can run, else one line says why torch's stays (its copy itself is
tested on the H200: tests/gpu/test_engine_gpu.py)."""

from __future__ import annotations

import pytest
import torch

from tfdash.engine.ring_copy import TorchCopy, loaded_cudart, make_copy
from tfdash.errors import TfdashError


def test_the_loaded_cudart_is_found_in_the_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n"
                    "7f20-7f30 r-xp 00000000 08:01 13 /site/nvidia/cu13/lib/libcudart.so.13\n"
                    "7f40-7f50 rw-p 00000000 00:00 0\n")
    assert loaded_cudart(str(maps)) == "/site/nvidia/cu13/lib/libcudart.so.13"
    maps.write_text("7f00-7f10 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n")
    assert loaded_cudart(str(maps)) is None
    assert loaded_cudart(str(tmp_path / "absent")) is None


def test_torch_copy_by_default_cudart_only_where_it_can_run():
    tok, ring = torch.zeros(1, dtype=torch.int32), torch.zeros(64, dtype=torch.int32)
    copy, note = make_copy("torch", tok, ring)
    assert isinstance(copy, TorchCopy) and note == ""
    tok[0] = 7
    copy(3)
    assert int(ring[3]) == 7
    copy, note = make_copy("cudart", tok, ring)  # an unpinned ring (no CUDA here): torch's stays
    assert isinstance(copy, TorchCopy) and note.startswith("the ring copy stays torch's: ") and "pinned" in note
    copy, note = make_copy("kernel", tok, ring)  # the same for the kernel's store
    assert isinstance(copy, TorchCopy) and note.startswith("the ring copy stays torch's: ") and "pinned" in note
    with pytest.raises(TfdashError, match="TFDASH_RING_COPY='fast': choose torch, cudart, kernel"):
        make_copy("fast", tok, ring)


def test_a_cpu_runtime_writes_its_ring_itself():
    from profiling_support import micro_engine

    from tfdash.settings import SETTINGS

    with SETTINGS.override(ring_copy="cudart"):
        rt = micro_engine(capacity=64).runtime
    assert not hasattr(rt, "ring_copy")  # the CPU step stores its token in the ring directly


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
    assert "ring" not in build_plan(MICRO, "float32", capacity=128).buffers
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
