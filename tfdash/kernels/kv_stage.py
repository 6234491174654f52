"""How an attention block brings its block of the KV cache on chip before it scores it: into
registers, or into shared memory with asynchronous copies.

Both are issued before anything else the block does, so the rows stream while q and this step's
k are normed and rotated (and, fused under PDL, before the grid dependency, while the qkv GEMV
still runs). Positions past the context, and the fused kernel's own position (its k and v come
from qkv, not the cache), read as zeros.

- registers: thread tx holds v[j, tx] for the block's B positions, and 16 dims of each key row it
  scores. Simple, but the block holds B + 2 * iters * 16 values a thread in registers until the
  scores and values use them: about 250 registers a thread, so a block does not fit on an SM beside
  two blocks of the qkv GEMV and becomes resident only as they leave.
- smem: 16-byte `cp.async` copies of the block's K and V rows into shared memory (zero-filled past
  the context), waited for after the rope phase. No register holds them in flight, so the block
  takes far fewer registers and may fit beside the qkv GEMV's blocks, issuing its copies while that
  GEMV streams its weights.
"""

VEC = 8  # dtype elements a 16-byte copy moves


def register_loads(T, B: int, iters: int, DC: int, C: int, fused: bool, dt: str):
    """(load_v, load_k) macros into the registers vv (B,) and kall (iters, DC)."""

    @T.macro
    def load_v(v_cache, vv, g, bx, n, tx):
        # V from the cache (thread tx owns dim tx); this step's own v comes later
        for j in T.unroll(B):
            if bx * B + j < n - (1 if fused else 0):
                vv[j] = v_cache[g, bx * B + j, tx]
            else:
                vv[j] = T.cast(0, dt)

    @T.macro
    def load_k(k_cache, kall, g, bx, warp, pi, dc):
        # every key row this thread scores, before any barrier (this step's own key is swapped in later)
        for it in T.unroll(iters):
            for c in T.vectorized(DC):
                kall[it, c] = k_cache[g, T.min(bx * B + warp * (iters * 4) + it * 4 + pi, C - 1), dc * DC + c]

    return load_v, load_k


def smem_copies(T, B: int, D: int, threads: int, C: int, fused: bool, dt: str):
    """(stage, wait) macros: `stage` issues the copies of the block's K and V rows into k_sm and
    v_sm (B, D) and commits them; `wait` waits for this thread's copies, then a block barrier
    makes every thread's visible."""
    per_row = D // VEC
    per_thread = B * per_row // threads
    assert B * per_row % threads == 0, (B, D, threads)

    @T.macro
    def stage(k_cache, v_cache, k_sm, v_sm, g, bx, n, tx):
        for it in T.unroll(per_thread):
            j = (it * threads + tx) // per_row  # consecutive threads copy consecutive 16 bytes of a row
            c = (it * threads + tx) % per_row
            src = (g * C + T.min(bx * B + j, C - 1)) * D + c * VEC
            live = bx * B + j < n - (1 if fused else 0)
            T.evaluate(T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(dt), k_sm.data, j * D + c * VEC, VEC, 2),
                                      T.tvm_access_ptr(T.type_annotation(dt), k_cache.data, src, VEC, 1), VEC,
                                      predicate=live))
            T.evaluate(T.ptx_cp_async(T.tvm_access_ptr(T.type_annotation(dt), v_sm.data, j * D + c * VEC, VEC, 2),
                                      T.tvm_access_ptr(T.type_annotation(dt), v_cache.data, src, VEC, 1), VEC,
                                      predicate=live))
        T.evaluate(T.ptx_commit_group())

    @T.macro
    def wait():
        T.evaluate(T.ptx_wait_group(0))
        T.sync_threads()

    return stage, wait
