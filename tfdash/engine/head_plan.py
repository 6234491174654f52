"""The end of the step plan: the lm_head and the argmax that feeds the next step, in one of two forms.

    the GEMV                     lm_head: logits = W @ rmsnorm(x) (f32), a (max, index) per block
                                 (build_plan's default, and the torch runtimes')
    lm_head_q8=True              lm_head: every row's logit bounded through an int8 copy of W
                                 (the tilelang engine's, where its kernels take the shape: plan_for)
                                 lm_head_pick: the exact logits of the rows the bounds leave, and
                                 their (max, index) per block (tfdash.kernels.lm_head_q8,
                                 tfdash.kernels.lm_head_pick)
    then                         argmax: next = argmax over the partials; feed prompt or next; pos += 1

The int8 copy and its per-row scales and error norms are weights derived from W when a runtime
is built (`derived_weights`), not read from a checkpoint.
"""

from __future__ import annotations

# the weights a runtime makes from another of its own: name -> (what makes them, which of its results)
DERIVED = {"head_q8": ("quantize_rows", 0), "head_q8_meta": ("quantize_rows", 1)}


def head_launches(cfg, dtype, capacity, head, buf, launch, gemv_kernel, ring, lm_head_q8: bool,
                  stamps: bool = False) -> dict:
    """Adds the lm_head's buffers and launches and the argmax's through build_plan's `buf`, `launch`
    and `gemv_kernel`; returns what plan.meta records of them (the derived weights' source). The
    argmax's partials follow the grid of the launch before it: the pick's or the GEMV's. `ring`:
    the token ring's slots argmax stores into (0: none); `stamps`: its clock stamps too ("ring_ns")."""
    V, H, C = cfg.vocab_size, cfg.hidden_size, capacity
    if lm_head_q8:
        from tfdash.kernels.lm_head_pick import grid_size as pick_grid
        from tfdash.kernels.lm_head_q8 import META
        from tfdash.kernels.lm_head_q8 import grid_size as q8_grid

        g1 = q8_grid(V, H)
        buf("head_q8", (V, H // 4), "int32", "weight")  # four int8 columns a word
        buf("head_q8_meta", (V, META), "float32", "weight")  # scale, |w - s q|, |s q|
        buf("head_h", (H,), dtype, "activation")  # rmsnorm(x), for the exact logits
        buf("head_ub", (V,), "float32", "activation")  # every row's upper bound
        buf("head_lb", (g1,), "float32", "scratch")  # each block's best lower bound
        dims = dict(N=V, K=H, eps=cfg.rms_norm_eps)
        launch("lm_head", None, "lm_head_q8", "lm_head_q8", dims, x="x", norm_w="final_norm", wq="head_q8",
               meta="head_q8_meta", h_out="head_h", ub="head_ub", lb="head_lb")
        pick = dict(N=V, K=H, lb_blocks=g1)
        blocks = pick_grid(pick)
        buf("argmax_part", (blocks, 2), "float32", "scratch")
        launch("lm_head_pick", None, "lm_head_pick", "lm_head_pick", pick,
               w=head, h="head_h", ub="head_ub", lb="head_lb", logits="logits", amax="argmax_part")
        derived = {"head_q8": head, "head_q8_meta": head}
    else:
        from tfdash.kernels.gemv import grid_size

        head_kernel, head_dims = gemv_kernel("lm_head", "gemv_lm_head", V, H, "rmsnorm", "store", "float32",
                                             extra={"argmax": True})
        blocks = grid_size(V, H, head_dims["blocks_per_sm"], head_dims["rows"])
        buf("argmax_part", (blocks, 2), "float32", "scratch")  # per-block (max, index) of the logits
        launch("lm_head", None, "gemv", head_kernel, head_dims,
               x="x", norm_w="final_norm", w=head, out="logits", amax="argmax_part")
        derived = {}
    ring_dims = ({"ring": ring} if ring else {}) | ({"stamps": True} if ring and stamps else {})
    launch("argmax", None, "argmax", "argmax_feed" + ("_ring" if ring else "") + ("_ns" if ring and stamps else ""),
           dict(V=V, capacity=C, blocks=blocks, **ring_dims), logits="logits", amax="argmax_part", prompt="prompt",
           prompt_len="prompt_len", pos="pos", tok="tok", out_tokens="out_tokens",
           **({"ring": "ring"} if ring else {}), **({"ring_ns": "ring_ns"} if ring and stamps else {}))
    return derived


def derived_weights(derived: dict, bufs: dict, names) -> dict:
    """The derived weights `names`, made from the buffers they derive from (`derived`: the plan's)."""
    out, made = {}, {}
    for name in names:
        how, part = DERIVED[name]
        src = derived[name]
        if (how, src) not in made:
            from tfdash.kernels.lm_head_q8 import quantize_rows

            made[how, src] = quantize_rows(bufs[src])
        out[name] = made[how, src][part]
    return out


def derived_bytes(plan) -> int:
    """Device bytes of the weights a runtime of `plan` makes from its own (0 for the GEMV head):
    what it holds beyond the checkpoint's weights, for the check that a run fits."""
    return sum(plan.buffers[name].nbytes for name in plan.meta.get("derived", {}))


def q8_unsupported(plan) -> str | None:
    """Why the tilelang kernels of the int8 head cannot run `plan`'s shape, or None (and None for
    the GEMV head)."""
    from tfdash.kernels.base import family

    for launch in plan.launches:
        fam = family(launch.family)
        if launch.family in ("lm_head_q8", "lm_head_pick") and fam.supported:
            why = fam.supported(launch.dims)
            if why:
                return why
    return None
