"""Where a generation's wall time goes beyond its steps: for the default plan (the ring stored in
the graph) and the plan that copies the token after each replay, 2048 new tokens each, alternating
over rounds in one process (each round starting with the other): the wall time, the sum and mean
of the steps' event times, the p50, the steps over 1.5x the p50 with their excess, and the longest
steps with their indices.

    python scripts/step_tail.py --model qwen3-1.7b [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=2048)
    a = ap.parse_args(argv)
    from tfdash.engine import load_engine
    from tfdash.engine.decode import Generation
    from tfdash.engine.plan import build_plan
    from tfdash.engine.runtime import TilelangRuntime

    eng = load_engine(model=a.model, device="cuda", capacity=2112)
    ids = eng.encode("Write a detailed explanation of how a GPU executes a matrix multiplication.")
    plan = eng.plan
    weights = {n: eng.runtime.bufs[n] for n, s in plan.buffers.items() if s.kind == "weight"}
    copy = TilelangRuntime(build_plan(plan.config, **dict(plan.meta["options"], ring_in_graph=False)),
                           weights, "cuda", pdl=True)
    peers = {"ring": eng.runtime, "copy": copy}
    for p in peers.values():
        p.capture(ids)
    for r in range(a.rounds):
        for name in (list(peers) if r % 2 == 0 else list(peers)[::-1]):
            rt = peers[name]
            gen = Generation(rt, ids, a.tokens, eng.tokenizer)
            for _ in gen:
                pass
            st = gen.stats
            steps = list(st.step_ns)
            top = sorted(range(len(steps)), key=lambda i: -steps[i])[:8]
            p50 = statistics.median(steps)
            slow = [x for x in steps if x > 1.5 * p50]
            print(f"{name} round {r}: wall {st.wall_ns / 1e6:.2f} ms, tok/s {st.tok_per_s:.1f}, steps {len(steps)} "
                  f"sum {sum(steps) / 1e6:.2f} ms mean {statistics.mean(steps) / 1e3:.2f} us "
                  f"p50 {p50 / 1e3:.2f} us; {len(slow)} over 1.5x p50, {sum(slow) / 1e6 - len(slow) * p50 / 1e6:.2f} ms "
                  f"beyond it; longest: "
                  + ", ".join(f"#{i} {steps[i] / 1e3:.0f}" for i in top), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
