"""The attention launch's dims and kernel-name suffix from the plan's options: which build of
tfdash.kernels.attention each layer runs. Another build is another kernel, so every option that
changes the generated code also tags the name."""

from tfdash.errors import TfdashError

ATTN_BLOCK = 64  # KV positions per split of the split-KV attention
# q heads per kv head at most for the early merge: it holds group x chunk partials a thread in
# registers (a group of 4 spilled the kernel's registers, and merged late it ran faster)
MERGE_EARLY_GROUP = 2
# q heads per kv head at most for a 32-partial merge chunk (group x 32 in registers; 4 x 32 spills)
WIDE_MERGE_GROUP, WIDE_MERGE_CHUNK = 2, 32
# o_proj weights at most this large: attention's blocks let o_proj launch after their values, not
# at their grid dependency (its weights stream in about a microsecond, inside the merge's latency,
# and attention's own loads meet less traffic); larger, o_proj launches at attention's dependency
LATE_TRIGGER_MAX_O_BYTES = 4 << 20


def attention_dims(n_heads: int, n_kv_heads: int, head_dim: int, capacity: int, *, fused_rope: bool,
                   attn_kv_early: bool, attn_split_cap: int | None, attn_min_blocks: int | None,
                   attn_block: int | None, attn_merge_early: bool, attn_merge_early_group: int | None,
                   early_norm: bool, attn_merge_acq_rel: bool, attn_merge_chunk: int | None,
                   attn_trigger_at: str | None, o_weight_bytes: int, attn_ilp: bool = True,
                   attn_rounds_carry: bool = True) -> tuple[dict, str]:
    """(dims, suffix) of the attention launch for build_plan's options of the same names;
    o_weight_bytes, o_proj's weight (attn_trigger_at None: the shape's own trigger point)."""
    from tfdash.kernels.splitkv import MERGE_CHUNK, SPLIT_CAP, grid_splits

    group = n_heads // n_kv_heads
    block = ATTN_BLOCK if attn_block is None else attn_block
    if block < 1:
        raise TfdashError(f"attn_block={block} must be positive")
    dims = dict(n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, capacity=capacity, block=block,
                splits=-(-capacity // block))
    sfx = "" if block == ATTN_BLOCK else f"_b{block}"
    if attn_split_cap is not None:
        if attn_split_cap < 1:
            raise TfdashError(f"attn_split_cap={attn_split_cap} must be at least 1")
        dims["split_cap"] = attn_split_cap
        sfx += f"_sc{attn_split_cap}"
    early_group = MERGE_EARLY_GROUP if attn_merge_early_group is None else attn_merge_early_group
    if attn_merge_early and group <= early_group:
        dims["merge_early"] = True
        sfx += "_me"
    if attn_merge_acq_rel:
        dims["merge_acq_rel"] = True
    else:
        sfx += "_fe"  # the fenced baseline
    if fused_rope and attn_kv_early:  # its norm loads go beside the K/V prefetch
        if early_norm:
            dims["early_norm"] = True
        else:
            sfx += "_ln"
    wide = WIDE_MERGE_CHUNK if group <= WIDE_MERGE_GROUP else MERGE_CHUNK
    chunk = wide if attn_merge_chunk is None else attn_merge_chunk
    if not 1 <= chunk <= 64:
        raise TfdashError(f"attn_merge_chunk={chunk} must be 1 to 64 partials")
    if chunk != MERGE_CHUNK:
        dims["merge_chunk"] = chunk
    if chunk != wide:
        sfx += f"_mc{chunk}"  # another chunk than the shape's own
    from tfdash.kernels.attention import TRIGGER_POINTS

    if attn_trigger_at is None:
        attn_trigger_at = "values" if o_weight_bytes <= LATE_TRIGGER_MAX_O_BYTES else "dependency"
    if attn_trigger_at not in TRIGGER_POINTS:
        raise TfdashError(f"attn_trigger_at={attn_trigger_at!r} must be one of {', '.join(TRIGGER_POINTS)}")
    if attn_trigger_at != TRIGGER_POINTS[0]:
        dims["trigger_at"] = attn_trigger_at
        sfx += "_tv"  # o_proj launched after the blocks' values
    if attn_ilp:  # the score and value phases as independent chains (tfdash.kernels.attn_dots)
        dims["ilp"] = True
    else:
        sfx += "_ch"  # one chain each (the baseline)
    if fused_rope and grid_splits(dims["splits"], dims.get("split_cap", SPLIT_CAP))[1] > 1:
        if attn_rounds_carry:  # in rounds, q roped once and the next round's K/V loaded early
            dims["rounds_carry"] = True
        else:
            sfx += "_er"  # each round ropes q and loads its K/V at its start (the baseline)
    if attn_min_blocks is not None:
        if not 1 <= attn_min_blocks <= 16:
            raise TfdashError(f"attn_min_blocks={attn_min_blocks} must be 1 to 16 blocks per SM")
        dims["min_blocks"] = attn_min_blocks
        sfx += f"_mb{attn_min_blocks}"  # other launch bounds are another kernel
    return dims, sfx
