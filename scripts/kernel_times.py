"""Where the tilelang step's time goes on the H200 (a diagnostic), for the default plan and each
plan variant named by --variants (tfdash.profiling.variants).

For each plan: capture the graph, time 200 replays from ctx 1024 (--ctx) with CUDA events, then profile
3 replays under torch.profiler (CUPTI) and report, per kernel name: launches per step, median
duration, the analyzer's bytes and the achieved GB/s; and over the whole replay: how many kernels
started before the previous one ended (PDL overlap) and the median start-to-previous-end gap;
per op, its exclusive time beside its floor (its bytes at the machine's measured copy ceiling).

    python scripts/kernel_times.py [--model qwen3-4b] [--ctx 100] [--variants tilelang-mlate,...] --out OUT.json
"""

import argparse
import json
import statistics
import sys

import torch

from tfdash.engine import plan_for
from tfdash.engine.config import preset
from tfdash.engine.runtime import TilelangRuntime
from tfdash.engine.weights import pack, random_state_dict
from tfdash.profiling.ab import Variant, variant_plan
from tfdash.profiling.analyze import analyze
from tfdash.profiling.targets import H200

CTX = 1024
CAPACITY = 2048  # the plan's KV capacity


def replay_times(rt, n=200, ctx=CTX):
    evs = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    rt.bufs["pos"].fill_(ctx)
    rt.bufs["prompt_len"].fill_(0)
    torch.cuda.synchronize()
    evs[0].record()
    for i in range(n):
        rt.graph.replay()
        evs[i + 1].record()
    torch.cuda.synchronize()
    return [evs[i].elapsed_time(evs[i + 1]) * 1e3 for i in range(n)]  # us


def cupti(rt, plan, reps=3, ctx=CTX):
    from torch.profiler import ProfilerActivity, profile

    rt.bufs["pos"].fill_(ctx)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            rt.graph.replay()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.name.endswith("_kernel")]
    evs.sort(key=lambda e: e.time_range.start)
    n = len(plan)
    last = evs[-n:]
    names = [e.name for e in last]
    expect = [f"{launch.kernel}_kernel" for launch in plan.launches]
    overlaps, gaps = 0, []
    for a, b in zip(last, last[1:]):
        gap = b.time_range.start - a.time_range.end
        gaps.append(gap)
        overlaps += gap < 0
    durs: dict[str, list[float]] = {}
    for e in evs:
        durs.setdefault(e.name, []).append(e.time_range.end - e.time_range.start)
    span = last[-1].time_range.end - last[0].time_range.start
    # exclusive time of each launch: from the end of the launch before it to its own end
    excl: dict[str, list[float]] = {}
    for i, e in enumerate(last):
        prev_end = last[i - 1].time_range.end if i else e.time_range.start
        op = plan.launches[i].op
        excl.setdefault(op, []).append(e.time_range.end - max(prev_end, e.time_range.start))
    layer = [(plan.launches[i].role, round(e.time_range.start - last[0].time_range.start, 2),
              round(e.time_range.end - last[0].time_range.start, 2)) for i, e in enumerate(last)
             if plan.launches[i].layer in (None, plan.config.num_layers // 2 - 1)]
    return {"excl_median_us": {k: statistics.median(v) for k, v in excl.items()},
            "excl_sum_us": {k: sum(v) for k, v in excl.items()}, "mid_layer_spans": layer, "events": len(evs), "names_match": names == expect, "overlapping_starts": overlaps,
            "gap_median_us": statistics.median(gaps), "gap_sum_us": sum(gaps), "replay_span_us": span,
            "dur_median_us": {k: statistics.median(v) for k, v in durs.items()}}


def measure(plan, weights, ctx=CTX):
    rt = TilelangRuntime(plan, weights, "cuda")
    rt.capture()
    t = replay_times(rt, ctx=ctx)
    out = {"replay_us_median": statistics.median(t), "replay_us_min": min(t)}
    try:
        out["cupti"] = cupti(rt, plan, ctx=ctx)
    except Exception as e:  # keep the timing even if the profiler fails
        out["cupti_error"] = repr(e)
    del rt
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--model", default="qwen3-1.7b", help="the preset whose step is timed")
    ap.add_argument("--ctx", type=int, default=CTX, help="the position each window's replays start from (the "
                    "step at a short context against a long one)")
    ap.add_argument("--variants", default="", help="comma-separated plan variants (tfdash.profiling.variants) "
                    "measured after the default plan, each the same way")
    args = ap.parse_args()
    from tfdash.errors import TfdashError
    from tfdash.profiling.variants import PLAN_VARIANTS, variant_names

    if not 0 <= args.ctx <= CAPACITY - 210:  # 200 timed replays and 3 profiled ones from it stay in the cache
        sys.exit(f"kernel_times.py: --ctx {args.ctx}: want 0 to {CAPACITY - 210}")
    try:  # before the probe and the weights
        names = variant_names(args.variants)
    except TfdashError as e:
        sys.exit(f"kernel_times.py: {e}")

    from tfdash.profiling.probe import probe_bandwidth

    ceiling = probe_bandwidth("cuda").bandwidth  # bytes/s: each op's floor is its bytes at the copy ceiling
    cfg = preset(args.model)
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, "cuda", 0))
    plan = plan_for(cfg, "bfloat16", capacity=CAPACITY)  # the engine's (the plan knobs in effect)
    a = analyze(plan, H200, args.ctx)
    bytes_by_kernel: dict[str, int] = {}
    count: dict[str, int] = {}
    op_bytes: dict[str, int] = {}
    for r in a.rows:
        bytes_by_kernel[r.launch.kernel] = r.cost.bytes
        count[r.launch.kernel] = count.get(r.launch.kernel, 0) + 1
        op_bytes[r.launch.op] = op_bytes.get(r.launch.op, 0) + r.cost.bytes
    out = {"model": args.model, "ctx": args.ctx, "ceiling_bytes_per_s": ceiling, "op_bytes": op_bytes, "analysis_bytes": a.bytes, "launches": len(plan), "pdl": measure(plan, weights, args.ctx)}
    out["variants"] = {}
    per_launch = {op: b / sum(1 for la in plan.launches if la.op == op) for op, b in op_bytes.items()}
    for v in names:
        vplan = variant_plan(plan, Variant(v, dict(PLAN_VARIANTS[v])))[0]  # as the bench builds it
        out["variants"][v] = measure(vplan, weights, args.ctx)
        for r in analyze(vplan, H200, args.ctx).rows:  # ops only a variant has (a fused launch) get their floor too
            per_launch.setdefault(r.launch.op, r.cost.bytes)
    for key in ("pdl",):
        print(f"{key}: replay median {out[key]['replay_us_median']:.1f} us (min {out[key]['replay_us_min']:.1f})")
        c = out[key].get("cupti")
        if c:
            print(f"  events {c['events']} names match {c['names_match']} overlapping starts {c['overlapping_starts']} "
                  f"gap median {c['gap_median_us']:.2f} us, gap sum {c['gap_sum_us']:.1f} us, span {c['replay_span_us']:.1f} us")
    c = out["pdl"].get("cupti")
    if c:
        cols = ["default"] + names
        per = [c] + [out["variants"][v].get("cupti") or {} for v in names]
        print(f"{'op':<16}" + "".join(f"{k[-14:]:>15}" for k in cols) + f"   (exclusive us, median; floor: bytes at {ceiling / 1e12:.2f} TB/s)")
        ops = list(c["excl_median_us"]) + [op for p in per[1:] for op in p.get("excl_median_us", {})]
        for op in dict.fromkeys(ops):
            floor = per_launch.get(op, 0) / ceiling * 1e6
            print(f"{op:<16}" + "".join(f"{p.get('excl_median_us', {}).get(op, float('nan')):>15.2f}" for p in per)
                  + f"   floor {floor:7.2f}")
        print(f"{'replay us':<16}" + "".join(f"{m['replay_us_median']:>15.1f}"
                                             for m in [out["pdl"]] + [out["variants"][v] for v in names]))
        for role, a, b in c["mid_layer_spans"]:
            print(f"  {role:<16} start {a:9.2f} end {b:9.2f}")
    c = out["pdl"].get("cupti")
    if c:
        print(f"{'kernel':<28}{'n':>4}{'us med':>9}{'x n':>9}{'GB/s':>8}")
        for name, us in sorted(c["dur_median_us"].items(), key=lambda kv: -kv[1] * count.get(kv[0][:-7], 0)):
            k = name[: -len("_kernel")]
            n = count.get(k, 0)
            gbps = bytes_by_kernel.get(k, 0) / (us * 1e3) if us else 0
            print(f"{k:<28}{n:>4}{us:>9.2f}{us * n:>9.1f}{gbps:>8.0f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
