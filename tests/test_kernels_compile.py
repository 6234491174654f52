"""Every kernel of the plan compiles for sm_90a with tilelang, on a machine without a GPU.

tilelang lowers to CUDA C++ and nvcc builds it for `{"kind": "cuda", "arch": "sm_90a"}` (with
`target="cuda"` and no GPU it would fall back to sm_50). Needs tilelang (Linux x86-64) and nvcc.
"""

import dataclasses
import importlib.util
import re
import shutil

import pytest

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tilelang") is None or shutil.which("nvcc") is None,
    reason="needs tilelang and nvcc",
)

PLAN = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096)
UNFUSED = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, fused_rope=False)
GU1 = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, gemv_blocks_per_sm={"gate_up": 1})
LATE = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, attn_kv_early=False)
LATERES = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, early_residual=False)
OTLATE = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, o_proj_trigger_first=False)
MLATE = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, attn_merge_early=False,
                   gemv_overrides={"down": {"trigger_first": 1}})
UNFUSED_MLATE = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, fused_rope=False,
                           attn_merge_early=False)  # 14B's and 32B's unfused attention: the late merge
LATENORM = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, early_norm=False)
FENCED = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, attn_merge_acq_rel=False)
DOWNSILU = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, gate_up_silu=False)  # down makes silu
QTFIRST = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, qkv_trigger_first=True)  # as 0.6B's
RINGCOPY = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, ring_in_graph=False)  # argmax_feed
CHAINS = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, attn_ilp=False)  # one chain a phase
EACHROUND = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, attn_rounds_carry=False)  # _er
Q8HEAD = build_plan(preset("qwen3-1.7b"), dtype="bfloat16", capacity=4096, lm_head_q8=True)  # lm_head_q8, pick
# the int8 head's pick at 1.7B (two rows at once) and 32B (one row, the largest K)
PICK = {size: build_plan(preset(size), dtype="bfloat16", capacity=4096, lm_head_q8=True).ops()["lm_head_pick"][0]
        for size in ("qwen3-1.7b", "qwen3-32b")}
KERNELS = {**Q8HEAD.kernels(), **EACHROUND.kernels(),
           **CHAINS.kernels(), **RINGCOPY.kernels(), **QTFIRST.kernels(), **DOWNSILU.kernels(), **FENCED.kernels(), **LATENORM.kernels(), **UNFUSED.kernels(), **GU1.kernels(), **LATE.kernels(), **LATERES.kernels(), **OTLATE.kernels(),
           **MLATE.kernels(), **UNFUSED_MLATE.kernels(), **PLAN.kernels()}  # every kernel the plan variants launch


# the GEMVs whose registers and shared memory are checked against their blocks per SM
GEMV_FIT = sorted(k for k in {**PLAN.kernels(), **OTLATE.kernels(), **LATENORM.kernels(), **DOWNSILU.kernels()}
                  if k.startswith("gemv_"))
_ATTN = PLAN.kernels()["attn_rope_decode_me"]
PROBE = dataclasses.replace(_ATTN, kernel=_ATTN.kernel + "_probe", dims={**_ATTN.dims, "probe": True})


@pytest.fixture(scope="module")
def fresh_cache(kernel_builds):
    """The run's kernel builds (conftest's kernel_builds), which go to a kernel cache that started
    empty, so each kernel is really lowered and built by nvcc here."""
    return kernel_builds


def builds_read_by(item) -> list:
    """The builds a test of this module reads, as (launch, compile_one options, ptxas too):
    conftest queues them for the selected tests before any runs, so the workers build ahead."""
    p = item.callspec.params if hasattr(item, "callspec") else {}
    one = {"test_kernel_compiles_for_sm90a": [p.get("name")],
           "test_which_kernels_let_the_next_launch_before_their_grid_dependency": [p.get("name")],
           "test_early_norm_reads_the_norm_weights_before_the_grid_dependency": [f"{p.get('name')}_ln", p.get("name")],
           "test_acq_rel_merge_arrives_with_one_atomic_and_no_fence": ["attn_rope_decode_me_fe", "attn_rope_decode_me"],
           "test_rounds_carry_ropes_q_once_and_loads_the_next_round_early": ["attn_rope_decode_me_er",
                                                                             "attn_rope_decode_me"],
           "test_ptxas_facts_of_a_kernel": ["gemv_down_residual"],
           "test_attention_probe_build_stamps_each_phase": ["attn_rope_decode_me"],
           "test_interleaved_value_phase_adds_this_steps_v_with_one_explicit_fma": list(FMA_BUILDS),
           "test_int8_head_fits_its_grid_and_dots_four_bytes_an_instruction": ["lm_head_q8", "lm_head_pick"]}
    ptxas = item.originalname in ("test_rounds_carry_ropes_q_once_and_loads_the_next_round_early",
                                  "test_int8_head_fits_its_grid_and_dots_four_bytes_an_instruction")
    out = [(KERNELS[n], {}, ptxas) for n in one.get(item.originalname, ())]
    if item.originalname == "test_pick_fits_two_blocks_and_loads_its_bounds_before_its_first_ballot":
        out.append((PICK[p["size"]], {}, True))
    if item.originalname == "test_gemv_blocks_fit_on_an_sm_as_planned":
        out.append((KERNELS[p["name"]], {}, True))
    elif item.originalname == "test_without_pdl_the_kernels_carry_no_grid_dependency":
        out.append((KERNELS["gemv_o_residual"], {"pdl": False}, False))
    elif item.originalname == "test_every_preset_kernel_compiles_for_sm90a":
        out.append((EVERY[p["key"]], {}, EVERY[p["key"]].family in ("gemv", "attention")))
    elif item.originalname == "test_attention_probe_build_stamps_each_phase":
        out.insert(0, (PROBE, {}, False))
    return out


def test_plan_has_the_expected_kernels():
    common = {"embed_gather", "gemv_qkv", "gemv_o_residual", "gemv_gate_up_silu", "gemv_down_residual",
              "gemv_lm_head", "argmax_feed_ring_ns"}
    assert set(PLAN.kernels()) == common | {"attn_rope_decode_me"}
    assert set(UNFUSED.kernels()) == common | {"qk_norm_rope", "attn_decode_me"}
    assert len(PLAN) == 1 + 5 * 28 + 2 and len(UNFUSED) == 1 + 6 * 28 + 2


def compiled(builds, name: str):
    """KERNELS[name] built for sm_90a with PDL, once a run (tests/kernel_builds.py); tvm_ffi: device
    code only, no launcher build."""
    return builds.get(KERNELS[name], pdl=True, backend="tvm_ffi")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_for_sm90a(name, fresh_cache):
    launch = KERNELS[name]
    kernel = compiled(fresh_cache, name)
    src = kernel.source
    # Named after its role (never `main`), so profiles are readable.
    assert "void __launch_bounds__" in src and f" {name}_kernel(" in src
    # every kernel waits on its grid dependency before reading what the kernel before it wrote
    assert "cudaGridDependencySynchronize();" in src
    # Exactly the operands the runtime passes, in the family's role order.
    from tfdash.kernels.base import family

    roles = [r for r in family(launch.family).roles if r in launch.args]
    params = [p.removesuffix("_handle") for p in kernel.params]
    assert params == roles


@pytest.mark.slow
@pytest.mark.parametrize("name", GEMV_FIT)
def test_gemv_blocks_fit_on_an_sm_as_planned(name, fresh_cache):
    """The GEMV grid assumes BLOCKS_PER_SM resident blocks of THREADS threads. down once took 130
    registers a thread: one block per SM, its grid in two waves, 2.3x its floor on the H200."""
    from tfdash.kernels.gemv import BLOCKS_PER_SM, THREADS

    launch = KERNELS[name]
    per_sm = launch.dims.get("blocks_per_sm", BLOCKS_PER_SM)
    regs = fresh_cache.resources(launch).registers  # ptxas's count for its sm_90a source (tfdash.engine.ptxas)
    assert regs * THREADS * per_sm <= 65536, f"{name}: {regs} registers a thread, {per_sm} blocks of {THREADS}"
    # shared memory: the cost model's figure is what the kernel declares, and it fits too
    from tfdash.kernels.base import family

    smem = family(launch.family).cost(launch.dims).smem
    assert smem * per_sm <= 227 * 1024, f"{name}: {smem} bytes of shared memory, {per_sm} blocks"


@pytest.mark.slow
def test_without_pdl_the_kernels_carry_no_grid_dependency(fresh_cache):
    """The A/B baseline: pdl=False kernels have no griddepcontrol at all."""
    # compile_one's launcher for pdl=False is tvm_ffi
    src = fresh_cache.get(KERNELS["gemv_o_residual"], pdl=False, backend="tvm_ffi").source
    assert "cudaGridDependencySynchronize" not in src and "cudaTriggerProgrammaticLaunchCompletion" not in src


@pytest.mark.slow
@pytest.mark.parametrize("name,first", [("gemv_o_residual", True), ("gemv_o_residual_tlate", False),
                                        ("attn_rope_decode_me", False), ("attn_rope_decode", False),
                                        ("gemv_gate_up_silu", False), ("gemv_down_residual", False),
                                        ("gemv_gate_up", False), ("gemv_down_silu_residual", False),
                                        ("gemv_down_residual_t1", True), ("gemv_qkv_t1", True),
                                        ("gemv_qkv", False)])
def test_which_kernels_let_the_next_launch_before_their_grid_dependency(name, first, fresh_cache):
    """The default o_proj triggers gate_up's launch before it waits on attention (gate_up reads only
    weights early), 0.6B's qkv attention's (weights, pos, earlier steps' K/V), as down may the next
    qkv's (gemv_overrides); every other kernel
    (and the tlate baseline) triggers after its wait, once, so a kernel that reads activations
    before its own dependency never launches ahead of the writes it reads."""
    src = compiled(fresh_cache, name).source
    trig, sync = "cudaTriggerProgrammaticLaunchCompletion", "cudaGridDependencySynchronize"
    assert src.count(trig) == 1 and src.count(sync) == 1
    assert (src.index(trig) < src.index(sync)) == first


@pytest.mark.slow
@pytest.mark.parametrize("name,norm", [("gemv_qkv", "(norm_w + "), ("gemv_gate_up_silu", "(norm_w + "),
                                       ("gemv_lm_head", "(norm_w + "), ("attn_rope_decode_me", "q_norm[")])
def test_early_norm_reads_the_norm_weights_before_the_grid_dependency(name, norm, fresh_cache):
    """The default (early_norm) loads the norm weights (and attention's cos/sin) before the kernel
    waits on the one before it; the late-norm baseline loads them after."""
    sync = "cudaGridDependencySynchronize"
    late, early = compiled(fresh_cache, name + "_ln").source, compiled(fresh_cache, name).source
    body = late[late.index("__global__"):]
    assert body.index(norm) > body.index(sync)
    body = early[early.index("__global__"):]
    assert body.index(norm) < body.index(sync)
    if name.startswith("attn"):
        assert body.index("cos_1[") < body.index(sync)


FMA_BUILDS = ("attn_rope_decode_me", "attn_rope_decode_late_me")


@pytest.mark.slow
def test_interleaved_value_phase_adds_this_steps_v_with_one_explicit_fma(fresh_cache):
    """Every interleaved fused build (early and late KV) adds p[last] * v, this step's
    own v, as one explicit FMA: written as a choice between a product and zero then an add, nvcc
    contracted it in one build and not in another, and the late-KV build decoded other tokens."""
    for name in FMA_BUILDS:
        assert compiled(fresh_cache, name).source.count("__fmaf_rn(") >= 1, name
    assert "__fmaf_rn(" not in compiled(fresh_cache, "attn_rope_decode_me_ch").source  # the chains' FMA is p * (choice)


@pytest.mark.slow
def test_acq_rel_merge_arrives_with_one_atomic_and_no_fence(fresh_cache):
    """The fenced baseline's attention arrives with a fence and a relaxed atomic, and its merging
    block's threads fence again; the default arrives with one acquire-release atomic and no fence."""
    fenced, acq = (compiled(fresh_cache, n).source for n in ("attn_rope_decode_me_fe", "attn_rope_decode_me"))
    assert fenced.count("__threadfence()") == 2 and fenced.count("AtomicAddRet(") == 1
    assert "__threadfence" not in acq and acq.count("AtomicAddRet(") == 1
    assert re.search(r"AtomicAddRet\(\(&\(sem\[[^\]]*\]\)\), 1, 4\)", acq)  # 4: cuda::memory_order_acq_rel


def _rounds_loop(src: str) -> str:
    """The kernel's loop over rounds of blocks in src, its braces matched."""
    start = src.index("for (int r = 0; r < ")
    depth, i = 0, src.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            return src[start:i]
        i += 1


@pytest.mark.slow
def test_rounds_carry_ropes_q_once_and_loads_the_next_round_early(fresh_cache):
    """At a 4096-position cache (64 blocks on 32 programs a kv head: two rounds) the baseline (_er)
    loads a round's V and K at the round's start and norms and rotates q (and appends this step's k
    and v) in every round; the default does the rope phase in round 0 only and loads the next
    round's V and K a second time in the loop, after the values and before the arrival, spilling
    nothing."""
    base, carry = (_rounds_loop(compiled(fresh_cache, n).source) for n in ("attn_rope_decode_me_er",
                                                                           "attn_rope_decode_me"))
    for loop, loads in ((base, 1), (carry, 2)):
        v_reads = [m.start() for m in re.finditer(r"= v_cache\[", loop)]
        k_reads = [m.start() for m in re.finditer(r"= \*\(uint4\*\)\(k_cache", loop)]
        assert len(v_reads) == len(k_reads) == loads, (v_reads, k_reads)
        assert v_reads[0] < loop.index("= vx;") < loop.index("AtomicAddRet(")  # round start, then the rope
        if loads == 2:  # the rope phase (its append of v) under round 0; the next round's loads before arriving
            assert loop.index("if (r == 0)") < loop.index("= vx;")
            assert loop.index("= vx;") < v_reads[1] < loop.index("AtomicAddRet(")
            assert loop.index("= vx;") < k_reads[1] < loop.index("AtomicAddRet(")
    assert "r == 0" not in base
    res = fresh_cache.resources(KERNELS["attn_rope_decode_me"])
    assert res.spill_stores == 0 and res.spill_loads == 0, res


# -- every preset ---------------------------------------------------------------------------
def _every_preset_kernels():
    from tfdash.engine.config import PRESETS

    out = {}
    for size in PRESETS:
        for name, launch in build_plan(preset(size), dtype="bfloat16", capacity=4096).kernels().items():
            out[f"{size}:{name}"] = launch
    return out


EVERY = _every_preset_kernels()


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(EVERY))
def test_every_preset_kernel_compiles_for_sm90a(key, fresh_cache):
    """Every preset's kernels compiled for sm_90a (a kernel another preset or variant shares is
    built once); ptxas's registers for the GEMVs and attention."""
    launch = EVERY[key]
    src = fresh_cache.get(launch, pdl=True, backend="tvm_ffi").source
    assert "void __launch_bounds__" in src and f" {launch.kernel}_kernel(" in src
    assert "cudaGridDependencySynchronize();" in src
    if launch.family == "gemv":
        from tfdash.kernels.gemv import THREADS, launch_settings

        _, _, per_sm = launch_settings(launch.dims)
        regs = fresh_cache.resources(launch).registers
        assert regs * THREADS * per_sm <= 65536, f"{key}: {regs} registers a thread, {per_sm} blocks of {THREADS}"
        from tfdash.kernels.base import family

        assert family("gemv").cost(launch.dims).smem * per_sm <= 227 * 1024
    if launch.family == "attention":
        regs = fresh_cache.resources(launch).registers
        assert regs <= 255  # no spill past the register file: one block of head_dim threads


def test_every_gemv_table_entry_is_a_preset_gemv():
    """The CI guard above covers every entry of the GEMV table: each one is some preset's GEMV."""
    from tfdash.kernels.gemv import table

    shapes = {(v.dims["N"], v.dims["K"]) for v in EVERY.values() if v.family == "gemv"}
    assert set(table()) <= shapes, set(table()) - shapes


@pytest.mark.slow
def test_ptxas_facts_of_a_kernel(fresh_cache):
    """The drill-down's first CUDA line: ptxas's registers, spills and stack, on a host with no GPU."""
    from tfdash.app.cuda_source import facts
    from tfdash.engine.ptxas import parse, resource_usage

    src = compiled(fresh_cache, "gemv_down_residual").source
    r = resource_usage(src)
    assert 32 <= r.registers <= 128 and r.spill_stores == 0 and r.spill_loads == 0
    assert facts(src).startswith(f"// ptxas sm_90a: {r.registers} registers a thread, no spills")
    spilled = parse("ptxas info    : Used 255 registers, used 1 barriers, 64 bytes smem\n"
                    "    48 bytes stack frame, 40 bytes spill stores, 44 bytes spill loads")
    assert (spilled.registers, spilled.spill_stores, spilled.spill_loads, spilled.stack, spilled.static_smem) == \
        (255, 40, 44, 48, 64)
    assert "spills 40 B stored, 44 B loaded" in spilled.line()
    assert facts("not cuda").startswith("// ptxas: unavailable (nvcc failed")


@pytest.mark.slow
def test_attention_probe_build_stamps_each_phase(fresh_cache):
    """The probe build (tfdash.kernels.probe) stamps the global timer at each phase into its extra
    buffer, and says whether the block merged; the kernel itself carries no stamp."""
    from tfdash.kernels.probe import PROBE_PHASES

    src = fresh_cache.get(PROBE, pdl=True, backend="tvm_ffi").source  # PLAN's attn_rope_decode_me, probe=True
    assert "%globaltimer" in src and src.count("= tfd_globaltimer()") == len(PROBE_PHASES) - 1
    assert re.search(rf"probe\[[^\]]*\+ {len(PROBE_PHASES) - 1}\)\] = \(\(int64_t\)\(\(int\*\)flag_s\)\[0\]\)", src)
    assert "globaltimer" not in compiled(fresh_cache, "attn_rope_decode_me").source


@pytest.mark.slow
def test_int8_head_fits_its_grid_and_dots_four_bytes_an_instruction(fresh_cache):
    """lm_head_q8's grid plans BLOCKS_PER_SM blocks an SM (its registers must let them fit), its dot
    products are dp4a on packed int8, and the pick's warps take their rows by ballot."""
    from tfdash.kernels.lm_head_q8 import BLOCKS_PER_SM, THREADS

    q8 = compiled(fresh_cache, "lm_head_q8")
    assert fresh_cache.resources(KERNELS["lm_head_q8"]).registers * THREADS * BLOCKS_PER_SM <= 65536
    assert "__dp4a(" in q8.source
    assert "__ballot_sync(" in compiled(fresh_cache, "lm_head_pick").source
    # under PDL, before its grid dependency each reads only weights (never x, h, ub or lb: the kernel
    # before it writes them) and writes nothing; it lets the next kernel launch only after it
    for name, early in (("lm_head_q8", {"wq", "meta", "norm_w"}), ("lm_head_pick", set())):
        built = compiled(fresh_cache, name)
        body = built.source[built.source.index("void __launch_bounds__"):]
        body = body[body.index("{"):]
        sync = body.index("cudaGridDependencySynchronize();")
        assert sync < body.index("cudaTriggerProgrammaticLaunchCompletion();")
        for param in (p.removesuffix("_handle") for p in built.params):
            if param not in early:
                assert not re.search(rf"(?<![\w.]){param}(\[| \+ )", body[:sync]), (name, param)
        assert all(re.search(rf"(?<![\w.]){param}(\[| \+ )", body[:sync]) for param in early), name


@pytest.mark.slow
@pytest.mark.parametrize("size", sorted(PICK))
def test_pick_fits_two_blocks_and_loads_its_bounds_before_its_first_ballot(size, fresh_cache):
    """The int8 head's pick plans BLOCKS_PER_SM blocks an SM: its registers (for two candidate
    rows at once at 1.7B, one row of the largest K at 32B) and shared memory let them fit, spilling
    nothing. After its grid dependency it loads every round's ub value, unrolled, before its first
    ballot (no round waits on its own load), and only then the candidates' rows."""
    from tfdash.kernels.base import family
    from tfdash.kernels.lm_head_pick import BLOCKS_PER_SM, THREADS, rows_at_once, rows_per_warp

    launch = PICK[size]
    built = fresh_cache.get(launch, pdl=True, backend="tvm_ffi")
    res = fresh_cache.resources(launch)
    assert res.registers * THREADS * BLOCKS_PER_SM <= 65536, f"{size}: {res.registers} registers a thread"
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack == 0, res
    assert (family(launch.family).cost(launch.dims).smem + res.static_smem) * BLOCKS_PER_SM <= 227 * 1024
    assert rows_at_once(launch.dims) == (2 if size == "qwen3-1.7b" else 1)
    body = built.source[built.source.index(f"__launch_bounds__({THREADS}, {BLOCKS_PER_SM})"):]
    sync, ballot = body.index("cudaGridDependencySynchronize();"), body.index("__ballot_sync(")
    ub_loads = [m.start() for m in re.finditer(r"= ub\[", body)]
    assert len(ub_loads) == -(-rows_per_warp(launch.dims) // 32) >= 3  # one a round, each its own statement
    assert all(sync < i < ballot for i in ub_loads) and "ub[" not in body[ballot:]
    assert body.count("__ballot_sync(") == len(ub_loads) and "__ffs(" in body
    assert ballot < body.index("(w + ")  # the candidates' rows after the ballots

