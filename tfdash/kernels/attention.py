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


def _tilelang(dims):
    from tfdash.kernels.tl_attention import attention_kernel

    return attention_kernel(dims)


FAMILY = register(Family(
    name="attention",
    roles=("q", "k_cache", "v_cache", "pos", "out", "part", "ml", "sem"),
    cost=cost, torch=torch_attention, tilelang=_tilelang,
    describe="split-KV GQA decode attention, merged in-kernel by the last split to arrive",
))
