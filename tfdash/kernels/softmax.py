"""The attention kernel's softmax over one split's scores, two ways, as tilelang macros.

A split is `block` positions; the score phase leaves, for q head hh of the group and position
jl = warp * W + it * 4 + pi (W = iters * 4 positions a warp, pi = lane // 8), the scaled score
in the 8 lanes of lane group pi (-inf past pos). Both write, per head, the split's max M and sum
l = sum_j exp(s_j - M) to ml, and leave p_j in p_s for the value phase; the value phase weighs
position j by p_s[hh, j] * f[hh, j // W].

block  the scores go to shared memory (sc_s); then one score a thread, warp max and sum within a
       head, combined across the head's warps: four block barriers. f is 1.
warp   each warp keeps its scores in registers: its max and sum are shuffles among its own lanes,
       it writes exp(s_j - m_w) and (m_w, l_w) for its W positions, and after one barrier every
       thread reads the warps' maxima: M = max m_w, f[hh, w] = exp(m_w - M), l = sum f l_w.
"""


def block_softmax_macro(T, group: int, threads: int, warps: int, B: int, SP: int):
    """The block-wide softmax: sc_s (group, B) in, p_s out, thread tx % B of pass sp holding one
    score; red_s has a slot per warp per pass."""
    wph = B // 32  # warps per head

    @T.macro
    def softmax(sc_s, p_s, red_s, svs, ml, g, bx, tx, lane, warp):
        m = T.alloc_var("float32")
        lsum = T.alloc_var("float32")
        T.sync_threads()
        # threads // B heads a pass: in pass sp thread tx holds score (head (sp * threads + tx) // B,
        # position tx % B); a warp lies in one head
        for sp in T.unroll(SP):
            if (sp * threads + tx) // B < group:
                svs[sp] = sc_s[(sp * threads + tx) // B, tx % B]
            else:
                svs[sp] = -T.infinity("float32")
            m = T.warp_reduce_max(svs[sp])
            if lane == 0:
                red_s[sp * warps + warp] = m
        T.sync_threads()
        for sp in T.unroll(SP):
            m = -T.infinity("float32")
            for w in T.unroll(wph):
                m = T.max(m, red_s[sp * warps + (tx // B) * wph + w])
            if (sp * threads + tx) // B < group:
                svs[sp] = T.exp(svs[sp] - m)
                p_s[(sp * threads + tx) // B, tx % B] = svs[sp]
                if tx % B == 0:
                    ml[g * group + (sp * threads + tx) // B, bx, 0] = m
            else:
                svs[sp] = 0.0
        T.sync_threads()
        for sp in T.unroll(SP):
            lsum = T.warp_reduce_sum(svs[sp])
            if lane == 0:
                red_s[sp * warps + warp] = lsum
        T.sync_threads()
        if tx % B == 0:
            for sp in T.unroll(SP):
                if (sp * threads + tx) // B < group:
                    lsum = 0.0
                    for w in T.unroll(wph):
                        lsum += red_s[sp * warps + (tx // B) * wph + w]
                    ml[g * group + (sp * threads + tx) // B, bx, 1] = lsum

    return softmax


def rescale_macro(T):
    """f = exp(m_w - M) of warp w's probabilities in head hh; 0 for a warp wholly past pos."""

    @T.macro
    def rescale(wm_s, mb, hh, w):
        return T.if_then_else(wm_s[hh, w, 0] == -T.infinity("float32"), 0.0, T.exp(wm_s[hh, w, 0] - mb[hh]))

    return rescale


def warp_softmax_macro(T, group: int, warps: int, iters: int):
    """The warp-local softmax: sr (group, iters) holds this lane's scores (position
    warp * W + it * 4 + pi), p_s and wm_s (group, warps, 2) are shared; it leaves each head's max
    M in mb (group,), and the value phase takes f[hh, w] from rescale(wm_s, mb, hh, w) as it
    reaches warp w's positions (not held in registers beside the V prefetch)."""
    W = iters * 4  # positions a warp scores
    rescale = rescale_macro(T)

    @T.macro
    def softmax(sr, p_s, wm_s, mb, ml, g, bx, tx, lane, warp, pi, dc):
        mw = T.alloc_var("float32")
        lw = T.alloc_var("float32")
        lb = T.alloc_var("float32")
        for hh in T.unroll(group):
            mw = sr[hh, 0]
            for it in T.unroll(1, iters):
                mw = T.max(mw, sr[hh, it])
            mw = T.max(mw, T.shfl_xor(mw, 8))  # across the 4 lane groups (8 lanes each hold the same)
            mw = T.max(mw, T.shfl_xor(mw, 16))
            lw = 0.0
            for it in T.unroll(iters):  # a warp past pos has mw = -inf: its p are 0, not NaN
                sr[hh, it] = T.if_then_else(sr[hh, it] == -T.infinity("float32"), 0.0, T.exp(sr[hh, it] - mw))
                lw += sr[hh, it]
                if dc == hh % 8:
                    p_s[hh, warp * W + it * 4 + pi] = sr[hh, it]
            lw += T.shfl_xor(lw, 8)
            lw += T.shfl_xor(lw, 16)
            if lane == 0:
                wm_s[hh, warp, 0] = mw
                wm_s[hh, warp, 1] = lw
        T.sync_threads()
        for hh in T.unroll(group):
            mb[hh] = wm_s[hh, 0, 0]  # warp 0 holds the split's first position (< pos + 1): finite
            for w in T.unroll(1, warps):
                mb[hh] = T.max(mb[hh], wm_s[hh, w, 0])
            if tx == hh:
                lb = 0.0
                for w in T.unroll(warps):
                    lb += rescale(wm_s, mb, hh, w) * wm_s[hh, w, 1]
                ml[g * group + hh, bx, 0] = mb[hh]
                ml[g * group + hh, bx, 1] = lb

    return softmax
