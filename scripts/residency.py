"""Which kernels of a plan can be resident on an SM together, from ptxas on the CPU. Under PDL a
kernel's blocks launch early and stream their weights (or K/V) before their grid dependency, but
only where they fit beside the blocks of the kernel still running: an SM has 65536 registers
(allocated a warp at a time, 256 at once), 2048 threads, 32 blocks and 228 KiB of shared memory.
For each launch of the first layer (with the next layer's first, and the step's tail) this prints
its registers a thread, its blocks an SM alone (its grid's own cap too), and how many blocks of the
launch after it fit beside that many of its own: 0 means the next kernel's early loads wait for
this one's blocks to leave. It counts registers over the whole SM, as CUDA's occupancy does for
blocks of a multiple of 4 warps (the GEMVs and attention: 256 and 128 threads); smaller blocks and mixes
of kernels are placed per quarter of the SM in hardware, so there the count is an upper bound.

    python scripts/residency.py --model qwen3-1.7b [--capacity 2112] [--gemv down:seg=24] [--variant NAME]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REGS, THREADS, BLOCKS, SMEM = 65536, 2048, 32, 228 * 1024
SMS = 132


def warp_regs(regs: int) -> int:
    """Registers a warp is given: a thread's count rounded up to 8, a warp's to 256."""
    return -(-(-(-regs // 8) * 8 * 32) // 256) * 256


def fit(regs: int, threads: int, smem: int, have=(0, 0, 0, 0)) -> int:
    """Blocks of (regs a thread, threads, smem bytes) that fit on an SM already holding `have`
    (registers, threads, blocks, smem)."""
    r, t, b, s = have
    per = warp_regs(regs) * (-(-threads // 32))
    return max(0, min((REGS - r) // per, (THREADS - t) // threads, BLOCKS - b,
                      (SMEM - s) // max(1, smem + 1024)))  # the driver reserves 1 KiB a block


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--capacity", type=int, default=2112)
    ap.add_argument("--gemv", action="append", default=[], metavar="SPEC", help="as tfdash bench --gemv")
    ap.add_argument("--variant", default="", help="a bench plan variant (tfdash.profiling.variants)")
    a = ap.parse_args(argv)
    from tfdash.errors import TfdashError
    from tfdash.profiling.variants import variant_names

    try:
        variant_names(a.variant)
    except TfdashError as e:
        sys.exit(f"residency.py: {e}")
    os.environ.setdefault("TILELANG_CACHE_DIR", os.path.expanduser("~/.cache/tfdash-residency"))
    import tilelang

    from tfdash.engine.compile import build
    from tfdash.engine import plan_for
    from tfdash.engine.config import preset
    from tfdash.engine.ptxas import resource_usage
    from tfdash.kernels.base import family
    from tfdash.profiling.ab import Variant, variant_plan
    from tfdash.profiling.variants import PLAN_VARIANTS, gemv_variant

    opts = dict(PLAN_VARIANTS[a.variant]) if a.variant else {}
    for spec in a.gemv:
        opts.setdefault("gemv_overrides", {}).update(gemv_variant(spec)[1]["gemv_overrides"])
    # the engine's plan (the int8 head with the knobs' defaults), the variant's options over it, as the bench builds it
    plan = variant_plan(plan_for(preset(a.model), "bfloat16", a.capacity), Variant(a.variant, opts))[0]
    # the first layer and the next layer's first launch, then the last layer's last and the step's
    # tail, in order (the layers between repeat the first's kernels)
    last = max(i for i, x in enumerate(plan.launches) if x.layer is not None)  # the last layer's last launch
    first = [x for x in plan.launches[:last] if x.layer in (None, 0)]
    order = first + list(plan.launches[len(first):len(first) + 1]) + list(plan.launches[last:])
    seen: dict[str, tuple] = {}
    rows = []
    for launch in order:
        if launch.kernel not in seen:
            k = tilelang.compile(build(launch, True), out_idx=[], target={"kind": "cuda", "arch": "sm_90a"},
                                 execution_backend="tvm_ffi")
            use = resource_usage(k.get_kernel_source())
            geo = family(launch.family).geometry(launch.dims) if family(launch.family).geometry else None
            grid = 1
            for g in (geo.grid if geo else (1,)):
                grid *= g
            threads = geo.threads if geo else 128
            smem = (family(launch.family).cost(launch.dims).smem or 0) + use.static_smem
            seen[launch.kernel] = (use, grid, threads, smem)
        rows.append((launch, *seen[launch.kernel]))
    print(f"# {a.model} capacity {a.capacity}{' ' + a.variant if a.variant else ''} {' '.join(a.gemv)}: "
          f"ptxas sm_90a; an SM: {REGS} registers, {THREADS} threads, {BLOCKS} blocks, {SMEM // 1024} KiB")
    print(f"{'launch':<16} {'kernel':<28} {'regs':>4} {'spill':>5} {'threads':>7} {'smem':>6} {'grid':>5} "
          f"{'alone/SM':>8} {'next beside':>11}")
    for i, (launch, use, grid, threads, smem) in enumerate(rows):
        alone = min(fit(use.registers, threads, smem), -(-grid // SMS))
        beside = "-"
        if i + 1 < len(rows) and rows[i + 1][0].index == launch.index + 1:
            _, nuse, _, nthreads, nsmem = rows[i + 1]
            have = (warp_regs(use.registers) * (-(-threads // 32)) * alone, threads * alone, alone,
                    (smem + 1024) * alone)
            beside = str(fit(nuse.registers, nthreads, nsmem, have))
        print(f"{launch.role:<16} {launch.kernel:<28} {use.registers:>4} {use.spill_stores:>5} {threads:>7} "
              f"{smem:>6} {grid:>5} {alone:>8} {beside:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
