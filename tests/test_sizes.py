"""Every Qwen3 dense size: the presets, their plans and floors, the GEMV settings table, the
one-line refusal of a shape the tilelang engine cannot run, and the torch-compile peer's trace."""

import dataclasses
import json

import pytest

from tfdash.engine.compile import unsupported
from tfdash.engine.config import PRESETS, preset
from tfdash.engine.plan import build_plan
from tfdash.errors import TfdashError

from conftest import assert_one_line_error, run_tfdash

# hidden, layers, heads, kv heads, head_dim, intermediate, tied: each model's config.json
PUBLISHED = {
    "qwen3-0.6b": (1024, 28, 16, 8, 128, 3072, True),
    "qwen3-1.7b": (2048, 28, 16, 8, 128, 6144, True),
    "qwen3-4b": (2560, 36, 32, 8, 128, 9728, True),
    "qwen3-8b": (4096, 36, 32, 8, 128, 12288, False),
    "qwen3-14b": (5120, 40, 40, 8, 128, 17408, False),
    "qwen3-32b": (5120, 64, 64, 8, 128, 25600, False),
}


def test_presets_are_the_published_shapes():
    from tfdash.defaults import PRESET_NAMES

    assert tuple(PRESETS) == PRESET_NAMES  # what --help lists is what --model takes
    for name, (h, L, nh, nkv, d, i, tied) in PUBLISHED.items():
        c = preset(name)
        assert (c.hidden_size, c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size,
                c.tie_word_embeddings) == (h, L, nh, nkv, d, i, tied), name
        assert (c.vocab_size, c.rope_theta, c.rms_norm_eps, c.max_position_embeddings) == (151936, 1e6, 1e-6, 40960)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_every_size_plans_for_the_tilelang_engine(name):
    cfg = preset(name)
    plan = build_plan(cfg, capacity=2112)
    assert unsupported(plan) is None
    assert len(plan) == 1 + 5 * cfg.num_layers + 2
    # the untied head is its own weight, read by the lm_head launch
    head = plan.launches[-2]
    assert head.role == "lm_head" and head.args["w"] == ("embed" if cfg.tie_word_embeddings else "lm_head")
    assert ("lm_head" in plan.buffers) == (not cfg.tie_word_embeddings)
    expected = cfg.param_count() * 2
    assert abs(plan.weight_bytes() - expected) <= 2 * cfg.hidden_size * 2  # (final norm counted once)


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_analyze_prints_each_sizes_floor(name):
    from tfdash.profiling.analyze import analyze
    from tfdash.profiling.targets import resolve_target

    plan = build_plan(preset(name), capacity=4096)
    a = analyze(plan, resolve_target("h200"), 1024)
    cfg = plan.config
    weights = plan.weight_bytes()
    kv = 2 * cfg.num_layers * 1024 * cfg.num_kv_heads * cfg.head_dim * 2  # k and v read at ctx 1024
    if not cfg.tie_word_embeddings:  # the embedding is gathered one row a step; the untied head is read
        weights -= (cfg.vocab_size - 1) * cfg.hidden_size * 2
    # the floor is the step's bytes on the datasheet bandwidth: weights and the cache, then crumbs
    assert a.floor_ns == pytest.approx(a.bytes / 4.8e12 * 1e9, rel=1e-3)
    assert weights + kv <= a.bytes <= (weights + kv) * 1.01


def test_analyze_cli_every_preset(capsys):
    from tfdash.cli import main

    for name in PUBLISHED:
        assert main(["analyze", "--model", name, "--dim", "ctx_len=0"]) == 0
        out = capsys.readouterr().out
        assert f"model={name}" in out and "floor-ns=" in out and "tok/s-ceiling=" in out


# -- shapes the tilelang engine cannot run ---------------------------------------------------
def _shape(**kw):
    return dataclasses.replace(preset("qwen3-1.7b"), name="custom", **kw)


@pytest.mark.parametrize("kw, needles", [
    ({"head_dim": 96}, ["head_dim=96", "64 and 128"]),
    ({"head_dim": 256}, ["head_dim=256", "64 and 128"]),
    ({"num_heads": 128}, ["128 query heads over 8 kv heads", "1 to 8"]),
    ({"hidden_size": 1000}, ["K=1000", "multiple of 256"]),
    ({"intermediate_size": 3000}, ["K=3000", "multiple of 256"]),
])
def test_unsupported_shapes_say_why_in_one_phrase(kw, needles):
    why = unsupported(build_plan(_shape(**kw), capacity=64))
    assert why is not None and "\n" not in why
    for n in needles:
        assert n in why, (n, why)


def _config_dir(tmp_path, **over):
    """A config.json whose GEMVs the tilelang engine can run (K multiples of 256), so that the
    attention is what it refuses."""
    cfg = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 64, "intermediate_size": 768, "vocab_size": 300, "rope_theta": 1e6,
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, **over,
           "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "torch_dtype": "bfloat16",
           "tie_word_embeddings": True}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path


@pytest.mark.parametrize("over, needle", [({"head_dim": 96}, "head_dim=96"),
                                          ({"num_attention_heads": 32, "num_key_value_heads": 2}, "1 to 8")])
def test_bench_refuses_an_unsupported_shape_before_the_device(tmp_path, over, needle):
    r = run_tfdash("bench", "--ckpt", str(_config_dir(tmp_path, **over)), timeout=120)
    assert r.rc != 0
    line = assert_one_line_error(r.stderr, needle, "tilelang-graph")
    assert "torch" in line  # and says what can run it


def test_load_engine_refuses_an_explicit_tilelang_backend_on_an_unsupported_shape(monkeypatch):
    """On a CUDA host the default engine falls back to torch-graph with a line; an explicit
    --backend tilelang-graph is refused before any weight loads (CUDA simulated: the refusal
    comes before the runtime is built)."""
    import torch

    import tfdash.engine as engine_mod
    from tfdash.engine import load_engine

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(engine_mod, "tilelang_available", lambda: True)
    monkeypatch.setitem(PRESETS, "custom", _shape(head_dim=96))
    loaded = []
    monkeypatch.setattr("tfdash.engine.weights.load_weights", lambda *a, **k: loaded.append(1))
    with pytest.raises(TfdashError, match="head_dim=96.*--backend torch-graph can"):
        load_engine(model="custom", device="cuda", backend="tilelang-graph")
    assert not loaded
    # the default backend gives way to the torch peer, and says so
    built = {}

    def fake_runtime(backend, plan, weights, device, progress=None):
        built["backend"] = backend
        return object()

    monkeypatch.setattr("tfdash.engine.runtime.make_runtime", fake_runtime)
    monkeypatch.setattr("tfdash.engine.memory.check_fits", lambda *a, **k: None)  # no device to ask
    eng = load_engine(model="custom", device="cuda")
    assert built["backend"] == "torch-graph" and eng.backend == "torch-graph"
    assert "head_dim=96" in eng.fallback and "torch-graph" in eng.fallback


# -- the GEMV settings table ----------------------------------------------------------------
def test_gemv_table_entries_and_rule():
    from tfdash.kernels.gemv import CHUNK, LOADS, TABLE_FILE, rule, settings, table

    raw = json.loads(TABLE_FILE.read_text())
    assert raw["schema"] == "tfdash.gemv_table/1"
    for e in raw["entries"]:
        assert e["chosen_by"]  # every entry says how it was decided
        chunks = e["K"] // CHUNK
        # an entry may keep more loads in flight than the rule aims at (4B's gate_up: 2 x 10) where
        # the sweep says so; the sm_90a guard (test_kernels_compile) checks that its registers fit
        assert e["rows"] * e["seg"] <= 2 * LOADS and 1 <= e["seg"] <= chunks
        assert settings(e["N"], e["K"]) == {k: e[k] for k in ("rows", "seg", "blocks_per_sm")}
    assert len(table()) == len(raw["entries"])
    # shapes not in the table take the rule: the fewest segments, balanced, the last one shorter
    assert rule(1024, 9728)["seg"] == 13  # 38 chunks -> 13 + 13 + 12
    assert rule(1024, 17408)["seg"] == 14  # 68 chunks -> 14 x 4 + 12
    assert rule(1024, 6144)["seg"] == 12  # 24 chunks -> 12 + 12 (the table's 1.7B down)
    assert rule(1024, 4096)["seg"] == 16 and rule(1024, 4096)["rows"] == 1


def test_gemv_overrides_name_the_kernel_apart():
    cfg = preset("qwen3-1.7b")
    plan = build_plan(cfg, capacity=64, gemv_overrides={"down": {"seg": 8, "blocks_per_sm": 1}})
    down = plan.ops()["down"][0]
    assert down.kernel == "gemv_down_residual_b1s8" and down.dims["seg"] == 8
    assert down.dims["blocks_per_sm"] == 1
    assert plan.ops()["gate_up"][0].kernel == "gemv_gate_up_silu"
    # the old knob still names its kernel as before
    gu1 = build_plan(cfg, capacity=64, gemv_blocks_per_sm={"gate_up": 1})
    assert gu1.ops()["gate_up"][0].kernel == "gemv_gate_up_silu_b1"
    with pytest.raises(TfdashError, match="unknown GEMV setting"):
        build_plan(cfg, capacity=64, gemv_overrides={"down": {"warps": 4}})


def test_lm_head_overrides_carry_its_grid_to_the_argmax():
    """lm_head's settings are a --gemv variant too: its kernel is named apart, and the per-block
    (max, index) scratch and the argmax that reads it follow the grid the settings give."""
    from tfdash.kernels.gemv import grid_size
    from tfdash.profiling.variants import gemv_variant

    cfg = preset("qwen3-1.7b")
    base = build_plan(cfg, capacity=64)
    assert base.ops()["lm_head"][0].kernel == "gemv_lm_head"
    plan = build_plan(cfg, capacity=64, **gemv_variant("lm_head:rows=1,blocks_per_sm=1")[1])
    head, amax = plan.ops()["lm_head"][0], plan.ops()["argmax"][0]
    assert head.kernel == "gemv_lm_head_b1r1" and head.dims["rows"] == 1 and head.dims["blocks_per_sm"] == 1
    blocks = grid_size(cfg.vocab_size, cfg.hidden_size, 1, 1)
    assert blocks == 132 != base.buffers["argmax_part"].shape[0]
    assert plan.buffers["argmax_part"].shape == (blocks, 2) and amax.dims["blocks"] == blocks
    with pytest.raises(TfdashError, match="trigger_first on lm_head"):
        build_plan(cfg, capacity=64, gemv_overrides={"lm_head": {"trigger_first": 1}})


def test_attention_knobs_name_their_kernels_and_refuse_what_they_cannot_do():
    """Each attention option is another kernel (its name says so) with the dims the kernel reads;
    the early merge (the default) applies where a group's partials fit in registers (1 or 2 q
    heads a kv head), and 4B's to 32B's groups (4, 5 and 8) merge late under either setting; the
    attention blocks' trigger for o_proj's launch."""
    cfg = preset("qwen3-1.7b")

    def attn(**options):
        return build_plan(cfg, capacity=64, **options).ops()["attention"][0]

    assert attn().kernel == "attn_rope_decode_me" and attn().dims["merge_early"] is True
    assert "min_blocks" not in attn().dims
    late = attn(attn_merge_early=False)
    assert late.kernel == "attn_rope_decode" and "merge_early" not in late.dims
    mb = attn(attn_min_blocks=3)
    assert mb.kernel == "attn_rope_decode_me_mb3" and mb.dims["min_blocks"] == 3
    with pytest.raises(TfdashError, match="attn_min_blocks=0 must be 1 to 16"):
        attn(attn_min_blocks=0)
    for big in ("qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"):
        on, off = (build_plan(preset(big), capacity=64, attn_merge_early=e).ops()["attention"][0] for e in (True, False))
        assert on.to_dict() == off.to_dict() and on.kernel == "attn_rope_decode" and "merge_early" not in on.dims
    # 4 q heads a kv head merged early: the plan before, the baseline tilelang-meg4
    four = build_plan(preset("qwen3-8b"), capacity=64, attn_merge_early_group=4).ops()["attention"][0]
    assert four.dims["merge_early"] is True and four.kernel == "attn_rope_decode_me"
    t = attn(attn_trigger_at="values")
    assert t.kernel == "attn_rope_decode_me_tv" and t.dims["trigger_at"] == "values"
    assert "trigger_at" not in attn().dims  # 1.7B's o_proj (8 MiB) launches at the dependency
    with pytest.raises(TfdashError, match="attn_trigger_at='scores' must be one of dependency, values"):
        attn(attn_trigger_at="scores")
    gu = build_plan(cfg, capacity=64, gemv_overrides={"gate_up": {"min_blocks": 3}}).ops()["gate_up"][0]
    assert gu.kernel == "gemv_gate_up_silu_m3" and gu.dims["min_blocks"] == 3


def test_late_norm_names_the_kernels_with_a_norm_in_front():
    """The default (early_norm) marks the kernels that norm their input (qkv_proj, gate_up,
    lm_head, the fused attention); the late-norm baseline names each apart; o_proj and down keep
    the default's kernels."""
    cfg = preset("qwen3-1.7b")
    en, late = build_plan(cfg, capacity=64), build_plan(cfg, capacity=64, early_norm=False)
    names = {op: launches[0].kernel for op, launches in late.ops().items()}
    for op in ("qkv_proj", "gate_up", "lm_head", "attention"):
        assert names[op] == en.ops()[op][0].kernel + "_ln" and en.ops()[op][0].dims["early_norm"] is True
        assert "early_norm" not in late.ops()[op][0].dims
    for op in ("o_proj", "down", "embed", "argmax"):
        assert names[op] == en.ops()[op][0].kernel and "early_norm" not in en.ops()[op][0].dims
    # the late-KV attention has no early phase to put the loads in; the unfused rope launch none either
    for off in ({"attn_kv_early": False}, {"fused_rope": False}):
        on_, off_ = (build_plan(cfg, capacity=64, early_norm=e, **off).ops()["attention"][0] for e in (True, False))
        assert "early_norm" not in on_.dims and on_.kernel == off_.kernel and on_.dims == off_.dims
    assert build_plan(cfg, **late.meta["options"]).to_dict() == late.to_dict()


def test_fenced_merge_names_its_attention_apart():
    for size, name in (("qwen3-1.7b", "attn_rope_decode_me"), ("qwen3-14b", "attn_rope_decode")):
        attn = build_plan(preset(size), capacity=64).ops()["attention"][0]
        assert attn.kernel == name and attn.dims["merge_acq_rel"] is True
        fenced = build_plan(preset(size), capacity=64, attn_merge_acq_rel=False).ops()["attention"][0]
        assert fenced.kernel == name + "_fe" and "merge_acq_rel" not in fenced.dims
    both = build_plan(preset("qwen3-1.7b"), capacity=64, attn_merge_acq_rel=False, early_norm=False)
    assert both.ops()["attention"][0].kernel == "attn_rope_decode_me_fe_ln"


@pytest.mark.parametrize("name,first", [("qwen3-0.6b", True), ("qwen3-1.7b", False), ("qwen3-4b", False),
                                        ("qwen3-8b", False), ("qwen3-14b", False), ("qwen3-32b", False)])
def test_qkv_lets_attention_launch_at_its_start_where_its_weight_is_small(name, first):
    """qkv_proj triggers attention's launch at its start where its weight is at most 8 MiB (0.6B's
    4096 x 1024 in bf16), after its grid dependency elsewhere (1.7B's is 16 MiB); either way on
    request, the other kernel named apart, and the plan rebuilt from its recorded options."""
    cfg = preset(name)
    qkv = build_plan(cfg, capacity=64).ops()["qkv_proj"][0]
    assert (cfg.qkv_size * cfg.hidden_size * 2 <= 8 << 20) == first
    assert (qkv.kernel == "gemv_qkv_t1") == first and qkv.dims.get("trigger_first") == (1 if first else None)
    other = build_plan(cfg, capacity=64, qkv_trigger_first=not first)
    assert other.ops()["qkv_proj"][0].kernel == ("gemv_qkv" if first else "gemv_qkv_t1")
    assert build_plan(cfg, **other.meta["options"]).to_dict() == other.to_dict()


def test_trigger_first_only_where_the_next_kernel_reads_nothing_its_predecessor_writes_early():
    """o_proj (next: gate_up), down (next: qkv_proj or lm_head) and qkv_proj (next: attention,
    whose early reads are weights, pos and earlier steps' K/V) may let the next kernel launch at
    their start; gate_up may not (down reads x, o_proj's output, before its grid dependency)."""
    cfg = preset("qwen3-1.7b")
    o = build_plan(cfg, capacity=64).ops()["o_proj"][0]  # the default: o_proj triggers first
    assert o.kernel == "gemv_o_residual" and o.dims["trigger_first"] == 1
    late = build_plan(cfg, capacity=64, o_proj_trigger_first=False).ops()["o_proj"][0]
    assert late.kernel == "gemv_o_residual_tlate" and "trigger_first" not in late.dims
    plan = build_plan(cfg, capacity=64, gemv_overrides={"down": {"trigger_first": 1}})
    assert plan.ops()["down"][0].kernel == "gemv_down_residual_t1"
    plan = build_plan(preset("qwen3-4b"), capacity=64, gemv_overrides={"qkv_proj": {"trigger_first": 1}})
    assert plan.ops()["qkv_proj"][0].kernel == "gemv_qkv_t1"
    with pytest.raises(TfdashError, match="trigger_first on gate_up: .*allowed on o_proj, down, qkv_proj"):
        build_plan(cfg, capacity=64, gemv_overrides={"gate_up": {"trigger_first": 1}})


# -- the torch-compile peer -----------------------------------------------------------------
def test_compiled_step_decodes_the_eager_steps_tokens(one_thread):
    """compile_step swaps the launch list for one traced function of all of them; traced by
    dynamo (the eager backend: no inductor build on CI), it decodes the eager tokens exactly."""
    from tfdash.engine import load_engine
    from tfdash.engine.compiled import compile_step
    from tfdash.engine.runtime import Runtime

    eng = load_engine(model="qwen3-tiny", device="cpu")
    weights = {n: eng.runtime.bufs[n] for n, s in eng.plan.buffers.items() if s.kind == "weight"}
    ref, rt = Runtime(eng.plan, weights, "cpu"), Runtime(eng.plan, weights, "cpu")
    compile_step(rt, mode=None, fullgraph=False, backend="eager")
    assert len(rt.launch_fns) == 1 and len(rt.eager_fns) == len(eng.plan)
    ids = [1, 2, 3]
    ref.reset(ids)
    rt.reset(ids)
    a, b = [], []
    for _ in range(8):
        ref.step()
        rt.step()
        a.append(int(ref.bufs["tok"]))
        b.append(int(rt.bufs["tok"]))
    assert a == b
    rt.run_launch(0)  # one launch alone still runs eagerly


def test_bench_lists_torch_compile_as_a_default_peer():
    from tfdash.profiling.bench import BACKENDS, DEFAULT_BACKENDS

    assert "torch-compile" in BACKENDS and DEFAULT_BACKENDS.split(",")[:2] == ["tilelang-graph", "torch-compile"]


def test_bench_gemv_variants_parse_and_refuse_in_one_line():
    from tfdash.profiling.variants import gemv_variant

    name, options = gemv_variant("down:seg=8,blocks_per_sm=1")
    assert name == "tilelang[down:seg=8,blocks_per_sm=1]"
    assert options == {"gemv_overrides": {"down": {"seg": 8, "blocks_per_sm": 1}}}
    plan = build_plan(preset("qwen3-8b"), capacity=64, **options)
    assert plan.ops()["down"][0].dims["seg"] == 8
    name, options = gemv_variant("o_proj:blocks_per_sm=1+down:seg=8")  # two ops in one variant
    assert options == {"gemv_overrides": {"o_proj": {"blocks_per_sm": 1}, "down": {"seg": 8}}}
    plan = build_plan(preset("qwen3-8b"), capacity=64, **options)
    assert plan.ops()["down"][0].dims["seg"] == 8 and plan.ops()["o_proj"][0].dims["blocks_per_sm"] == 1
    for bad in ("embed:seg=2", "down", "down:warps=2", "down:seg=0", "down:seg=x", "down:seg=8+down:seg=6",
                "down:seg=8+", "down:seg=8+gate:seg=2"):
        with pytest.raises(TfdashError, match="--gemv"):
            gemv_variant(bad)
    r = run_tfdash("bench", "--gemv", "down:seg=zero", timeout=120)
    assert r.rc != 0
    assert_one_line_error(r.stderr, "--gemv", "seg=zero")


def test_attention_grid_stops_growing_with_the_capacity():
    """Programs per kv head are capped; every block of the cache is still some program's, once."""
    from tfdash.kernels.splitkv import SPLIT_CAP, grid_splits

    assert grid_splits(32) == (32, 1)  # up to the cap: one block a program
    assert grid_splits(33) == (32, 2)  # a 2112-position cache: block 32 is program 0's second
    assert grid_splits(64) == (32, 2)  # the dashboard's 4096: no more programs than 2112's
    assert grid_splits(33, 40) == (33, 1)
    for S in range(1, 700):
        programs, rounds = grid_splits(S)
        assert programs <= SPLIT_CAP and programs * rounds >= S > programs * (rounds - 1)
        covered = sorted(p + r * programs for p in range(programs) for r in range(rounds) if p + r * programs < S)
        assert covered == list(range(S))


def test_attention_split_cap_is_a_plan_variant():
    from tfdash.profiling.variants import PLAN_VARIANTS

    plan = build_plan(preset("qwen3-1.7b"), capacity=2112, **PLAN_VARIANTS["tilelang-sc24"])
    [kernel] = {x.kernel for x in plan.launches if x.family == "attention"}
    assert kernel == "attn_rope_decode_sc24_me" and plan.ops()["attention"][0].dims["split_cap"] == 24
    with pytest.raises(TfdashError, match="attn_split_cap"):
        build_plan(preset("qwen3-1.7b"), attn_split_cap=0)


def test_bench_also_capacity_refuses_in_one_line():
    r = run_tfdash("bench", "--also-capacity", "0", timeout=120)
    assert r.rc != 0
    assert_one_line_error(r.stderr, "--also-capacity 0")


def test_the_split_cap_knob_sets_the_engine_plan(monkeypatch):
    from tfdash.engine import plan_for

    cfg = preset("qwen3-1.7b")
    [default] = {x.kernel for x in plan_for(cfg, "bfloat16", 2112).launches if x.family == "attention"}
    assert default == "attn_rope_decode_me"  # the default cap keeps the kernel's name
    monkeypatch.setenv("TFDASH_ATTN_SPLIT_CAP", "16")
    [capped] = [x for x in plan_for(cfg, "bfloat16", 2112).launches if x.family == "attention"][:1]
    assert capped.kernel == "attn_rope_decode_sc16_me" and capped.dims["split_cap"] == 16
