"""argmax_in_lm_head (bench backend tilelang-amaxfold): the lm_head GEMV's last block reduces the
argmax partials and feeds the token, so the step ends with lm_head. On CPU its torch spelling
decodes the default plan's tokens and keeps the ring by position; its sm_90a build is checked in
tests/test_kernels_compile.py and its graph against the default's on the H200 (tests/gpu)."""

from __future__ import annotations

import torch

from profiling_support import MICRO


def test_the_folded_plan_ends_with_lm_head_and_decodes_the_default_tokens():
    from tfdash.engine.decode import Generation
    from tfdash.engine.plan import TOKEN_RING, build_plan
    from tfdash.engine.runtime import Runtime
    from tfdash.engine.tokenizer import StandInTokenizer
    from tfdash.engine.weights import load_weights
    from tfdash.kernels.base import family

    base = build_plan(MICRO, "float32", capacity=128)
    fold = build_plan(MICRO, "float32", capacity=128, argmax_in_lm_head=True)
    assert len(fold) == len(base) - 1 and "argmax" not in fold.ops() and "argmax" in base.ops()
    head = fold.launches[-1]
    assert head.kernel == base.ops()["lm_head"][0].kernel + "_feed_ring"
    assert head.args["sem"] == "head_sem" and head.args["ring"] == "ring" and head.dims["feed"]
    assert build_plan(MICRO, **fold.meta["options"]).to_dict() == fold.to_dict()
    # the cost moves the argmax launch's pos and token bytes into lm_head's
    extra = family("gemv").cost(head.dims).bytes_written - family("gemv").cost(base.ops()["lm_head"][0].dims).bytes_written
    assert extra == family("argmax").cost(base.ops()["argmax"][0].dims).bytes_written > 0
    weights = load_weights(MICRO, None, torch.float32, "cpu", 0)
    prompt, toks, rts = [3, 1, 4, 1, 5], {}, {}
    for name, plan in (("base", base), ("fold", fold)):
        rts[name] = Runtime(plan, weights, "cpu")
        toks[name] = [ev.token_id for ev in Generation(rts[name], prompt, 80, StandInTokenizer(MICRO.vocab_size))]
    assert toks["fold"] == toks["base"] and len(set(toks["fold"])) > 1
    assert torch.equal(rts["fold"].bufs["ring"], rts["base"].bufs["ring"])
    assert torch.equal(rts["fold"].bufs["logits"], rts["base"].bufs["logits"])
    assert int(rts["fold"].bufs["pos"]) == len(prompt) - 1 + 80 and TOKEN_RING == 64
