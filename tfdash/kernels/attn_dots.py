"""The attention kernel's score and value phases with independent chains (`ilp`), as tilelang macros.

A block runs one warp a scheduler, so a phase takes as long as its longest chain of dependent
instructions, not its instruction count over the issue rate. The plain phases chain them: each
(position, head) dot product is one 16-deep FMA chain, then its three shuffles, then a branch to
store it, before the next dot begins; each head's output is one B-deep FMA chain.

    scores  every dot of the thread (iters x group) in 4 accumulators each, then the shuffles of
            all of them, then the stores: no branch between the chains (the 8 lanes that share a
            dot store the same value at the same address), so the scheduler interleaves them
    values  each head's sum over the block's positions in 4 accumulators, the weights read 4 at a
            time from shared memory, this step's own v added once after them rather than chosen
            at every position

The same products as the plain phases, summed in another order (f32 both).
"""

ACC = 4  # accumulators a sum: FMA latency 4 cycles, so 4 chains keep one FMA a cycle in flight


def key_macro(T, DC: int, fused: bool):
    """kv = this thread's DC dims of key row jl: prefetched in kall, or (fused, jl this step's
    position) the step's own k in k_s. Both score phases read their keys through it."""

    @T.macro
    def key(kall, k_s, kv, it, jl, last, dc):
        if fused and jl == last:
            for c in T.vectorized(DC):
                kv[c] = k_s[dc * DC + c]
        else:
            for c in T.vectorized(DC):
                kv[c] = kall[it, c]

    return key


def scores_macro(T, group: int, iters: int, DC: int, B: int, fused: bool, scale: float):
    """sc_s[hh, j] = (q_hh . k_j) * scale for the thread's key rows (-inf past n), every head."""
    key = key_macro(T, DC, fused)

    @T.macro
    def scores(qv, kall, k_s, kv, sc_s, dots, acc, bx, n, last, warp, pi, dc):
        for it in T.unroll(iters):
            jl = warp * (iters * 4) + it * 4 + pi
            key(kall, k_s, kv, it, jl, last, dc)
            for hh in T.unroll(group):
                for a in T.unroll(ACC):
                    acc[a] = 0.0
                for c in T.unroll(DC):
                    acc[c % ACC] += T.cast(qv[hh, c], "float32") * T.cast(kv[c], "float32")
                dots[it, hh] = (acc[0] + acc[1]) + (acc[2] + acc[3])
        for sh in T.unroll(3):  # xor 4, 2, 1 over the 8 lanes of a key row, every dot a round
            for it in T.unroll(iters):
                for hh in T.unroll(group):
                    dots[it, hh] += T.shfl_xor(dots[it, hh], 4 >> sh)
        for it in T.unroll(iters):
            jl = warp * (iters * 4) + it * 4 + pi
            for hh in T.unroll(group):
                sc_s[hh, jl] = T.if_then_else(bx * B + jl < n, dots[it, hh] * scale, -T.infinity("float32"))

    return scores


def values_macro(T, group: int, B: int, fused: bool):
    """part[h, bx, tx] = sum_j p_s[hh, j] * v[j, tx] for each head hh of the group (h its q head).
    Fused, the block holding this step's position `last` prefetched a zero there (load_kv), so the
    sum runs over vv as it is and adds p[last] * vcur (this step's own v) once after it."""

    @T.macro
    def values(p_s, vv, vcur, part, o4, pl, g, bx, last, tx):
        for hh in T.unroll(group):
            for a in T.unroll(ACC):
                o4[hh, a] = 0.0
        for jb in T.unroll(B // ACC):
            for hh in T.unroll(group):
                for a in T.vectorized(ACC):
                    pl[hh, a] = p_s[hh, jb * ACC + a]
                for a in T.unroll(ACC):
                    o4[hh, a] += pl[hh, a] * T.cast(vv[jb * ACC + a], "float32")
        for hh in T.unroll(group):
            if fused:  # last >= 0 in every active block; < B only in the one holding pos
                # one explicit FMA: written as a choice between a product and zero, then an add,
                # nvcc contracted it in one build and not in another, so builds that differ only
                # in where their loads sit summed other bits
                o4[hh, 0] = T.fma(p_s[hh, T.min(last, B - 1)], T.if_then_else(last < B, vcur, 0.0), o4[hh, 0])
            part[g * group + hh, bx, tx] = (o4[hh, 0] + o4[hh, 1]) + (o4[hh, 2] + o4[hh, 3])

    return values
