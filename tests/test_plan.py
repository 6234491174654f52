"""StepPlan: the single source of truth is self-consistent.

Roles are unique, every operand names a buffer of the plan, every buffer's shape agrees with the
dims of the launches that use it, and each kernel name stands for one set of dims (so one
compiled kernel serves every launch that names it).
"""

import json

import pytest

from tfdash.engine.config import PRESETS, ModelConfig
from tfdash.engine.limits import check_generation, default_capacity
from tfdash.engine.plan import ATTN_BLOCK, build_plan
from tfdash.errors import CapacityError, TfdashError
from tfdash.kernels.base import DTYPE_BYTES, FAMILIES, family

# A shape unlike the presets: GQA 4:1, odd layer count, untied head.
ODD = ModelConfig(name="odd", hidden_size=96, num_layers=3, num_heads=8, num_kv_heads=2, head_dim=32,
                  intermediate_size=160, vocab_size=500, tie_word_embeddings=False, rope_theta=1e4,
                  rms_norm_eps=1e-5, max_position_embeddings=1024)

# The plan's default fuses q/k norm + RoPE + KV append into the attention launch; fused_rope=False
# is the A/B baseline with a launch of its own. Both must be self-consistent.
PLANS = [
    pytest.param((PRESETS["qwen3-1.7b"], "bfloat16", 4096, True), id="1.7b-bf16"),
    pytest.param((PRESETS["qwen3-1.7b"], "bfloat16", 4096, False), id="1.7b-bf16-unfused"),
    pytest.param((PRESETS["qwen3-tiny"], "float32", 200, True), id="tiny-f32"),
    pytest.param((ODD, "float16", 100, False), id="odd-untied-f16-unfused"),
]


def fused(plan) -> bool:
    return "qk_norm_rope" not in plan.ops()


@pytest.fixture(params=PLANS)
def plan(request):
    cfg, dtype, cap, fuse = request.param
    p = build_plan(cfg, dtype=dtype, capacity=cap, fused_rope=fuse)
    assert fused(p) == fuse
    return p


def test_launch_order_and_count(plan):
    cfg = plan.config
    L = cfg.num_layers
    per_layer = (["qkv_proj", "attention", "o_proj", "gate_up", "down"] if fused(plan) else
                 ["qkv_proj", "qk_norm_rope", "attention", "o_proj", "gate_up", "down"])
    assert len(plan) == len(per_layer) * L + 3
    assert [launch.index for launch in plan] == list(range(len(plan)))
    ops = [launch.op for launch in plan]
    assert ops[0] == "embed" and ops[-2:] == ["lm_head", "argmax"]
    assert ops[1:-2] == per_layer * L
    for launch in plan.launches[1:-2]:
        assert launch.role == f"L{launch.layer}.{launch.op}"
    assert [launch.layer for launch in plan.launches[1:-2]] == [i for i in range(L) for _ in per_layer]
    assert plan.launches[0].layer is None and plan.launches[-1].layer is None
    assert {op: len(v) for op, v in plan.ops().items()} == {"embed": 1, "lm_head": 1, "argmax": 1,
                                                           **{op: L for op in per_layer}}


def test_roles_unique_and_args_name_buffers(plan):
    roles = [launch.role for launch in plan]
    assert len(set(roles)) == len(roles)
    for launch in plan:
        fam = family(launch.family)
        assert launch.family in FAMILIES
        for role, buf in launch.args.items():
            assert role in fam.roles, (launch.role, role)
            assert buf in plan.buffers, (launch.role, role, buf)
        # Layer launches touch only their own layer's per-layer buffers.
        for buf in launch.args.values():
            if buf.startswith("L"):
                assert buf.startswith(f"L{launch.layer}."), (launch.role, buf)


def test_cost_operands_are_launch_args(plan):
    """Every operand the cost model prices is a buffer the launch names; no byte is priced
    against a buffer the launch does not touch, and no more is read than the buffer holds."""
    for c in (0, plan.capacity - 1):
        for launch in plan:
            cost = launch.cost(c)
            for o in cost.operands:
                assert o.role in launch.args, (launch.role, o.role)
                spec = plan.buffers[launch.args[o.role]]
                assert o.read <= spec.nbytes and o.written <= spec.nbytes, (launch.role, o.role)
                if o.kind == "weight" and launch.family != "embed":
                    assert o.read == spec.nbytes, (launch.role, o.role)  # weights stream whole
                expect_kind = {"weight": "weight", "cache": "cache", "table": "table"}.get(spec.kind, "activation")
                assert o.kind == expect_kind, (launch.role, o.role, spec.kind)


def test_buffer_shapes_agree_with_dims(plan):
    cfg, B = plan.config, plan.buffers
    H, D, I, V, C = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size, cfg.vocab_size, plan.capacity
    nH, nKV = cfg.num_heads, cfg.num_kv_heads

    def shape(launch, role):
        return B[launch.args[role]].shape

    for launch in plan:
        d = launch.dims
        assert d["dtype"] == plan.dtype
        if launch.family == "gemv":
            N, K = d["N"], d["K"]
            assert shape(launch, "w") == (N, K)
            assert shape(launch, "x") == ((2 * K,) if d["prologue"] == "silu_mul" else (K,))
            assert shape(launch, "out") == ((N // 2,) if d["epilogue"] == "silu_mul" else (N,))
            assert B[launch.args["out"]].dtype == d["out_dtype"]
            assert B[launch.args["w"]].dtype == plan.dtype
            assert ("norm_w" in launch.args) == (d["prologue"] == "rmsnorm")
            if "norm_w" in launch.args:
                assert shape(launch, "norm_w") == (K,)
        elif launch.family == "embed":
            assert shape(launch, "table") == (V, H) == (d["V"], d["H"])
            assert shape(launch, "out") == (H,) and shape(launch, "tok") == (1,)
        elif launch.family in ("rope", "attention"):
            assert (d["n_heads"], d["n_kv_heads"], d["head_dim"], d["capacity"]) == (nH, nKV, D, C)
            assert d["splits"] == -(-C // d["block"])
            for role in ("k_cache", "v_cache"):
                assert shape(launch, role) == (nKV, C, D)
            # q comes in as a buffer, or (fused) is made on chip from qkv like the rope launch's.
            takes_qkv = launch.family == "rope" or bool(d.get("fused_rope"))
            assert ("qkv" in launch.args) == takes_qkv
            if "q" in launch.args:
                assert shape(launch, "q") == (nH * D,)
            if takes_qkv:
                assert shape(launch, "qkv") == ((nH + 2 * nKV) * D,)
                assert shape(launch, "cos") == shape(launch, "sin") == (C, D // 2)
                assert shape(launch, "q_norm") == shape(launch, "k_norm") == (D,)
            if launch.family == "attention":
                assert shape(launch, "out") == (nH * D,)
                assert shape(launch, "part") == (nH, d["splits"], D)
                assert shape(launch, "ml") == (nH, d["splits"], 2)
        elif launch.family == "argmax":
            assert shape(launch, "logits") == (V,) and B[launch.args["logits"]].dtype == "float32"
            assert shape(launch, "prompt") == shape(launch, "out_tokens") == (C,)
    # The projections chain: qkv feeds rope; gate_up's output is down's input.
    qkv, gu = plan.ops()["qkv_proj"][0], plan.ops()["gate_up"][0]
    assert qkv.dims["N"] == cfg.qkv_size and gu.dims["N"] == 2 * I
    lm = plan.ops()["lm_head"][0]
    assert lm.args["w"] == ("embed" if cfg.tie_word_embeddings else "lm_head")
    assert lm.dims["out_dtype"] == "float32"


def test_views_and_weights(plan):
    cfg, B = plan.config, plan.buffers
    for name, spec in B.items():
        assert spec.name == name
        assert spec.dtype in DTYPE_BYTES
        if spec.parent is not None:
            parent = B[spec.parent]
            assert parent.parent is None
            assert spec.shape == parent.shape[1:] and spec.dtype == parent.dtype
            assert 0 <= spec.index < parent.shape[0]
            assert name == f"L{spec.index}.{spec.parent}"
    # The weights are exactly the parameters: every one, each once (tied: the embedding serves both).
    assert plan.weight_bytes() == cfg.param_count() * DTYPE_BYTES[plan.dtype]
    assert ("lm_head" in B) == (not cfg.tie_word_embeddings)


def test_kernel_names_stand_for_one_set_of_dims(plan):
    by_kernel = {}
    for launch in plan:
        dims = json.dumps(dict(launch.dims), sort_keys=True)
        by_kernel.setdefault(launch.kernel, set()).add((launch.family, dims))
        # argument roles per kernel are the same too (only layer buffers differ)
    for kernel, variants in by_kernel.items():
        assert len(variants) == 1, (kernel, variants)
    assert set(plan.kernels()) == set(by_kernel)
    # A fixed set of kernels whatever the depth: what gets compiled does not grow with layers
    # (embed, 4 GEMVs in the layer + lm_head, attention, argmax; + the rope launch unfused).
    assert len(by_kernel) == (8 if fused(plan) else 9)
    role_sets = {}
    for launch in plan:
        role_sets.setdefault(launch.kernel, set()).add(tuple(launch.args))
    assert all(len(v) == 1 for v in role_sets.values())
    for launch in plan.kernels().values():
        assert launch.kernel.isidentifier() and launch.kernel != "main"


def test_to_dict_is_json(plan):
    d = json.loads(json.dumps(plan.to_dict()))
    assert len(d["launches"]) == len(plan)
    assert set(d["buffers"]) == set(plan.buffers)
    assert d["launches"][1]["args"] == dict(plan.launches[1].args)


def test_check_ctx_limits():
    plan = build_plan(PRESETS["qwen3-tiny"], capacity=128)
    plan.check_ctx(0)
    plan.check_ctx(127)
    with pytest.raises(CapacityError, match="ctx_len=128 is past the KV cache capacity of 128"):
        plan.check_ctx(128)
    with pytest.raises(CapacityError, match="ctx_len=-1"):
        plan.check_ctx(-1)
    big = build_plan(PRESETS["qwen3-tiny"], capacity=PRESETS["qwen3-tiny"].max_position_embeddings)
    with pytest.raises(CapacityError, match="ctx_len=8192 is past max_position_embeddings=8192"):
        big.check_ctx(8192)


def test_check_generation_and_default_capacity():
    cfg = PRESETS["qwen3-tiny"]  # max_position_embeddings 8192
    check_generation(cfg, 100, 50, 51)  # positions 0..99 written: fits 100 slots
    with pytest.raises(CapacityError, match="needs 101 KV positions, past the cache capacity of 100"):
        check_generation(cfg, 100, 50, 52)
    with pytest.raises(CapacityError, match="= 8193 is past max_position_embeddings=8192"):
        check_generation(cfg, 10_000, 8000, 193)
    with pytest.raises(CapacityError, match="at least one token"):
        check_generation(cfg, 100, 0, 5)
    with pytest.raises(CapacityError, match="max-new-tokens=0"):
        check_generation(cfg, 100, 5, 0)
    assert default_capacity(cfg, 1) == ATTN_BLOCK
    assert default_capacity(cfg, 65) == 2 * ATTN_BLOCK
    assert default_capacity(cfg, 100_000) == 8192
    with pytest.raises(CapacityError):
        build_plan(cfg, capacity=0)


def test_the_early_read_knobs_reach_the_engine_plan():
    """TFDASH_ATTN_KV_EARLY / TFDASH_EARLY_RESIDUAL / TFDASH_ATTN_MERGE_EARLY (SETTINGS), and the
    merge chunk and trigger knobs, pick the plan load_engine builds; off, the kernels are the A/B
    baselines, named apart."""
    from tfdash.engine import load_engine
    from tfdash.settings import SETTINGS

    def kernels():
        return set(load_engine(model="qwen3-tiny", device="cpu", capacity=128).plan.kernels())

    # qwen3-tiny's o_proj is small enough for the late trigger (_tv): the names below are without it
    with SETTINGS.override(attn_trigger_at="dependency"):
        on = kernels()
        assert {"attn_rope_decode_me", "gemv_o_residual", "gemv_gate_up_silu", "gemv_down_residual"} <= on
        with SETTINGS.override(attn_kv_early=False, early_residual=False, attn_merge_early=False):
            off = kernels()
        assert {"attn_rope_decode_late", "gemv_o_residual_lateres", "gemv_down_residual_lateres"} <= off
        assert not off & {"attn_rope_decode_me", "gemv_o_residual", "gemv_down_residual"}
        with SETTINGS.override(gate_up_silu=False):
            assert {"gemv_gate_up", "gemv_down_silu_residual"} <= kernels()
            assert not kernels() & {"gemv_gate_up_silu", "gemv_down_residual"}
        with SETTINGS.override(early_residual=False):
            assert "attn_rope_decode_me" in kernels() and "gemv_o_residual_lateres" in kernels()
        with SETTINGS.override(attn_merge_early=False):
            assert "attn_rope_decode" in kernels() and "attn_rope_decode_me" not in kernels()
        with SETTINGS.override(early_norm=False):
            assert {"attn_rope_decode_me_ln", "gemv_qkv_t1_ln", "gemv_gate_up_silu_ln", "gemv_lm_head_ln"} <= kernels()
        with SETTINGS.override(attn_merge_acq_rel=False):
            assert "attn_rope_decode_me_fe" in kernels()
        assert not any(k.endswith(("_ln", "_fe")) for k in on)
    with SETTINGS.override(attn_merge_chunk=16):  # qwen3-tiny's group of 2 takes 32 by default
        assert "attn_rope_decode_me_mc16_tv" in kernels()
    assert "attn_rope_decode_me_tv" in kernels()  # TFDASH_ATTN_TRIGGER_AT empty: the shape's own
    with SETTINGS.override(attn_trigger_at="scores"), pytest.raises(TfdashError, match="attn_trigger_at='scores'"):
        kernels()
    assert "gemv_qkv_t1" in kernels()  # TFDASH_QKV_TRIGGER_FIRST auto: qwen3-tiny's qkv is small
    with SETTINGS.override(qkv_trigger_first="off"):
        assert "gemv_qkv" in kernels() and "gemv_qkv_t1" not in kernels()
    with SETTINGS.override(qkv_trigger_first="sometimes"), pytest.raises(TfdashError, match="must be auto, on or off"):
        kernels()


@pytest.mark.parametrize("name,trigger,merge_early", [
    ("qwen3-0.6b", "values", True), ("qwen3-1.7b", "dependency", True), ("qwen3-4b", "dependency", False),
    ("qwen3-8b", "dependency", False), ("qwen3-14b", "dependency", False), ("qwen3-32b", "dependency", False)])
def test_each_shape_takes_its_own_trigger_and_merge(name, trigger, merge_early):
    """Attention lets o_proj launch after its values where o_proj's weight is at most 4 MiB (0.6B:
    1024 x 2048 in bf16), at its grid dependency elsewhere; the merge loads partials early where
    a kv head has 1 or 2 q heads. The options name another plan, and the old plan stays buildable."""
    from tfdash.engine.config import preset

    la = build_plan(preset(name), capacity=2112).ops()["attention"][0]
    assert la.dims.get("trigger_at", "dependency") == trigger and la.kernel.endswith("_tv") == (trigger == "values")
    assert bool(la.dims.get("merge_early")) == merge_early
    dep = build_plan(preset(name), capacity=2112, attn_trigger_at="dependency").ops()["attention"][0]
    assert "trigger_at" not in dep.dims and not dep.kernel.endswith("_tv")
    meg4 = build_plan(preset(name), capacity=2112, attn_merge_early_group=4).ops()["attention"][0]
    assert bool(meg4.dims.get("merge_early")) == (name in ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b"))


@pytest.mark.parametrize("name,chunk", [("qwen3-0.6b", 32), ("qwen3-1.7b", 32), ("qwen3-4b", 16), ("qwen3-8b", 16),
                                        ("qwen3-14b", 16), ("qwen3-32b", 16)])
def test_the_merge_chunk_follows_the_group(name, chunk):
    """32 partials at once where a kv head has 1 or 2 q heads, else splitkv.MERGE_CHUNK (16); the
    option picks another, named apart, and a chunk out of range is refused in one line."""
    from tfdash.engine.config import preset
    from tfdash.errors import TfdashError

    def attention(plan):
        [la] = [x for x in plan.kernels().values() if x.family == "attention"]
        return la

    la = attention(build_plan(preset(name), capacity=2112))
    assert la.dims.get("merge_chunk", 16) == chunk and "_mc" not in la.kernel
    other = 48 - chunk  # 16 <-> 32
    la = attention(build_plan(preset(name), capacity=2112, attn_merge_chunk=other))
    assert la.dims.get("merge_chunk", 16) == other and f"_mc{other}" in la.kernel
    with pytest.raises(TfdashError, match="attn_merge_chunk=65 must be 1 to 64"):
        build_plan(preset(name), capacity=2112, attn_merge_chunk=65)


@pytest.mark.parametrize("name", ["qwen3-1.7b", "qwen3-8b"])
def test_gate_up_makes_silu_for_down(name):
    """gate_up's silu_mul epilogue writes the I-long intermediate down reads as it is; each warp
    pairs gate and up rows, so 8B's gate_up, a row a warp by the rule, takes two."""
    cfg = PRESETS[name]
    plan, before = build_plan(cfg, capacity=256), build_plan(cfg, capacity=256, gate_up_silu=False)
    gu, down = plan.ops()["gate_up"][0], plan.ops()["down"][0]
    assert (gu.dims["epilogue"], down.dims["prologue"]) == ("silu_mul", "none")
    assert gu.args["out"] == down.args["x"] == "mlp_h" and plan.buffers["mlp_h"].shape == (cfg.intermediate_size,)
    assert "gu" not in plan.buffers and before.buffers["gu"].shape == (2 * cfg.intermediate_size,)
    rows_before = before.ops()["gate_up"][0].dims["rows"]
    assert (rows_before, gu.dims["rows"]) == ((1, 2) if name == "qwen3-8b" else (2, 2))
    # the same weight bytes; gate_up writes, and down reads, I values rather than 2I
    assert plan.weight_bytes() == before.weight_bytes()
    es, gu0 = DTYPE_BYTES[plan.dtype], before.ops()["gate_up"][0]
    assert gu.cost(0).bytes_written == gu0.cost(0).bytes_written // 2 == cfg.intermediate_size * es


def test_gate_up_silu_decodes_the_same_bits_on_cpu():
    """The torch spelling of both plans: the same tokens and logits after a short generation."""
    import torch

    from tfdash.engine.config import preset
    from tfdash.engine.runtime import Runtime
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset("qwen3-tiny")
    weights = pack(cfg, dict(random_state_dict(cfg, torch.bfloat16, "cpu", seed=0, gain=0.5)))
    outs = []
    for silu in (True, False):
        rt = Runtime(build_plan(cfg, capacity=64, gate_up_silu=silu), weights, "cpu")
        rt.reset([1, 2, 3, 4, 5])
        for _ in range(12):
            rt.step()
        outs.append((rt.bufs["out_tokens"][:12].clone(), rt.bufs["logits"].clone()))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
