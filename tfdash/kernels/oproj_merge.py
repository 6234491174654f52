"""o_proj merging attention's split-KV partials itself (the plan's `oproj_merges`), so attention's
blocks end after their values: no arrival count, no last block merging, no round trip between.

For each q head h, over the splits s = 0 .. n_active - 1 of the step (n_active = ceil((pos + 1) /
block)), from attention's f32 partials part[h, s, :] = sum_j exp(s_j - m_s) v_j and ml[h, s] =
(m_s, l_s) (tfdash.kernels.softmax):

    M = max_s m_s,   L = sum_s exp(m_s - M) l_s
    a_h = bf16( sum_s exp(m_s - M) / L * part[h, s, :] )      attention's output, as the merge rounds it
    acc += round(2**FIXED_SHIFT * W[:, h*D:(h+1)*D] @ a_h)      as int64, every head into one sum

The heads add into `acc` as fixed-point integers, so the sum is the same whatever order the
blocks reach it: a step decodes the same bits from run to run. The residual add moves to the two
kernels that read acc (tfdash.kernels.gemv's `resid_acc`): gate_up's norm and down's residual see
x + bf16(acc / 2**FIXED_SHIFT). Attention zeroes acc after its grid dependency, before this kernel
(which adds only after its own) and after the last layer's down (which read it) have finished.

Grid (row tiles, q heads), 256 threads: a block streams its tile's rows of its head's D columns
of W (prefetched before the grid dependency), merges its head's partials into a_h in shared memory,
and adds one integer a row.
"""

import math

import torch

from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.splitkv import MERGE_CHUNK, lanes, split_weights_macro, splits_used

FIXED_SHIFT = 28  # acc counts units of 2**-28: |o_proj(x)| up to 2**35, 4e-9 apart
THREADS = 256
VEC = 8  # bf16 per 16-byte weight load
ROWS = 128  # rows a block streams (default dims["rows"])
MC = MERGE_CHUNK  # partials a thread loads at once, as attention's merge does


def torch_merge(dims, part, ml, pos):
    """a_h for every q head (nH, D) in the model dtype, from the splits the step used; capturable
    (no host read of pos): splits past it are masked, whatever they hold."""
    nH, D, B = dims["n_heads"], dims["head_dim"], dims["block"]
    S = part.shape[1]
    active = (torch.arange(S, device=part.device) * B <= pos.to(part.device).reshape(()))  # (S,)
    m = torch.where(active, ml[:, :, 0], torch.full_like(ml[:, :, 0], -math.inf))
    e = torch.exp(m - m.amax(dim=1, keepdim=True))  # 0 for the splits past pos
    w = e / (e * torch.where(active, ml[:, :, 1], torch.zeros_like(ml[:, :, 1]))).sum(dim=1, keepdim=True)
    a = (w.unsqueeze(-1) * torch.where(active.view(1, S, 1), part, torch.zeros_like(part))).sum(dim=1)
    return a.to(getattr(torch, dims["dtype"])).view(nH, D)


def torch_oproj_merge(dims, bufs):
    nH, D, N = dims["n_heads"], dims["head_dim"], dims["N"]
    a = torch_merge(dims, bufs["part"], bufs["ml"], bufs["pos"])
    w = bufs["w"].view(N, nH, D).float()
    y = torch.einsum("nhd,hd->hn", w, a.float())  # one f32 sum a head, as a block makes it
    bufs["acc"].add_(torch.round(y * 2.0 ** FIXED_SHIFT).to(torch.int64).sum(dim=0))


def to_float(acc, dtype):
    """o_proj's output from acc: the integer to f32 (round to nearest), scaled, rounded to dtype."""
    return (acc.to(torch.float32) * 2.0 ** -FIXED_SHIFT).to(dtype)


def cost(dims, ctx_len=0):
    N, nH, D = dims["N"], dims["n_heads"], dims["head_dim"]
    es = DTYPE_BYTES[dims["dtype"]]
    s = splits_used(dims, ctx_len)
    tiles = -(-N // dims.get("rows", ROWS))
    return make_cost(
        {SHORT_DTYPE[dims["dtype"]]: 2 * N * nH * D, "f32": nH * s * D * 2 + N * nH},
        {"exp": nH * s},
        [Operand("w", "weight", N * nH * D * es, 0),
         Operand("pos", "activation", 4, 0),
         Operand("acc", "activation", N * 8, N * 8)],
        smem=D * es + THREADS * 4 + 32 * (-(-dims["splits"] // 32)) * 4,
        # each row tile's blocks read their head's partials (in L2): attention's merge read them once
        scratch=tiles * nH * s * (D + 2) * 4)


def supported(dims):
    D = dims["head_dim"]
    if D not in (64, 128):
        return f"head_dim={D} (o_proj's merge supports head_dim 64 and 128)"
    rows = dims.get("rows", ROWS)
    if rows % (THREADS // (D // VEC)):
        return f"rows={rows} (a multiple of {THREADS // (D // VEC)} rows a pass at head_dim={D})"
    return None


def tilelang_oproj_merge(dims):
    """Thread tx streams 16 bytes (VEC columns) of rows tx // LPR, + RP, ... of its block's tile,
    LPR = D / VEC lanes a row: the weights (and pos) before the grid dependency. After it, every thread
    loads up to MC partials of dim tx % D (splits tx // D, + Q, ..., Q = THREADS / D) while warp 0
    turns the (max, sum) pairs into weights in shared memory; the weighted partials are summed,
    rounded to the dtype into a_h in shared memory; each row's VEC-column dots are summed over its
    LPR lanes by shuffles and the row's first lane adds the fixed-point result to acc[row]."""
    import tilelang.language as T

    pdl = dims.get("pdl", True)
    N, nH, D, S, B, dt = dims["N"], dims["n_heads"], dims["head_dim"], dims["splits"], dims["block"], dims["dtype"]
    RT = dims.get("rows", ROWS)
    if supported(dims):
        raise ValueError(f"the tilelang o_proj merge cannot run {supported(dims)}")
    LPR = D // VEC  # lanes a row
    RP = THREADS // LPR  # rows a pass
    P = RT // RP  # passes: weight loads a thread holds
    Q = THREADS // D  # split lanes: threads that share a dim
    sper, S32 = lanes(S)
    chunks = -(-S // (Q * MC))
    tiles = -(-N // RT)
    K = nH * D
    scale = float(2.0 ** FIXED_SHIFT)
    trig_first = pdl and bool(dims.get("trigger_first"))
    weights = split_weights_macro(T, S)

    @T.prim_func
    def oproj_merge(part: T.Tensor((nH, S, D), "float32"), ml: T.Tensor((nH, S, 2), "float32"),
                    pos: T.Tensor((1,), "int32"), w: T.Tensor((N, K), dt), acc: T.Tensor((N,), "int64")):
        with T.Kernel(tiles, nH, threads=THREADS) as (bt, h):
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            wv = T.alloc_local((P, VEC), dt)
            xv = T.alloc_local((VEC,), dt)
            pre = T.alloc_local((MC,), "float32")
            mloc = T.alloc_local((sper,), "float32")
            lloc = T.alloc_local((sper,), "float32")
            w_s = T.alloc_shared((1, S32), "float32")
            sum_s = T.alloc_shared((Q, D), "float32")
            a_s = T.alloc_shared((D,), dt)
            o = T.alloc_var("float32")
            dot = T.alloc_var("float32")
            n_active = T.alloc_var("int32")
            if trig_first:
                T.pdl_trigger()
            for p in T.unroll(P):  # weights depend on no kernel: streamed before the grid dependency
                for j in T.vectorized(VEC):
                    wv[p, j] = w[T.min(bt * RT + p * RP + tx // LPR, N - 1), h * D + (tx % LPR) * VEC + j]
            # pos changes only at the step's end (argmax_feed): read before the grid dependency too,
            # through L2 as attention reads it there
            n_active = (T.call_extern("int32", "__ldcg", T.address_of(pos[0])) + B) // B
            if pdl:
                T.pdl_sync()
                if not trig_first:
                    T.pdl_trigger()
            for k in T.unroll(MC):  # the first partials, in flight beside the (max, sum) loads
                if tx // D + k * Q < n_active:
                    pre[k] = part[h, tx // D + k * Q, tx % D]
                else:
                    pre[k] = 0.0
            if warp == 0:  # the merge weights (tfdash.kernels.splitkv, as attention's merge makes them)
                weights(ml, h, w_s, 0, mloc, lloc, lane, n_active)
            T.sync_threads()
            o = 0.0
            for c in T.serial(chunks):
                if c > 0:
                    for k in T.unroll(MC):
                        if tx // D + (c * MC + k) * Q < n_active:
                            pre[k] = part[h, tx // D + (c * MC + k) * Q, tx % D]
                        else:
                            pre[k] = 0.0
                for k in T.unroll(MC):
                    o += w_s[0, T.min(tx // D + (c * MC + k) * Q, S32 - 1)] * pre[k]
            sum_s[tx // D, tx % D] = o
            T.sync_threads()
            if tx < D:
                o = 0.0
                for q in T.unroll(Q):
                    o += sum_s[q, tx]
                a_s[tx] = T.cast(o, dt)
            T.sync_threads()
            for j in T.vectorized(VEC):
                xv[j] = a_s[(tx % LPR) * VEC + j]
            for p in T.unroll(P):
                dot = 0.0
                for j in T.unroll(VEC):
                    dot += T.cast(wv[p, j], "float32") * T.cast(xv[j], "float32")
                if LPR >= 16:
                    dot += T.shfl_xor(dot, 8)
                dot += T.shfl_xor(dot, 4)
                dot += T.shfl_xor(dot, 2)
                dot += T.shfl_xor(dot, 1)
                if tx % LPR == 0 and bt * RT + p * RP + tx // LPR < N:
                    T.atomic_add(acc[bt * RT + p * RP + tx // LPR],
                                 T.call_extern("int64", "__float2ll_rn", dot * scale))

    return oproj_merge


def geometry(dims, ctx_len: int = 0) -> Geometry:
    """Row tiles of its head's columns, a block each, for every q head."""
    RT = dims.get("rows", ROWS)
    tiles = -(-dims["N"] // RT)
    return Geometry((tiles, dims["n_heads"]), THREADS, None, tiles, f"{RT}-row tile", tiles, "block", "q head")


FAMILY = register(Family(
    name="oproj_merge",
    roles=("part", "ml", "pos", "w", "acc"),
    cost=cost, torch=torch_oproj_merge, tilelang=tilelang_oproj_merge, supported=supported, geometry=geometry,
    describe="o_proj merging attention's split-KV partials, each head's rows added into a fixed-point sum",
))
