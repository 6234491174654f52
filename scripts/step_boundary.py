"""What a step's boundary costs on the GPU: the same captured step replayed back to back alone, as
Runtime.enqueue runs it (an event after each replay; the plan's argmax stores the token into the
pinned ring from inside the graph), with an event alone (timed, and with timing disabled), with a
4-byte device-to-host copy into the ring and an event (what a plan without the ring in its graph
gets), and as two steps captured in one graph.

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

    def with_ring():  # as the runtime runs its steps (stamped: an untimed event after each)
        for i in range(a.steps):
            rt.enqueue(i % len(rt.ring_events))

    def two_a_graph():
        for _ in range(a.steps // 2):
            two.replay()

    def with_event():
        for i in range(a.steps):
            rt.step()
            rt.ring_events[i % len(rt.ring_events)].record()

    quiet = [torch.cuda.Event() for _ in rt.ring_events]  # no timing: a record with no timestamp

    def with_quiet_event():
        for i in range(a.steps):
            rt.step()
            quiet[i % len(quiet)].record()

    def with_copy():  # TFDASH_RING_IN_GRAPH=off: the token copied after each replay
        for i in range(a.steps):
            slot = i % len(rt.ring_events)
            rt.step()
            rt.ring[slot:slot + 1].copy_(rt.bufs["tok"], non_blocking=True)
            rt.ring_events[slot].record()

    modes = {"replay": replay_only, "replay+ring": with_ring, "2-step graph": two_a_graph,
             "replay+event": with_event, "replay+quiet event": with_quiet_event, "replay+copy": with_copy}
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
    for i in range(64):  # the ring holds each step's token, stored from inside the graph
        slot = i % len(rt.ring_events)
        rt.enqueue(slot)
        rt.wait(slot)
        assert int(rt.ring_host[slot]) == int(rt.bufs["tok"][0]), (i, int(rt.ring_host[slot]))
    print(f"  the ring held every token of 64 steps (stored in the graph: {rt.ring_in_graph})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
