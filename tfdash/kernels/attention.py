"""Split-KV decode attention with its merge, GQA.

For query head h (kv head g = h // group), over positions j = 0..pos (the step's own k/v were
appended at pos by the rope launch):

    s_j = (q_h . k_j) * 1/sqrt(D)          in f32, the scale after the dot (as HF does)
    p   = softmax(s)                        in f32, then rounded to the model dtype (as HF does)
    out_h = sum_j p_j v_j                   accumulated in f32, rounded to the model dtype

The tilelang kernel splits the positions into blocks of `block`; each (kv head, split) program
keeps a running max and sum, writes f32 partials, and the last program to arrive for a kv head
merges them (an arrival counter in `sem`), so the merge costs no launch of its own.
"""

import math

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Operand, make_cost, register


def torch_attention(dims, bufs):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    group = nH // nKV
    q, kc, vc, pos = bufs["q"], bufs["k_cache"], bufs["v_cache"], bufs["pos"]
    if kc.is_cuda:
        # Capturable: score every slot of the cache, mask the ones past pos (gpt-fast style).
        n = kc.shape[1]
        keys, vals = kc, vc
        mask = torch.arange(n, device=kc.device) > pos
    else:
        n = int(pos.item()) + 1
        keys, vals = kc[:, :n], vc[:, :n]
        mask = None
    qh = q.view(nKV, group, D).float()
    s = torch.einsum("gqd,gnd->gqn", qh, keys.float()) * (1.0 / math.sqrt(D))
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, dim=-1).to(q.dtype)
    o = torch.einsum("gqn,gnd->gqd", p.float(), vals.float())
    bufs["out"].copy_(o.reshape(-1))


def splits_used(dims, ctx_len):
    return -(-(ctx_len + 1) // dims["block"])


def cost(dims, ctx_len=0):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    es = DTYPE_BYTES[dims["dtype"]]
    n = ctx_len + 1  # positions attended: the cache before this step, and this step's own
    s = splits_used(dims, ctx_len)
    return make_cost(
        {"f32": 2 * nH * n * D * 2 + 4 * nH * n},  # q.k and p.v, then max/sub/sum/scale
        {"exp": nH * n},
        [
            Operand("q", "activation", nH * D * es, 0),
            Operand("k_cache", "cache", n * nKV * D * es, 0),
            Operand("v_cache", "cache", n * nKV * D * es, 0),
            Operand("pos", "activation", 4, 0),
            Operand("out", "activation", 0, nH * D * es),
        ],
        smem=dims.get("smem"),
        scratch=2 * nH * s * (D + 2) * 4,  # f32 partials written, then read by the merge
    )


def tilelang_attention(dims):
    """Grid (splits, kv heads); block = group * B threads (128 for Qwen3-1.7B: 2 q heads, B=64).

    scores  lanes split a key row 8 ways (16 dims, two 16-byte loads each) and 4 positions per
            warp instruction; an xor-shuffle over the 8 lanes finishes each dot product
    values  each thread owns one dim d and prefetches v[j, d] for the block's B positions before
            the scores are computed, so K and V stream concurrently
    softmax one score per thread: warp max/sum within a head, combined across the head's warps
    merge   partials (f32 output, max, sum) go to global scratch; a counter per kv head elects
            the last split to arrive, which merges all splits and resets the counter
    """
    import tilelang.language as T

    nH, nKV, D, C, B, dt = (dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["capacity"],
                            dims["block"], dims["dtype"])
    S = dims["splits"]
    group = nH // nKV
    threads = group * B
    warps = threads // 32
    assert threads == D and B % 32 == 0 and D % 128 == 0, \
        f"tilelang attention wants group*block == head_dim (got {group}*{B} vs {D})"
    DC = D // 8  # dims per lane in the score phase
    iters = B // (warps * 4)  # score iterations: 4 positions per warp per iteration
    wph = B // 32  # warps per head in the softmax phase
    scale = 1.0 / math.sqrt(D)

    @T.prim_func
    def attn_decode(
        q: T.Tensor((nH * D,), dt), k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt),
        pos: T.Tensor((1,), "int32"), out: T.Tensor((nH * D,), dt),
        part: T.Tensor((nH, S, D), "float32"), ml: T.Tensor((nH, S, 2), "float32"), sem: T.Tensor((nKV,), "int32"),
    ):
        with T.Kernel(S, nKV, threads=threads) as (bx, g):
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            pi = lane // 8
            dc = lane % 8
            T.pdl_sync()
            T.pdl_trigger()
            n = pos[0] + 1
            n_active = (n + B - 1) // B
            qv = T.alloc_local((group, DC), dt)
            kv = T.alloc_local((DC,), dt)
            vv = T.alloc_local((B,), dt)
            dot = T.alloc_local((group,), "float32")
            o = T.alloc_local((group,), "float32")
            sc_s = T.alloc_shared((group, B), "float32")
            p_s = T.alloc_shared((group, B), "float32")
            red_s = T.alloc_shared((warps,), "float32")
            flag_s = T.alloc_shared((1,), "int32")
            sv = T.alloc_var("float32")
            m = T.alloc_var("float32")
            lsum = T.alloc_var("float32")
            mm = T.alloc_var("float32")
            ll = T.alloc_var("float32")
            acc = T.alloc_var("float32")
            wgt = T.alloc_var("float32")
            if bx < n_active:
                # V prefetch: thread tx owns dim tx
                for j in T.unroll(B):
                    if bx * B + j < n:
                        vv[j] = v_cache[g, bx * B + j, tx]
                    else:
                        vv[j] = T.cast(0, dt)
                for hh in T.unroll(group):
                    for c in T.vectorized(DC):
                        qv[hh, c] = q[(g * group + hh) * D + dc * DC + c]
                # scores
                for it in T.unroll(iters):
                    jl = warp * (iters * 4) + it * 4 + pi
                    for c in T.vectorized(DC):
                        kv[c] = k_cache[g, T.min(bx * B + jl, C - 1), dc * DC + c]
                    for hh in T.unroll(group):
                        dot[hh] = 0.0
                        for c in T.unroll(DC):
                            dot[hh] += T.cast(qv[hh, c], "float32") * T.cast(kv[c], "float32")
                        dot[hh] += T.shfl_xor(dot[hh], 4)
                        dot[hh] += T.shfl_xor(dot[hh], 2)
                        dot[hh] += T.shfl_xor(dot[hh], 1)
                        if dc == 0:
                            if bx * B + jl < n:
                                sc_s[hh, jl] = dot[hh] * scale
                            else:
                                sc_s[hh, jl] = -T.infinity("float32")
                T.sync_threads()
                # softmax within the block: thread tx holds score (head tx // B, position tx % B)
                sv = sc_s[tx // B, tx % B]
                m = T.warp_reduce_max(sv)
                if lane == 0:
                    red_s[warp] = m
                T.sync_threads()
                m = -T.infinity("float32")
                for w in T.unroll(wph):
                    m = T.max(m, red_s[(tx // B) * wph + w])
                sv = T.exp(sv - m)
                p_s[tx // B, tx % B] = sv
                lsum = T.warp_reduce_sum(sv)
                T.sync_threads()
                if lane == 0:
                    red_s[warp] = lsum
                T.sync_threads()
                if tx % B == 0:
                    lsum = 0.0
                    for w in T.unroll(wph):
                        lsum += red_s[(tx // B) * wph + w]
                    ml[g * group + tx // B, bx, 0] = m
                    ml[g * group + tx // B, bx, 1] = lsum
                # p @ V for this block, dim tx, every head of the group
                for hh in T.unroll(group):
                    o[hh] = 0.0
                    for j in T.unroll(B):
                        o[hh] += p_s[hh, j] * T.cast(vv[j], "float32")
                    part[g * group + hh, bx, tx] = o[hh]
                # the last split of this kv head to arrive merges
                T.sync_threads()
                if tx == 0:
                    T.evaluate(T.call_extern("handle", "__threadfence"))
                    flag_s[0] = T.if_then_else(T.atomic_add(sem[g], 1, return_prev=True) == n_active - 1, 1, 0)
                T.sync_threads()
                if flag_s[0] == 1:
                    T.evaluate(T.call_extern("handle", "__threadfence"))
                    for hh in T.unroll(group):
                        mm = -T.infinity("float32")
                        for sp in T.serial(n_active):
                            mm = T.max(mm, ml[g * group + hh, sp, 0])
                        ll = 0.0
                        acc = 0.0
                        for sp in T.serial(n_active):
                            wgt = T.exp(ml[g * group + hh, sp, 0] - mm)
                            ll += wgt * ml[g * group + hh, sp, 1]
                            acc += wgt * part[g * group + hh, sp, tx]
                        out[(g * group + hh) * D + tx] = T.cast(acc / ll, dt)
                    if tx == 0:
                        sem[g] = 0

    return attn_decode


FAMILY = register(Family(
    name="attention",
    roles=("q", "k_cache", "v_cache", "pos", "out", "part", "ml", "sem"),
    cost=cost, torch=torch_attention, tilelang=tilelang_attention,
    describe="split-KV GQA decode attention, merged in-kernel by the last split to arrive",
))
