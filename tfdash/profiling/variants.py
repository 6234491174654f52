"""The plan variants (`build_plan` options) that `tfdash bench` runs as tilelang peers of the
default graph and the live A/B (`a`, `--ab`) offers, by the names both show. A variant that loses
stays here until it is decided, then goes."""

PLAN_VARIANTS = {
    "tilelang-unfused": {"fused_rope": False},
    "tilelang-gu1": {"gemv_blocks_per_sm": {"gate_up": 1}},
    "tilelang-latekv": {"attn_kv_early": False},
    "tilelang-lateres": {"early_residual": False},
    "tilelang-smemdown": {"down_smem_prefetch": True},
    "tilelang-sc16": {"attn_split_cap": 16},
    "tilelang-sc24": {"attn_split_cap": 24},
    "tilelang-sc40": {"attn_split_cap": 40},
    "tilelang-scall": {"attn_split_cap": 1 << 20},
    # register budgets (__launch_bounds__' blocks per SM) under which each kernel's blocks fit beside
    # the one before's on an SM, so PDL can start them while it drains: qkv, attention and gate_up
    # at 3 (80, 168 and 80 registers a thread); o_proj and down fit as they are
    "tilelang-mb3": {"attn_min_blocks": 3,
                     "gemv_overrides": {"qkv_proj": {"min_blocks": 3}, "gate_up": {"min_blocks": 3}}},
    "tilelang-qkvmb3": {"gemv_overrides": {"qkv_proj": {"min_blocks": 3}}},
    "tilelang-attnmb3": {"attn_min_blocks": 3},
    # o_proj lets gate_up launch at its start: gate_up's blocks stream weights during attention
    "tilelang-otrig": {"gemv_overrides": {"o_proj": {"trigger_first": 1}}},
    # ... with register budgets under which attention, o_proj and gate_up blocks share an SM
    "tilelang-otrigmb3": {"attn_min_blocks": 3, "gemv_overrides": {
        "qkv_proj": {"min_blocks": 3}, "o_proj": {"min_blocks": 3, "trigger_first": 1}, "gate_up": {"min_blocks": 3}}},
    # ... and down lets the next layer's qkv launch at its start
    "tilelang-alltrig": {"attn_min_blocks": 3, "gemv_overrides": {
        "qkv_proj": {"min_blocks": 3}, "o_proj": {"min_blocks": 3, "trigger_first": 1}, "gate_up": {"min_blocks": 3},
        "down": {"trigger_first": 1}}},
    "tilelang-b32": {"attn_block": 32},  # 32 positions a split: half the prefetch registers, twice the splits
    "tilelang-b32sc64": {"attn_block": 32, "attn_split_cap": 64},  # ... on as many programs: one round to 2048
}
