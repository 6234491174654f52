"""The prompt's kernels on a tile of rows: embed, RMSNorm and the tensor-core GEMM.

The prompt is taken `M` positions at a time (a chunk, tfdash.engine.prefill_plan). A chunk's rows
are positions start .. start + count - 1; rows past `count` are zeros in, and what they produce is
never stored where a decode step reads it.

    rows_embed    x[m] = E[prompt[start + m]]  (m < count; later rows zero)
    rows_rmsnorm  out[m] = rmsnorm(x[m]) * w
    rows_last     out = x[count - 1]  (the chunk's last row, for the decode step's head)
    rows_gemm     out[m] (=|+=) W @ x[m]    for all M rows at once: W streams once a chunk,
                  through the tensor cores, where the decode GEMV streams it once a token

epilogue: "store"; "residual" (the product rounded to the dtype before the add); "silu_mul"
(W is gate|up, N = 2I rows: out[m] = silu(g) * u, I wide, each rounded as gemv.py's: a block takes
gate rows n0.. and their up rows I + n0.., so the product is made where both are in registers).
"""

import torch.nn.functional as F

from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import rmsnorm

THREADS = 128
BLOCK_K = 128  # the K tile a pipeline stage stages in shared memory
STAGES = 3
BLOCK_NS = (128, 64, 32, 16)  # the N tile: the widest whose grid still covers about the SMs
MIN_BLOCKS = 120


# -- torch spellings ---------------------------------------------------------------------------
def torch_embed(dims, bufs):
    start, count = int(bufs["start"][0]), int(bufs["count"][0])
    out = bufs["out"]
    out.zero_()
    ids = bufs["prompt"][start:start + count].long()
    out[:count].copy_(bufs["table"].index_select(0, ids))


def torch_last(dims, bufs):
    count = int(bufs["count"][0])
    if count > 0:
        bufs["out"].copy_(bufs["rows"][count - 1])


def torch_rmsnorm(dims, bufs):
    bufs["out"].copy_(rmsnorm(bufs["x"], bufs["w"], dims["eps"]))


def torch_gemm(dims, bufs):
    y = F.linear(bufs["x"], bufs["w"])
    if dims["epilogue"] == "residual":
        bufs["out"].add_(y)
    elif dims["epilogue"] == "silu_mul":
        half = dims["N"] // 2
        bufs["out"].copy_(F.silu(y[:, :half]) * y[:, half:])
    else:
        bufs["out"].copy_(y)


# -- costs -------------------------------------------------------------------------------------
def cost_embed(dims, ctx_len=0):
    M, H, es = dims["M"], dims["H"], DTYPE_BYTES[dims["dtype"]]
    return make_cost({}, {}, [Operand("prompt", "activation", 4 * M, 0), Operand("table", "weight", M * H * es, 0),
                              Operand("out", "activation", 0, M * H * es)])


def cost_last(dims, ctx_len=0):
    H, es = dims["H"], DTYPE_BYTES[dims["dtype"]]
    return make_cost({}, {}, [Operand("rows", "activation", H * es, 0), Operand("count", "activation", 4, 0),
                              Operand("out", "activation", 0, H * es)])


def cost_rmsnorm(dims, ctx_len=0):
    M, H, es = dims["M"], dims["H"], DTYPE_BYTES[dims["dtype"]]
    return make_cost({"f32": 4 * M * H}, {"rsqrt": M},
                     [Operand("x", "activation", M * H * es, 0), Operand("w", "weight", H * es, 0),
                      Operand("out", "activation", 0, M * H * es)])


def cost_gemm(dims, ctx_len=0):
    M, N, K, es = dims["M"], dims["N"], dims["K"], DTYPE_BYTES[dims["dtype"]]
    epi = dims["epilogue"]
    out_n = N // 2 if epi == "silu_mul" else N
    return make_cost(
        {SHORT_DTYPE[dims["dtype"]]: 2 * M * N * K,
         "f32": {"residual": M * N, "silu_mul": M * N, "store": 0}[epi]},  # an add, or silu(g) * u a pair
        {"exp": M * N // 2 if epi == "silu_mul" else 0},
        [Operand("x", "activation", M * K * es, 0), Operand("w", "weight", N * K * es, 0),
         Operand("out", "activation", M * N * es if epi == "residual" else 0, M * out_n * es)],
        smem=STAGES * (M + (N // out_n) * block_n(out_n)) * BLOCK_K * es)


def block_n(N: int) -> int:
    """The N tile: the widest that still gives about a block an SM (a chunk's GEMM streams its
    weight once, so the grid must cover the SMs to reach the memory's bandwidth)."""
    for b in BLOCK_NS:
        if N % b == 0 and N // b >= MIN_BLOCKS:
            return b
    return next((b for b in reversed(BLOCK_NS) if N % b == 0), BLOCK_NS[-1])


def supported_gemm(dims):
    N, K = dims["N"], dims["K"]
    out_n = N // 2 if dims["epilogue"] == "silu_mul" else N
    if out_n % BLOCK_NS[-1] or K % BLOCK_K:
        return f"a prompt GEMM of N={N}, K={K} (it supports N a multiple of {BLOCK_NS[-1]}, K of {BLOCK_K})"
    return None


def geometry_gemm(dims, ctx_len=0) -> Geometry:
    out_n = dims["N"] // 2 if dims["epilogue"] == "silu_mul" else dims["N"]
    bn = block_n(out_n)
    return Geometry(grid=(out_n // bn,), threads=gemm_threads(bn), blocks_per_sm=None,
                    units=out_n // bn, unit="N tile", workers=132, worker="SM")


def gemm_threads(bn: int) -> int:
    return min(THREADS, bn // 8 * 32)  # a warp's mma tile is 8 columns wide at least


# -- tilelang ----------------------------------------------------------------------------------
def tilelang_embed(dims):
    """Grid M; each block copies its row E[prompt[start + m]] in 16-byte vectors (zeros past count)."""
    import tilelang.language as T

    M, H, V, C, dt = dims["M"], dims["H"], dims["V"], dims["C"], dims["dtype"]
    threads, vec = 128, 8
    iters = -(-H // (threads * vec))

    @T.prim_func
    def rows_embed(prompt: T.Tensor((C,), "int32"), start: T.Tensor((1,), "int32"), count: T.Tensor((1,), "int32"),
                   table: T.Tensor((V, H), dt), out: T.Tensor((M, H), dt)):
        with T.Kernel(M, threads=threads) as m:
            tx = T.get_thread_binding(0)
            live = m < count[0]
            t = prompt[T.min(start[0] + m, C - 1)]
            for it in T.unroll(iters):
                if (it * threads + tx) * vec < H:
                    for j in T.vectorized(vec):
                        out[m, (it * threads + tx) * vec + j] = T.if_then_else(
                            live, table[t, (it * threads + tx) * vec + j], T.cast(0, dt))

    return rows_embed


def tilelang_last(dims):
    """One block copies row count - 1 (a count of 0, as at capture, copies nothing)."""
    import tilelang.language as T

    M, H, dt = dims["M"], dims["H"], dims["dtype"]
    threads, vec = 128, 8
    iters = -(-H // (threads * vec))

    @T.prim_func
    def rows_last(rows: T.Tensor((M, H), dt), count: T.Tensor((1,), "int32"), out: T.Tensor((H,), dt)):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding(0)
            m = count[0] - 1
            if m >= 0:
                for it in T.unroll(iters):
                    if (it * threads + tx) * vec < H:
                        for j in T.vectorized(vec):
                            out[(it * threads + tx) * vec + j] = rows[m, (it * threads + tx) * vec + j]

    return rows_last


def tilelang_rmsnorm(dims):
    """Grid M; a block norms its row: f32 sum of squares over the block, then HF's two roundings."""
    import tilelang.language as T

    M, H, dt, eps = dims["M"], dims["H"], dims["dtype"], float(dims["eps"])
    threads = 128
    per = -(-H // threads)

    @T.prim_func
    def rows_rmsnorm(x: T.Tensor((M, H), dt), w: T.Tensor((H,), dt), out: T.Tensor((M, H), dt)):
        with T.Kernel(M, threads=threads) as m:
            tx = T.get_thread_binding(0)
            xs = T.alloc_local((per,), "float32")
            red_s = T.alloc_shared((threads // 32,), "float32")
            ssq = T.alloc_var("float32")
            rstd = T.alloc_var("float32")
            ssq = 0.0
            for j in T.unroll(per):
                xs[j] = T.if_then_else(j * threads + tx < H,
                                       T.cast(x[m, T.min(j * threads + tx, H - 1)], "float32"), 0.0)
                ssq += xs[j] * xs[j]
            ssq = T.warp_reduce_sum(ssq)
            if tx % 32 == 0:
                red_s[tx // 32] = ssq
            T.sync_threads()
            ssq = 0.0
            for h in T.unroll(threads // 32):
                ssq += red_s[h]
            rstd = T.rsqrt(ssq / H + eps)
            for j in T.unroll(per):
                if j * threads + tx < H:
                    out[m, j * threads + tx] = T.cast(
                        T.cast(T.cast(xs[j] * rstd, dt), "float32") * T.cast(w[j * threads + tx], "float32"), dt)

    return rows_rmsnorm


def tilelang_gemm(dims):
    """Grid out_n / bn; a block computes out[:, n0:n0+bn] for all M rows: the W tile [bn, BLOCK_K]
    (with silu_mul, the gate tile and its up tile) and the x tile [M, BLOCK_K] staged through a
    STAGES-deep pipeline, T.gemm into f32 fragments, the epilogue from the fragments."""
    import tilelang.language as T

    M, N, K, dt = dims["M"], dims["N"], dims["K"], dims["dtype"]
    epi = dims["epilogue"]
    silu = epi == "silu_mul"
    out_n = N // 2 if silu else N
    bn, bk = block_n(out_n), BLOCK_K

    @T.prim_func
    def rows_gemm(x: T.Tensor((M, K), dt), w: T.Tensor((N, K), dt), out: T.Tensor((M, out_n), dt)):
        with T.Kernel(out_n // bn, threads=gemm_threads(bn)) as bx:
            # no register reallocation between the producer and consumer warps: it would take 240
            # registers a consumer thread (one block an SM), and a consumer group of two warps
            # (bn = 16) is not the whole warpgroup that setmaxnreg wants
            T.disable_warp_group_reg_alloc()
            xs = T.alloc_shared((M, bk), dt)
            ws = T.alloc_shared((bn, bk), dt)
            us = T.alloc_shared((bn, bk), dt)
            acc = T.alloc_fragment((M, bn), "float32")
            acc_u = T.alloc_fragment((M, bn), "float32")
            T.clear(acc)
            if silu:
                T.clear(acc_u)
            for k in T.Pipelined(K // bk, num_stages=STAGES):
                T.copy(x[0:M, k * bk:(k + 1) * bk], xs)
                T.copy(w[bx * bn:(bx + 1) * bn, k * bk:(k + 1) * bk], ws)
                if silu:
                    T.copy(w[out_n + bx * bn:out_n + (bx + 1) * bn, k * bk:(k + 1) * bk], us)
                T.gemm(xs, ws, acc, transpose_B=True)
                if silu:
                    T.gemm(xs, us, acc_u, transpose_B=True)
            for i, j in T.Parallel(M, bn):
                if epi == "residual":
                    out[i, bx * bn + j] = T.cast(T.cast(out[i, bx * bn + j], "float32")
                                                 + T.cast(T.cast(acc[i, j], dt), "float32"), dt)
                elif silu:
                    g = T.cast(T.cast(acc[i, j], dt), "float32")
                    u = T.cast(T.cast(acc_u[i, j], dt), "float32")
                    out[i, bx * bn + j] = T.cast(T.cast(T.cast(g / (1.0 + T.exp(-g)), dt), "float32") * u, dt)
                else:
                    out[i, bx * bn + j] = T.cast(acc[i, j], dt)

    return rows_gemm


register(Family(name="rows_embed", roles=("prompt", "start", "count", "table", "out"), cost=cost_embed,
                torch=torch_embed, tilelang=tilelang_embed,
                describe="x[m] = E[prompt[start + m]], a chunk of the prompt"))
register(Family(name="rows_last", roles=("rows", "count", "out"), cost=cost_last, torch=torch_last,
                tilelang=tilelang_last, describe="x = rows[count - 1], a prompt chunk's last row for the step's head"))
register(Family(name="rows_rmsnorm", roles=("x", "w", "out"), cost=cost_rmsnorm, torch=torch_rmsnorm,
                tilelang=tilelang_rmsnorm, describe="out[m] = rmsnorm(x[m]) * w, each row of a prompt chunk"))
register(Family(name="rows_gemm", roles=("x", "w", "out"), cost=cost_gemm, torch=torch_gemm, tilelang=tilelang_gemm,
                supported=supported_gemm, geometry=geometry_gemm,
                describe="out (=|+=) x @ W^T for a prompt chunk's rows, W streamed once (silu(g) * u from gate|up)"))
