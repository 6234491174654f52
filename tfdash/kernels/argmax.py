"""Greedy argmax over f32 logits, and the token feed that lets one graph walk the prompt.

    out_tokens[pos] = argmax(logits)               (lowest index among ties, as torch.argmax)
    tok = prompt[pos + 1] if pos + 1 < prompt_len else out_tokens[pos]
    pos += 1
"""

import torch

from tfdash.kernels.base import Family, Operand, make_cost, register


def torch_argmax_feed(dims, bufs):
    logits, pos = bufs["logits"], bufs["pos"]
    nxt = torch.argmax(logits).view(1).to(torch.int32)
    bufs["out_tokens"].index_copy_(0, pos.long(), nxt)
    npos = pos + 1
    from_prompt = bufs["prompt"].index_select(0, npos.clamp(max=dims["capacity"] - 1))
    bufs["tok"].copy_(torch.where(npos < bufs["prompt_len"], from_prompt, nxt))
    pos.add_(1)


def cost(dims, ctx_len=0):
    V = dims["V"]
    return make_cost({"f32": V}, {}, [
        Operand("logits", "activation", 4 * V, 0),
        Operand("prompt", "activation", 4, 0),
        Operand("prompt_len", "activation", 4, 0),
        Operand("pos", "activation", 4, 4),
        Operand("tok", "activation", 0, 4),
        Operand("out_tokens", "activation", 0, 4),
    ])


def _tilelang(dims):
    from tfdash.kernels.tl_small import argmax_kernel

    return argmax_kernel(dims)


FAMILY = register(Family(
    name="argmax",
    roles=("logits", "prompt", "prompt_len", "pos", "tok", "out_tokens"),
    cost=cost, torch=torch_argmax_feed, tilelang=_tilelang,
    describe="greedy argmax, feed the next prompt token or the argmax, advance pos",
))
