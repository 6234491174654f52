"""The build_plan options a snapshot recorded, mapped onto this version's build_plan: options added
since snapshots began recording them take the value that rebuilds the plans recorded before them,
and a removed option is dropped when it has the value this version builds."""

from __future__ import annotations

from typing import Mapping

from tfdash.errors import TfdashError

# kernel-name tags of overridden settings; min_blocks: __launch_bounds__'s blocks per SM (a
# register budget a thread, so the next kernel's blocks fit beside these under PDL)
GEMV_KNOB_TAG = {"rows": "r", "seg": "s", "blocks_per_sm": "b", "min_blocks": "m", "trigger_first": "t"}
# trigger_first (1: the next kernel may launch at this GEMV's start) only where the next kernel
# reads nothing before its grid dependency that the kernel before this one writes: o_proj ->
# gate_up, down -> qkv / lm_head (weights), qkv -> attention (weights, pos and earlier steps' K/V)
TRIGGER_FIRST_OPS = ("o_proj", "down", "qkv_proj")

# RunMeta.plan_options names them; a removed option with any other value than this version builds
# names a plan it cannot build
ADDED_OPTIONS = {"o_proj_trigger_first": False, "attn_merge_early": False, "early_norm": False,
                 "attn_merge_acq_rel": False,
                 "attn_merge_chunk": 16, "attn_merge_early_group": 4,
                 "attn_trigger_at": "dependency", "gate_up_silu": False,
                 "qkv_trigger_first": False, "ring_in_graph": False, "oproj_merges": False}
REMOVED_OPTIONS = {"down_smem_prefetch": False, "attn_k_apart": False, "attn_trigger_first": False,
                   "mlp_fused": False, "o_proj_l2_mb": 0, "o_proj_l2_skip": 0, "attn_cluster": 0,
                   "attn_k_first": False, "attn_warp_softmax": False, "attn_kv_smem": False,
                   "attn_signal": False, "argmax_in_lm_head": False}


def recorded_options(options: Mapping[str, object]) -> dict | None:
    """build_plan's keyword options for options a snapshot recorded, or None when the plan they
    name can no longer be built."""
    out = dict(options)
    if "o_proj_trigger_first" not in out and out.get("fused_rope", True):
        return None  # recorded before attn_k_apart existed: the fused attention normed k apart
    if out.get("fused_rope") is False:
        out.pop("attn_k_apart", None)  # unfused, the rope launch norms k: k_apart changed nothing
    for name, before in ADDED_OPTIONS.items():
        out.setdefault(name, before)
    for name, built in REMOVED_OPTIONS.items():
        if name in out and out.pop(name) != built:
            return None
    return out


def checked_gemv_overrides(gemv_overrides: Mapping[str, Mapping[str, int]] | None) -> dict[str, dict[str, int]]:
    """build_plan's gemv_overrides as a new dict, or a TfdashError naming the settings it cannot build."""
    overrides = {op: dict(v) for op, v in (gemv_overrides or {}).items()}
    low = [f"{op}:{k}={v}" for op, o in overrides.items() for k, v in o.items() if not isinstance(v, int) or v < 1]
    if low:
        raise TfdashError(f"GEMV setting(s) {', '.join(low)} must be whole numbers of at least 1")
    bad = {k for v in overrides.values() for k in v} - set(GEMV_KNOB_TAG)
    if bad:
        raise TfdashError(f"unknown GEMV setting(s) {', '.join(sorted(bad))} (known: {', '.join(GEMV_KNOB_TAG)})")
    early = sorted(op for op, o in overrides.items() if o.get("trigger_first") and op not in TRIGGER_FIRST_OPS)
    if early:
        raise TfdashError(f"trigger_first on {', '.join(early)}: the kernel after it reads activations before its "
                          f"grid dependency (allowed on {', '.join(TRIGGER_FIRST_OPS)})")
    return overrides
