"""One GEMV of the GEMV family (tfdash.kernels.gemv) as tilelang pieces the kernel places around
its own grid dependency: what it may read before the kernel before it has finished, and the rest.
"""

from types import SimpleNamespace

from tfdash.kernels.gemv import CHUNK, THREADS, VEC, launch_settings

PHASE_BUFFERS = ("h_s", "red_s", "xv", "uv", "nv", "hv", "wv", "acc", "resv", "bv_s", "bi_s")


def hf_norm(T, x, rstd, w, dt: str):
    """One value of HF's RMSNorm in a kernel: weight * (x * rstd).to(dtype), each product rounded
    to dtype. The GEMVs' rmsnorm prologue and lm_head_q8's h share it, so their h agree bit for bit."""
    return T.cast(T.cast(T.cast(T.cast(x, "float32") * rstd, dt), "float32") * T.cast(w, "float32"), dt)


def gemv_phase(T, dims, grid: int):
    """One GEMV as tilelang pieces over a grid of `grid` blocks of THREADS threads, for the kernel
    to place around its own grid dependency: `alloc()` (inside the kernel) gives its registers
    and shared memory; `prefetch` streams the warp's first row group (segment) of weights, and
    the norm weight or residual where `dims` reads them early; `run` is the prologue, the main
    loop, the epilogue and the argmax partials. tilelang_gemv is prefetch, the grid dependency,
    run."""
    pdl = dims.get("pdl", True)
    N, K = dims["N"], dims["K"]
    prologue, epilogue = dims["prologue"], dims["epilogue"]
    dt, out_dt = dims["dtype"], dims["out_dtype"]
    eps = float(dims["eps"])
    R, SEG, _ = launch_settings(dims)
    warps = THREADS // 32
    total_warps, groups = grid * warps, -(-N // R)
    passes = -(-groups // total_warps)
    chunks = K // CHUNK
    segs = -(-chunks // SEG)
    ragged = chunks % SEG != 0  # the last segment is shorter: its missing chunks are skipped
    pro_iters = -(-K // (THREADS * VEC))
    assert K % (32 * VEC) == 0, f"K={K} must be a multiple of {32 * VEC}"
    amax_on = bool(dims.get("argmax"))
    # epilogue "silu_mul": a warp's R rows are R/2 gate rows and their R/2 up rows (gate row i and
    # up row N/2 + i), so lane 0 writes h_i = silu(g_i) * u_i: N/2 outputs, computed once here
    # rather than by every block of the GEMV that consumes them
    pair = epilogue == "silu_mul"
    assert not pair or (R % 2 == 0 and N % 2 == 0 and out_dt == dt), f"silu_mul pairs rows: R={R}, N={N}"
    half_n = N // 2

    def silu_mul(g, u):
        """silu(g) in f32, rounded to the dtype, times u, rounded (torch's bf16 silu and mul), from
        g and u in the dtype: the silu_mul prologue's and epilogue's one arithmetic."""
        gf = T.cast(g, "float32")
        return T.cast(T.cast(gf / (1.0 + T.exp(-gf)), dt).astype("float32") * T.cast(u, "float32"), dt)

    def row(g, r):
        """The weight row of row group g's r-th row (clamped: a group past N repeats the last row)."""
        if pair:
            return (r % 2) * half_n + T.min(g * (R // 2) + r // 2, half_n - 1)
        return T.min(g * R + r, N - 1)
    # The residual this GEMV adds into was written two or more kernels back (the plan says so:
    # o_proj's x by the last layer's down, down's by o_proj): under PDL, every kernel before the
    # one just before this has finished once this kernel runs, so its first row group's residual
    # is read before the grid dependency, off the end of the critical path.
    early_res = pdl and epilogue == "residual" and bool(dims.get("early_residual"))
    # The norm weight depends on no kernel: with `early_norm` it is loaded before the grid
    # dependency, so the prologue after it waits only on x (in L2, just written) and not on a
    # DRAM read of a weight no kernel of this layer has touched yet.
    early_norm = pdl and prologue == "rmsnorm" and bool(dims.get("early_norm"))

    def alloc():
        """The phase's buffers, in PHASE_BUFFERS' order: a kernel unpacks them into names (which
        the generated CUDA keeps), then `pack`s them for the macros."""
        return (T.alloc_shared((K,), dt), T.alloc_shared((warps,), "float32"),
                T.alloc_local((pro_iters * VEC,), dt), T.alloc_local((VEC,), dt),
                T.alloc_local((pro_iters * VEC if early_norm else VEC,), dt), T.alloc_local((VEC,), dt),
                T.alloc_local((R, SEG * VEC), dt), T.alloc_local((R,), "float32"), T.alloc_local((R,), out_dt),
                T.alloc_shared((warps,), "float32"), T.alloc_shared((warps,), "int32"))

    @T.macro
    def prefetch(ns, norm_w, w, out, bx, tx, lane, warp):
        # Weights depend on no kernel, so with programmatic dependent launch these loads
        # overlap the previous kernel's tail; everything after pdl_sync may read its output.
        g0 = bx * warps + warp
        if g0 < groups:
            for r in T.unroll(R):
                for c in T.unroll(SEG):
                    for j in T.vectorized(VEC):
                        ns.wv[r, c * VEC + j] = w[row(g0, r), c * 32 * VEC + lane * VEC + j]
            if early_res:
                if lane == 0:
                    for r in T.unroll(R):
                        ns.resv[r] = out[T.min(g0 * R + r, N - 1)]
        if early_norm:
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        ns.nv[it * VEC + j] = norm_w[(it * THREADS + tx) * VEC + j]

    @T.macro
    def run(ns, x, norm_w, w, out, amax, bx, tx, lane, warp):
        ssq = T.alloc_var("float32")
        rstd = T.alloc_var("float32")
        best_v = T.alloc_var("float32")
        best_i = T.alloc_var("int32")
        best_v = -T.infinity("float32")
        best_i = N
        # ---- prologue: h = f(x) into shared memory ----------------------------------------
        if prologue == "rmsnorm":
            ssq = 0.0
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        ns.xv[it * VEC + j] = x[(it * THREADS + tx) * VEC + j]
                    for j in T.unroll(VEC):
                        ssq += T.cast(ns.xv[it * VEC + j], "float32") * T.cast(ns.xv[it * VEC + j], "float32")
            ssq = T.warp_reduce_sum(ssq)
            if lane == 0:
                ns.red_s[warp] = ssq
            T.sync_threads()
            ssq = 0.0
            for i in T.unroll(warps):
                ssq += ns.red_s[i]
            rstd = T.rsqrt(ssq / K + eps)
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    if not early_norm:
                        for j in T.vectorized(VEC):
                            ns.nv[j] = norm_w[(it * THREADS + tx) * VEC + j]
                    for j in T.unroll(VEC):
                        ns.hv[j] = hf_norm(T, ns.xv[it * VEC + j], rstd, ns.nv[(it * VEC if early_norm else 0) + j], dt)
                    for j in T.vectorized(VEC):
                        ns.h_s[(it * THREADS + tx) * VEC + j] = ns.hv[j]
        elif prologue == "silu_mul":
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        ns.xv[it * VEC + j] = x[(it * THREADS + tx) * VEC + j]
                    for j in T.vectorized(VEC):
                        ns.uv[j] = x[K + (it * THREADS + tx) * VEC + j]
                    for j in T.unroll(VEC):
                        ns.hv[j] = silu_mul(ns.xv[it * VEC + j], ns.uv[j])
                    for j in T.vectorized(VEC):
                        ns.h_s[(it * THREADS + tx) * VEC + j] = ns.hv[j]
        else:
            for it in T.unroll(pro_iters):
                if (it * THREADS + tx) * VEC < K:
                    for j in T.vectorized(VEC):
                        ns.h_s[(it * THREADS + tx) * VEC + j] = x[(it * THREADS + tx) * VEC + j]
        T.sync_threads()

        # ---- main loop: warps stream row groups --------------------------------------------
        for p in T.serial(passes):
            g = p * total_warps + bx * warps + warp
            if g < groups:
                for r in T.unroll(R):
                    ns.acc[r] = 0.0
                for sg in T.serial(segs):  # serial: the next segment's loads stay after these FMAs
                    if p > 0 or sg > 0:
                        for r in T.unroll(R):
                            for c in T.unroll(SEG):
                                if not ragged or sg * SEG + c < chunks:
                                    for j in T.vectorized(VEC):
                                        ns.wv[r, c * VEC + j] = w[row(g, r),
                                                                  (sg * SEG + c) * 32 * VEC + lane * VEC + j]
                    for c in T.unroll(SEG):
                        if not ragged or sg * SEG + c < chunks:
                            for j in T.vectorized(VEC):
                                ns.hv[j] = ns.h_s[(sg * SEG + c) * 32 * VEC + lane * VEC + j]
                            for r in T.unroll(R):
                                for j in T.unroll(VEC):
                                    ns.acc[r] += T.cast(ns.wv[r, c * VEC + j], "float32") * T.cast(ns.hv[j], "float32")
                for r in T.unroll(R):
                    ns.acc[r] = T.warp_reduce_sum(ns.acc[r])
                if pair:
                    if lane == 0:
                        for r2 in T.unroll(R // 2):
                            if g * (R // 2) + r2 < half_n:
                                # g and u rounded to the dtype first, as a stored gate_up held them
                                ns.hv[0] = T.cast(ns.acc[2 * r2], dt)
                                ns.hv[1] = T.cast(ns.acc[2 * r2 + 1], dt)
                                out[g * (R // 2) + r2] = silu_mul(ns.hv[0], ns.hv[1])
                else:
                    if lane == 0:
                        for r in T.unroll(R):
                            if g * R + r < N:
                                if epilogue == "residual" and early_res:
                                    out[g * R + r] = T.cast(
                                        T.cast(T.if_then_else(p == 0, ns.resv[r], out[g * R + r]), "float32")
                                        + T.cast(T.cast(ns.acc[r], dt), "float32"), out_dt)
                                elif epilogue == "residual":
                                    out[g * R + r] = T.cast(
                                        T.cast(out[g * R + r], "float32") + T.cast(T.cast(ns.acc[r], dt), "float32"),
                                        out_dt)
                                else:
                                    out[g * R + r] = T.cast(ns.acc[r], out_dt)
                if amax_on:
                    # rows arrive in increasing order per warp: strictly greater keeps the
                    # lowest index among ties (torch.argmax's tie-break)
                    for r in T.unroll(R):
                        if g * R + r < N and ns.acc[r] > best_v:
                            best_v = ns.acc[r]
                            best_i = g * R + r
        if amax_on:
            # per-block argmax partial: (value, index as f32; exact below 2**24)
            if lane == 0:
                ns.bv_s[warp] = best_v
                ns.bi_s[warp] = best_i
            T.sync_threads()
            if tx == 0:
                for i in T.serial(warps):
                    if ns.bv_s[i] > best_v or (ns.bv_s[i] == best_v and ns.bi_s[i] < best_i):
                        best_v = ns.bv_s[i]
                        best_i = ns.bi_s[i]
                amax[bx, 0] = best_v
                amax[bx, 1] = T.cast(best_i, "float32")

    def pack(*buffers):
        return SimpleNamespace(**dict(zip(PHASE_BUFFERS, buffers)))

    return SimpleNamespace(alloc=alloc, pack=pack, prefetch=prefetch, run=run)
