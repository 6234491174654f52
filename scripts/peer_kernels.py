"""Where the torch-compile peer's step goes (a diagnostic): the bench's peer and the other forms a
torch user might write (tfdash.engine.compiled's ATTENTION_FORMS, HEAD_FORMS, inductor's modes),
each compiled and captured as `tfdash bench` builds it, on the same random weights.

For each form: its compile and capture time, 200 replays from ctx 1024 timed with CUDA events, then
3 replays under torch.profiler: kernels a step and, per kernel name, launches a step and µs a step
(the slowest first), so a form's cost is read kernel by kernel.

    python scripts/peer_kernels.py [--model qwen3-1.7b] [--forms sdpa/f32/max,bmm/bf16/default] --out OUT.json
"""

import argparse
import json
import statistics
import sys
import time

import torch
from kernel_times import CTX, replay_times  # scripts/: the tilelang step's timing, the same way

MODES = {"max": "max-autotune-no-cudagraphs", "default": None}


def kernels(rt, reps=3, ctx=CTX):
    from torch.profiler import ProfilerActivity, profile

    rt.bufs["pos"].fill_(ctx)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            rt.graph.replay()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
           and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()]
    by: dict[str, list[float]] = {}
    for e in evs:
        by.setdefault(e.name, []).append(e.time_range.end - e.time_range.start)
    rows = [{"kernel": k, "per_step": len(v) / reps, "us_per_step": sum(v) / reps} for k, v in by.items()]
    rows.sort(key=lambda r: -r["us_per_step"])
    return {"kernels_per_step": len(evs) / reps, "busy_us_per_step": sum(r["us_per_step"] for r in rows),
            "rows": rows}


def measure(plan, weights, attention, head, mode):
    from tfdash.engine.compiled import CompiledGraphRuntime

    torch._dynamo.reset()  # each form compiles afresh, never counted against dynamo's recompile limit
    t = time.perf_counter()
    rt = CompiledGraphRuntime(plan, weights, "cuda", mode=MODES[mode], attention=attention, head=head)
    rt.capture()
    out = {"compile_s": time.perf_counter() - t}
    us = replay_times(rt)
    out |= {"replay_us_median": statistics.median(us), "replay_us_min": min(us)}
    try:
        out |= kernels(rt)
    except Exception as e:  # keep the timing when the profiler fails
        out["profile_error"] = repr(e)
    del rt
    torch.cuda.empty_cache()
    return out


def main():
    from tfdash.engine.compiled import ATTENTION_FORMS, HEAD_FORMS

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--forms", default="bmm/f32/default,sdpa-heads/f32/default,sdpa/f32/default,bmm/f32/max",
                    help="comma-separated ATTENTION/HEAD/MODE (modes: max, default); the first is the bench's peer")
    ap.add_argument("--top", type=int, default=14, help="kernel rows printed a form")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    forms = [f.split("/") for f in args.forms.split(",") if f]
    for f in forms:
        if len(f) != 3 or f[0] not in ATTENTION_FORMS or f[1] not in HEAD_FORMS or f[2] not in MODES:
            sys.exit(f"peer_kernels.py: --forms {'/'.join(f)}: want ATTENTION/HEAD/MODE from "
                     f"{ATTENTION_FORMS} / {HEAD_FORMS} / {tuple(MODES)}")
    from tfdash.engine import load_engine

    eng = load_engine(model=args.model, device="cuda", dtype="bfloat16", backend="torch-graph", capacity=2112)
    weights = {n: eng.runtime.bufs[n] for n, s in eng.plan.buffers.items() if s.kind == "weight"}
    result = {"model": args.model, "ctx": CTX, "capacity": eng.plan.capacity, "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "forms": {}}
    for attention, head, mode in forms:
        name = f"{attention}/{head}/{mode}"
        try:
            m = measure(eng.plan, weights, attention, head, mode)
        except Exception as e:  # one form that fails to compile: the others still run
            m = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        result["forms"][name] = m
        if "error" in m:
            print(f"== {name}: {m['error']}", flush=True)
            continue
        print(f"== {name}: step {m['replay_us_median']:.1f} us (min {m['replay_us_min']:.1f}), compiled and captured "
              f"in {m['compile_s']:.0f} s; {m.get('kernels_per_step', 0):.0f} kernels a step, busy "
              f"{m.get('busy_us_per_step', 0):.1f} us", flush=True)
        for r in m.get("rows", [])[:args.top]:
            print(f"   {r['us_per_step']:8.1f} us  {r['per_step']:5.0f}x  {r['kernel'][:110]}")
        if args.out:  # after each form: a run cut by its timeout keeps the forms it measured
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
