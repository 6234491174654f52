"""What a step's boundary costs on the GPU: the same captured step replayed back to back, with and
without the token's ring copy (a 4-byte device-to-host copy into pinned memory and an event,
as Runtime.enqueue does), with an event alone, with the token stored by an elementwise kernel
through the pinned ring's device address (TFDASH_RING_COPY=kernel) after the replay or inside
the step's graph, and as two steps captured in one graph.

    python scripts/step_boundary.py --model qwen3-0.6b --steps 1024 [--json OUT]

Each mode starts from the same reset (the default prompt) and runs `steps` steps; the device time
between two events around the run, divided by the steps, is its µs a step. Modes alternate over
`--rounds` rounds in one process; the table shows each mode's median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-0.6b")
    ap.add_argument("--steps", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args(argv)

    from tfdash.engine import load_engine
    from tfdash.engine.runtime import Runtime

    eng = load_engine(model=a.model, device="cuda", capacity=a.steps + 64)
    rt = eng.runtime
    prompt = eng.encode("Write a detailed explanation of how a GPU executes a matrix multiplication.")
    rt.reset(prompt)
    rt.begin()
    two = rt._capture(lambda: (Runtime.step(rt), Runtime.step(rt)))  # the same launches, twice, one graph

    def replay_only():
        for _ in range(a.steps):
            rt.step()

    def with_ring():
        for i in range(a.steps):
            rt.enqueue(i % len(rt.ring_events))

    def two_a_graph():
        for _ in range(a.steps // 2):
            two.replay()

    def with_event():
        for i in range(a.steps):
            rt.step()
            rt.ring_events[i % len(rt.ring_events)].record()

    modes = {"replay": replay_only, "replay+ring": with_ring, "2-step graph": two_a_graph, "replay+event": with_event}
    from tfdash.engine.ring_copy import KernelCopy

    store = KernelCopy(rt.bufs["tok"], rt.ring)

    def with_kernel_ring():  # TFDASH_RING_COPY=kernel
        for i in range(a.steps):
            rt.step()
            store(i % len(rt.ring_events))
            rt.ring_events[i % len(rt.ring_events)].record()

    stored = rt._capture(lambda: (Runtime.step(rt), store(0)))  # inside the graph, one slot: its cost

    def graph_with_store():
        for i in range(a.steps):
            stored.replay()
            rt.ring_events[i % len(rt.ring_events)].record()

    modes.update({"replay+kernel ring": with_kernel_ring, "graph+store": graph_with_store})
    us = {m: [] for m in modes}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(a.rounds):
        for name, run in modes.items():
            rt.reset(prompt)
            torch.cuda.synchronize()
            start.record()
            run()
            end.record()
            end.synchronize()
            us[name].append(start.elapsed_time(end) * 1e3 / a.steps)
            print(f"{name:18s} {us[name][-1]:8.2f} us a step", file=sys.stderr, flush=True)
    out = {"model": a.model, "steps": a.steps, "rounds": a.rounds, "us_per_step": us,
           "median": {m: statistics.median(v) for m, v in us.items()}}
    base = out["median"]["replay"]
    print(f"{a.model}: {a.steps} steps from the {len(prompt)}-token prompt, median of {a.rounds} rounds")
    for m, v in out["median"].items():
        print(f"  {m:18s} {v:8.2f} us a step  ({v - base:+.2f} against replay alone)")
    rt.reset(prompt)
    for i in range(64):  # the kernel's store is the token, step by step
        slot = i % len(rt.ring_events)
        rt.step()
        store(slot)
        rt.ring_events[slot].record()
        rt.ring_events[slot].synchronize()
        assert int(rt.ring_host[slot]) == int(rt.bufs["tok"][0]), (i, int(rt.ring_host[slot]))
    print("  the kernel-stored ring held every token of 64 steps")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
