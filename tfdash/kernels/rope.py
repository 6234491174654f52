"""q/k RMSNorm, RoPE and the KV-cache append, one launch after the packed q|k|v GEMV.

    q = rope(rmsnorm_head(qkv[q]) * q_norm)                      -> q        (n_heads, D)
    k_cache[:, pos] = rope(rmsnorm_head(qkv[k]) * k_norm)         (n_kv_heads, D)
    v_cache[:, pos] = qkv[v]

RoPE is transformers' rotate-half form, in the model dtype: q*cos + rotate_half(q)*sin with each
product and the sum rounded, cos/sin taken from bf16 tables built in f32 (as HF builds them).
"""

import torch

from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Operand, make_cost, register
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


def _tilelang(dims):
    from tfdash.kernels.tl_small import qk_norm_rope_kernel

    return qk_norm_rope_kernel(dims)


FAMILY = register(Family(
    name="rope",
    roles=("qkv", "q_norm", "k_norm", "cos", "sin", "pos", "q", "k_cache", "v_cache"),
    cost=cost, torch=torch_qk_norm_rope, tilelang=_tilelang,
    describe="q/k RMSNorm over head_dim, RoPE, append k and v at pos",
))
