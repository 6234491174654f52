"""How fine the GPU's global timer is, the clock the ring's stamps (argmax) and the phase probe
read: one thread reads %globaltimer `--reads` times back to back, each read stored, and the
script prints the nonzero steps between consecutive reads (their minimum, median and how often
two reads return the same value). A step time from two stamps is exact to about one tick.

    python scripts/timer_tick.py [--reads 4096] [--json OUT]
"""

import argparse
import json
import statistics
import sys


def tick_kernel(n: int):
    import tilelang.language as T

    from tfdash.kernels.probe import PROBE_PRELUDE

    @T.prim_func
    def ticks(out: T.Tensor((n,), "int64")):
        with T.Kernel(1, threads=32, prelude=PROBE_PRELUDE) as _:
            tx = T.get_thread_binding(0)
            if tx == 0:
                for i in T.serial(n):
                    out[i] = T.call_extern("int64", "tfd_globaltimer")

    return ticks


def summarize(stamps: list[int]) -> dict:
    """The steps between consecutive reads: the nonzero ones' minimum and median, the share of
    repeats, and the whole span."""
    steps = [b - a for a, b in zip(stamps, stamps[1:])]
    moved = [s for s in steps if s > 0]
    return {"reads": len(stamps), "span_ns": stamps[-1] - stamps[0],
            "repeats": sum(1 for s in steps if s == 0) / max(len(steps), 1),
            "tick_min_ns": min(moved) if moved else None,
            "tick_median_ns": statistics.median(moved) if moved else None,
            "backwards": sum(1 for s in steps if s < 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reads", type=int, default=4096)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import tilelang
    import torch

    if not torch.cuda.is_available():
        print("timer_tick.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    kern = tilelang.compile(tick_kernel(a.reads), out_idx=[], target="cuda")
    rows = []
    for _ in range(3):
        out = torch.zeros(a.reads, dtype=torch.int64, device="cuda")
        kern(out)
        torch.cuda.synchronize()
        rows.append(summarize(out.tolist()))
    for r in rows:
        print(f"reads {r['reads']}  span {r['span_ns']} ns  repeats {100 * r['repeats']:.1f} %  "
              f"tick min {r['tick_min_ns']} ns  median {r['tick_median_ns']} ns  backwards {r['backwards']}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rounds": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
