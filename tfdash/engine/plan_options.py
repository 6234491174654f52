"""The build_plan options a snapshot recorded, mapped onto this version's build_plan: options added
since snapshots began recording them take the value that rebuilds the plans recorded before them,
and a removed option is dropped when it has the value this version builds."""

from __future__ import annotations

from typing import Mapping

# RunMeta.plan_options names them; a removed option with any other value than this version builds
# names a plan it cannot build
ADDED_OPTIONS = {"o_proj_trigger_first": False, "attn_merge_early": False, "early_norm": False,
                 "attn_merge_acq_rel": False,
                 "attn_merge_chunk": 16, "attn_merge_early_group": 4,
                 "attn_trigger_at": "dependency", "gate_up_silu": False,
                 "qkv_trigger_first": False, "ring_in_graph": False, "ring_stamps": False,
                 "attn_ilp": False, "attn_rounds_carry": False, "lm_head_q8": False}
REMOVED_OPTIONS = {"down_smem_prefetch": False, "attn_k_apart": False, "attn_trigger_first": False,
                   "mlp_fused": False, "o_proj_l2_mb": 0, "o_proj_l2_skip": 0, "attn_cluster": 0,
                   "attn_k_first": False, "attn_warp_softmax": False, "attn_kv_smem": False,
                   "attn_signal": False, "argmax_in_lm_head": False, "oproj_merges": False,
                   "attn_merge_spin": False, "attn_rope_warp": False,
                   "attn_merge_tagged": False, "attn_merge_speculate": False,
                   "attn_merge_once": False, "attn_idle_exit": False, "attn_head_split": 1,
                   "lm_head_pick_ahead": True, "attn_merge_poll": False}


def recorded_options(options: Mapping[str, object]) -> dict | None:
    """build_plan's keyword options for options a snapshot recorded, or None when the plan they
    name can no longer be built."""
    out = dict(options)
    if "o_proj_trigger_first" not in out and out.get("fused_rope", True):
        return None  # recorded before attn_k_apart existed: the fused attention normed k apart
    if out.get("fused_rope") is False:
        out.pop("attn_k_apart", None)  # unfused, the rope launch norms k: k_apart changed nothing
    if not out.get("lm_head_q8"):
        out.pop("lm_head_pick_ahead", None)  # the GEMV head: the pick's form changed nothing
    elif "prefill_rows" not in out:  # recorded before prefill_rows, which came after the pick's ahead form
        out.setdefault("lm_head_pick_ahead", False)  # and before that form too: the pick's first form ran
    for name, before in ADDED_OPTIONS.items():
        out.setdefault(name, before)
    for name, built in REMOVED_OPTIONS.items():
        if name in out and out.pop(name) != built:
            return None
    return out
