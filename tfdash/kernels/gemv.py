"""GEMV family: every projection of the decode step (batch 1, so every matmul is a GEMV).

    out[N] (=|+=) W[N, K] @ prologue(x)

prologue: "none"     h = x
          "rmsnorm"  h = rmsnorm(x) * norm_w          (the norm fused into its consumer)
          "silu_mul" h = silu(x[:K]) * x[K:]          (gate|up packed: x has 2K entries)
epilogue: "store"    out = W @ h                      (out in `out_dtype`; f32 for the logits)
          "residual" out += W @ h                     (the residual add fused into its producer)

Roundings follow transformers' Qwen3 in the model dtype: the GEMV result is rounded to the dtype
before the residual add, silu(g) is rounded before the product with u.
"""

import functools
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import linear_f32, rmsnorm


def prologue_torch(dims, x, norm_w):
    K = dims["K"]
    if dims["prologue"] == "rmsnorm":
        return rmsnorm(x, norm_w, dims["eps"])
    if dims["prologue"] == "silu_mul":
        return F.silu(x[:K]) * x[K:]
    return x


def torch_gemv(dims, bufs):
    h = prologue_torch(dims, bufs["x"], bufs.get("norm_w"))
    out = bufs["out"]
    if out.dtype == torch.float32 and bufs["w"].dtype != torch.float32:
        y = linear_f32(h, bufs["w"])
    else:
        y = F.linear(h, bufs["w"])
    if dims["epilogue"] == "residual":
        out.add_(y)
    else:
        out.copy_(y)


def cost(dims, ctx_len=0):
    N, K = dims["N"], dims["K"]
    es = DTYPE_BYTES[dims["dtype"]]
    out_es = DTYPE_BYTES[dims["out_dtype"]]
    flops = {SHORT_DTYPE[dims["dtype"]]: 2 * N * K}
    f32 = 0
    special = {}
    x_len = K
    ops = [Operand("w", "weight", N * K * es, 0)]
    if dims["prologue"] == "rmsnorm":
        f32 += 4 * K  # square, sum, scale by rstd, scale by norm_w
        special["rsqrt"] = 1
        ops.append(Operand("norm_w", "weight", K * es, 0))
    elif dims["prologue"] == "silu_mul":
        x_len = 2 * K
        f32 += 4 * K  # silu = g / (1 + exp(-g)), then * u
        special["exp"] = K
    ops.insert(0, Operand("x", "activation", x_len * es, 0))
    if dims["epilogue"] == "residual":
        f32 += N
        ops.append(Operand("out", "activation", N * out_es, N * out_es))
    else:
        ops.append(Operand("out", "activation", 0, N * out_es))
    flops["f32"] = flops.get("f32", 0) + f32
    rows, _, bps = launch_settings(dims)
    scratch = 2 * 4 * grid_size(N, K, bps, rows) if dims.get("argmax") else 0
    # shared memory of the tilelang kernel: h staged in the model dtype (the small reduction
    # arrays share its space: tilelang's planner aliases them once h is dead)
    return make_cost(flops, special, ops, smem=K * es, scratch=scratch)


# -- tilelang ------------------------------------------------------------------------------
THREADS = 256  # 8 warps per block
VEC = 8  # bf16 per 16-byte load
SMS = 132  # H200 multiprocessors; the grid is capped at `blocks_per_sm` of them
BLOCKS_PER_SM = 2  # default; a plan may ask fewer for one op, leaving room for its successor's
#                    blocks to become resident early under PDL and prefetch their weights

LOADS = 16  # 16-byte weight loads a lane keeps in flight (R rows x SEG chunks)
CHUNK = 32 * VEC  # columns a warp covers with one 16-byte load per lane
TABLE_FILE = Path(__file__).with_name("gemv_table.json")

MAX_ROWS = 2  # four rows a warp (K = 1024: 4 rows x 4 chunks) took 143 registers a thread, so
#               one 256-thread block fitted per SM where the grid plans two


def rows_per_warp(K: int) -> int:
    """Rows a warp streams together: about LOADS 16-byte weight loads in flight per lane."""
    return max(1, min(MAX_ROWS, LOADS // max(1, K // CHUNK)))


def chunks_per_segment(K: int, rows: int | None = None) -> int:
    """Chunks (256 columns each) of a row loaded at once. A long row (down: K = 6144, 24 chunks)
    is streamed in segments: holding all of it took 130 registers a thread, so only one block
    fitted on an SM and the grid ran in two waves. The fewest segments that keep R x SEG <= LOADS,
    balanced (the last may be shorter): 24 chunks -> 12 + 12, 38 -> 13 + 13 + 12."""
    chunks = max(1, K // CHUNK)  # (a K under one chunk has no tilelang kernel: `supported` says so)
    cap = max(1, LOADS // (rows or rows_per_warp(K)))
    segs = -(-chunks // cap)
    return -(-chunks // segs)


def rule(N: int, K: int) -> dict:
    """Launch settings for a weight shape the table does not list."""
    return {"rows": rows_per_warp(K), "seg": chunks_per_segment(K), "blocks_per_sm": BLOCKS_PER_SM}


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """{(N, K): settings} from gemv_table.json: each entry says how it was chosen."""
    raw = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    return {(e["N"], e["K"]): {k: e[k] for k in ("rows", "seg", "blocks_per_sm")} for e in raw["entries"]}


def settings(N: int, K: int) -> dict:
    """The launch settings of an N x K GEMV: the table's entry, else the rule."""
    return dict(table().get((N, K)) or rule(N, K))


def launch_settings(dims) -> tuple[int, int, int]:
    """(rows per warp, chunks per segment, blocks per SM) of a launch; dims recorded before the
    plan carried them take the rule."""
    r = rule(dims["N"], dims["K"])
    rows = dims.get("rows", r["rows"])
    seg = dims.get("seg") or chunks_per_segment(dims["K"], rows)
    return rows, seg, dims.get("blocks_per_sm", BLOCKS_PER_SM)


def grid_size(N: int, K: int, blocks_per_sm: int = BLOCKS_PER_SM, rows: int | None = None) -> int:
    groups = -(-N // (rows or rows_per_warp(K)))
    return max(1, min(-(-groups // (THREADS // 32)), SMS * blocks_per_sm))


def supported(dims):
    if dims["K"] % CHUNK:
        return f"a GEMV with K={dims['K']} (its GEMV wants K a multiple of {CHUNK})"
    if dims.get("argmax") and dims["N"] >= 2 ** 24:
        return f"a vocabulary of {dims['N']} (the argmax carries indices in f32, exact below 2**24)"
    return None


def tilelang_gemv(dims):
    """One prim_func for every GEMV of the step.

    Block: 256 threads. The prologue runs once per block: x -> h (rmsnorm, silu*up or a copy),
    rounded to the model dtype exactly as the torch spelling rounds, staged in shared memory.
    Main loop: each warp owns R consecutive rows at a time (grid-stride over row groups); lane l
    reads 16 bytes of each row at k = c*256 + 8l, so a warp streams 512 contiguous bytes per row
    per chunk, every load of a row group's segment (SEG chunks; the whole row unless it is long)
    issued before its FMAs (the chunk loop is unrolled).
    Partial dot products are reduced with warp shuffles; lane 0 applies the epilogue.
    """
    import tilelang.language as T

    pdl = dims.get("pdl", True)

    N, K = dims["N"], dims["K"]
    prologue, epilogue = dims["prologue"], dims["epilogue"]
    dt, out_dt = dims["dtype"], dims["out_dtype"]
    eps = float(dims["eps"])
    R, SEG, _ = launch_settings(dims)
    geo = geometry(dims)  # what the drill-down shows of this launch
    grid, warps, total_warps, groups, passes = geo.grid[0], THREADS // 32, geo.workers, geo.units, geo.rounds
    chunks = K // CHUNK
    segs = -(-chunks // SEG)
    ragged = chunks % SEG != 0  # the last segment is shorter: its missing chunks are skipped
    x_len, pro_iters = (2 * K if prologue == "silu_mul" else K), -(-K // (THREADS * VEC))
    assert K % (32 * VEC) == 0, f"K={K} must be a multiple of {32 * VEC}"

    amax_on, min_blocks = bool(dims.get("argmax")), int(dims.get("min_blocks", 0))
    # trigger_first: the next kernel may launch at this one's start (its blocks stream their weights
    # while the kernel before this one runs); the plan allows it where that one reads only weights early
    trig_first = pdl and bool(dims.get("trigger_first"))
    # The residual this GEMV adds into was written two or more kernels back (the plan says so:
    # o_proj's x by the last layer's down, down's by o_proj): under PDL, every kernel before the
    # one just before this has finished once this kernel runs, so its first row group's residual
    # is read before the grid dependency, off the end of the critical path.
    early_res = pdl and epilogue == "residual" and bool(dims.get("early_residual"))
    # The norm weight depends on no kernel: with `early_norm` it is loaded before the grid
    # dependency, so the prologue after it waits only on x (in L2, just written) and not on a
    # DRAM read of a weight no kernel of this layer has touched yet.
    early_norm = pdl and prologue == "rmsnorm" and bool(dims.get("early_norm"))

    @T.macro
    def body(x, norm_w, w, out, amax):
        with T.Kernel(grid, threads=THREADS) as bx:
            if min_blocks:  # __launch_bounds__(THREADS, min_blocks): the register budget a thread
                T.annotate_min_blocks_per_sm(min_blocks)
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            h_s = T.alloc_shared((K,), dt)
            red_s = T.alloc_shared((warps,), "float32")
            xv = T.alloc_local((pro_iters * VEC,), dt)
            uv = T.alloc_local((VEC,), dt)
            nv = T.alloc_local((pro_iters * VEC if early_norm else VEC,), dt)
            hv = T.alloc_local((VEC,), dt)
            ssq = T.alloc_var("float32")
            rstd = T.alloc_var("float32")
            wv = T.alloc_local((R, SEG * VEC), dt)
            acc = T.alloc_local((R,), "float32")
            resv = T.alloc_local((R,), out_dt)
            best_v = T.alloc_var("float32")
            best_i = T.alloc_var("int32")
            bv_s = T.alloc_shared((warps,), "float32")
            bi_s = T.alloc_shared((warps,), "int32")
            best_v = -T.infinity("float32")
            best_i = N
            g0 = bx * warps + warp
            if trig_first:
                T.pdl_trigger()
            # ---- before the grid dependency: stream this warp's first row group (segment) ---
            # Weights depend on no kernel, so with programmatic dependent launch these loads
            # overlap the previous kernel's tail; everything after pdl_sync may read its output.
            if g0 < groups:
                for r in T.unroll(R):
                    for c in T.unroll(SEG):
                        for j in T.vectorized(VEC):
                            wv[r, c * VEC + j] = w[T.min(g0 * R + r, N - 1), c * 32 * VEC + lane * VEC + j]
                if early_res:
                    if lane == 0:
                        for r in T.unroll(R):
                            resv[r] = out[T.min(g0 * R + r, N - 1)]
            if early_norm:
                for it in T.unroll(pro_iters):
                    if (it * THREADS + tx) * VEC < K:
                        for j in T.vectorized(VEC):
                            nv[it * VEC + j] = norm_w[(it * THREADS + tx) * VEC + j]
            if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                T.pdl_sync()
                if not trig_first:
                    T.pdl_trigger()

            # ---- prologue: h = f(x) into shared memory ------------------------------------
            if prologue == "rmsnorm":
                ssq = 0.0
                for it in T.unroll(pro_iters):
                    if (it * THREADS + tx) * VEC < K:
                        for j in T.vectorized(VEC):
                            xv[it * VEC + j] = x[(it * THREADS + tx) * VEC + j]
                        for j in T.unroll(VEC):
                            ssq += T.cast(xv[it * VEC + j], "float32") * T.cast(xv[it * VEC + j], "float32")
                ssq = T.warp_reduce_sum(ssq)
                if lane == 0:
                    red_s[warp] = ssq
                T.sync_threads()
                ssq = 0.0
                for i in T.unroll(warps):
                    ssq += red_s[i]
                rstd = T.rsqrt(ssq / K + eps)
                for it in T.unroll(pro_iters):
                    if (it * THREADS + tx) * VEC < K:
                        if not early_norm:
                            for j in T.vectorized(VEC):
                                nv[j] = norm_w[(it * THREADS + tx) * VEC + j]
                        for j in T.unroll(VEC):
                            # HF: weight * (x * rstd).to(dtype), each product rounded to dtype
                            hv[j] = T.cast(
                                T.cast(T.cast(T.cast(xv[it * VEC + j], "float32") * rstd, dt), "float32")
                                * T.cast(nv[(it * VEC if early_norm else 0) + j], "float32"), dt)
                        for j in T.vectorized(VEC):
                            h_s[(it * THREADS + tx) * VEC + j] = hv[j]
            elif prologue == "silu_mul":
                for it in T.unroll(pro_iters):
                    if (it * THREADS + tx) * VEC < K:
                        for j in T.vectorized(VEC):
                            xv[it * VEC + j] = x[(it * THREADS + tx) * VEC + j]
                        for j in T.vectorized(VEC):
                            uv[j] = x[K + (it * THREADS + tx) * VEC + j]
                        for j in T.unroll(VEC):
                            # silu(g) in f32, rounded; then * u, rounded (torch's bf16 silu and mul)
                            hv[j] = T.cast(
                                T.cast(T.cast(xv[it * VEC + j], "float32")
                                       / (1.0 + T.exp(-T.cast(xv[it * VEC + j], "float32"))), dt).astype("float32")
                                * T.cast(uv[j], "float32"), dt)
                        for j in T.vectorized(VEC):
                            h_s[(it * THREADS + tx) * VEC + j] = hv[j]
            else:
                for it in T.unroll(pro_iters):
                    if (it * THREADS + tx) * VEC < K:
                        for j in T.vectorized(VEC):
                            h_s[(it * THREADS + tx) * VEC + j] = x[(it * THREADS + tx) * VEC + j]
            T.sync_threads()

            # ---- main loop: warps stream row groups ----------------------------------------
            for p in T.serial(passes):
                g = p * total_warps + bx * warps + warp
                if g < groups:
                    for r in T.unroll(R):
                        acc[r] = 0.0
                    for sg in T.serial(segs):  # serial: the next segment's loads stay after these FMAs
                        if p > 0 or sg > 0:
                            for r in T.unroll(R):
                                for c in T.unroll(SEG):
                                    if not ragged or sg * SEG + c < chunks:
                                        for j in T.vectorized(VEC):
                                            wv[r, c * VEC + j] = w[T.min(g * R + r, N - 1),
                                                                   (sg * SEG + c) * 32 * VEC + lane * VEC + j]
                        for c in T.unroll(SEG):
                            if not ragged or sg * SEG + c < chunks:
                                for j in T.vectorized(VEC):
                                    hv[j] = h_s[(sg * SEG + c) * 32 * VEC + lane * VEC + j]
                                for r in T.unroll(R):
                                    for j in T.unroll(VEC):
                                        acc[r] += T.cast(wv[r, c * VEC + j], "float32") * T.cast(hv[j], "float32")
                    for r in T.unroll(R):
                        acc[r] = T.warp_reduce_sum(acc[r])
                    if lane == 0:
                        for r in T.unroll(R):
                            if g * R + r < N:
                                if epilogue == "residual" and early_res:
                                    out[g * R + r] = T.cast(
                                        T.cast(T.if_then_else(p == 0, resv[r], out[g * R + r]), "float32")
                                        + T.cast(T.cast(acc[r], dt), "float32"), out_dt)
                                elif epilogue == "residual":
                                    out[g * R + r] = T.cast(
                                        T.cast(out[g * R + r], "float32") + T.cast(T.cast(acc[r], dt), "float32"),
                                        out_dt)
                                else:
                                    out[g * R + r] = T.cast(acc[r], out_dt)
                    if amax_on:
                        # rows arrive in increasing order per warp: strictly greater keeps the
                        # lowest index among ties (torch.argmax's tie-break)
                        for r in T.unroll(R):
                            if g * R + r < N and acc[r] > best_v:
                                best_v = acc[r]
                                best_i = g * R + r
            if amax_on:
                # per-block argmax partial: (value, index as f32; exact below 2**24)
                if lane == 0:
                    bv_s[warp] = best_v
                    bi_s[warp] = best_i
                T.sync_threads()
                if tx == 0:
                    for i in T.serial(warps):
                        if bv_s[i] > best_v or (bv_s[i] == best_v and bi_s[i] < best_i):
                            best_v = bv_s[i]
                            best_i = bi_s[i]
                    amax[bx, 0] = best_v
                    amax[bx, 1] = T.cast(best_i, "float32")

    if amax_on:

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), norm_w: T.Tensor((K,), dt), w: T.Tensor((N, K), dt),
                 out: T.Tensor((N,), out_dt), amax: T.Tensor((grid, 2), "float32")):
            body(x, norm_w, w, out, amax)
    elif prologue == "rmsnorm":

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), norm_w: T.Tensor((K,), dt), w: T.Tensor((N, K), dt),
                 out: T.Tensor((N,), out_dt)):
            body(x, norm_w, w, out, None)
    else:

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), w: T.Tensor((N, K), dt), out: T.Tensor((N,), out_dt)):
            body(x, None, w, out, None)

    return gemv


def geometry(dims, ctx_len: int = 0) -> Geometry:
    """Row groups (R rows each) over the grid's warps, grid-stride: a warp takes one at a time."""
    R, _, bps = launch_settings(dims)
    grid = grid_size(dims["N"], dims["K"], bps, R)
    return Geometry((grid,), THREADS, bps, -(-dims["N"] // R), "row" if R == 1 else f"{R}-row group",
                    grid * (THREADS // 32), "warp")


FAMILY = register(Family(
    name="gemv",
    roles=("x", "norm_w", "w", "out", "amax"),
    cost=cost,
    torch=torch_gemv,
    tilelang=tilelang_gemv,
    supported=supported,
    geometry=geometry,
    describe="out (=|+=) W @ prologue(x); prologue rmsnorm|silu_mul|none, epilogue store|residual",
))
