"""The exact logits of the rows the int8 lm_head could not rule out, and their argmax partials.

    L        = max over lm_head_q8's blocks of their best lower bound
    logit_i  = w_i . h  where ub_i >= L  (f32, in the lm_head GEMV's order)   else -inf
    amax[b]  = (max, lowest index) over block b's rows, as the GEMV's partials

The argmax launch after it reduces `amax` exactly as it reduces the GEMV's (tfdash.kernels.argmax).
Why no other row can hold the argmax: tfdash.kernels.lm_head_q8.

The tilelang kernel keeps a warp's waits few: after the grid dependency it issues every round's
ub load together with h's and lb's, so no round's ballot waits on its own load; it runs two blocks
an SM, so a warp scans fewer rows and the slowest meets fewer candidates; and where a lane's share
of two rows fits its registers, it loads two candidate rows before summing either.
"""

import torch

from tfdash.kernels.base import DTYPE_BYTES, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import linear_f32

THREADS = 256
SMS = 132  # a warp scans a slice of the rows, 32 at a time
BLOCKS_PER_SM = 2  # resident blocks an SM (__launch_bounds__): more warps, each scanning fewer rows
# the kernel loads two candidate rows at once where a lane loads at most this many 16 bytes of each
# (20 in flight, as one row of K=5120): its registers still fit two blocks an SM
PAIR_MAX_CHK = 10
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
    return SMS * BLOCKS_PER_SM


def rows_at_once(dims) -> int:
    """Candidate rows a warp loads before summing any: two where a lane's share of
    both stays in its registers at two blocks an SM, else one."""
    return 2 if dims["K"] // (32 * VEC) <= PAIR_MAX_CHK else 1


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
    return Geometry((grid,), THREADS, BLOCKS_PER_SM, dims["N"], "row", grid * (THREADS // 32), "warp")


def supported(dims):
    if dims["K"] % (32 * VEC):
        return f"an exact lm_head pick with K={dims['K']} (it wants K a multiple of {32 * VEC})"
    return None


def tilelang_lm_head_pick(dims):
    """Block: 256 threads, BLOCKS_PER_SM an SM (__launch_bounds__). After the grid dependency each
    lane loads its ub value of every round (independent loads, in flight together) beside h (into
    shared memory) and the lower bounds (each warp reduces all of them to L itself: one barrier, for
    h); then each round's ballot of the rows whose ub reaches L, with -inf stored for the rows it
    leaves, and the warp takes its candidates in increasing row order, `rows_at_once` of them a
    time: both rows' loads issued before either sum. Each dot product keeps the GEMV's lane layout
    and order; the warps' (max, lowest index) follow, strictly greater keeping the lowest index."""
    import tilelang.language as T

    N, K, G1, dt = dims["N"], dims["K"], dims["lb_blocks"], dims["dtype"]
    pdl = dims.get("pdl", True)
    grid, per, GR = grid_size(dims), rows_per_warp(dims), rows_at_once(dims)
    warps = THREADS // 32
    rounds = -(-per // 32)
    CHK = K // (32 * VEC)
    h_iters = -(-K // (THREADS * VEC))
    l_iters = -(-G1 // 32)

    @T.prim_func
    def lm_head_pick(w: T.Tensor((N, K), dt), h: T.Tensor((K,), dt), ub: T.Tensor((N,), "float32"),
                     lb: T.Tensor((G1,), "float32"), logits: T.Tensor((N,), "float32"),
                     amax: T.Tensor((grid, 2), "float32")):
        with T.Kernel(grid, threads=THREADS) as bx:
            T.annotate_min_blocks_per_sm(BLOCKS_PER_SM)  # __launch_bounds__: registers for two blocks
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            first = (bx * warps + warp) * per  # the warp's first row
            h_s = T.alloc_shared((K,), dt)
            red_v = T.alloc_shared((warps,), "float32")
            red_i = T.alloc_shared((warps,), "int32")
            ubv = T.alloc_local((rounds,), "float32")  # every index a constant: registers
            masks = T.alloc_local((rounds,), "uint32")
            rows = T.alloc_local((GR,), "int32")
            wv = T.alloc_local((GR, CHK * VEC), dt)
            hv = T.alloc_local((VEC,), dt)
            acc = T.alloc_local((GR,), "float32")
            L = T.alloc_var("float32")
            best_v = T.alloc_var("float32")
            best_i = T.alloc_var("int32")
            left = T.alloc_var("int32")
            off = T.alloc_var("int32")
            if pdl:
                T.pdl_sync()
                T.pdl_trigger()
            for rd in T.unroll(rounds, explicit=True):  # independent loads, in flight together
                ubv[rd] = ub[T.min(first + rd * 32 + lane, N - 1)]
            for it in T.unroll(h_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        h_s[(it * THREADS + tx) * VEC + j] = h[(it * THREADS + tx) * VEC + j]
            L = -T.infinity("float32")
            for it in T.unroll(l_iters, explicit=True):
                if it * 32 + lane < G1:
                    L = T.max(L, lb[it * 32 + lane])
            L = T.warp_reduce_max(L)
            T.sync_threads()
            best_v = -T.infinity("float32")
            best_i = N
            left = 0
            for rd in T.unroll(rounds, explicit=True):
                masks[rd] = T.call_extern("uint32", "__ballot_sync", T.uint32(0xFFFFFFFF), T.cast(
                    rd * 32 + lane < per and first + rd * 32 + lane < N and ubv[rd] >= L, "int32"))
                if rd * 32 + lane < per and first + rd * 32 + lane < N and \
                        ((masks[rd] >> T.cast(lane, "uint32")) & T.uint32(1)) == T.uint32(0):
                    logits[first + rd * 32 + lane] = -T.infinity("float32")
                left += T.call_extern("int32", "__popc", masks[rd])
            for _ in T.serial((left + GR - 1) // GR):  # the same for every lane of the warp
                for g in T.unroll(GR, explicit=True):  # rows[g]: the lowest bit left over the rounds, or -1
                    off = -1
                    for rd in T.unroll(rounds, explicit=True):
                        if off < 0 and masks[rd] != T.uint32(0):
                            off = rd * 32 + T.call_extern("int32", "__ffs", T.cast(masks[rd], "int32")) - 1
                            masks[rd] = masks[rd] & (masks[rd] - T.uint32(1))
                    rows[g] = T.if_then_else(off >= 0, first + off, -1)
                # a row left over (-1) loads the first again. rows[0] >= 0 always (the loop's count), but
                # nvcc cannot tell: the loads become a basic block of their own, all issued before any sum
                # waits on one (in one block with the sums, ptxas interleaves them, a wait each)
                if rows[0] >= 0:
                    for g in T.unroll(GR, explicit=True):
                        for c in T.unroll(CHK):
                            for j in T.vectorized(VEC):
                                wv[g, c * VEC + j] = w[T.if_then_else(rows[g] >= 0, rows[g], rows[0]),
                                                       c * 32 * VEC + lane * VEC + j]
                for g in T.unroll(GR, explicit=True):
                    acc[g] = 0.0
                for c in T.unroll(CHK):
                    for j in T.vectorized(VEC):
                        hv[j] = h_s[c * 32 * VEC + lane * VEC + j]
                    for g in T.unroll(GR, explicit=True):
                        for j in T.unroll(VEC):
                            acc[g] += T.cast(wv[g, c * VEC + j], "float32") * T.cast(hv[j], "float32")
                for g in T.unroll(GR, explicit=True):
                    acc[g] = T.warp_reduce_sum(acc[g])
                for g in T.unroll(GR, explicit=True):  # in increasing row order
                    if rows[g] >= 0:
                        if lane == 0:
                            logits[rows[g]] = acc[g]
                        if acc[g] > best_v:
                            best_v = acc[g]
                            best_i = rows[g]
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
