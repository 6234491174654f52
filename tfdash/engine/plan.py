"""StepPlan: the ordered list of every launch of one decode step. The single source of truth.

The runtime launches it (torch spellings on CPU/GPU, tilelang kernels on the H200) and captures
it; the analyzer prices it; the profiler names what CUPTI measured by its position in it; the app
lists it. A launch names its operands by buffer; every buffer has a fixed shape and dtype, so a
captured CUDA graph can replay the step at fixed addresses.

One decode step, for a model of L layers (the engine's real structure: packed q|k|v and gate|up,
norms fused into the GEMV that consumes them, residual adds fused into the GEMV that produces
them, the attention merge inside the attention launch):

    embed                      x = E[tok]
    L{i}.qkv_proj              qkv = W_qkv @ rmsnorm(x)
    L{i}.attention             q = rope(norm(q)); k_cache[pos] = rope(norm(k)); v_cache[pos] = v;
                               attn = softmax(q k^T / sqrt(d)) v over positions 0..pos
                               (fused_rope=False: the first line is a launch of its own,
                               L{i}.qk_norm_rope)
    L{i}.o_proj                x += W_o @ attn
    L{i}.gate_up               h = silu(g) * u, g|u = W_gu @ rmsnorm(x)
    L{i}.down                  x += W_down @ h
    lm_head                    logits = E @ rmsnorm(x) (f32), and a (max, index) per block
                               (lm_head_q8: bounds through an int8 E, then lm_head_pick: the
                               exact logits that may be the max; tfdash.engine.head_plan)
    argmax                     next = argmax over those; feed prompt or next; pos += 1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from tfdash.engine.attn_plan import ATTN_BLOCK, attention_dims
from tfdash.engine.config import ModelConfig
from tfdash.engine.limits import check_ctx
from tfdash.errors import CapacityError, TfdashError

# kernel-name tags of overridden settings; min_blocks: __launch_bounds__'s blocks per SM (a
# register budget a thread, so the next kernel's blocks fit beside these under PDL)
GEMV_KNOB_TAG = {"rows": "r", "seg": "s", "blocks_per_sm": "b", "min_blocks": "m", "trigger_first": "t"}
# trigger_first (1: the next kernel may launch at this GEMV's start) only where the next kernel
# reads nothing before its grid dependency that the kernel before this one writes: o_proj ->
# gate_up, down -> qkv / lm_head (weights), qkv -> attention (weights, pos and earlier steps' K/V)
TRIGGER_FIRST_OPS = ("o_proj", "down", "qkv_proj")
TOKEN_RING = 64  # the host's pinned token slots, by position: how far the host may run ahead of the GPU
# qkv weights at most this large: attention launches at qkv_proj's start (build_plan's qkv_trigger_first)
QKV_TRIGGER_FIRST_MAX_BYTES = 8 << 20


@dataclass(frozen=True)
class BufferSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "bfloat16", "float32", "int32", ...
    kind: str  # "weight", "cache", "activation", "table", "scratch"
    parent: str | None = None  # a view: parent[index]
    index: int | None = None

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        from tfdash.kernels.base import DTYPE_BYTES

        return self.numel * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class Launch:
    index: int
    role: str  # "L12.qkv_proj", "lm_head", ...
    layer: int | None
    family: str  # "gemv", "attention", ...
    kernel: str  # the prim_func's name; CUDA, CUPTI and Nsight show `<kernel>_kernel`
    dims: Mapping[str, object]
    args: Mapping[str, str]  # operand role -> buffer name

    @property
    def op(self) -> str:
        """The role without its layer prefix: "qkv_proj" for "L12.qkv_proj"."""
        return self.role.split(".", 1)[1] if self.layer is not None else self.role

    def cost(self, ctx_len: int):
        from tfdash.kernels.base import family

        return family(self.family).cost(self.dims, ctx_len)

    def to_dict(self) -> dict:
        return {
            "index": self.index, "role": self.role, "layer": self.layer, "family": self.family,
            "kernel": self.kernel, "dims": dict(self.dims), "args": dict(self.args),
        }


@dataclass(frozen=True)
class StepPlan:
    config: ModelConfig
    dtype: str
    capacity: int  # KV cache positions
    buffers: Mapping[str, BufferSpec]
    launches: tuple[Launch, ...]
    meta: Mapping[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.launches)

    def __iter__(self):
        return iter(self.launches)

    def families(self) -> dict[str, list[Launch]]:
        out: dict[str, list[Launch]] = {}
        for launch in self.launches:
            out.setdefault(launch.family, []).append(launch)
        return out

    def ops(self) -> dict[str, list[Launch]]:
        """Launches grouped by op (role without layer): "qkv_proj" -> 28 launches."""
        out: dict[str, list[Launch]] = {}
        for launch in self.launches:
            out.setdefault(launch.op, []).append(launch)
        return out

    def kernels(self) -> dict[str, Launch]:
        """One representative launch per distinct kernel name (what gets compiled)."""
        out: dict[str, Launch] = {}
        for launch in self.launches:
            out.setdefault(launch.kernel, launch)
        return out

    def check_ctx(self, ctx_len: int) -> None:
        """A step at ctx_len attends over ctx_len + 1 positions and writes position ctx_len
        (limits.check_ctx)."""
        check_ctx(self.config, self.capacity, ctx_len)

    def weight_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers.values() if b.kind == "weight")

    def to_dict(self) -> dict:
        return {
            "config": self.config.to_dict(),
            "dtype": self.dtype,
            "capacity": self.capacity,
            "buffers": {n: {"shape": list(b.shape), "dtype": b.dtype, "kind": b.kind,
                            "parent": b.parent, "index": b.index} for n, b in self.buffers.items()},
            "launches": [launch.to_dict() for launch in self.launches],
        }


def build_plan(cfg: ModelConfig, dtype: str = "bfloat16", capacity: int = 4096, fused_rope: bool = True,
               gemv_blocks_per_sm: Mapping[str, int] | None = None, attn_kv_early: bool = True,
               early_residual: bool = True,
               gemv_overrides: Mapping[str, Mapping[str, int]] | None = None,
               attn_split_cap: int | None = None, attn_min_blocks: int | None = None,
               attn_block: int | None = None, o_proj_trigger_first: bool = True,
               attn_merge_early: bool = True, early_norm: bool = True,
               attn_merge_acq_rel: bool = True, attn_merge_chunk: int | None = None,
               attn_trigger_at: str | None = None, attn_merge_early_group: int | None = None,
               gate_up_silu: bool = True, qkv_trigger_first: bool | None = None,
               ring_in_graph: bool = True, attn_ilp: bool = True, attn_rounds_carry: bool = True,
               lm_head_q8: bool = False, prefill_rows: int = 0, ring_stamps: bool = True) -> StepPlan:
    """Every launch of one decode step for `cfg`, with weights and activations in `dtype`.
    `fused_rope=False` gives q/k norm + RoPE + KV append a launch of its own (the A/B baseline).
    `gemv_blocks_per_sm` caps an op's GEMV grid at that many blocks per SM (e.g. {"gate_up": 1}),
    a variant to A/B: fewer blocks of one op leave room for the next op's to start early.
    `attn_kv_early=False` makes the fused attention read the KV cache after its grid dependency
    instead of before it (the A/B baseline for that prefetch). `early_residual=False` makes o_proj
    and down read the residual they add into after their grid dependency (the A/B baseline).
    `gemv_overrides` sets an op's GEMV launch settings over the per-shape table
    ({"down": {"seg": 8, "blocks_per_sm": 1}}; "lm_head" too, its argmax scratch following its
    grid), the variants a sweep compares. `attn_split_cap`: the attention grid's programs per kv
    head at most (default tfdash.kernels.splitkv.SPLIT_CAP), a variant to A/B.
    `attn_min_blocks` asks the compiler for that many attention blocks per SM
    (`__launch_bounds__`'s second argument: fewer registers a thread), so a block fits beside
    the qkv GEMV's and starts its K/V prefetch under PDL sooner; a knob to sweep.
    `attn_block` sets the KV positions per split (default ATTN_BLOCK): half as many halves the
    K/V each thread prefetches (and its registers) for twice the splits; a knob to sweep.
    `o_proj_trigger_first` lets gate_up launch at o_proj's start rather than after o_proj's grid
    dependency, so gate_up's blocks stream their first weights while attention still runs (gate_up
    reads only weights before its own dependency); False is the A/B baseline.
    `attn_merge_early` has the merging block load its first partials beside the (max, sum) pairs
    (splitkv.merge_macro's `early`) where a kv head has at most `attn_merge_early_group` q heads
    (None: attn_plan.MERGE_EARLY_GROUP; their partials stay in registers); larger groups merge
    late, as False does everywhere (the baseline).
    `early_norm` has the kernels with an RMSNorm in front (qkv_proj, gate_up, lm_head, and the
    fused attention's q/k norm with its cos/sin) read their norm weights before their grid
    dependency, so what follows it waits on the activations alone (in L2) rather than also on a
    DRAM read of a weight, bit for bit the same arithmetic; False is the A/B baseline.
    `attn_merge_acq_rel`: attention's splits arrive with one acquire-release atomic, not a fence
    and a relaxed atomic (splitkv.merge_macro's `acq_rel`); False: the baseline.
    `attn_merge_chunk`: the partials the merge loads at once; None: attn_plan.WIDE_MERGE_CHUNK where
    a kv head has at most WIDE_MERGE_GROUP q heads (up to 32 splits in one round trip), else
    splitkv.MERGE_CHUNK (16: a second round trip past 16 splits); the same sums in the same order.
    `attn_trigger_at`: where an attention block lets o_proj launch: at its grid dependency
    ("dependency") or after its values ("values"), so o_proj's and gate_up's weight prefetch
    meets attention's merge rather than its K/V loads; None: "values" where o_proj's weight is at
    most attn_plan.LATE_TRIGGER_MAX_O_BYTES (0.6B), else "dependency".
    `gate_up_silu`: gate_up's epilogue makes silu(g) * u (each warp pairs a gate row with its up
    row), so down reads I values as they are; False: down's prologue makes them from gate|up's 2I,
    every block of it all I (the baseline), the same arithmetic.
    `qkv_trigger_first` lets attention launch at qkv_proj's start (gemv_overrides' trigger_first), so
    its blocks are resident and load K/V while qkv streams its weights; None: where qkv's weight is
    at most QKV_TRIGGER_FIRST_MAX_BYTES (0.6B; from 1.7B up it measured no gain or a loss), False:
    the baseline. Only `gemv_overrides` of qkv_proj's trigger_first outranks it.
    `ring_in_graph`: argmax also stores the step's token in the host's pinned token ring (buffer
    "ring", slot pos % TOKEN_RING) through its device address, so the token reaches the host from
    inside the step's graph and no copy follows it; False: the runtime copies it after the step (the
    baseline). `ring_stamps` (with it): argmax stamps the device's clock beside it (buffer "ring_ns"),
    so the host times a step from two stamps rather than from a timed event after each replay
    (which costs a step about 1.8 us); False: timed events (the baseline).
    `attn_ilp`: attention's score and value phases as independent chains (tfdash.kernels.attn_dots:
    each dot product and each head's sum in 4 accumulators, the same products summed in another
    order); False: one chain each (the baseline, a kernel named _ch).
    `attn_rounds_carry`: where the fused attention's programs take the cache's blocks in rounds (a
    cache past split_cap blocks), a program norms and rotates q once, in its first round, and loads
    its next round's K/V once its values are done, under its arrival and merge; False: every round
    ropes q again and loads its K/V at its start (the baseline, a kernel named _er).
    `lm_head_q8`: the lm_head bounds every logit through an int8 copy of its weight and computes
    exactly only the rows that may hold the argmax (tfdash.engine.head_plan); False: the GEMV.
    `prefill_rows`: the runtime takes a prompt that many positions at a time, through the prompt's plan
    (tfdash.engine.prefill_plan), then the step's head alone on its last position (the step's launches
    are the same); 0: the step walks the prompt one position at a time (the baseline).
    `StepPlan.meta["options"]` keeps the keyword options, so `build_plan(cfg, **options)` rebuilds it."""
    options = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in locals().items() if k != "cfg"}
    from tfdash.kernels.gemv import check_override as gemv_check_override
    from tfdash.kernels.gemv import paired as gemv_paired
    from tfdash.kernels.gemv import settings as gemv_settings

    bps = dict(gemv_blocks_per_sm or {})
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
    cfg.validate()
    if prefill_rows not in (0, 16):
        raise TfdashError(f"prefill_rows={prefill_rows} must be 0 (the step walks the prompt) or 16")
    if capacity < 1:
        raise CapacityError(f"capacity={capacity} must be positive")
    H, D, I, V, L = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size, cfg.vocab_size, cfg.num_layers
    nH, nKV, C = cfg.num_heads, cfg.num_kv_heads, capacity
    from tfdash.kernels.base import DTYPE_BYTES

    attn_dims, sc_sfx = attention_dims(
        nH, nKV, D, C, fused_rope=fused_rope, attn_kv_early=attn_kv_early, attn_split_cap=attn_split_cap,
        attn_min_blocks=attn_min_blocks, attn_block=attn_block, attn_merge_early=attn_merge_early,
        attn_merge_early_group=attn_merge_early_group,
        early_norm=early_norm, attn_merge_acq_rel=attn_merge_acq_rel, attn_merge_chunk=attn_merge_chunk,
        attn_trigger_at=attn_trigger_at, o_weight_bytes=H * cfg.q_size * DTYPE_BYTES[dtype], attn_ilp=attn_ilp,
        attn_rounds_carry=attn_rounds_carry)
    if qkv_trigger_first is None:
        qkv_trigger_first = cfg.qkv_size * H * DTYPE_BYTES[dtype] <= QKV_TRIGGER_FIRST_MAX_BYTES
    if qkv_trigger_first:
        overrides.setdefault("qkv_proj", {}).setdefault("trigger_first", 1)
    splits = attn_dims["splits"]
    eps = cfg.rms_norm_eps

    buffers: dict[str, BufferSpec] = {}

    def buf(name, shape, dt, kind, parent=None, index=None):
        buffers[name] = BufferSpec(name, tuple(shape), dt, kind, parent, index)
        return name

    # Per-step state, each at a fixed address.
    buf("tok", (1,), "int32", "activation")  # the input slot: token consumed by this step
    buf("pos", (1,), "int32", "activation")  # position of that token == ctx_len of the step
    buf("prompt", (C,), "int32", "activation")
    buf("prompt_len", (1,), "int32", "activation")
    buf("out_tokens", (C,), "int32", "activation")  # out_tokens[p]: argmax predicted at position p
    if ring_in_graph:
        buf("ring", (TOKEN_RING,), "int32", "activation")  # host memory: the runtime's pinned ring
        if ring_stamps:
            buf("ring_ns", (TOKEN_RING,), "int64", "activation")  # host memory too: each slot's clock stamp
    buf("x", (H,), dtype, "activation")  # residual stream
    buf("qkv", (cfg.qkv_size,), dtype, "activation")
    buf("q", (cfg.q_size,), dtype, "activation")
    buf("attn", (cfg.q_size,), dtype, "activation")
    if gate_up_silu:
        buf("mlp_h", (I,), dtype, "activation")  # silu(g) * u
    else:
        buf("gu", (2 * I,), dtype, "activation")
    buf("logits", (V,), "float32", "activation")
    buf("rope_cos", (C, D // 2), dtype, "table")
    buf("rope_sin", (C, D // 2), dtype, "table")
    buf("attn_part", (nH, splits, D), "float32", "scratch")  # split-KV partial outputs
    buf("attn_ml", (nH, splits, 2), "float32", "scratch")  # split-KV (max, sum) pairs
    buf("attn_sem", (nKV,), "int32", "scratch")  # arrival counters for the in-kernel merge

    buf("embed", (V, H), dtype, "weight")
    buf("final_norm", (H,), dtype, "weight")
    head = "embed"
    if not cfg.tie_word_embeddings:
        head = buf("lm_head", (V, H), dtype, "weight")
    buf("k_cache", (L, nKV, C, D), dtype, "cache")
    buf("v_cache", (L, nKV, C, D), dtype, "cache")
    for i in range(L):
        p = f"L{i}."
        buf(p + "attn_norm", (H,), dtype, "weight")
        buf(p + "w_qkv", (cfg.qkv_size, H), dtype, "weight")
        buf(p + "q_norm", (D,), dtype, "weight")
        buf(p + "k_norm", (D,), dtype, "weight")
        buf(p + "w_o", (H, cfg.q_size), dtype, "weight")
        buf(p + "mlp_norm", (H,), dtype, "weight")
        buf(p + "w_gu", (2 * I, H), dtype, "weight")
        buf(p + "w_down", (H, I), dtype, "weight")
        buf(p + "k_cache", (nKV, C, D), dtype, "cache", parent="k_cache", index=i)
        buf(p + "v_cache", (nKV, C, D), dtype, "cache", parent="v_cache", index=i)

    launches: list[Launch] = []

    def launch(role, layer, fam, kernel, dims, **args):
        launches.append(Launch(len(launches), role, layer, fam, kernel,
                               MappingProxyType(dict(dims, dtype=dtype)), MappingProxyType(args)))

    def gemv_kernel(op, kernel, N, K, prologue, epilogue, out_dtype, extra=None):
        """(kernel name, dims) of a GEMV: the per-shape table (else its rule; paired rows for the
        silu_mul epilogue), then the plan's options and overrides for `op`, each other kernel named
        apart."""
        dims = dict(N=N, K=K, prologue=prologue, epilogue=epilogue, out_dtype=out_dtype, eps=eps, **(extra or {}))
        dims.update(gemv_paired(gemv_settings(N, K), K) if epilogue == "silu_mul" else gemv_settings(N, K))
        override = dict(overrides.get(op, {}), **({"blocks_per_sm": bps[op]} if op in bps else {}))
        if override:
            gemv_check_override(op, override, dims)
            dims.update(override)
            kernel += "_" + "".join(f"{GEMV_KNOB_TAG[k]}{override[k]}" for k in sorted(override))
        if prologue == "rmsnorm":
            if early_norm:
                dims["early_norm"] = True
            else:
                kernel += "_ln"  # the late-norm baseline
        return kernel, dims

    def gemv(role, layer, kernel, N, K, prologue, epilogue, out_dtype, extra=None, **args):
        launch(role, layer, "gemv", *gemv_kernel(role.split(".", 1)[-1], kernel, N, K, prologue, epilogue,
                                                 out_dtype, extra), **args)

    launch("embed", None, "embed", "embed_gather", dict(H=H, V=V), tok="tok", table="embed", out="x")
    for i in range(L):
        p = f"L{i}."
        gemv(p + "qkv_proj", i, "gemv_qkv", cfg.qkv_size, H, "rmsnorm", "store", dtype,
             x="x", norm_w=p + "attn_norm", w=p + "w_qkv", out="qkv")
        if fused_rope:
            launch(p + "attention", i, "attention",
                   ("attn_rope_decode" if attn_kv_early else "attn_rope_decode_late") + sc_sfx,
                   dict(attn_dims, eps=eps, fused_rope=True, **({} if attn_kv_early else {"kv_early": False})),
                   qkv="qkv", q_norm=p + "q_norm", k_norm=p + "k_norm", cos="rope_cos", sin="rope_sin",
                   k_cache=p + "k_cache", v_cache=p + "v_cache", pos="pos", out="attn",
                   part="attn_part", ml="attn_ml", sem="attn_sem")
        else:
            launch(p + "qk_norm_rope", i, "rope", "qk_norm_rope", dict(attn_dims, eps=eps),
                   qkv="qkv", q_norm=p + "q_norm", k_norm=p + "k_norm", cos="rope_cos", sin="rope_sin",
                   pos="pos", q="q", k_cache=p + "k_cache", v_cache=p + "v_cache")
            launch(p + "attention", i, "attention", "attn_decode" + sc_sfx, attn_dims,
                   q="q", k_cache=p + "k_cache", v_cache=p + "v_cache", pos="pos", out="attn",
                   part="attn_part", ml="attn_ml", sem="attn_sem")
        # o_proj and down add into x, last written two or more launches before them (the last
        # layer's down or embed; o_proj): they may read it before their grid dependency
        res = {"early_residual": True} if early_residual else None
        res_sfx = "" if early_residual else "_lateres"
        o_extra = dict(res or {}, **({"trigger_first": 1} if o_proj_trigger_first else {}))
        gemv(p + "o_proj", i, "gemv_o_residual" + res_sfx + ("" if o_proj_trigger_first else "_tlate"), H, cfg.q_size,
             "none", "residual", dtype, extra=o_extra or None, x="attn", w=p + "w_o", out="x")
        if gate_up_silu:  # silu(g) * u made once, by gate_up
            gemv(p + "gate_up", i, "gemv_gate_up_silu", 2 * I, H, "rmsnorm", "silu_mul", dtype, x="x",
                 norm_w=p + "mlp_norm", w=p + "w_gu", out="mlp_h")
            gemv(p + "down", i, "gemv_down_residual" + res_sfx, H, I, "none", "residual", dtype, extra=res,
                 x="mlp_h", w=p + "w_down", out="x")
        else:
            gemv(p + "gate_up", i, "gemv_gate_up", 2 * I, H, "rmsnorm", "store", dtype, x="x", norm_w=p + "mlp_norm",
                 w=p + "w_gu", out="gu")
            gemv(p + "down", i, "gemv_down_silu_residual" + res_sfx, H, I, "silu_mul", "residual", dtype, extra=res,
                 x="gu", w=p + "w_down", out="x")
    from tfdash.engine.head_plan import head_launches

    ring = TOKEN_RING if ring_in_graph else 0
    derived = head_launches(cfg, dtype, C, head, buf, launch, gemv_kernel, ring, lm_head_q8,
                            stamps=ring_in_graph and ring_stamps)
    meta = {"options": options, **({"derived": MappingProxyType(derived)} if derived else {})}
    return StepPlan(cfg, dtype, C, MappingProxyType(buffers), tuple(launches), MappingProxyType(meta))
