"""The prompt taken in chunks (build_plan's prefill_rows, tfdash.engine.prefill_plan) on the CPU.

The chunk plan's torch spellings must leave the same KV cache as the decode step walking the prompt,
the same tokens after it, and the generation's accounting must say what it took; each structure of
prompt kernel any preset builds compiles for sm_90a. The tilelang kernels against these spellings
are tests/gpu's.
"""

import dataclasses
import importlib.util
import shutil

import pytest
import torch

from tfdash.engine import plan_for
from tfdash.engine.config import PRESETS, preset
from tfdash.engine.decode import Generation
from tfdash.engine.plan import build_plan
from tfdash.engine.prefill_plan import ROWS, build_prefill_plan, prefill_unsupported
from tfdash.engine.runtime import Runtime
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.engine.weights import load_weights
from tfdash.errors import TfdashError

TINY = preset("qwen3-tiny")


def _runtime(rows: int, capacity: int = 128, seed: int = 0):
    plan = build_plan(TINY, dtype="float32", capacity=capacity, prefill_rows=rows)
    torch.manual_seed(seed)
    return Runtime(plan, load_weights(TINY, None, torch.float32, "cpu", seed))


def _prompt(n: int) -> list[int]:
    g = torch.Generator().manual_seed(n)
    return torch.randint(0, TINY.vocab_size, (n,), generator=g).tolist()


@pytest.mark.parametrize("n", [2, 16, 17, 40])
def test_chunks_leave_the_walks_cache_and_tokens(n):
    """Prompts of two positions, one whole chunk, a chunk and one, and three chunks: the cache rows
    of every prompt position match the walk's, and the tokens generated after them are the same."""
    walk, chunks = _runtime(0), _runtime(ROWS)
    ids = _prompt(n)
    tok = StandInTokenizer(TINY.vocab_size)
    a = Generation(walk, ids, 6, tok)
    b = Generation(chunks, ids, 6, tok)
    ta, tb = [e.token_id for e in a], [e.token_id for e in b]
    assert tb == ta
    for name in ("k_cache", "v_cache"):
        want, got = walk.bufs[name][:, :, :n], chunks.bufs[name][:, :, :n]
        assert torch.allclose(got, want, atol=1e-4, rtol=1e-4), (name, (got - want).abs().max())
    assert b.stats.prefill_positions == n and a.stats.prefill_positions == 0
    assert b.stats.prefill_ns > 0 and a.stats.prefill_ns == 0
    assert b.stats.steps == 5 and a.stats.steps == n - 1 + 6  # the chunks and the head are no step
    assert b.stats.new_tokens == a.stats.new_tokens == 6
    assert int(chunks.bufs["out_tokens"][n - 1]) == ta[0]  # the head stored the first token as the step does
    assert int(chunks.bufs["pos"][0]) == int(walk.bufs["pos"][0]) == n - 1 + 6


def test_generation_can_still_walk_a_prompt_plan():
    """prefill=False walks: each prompt position's prediction lands in out_tokens, as a
    teacher-forced check reads them."""
    rt = _runtime(ROWS)
    ids = _prompt(9)
    g = Generation(rt, ids, 2, StandInTokenizer(TINY.vocab_size), prefill=False)
    list(g)
    assert g.stats.prefill_positions == 0 and g.stats.steps == 8 + 2
    assert int(rt.bufs["out_tokens"][0]) != 0 or int(rt.bufs["out_tokens"][1]) != 0


def test_the_first_token_is_the_prompt_time_and_the_steps_follow():
    """The first token's step time is the chunks' and the head's; the step at the prompt's last
    position never ran; every later step is timed, and a headless profile of the run is the walk's."""
    rt = _runtime(ROWS)
    g = Generation(rt, _prompt(20), 4, StandInTokenizer(TINY.vocab_size))
    events = list(g)
    assert events[0].step_ns == g.stats.prefill_ns > 0
    assert [e.step_ns for e in events[1:]] == list(g.stats.step_ns) and len(g.stats.step_ns) == 3
    assert g.stats.ttft_ns >= g.stats.prefill_ns


def test_the_snapshot_and_the_summary_say_how_the_prompt_was_taken(tmp_path):
    """A session's snapshot keeps the prompt's chunked positions and their time through a saved file,
    and the summary line names them; a walked prompt's says nothing more; a file written before the
    fields existed loads with them 0."""
    import json

    from tfdash.engine import Engine
    from tfdash.profiling import probe
    from tfdash.profiling.export import load_snapshot, write_snapshot
    from tfdash.profiling.headless import summary_line
    from tfdash.profiling.session import Session

    target = dataclasses.replace(probe.CPU, name="cpu-test", bandwidth=10e9, source="test: 10 GB/s")
    snaps = {}
    for rows in (ROWS, 0):
        rt = _runtime(rows)
        eng = Engine(TINY, rt.plan, rt, StandInTokenizer(TINY.vocab_size), "random", "cpu", "torch-eager")
        s = Session(eng, "w1 w2 w3 w4 w5 w6 w7", 6, target=target, nvml=False, ignore_eos=True, profile_every=0)
        s.run()
        write_snapshot(s.snapshot(), tmp_path / f"run{rows}.json")
        snaps[rows] = load_snapshot(tmp_path / f"run{rows}.json")
    chunked, walked = snaps[ROWS], snaps[0]
    assert chunked.prefill_positions == chunked.prompt_tokens > 1 and 0 < chunked.prefill_ns <= chunked.ttft_ns
    assert walked.prefill_positions == walked.prefill_ns == 0 and walked.ttft_ns > 0
    assert f"prompt {chunked.prompt_tokens} tokens taken in chunks in {chunked.prefill_ns / 1e6:.2f} ms, 6 new" \
        in summary_line(chunked)
    assert f"prompt {walked.prompt_tokens} tokens, 6 new" in summary_line(walked)
    raw = json.loads((tmp_path / f"run{ROWS}.json").read_text())
    del raw["prefill_positions"], raw["prefill_ns"]
    (tmp_path / "v5.json").write_text(json.dumps({**raw, "version": 5}))
    older = load_snapshot(tmp_path / "v5.json")
    assert older.prefill_positions == older.prefill_ns == 0 and older.new_tokens == 6


def test_one_position_prompt_has_nothing_to_take():
    rt = _runtime(ROWS)
    g = Generation(rt, [5], 3, StandInTokenizer(TINY.vocab_size))
    assert len(list(g)) == 3 and g.stats.prefill_positions == 0 and g.stats.steps == 3


def test_prompt_plan_shares_the_decode_plans_weights_and_cache():
    plan = build_plan(preset("qwen3-8b"), capacity=256, prefill_rows=ROWS)
    pf = build_prefill_plan(plan)
    L = plan.config.num_layers
    assert len(pf) == 1 + 8 * L + 1  # embed, the layers, the last row into the step's x
    assert pf.launches[-1].role == "last" and pf.launches[-1].args["out"] == "x"
    for name, spec in pf.buffers.items():
        if name in plan.buffers:
            assert plan.buffers[name] == spec, name
        else:
            assert name.startswith("pf_") and spec.kind == "activation", name
    # every weight it reads is the step's; the head is not read at all
    weights = {n for n in pf.buffers if pf.buffers[n].kind == "weight"}
    assert weights <= set(plan.buffers) and "lm_head" not in weights
    # one chunk streams the body's weights once: the cost model's weight bytes say so
    read = sum(launch.cost(0).read_by_kind("weight") for launch in pf.launches)
    body = sum(s.nbytes for n, s in plan.buffers.items() if s.kind == "weight" and n.startswith("L"))
    assert read == body + ROWS * plan.config.hidden_size * 2  # + the chunk's embedding rows


def test_prefill_rows_other_than_a_tile_refuse_in_one_line():
    with pytest.raises(TfdashError, match=r"prefill_rows=8 must be 0 \(the step walks the prompt\) or 16"):
        build_plan(TINY, prefill_rows=8)


def test_plan_for_takes_prompts_in_chunks_unless_told_or_unsupported(monkeypatch):
    from tfdash.settings import SETTINGS

    assert plan_for(preset("qwen3-1.7b"), "bfloat16", 256).meta["options"]["prefill_rows"] == ROWS
    assert plan_for(TINY, "float32", 64, backend="torch-eager").meta["options"]["prefill_rows"] == ROWS
    monkeypatch.setattr(SETTINGS, "prefill", False)
    assert plan_for(preset("qwen3-1.7b"), "bfloat16", 256).meta["options"]["prefill_rows"] == 0
    monkeypatch.setattr(SETTINGS, "prefill", True)
    odd = dataclasses.replace(preset("qwen3-1.7b"), name="odd", hidden_size=2048 + 64)
    assert "K=2112" in prefill_unsupported(build_plan(odd, capacity=64))
    assert plan_for(odd, "bfloat16", 64).meta["options"]["prefill_rows"] == 0  # the step walks it


# -- the prompt kernels for sm_90a: each structure any preset builds -----------------------------
def structure(launch, size: str):
    """What makes two prompt kernels build differently beyond their loop counts: a GEMM's N tile
    and epilogue, attention's and rope's GQA group; a row copied or normed at the smallest and the
    largest hidden size."""
    d = launch.dims
    if launch.family == "rows_gemm":
        from tfdash.kernels.rows import block_n

        return launch.family, block_n(d["N"] // (2 if d["epilogue"] == "silu_mul" else 1)), d["epilogue"]
    if launch.family in ("rows_rope", "rows_attention"):
        return launch.family, d["n_heads"] // d["n_kv_heads"]
    return (launch.family, size) if size in ("qwen3-0.6b", "qwen3-32b") else None


def _every_prompt_kernel():
    """One of each structure the chunks build at any size (every size's prompt plan read)."""
    out = {}
    for size in PRESETS:
        plan = build_plan(preset(size), dtype="bfloat16", capacity=4096, prefill_rows=ROWS)
        if prefill_unsupported(plan) is None:  # qwen3-tiny's head_dim 64: the engine walks its prompt
            for name, launch in build_prefill_plan(plan).kernels().items():
                key = structure(launch, size)
                if key is not None and key not in {structure(v, k.split(":")[0]) for k, v in out.items()}:
                    out[f"{size}:{name}"] = launch
    return out


EVERY = _every_prompt_kernel()
needs_nvcc = pytest.mark.skipif(importlib.util.find_spec("tilelang") is None or shutil.which("nvcc") is None,
                                reason="needs tilelang and nvcc")


def builds_read_by(item) -> list:
    """The builds a test here reads (conftest queues them before any test runs)."""
    if item.originalname != "test_every_preset_prompt_kernel_compiles_for_sm90a" or needs_nvcc.args[0]:
        return []
    launch = EVERY[item.callspec.params["key"]]
    return [(launch, {"pdl": False}, launch.family == "rows_gemm")]


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(EVERY))
def test_every_preset_prompt_kernel_compiles_for_sm90a(key, kernel_builds):
    """Built as the runtime builds them (no PDL): named after the launch, taking exactly the
    operands the runtime passes, the GEMMs through the tensor cores."""
    from tfdash.kernels.base import family

    launch = EVERY[key]
    built = kernel_builds.get(launch, pdl=False, backend="tvm_ffi")
    assert f" {launch.kernel}_kernel(" in built.source
    assert "cudaGridDependencySynchronize" not in built.source
    roles = [r for r in family(launch.family).roles if r in launch.args]
    assert sorted(p.removesuffix("_handle").removesuffix("_desc") for p in built.params) == sorted(roles)
    if launch.family in ("rows_gemm", "rows_attention"):
        assert "mma_sync" in built.source or "wgmma" in built.source
    if launch.family == "rows_gemm":
        from tfdash.kernels.rows import block_n, gemm_threads

        # no register reallocation between producer and consumer warps: it took 240 registers a
        # consumer thread (one block an SM), and setmaxnreg wants whole warpgroups (bn = 16 has two
        # consumer warps)
        assert "setmaxnreg" not in built.source
        out_n = launch.dims["N"] // (2 if launch.dims["epilogue"] == "silu_mul" else 1)
        threads = 2 * gemm_threads(block_n(out_n))  # the producer warps beside the consumers
        regs = kernel_builds.resources(launch).registers
        assert regs * threads * 2 <= 65536, regs  # two blocks an SM, where their shared memory allows
        assert family("rows_gemm").cost(launch.dims).smem <= 227 * 1024
