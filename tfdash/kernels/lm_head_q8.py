"""The lm_head read through an int8 copy of its weight, with the greedy token still exact.

Greedy decoding needs only the argmax of the logits, not the logits. An int8 copy of the head
(one scale per row) is half the bytes of the bf16 head; its dot products bound every logit to an
interval, and only the rows whose interval reaches the best lower bound need their exact logit:

    h       = rmsnorm(x) * norm_w                 (as the GEMV's prologue rounds it)
    q_i, s_i: w_i ~ s_i q_i, q_i int8             (quantize_rows, once at load; e_i = |w_i - s_i q_i|,
                                                   n_i = |s_i q_i|, rounded up)
    r, t_g  : h ~ t_g r over groups of 16 values  (per step, in the kernel; dh = h - t r)
    a_i     = s_i sum_g t_g (q_i,g . r_g)         (lm_head_q8: int8 dot products, f32 sums)
    b_i     = e_i |h| + n_i |dh| + slack          (|w_i . h - a_i| <= b_i: w.h - a = (w - wq).h + wq.(h - hq))
    ub_i    = a_i + b_i;   per block max(a_i - b_i)
    L       = max_i (a_i - b_i)                   (lm_head_pick)
    logit_i = w_i . h for every row with ub_i >= L, in the GEMV's own order; per block (max, index)

A row left out has logit < ub_i < L <= the best candidate's logit, so the argmax over the
candidates (lowest index among ties, as the GEMV's partials) is the argmax over every row. `slack`
covers f32 rounding in a_i, in the norms and in the exact dot products (slack(K), relative to
(n_i + e_i)(|h| + |dh|): any summation order of K products, as cuBLAS's in the torch runtimes, is
within K ulps of them), and, in the torch spelling of a bf16 head, the logits linear_f32 may round
to the dtype (off CUDA, or where torch.mm has no out_dtype: 2**-8 of the logit, at most |a_i| + b_i).
"""

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import rmsnorm

QG = 16  # h's values a quantization group: one lane's 16-byte load of int8 weights
SLACK = 3e-4  # the least f32 rounding the bound allows (slack)
NORM_UP = 1.001  # |h| and |dh| rounded up: their f32 sums of squares lose at most K ulps
THREADS = 256
SMS = 132
BLOCKS_PER_SM = 2
LOADS = 16  # 16-byte weight loads a lane keeps in flight
COLS = 32 * 16  # int8 columns a warp covers with one 16-byte load a lane
META = 4  # per row: scale, |w - s q| rounded up, |s q| rounded up, unused


def quantize_rows(w: torch.Tensor, rows: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, meta) of a (N, K) weight: q (N, K/4) int32, each word four int8 columns (little end
    first), meta (N, 4) f32: the row's scale s = max|w| / 127, |w - s q| and |s q| (rounded up,
    from f64). In row blocks, so the f64 copies stay small."""
    N, K = w.shape
    q = torch.empty((N, K), dtype=torch.int8, device=w.device)
    meta = torch.zeros((N, META), dtype=torch.float32, device=w.device)
    for i in range(0, N, rows):
        wf = w[i:i + rows].double()
        s = (wf.abs().amax(1) / 127).float().double()
        qi = torch.where(s[:, None] > 0, torch.round(wf / s.clamp_min(1e-300)[:, None]), 0).clamp(-127, 127)
        deq = qi * s[:, None]
        q[i:i + rows] = qi.to(torch.int8)
        meta[i:i + rows, 0] = s.float()
        meta[i:i + rows, 1] = _up((wf - deq).norm(dim=1))
        meta[i:i + rows, 2] = _up(deq.norm(dim=1))
    return q.view(torch.int32), meta


def _up(v: torch.Tensor) -> torch.Tensor:
    """f64 -> the f32 at or above it."""
    f = v.float()
    return torch.where(f.double() < v, torch.nextafter(f, torch.full_like(f, float("inf"))), f)


def quantize_h(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(r int8 (K,), t (K/QG,) f32, |h|, |dh|) of h: each group of QG values scaled by its max
    magnitude / 127, as the kernel does (its rounding may differ; each side bounds its own)."""
    hf = h.float().view(-1, QG)
    m = hf.abs().amax(1)
    t = m * (1.0 / 127.0)
    inv = torch.where(m > 0, 127.0 / m.clamp_min(1e-30), torch.zeros_like(m))
    r = torch.round(hf * inv[:, None]).clamp(-127, 127)
    dh = hf - t[:, None] * r
    return r.to(torch.int8).view(-1), t, hf.pow(2).sum().sqrt() * NORM_UP, dh.pow(2).sum().sqrt() * NORM_UP


def slack(K: int) -> float:
    """The f32 rounding the bound allows, relative to (n_i + e_i)(|h| + |dh|): twice K ulps (a dot
    product of K terms summed in any order errs by at most K ulps of the sum of |terms|; a_i's own
    sums by far less), and never under SLACK."""
    return max(SLACK, 2 * K * 2.0 ** -24)


def bound(meta: torch.Tensor, a: torch.Tensor, hn, dn, K: int, rel: float = 0.0) -> torch.Tensor:
    """b_i: |w_i . h - a_i| <= b_i, plus what rounds the exact logits (rel: relative to the logit,
    which is at most |a_i| + b_i)."""
    e, n = meta[:, 1], meta[:, 2]
    b = e * hn + n * dn + slack(K) * (n + e) * (hn + dn)
    return b + rel * (a.abs() + b)


def torch_lm_head_q8(dims, bufs):
    """Phase 1: h (into `h_out`), every row's upper bound (into `ub`), the best lower bound (into
    `lb`'s first entry, the others -inf)."""
    h = rmsnorm(bufs["x"], bufs["norm_w"], dims["eps"])
    bufs["h_out"].copy_(h)
    r, t, hn, dn = quantize_h(h)
    q = bufs["wq"].view(torch.int8).view(dims["N"], -1, QG)
    rg = r.view(-1, QG).int()
    a = torch.empty(dims["N"], dtype=torch.float32, device=h.device)
    for i in range(0, dims["N"], 8192):  # int32 group dot products, a block of rows at a time
        d = (q[i:i + 8192].int() * rg).sum(-1)
        a[i:i + 8192] = (d.float() * t).sum(-1)
    meta = bufs["meta"]
    a = a * meta[:, 0]
    # linear_f32 rounds a bf16 head's logits to bf16 on CPU, and on CUDA too where torch.mm has no out_dtype
    w_rounds = h.dtype != torch.float32
    b = bound(meta, a, hn, dn, dims["K"], rel=2.0 ** -8 if w_rounds else 0.0)
    bufs["ub"].copy_(a + b)
    bufs["lb"].fill_(-float("inf"))
    bufs["lb"][0] = (a - b).max()


def rows_per_warp(K: int) -> int:
    """Rows a warp streams together: about LOADS 16-byte loads in flight a lane (8 rows at K = 1024,
    4 at 2048, 1 at 5120)."""
    return max(1, min(8, LOADS // max(1, K // COLS)))


def grid_size(N: int, K: int) -> int:
    groups = -(-N // rows_per_warp(K))
    return max(1, min(-(-groups // (THREADS // 32)), SMS * BLOCKS_PER_SM))


def supported(dims):
    if dims["K"] % COLS:
        return f"an int8 lm_head with K={dims['K']} (it wants K a multiple of {COLS})"
    if dims["N"] >= 2 ** 24:
        return f"a vocabulary of {dims['N']} (the argmax carries indices in f32, exact below 2**24)"
    return None


def cost(dims, ctx_len=0):
    N, K = dims["N"], dims["K"]
    es = DTYPE_BYTES[dims["dtype"]]
    return make_cost({"i8": 2 * N * K, "f32": 2 * N * K // QG + 10 * N + 6 * K}, {"rsqrt": 1, "sqrt": 2}, [
        Operand("x", "activation", K * es, 0),
        Operand("norm_w", "weight", K * es, 0),
        Operand("wq", "weight", N * K, 0),
        Operand("meta", "weight", N * META * 4, 0),
        Operand("h_out", "activation", 0, K * es),
        Operand("ub", "activation", 0, N * 4),
        Operand("lb", "activation", 0, grid_size(N, K) * 4),
    ], smem=K * es + K + K // QG * 4)


def geometry(dims, ctx_len: int = 0) -> Geometry:
    R, grid = rows_per_warp(dims["K"]), grid_size(dims["N"], dims["K"])
    return Geometry((grid,), THREADS, BLOCKS_PER_SM, -(-dims["N"] // R), f"{R}-row group" if R > 1 else "row",
                    grid * (THREADS // 32), "warp")


def tilelang_lm_head_q8(dims):
    """Block: 256 threads. Before the grid dependency each warp loads its first row group's int8
    words and its rows' (s, e, n); then the GEMV's rmsnorm prologue (block 0 also stores h), h's
    groups quantized into shared memory with |h| and |dh|, and the main loop: a lane takes 16
    columns of each of its R rows a chunk (four dp4a on the group's packed r, one f32 FMA with t),
    warp sums, and lane r bounds row r, stores ub and keeps its best lower bound."""
    import tilelang.language as T

    from tfdash.kernels.gemv_phase import hf_norm

    N, K, dt, eps = dims["N"], dims["K"], dims["dtype"], float(dims["eps"])
    pdl = dims.get("pdl", True)
    R, grid = rows_per_warp(K), grid_size(N, K)
    W4, CH, NG = K // 4, K // COLS, K // QG
    warps = THREADS // 32
    total_warps, groups = grid * warps, -(-N // R)
    passes = -(-groups // total_warps)
    VEC = 8
    pro_iters = -(-K // (THREADS * VEC))
    q_iters = -(-NG // THREADS)
    tol = slack(K)

    @T.macro
    def load_group(wq, meta, wv, mv, g, lane):
        """Row group g's int8 words (a lane's 16 bytes of each chunk) and, lane r, row r's (s, e, n)."""
        for r in T.unroll(R):
            for c in T.unroll(CH):
                for j in T.vectorized(4):
                    wv[r, c * 4 + j] = wq[T.min(g * R + r, N - 1), c * 128 + lane * 4 + j]
        if lane < R:
            for j in T.vectorized(META):
                mv[j] = meta[T.min(g * R + lane, N - 1), j]

    @T.prim_func
    def lm_head_q8(x: T.Tensor((K,), dt), norm_w: T.Tensor((K,), dt), wq: T.Tensor((N, W4), "int32"),
                   meta: T.Tensor((N, META), "float32"), h_out: T.Tensor((K,), dt), ub: T.Tensor((N,), "float32"),
                   lb: T.Tensor((grid,), "float32")):
        with T.Kernel(grid, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            h_s = T.alloc_shared((K,), dt)
            r_s = T.alloc_shared((W4,), "int32")
            t_s = T.alloc_shared((NG,), "float32")
            red_s = T.alloc_shared((warps, 3), "float32")
            xv = T.alloc_local((pro_iters * VEC,), dt)
            nv = T.alloc_local((pro_iters * VEC,), dt)
            hv = T.alloc_local((VEC,), dt)
            wv = T.alloc_local((R, CH * 4), "int32")
            rv = T.alloc_local((4,), "int32")
            mv = T.alloc_local((META,), "float32")
            acc = T.alloc_local((R,), "float32")
            ssq = T.alloc_var("float32")
            sh = T.alloc_var("float32")
            sd = T.alloc_var("float32")
            rstd = T.alloc_var("float32")
            m = T.alloc_var("float32")
            inv = T.alloc_var("float32")
            tq = T.alloc_var("float32")
            rq = T.alloc_var("int32")
            word = T.alloc_var("int32")
            dot = T.alloc_var("int32")
            a = T.alloc_var("float32")
            b = T.alloc_var("float32")
            best = T.alloc_var("float32")
            hn = T.alloc_var("float32")
            dn = T.alloc_var("float32")
            g0 = bx * warps + warp
            # before the grid dependency: weights, their rows' (s, e, n) and the norm weight
            if g0 < groups:
                load_group(wq, meta, wv, mv, g0, lane)
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        nv[it * VEC + j] = norm_w[(it * THREADS + tx) * VEC + j]
            if pdl:
                T.pdl_sync()
                T.pdl_trigger()
            # the GEMV's rmsnorm prologue, the same arithmetic (gemv_phase)
            ssq = 0.0
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        xv[it * VEC + j] = x[(it * THREADS + tx) * VEC + j]
                    for j in T.unroll(VEC):
                        ssq += T.cast(xv[it * VEC + j], "float32") * T.cast(xv[it * VEC + j], "float32")
            ssq = T.warp_reduce_sum(ssq)
            if lane == 0:
                red_s[warp, 0] = ssq
            T.sync_threads()
            ssq = 0.0
            for i in T.unroll(warps):
                ssq += red_s[i, 0]
            rstd = T.rsqrt(ssq / K + eps)
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.unroll(VEC):
                        hv[j] = hf_norm(T, xv[it * VEC + j], rstd, nv[it * VEC + j], dt)
                    for j in T.vectorized(VEC):
                        h_s[(it * THREADS + tx) * VEC + j] = hv[j]
                    if bx == 0:
                        for j in T.vectorized(VEC):
                            h_out[(it * THREADS + tx) * VEC + j] = hv[j]
            T.sync_threads()
            # h in groups of QG: r (packed four to a word), t, and the sums of squares of h and dh
            sh = 0.0
            sd = 0.0
            for it in T.unroll(q_iters):
                if it * THREADS + tx < NG:
                    m = 0.0
                    for j in T.unroll(QG):
                        m = T.max(m, T.abs(T.cast(h_s[(it * THREADS + tx) * QG + j], "float32")))
                    inv = T.if_then_else(m > 0.0, 127.0 / m, 0.0)
                    tq = m * (1.0 / 127.0)
                    for wd in T.unroll(QG // 4):
                        word = 0
                        for k in T.unroll(4):
                            a = T.cast(h_s[(it * THREADS + tx) * QG + wd * 4 + k], "float32")
                            rq = T.cast(T.max(T.min(T.round(a * inv), 127.0), -127.0), "int32")
                            b = a - tq * T.cast(rq, "float32")
                            sh += a * a
                            sd += b * b
                            # byte k of the word; the top byte's sign carries (no shift into the sign bit)
                            word = word + T.if_then_else(k == 3, rq * 16777216, (rq & 255) << (8 * k))
                        r_s[(it * THREADS + tx) * (QG // 4) + wd] = word
                    t_s[it * THREADS + tx] = tq
            sh = T.warp_reduce_sum(sh)
            sd = T.warp_reduce_sum(sd)
            if lane == 0:
                red_s[warp, 1] = sh
                red_s[warp, 2] = sd
            T.sync_threads()
            sh = 0.0
            sd = 0.0
            for i in T.unroll(warps):
                sh += red_s[i, 1]
                sd += red_s[i, 2]
            hn = T.sqrt(sh) * NORM_UP
            dn = T.sqrt(sd) * NORM_UP
            best = -T.infinity("float32")
            # ---- main loop: warps stream row groups of int8 words ------------------------------
            for p in T.serial(passes):
                g = p * total_warps + bx * warps + warp
                if g < groups:
                    if p > 0:
                        load_group(wq, meta, wv, mv, g, lane)
                    for r in T.unroll(R):
                        acc[r] = 0.0
                    for c in T.unroll(CH):
                        for j in T.vectorized(4):
                            rv[j] = r_s[c * 128 + lane * 4 + j]
                        tq = t_s[c * 32 + lane]
                        for r in T.unroll(R):
                            dot = 0
                            for j in T.unroll(4):
                                dot = T.call_extern("int32", "__dp4a", wv[r, c * 4 + j], rv[j], dot)
                            acc[r] += tq * T.cast(dot, "float32")
                    for r in T.unroll(R):
                        acc[r] = T.warp_reduce_sum(acc[r])
                    for r in T.unroll(R):
                        if lane == r and g * R + r < N:
                            a = mv[0] * acc[r]
                            b = mv[1] * hn + mv[2] * dn + tol * (mv[2] + mv[1]) * (hn + dn)
                            ub[g * R + r] = a + b
                            best = T.max(best, a - b)
            best = T.warp_reduce_max(best)
            if lane == 0:
                red_s[warp, 0] = best
            T.sync_threads()
            if tx == 0:
                for i in T.unroll(warps):
                    best = T.max(best, red_s[i, 0])
                lb[bx] = best

    return lm_head_q8


FAMILY = register(Family(
    name="lm_head_q8",
    roles=("x", "norm_w", "wq", "meta", "h_out", "ub", "lb"),
    cost=cost,
    torch=torch_lm_head_q8,
    tilelang=tilelang_lm_head_q8,
    supported=supported,
    geometry=geometry,
    describe="every logit bounded through an int8 copy of the head: ub = a + b per row, the best a - b per block",
))
