"""A prompt chunk's attention: q/k norm, RoPE and the KV append, then causal attention over the cache.

    rows_rope       for m < count, position p = start + m:
                    q[m] = rope(rmsnorm_head(qkv[m, q]) * q_norm, p)
                    k_cache[:, p] = rope(rmsnorm_head(qkv[m, k]) * k_norm, p); v_cache[:, p] = qkv[m, v]
    rows_attention  out[m, h] = softmax(q[m, h] . K[0..p] / sqrt(D)) V[0..p], kv head h // group

The roundings are rope.py's (HF's, in the model dtype). Attention keeps the scores and the sums in
f32 and rounds the probabilities to the dtype before their product with V (flash attention's
order); rows past `count` compute something finite that nothing stores.
"""

import math

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Operand, make_cost, register
from tfdash.kernels.common import rmsnorm
from tfdash.kernels.rope import apply_rope, rope_pair

BLOCK_KV = 64  # cache positions a step of the attention's loop stages
ATTN_THREADS = 128


# -- torch spellings ---------------------------------------------------------------------------
def torch_rope(dims, bufs):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    start, count = int(bufs["start"][0]), int(bufs["count"][0])
    qkv = bufs["qkv"][:count]
    q = qkv[:, : nH * D].reshape(count, nH, D)
    k = qkv[:, nH * D:(nH + nKV) * D].reshape(count, nKV, D)
    v = qkv[:, (nH + nKV) * D:].reshape(count, nKV, D)
    cos = bufs["cos"][start:start + count].unsqueeze(1)
    sin = bufs["sin"][start:start + count].unsqueeze(1)
    bufs["q"][:count].copy_(apply_rope(rmsnorm(q, bufs["q_norm"], dims["eps"]), cos, sin).reshape(count, -1))
    k = apply_rope(rmsnorm(k, bufs["k_norm"], dims["eps"]), cos, sin)
    bufs["k_cache"][:, start:start + count].copy_(k.transpose(0, 1))
    bufs["v_cache"][:, start:start + count].copy_(v.transpose(0, 1))


def torch_attention(dims, bufs):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    start, count = int(bufs["start"][0]), int(bufs["count"][0])
    n = start + count
    q = bufs["q"][:count].reshape(count, nH, D).transpose(0, 1).float()  # (nH, count, D)
    k = bufs["k_cache"][:, :n].float().repeat_interleave(nH // nKV, 0)  # (nH, n, D)
    v = bufs["v_cache"][:, :n].float().repeat_interleave(nH // nKV, 0)
    s = q @ k.transpose(1, 2) / math.sqrt(D)
    cols = torch.arange(n, device=s.device)
    rows = torch.arange(count, device=s.device) + start
    s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
    o = torch.softmax(s, -1) @ v  # (nH, count, D)
    bufs["out"][:count].copy_(o.transpose(0, 1).reshape(count, -1))


# -- costs -------------------------------------------------------------------------------------
def cost_rope(dims, ctx_len=0):
    M, nH, nKV, D = dims["M"], dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    es = DTYPE_BYTES[dims["dtype"]]
    return make_cost({"f32": M * (nH + nKV) * 7 * D}, {"rsqrt": M * (nH + nKV)}, [
        Operand("qkv", "activation", M * (nH + 2 * nKV) * D * es, 0),
        Operand("q_norm", "weight", D * es, 0), Operand("k_norm", "weight", D * es, 0),
        Operand("cos", "table", M * D // 2 * es, 0), Operand("sin", "table", M * D // 2 * es, 0),
        Operand("q", "activation", 0, M * nH * D * es),
        Operand("k_cache", "cache", 0, M * nKV * D * es), Operand("v_cache", "cache", 0, M * nKV * D * es)])


def cost_attention(dims, ctx_len=0):
    """ctx_len: the cache positions before the chunk (its start); the chunk's M rows attend to
    those and to themselves."""
    M, nH, nKV, D = dims["M"], dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    es, n = DTYPE_BYTES[dims["dtype"]], ctx_len + M
    return make_cost({"f32": 4 * M * nH * n * D}, {"exp": M * nH * n}, [
        Operand("q", "activation", M * nH * D * es, 0),
        Operand("k_cache", "cache", nKV * n * D * es, 0), Operand("v_cache", "cache", nKV * n * D * es, 0),
        Operand("out", "activation", 0, M * nH * D * es)])


def supported_rope(dims):
    if dims["head_dim"] % 128:
        return f"head_dim={dims['head_dim']} in the prompt's q/k norm + RoPE (it supports multiples of 128)"
    return None


def supported_attention(dims):
    if dims["head_dim"] not in (64, 128):
        return f"head_dim={dims['head_dim']} in the prompt's attention (it supports 64 and 128)"
    return None


# -- tilelang ----------------------------------------------------------------------------------
def tilelang_rope(dims):
    """Grid (heads, M): one warp a head of one row, as rope.py's unfused launch. Lane l holds the
    pairs (l*per .. ) of each half, so each lane has both partners of its rotate-half pairs; the
    norm is a warp reduction. Rows past count exit."""
    import tilelang.language as T

    M, nH, nKV, D, C, dt = (dims["M"], dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["capacity"],
                            dims["dtype"])
    eps = float(dims["eps"])
    half = D // 2
    per = half // 32
    heads = nH + 2 * nKV
    QKV = heads * D

    @T.prim_func
    def rows_rope(qkv: T.Tensor((M, QKV), dt), q_norm: T.Tensor((D,), dt), k_norm: T.Tensor((D,), dt),
                  cos: T.Tensor((C, half), dt), sin: T.Tensor((C, half), dt), start: T.Tensor((1,), "int32"),
                  count: T.Tensor((1,), "int32"), q: T.Tensor((M, nH * D), dt),
                  k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt)):
        with T.Kernel(heads, M, threads=32) as (head, m):
            lane = T.get_thread_binding(0)
            a = T.alloc_local((per,), dt)
            b = T.alloc_local((per,), dt)
            wa = T.alloc_local((per,), dt)
            wb = T.alloc_local((per,), dt)
            ra = T.alloc_local((per,), dt)
            rb = T.alloc_local((per,), dt)
            ssq = T.alloc_var("float32")
            rstd = T.alloc_var("float32")
            p = start[0] + m
            if m < count[0]:
                for j in T.vectorized(per):
                    a[j] = qkv[m, head * D + lane * per + j]
                for j in T.vectorized(per):
                    b[j] = qkv[m, head * D + half + lane * per + j]
                if head < nH + nKV:
                    ssq = 0.0
                    for j in T.unroll(per):
                        ssq += T.cast(a[j], "float32") * T.cast(a[j], "float32") \
                            + T.cast(b[j], "float32") * T.cast(b[j], "float32")
                    ssq = T.warp_reduce_sum(ssq)
                    rstd = T.rsqrt(ssq / D + eps)
                    for j in T.unroll(per):
                        wa[j] = T.if_then_else(head < nH, q_norm[lane * per + j], k_norm[lane * per + j])
                        wb[j] = T.if_then_else(head < nH, q_norm[half + lane * per + j], k_norm[half + lane * per + j])
                    for j in T.unroll(per):  # HF's norm and rotate-half, rounded as rope.py's
                        ra[j], rb[j] = rope_pair(T, dt, a[j], b[j], wa[j], wb[j], cos[p, lane * per + j],
                                                 sin[p, lane * per + j], rstd)
                    if head < nH:
                        for j in T.vectorized(per):
                            q[m, head * D + lane * per + j] = ra[j]
                        for j in T.vectorized(per):
                            q[m, head * D + half + lane * per + j] = rb[j]
                    else:
                        for j in T.vectorized(per):
                            k_cache[head - nH, p, lane * per + j] = ra[j]
                        for j in T.vectorized(per):
                            k_cache[head - nH, p, half + lane * per + j] = rb[j]
                else:
                    for j in T.vectorized(per):
                        v_cache[head - nH - nKV, p, lane * per + j] = a[j]
                    for j in T.vectorized(per):
                        v_cache[head - nH - nKV, p, half + lane * per + j] = b[j]

    return rows_rope


def tilelang_attention(dims):
    """Grid n_heads; a block takes its head's M query rows as one tile and walks the cache in
    BLOCK_KV positions up to the chunk's last (flash attention's online softmax, T.gemm for
    q.K^T and P.V), masking positions past each row's own."""
    import tilelang.language as T

    M, nH, nKV, D, C, dt = (dims["M"], dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["capacity"],
                            dims["dtype"])
    group = nH // nKV
    bkv = BLOCK_KV
    scale = 1.0 / math.sqrt(D) * 1.44269504  # exp2 of log2(e) * s
    neg = -1.0e30

    @T.prim_func
    def rows_attention(q: T.Tensor((M, nH * D), dt), k_cache: T.Tensor((nKV, C, D), dt),
                       v_cache: T.Tensor((nKV, C, D), dt), start: T.Tensor((1,), "int32"),
                       count: T.Tensor((1,), "int32"), out: T.Tensor((M, nH * D), dt)):
        with T.Kernel(nH, threads=ATTN_THREADS) as h:
            qs = T.alloc_shared((M, D), dt)
            ks = T.alloc_shared((bkv, D), dt)
            vs = T.alloc_shared((bkv, D), dt)
            ps = T.alloc_shared((M, bkv), dt)
            s = T.alloc_fragment((M, bkv), "float32")
            acc = T.alloc_fragment((M, D), "float32")
            m_new = T.alloc_fragment((M,), "float32")
            m_old = T.alloc_fragment((M,), "float32")
            l_sum = T.alloc_fragment((M,), "float32")
            l_blk = T.alloc_fragment((M,), "float32")
            g = h // group
            n = start[0] + count[0]
            for i, d in T.Parallel(M, D):
                qs[i, d] = q[i, h * D + d]
            T.fill(acc, 0)
            T.fill(l_sum, 0)
            T.fill(m_new, neg)
            for kb in T.serial(T.ceildiv(n, bkv)):
                for j, d in T.Parallel(bkv, D):
                    ks[j, d] = T.if_then_else(kb * bkv + j < n, k_cache[g, T.min(kb * bkv + j, C - 1), d],
                                              T.cast(0, dt))
                for j, d in T.Parallel(bkv, D):
                    vs[j, d] = T.if_then_else(kb * bkv + j < n, v_cache[g, T.min(kb * bkv + j, C - 1), d],
                                              T.cast(0, dt))
                T.clear(s)
                T.gemm(qs, ks, s, transpose_B=True)
                for i, j in T.Parallel(M, bkv):
                    s[i, j] = T.if_then_else(kb * bkv + j <= start[0] + i, s[i, j] * scale, neg)
                T.copy(m_new, m_old)
                T.reduce_max(s, m_new, dim=1, clear=False)
                for i, j in T.Parallel(M, bkv):
                    s[i, j] = T.exp2(s[i, j] - m_new[i])
                T.reduce_sum(s, l_blk, dim=1)
                for i in T.Parallel(M):
                    l_sum[i] = l_sum[i] * T.exp2(m_old[i] - m_new[i]) + l_blk[i]
                for i, d in T.Parallel(M, D):
                    acc[i, d] = acc[i, d] * T.exp2(m_old[i] - m_new[i])
                T.copy(s, ps)
                T.gemm(ps, vs, acc)
            for i, d in T.Parallel(M, D):
                if i < count[0]:
                    out[i, h * D + d] = T.cast(acc[i, d] / l_sum[i], dt)

    return rows_attention


register(Family(name="rows_rope",
                roles=("qkv", "q_norm", "k_norm", "cos", "sin", "start", "count", "q", "k_cache", "v_cache"),
                cost=cost_rope, torch=torch_rope, tilelang=tilelang_rope, supported=supported_rope,
                describe="a prompt chunk's q/k RMSNorm and RoPE, k and v appended at its positions"))
register(Family(name="rows_attention", roles=("q", "k_cache", "v_cache", "start", "count", "out"),
                cost=cost_attention, torch=torch_attention, tilelang=tilelang_attention,
                supported=supported_attention,
                describe="a prompt chunk's causal attention over the cache up to each row's position"))
