"""The plan variants (`build_plan` options) that `tfdash bench` runs as tilelang peers of the
default graph and the live A/B (`a`, `--ab`) offers, by the names both show. A variant that loses
stays here until it is decided, then goes; and the GEMV launch-settings variants that
`tfdash bench --gemv` adds. Also whether an engine can A/B a variant at all (`refusal`): the A/B
refuses by it, and its screen marks by it the variants it would refuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tfdash.errors import TfdashError

if TYPE_CHECKING:
    from tfdash.profiling.ab import Variant

PLAN_VARIANTS = {
    "tilelang-unfused": {"fused_rope": False},
    "tilelang-gu1": {"gemv_blocks_per_sm": {"gate_up": 1}},
    "tilelang-latekv": {"attn_kv_early": False},
    "tilelang-lateres": {"early_residual": False},
    "tilelang-sc24": {"attn_split_cap": 24},
    "tilelang-scall": {"attn_split_cap": 1 << 20},
    "tilelang-otlate": {"o_proj_trigger_first": False},  # gate_up launches after o_proj's grid dependency
    "tilelang-mlate": {"attn_merge_early": False},  # the merge loads partials after (max, sum)
    # norm weights (and attention's cos/sin) read after the grid dependency, not before it
    "tilelang-latenorm": {"early_norm": False},
    # attention's splits arrive with a fence and a relaxed atomic, not one acquire-release atomic
    "tilelang-fenced": {"attn_merge_acq_rel": False},
    # the merge loading 16 partials at once where the default takes 32 (groups of 1 and 2)
    "tilelang-mc16": {"attn_merge_chunk": 16},
    # attention's blocks let o_proj launch at their grid dependency (where the default waits for
    # their values: 0.6B)
    "tilelang-tdep": {"attn_trigger_at": "dependency"},
    # the merge loading its first partials early for groups up to 4 q heads (4B, 8B), not 2
    "tilelang-meg4": {"attn_merge_early_group": 4},
    # gate_up stores g|u and every block of down makes silu(g) * u from them (the plan before)
    "tilelang-downsilu": {"gate_up_silu": False},
    # attention launches after qkv_proj's grid dependency (where the default lets it launch at
    # qkv's start: 0.6B)
    "tilelang-qtlate": {"qkv_trigger_first": False},
    # the token copied into the host's pinned ring after each replay, where the default's argmax
    # stores it there from inside the graph
    "tilelang-ringcopy": {"ring_in_graph": False},
    # each step timed by a timed event after its replay, where the default's argmax stamps the
    # GPU's clock into the ring beside the token and an untimed event marks the slot
    "tilelang-ringevents": {"ring_stamps": False},
    # attention's score and value phases each as one chain of dependent instructions (a dot
    # product's 16 FMAs, a branch to store it, then the next), where the default interleaves them
    "tilelang-chains": {"attn_ilp": False},
    # where attention's programs take the cache's blocks in rounds (past 2048 positions at the default
    # split cap), every round ropes q and loads its K/V at its start, where the default ropes q once
    # and loads ahead
    "tilelang-eachround": {"attn_rounds_carry": False},
    # the lm_head as the bf16 GEMV, where the default bounds every logit through an int8 copy of its
    # weight and computes exactly only the rows that may hold the argmax
    "tilelang-bf16head": {"lm_head_q8": False},
}


def variant_names(spec: str) -> list[str]:
    """The plan variants named in a comma-separated list, in order; a name not among PLAN_VARIANTS
    (a variant decided and removed, a typo) raises one line naming the known ones."""
    names = [v.strip() for v in spec.split(",") if v.strip()]
    unknown = [v for v in names if v not in PLAN_VARIANTS]
    if unknown:
        raise TfdashError(f"no plan variant {', '.join(map(repr, unknown))} (known: {', '.join(PLAN_VARIANTS)})")
    return names


GEMV_OPS = ("qkv_proj", "o_proj", "gate_up", "down", "lm_head")  # the GEMVs a --gemv variant may set


def gemv_variant(spec: str, flag: str = "--gemv") -> tuple[str, dict]:
    """`down:seg=8,blocks_per_sm=1` -> ("tilelang[down:seg=8,blocks_per_sm=1]", build_plan options);
    `o_proj:blocks_per_sm=1+down:blocks_per_sm=1` sets both ops in one variant. A bad spec's error
    names `flag`, the option it came from."""
    from tfdash.engine.plan import GEMV_KNOB_TAG  # the settings a --gemv variant may set

    overrides: dict[str, dict] = {}
    for part in spec.split("+"):
        op, _, rest = part.partition(":")
        if op not in GEMV_OPS or not rest or op in overrides:
            raise TfdashError(f"{flag} {spec!r}: want OP:KEY=V[,KEY=V][+OP:...] with each OP once, one of "
                              f"{', '.join(GEMV_OPS)}")
        settings = {}
        for kv in rest.split(","):
            key, _, value = kv.partition("=")
            if key not in GEMV_KNOB_TAG or not value.isdigit() or int(value) < 1:
                raise TfdashError(f"{flag} {spec!r}: {kv!r} is not " + ", ".join(f"{k}=N" for k in GEMV_KNOB_TAG)
                                  + " (N >= 1)")
            settings[key] = int(value)
        overrides[op] = settings
    return f"tilelang[{spec}]", {"gemv_overrides": overrides}


def variant_options(running: dict, v: Variant) -> dict:
    """The running plan's build options with the variant's over them (dict options merged by key)."""
    options = dict(running)
    for k, val in v.options.items():
        old = options.get(k)
        if isinstance(val, dict):
            merged = {op: {**dict((old or {}).get(op, {})), **s} if isinstance(s, dict) else s
                      for op, s in {**dict(old or {}), **val}.items()}
            options[k] = merged
        else:
            options[k] = val
    return options


# The build options that change the torch spelling's launches or what they read and write; every other
# option sets how a tilelang kernel launches (or, ring_stamps, what only the tilelang argmax stores:
# the torch spelling has no clock and leaves ring_ns), which a torch engine never sees
TORCH_VISIBLE = frozenset({"fused_rope", "gate_up_silu", "ring_in_graph", "lm_head_q8"})
# Of those, the ones that change only how a CUDA step's token reaches the host: a CPU runtime stores
# each token into its own ring after the step whatever the plan (token_ring.TokenRing.enqueue), so on
# the CPU the argmax's store into the plan's ring is one element nobody reads
CUDA_ONLY = frozenset({"ring_in_graph"})


class Refusal(NamedTuple):
    """Why an A/B of a variant is refused, in two lengths."""

    short: str  # a few words for a list of variants: "tilelang-graph only"
    line: str  # the whole line, the variant named: what an A/B of it answers


def refusal(v: Variant, backend: str, options: dict | None = None, pdl: bool | None = None,
            device: str | None = None) -> Refusal | None:
    """Why an engine of `backend` on `device` ("cpu", "cuda"), running the plan built with `options`
    (and, on tilelang-graph, launched with PDL `pdl`), cannot A/B `v`: decided from these alone, so
    the A/B screen marks the variants it would refuse before one is picked, `--ab` on a torch engine
    refuses before any weight is loaded, and `build` refuses by the same rule. None where it can try
    (building may still refuse: a plan the tilelang engine cannot compile, a state it cannot share);
    `options` or `pdl` None (unknown) is never the running plan's, and `device` None never the CPU."""
    if v.runtime and backend != "tilelang-graph":
        return Refusal("tilelang-graph only",
                       f"{v.name} ({v.about}) is a tilelang-graph launch setting; this engine is {backend}")
    seen = TORCH_VISIBLE - CUDA_ONLY if device == "cpu" else TORCH_VISIBLE
    if backend != "tilelang-graph" and not set(v.options) & seen:
        if set(v.options) & TORCH_VISIBLE:  # a CUDA-only option, on the CPU
            return Refusal("no-op", f"{v.name} ({v.about}) sets how a CUDA step's token reaches the host; this "
                           f"engine is {backend} on the CPU, which stores each token itself either way")
        return Refusal("no-op", f"{v.name} ({v.about}) sets how the tilelang kernels launch; this "
                       f"engine is {backend}, whose two sides would run the same torch ops")
    if options is not None and variant_options(options, v) == options and v.runtime.get("pdl", pdl) == pdl:
        return Refusal("the running plan", f"{v.name} ({v.about}) is the plan already running: nothing to compare")
    return None
