"""Where the fused attention's time goes inside the captured step, phase by phase (a diagnostic,
H200 only).

The attention launch of every layer is swapped for its probe build (tfdash.kernels.probe's
PROBE_PHASES: thread 0 of each block stamps the global timer as it reaches each phase), the step
is captured as usual and replayed at ctx ~`--ctx`. After each replay the last layer's stamps are
read back. Times are in us from the moment the first active block passed its grid dependency
(the qkv GEMV complete and flushed): per phase, the median over replays of the earliest, median
and latest block, and when the last merging block finished. The default plan's replay and the
probe build's are timed alike, so the probe's own cost shows.

    python scripts/attn_phases.py [--model qwen3-1.7b] [--ctx 1024] [--variants tilelang-mlate] --out OUT.json
"""

import argparse
import dataclasses
import json
import statistics
import sys

import torch

from tfdash.engine.compile import compile_one
from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import TilelangRuntime
from tfdash.engine.weights import pack, random_state_dict
from tfdash.kernels.probe import PROBE_PHASES
from tfdash.kernels.splitkv import grid_splits, splits_used

from kernel_times import replay_times  # this script's folder is on sys.path when it runs

MERGER_PHASES = ("values", "arrived", "weighed", "end")  # the merging blocks' phases, printed apart
# every block's phases: "weighed" is stamped by mergers only (another block's slot keeps an earlier layer's)
ALL_PHASES = tuple(p for p in PROBE_PHASES[:-1] if p != "weighed")
CAPACITY = 2048  # one round a program up to 2048 positions: every stamp is of the block's only split


def replay_us(rt, ctx, n):
    """The median replay in us from ctx (kernel_times' timing: pos moves on a step a replay)."""
    return statistics.median(replay_times(rt, n, ctx))


def probed_runtime(plan, weights):
    """The plan's runtime with every attention launch's kernel swapped for its probe build, which
    writes its stamps into one (kv heads, programs, phases) buffer (the last layer's stay)."""
    rt = TilelangRuntime(plan, weights, "cuda")
    [launch] = [la for la in plan.kernels().values() if la.family == "attention"]
    probe_launch = dataclasses.replace(launch, kernel=launch.kernel + "_probe", dims={**launch.dims, "probe": True})
    kernel = compile_one(probe_launch)
    programs, _ = grid_splits(launch.dims["splits"], launch.dims.get("split_cap", 32))
    stamps = torch.zeros((launch.dims["n_kv_heads"], programs, len(PROBE_PHASES)), dtype=torch.int64, device="cuda")
    rt.kernels[launch.kernel] = lambda *args: kernel(*args, stamps)
    rt.launch_fns = [rt._launch_fn(i) for i in range(len(plan.launches))]  # bound at construction: again
    rt.capture()
    return rt, stamps, launch.dims


def phases(rt, stamps, dims, ctx, n):
    """Per replay: every phase's (earliest, median, latest) block in us after the first block's
    grid dependency, over the blocks with a split to attend; and the last merger's end."""
    rows = []
    rt.bufs["prompt_len"].fill_(0)
    for i in range(n):
        rt.bufs["pos"].fill_(ctx)
        stamps.zero_()
        rt.graph.replay()
        torch.cuda.synchronize()
        active = splits_used(dims, ctx)
        s = stamps[:, :active].reshape(-1, len(PROBE_PHASES)).cpu()
        if not int(s[:, 0].min()):
            raise SystemExit("the probe build did not run: no stamps")
        t0 = int(s[:, 2].min())
        row = {}
        for name in ALL_PHASES:
            col = sorted((int(v) - t0) / 1e3 for v in s[:, PROBE_PHASES.index(name)])
            row[name] = (col[0], col[len(col) // 2], col[-1])
        merged = s[s[:, -1] == 1]
        row["merged_end"] = (int(merged[:, PROBE_PHASES.index("end")].max()) - t0) / 1e3 if len(merged) else None
        # the merging blocks' own phases (one a kv head): the earliest, median and latest merger's
        for name in MERGER_PHASES:
            col = sorted((int(v) - t0) / 1e3 for v in merged[:, PROBE_PHASES.index(name)])
            row["merger " + name] = (col[0], col[len(col) // 2], col[-1]) if col else (0.0, 0.0, 0.0)
        rows.append(row)
    out = {}
    for name in list(ALL_PHASES) + ["merger " + n for n in MERGER_PHASES]:
        out[name] = [statistics.median(r[name][j] for r in rows) for j in range(3)]
    ends = [r["merged_end"] for r in rows if r["merged_end"] is not None]
    out["merged_end"] = statistics.median(ends) if ends else None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--variants", default="", help="plan variants (tfdash.profiling.variants) probed beside the default")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    from tfdash.errors import TfdashError
    from tfdash.profiling.variants import PLAN_VARIANTS, variant_names

    try:  # before any weight reaches the GPU
        names = variant_names(args.variants)
    except TfdashError as e:
        sys.exit(f"attn_phases.py: {e}")

    cfg = preset(args.model)
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, "cuda", seed=0))
    result = {"model": args.model, "ctx": args.ctx, "capacity": CAPACITY, "phases": PROBE_PHASES, "plans": {}}
    for name in ["default"] + names:
        plan = build_plan(cfg, "bfloat16", capacity=CAPACITY, **({} if name == "default" else PLAN_VARIANTS[name]))
        plain = TilelangRuntime(plan, weights, "cuda")
        plain.capture()
        base_us = replay_us(plain, args.ctx, 100)
        del plain
        rt, stamps, dims = probed_runtime(plan, weights)
        probe_us = replay_us(rt, args.ctx, 100)
        got = phases(rt, stamps, dims, args.ctx, args.reps)
        del rt
        result["plans"][name] = {"replay_us": base_us, "probed_replay_us": probe_us, "phases": got}
        print(f"{args.model} {name} ctx {args.ctx}: replay {base_us:.1f} us, probed {probe_us:.1f} us "
              f"(us after the first block's grid dependency: earliest / median / latest block)")
        for ph, v in got.items():
            if isinstance(v, list):
                print(f"  {ph:<15} {v[0]:8.2f} {v[1]:8.2f} {v[2]:8.2f}")
        print(f"  last merger ends {got['merged_end']:.2f}" if got["merged_end"] is not None else "  no merger")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
