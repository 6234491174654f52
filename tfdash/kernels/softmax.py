"""The attention kernel's softmax over one split's scores, as a tilelang macro.

The score phase leaves the split's scaled scores in shared memory, sc_s (group, block), -inf past
pos. The softmax writes, per q head, the split's max M and sum l = sum_j exp(s_j - M) to ml, and
leaves p_j = exp(s_j - M) in p_s for the value phase: one score a thread, warp max and sum
within a head, combined across the head's warps through shared memory (four block barriers).

A warp-local version (each warp's max and sum by shuffles in registers, one barrier, the warps'
(max, sum) combined after it) spilled registers where this one does not, and ran slower.
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
