"""Split-KV decode attention with its merge, GQA; with `fused_rope` (the plan's default) it also
does the q/k RMSNorm, RoPE and KV-cache append of the rope family, saving a launch per layer.

For query head h (kv head g = h // group), over positions j = 0..pos (the step's own k/v appended
at pos first):

    s_j = (q_h . k_j) * 1/sqrt(D)          in f32, the scale after the dot (as HF does)
    p   = softmax(s)                        in f32, then rounded to the model dtype (as HF does)
    out_h = sum_j p_j v_j                   accumulated in f32, rounded to the model dtype

The tilelang kernel splits the positions into blocks of `block`; each (kv head, split) program
writes f32 partials, and the last to arrive for a kv head merges them (`splitkv`): no launch.
"""

import math

import torch

from tfdash.kernels.attn_dots import ACC, key_macro, scores_macro, values_macro
from tfdash.kernels.base import DTYPE_BYTES, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.probe import PROBE_PHASES, PROBE_PRELUDE, stamp_macro
from tfdash.kernels.rope import fused_passes, fused_rope_macro, rope_weights_macro
from tfdash.kernels.softmax import block_softmax_macro
from tfdash.kernels.splitkv import MERGE_CHUNK, SPLIT_CAP, grid_splits, lanes, merge_macro, splits_used


def torch_attention(dims, bufs):
    if dims.get("fused_rope"):
        from tfdash.kernels.rope import torch_qk_norm_rope

        q = torch.empty(dims["n_heads"] * dims["head_dim"], dtype=bufs["qkv"].dtype, device=bufs["qkv"].device)
        torch_qk_norm_rope(dims, {**bufs, "q": q})
        bufs = {**bufs, "q": q}
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    group = nH // nKV
    q, kc, vc, pos = bufs["q"], bufs["k_cache"], bufs["v_cache"], bufs["pos"]
    if kc.is_cuda:
        # Capturable: score every slot of the cache, mask the ones past pos (gpt-fast style).
        n = kc.shape[1]
        keys, vals = kc, vc
        mask = torch.arange(n, device=kc.device) > pos
    else:
        n = int(pos.item()) + 1
        keys, vals = kc[:, :n], vc[:, :n]
        mask = None
    qh = q.view(nKV, group, D).float()
    s = torch.einsum("gqd,gnd->gqn", qh, keys.float()) * (1.0 / math.sqrt(D))
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, dim=-1).to(q.dtype)
    o = torch.einsum("gqn,gnd->gqd", p.float(), vals.float())
    bufs["out"].copy_(o.reshape(-1))


HEAD_DIMS = (64, 128)  # the tilelang kernel's thread owns one dim: a block is head_dim threads
TRIGGER_POINTS = ("dependency", "values")  # where a block may let o_proj launch (dims["trigger_at"])
MAX_GROUP = 8  # q heads per kv head it holds in registers (Qwen3 dense: 2, 4, 5, 8)


def supported(dims) -> str | None:
    """Why the tilelang kernel cannot run these dims, or None when it can."""
    D, nH, nKV, B = dims["head_dim"], dims["n_heads"], dims["n_kv_heads"], dims["block"]
    if D not in HEAD_DIMS:
        return f"head_dim={D} (its attention supports head_dim {' and '.join(map(str, HEAD_DIMS))})"
    if nH % nKV or not 1 <= nH // nKV <= MAX_GROUP:
        return (f"{nH} query heads over {nKV} kv heads (its attention supports whole GQA groups "
                f"of 1 to {MAX_GROUP} query heads per kv head)")
    if B % 32 or D % B:
        return f"attention block {B} (must be a multiple of 32 that divides head_dim={D})"
    return None


def smem_bytes(dims) -> int:
    """Shared memory of the tilelang kernel: scores and probabilities (f32, group x block), the
    rotated q of the group and this step's k and v (model dtype), the merge weights (f32, group x
    splits rounded to 32) and a few reduction slots."""
    nH, nKV, D, B, S = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["block"], dims["splits"]
    es = DTYPE_BYTES[dims["dtype"]]
    group = nH // nKV
    passes = max(-(-(group * B) // D), fused_passes(group, D))
    return 2 * group * B * 4 + (group + 2) * D * es + group * (-(-S // 32) * 32) * 4 + (passes * D // 32 + 1) * 4


def cost(dims, ctx_len=0):
    """Unfused: q in, attention over ctx_len + 1 cached positions. Fused: the rope family's cost,
    but q and this step's k and v stay on chip: the cache reads only the ctx_len earlier
    positions (its growth with ctx_len is the same)."""
    nH, nKV, D = dims["n_heads"], dims["n_kv_heads"], dims["head_dim"]
    es = DTYPE_BYTES[dims["dtype"]]
    n = ctx_len + 1  # positions attended: the cache before this step, and this step's own
    s = splits_used(dims, ctx_len)
    flops = {"f32": 2 * nH * n * D * 2 + 4 * nH * n}  # q.k and p.v, then max/sub/sum/scale
    special = {"exp": nH * n}
    scratch = 2 * nH * s * (D + 2) * 4  # f32 partials written, then read by the merge
    if not dims.get("fused_rope"):
        return make_cost(flops, special, [
            Operand("q", "activation", nH * D * es, 0),
            Operand("k_cache", "cache", n * nKV * D * es, 0),
            Operand("v_cache", "cache", n * nKV * D * es, 0),
            Operand("pos", "activation", 4, 0),
            Operand("out", "activation", 0, nH * D * es),
        ], smem=smem_bytes(dims), scratch=scratch)
    from tfdash.kernels.rope import cost as rope_cost

    r = rope_cost(dims, ctx_len)
    ops = [o for o in r.operands if o.role not in ("q", "k_cache", "v_cache")]
    ops += [
        Operand("k_cache", "cache", ctx_len * nKV * D * es, nKV * D * es),
        Operand("v_cache", "cache", ctx_len * nKV * D * es, nKV * D * es),
        Operand("out", "activation", 0, nH * D * es),
    ]
    flops["f32"] += r.flops.get("f32", 0)
    special = {**special, **r.special}
    return make_cost(flops, special, ops, smem=smem_bytes(dims), scratch=scratch)


def tilelang_attention(dims):
    """Grid (programs, kv heads), at most split_cap programs (default SPLIT_CAP), each taking the
    cache's blocks px, px + programs, ... in rounds (splitkv.grid_splits); block = head_dim
    threads, any GQA group of 1 to MAX_GROUP q heads (the phases that hand each thread one
    (head, element) loop over heads in passes). Every phase below runs once per active block;
    with `rounds_carry` (fused, in rounds) the rope runs once a program, in its first round, and a
    round's K/V loads are issued after the values of the round before it, under its merge.

    rope    (fused_rope) every block norms and rotates its group's q heads from qkv into shared
            memory; the block holding position pos (with rounds_carry: the program one of whose
            rounds holds it) also norms and rotates this step's k in the same passes, and appends
            k and v to the cache, keeping both on chip for its own use
            (tfdash.kernels.rope.fused_rope_macro)
    scores  lanes split a key row 8 ways (16 dims, two 16-byte loads each) and 4 positions per
            warp instruction; an xor-shuffle over the 8 lanes finishes each dot product
    values  each thread owns one dim d and prefetches v[j, d] for the block's B positions before
            anything else (and its key rows right after), so K and V stream while q and this
            step's k are normed and rotated. Fused under PDL this happens before the grid
            dependency: pos and the earlier cache rows were written by earlier steps, so the
            stream overlaps the qkv GEMV's tail (`kv_early`, default on)
    softmax one score per thread: warp max/sum within a head, combined across the head's warps
            (tfdash.kernels.softmax)
    merge   partials to global scratch; the last split to arrive merges (tfdash.kernels.splitkv),
            loading `merge_chunk` partials at once (splitkv.MERGE_CHUNK unless the plan says)
    """
    import tilelang.language as T

    pdl = dims.get("pdl", True)
    # K/V cache prefetch before the grid dependency: only fused (unfused, the kernel before this
    # one appends this step's k and v) and only under PDL (without it there is nothing to overlap)
    early = pdl and bool(dims.get("fused_rope")) and dims.get("kv_early", True)

    nH, nKV, D, C, B, dt, S = (dims["n_heads"], dims["n_kv_heads"], dims["head_dim"], dims["capacity"],
                               dims["block"], dims["dtype"], dims["splits"])
    SG, R = grid_splits(S, dims.get("split_cap", SPLIT_CAP))
    # `rounds_carry` (fused, with rounds): a program norms and rotates q once, in its first round (and
    # this step's k and v where one of its rounds holds pos: k_s and v_s keep them), and issues its
    # next round's K/V loads once its values are done, so they stream under its arrival and merge
    carry = R > 1 and bool(dims.get("fused_rope")) and bool(dims.get("rounds_carry"))
    fused, eps, min_blocks = bool(dims.get("fused_rope")), float(dims.get("eps", 1e-6)), int(dims.get("min_blocks", 0))
    group = nH // nKV
    threads = D  # thread tx owns dim tx in the value phase and the merge
    warps = threads // 32
    if supported(dims):  # the plan's check (engine.compile.unsupported) says it in one line first
        raise ValueError(f"the tilelang attention cannot run {supported(dims)}")
    DC = D // 8  # dims per lane in the score phase
    iters = B // (warps * 4)  # score iterations: 4 positions per warp per iteration
    SP = -(-(group * B) // threads)  # block softmax passes: a pass holds threads // B heads' scores
    half, QKV = D // 2, (nH + 2 * nKV) * D
    RP = fused_passes(group, D)  # rope passes: the group's q heads and the kv head's k, two a pass
    scale = 1.0 / math.sqrt(D)
    sper, S32 = lanes(S)  # splits per lane in the merge, and the splits in whole warps
    MC = int(dims.get("merge_chunk", MERGE_CHUNK))  # partials the merge loads at once
    # where a block lets the next kernel (o_proj) launch: at its grid dependency, or once its values
    # are done, so o_proj's (and gate_up's) weight prefetch meets this kernel's merge rather than
    # its K/V loads; a block past the context exits, which counts
    trigger_at = dims.get("trigger_at", "dependency")
    assert trigger_at in TRIGGER_POINTS, trigger_at
    softmax = block_softmax_macro(T, group, threads, warps, B, SP)
    probed = bool(dims.get("probe"))  # a diagnostic build that stamps its phases (PROBE_PHASES)
    stamp = stamp_macro(T)
    merge = merge_macro(T, group, warps, S, D, dt, early=bool(dims.get("merge_early")),
                        acq_rel=bool(dims.get("merge_acq_rel")), chunk=MC, stamp=stamp if probed else None)
    # the rope phase's norm weights and cos/sin read before the grid dependency (fused, under PDL,
    # with the KV prefetch): the phase after it then waits only on qkv, just written, in L2
    early_norm = early and bool(dims.get("early_norm"))
    rope = fused_rope_macro(T, group, nH, nKV, D, dt, eps, preloaded=early_norm)
    load_w = rope_weights_macro(T, D)
    RED = max(SP, RP) * warps  # reduction slots: one per warp per pass
    ilp = bool(dims.get("ilp"))  # the score and value phases as independent chains (attn_dots)
    scores_ilp, values_ilp = scores_macro(T, group, iters, DC, B, fused, scale), values_macro(T, group, B, fused)
    key = key_macro(T, DC, fused)
    assert fused or not probed, "the phase probe is built for the fused attention"
    launch_kw = dict(prelude=PROBE_PRELUDE) if probed else {}

    @T.macro
    def load_kv(k_cache, v_cache, kall, vv, g, bx, n, tx, warp, pi, dc):
        # V prefetch from the cache (thread tx owns dim tx); this step's own v comes later
        for j in T.unroll(B):
            if bx * B + j < n - (1 if fused else 0):
                vv[j] = v_cache[g, bx * B + j, tx]
            else:
                vv[j] = T.cast(0, dt)
        # K prefetch: every key row this thread scores, before any barrier, so the loads overlap
        # the rope phase or (a later round's, carried) the merge (this step's own key is swapped in later)
        for it in T.unroll(iters):
            for c in T.vectorized(DC):
                kall[it, c] = k_cache[g, T.min(bx * B + warp * (iters * 4) + it * 4 + pi, C - 1), dc * DC + c]

    @T.macro
    def body(qkv, q_norm, k_norm, cos, sin, q, k_cache, v_cache, pos, out, part, ml, sem, probe=None):
        with T.Kernel(SG, nKV, threads=threads, **launch_kw) as (px, g):
            if min_blocks:  # __launch_bounds__(threads, min_blocks): a register budget a thread
                T.annotate_min_blocks_per_sm(min_blocks)
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            pi = lane // 8
            dc = lane % 8
            qv = T.alloc_local((group, DC), dt)
            kv = T.alloc_local((DC,), dt)
            kall = T.alloc_local((iters, DC), dt)
            vv = T.alloc_local((B,), dt)
            dot = T.alloc_local((group,), "float32")
            o = T.alloc_local((group,), "float32")
            sc_s = T.alloc_shared((group, B), "float32")
            p_s = T.alloc_shared((group, B), "float32")
            red_s = T.alloc_shared((RED,), "float32")
            flag_s = T.alloc_shared((1,), "int32")
            q_s = T.alloc_shared((group, D), dt)
            k_s = T.alloc_shared((D,), dt)
            v_s = T.alloc_shared((D,), dt)
            svs = T.alloc_local((SP,), "float32")
            vcur = T.alloc_var("float32")
            mloc = T.alloc_local((sper,), "float32")
            lloc = T.alloc_local((sper,), "float32")
            pv = T.alloc_local((MC,), "float32")
            w_s = T.alloc_shared((group, S32), "float32")
            n_s = T.alloc_var("int32")
            w = T.alloc_local((6,), dt)  # the rope phase's norm weights and cos/sin (rope_weights_macro)
            if ilp:
                dots, acc = T.alloc_local((iters, group), "float32"), T.alloc_local((ACC,), "float32")
                o4, pl = T.alloc_local((group, ACC), "float32"), T.alloc_local((group, ACC), "float32")
            if probed:
                stamp(probe, px, g, tx, "start")
            if early:
                # pos was written by the previous step's argmax_feed (a graph launch before this
                # one), so it and the cache rows before it may be read before the grid dependency:
                # the K/V stream then overlaps the qkv GEMV's tail. Read through L2 (__ldcg).
                n_s = T.call_extern("int32", "__ldcg", T.address_of(pos[0])) + 1
            else:
                if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                    T.pdl_sync()
                    if trigger_at == "dependency":
                        T.pdl_trigger()
                n_s = pos[0] + 1
            n = n_s
            n_active = (n + B - 1) // B
            if early_norm:
                load_w(q_norm, k_norm, cos, sin, w, n, tx)
            # blocks px, px + SG, ... (grid_splits): one round up to SPLIT_CAP blocks
            for r in T.serial(R):
                bx = px + r * SG
                last = n - 1 - bx * B  # this step's own position within the block (< B in the last block)
                if bx < n_active and (r == 0 if carry else True):  # carry: later rounds' loads come earlier
                    load_kv(k_cache, v_cache, kall, vv, g, bx, n, tx, warp, pi, dc)
                if probed:
                    stamp(probe, px, g, tx, "issued")
                if early:
                    T.pdl_sync()
                    if trigger_at == "dependency":
                        T.pdl_trigger()
                if probed:
                    stamp(probe, px, g, tx, "dependency")
                if bx < n_active:
                    if fused:  # q/k norm, RoPE and KV append (tfdash.kernels.rope.fused_rope_macro); carry: once
                        if r == 0 if carry else True:
                            rope(qkv, q_norm, k_norm, cos, sin, k_cache, v_cache, q_s, k_s, v_s, red_s, w, g, n, tx,
                                 lane, warp, (n_active - 1) % SG == px if carry else bx == n_active - 1)
                        for hh2 in T.unroll(group):
                            for c in T.vectorized(DC):
                                qv[hh2, c] = q_s[hh2, dc * DC + c]
                    else:
                        for hh2 in T.unroll(group):
                            for c in T.vectorized(DC):
                                qv[hh2, c] = q[(g * group + hh2) * D + dc * DC + c]
                    if probed:
                        stamp(probe, px, g, tx, "rope")
                    if ilp:
                        scores_ilp(qv, kall, k_s, kv, sc_s, dots, acc, bx, n, last, warp, pi, dc)
                    # scores
                    for it in T.unroll(0 if ilp else iters):
                        jl = warp * (iters * 4) + it * 4 + pi
                        key(kall, k_s, kv, it, jl, last, dc)
                        for hh in T.unroll(group):
                            dot[hh] = 0.0
                            for c in T.unroll(DC):
                                dot[hh] += T.cast(qv[hh, c], "float32") * T.cast(kv[c], "float32")
                            dot[hh] += T.shfl_xor(dot[hh], 4)
                            dot[hh] += T.shfl_xor(dot[hh], 2)
                            dot[hh] += T.shfl_xor(dot[hh], 1)
                            if dc == 0:
                                if bx * B + jl < n:
                                    sc_s[hh, jl] = dot[hh] * scale
                                else:
                                    sc_s[hh, jl] = -T.infinity("float32")
                    if probed:
                        stamp(probe, px, g, tx, "scores")
                    softmax(sc_s, p_s, red_s, svs, ml, g, bx, tx, lane, warp)  # tfdash.kernels.softmax
                    if probed:
                        stamp(probe, px, g, tx, "softmax")
                    # p @ V for this block, dim tx, every head of the group
                    if fused:
                        vcur = T.cast(v_s[tx], "float32")
                    if ilp:
                        values_ilp(p_s, vv, vcur, part, o4, pl, g, bx, last, tx)
                    for hh in T.unroll(0 if ilp else group):
                        o[hh] = 0.0
                        for j in T.unroll(B):
                            if fused:
                                o[hh] += p_s[hh, j] * T.if_then_else(j == last, vcur, T.cast(vv[j], "float32"))
                            else:
                                o[hh] += p_s[hh, j] * T.cast(vv[j], "float32")
                        part[g * group + hh, bx, tx] = o[hh]
                    if probed:
                        stamp(probe, px, g, tx, "values")
                    if pdl and trigger_at == "values":
                        T.pdl_trigger()
                    if carry and bx + SG < n_active:  # the next round's K/V stream under this one's merge
                        load_kv(k_cache, v_cache, kall, vv, g, bx + SG, n, tx, warp, pi, dc)
                    # the last split of this kv head to arrive merges (tfdash.kernels.splitkv)
                    merge(ml, part, out, sem, flag_s, w_s, mloc, lloc, pv, g, tx, lane, warp, n_active, probe, px)
                    if probed:
                        stamp(probe, px, g, tx, "end")
                        if tx == 0:
                            probe[g, px, len(PROBE_PHASES) - 1] = T.cast(flag_s[0], "int64")

    if probed:

        @T.prim_func
        def attn_decode(
            qkv: T.Tensor((QKV,), dt), q_norm: T.Tensor((D,), dt), k_norm: T.Tensor((D,), dt),
            cos: T.Tensor((C, half), dt), sin: T.Tensor((C, half), dt),
            k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt), pos: T.Tensor((1,), "int32"),
            out: T.Tensor((nH * D,), dt), part: T.Tensor((nH, S, D), "float32"),
            ml: T.Tensor((nH, S, 2), "float32"), sem: T.Tensor((nKV,), "int32"),
            probe: T.Tensor((nKV, SG, len(PROBE_PHASES)), "int64"),
        ):
            body(qkv, q_norm, k_norm, cos, sin, None, k_cache, v_cache, pos, out, part, ml, sem, probe)
    elif fused:

        @T.prim_func
        def attn_decode(
            qkv: T.Tensor((QKV,), dt), q_norm: T.Tensor((D,), dt), k_norm: T.Tensor((D,), dt),
            cos: T.Tensor((C, half), dt), sin: T.Tensor((C, half), dt),
            k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt), pos: T.Tensor((1,), "int32"),
            out: T.Tensor((nH * D,), dt), part: T.Tensor((nH, S, D), "float32"),
            ml: T.Tensor((nH, S, 2), "float32"), sem: T.Tensor((nKV,), "int32"),
        ):
            body(qkv, q_norm, k_norm, cos, sin, None, k_cache, v_cache, pos, out, part, ml, sem)
    else:

        @T.prim_func
        def attn_decode(
            q: T.Tensor((nH * D,), dt), k_cache: T.Tensor((nKV, C, D), dt), v_cache: T.Tensor((nKV, C, D), dt),
            pos: T.Tensor((1,), "int32"), out: T.Tensor((nH * D,), dt), part: T.Tensor((nH, S, D), "float32"),
            ml: T.Tensor((nH, S, 2), "float32"), sem: T.Tensor((nKV,), "int32"),
        ):
            body(None, None, None, None, None, q, k_cache, v_cache, pos, out, part, ml, sem)

    return attn_decode


def geometry(dims, ctx_len: int = 0) -> Geometry:
    """The cache blocks a step at ctx_len attends over, per kv head, over its programs: the rounds
    with work in them (the kernel's loop also runs the skipped rounds over the blocks past ctx_len)."""
    S = splits_used(dims, ctx_len)
    programs, _ = grid_splits(dims["splits"], dims.get("split_cap", SPLIT_CAP))
    return Geometry((programs, dims["n_kv_heads"]), dims["head_dim"], None, S, "cache block", programs, "program",
                    "kv head")


FAMILY = register(Family(
    name="attention",
    roles=("qkv", "q_norm", "k_norm", "cos", "sin", "q", "k_cache", "v_cache", "pos", "out", "part", "ml", "sem"),
    cost=cost, torch=torch_attention, tilelang=tilelang_attention, supported=supported, geometry=geometry,
    describe="split-KV GQA decode attention, merged in-kernel by the last split to arrive "
             "(fused_rope: with the q/k norm, RoPE and KV append before it)",
))
