#!/usr/bin/env python3
"""What the live dashboard costs a GPU-bound engine, simulated on the CPU.

    python3 scripts/sim_dashboard_overhead.py [--step-us 1400] [--tokens 2048] [--rounds 3]

On the H200 the decode loop is GPU-bound: the host enqueues a graph replay and harvests ring
slots while the device runs ~1.4 ms steps, and the dashboard draws in the same Python process.
What can slow the engine there is the host: the decode thread waiting for the GIL or for the
session's lock while the app renders, long enough to let the device queue drain. A CPU engine
is Python-bound and so cannot show this. Here the qwen3-tiny engine's runtime is replaced by a
simulated device: each enqueued step completes `--step-us` after the previous one (or after its
enqueue), `ready` and `wait` follow that clock (`wait` sleeps, releasing the GIL as an event
synchronize does), and the replay call releases the GIL as `CUDAGraph.replay` does. Then
tfdash.app.overhead.dashboard_ab runs the real app, headless, against plain decoding.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def simulated(engine, step_ns: int):
    """Turn the engine's CPU runtime into a simulated GPU-bound one (in place)."""
    from tfdash.engine.runtime import RING

    rt = engine.runtime
    vocab = engine.config.vocab_size
    done = [0] * RING  # perf_counter_ns at which each slot's step completes
    state = {"last": 0, "n": 0}

    def begin():
        state["last"] = time.perf_counter_ns()
        rt._prev_slot = None

    def enqueue(slot, step_fn=None):
        time.sleep(0)  # the replay call releases the GIL
        now = time.perf_counter_ns()
        state["last"] = max(now, state["last"]) + step_ns
        state["n"] += 1
        done[slot] = state["last"]
        rt._slot_prev[slot] = rt._prev_slot
        rt._prev_slot = slot

    def ready(slot):
        return time.perf_counter_ns() >= done[slot]

    def wait(slot):
        left = done[slot] - time.perf_counter_ns()
        if left > 0:
            time.sleep(left / 1e9)

    def step_ns_of(slot):
        prev = rt._slot_prev[slot]
        return step_ns if prev is None else done[slot] - done[prev]

    def token(slot):
        return (state["n"] * 7919 + slot) % vocab

    def synchronize():
        wait_all = state["last"] - time.perf_counter_ns()
        if wait_all > 0:
            time.sleep(wait_all / 1e9)

    rt.reset = lambda ids: None
    rt.begin, rt.enqueue, rt.ready, rt.wait = begin, enqueue, ready, wait
    rt.step_ns, rt.token, rt.synchronize = step_ns_of, token, synchronize
    return engine


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--step-us", type=float, default=1400.0)
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--depth", type=int, default=None, help="steps in flight (default: the CUDA default, SETTINGS.depth)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    from tfdash.app.overhead import dashboard_ab
    from tfdash.engine import DEFAULT_PROMPT, load_engine
    from tfdash.profiling.probe import default_target
    from tfdash.profiling.session import Session

    eng = simulated(load_engine(model="qwen3-tiny", device="cpu", max_new_tokens=args.tokens),
                    int(args.step_us * 1000))
    from tfdash.settings import SETTINGS

    target = default_target("cpu")
    depth = args.depth or SETTINGS.depth
    r = dashboard_ab(lambda: Session(eng, DEFAULT_PROMPT, args.tokens, target=target, ignore_eos=True, depth=depth,
                                     nvml=False), rounds=args.rounds)
    r.update(step_us=args.step_us, tokens=args.tokens, depth=depth, ideal_tok_s=1e6 / args.step_us)
    print(json.dumps(r, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
