"""Greedy argmax over f32 logits, and the token feed that lets one graph walk the prompt.

    out_tokens[pos] = argmax(logits)               (lowest index among ties, as torch.argmax)
    tok = prompt[pos + 1] if pos + 1 < prompt_len else out_tokens[pos]
    ring[pos % len(ring)] = tok                     (where the plan gives it a ring: dims["ring"])
    ring_ns[pos % len(ring)] = the device clock, ns (where it stamps too: dims["stamps"])
    pos += 1

The ring, where there is one, is the host's pinned token ring seen through its device address: the
step's token reaches the host from inside the step's graph, with no copy after it. Its stamps (the
global timer, one clock for every SM, read last) give the host each step's device time as the
difference of two, where a timed event after each replay would cost the step more than the stamp.
The torch spelling has no device clock to read: it leaves ring_ns, and a runtime that steps
through it times its steps with events.

The lm_head GEMV already leaves one (max, index) partial per block in `amax`; the tilelang kernel
reduces those (a few hundred pairs, one warp) instead of re-reading the 600 KB of logits. The
torch spelling reads the logits themselves: it is the definition the partials must agree with.
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
    if dims.get("ring"):  # the host's ring (through its device address on CUDA)
        bufs["ring"].index_copy_(0, pos.long() % dims["ring"], bufs["tok"])
    pos.add_(1)


def cost(dims, ctx_len=0):
    blocks = dims["blocks"]
    return make_cost({"f32": blocks}, {}, [
        Operand("amax", "activation", 2 * 4 * blocks, 0),
        Operand("prompt", "activation", 4, 0),
        Operand("prompt_len", "activation", 4, 0),
        Operand("pos", "activation", 4, 4),
        Operand("tok", "activation", 0, 4),
        Operand("out_tokens", "activation", 0, 4),
        *([Operand("ring", "activation", 0, 4)] if dims.get("ring") else []),  # to host memory
        *([Operand("ring_ns", "activation", 0, 8)] if dims.get("stamps") else []),
    ])


def tilelang_argmax_feed(dims):
    """One warp: each lane folds a strided share of the per-block partials, then a shuffle
    reduction on (value, index) keeps the lowest index among equal maxima; lane 0 feeds."""
    import tilelang.language as T

    from tfdash.kernels.probe import PROBE_PRELUDE

    pdl = dims.get("pdl", True)

    V, C, G, R = dims["V"], dims["capacity"], dims["blocks"], int(dims.get("ring", 0))
    stamps = bool(R and dims.get("stamps"))
    per = -(-G // 32)
    launch_kw = dict(prelude=PROBE_PRELUDE) if stamps else {}  # tfd_globaltimer

    @T.macro
    def body(amax, prompt, prompt_len, pos, tok, out_tokens, ring, ring_ns):
        with T.Kernel(1, threads=32, **launch_kw) as _:
            lane = T.get_thread_binding(0)
            if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                T.pdl_sync()
                T.pdl_trigger()
            bv = T.alloc_var("float32")
            bi = T.alloc_var("int32")
            ov = T.alloc_var("float32")
            oi = T.alloc_var("int32")
            bv = -T.infinity("float32")
            bi = V
            for i in T.unroll(per):
                if i * 32 + lane < G:
                    ov = amax[i * 32 + lane, 0]
                    oi = T.cast(amax[i * 32 + lane, 1], "int32")
                    if ov > bv or (ov == bv and oi < bi):
                        bv = ov
                        bi = oi
            for s in T.unroll(5):
                ov = T.shfl_xor(bv, 16 >> s)
                oi = T.shfl_xor(bi, 16 >> s)
                if ov > bv or (ov == bv and oi < bi):
                    bv = ov
                    bi = oi
            if lane == 0:
                p = pos[0]
                out_tokens[p] = bi
                if p + 1 < prompt_len[0]:
                    tok[0] = prompt[T.min(p + 1, C - 1)]
                    if R:  # the host's ring, through its device address
                        ring[p % R] = prompt[T.min(p + 1, C - 1)]
                else:
                    tok[0] = bi
                    if R:
                        ring[p % R] = bi
                pos[0] = p + 1
                if stamps:  # last: the step's end, as near as a kernel of it can read it
                    ring_ns[p % R] = T.call_extern("int64", "tfd_globaltimer")

    if stamps:

        @T.prim_func
        def argmax_feed(
            logits: T.Tensor((V,), "float32"), amax: T.Tensor((G, 2), "float32"),
            prompt: T.Tensor((C,), "int32"), prompt_len: T.Tensor((1,), "int32"), pos: T.Tensor((1,), "int32"),
            tok: T.Tensor((1,), "int32"), out_tokens: T.Tensor((C,), "int32"), ring: T.Tensor((R,), "int32"),
            ring_ns: T.Tensor((R,), "int64"),
        ):
            body(amax, prompt, prompt_len, pos, tok, out_tokens, ring, ring_ns)
    elif R:

        @T.prim_func
        def argmax_feed(
            logits: T.Tensor((V,), "float32"), amax: T.Tensor((G, 2), "float32"),
            prompt: T.Tensor((C,), "int32"), prompt_len: T.Tensor((1,), "int32"), pos: T.Tensor((1,), "int32"),
            tok: T.Tensor((1,), "int32"), out_tokens: T.Tensor((C,), "int32"), ring: T.Tensor((R,), "int32"),
        ):
            body(amax, prompt, prompt_len, pos, tok, out_tokens, ring, None)
    else:

        @T.prim_func
        def argmax_feed(
            logits: T.Tensor((V,), "float32"), amax: T.Tensor((G, 2), "float32"),
            prompt: T.Tensor((C,), "int32"), prompt_len: T.Tensor((1,), "int32"), pos: T.Tensor((1,), "int32"),
            tok: T.Tensor((1,), "int32"), out_tokens: T.Tensor((C,), "int32"),
        ):
            body(amax, prompt, prompt_len, pos, tok, out_tokens, None, None)

    return argmax_feed


FAMILY = register(Family(
    name="argmax",
    roles=("logits", "amax", "prompt", "prompt_len", "pos", "tok", "out_tokens", "ring", "ring_ns"),
    cost=cost, torch=torch_argmax_feed, tilelang=tilelang_argmax_feed,
    describe="greedy argmax, feed the next prompt token or the argmax, advance pos",
))
