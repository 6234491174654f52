"""Compile every tilelang kernel that the GPU tests, `tfdash bench` and the dashboard will ask
for, in parallel worker processes, into tilelang's disk cache ($TILELANG_CACHE_DIR): the runs
after it load each kernel instead of compiling it one after another.

    python3 scripts/precompile.py [--sizes qwen3-0.6b,...] [--workers 14]
    python3 scripts/precompile.py --only-default --capacities 64 --ops lm_head,lm_head_pick,argmax \
        --variants tilelang-bf16head     (only those ops' kernels: what one GPU test file builds)
"""

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from multiprocessing import get_context
from types import MappingProxyType, SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SIZES = "qwen3-0.6b,qwen3-1.7b,qwen3-4b,qwen3-8b,qwen3-14b,qwen3-32b"
BENCH_CAPACITY = 2112  # a 12-token prompt + 2048 new tokens, in whole attention blocks


CAPACITIES = (4096, BENCH_CAPACITY, 1280, 2048)  # the dashboard's, the bench's, the engine tests'


def plans(sizes, only_default=False, variants=(), gemv=(), capacities=CAPACITIES):
    from tfdash.engine import plan_for
    from tfdash.engine.config import preset
    from tfdash.engine.plan import build_plan
    from tfdash.errors import TfdashError
    from tfdash.profiling.ab import Variant, variant_plan
    from tfdash.profiling.variants import PLAN_VARIANTS

    def variant(cfg, cap, options):
        """A variant's plan (the engine's with its options over them, as the bench builds it), or
        None where build_plan refuses its options for the shape: the bench refuses that peer in one
        line; nothing to build."""
        try:
            return variant_plan(plan_for(cfg, "bfloat16", cap), Variant("", dict(options)))[0]
        except TfdashError:
            return None

    for name in sizes:
        cfg = preset(name)
        for cap in capacities:
            yield plan_for(cfg, "bfloat16", cap)  # the engine's and the bench's
            yield build_plan(cfg, capacity=cap)  # the GPU tests' (build_plan's defaults: the GEMV head)
            for v in variants:  # named plan variants at every size asked (a bench's peers)
                yield variant(cfg, cap, PLAN_VARIANTS[v])
        for spec in gemv:  # bench --gemv peers, at the bench's capacity
            from tfdash.profiling.variants import gemv_variant

            yield variant(cfg, BENCH_CAPACITY, gemv_variant(spec)[1])
        if only_default:
            continue
        if name == "qwen3-1.7b":  # the A/B variants the bench and the bit-for-bit test build
            for cap in (BENCH_CAPACITY, 2048, 4096):
                for options in PLAN_VARIANTS.values():
                    yield variant(cfg, cap, options)
                yield build_plan(cfg, capacity=cap, attn_kv_early=False, early_residual=False)
            yield build_plan(cfg, capacity=4096, attn_block=32, attn_split_cap=64)  # 32-position blocks
        if name in ("qwen3-1.7b", "qwen3-32b"):
            yield build_plan(cfg, capacity=4096, fused_rope=False)
    if only_default:
        return
    base = preset("qwen3-1.7b")
    for group, d in [(g, 128) for g in range(1, 9)] + [(g, 64) for g in (1, 2, 4, 8)]:
        yield build_plan(replace(base, name=f"g{group}-d{d}", num_heads=8 * group, head_dim=d), capacity=4096)


def distinct(sizes, only_default=False, variants=(), gemv=(), capacities=CAPACITIES, ops=()):
    """One job a distinct kernel (name and dims) of the plans, only the launches of `ops` if given;
    with a plan that takes prompts in chunks, its prompt plan's kernels too (built without PDL, as
    the runtime builds them)."""
    from tfdash.engine.prefill_plan import build_prefill_plan

    seen = {}
    for plan in filter(None, plans(sizes, only_default, variants, gemv, capacities)):
        rows = dict(plan.meta.get("options", {})).get("prefill_rows", 0)
        prompt = build_prefill_plan(plan, rows).kernels().values() if rows and not ops else ()
        for launch, pdl in [*((x, True) for x in plan.kernels().values()), *((x, False) for x in prompt)]:
            if ops and launch.op not in ops:
                continue
            key = (launch.kernel, tuple(sorted((k, str(v)) for k, v in launch.dims.items())), pdl)
            seen.setdefault(key, (launch.family, launch.kernel, dict(launch.dims), pdl))
    return list(seen.values())


def compile_job(job):
    from tfdash.engine.compile import compile_one

    fam, kernel, dims, pdl = job
    t = time.perf_counter()
    try:
        compile_one(SimpleNamespace(family=fam, kernel=kernel, dims=MappingProxyType(dims)), pdl=None if pdl else False)
    except Exception as e:  # tvm's errors do not pickle: one would break the pool for every job
        raise RuntimeError(f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}") from None
    return kernel, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--only-default", action="store_true", help="only the default plans (bench and engine tests)")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--variants", default="", help="comma-separated plan variants (tfdash.profiling.variants) "
                    "to build at every size given as well")
    ap.add_argument("--gemv", action="append", default=[], metavar="SPEC",
                    help="a `tfdash bench --gemv` variant to build at every size given as well (repeatable)")
    ap.add_argument("--capacities", default=",".join(map(str, CAPACITIES)),
                    help="KV capacities of the plans (the attention and argmax kernels depend on them)")
    ap.add_argument("--ops", default="", help="comma-separated ops (lm_head, argmax, ...): only their kernels")
    ap.add_argument("--prompt", action="store_true",
                    help="only the prompt plans' kernels (tests/gpu/test_prefill_gpu.py)")
    args = ap.parse_args()
    from tfdash.errors import TfdashError
    from tfdash.profiling.variants import variant_names

    try:
        variants = variant_names(args.variants)
    except TfdashError as e:
        sys.exit(f"precompile.py: {e}")
    caps = tuple(int(c) for c in args.capacities.split(",") if c)
    jobs = distinct(args.sizes.split(","), args.only_default, variants, args.gemv,
                    caps, {o for o in args.ops.split(",") if o})
    if args.prompt:
        jobs = [j for j in jobs if not j[3]]
    t0 = time.perf_counter()
    print(f"# compiling {len(jobs)} kernels on {args.workers} workers", flush=True)
    failed = 0
    with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
        futs = {pool.submit(compile_job, j): j for j in jobs}
        for i, f in enumerate(as_completed(futs), 1):
            try:
                name, s = f.result()
                print(f"#  {i}/{len(jobs)} {name} {s:.1f} s", flush=True)
            except Exception as e:
                failed += 1
                print(f"#  {i}/{len(jobs)} FAILED {futs[f][1]}: {type(e).__name__}: {str(e)[:300]}", flush=True)
    print(f"# precompiled {len(jobs) - failed}/{len(jobs)} kernels in {time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
