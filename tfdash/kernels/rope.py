"""q/k RMSNorm, RoPE and the KV-cache append, one launch after the packed q|k|v GEMV.

    q = rope(rmsnorm_head(qkv[q]) * q_norm)                      -> q        (n_heads, D)
    k_cache[:, pos] = rope(rmsnorm_head(qkv[k]) * k_norm)         (n_kv_heads, D)
    v_cache[:, pos] = qkv[v]

RoPE is transformers' rotate-half form, in the model dtype: q*cos + rotate_half(q)*sin with each
product and the sum rounded, cos/sin taken from bf16 tables built in f32 (as HF builds them).
"""

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Operand, make_cost, register
from tfdash.kernels.common import rmsnorm


def rope_tables(capacity: int, head_dim: int, theta: float, dtype: torch.dtype, device=None):
    """cos/sin for positions 0..capacity-1, shape (capacity, head_dim/2): HF's inv_freq in f32,
    angles in f32, then rounded to the model dtype (the second half of HF's table repeats it)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64, device=device).float() / head_dim))
    pos = torch.arange(capacity, device=device, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq)
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x: (heads, D); cos, sin: (D/2,). HF: x*cat(cos,cos) + rotate_half(x)*cat(sin,sin)."""
    c = torch.cat([cos, cos], -1)
    s = torch.cat([sin, sin], -1)
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * c + rot * s


def torch_qk_norm_rope(dims, bufs):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    qkv, pos = bufs["qkv"], bufs["pos"]
    q = qkv[: nH * D].view(nH, D)
    k = qkv[nH * D:(nH + nKV) * D].view(nKV, D)
    v = qkv[(nH + nKV) * D:].view(nKV, D)
    cos = bufs["cos"].index_select(0, pos)[0]
    sin = bufs["sin"].index_select(0, pos)[0]
    q = apply_rope(rmsnorm(q, bufs["q_norm"], dims["eps"]), cos, sin)
    k = apply_rope(rmsnorm(k, bufs["k_norm"], dims["eps"]), cos, sin)
    bufs["q"].copy_(q.reshape(-1))
    idx = pos.long()
    bufs["k_cache"].index_copy_(1, idx, k.unsqueeze(1))
    bufs["v_cache"].index_copy_(1, idx, v.unsqueeze(1))


def cost(dims, ctx_len=0):
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    es = DTYPE_BYTES[dims["dtype"]]
    heads = nH + nKV
    return make_cost(
        {"f32": heads * (4 * D + 3 * D)},  # norm (square, sum, 2 scales) + rope (2 mul, 1 add)
        {"rsqrt": heads},
        [
            Operand("qkv", "activation", (nH + 2 * nKV) * D * es, 0),
            Operand("q_norm", "weight", D * es, 0),
            Operand("k_norm", "weight", D * es, 0),
            Operand("cos", "table", D // 2 * es, 0),
            Operand("sin", "table", D // 2 * es, 0),
            Operand("pos", "activation", 4, 0),
            Operand("q", "activation", 0, nH * D * es),
            Operand("k_cache", "cache", 0, nKV * D * es),
            Operand("v_cache", "cache", 0, nKV * D * es),
        ],
    )


def rope_pair(T, dt, xa, xb, w_a, w_b, c, sn, rstd):
    """The tilelang expressions of one rotate-half pair (i, i + D/2) normed and rotated as HF does:
    rmsnorm (weight * (x * rstd).to(dtype)), then x*cos + rotate_half(x)*sin, every product and
    sum rounded to dtype. The fused attention launch rotates its q and k with it."""
    na = T.cast(T.cast(T.cast(T.cast(xa, "float32") * rstd, dt), "float32") * T.cast(w_a, "float32"), dt)
    nb = T.cast(T.cast(T.cast(T.cast(xb, "float32") * rstd, dt), "float32") * T.cast(w_b, "float32"), dt)
    ra = T.cast(T.cast(T.cast(T.cast(na, "float32") * T.cast(c, "float32"), dt), "float32")
                - T.cast(T.cast(T.cast(nb, "float32") * T.cast(sn, "float32"), dt), "float32"), dt)
    rb = T.cast(T.cast(T.cast(T.cast(nb, "float32") * T.cast(c, "float32"), dt), "float32")
                + T.cast(T.cast(T.cast(na, "float32") * T.cast(sn, "float32"), dt), "float32"), dt)
    return ra, rb


def fused_passes(group: int, D: int) -> int:
    """Passes of the fused attention's rope phase: D threads, one (i, i + D/2) pair each, hold
    D / (D/2) = 2 heads a pass; the group's q heads and the kv head's k make group + 1 heads."""
    return -(-((group + 1) * (D // 2)) // D)


def rope_weights_macro(T, D: int):
    """Thread tx's norm weights and table entries, into w (6 in the model dtype): q_norm and
    k_norm at i and i + D/2, cos and sin at (pos, i), i = tx % (D/2), for n = pos + 1. None of
    them is written by a kernel of the step, so they may be read before the grid dependency."""
    half = D // 2

    @T.macro
    def load(q_norm, k_norm, cos, sin, w, n, tx):
        w[0] = q_norm[tx % half]
        w[1] = q_norm[half + tx % half]
        w[2] = k_norm[tx % half]
        w[3] = k_norm[half + tx % half]
        w[4] = cos[n - 1, tx % half]
        w[5] = sin[n - 1, tx % half]

    return load


def fused_rope_macro(T, group: int, n_heads: int, n_kv: int, D: int, dt: str, eps: float, preloaded: bool = False):
    """The fused attention's q/k norm, RoPE and KV append, as a tilelang macro over its buffers.

    Every block norms and rotates its group's q heads into q_s. The block holding position pos
    (`mine`; in rounds with the attention's rounds_carry, the program one of whose rounds holds it,
    in its first round) also takes this kv head's k, as head `group` of the same passes (so its norm shares
    the q heads' one barrier), writes it to k_s and the cache, and appends v (v_s and the cache).
    Thread tx owns the pair (i, i + D/2), i = tx % (D/2), of head rp * 2 + tx // (D/2) in pass rp;
    the norm weights and this position's cos/sin (w, rope_weights_macro) are the same in every
    pass. `preloaded`: the caller loaded w already (before its grid dependency)."""
    half, warps = D // 2, D // 32
    hw = half // 32  # warps per head
    RP = fused_passes(group, D)
    load = rope_weights_macro(T, D)

    @T.macro
    def rope(qkv, q_norm, k_norm, cos, sin, k_cache, v_cache, q_s, k_s, v_s, red_s, w, g, n, tx, lane, warp, mine):
        xa = T.alloc_local((RP,), dt)
        xb = T.alloc_local((RP,), dt)
        ssq = T.alloc_var("float32")
        rstd = T.alloc_var("float32")
        vx = T.alloc_var(dt)
        i = tx % half
        if not preloaded:
            load(q_norm, k_norm, cos, sin, w, n, tx)
        if mine:
            vx = qkv[(n_heads + n_kv + g) * D + tx]
        for rp in T.unroll(RP):
            if (rp * D + tx) // half < group:
                xa[rp] = qkv[(g * group + (rp * D + tx) // half) * D + i]
                xb[rp] = qkv[(g * group + (rp * D + tx) // half) * D + half + i]
            else:
                if (rp * D + tx) // half == group and mine:
                    xa[rp] = qkv[(n_heads + g) * D + i]
                    xb[rp] = qkv[(n_heads + g) * D + half + i]
                else:
                    xa[rp] = T.cast(0, dt)
                    xb[rp] = T.cast(0, dt)
        for rp in T.unroll(RP):
            ssq = T.warp_reduce_sum(T.cast(xa[rp], "float32") * T.cast(xa[rp], "float32")
                                    + T.cast(xb[rp], "float32") * T.cast(xb[rp], "float32"))
            if lane == 0:
                red_s[rp * warps + warp] = ssq
        if mine:
            v_s[tx] = vx
            v_cache[g, n - 1, tx] = vx
        T.sync_threads()
        for rp in T.unroll(RP):
            if (rp * D + tx) // half <= group:
                ssq = 0.0
                for h in T.unroll(hw):
                    ssq += red_s[rp * warps + (tx // half) * hw + h]
                rstd = T.rsqrt(ssq / D + eps)
                k_head = (rp * D + tx) // half == group
                ra, rb = rope_pair(T, dt, xa[rp], xb[rp], T.if_then_else(k_head, w[2], w[0]),
                                   T.if_then_else(k_head, w[3], w[1]), w[4], w[5], rstd)
                if (rp * D + tx) // half < group:
                    q_s[(rp * D + tx) // half, i] = ra
                    q_s[(rp * D + tx) // half, half + i] = rb
                else:
                    if mine:
                        k_s[i] = ra
                        k_s[half + i] = rb
                        k_cache[g, n - 1, i] = ra
                        k_cache[g, n - 1, half + i] = rb
        T.sync_threads()

    return rope


HEADS_PER_BLOCK = 16  # warps of a block; heads past a block's 16 go to the next block


def supported(dims):
    D = dims["head_dim"]
    if D % 128:
        return f"head_dim={D} in the unfused q/k norm + RoPE launch (it supports multiples of 128)"
    return None


def tilelang_qk_norm_rope(dims):
    """One warp per head (q heads, then k heads, then v heads), 16 heads a block. Lane l holds the
    pairs (2l, 2l+1) of the first half and (H+2l, H+2l+1) of the second (H = D/2), so each lane
    has both partners of its rotate-half pairs; the norm is a warp reduction."""
    import tilelang.language as T

    pdl = dims.get("pdl", True)

    nH, nKV, D, C, dt = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["capacity"], dims["dtype"]
    eps = float(dims["eps"])
    half = D // 2
    per = half // 32  # elements of each half a lane holds
    assert supported(dims) is None, supported(dims)
    heads = nH + 2 * nKV
    QKV = heads * D
    HPB = min(heads, HEADS_PER_BLOCK)

    @T.prim_func
    def qk_norm_rope(
        qkv: T.Tensor((QKV,), dt), q_norm: T.Tensor((D,), dt), k_norm: T.Tensor((D,), dt),
        cos: T.Tensor((C, half), dt), sin: T.Tensor((C, half), dt), pos: T.Tensor((1,), "int32"),
        q: T.Tensor((nH * D,), dt), k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt),
    ):
        with T.Kernel(-(-heads // HPB), threads=HPB * 32) as bx:
            tx = T.get_thread_binding(0)
            lane = tx % 32
            head = bx * HPB + tx // 32
            if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                T.pdl_sync()
                T.pdl_trigger()
            p = pos[0]
            a = T.alloc_local((per,), dt)  # first-half elements
            b = T.alloc_local((per,), dt)  # second-half elements
            wa = T.alloc_local((per,), dt)
            wb = T.alloc_local((per,), dt)
            ca = T.alloc_local((per,), dt)
            sa = T.alloc_local((per,), dt)
            na = T.alloc_local((per,), dt)
            nb = T.alloc_local((per,), dt)
            ra = T.alloc_local((per,), dt)
            rb = T.alloc_local((per,), dt)
            ssq = T.alloc_var("float32")
            rstd = T.alloc_var("float32")
            for j in T.vectorized(per):
                a[j] = qkv[T.min(head, heads - 1) * D + lane * per + j]
            for j in T.vectorized(per):
                b[j] = qkv[T.min(head, heads - 1) * D + half + lane * per + j]
            if head < nH + nKV:
                ssq = 0.0
                for j in T.unroll(per):
                    ssq += T.cast(a[j], "float32") * T.cast(a[j], "float32") + T.cast(b[j], "float32") * T.cast(b[j], "float32")
                ssq = T.warp_reduce_sum(ssq)
                rstd = T.rsqrt(ssq / D + eps)
                if head < nH:
                    for j in T.vectorized(per):
                        wa[j] = q_norm[lane * per + j]
                    for j in T.vectorized(per):
                        wb[j] = q_norm[half + lane * per + j]
                else:
                    for j in T.vectorized(per):
                        wa[j] = k_norm[lane * per + j]
                    for j in T.vectorized(per):
                        wb[j] = k_norm[half + lane * per + j]
                for j in T.vectorized(per):
                    ca[j] = cos[p, lane * per + j]
                for j in T.vectorized(per):
                    sa[j] = sin[p, lane * per + j]
                for j in T.unroll(per):
                    # HF rmsnorm: weight * (x * rstd).to(dtype)
                    na[j] = T.cast(T.cast(T.cast(T.cast(a[j], "float32") * rstd, dt), "float32") * T.cast(wa[j], "float32"), dt)
                    nb[j] = T.cast(T.cast(T.cast(T.cast(b[j], "float32") * rstd, dt), "float32") * T.cast(wb[j], "float32"), dt)
                for j in T.unroll(per):
                    # x*cos + rotate_half(x)*sin, every product and the sum rounded to dtype
                    ra[j] = T.cast(
                        T.cast(T.cast(T.cast(na[j], "float32") * T.cast(ca[j], "float32"), dt), "float32")
                        - T.cast(T.cast(T.cast(nb[j], "float32") * T.cast(sa[j], "float32"), dt), "float32"), dt)
                    rb[j] = T.cast(
                        T.cast(T.cast(T.cast(nb[j], "float32") * T.cast(ca[j], "float32"), dt), "float32")
                        + T.cast(T.cast(T.cast(na[j], "float32") * T.cast(sa[j], "float32"), dt), "float32"), dt)
                if head < nH:
                    for j in T.vectorized(per):
                        q[head * D + lane * per + j] = ra[j]
                    for j in T.vectorized(per):
                        q[head * D + half + lane * per + j] = rb[j]
                else:
                    for j in T.vectorized(per):
                        k_cache[head - nH, p, lane * per + j] = ra[j]
                    for j in T.vectorized(per):
                        k_cache[head - nH, p, half + lane * per + j] = rb[j]
            elif head < heads:
                for j in T.vectorized(per):
                    v_cache[head - nH - nKV, p, lane * per + j] = a[j]
                for j in T.vectorized(per):
                    v_cache[head - nH - nKV, p, half + lane * per + j] = b[j]

    return qk_norm_rope


FAMILY = register(Family(
    name="rope",
    roles=("qkv", "q_norm", "k_norm", "cos", "sin", "pos", "q", "k_cache", "v_cache"),
    cost=cost, torch=torch_qk_norm_rope, tilelang=tilelang_qk_norm_rope, supported=supported,
    describe="q/k RMSNorm over head_dim, RoPE, append k and v at pos",
))
