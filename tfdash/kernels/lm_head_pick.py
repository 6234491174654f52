"""The exact logits of the rows the int8 lm_head could not rule out, and their argmax partials.

    L        = max over lm_head_q8's blocks of their best lower bound
    logit_i  = w_i . h  where ub_i >= L  (f32, in the lm_head GEMV's order)   else -inf
    amax[b]  = (max, lowest index) over block b's rows, as the GEMV's partials

The argmax launch after it reduces `amax` exactly as it reduces the GEMV's (tfdash.kernels.argmax).
Why no other row can hold the argmax: tfdash.kernels.lm_head_q8.
"""

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import linear_f32

THREADS = 256
SMS = 132  # one block an SM: a warp scans a slice of the rows, 32 at a time
EXPECTED_CANDIDATES = 64  # rows a step reads in full, for the cost model (the bounds decide, per step)
VEC = 8  # bf16 per 16-byte load: the GEMV's lane layout, so each dot product sums in its order


def torch_lm_head_pick(dims, bufs):
    """Every row's exact logit where its upper bound reaches the best lower bound, -inf elsewhere
    (capturable: every row is computed, then masked), and the (max, index) in amax's first row."""
    L = bufs["lb"].max()
    logits = linear_f32(bufs["h"], bufs["w"])
    logits = torch.where(bufs["ub"] >= L, logits, torch.full_like(logits, -float("inf")))
    bufs["logits"].copy_(logits)
    amax = bufs["amax"]
    amax[:, 0] = -float("inf")
    amax[:, 1] = float(dims["N"])
    amax[0, 0] = logits.max()
    amax[0, 1] = torch.argmax(logits).float()


def grid_size(dims) -> int:
    return SMS


def rows_per_warp(dims) -> int:
    return -(-dims["N"] // (grid_size(dims) * (THREADS // 32)))


def cost(dims, ctx_len=0):
    N, K, G1 = dims["N"], dims["K"], dims["lb_blocks"]
    es = DTYPE_BYTES[dims["dtype"]]
    cand = min(N, EXPECTED_CANDIDATES)
    return make_cost({"f32": 2 * cand * K + N}, {}, [
        Operand("w", "weight", cand * K * es, 0),
        Operand("h", "activation", K * es, 0),
        Operand("ub", "activation", N * 4, 0),
        Operand("lb", "activation", G1 * 4, 0),
        Operand("logits", "activation", 0, N * 4),
        Operand("amax", "activation", 0, grid_size(dims) * 8),
    ], smem=K * es + (THREADS // 32) * 8)


def geometry(dims, ctx_len: int = 0) -> Geometry:
    grid = grid_size(dims)
    return Geometry((grid,), THREADS, 1, dims["N"], "row", grid * (THREADS // 32), "warp")


def supported(dims):
    if dims["K"] % (32 * VEC):
        return f"an exact lm_head pick with K={dims['K']} (it wants K a multiple of {32 * VEC})"
    return None


def tilelang_lm_head_pick(dims):
    """Block: 256 threads, one an SM. After the grid dependency: h into shared memory and L from
    every lower bound; then each warp walks its slice 32 rows at a time: a ballot of the rows whose
    ub reaches L, -inf stored for the rest, and for each row of the ballot (the same for the whole
    warp) the warp's dot product over it, lane layout and order as the GEMV's, then the warps'
    (max, lowest index)."""
    import tilelang.language as T

    N, K, G1, dt = dims["N"], dims["K"], dims["lb_blocks"], dims["dtype"]
    pdl = dims.get("pdl", True)
    grid, per = grid_size(dims), rows_per_warp(dims)
    warps = THREADS // 32
    rounds = -(-per // 32)
    CHK = K // (32 * VEC)
    h_iters = -(-K // (THREADS * VEC))
    l_iters = -(-G1 // THREADS)

    @T.prim_func
    def lm_head_pick(w: T.Tensor((N, K), dt), h: T.Tensor((K,), dt), ub: T.Tensor((N,), "float32"),
                     lb: T.Tensor((G1,), "float32"), logits: T.Tensor((N,), "float32"),
                     amax: T.Tensor((grid, 2), "float32")):
        with T.Kernel(grid, threads=THREADS) as bx:
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            h_s = T.alloc_shared((K,), dt)
            red_v = T.alloc_shared((warps,), "float32")
            red_i = T.alloc_shared((warps,), "int32")
            wv = T.alloc_local((CHK * VEC,), dt)
            hv = T.alloc_local((VEC,), dt)
            L = T.alloc_var("float32")
            acc = T.alloc_var("float32")
            best_v = T.alloc_var("float32")
            best_i = T.alloc_var("int32")
            mask = T.alloc_var("int32")
            row = T.alloc_var("int32")
            if pdl:
                T.pdl_sync()
                T.pdl_trigger()
            for it in T.unroll(h_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        h_s[(it * THREADS + tx) * VEC + j] = h[(it * THREADS + tx) * VEC + j]
            L = -T.infinity("float32")
            for it in T.unroll(l_iters):
                if it * THREADS + tx < G1:
                    L = T.max(L, lb[it * THREADS + tx])
            L = T.warp_reduce_max(L)
            if lane == 0:
                red_v[warp] = L
            T.sync_threads()
            for i in T.unroll(warps):
                L = T.max(L, red_v[i])
            T.sync_threads()
            best_v = -T.infinity("float32")
            best_i = N
            for rd in T.serial(rounds):
                row = (bx * warps + warp) * per + rd * 32 + lane
                mask = T.call_extern("int32", "__ballot_sync", T.uint32(0xFFFFFFFF), T.cast(
                    rd * 32 + lane < per and row < N and ub[T.min(row, N - 1)] >= L, "int32"))
                if rd * 32 + lane < per and row < N and ((mask >> lane) & 1) == 0:
                    logits[row] = -T.infinity("float32")
                for k in T.serial(32):
                    if ((mask >> k) & 1) == 1:  # the same for every lane: the warp takes row k of the 32
                        row = (bx * warps + warp) * per + rd * 32 + k
                        for c in T.unroll(CHK):
                            for j in T.vectorized(VEC):
                                wv[c * VEC + j] = w[row, c * 32 * VEC + lane * VEC + j]
                        acc = 0.0
                        for c in T.unroll(CHK):
                            for j in T.vectorized(VEC):
                                hv[j] = h_s[c * 32 * VEC + lane * VEC + j]
                            for j in T.unroll(VEC):
                                acc += T.cast(wv[c * VEC + j], "float32") * T.cast(hv[j], "float32")
                        acc = T.warp_reduce_sum(acc)
                        if lane == 0:
                            logits[row] = acc
                        # rows come in increasing order: strictly greater keeps the lowest index
                        if acc > best_v:
                            best_v = acc
                            best_i = row
            if lane == 0:
                red_v[warp] = best_v
                red_i[warp] = best_i
            T.sync_threads()
            if tx == 0:
                for i in T.serial(warps):
                    if red_v[i] > best_v or (red_v[i] == best_v and red_i[i] < best_i):
                        best_v = red_v[i]
                        best_i = red_i[i]
                amax[bx, 0] = best_v
                amax[bx, 1] = T.cast(best_i, "float32")

    return lm_head_pick


FAMILY = register(Family(
    name="lm_head_pick",
    roles=("w", "h", "ub", "lb", "logits", "amax"),
    cost=cost,
    torch=torch_lm_head_pick,
    tilelang=tilelang_lm_head_pick,
    supported=supported,
    geometry=geometry,
    describe="the exact logits of the rows whose int8 bound reaches the best lower bound; argmax partials",
))
