"""Static analysis of a decode step: the cost model against hand counts and independent parameter
counts, the report's arithmetic, and the `tfdash analyze` command.

Hand counts are written out below as arithmetic on the shapes, from the formula in words; none
of them calls the cost code they check.
"""

import json
import re

import pytest
from conftest import assert_one_line_error, run_tfdash

from tfdash.cli import main
from tfdash.engine.checkpoint import expected_tensors
from tfdash.engine.config import PRESETS
from tfdash.engine.plan import build_plan
from tfdash.kernels.base import family
from tfdash.profiling.analyze import SCHEMA, analyze, render_text, sweep, to_json
from tfdash.profiling.targets import H200, Target, resolve_target

Q17 = PRESETS["qwen3-1.7b"]
# Qwen3-1.7B: 28 layers, 8 KV heads of 128 dims, bf16. One cached position of K and V, all layers:
KV_BYTES_PER_POSITION = 2 * 28 * 8 * 128 * 2  # = 114,688 B (FACTS.md)
# Launches per step: embed, 5 per layer (qkv, attention with q/k norm + RoPE fused in, o, gate_up,
# down), lm_head, argmax; the unfused baseline has a 6th per layer (qk_norm_rope).
LAUNCHES_17 = 1 + 5 * 28 + 2  # = 143


@pytest.fixture(scope="module")
def plan17():
    return build_plan(Q17, dtype="bfloat16", capacity=8192)


@pytest.fixture(scope="module")
def plan17_unfused():
    return build_plan(Q17, dtype="bfloat16", capacity=8192, fused_rope=False)


# -- what a step must read -----------------------------------------------------------------
def test_weight_bytes_at_ctx0_are_the_parameters_a_step_needs(plan17, plan17_unfused):
    """Every layer weight, every norm, the tied lm_head once, and one embedding row."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    a = analyze(plan17, H200, ctx_len=0)
    V, H = Q17.vocab_size, Q17.hidden_size

    # 1. From the checkpoint inventory: every tensor, minus the embedding table, plus one row of
    #    it, plus the lm_head (= the embedding matrix, tied) read in full once.
    inv = expected_tensors(Q17)
    assert "lm_head.weight" not in inv
    params = sum(torch.Size(s).numel() for s in inv.values())
    must = params - V * H + H + V * H
    assert a.read_by_kind("weight") == must * 2

    # 2. From transformers' own module, on the meta device (no memory): the same number.
    hf = Qwen3Config(hidden_size=H, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                     head_dim=128, intermediate_size=6144, vocab_size=V, tie_word_embeddings=True)
    with torch.device("meta"):
        m = Qwen3ForCausalLM(hf)
    named = dict(m.named_parameters())  # tied: the embedding appears once
    total = sum(p.numel() for p in named.values())
    embed = named["model.embed_tokens.weight"].numel()
    lm_head = m.lm_head.weight.numel()
    assert a.read_by_kind("weight") == (total - embed + H + lm_head) * 2
    # FACTS.md: about 3.44 GB a step (2.82 GB of layers + 0.62 GB of tied lm_head).
    assert round(a.read_by_kind("weight") / 1e9, 2) == 3.44
    # No weight is written; the step's own K/V position is written once per layer.
    assert a.written_by_kind("weight") == 0
    assert a.written_by_kind("cache") == KV_BYTES_PER_POSITION
    # Fusing RoPE into attention moves the q/k norm reads; it does not change them.
    assert analyze(plan17_unfused, H200, 0).read_by_kind("weight") == a.read_by_kind("weight")


@pytest.mark.parametrize("c", [1, 17, 1000, 4095, 8191])
def test_kv_read_grows_by_exactly_the_cache_of_c_positions(plan17, plan17_unfused, c):
    for plan in (plan17, plan17_unfused):
        a0, ac = analyze(plan, H200, 0), analyze(plan, H200, c)
        assert ac.read_by_kind("cache") - a0.read_by_kind("cache") == 2 * 28 * c * 8 * 128 * 2
        assert ac.read_by_kind("weight") == a0.read_by_kind("weight")
        assert ac.bytes_read - a0.bytes_read == c * KV_BYTES_PER_POSITION  # nothing else grows
        assert ac.written_by_kind("cache") == KV_BYTES_PER_POSITION  # this step's K and V, once
    # At ctx_len 0 the fused attention keeps the step's own k and v on chip: no cache read; the
    # unfused one reads back the position the rope launch just appended.
    assert analyze(plan17, H200, 0).read_by_kind("cache") == 0
    assert analyze(plan17_unfused, H200, 0).read_by_kind("cache") == KV_BYTES_PER_POSITION


def test_kv_growth_in_f32_and_another_shape():
    cfg = PRESETS["qwen3-tiny"]  # 4 layers, 2 KV heads of 64 dims
    plan = build_plan(cfg, dtype="float32", capacity=512)
    a0 = analyze(plan, H200, 0)
    for c in (1, 100, 511):
        assert analyze(plan, H200, c).read_by_kind("cache") - a0.read_by_kind("cache") == 2 * 4 * c * 2 * 64 * 4


# -- each family against a hand count at two shapes ------------------------------------------
def check(cost, *, flops, special, read, written, scratch=0):
    assert dict(cost.flops) == flops
    assert dict(cost.special) == special
    assert cost.bytes_read == read
    assert cost.bytes_written == written
    assert cost.scratch == scratch


def gemv_dims(N, K, prologue, epilogue, dtype, out_dtype):
    return dict(N=N, K=K, prologue=prologue, epilogue=epilogue, dtype=dtype, out_dtype=out_dtype, eps=1e-6)


def test_gemv_rmsnorm_store():
    cost = family("gemv").cost
    # Qwen3-1.7B qkv_proj, bf16: W 4096x2048 read once; x (2048) and norm_w (2048) read; out
    # (4096) written. 2 flops per weight in bf16; the norm costs square+sum+2 scales = 4K in f32
    # and one rsqrt.
    check(cost(gemv_dims(4096, 2048, "rmsnorm", "store", "bfloat16", "bfloat16"), 0),
          flops={"bf16": 2 * 4096 * 2048, "f32": 4 * 2048}, special={"rsqrt": 1},
          read=4096 * 2048 * 2 + 2048 * 2 + 2048 * 2, written=4096 * 2)
    # A small f32 shape: the GEMV's own flops are f32 too, so they add up under one key.
    check(cost(gemv_dims(96, 64, "rmsnorm", "store", "float32", "float32"), 0),
          flops={"f32": 2 * 96 * 64 + 4 * 64}, special={"rsqrt": 1},
          read=96 * 64 * 4 + 64 * 4 + 64 * 4, written=96 * 4)


def test_gemv_lm_head_writes_f32_logits():
    cost = family("gemv").cost
    # Tied lm_head of Qwen3-1.7B: the whole 151936x2048 bf16 embedding, f32 logits out.
    c = cost(gemv_dims(151936, 2048, "rmsnorm", "store", "bfloat16", "float32"), 0)
    check(c, flops={"bf16": 2 * 151936 * 2048, "f32": 4 * 2048}, special={"rsqrt": 1},
          read=151936 * 2048 * 2 + 2048 * 2 + 2048 * 2, written=151936 * 4)
    check(cost(gemv_dims(500, 96, "rmsnorm", "store", "float16", "float32"), 0),
          flops={"f16": 2 * 500 * 96, "f32": 4 * 96}, special={"rsqrt": 1},
          read=500 * 96 * 2 + 96 * 2 + 96 * 2, written=500 * 4)


def test_gemv_none_residual():
    cost = family("gemv").cost
    # o_proj: x read, W read, out read and written back (out += W @ x), one f32 add per row.
    check(cost(gemv_dims(2048, 2048, "none", "residual", "bfloat16", "bfloat16"), 0),
          flops={"bf16": 2 * 2048 * 2048, "f32": 2048}, special={},
          read=2048 * 2 + 2048 * 2048 * 2 + 2048 * 2, written=2048 * 2)
    check(cost(gemv_dims(96, 256, "none", "residual", "float32", "float32"), 0),
          flops={"f32": 2 * 96 * 256 + 96}, special={},
          read=256 * 4 + 96 * 256 * 4 + 96 * 4, written=96 * 4)


def test_gemv_none_store():
    cost = family("gemv").cost
    # No prologue, no epilogue arithmetic: nothing but the GEMV in the model dtype.
    check(cost(gemv_dims(64, 96, "none", "store", "float16", "float16"), 0),
          flops={"f16": 2 * 64 * 96}, special={}, read=96 * 2 + 64 * 96 * 2, written=64 * 2)
    check(cost(gemv_dims(2048, 1024, "none", "store", "bfloat16", "bfloat16"), 0),
          flops={"bf16": 2 * 2048 * 1024}, special={}, read=1024 * 2 + 2048 * 1024 * 2, written=2048 * 2)


def test_gemv_silu_mul_residual():
    cost = family("gemv").cost
    # down: x is gate|up (2K entries); silu(g)*u costs 4K f32 flops and K exps; residual add N.
    check(cost(gemv_dims(2048, 6144, "silu_mul", "residual", "bfloat16", "bfloat16"), 0),
          flops={"bf16": 2 * 2048 * 6144, "f32": 4 * 6144 + 2048}, special={"exp": 6144},
          read=2 * 6144 * 2 + 2048 * 6144 * 2 + 2048 * 2, written=2048 * 2)
    check(cost(gemv_dims(64, 160, "silu_mul", "residual", "float32", "float32"), 0),
          flops={"f32": 2 * 64 * 160 + 4 * 160 + 64}, special={"exp": 160},
          read=2 * 160 * 4 + 64 * 160 * 4 + 64 * 4, written=64 * 4)


def test_embed():
    cost = family("embed").cost
    # One row of the table (not the table), the token id (int32), the row written out.
    c = cost(dict(H=2048, V=151936, dtype="bfloat16"), 0)
    check(c, flops={}, special={}, read=4 + 2048 * 2, written=2048 * 2)
    assert c.read_by_kind("weight") == 2048 * 2
    check(cost(dict(H=64, V=300, dtype="float32"), 5), flops={}, special={}, read=4 + 64 * 4, written=64 * 4)


def test_rope():
    cost = family("rope").cost
    # Qwen3-1.7B: read q|k|v (16+8+8 heads of 128), q_norm and k_norm (128 each), one cos row and
    # one sin row (64 each), pos; write q (16x128) and one K and one V position (8x128 each).
    # Flops per normed head: norm 4D + rope 3D = 7D, over the 16+8 q and k heads; one rsqrt each.
    dims = dict(n_heads=16, n_kv_heads=8, head_dim=128, capacity=4096, block=64, splits=64,
                dtype="bfloat16", eps=1e-6)
    c = cost(dims, 1234)
    check(c, flops={"f32": (16 + 8) * 7 * 128}, special={"rsqrt": 16 + 8},
          read=(16 + 8 + 8) * 128 * 2 + 128 * 2 + 128 * 2 + 64 * 2 + 64 * 2 + 4,
          written=16 * 128 * 2 + 8 * 128 * 2 + 8 * 128 * 2)
    assert c.written_by_kind("cache") == 2 * 8 * 128 * 2 and c.read_by_kind("cache") == 0
    assert c.read_by_kind("table") == 2 * 64 * 2
    dims = dict(n_heads=8, n_kv_heads=2, head_dim=32, capacity=100, block=64, splits=2, dtype="float32", eps=1e-5)
    check(cost(dims, 0), flops={"f32": (8 + 2) * 7 * 32}, special={"rsqrt": 10},
          read=12 * 32 * 4 + 32 * 4 + 32 * 4 + 16 * 4 + 16 * 4 + 4, written=8 * 32 * 4 + 2 * 32 * 4 + 2 * 32 * 4)


def test_attention():
    cost = family("attention").cost
    dims = dict(n_heads=16, n_kv_heads=8, head_dim=128, capacity=4096, block=64, splits=64, dtype="bfloat16")
    # ctx_len 1000: 1001 positions attended. K and V of 8 heads x 1001 positions x 128 read once;
    # q read, out written. Flops: q.k and p.v are 2*128 each per (head, position) = 4*16*1001*128,
    # plus max/sub/sum/scale 4 per (head, position); one exp per (head, position). Scratch: the
    # f32 partials (128 outputs + max + sum per head and split) written then read, 16 splits.
    n = 1001
    check(cost(dims, 1000), flops={"f32": 4 * 16 * n * 128 + 4 * 16 * n}, special={"exp": 16 * n},
          read=16 * 128 * 2 + 2 * n * 8 * 128 * 2 + 4, written=16 * 128 * 2,
          scratch=2 * 16 * 16 * (128 + 2) * 4)
    # ctx_len 0: only the step's own position.
    check(cost(dims, 0), flops={"f32": 4 * 16 * 128 + 4 * 16}, special={"exp": 16},
          read=16 * 128 * 2 + 2 * 8 * 128 * 2 + 4, written=16 * 128 * 2, scratch=2 * 16 * 1 * 130 * 4)
    dims = dict(n_heads=8, n_kv_heads=2, head_dim=32, capacity=100, block=64, splits=2, dtype="float32")
    n = 64  # ctx_len 63: exactly one block
    check(cost(dims, 63), flops={"f32": 4 * 8 * n * 32 + 4 * 8 * n}, special={"exp": 8 * n},
          read=8 * 32 * 4 + 2 * n * 2 * 32 * 4 + 4, written=8 * 32 * 4, scratch=2 * 8 * 1 * 34 * 4)


def test_attention_with_fused_rope():
    cost = family("attention").cost
    # The rope launch's work done inside attention: q never leaves the chip, and this step's k and
    # v are appended (written) but not read back: the cache reads only the ctx_len earlier
    # positions. Flops and special ops are the two launches' together.
    dims = dict(n_heads=16, n_kv_heads=8, head_dim=128, capacity=4096, block=64, splits=64, dtype="bfloat16",
                eps=1e-6, fused_rope=True)
    n = 1001  # ctx_len 1000
    c = cost(dims, 1000)
    check(c, flops={"f32": 4 * 16 * n * 128 + 4 * 16 * n + (16 + 8) * 7 * 128},
          special={"exp": 16 * n, "rsqrt": 16 + 8},
          read=(16 + 8 + 8) * 128 * 2 + 128 * 2 + 128 * 2 + 64 * 2 + 64 * 2 + 4 + 2 * 1000 * 8 * 128 * 2,
          written=2 * 8 * 128 * 2 + 16 * 128 * 2, scratch=2 * 16 * 16 * (128 + 2) * 4)
    assert c.read_by_kind("cache") == 2 * 1000 * 8 * 128 * 2
    assert c.written_by_kind("cache") == 2 * 8 * 128 * 2
    assert c.read_by_kind("weight") == 2 * 128 * 2  # q_norm and k_norm
    dims = dict(n_heads=8, n_kv_heads=2, head_dim=32, capacity=100, block=64, splits=2, dtype="float32",
                eps=1e-5, fused_rope=True)
    n = 64  # ctx_len 63
    check(cost(dims, 63), flops={"f32": 4 * 8 * n * 32 + 4 * 8 * n + (8 + 2) * 7 * 32},
          special={"exp": 8 * n, "rsqrt": 8 + 2},
          read=12 * 32 * 4 + 32 * 4 + 32 * 4 + 16 * 4 + 16 * 4 + 4 + 2 * 63 * 2 * 32 * 4,
          written=2 * 2 * 32 * 4 + 8 * 32 * 4, scratch=2 * 8 * 1 * 34 * 4)


def test_argmax():
    cost = family("argmax").cost
    # The lm_head leaves one (max, index) f32 pair per block; argmax reads those pairs (one
    # compare each), the prompt slot, prompt_len and pos; writes tok, out_tokens[pos] and pos.
    check(cost(dict(V=151936, capacity=4096, blocks=264), 0), flops={"f32": 264}, special={},
          read=264 * 2 * 4 + 4 + 4 + 4, written=4 + 4 + 4)
    check(cost(dict(V=300, capacity=64, blocks=3), 7), flops={"f32": 3}, special={},
          read=3 * 2 * 4 + 12, written=12)


# -- the report's arithmetic -------------------------------------------------------------------
LINE = re.compile(r"^\[(\d+)\] (\S+) = \w+\(.*\)  # compute-cost flops=(\S+)(?: special=(\S+))?; "
                  r"traffic gmem:r(\d+)/w(\d+)(?: operands=(\S+))?; roofline ideal-ns=(\d+) bound-by=(memory|compute)"
                  r"(?:; tilelang grid=(\S+) threads=(\d+) work=(\S+) rounds=(\d+) last-busy=([\d.]+))?$")


def kv(text):
    return {} if text in (None, "-") else {k: int(v) for k, v in (p.split(":") for p in text.split(","))}


def header_value(text, pattern):
    m = re.search(pattern, text, re.M)
    assert m, pattern
    return m.group(1)


@pytest.mark.parametrize("ctx", [0, 3000])
def test_text_lines_sum_to_header(plan17, ctx):
    a = analyze(plan17, H200, ctx)
    text = render_text(a, operands=True)
    lines = [line for line in text.splitlines() if line.startswith("[")]
    assert len(lines) == len(plan17) == LAUNCHES_17
    flops, special, read, written, ideal = {}, {}, 0, 0, 0
    for i, line in enumerate(lines):
        m = LINE.match(line)
        assert m, line
        assert int(m.group(1)) == i and m.group(2) == plan17.launches[i].role
        for k, v in kv(m.group(3)).items():
            flops[k] = flops.get(k, 0) + v
        for k, v in kv(m.group(4)).items():
            special[k] = special.get(k, 0) + v
        r, w = int(m.group(5)), int(m.group(6))
        read, written, ideal = read + r, written + w, ideal + int(m.group(8))
        ops = [re.fullmatch(r"(\w+):r(\d+)/w(\d+)", o) for o in m.group(7).split(",")]
        assert sum(int(o.group(2)) for o in ops) == r and sum(int(o.group(3)) for o in ops) == w
    assert kv(header_value(text, r"^# compute-cost flops=(\S+)")) == flops
    assert kv(header_value(text, r"^# compute-cost .* special=(\S+)")) == special
    assert int(header_value(text, r"^# traffic gmem:r(\d+)/")) == read
    assert int(header_value(text, r"^# traffic gmem:r\d+/w(\d+)")) == written
    # Each line's ideal-ns is rounded to 1 ns: the sum may drift by half a ns per line.
    assert abs(int(header_value(text, r"ideal-ns=(\d+) floor-ns")) - ideal) <= len(lines) / 2
    # By kind: weight + cache + activation + table = everything.
    kinds = dict(re.findall(r" (\w+):r(\d+)/w\d+", text.splitlines()[2]))
    assert set(kinds) == {"gmem", "weight", "cache", "activation", "table"}
    kinds.pop("gmem")
    assert sum(int(v) for v in kinds.values()) == read
    assert int(kinds["cache"]) == ctx * KV_BYTES_PER_POSITION  # fused: the step's own k/v stay on chip


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_json_launches_sum_to_totals(plan17, plan17_unfused, fused):
    plan = plan17 if fused else plan17_unfused
    a = analyze(plan, H200, 2047)
    j = json.loads(json.dumps(to_json(a)))
    t, ls = j["totals"], j["launches"]
    assert j["schema"] == SCHEMA == "tfdash.analysis/1"
    assert (j["ctx_len"], j["capacity"], j["dtype"]) == (2047, 8192, "bfloat16")
    assert t["traffic"]["read"] == sum(x["read"] for x in ls)
    assert t["traffic"]["written"] == sum(x["written"] for x in ls)
    for kind, rw in t["traffic"]["by_kind"].items():
        assert rw["read"] == sum(o["read"] for x in ls for o in x["operands"] if o["kind"] == kind), kind
        assert rw["written"] == sum(o["written"] for x in ls for o in x["operands"] if o["kind"] == kind), kind
    assert sum(v["read"] for v in t["traffic"]["by_kind"].values()) == t["traffic"]["read"]
    for key in ("flops", "special"):
        summed = {}
        for x in ls:
            for k, v in x[key].items():
                summed[k] = summed.get(k, 0) + v
        assert t[key] == summed
    assert t["scratch"] == sum(x["scratch"] for x in ls)
    assert t["ideal_ns"] == pytest.approx(sum(x["ideal_ns"] for x in ls), rel=1e-12)
    assert t["floor_ns"] == pytest.approx((t["traffic"]["read"] + t["traffic"]["written"]) / 4.8e12 * 1e9)
    assert t["ideal_ns"] >= t["floor_ns"] * (1 - 1e-12)
    for x in ls:
        assert x["read"] == sum(o["read"] for o in x["operands"])
        assert x["ideal_ns"] == max(x["memory_ns"], x["compute_ns"])
        assert x["bound_by"] == ("memory" if x["memory_ns"] >= x["compute_ns"] else "compute")
        assert all(o["buffer"] in plan.buffers for o in x["operands"])
    # Batch-1 decode is memory-bound, launch by launch.
    assert t["bound_by"] == "memory" and {x["bound_by"] for x in ls} == {"memory"}


def test_sweep_is_analyze_at_each_ctx(plan17):
    rows = sweep(plan17, H200, 0, 4096, 1024)
    assert [r.ctx_len for r in rows] == [0, 1024, 2048, 3072, 4096]
    assert [r.bytes for r in rows] == [analyze(plan17, H200, c).bytes for c in (0, 1024, 2048, 3072, 4096)]


# -- the command -----------------------------------------------------------------------------
def analyze_cli(capsys, *argv):
    capsys.readouterr()  # drop what fixtures printed
    try:
        rc = main(["analyze", *argv])
    except SystemExit as e:  # the parser's own mistakes exit from it, as argparse's do
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_default_and_dim(capsys):
    rc, out, err = analyze_cli(capsys)
    assert rc == 0, err
    first = out.splitlines()[0]
    # the engine's plan: the int8 head's pick beside build_plan's launches
    assert "model=qwen3-1.7b" in first and "ctx_len=0" in first and f"launches={LAUNCHES_17 + 1}" in first
    assert "capacity=40960" in first  # default: max_position_embeddings
    rc, out, _ = analyze_cli(capsys, "--dim", "ctx_len=1024")
    assert rc == 0
    assert "ctx_len=1024" in out.splitlines()[0]
    assert f"cache:r{1024 * KV_BYTES_PER_POSITION}/w{KV_BYTES_PER_POSITION} " in out
    assert "operands=" not in out
    rc, out, _ = analyze_cli(capsys, "--dim", "ctx_len=1024", "--operands")
    assert "operands=x:r4096/w0,w:r16777216/w0,norm_w:r4096/w0,out:r0/w8192" in out  # L0.qkv_proj
    assert f"k_cache:r{1024 * 8 * 128 * 2}/w{8 * 128 * 2}" in out  # L0.attention: earlier positions in, own out


def test_cli_sweep(capsys):
    rc, out, err = analyze_cli(capsys, "--sweep", "ctx_len=0:8192:1024")
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [int(r[0]) for r in rows] == list(range(0, 8193, 1024))
    reads = [int(r[1]) for r in rows]
    kv_reads = [int(r[3]) for r in rows]
    assert kv_reads == [c * KV_BYTES_PER_POSITION for c in range(0, 8193, 1024)]
    assert all(b - a == 1024 * KV_BYTES_PER_POSITION for a, b in zip(reads, reads[1:]))
    assert len({r[2] for r in rows}) == 1  # written bytes do not depend on ctx_len
    ceilings = [float(r[6]) for r in rows]
    assert ceilings == sorted(ceilings, reverse=True)
    assert all(r[7] == "memory" for r in rows)


def test_cli_sweep_ends_at_b_off_the_step_grid(capsys):
    """ctx_len=0:10:4 stopped at 8, though the help reads "A, A+STEP, ..., B": B, the length asked
    about, is the last point, on the grid or not; on it, it is not priced twice."""
    rc, out, err = analyze_cli(capsys, "--model", "qwen3-tiny", "--sweep", "ctx_len=0:10:4")
    assert rc == 0, err
    assert [int(line.split()[0]) for line in out.splitlines()[2:]] == [0, 4, 8, 10]
    rc, out, err = analyze_cli(capsys, "--model", "qwen3-tiny", "--sweep", "ctx_len=0:8:4")
    assert [int(line.split()[0]) for line in out.splitlines()[2:]] == [0, 4, 8]


def test_cli_json(capsys, tmp_path):
    out_path = tmp_path / "sub" / "a.json"
    rc, out, err = analyze_cli(capsys, "--dim", "ctx_len=512", "--json", str(out_path))
    assert rc == 0, err
    assert f"wrote {out_path}" in err
    j = json.loads(out_path.read_text())
    assert set(j) == {"schema", "target", "model", "dtype", "capacity", "ctx_len", "totals", "launches"}
    assert j["schema"] == "tfdash.analysis/1" and j["ctx_len"] == 512
    assert set(j["totals"]) == {"flops", "special", "traffic", "scratch", "footprint", "ideal_ns", "floor_ns",
                                "bound_by"}
    assert set(j["totals"]["traffic"]) == {"read", "written", "by_kind"}
    assert set(j["totals"]["traffic"]["by_kind"]) == {"weight", "cache", "activation", "table"}
    assert set(j["totals"]["footprint"]) == {"gmem", "smem"}
    assert set(j["launches"][0]) == {"index", "role", "layer", "family", "kernel", "dims", "args", "flops",
                                     "special", "read", "written", "operands", "smem", "scratch", "memory_ns",
                                     "compute_ns", "ideal_ns", "bound_by", "geometry"}
    assert set(j["launches"][1]["operands"][0]) == {"role", "buffer", "kind", "read", "written"}
    assert j["model"]["name"] == "qwen3-1.7b" and j["target"]["name"] == "h200"
    # The text on stdout and the JSON agree.
    assert f"gmem:r{j['totals']['traffic']['read']}/w{j['totals']['traffic']['written']}" in out
    # A sweep writes one report per ctx_len.
    rc, _, _ = analyze_cli(capsys, "--sweep", "ctx_len=0:2048:1024", "--json", str(out_path))
    j = json.loads(out_path.read_text())
    assert j["schema"] == "tfdash.analysis-sweep/1"
    assert [r["ctx_len"] for r in j["reports"]] == [0, 1024, 2048]


@pytest.mark.parametrize("what", [["--dim", "ctx_len=7"], ["--sweep", "ctx_len=0:16:8"]])
def test_cli_json_into_a_new_folder_says_the_folder_was_made(capsys, tmp_path, what):
    """`analyze --json no/such/a.json` made the folders and said only "# wrote ...": a typo in a folder's
    name went unseen. It says so as `tfdash diff` does; a sweep, whose file is written as it goes, too."""
    out_path = tmp_path / "no" / "such" / "a.json"
    rc, _, err = analyze_cli(capsys, "--model", "qwen3-tiny", *what, "--json", str(out_path))
    assert rc == 0 and out_path.is_file(), err
    assert err.splitlines() == [f"# wrote {out_path} (its folder {out_path.parent} was created)"]
    rc, _, err = analyze_cli(capsys, "--model", "qwen3-tiny", *what, "--json", str(out_path))  # there now: replaced
    assert rc == 0 and err.splitlines() == [f"# wrote {out_path} (replacing the file there)"]


def test_cli_json_subprocess(tmp_path):
    out_path = tmp_path / "a.json"
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--dim", "ctx_len=7", "--json", str(out_path))
    assert r.rc == 0, r.stderr
    j = json.loads(out_path.read_text())
    assert j["model"]["name"] == "qwen3-tiny" and j["ctx_len"] == 7 and len(j["launches"]) == 1 + 5 * 4 + 2


def test_cli_target_file_scales_ideal_ns(capsys, tmp_path):
    probe = {**H200.to_dict(), "name": "h200-probe", "bandwidth": 4.27e12, "source": "probe d2d copy"}
    f = tmp_path / "target.json"
    f.write_text(json.dumps(probe))
    assert resolve_target(str(f)) == Target(**probe)
    paths = {}
    for name, spec in (("h200", "h200"), ("probe", str(f))):
        paths[name] = tmp_path / f"{name}.json"
        rc, out, err = analyze_cli(capsys, "--dim", "ctx_len=2048", "--target", spec, "--json", str(paths[name]))
        assert rc == 0, err
    assert "4.27 TB/s probe d2d copy" in out and "target=h200-probe" in out
    a, b = (json.loads(paths[n].read_text()) for n in ("h200", "probe"))
    ratio = 4.8e12 / 4.27e12
    assert b["totals"]["floor_ns"] == pytest.approx(a["totals"]["floor_ns"] * ratio, rel=1e-12)
    assert b["totals"]["ideal_ns"] == pytest.approx(a["totals"]["ideal_ns"] * ratio, rel=1e-12)
    for x, y in zip(a["launches"], b["launches"]):
        assert y["memory_ns"] == pytest.approx(x["memory_ns"] * ratio, rel=1e-12)
        assert y["compute_ns"] == x["compute_ns"]  # same compute peaks
        assert y["ideal_ns"] == pytest.approx(x["ideal_ns"] * ratio, rel=1e-12)
    # A minimal target file: a name and a bandwidth (no compute peaks: everything memory-bound).
    f.write_text(json.dumps({"name": "bare", "bandwidth": 4.27e12}))
    rc, out, _ = analyze_cli(capsys, "--target", str(f), "--json", str(paths["probe"]))
    c = json.loads(paths["probe"].read_text())
    assert c["totals"]["ideal_ns"] == pytest.approx(c["totals"]["floor_ns"], rel=1e-12)


@pytest.mark.parametrize("argv, needles", [
    (["--dim", "ctx_len=5000", "--capacity", "4096"], ["ctx_len=5000", "capacity of 4096"]),
    (["--dim", "ctx_len=4096", "--capacity", "4096"], ["ctx_len=4096", "capacity of 4096"]),
    (["--dim", "ctx_len=40960"], ["ctx_len=40960", "max_position_embeddings=40960"]),
    (["--capacity", "50000"], ["50000", "max_position_embeddings=40960"]),
    (["--sweep", "ctx_len=0:8192:1024", "--capacity", "4096"], ["ctx_len=8192", "capacity of 4096"]),
    (["--sweep", "ctx_len=0:100"], ["A:B:STEP"]),
    (["--sweep", "ctx_len=0:100:0"], ["step 0"]),
    (["--sweep", "ctx_len=2048:0:1024"], ["end 0 is before the start 2048"]),
    (["--capacity", "0"], ["capacity=0"]),
    (["--dim", "ctx_len=lots"], ["'lots' is not an integer"]),
    (["--target", "nosuch"], ["unknown target 'nosuch'"]),
    (["--model", "qwen3-9000b"], ["qwen3-9000b"]),
    (["--target", ""], ["--target '' is empty"]),
    (["--ckpt", ""], ["--ckpt: '' is empty"]),
    (["--dim", "foo=3"], ["expected ctx_len=N"]),
    (["--sweep", "ctx_len=0:x:1"], ["'x' is not an integer"]),
    (["--sweep", "ctx_len=0:4:1", "--operands"], ["--operands splits the launches of one step"]),
])
def test_cli_refusals_are_one_line(capsys, argv, needles):
    """Each is an argument's mistake, said as the parser says its own: `--dim foo=3` began `tfdash
    analyze: error:` and named the help, `--sweep ctx_len=0:10` began `tfdash: error:`."""
    rc, out, err = analyze_cli(capsys, *argv)
    assert rc == 2
    line = assert_one_line_error(err, *needles)
    assert line.startswith("tfdash analyze: error: ") and line.endswith(" (see tfdash analyze --help)"), line


def test_cli_bad_target_files(capsys, tmp_path):
    f = tmp_path / "t.json"
    for content, needle in ((json.dumps({"name": "x", "bandwidth": 0}), "bandwidth must be a positive"),
                            (json.dumps({"name": "x", "bandwidth": 1e12, "colour": "red"}), "unknown field(s) colour"),
                            (json.dumps({"bandwidth": 1e12}), "t.json"),
                            (json.dumps({"name": "x", "bandwidth": 1e12, "peak_flops": [1]}), "peak_flops"),
                            (json.dumps({"name": "x", "bandwidth": "fast"}), "bandwidth"),
                            (json.dumps({"name": "x", "bandwidth": 1e12, "special_ops": "x"}), "special_ops"),
                            ("[1]", "expected a JSON object"),
                            ("{nope", "cannot read JSON")):
        f.write_text(content)
        rc, out, err = analyze_cli(capsys, "--target", str(f))
        assert rc == 2, content
        assert_one_line_error(err, needle)


@pytest.mark.parametrize("flag, spec, said", [("--dim", "ctx=5", "--dim: expected ctx_len=N, got 'ctx=5'"),
                                             # said ctx_len=VALUE, --dim's form, for --sweep too
                                             ("--sweep", "foo=1:2:1", "--sweep: expected ctx_len=A:B:STEP, got 'foo=1:2:1'")])
def test_cli_dim_spelling_is_checked(capsys, flag, spec, said):
    with pytest.raises(SystemExit) as e:
        main(["analyze", flag, spec])
    assert e.value.code == 2
    assert said in capsys.readouterr().err


def test_cli_reads_shape_from_checkpoint(ckpt_factory, capsys):
    ckpt = ckpt_factory(tied=False, sharded=True)  # max_position_embeddings 256, untied lm_head
    rc, out, err = analyze_cli(capsys, "--ckpt", str(ckpt.path), "--dim", "ctx_len=255", "--dtype", "float32")
    assert rc == 0, err
    assert f"model={ckpt.path.name}" in out and "capacity=256" in out and f"launches={1 + 5 * 2 + 2}" in out
    assert "w=lm_head" in out  # untied: the head reads its own matrix
    rc, out, err = analyze_cli(capsys, "--ckpt", str(ckpt.path), "--dim", "ctx_len=256")
    assert rc == 2
    assert_one_line_error(err, "ctx_len=256", "max_position_embeddings=256")


def test_analyze_prices_the_plan_the_knobs_make(capsys, monkeypatch):
    """Under TFDASH_GATE_UP_SILU=0 the engine runs gemv_gate_up; analyze priced the default plan's
    gemv_gate_up_silu, and took a bad plan knob without a word."""
    monkeypatch.setenv("TFDASH_GATE_UP_SILU", "0")
    rc, out, _ = analyze_cli(capsys, "--model", "qwen3-tiny")
    assert rc == 0 and "= gemv_gate_up(" in out and "gemv_gate_up_silu" not in out
    monkeypatch.setenv("TFDASH_ATTN_SPLIT_CAP", "-3")
    rc, out, err = analyze_cli(capsys, "--model", "qwen3-tiny")
    assert rc == 2 and out == ""
    assert_one_line_error(err, "TFDASH_ATTN_SPLIT_CAP=-3: want at least 1 (default 32)")


def test_a_sweep_shows_its_rows_as_it_goes(capsys, monkeypatch):
    """At 1.7B a row takes ~10 ms, so the whole context (40,960 rows) took minutes with nothing on
    screen: the header and each row are written as they are priced."""
    from tfdash.profiling import sweep_run

    seen, real = [], sweep_run.analyze

    def priced(plan, target, ctx):
        if ctx == 2048:  # the last row: the first two are on stdout already
            seen.append(capsys.readouterr().out)
        return real(plan, target, ctx)

    monkeypatch.setattr(sweep_run, "analyze", priced)
    rc, out, _ = analyze_cli(capsys, "--model", "qwen3-tiny", "--sweep", "ctx_len=0:2048:1024")
    assert rc == 0 and seen[0].startswith("# sweep target=h200")
    assert [ln.split()[0] for ln in seen[0].splitlines()[2:]] == ["0", "1024"]
    assert [ln.split()[0] for ln in out.splitlines()] == ["2048"]
